/* Backgammon's position text (a gnubg id, dice, side, opening) and action
 * text (rolls, checker moves) (fuzz_game.h). */
#define FUZZ_GAME_SPECS "backgammon"
#include "fuzz_game.h"
