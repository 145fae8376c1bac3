/* connect4's position text and action text (fuzz_game.h). */
#define FUZZ_GAME_SPECS "connect4"
#include "fuzz_game.h"
