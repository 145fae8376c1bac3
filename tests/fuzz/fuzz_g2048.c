/* 2048's position text (rows of tile values, score, what comes next) and
 * action text (moves, spawns like 2@5) (fuzz_game.h). */
#define FUZZ_GAME_SPECS "2048"
#include "fuzz_game.h"
