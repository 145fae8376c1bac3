/* tictactoe's position text and action text (fuzz_game.h). */
#define FUZZ_GAME_SPECS "tictactoe"
#include "fuzz_game.h"
