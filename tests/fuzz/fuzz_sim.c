/* Sim's position text and action text (fuzz_game.h) on the smallest, the
 * default and the largest boards, both variants. */
#define FUZZ_GAME_SPECS                                                                            \
    "sim", "sim vertices=4 k=3 variant=make", "sim vertices=18 k=6 variant=avoid"
#include "fuzz_game.h"
