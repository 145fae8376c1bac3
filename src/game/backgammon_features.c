/* Hand-made backgammon inputs beside Tesauro's point encoding (the game's
 * setting inputs = extended; docs/backgammon.md says which and why): pip
 * counts, race or contact, the shots each side has at the other's blots,
 * and whether the dice in hand can hit. The ideas are those of TD-Gammon's
 * later versions (Tesauro 1995, "Temporal difference learning and
 * TD-Gammon") and GNU Backgammon's documented inputs; the code is our own. */
#include "game/backgammon.h"

#include <string.h>

/* Pip count of a side from its own view: point i + 1 for a checker on index
 * i, 25 for the bar. */
static int pips(const uint8_t *side)
{
    int n = 0;
    for (int i = 0; i < 25; i++) n += side[i] * (i + 1);
    return n;
}

/* Rolls of 36 with which `roller` hits a blot of `target` (each side's
 * board from its own view), the usual count of shots: a blot d pips ahead
 * of a roller checker is hit with a die of d, with both dice (d1 + d2 = d)
 * over an open intermediate point, or with doubles over open points in
 * steps of the die; a point is closed when the target holds two or more
 * checkers there. A roller with checkers on the bar must enter first, so
 * then only shots from the bar count (an approximation: the other die of a
 * single bar checker could hit from elsewhere too).
 *
 * In the roller's indices (bit x: its point x + 1, bit 24 the bar) a move
 * of d pips is a right shift by d, so each roll is a few shifts and masks
 * over the sources, the blots and the open points: a dozen operations per
 * roll where walking every source, blot and step took hundreds (this was
 * the largest share of backgammon self-play outside the net). */
typedef struct board_bits {
    uint32_t src;   /* the roller's points with checkers; only the bar while it has some */
    uint32_t blots; /* the target's blots */
    uint32_t open;  /* points the target does not hold (fewer than two checkers) */
} board_bits;

static board_bits bits_of(const uint8_t *roller, const uint8_t *target)
{
    board_bits b = {0, 0, 0};
    for (int x = 0; x < 24; x++) {
        uint8_t t = target[23 - x];
        b.blots |= (uint32_t)(t == 1) << x;
        b.open |= (uint32_t)(t < 2) << x;
        b.src |= (uint32_t)(roller[x] != 0) << x;
    }
    if (roller[BG_BAR]) b.src = 1u << BG_BAR;
    return b;
}

static int shots(board_bits b)
{
    uint32_t src = b.src, blots = b.blots, open = b.open;
    if (!blots) return 0;
    int count = 0;
    for (int d1 = 1; d1 <= 6; d1++) {
        /* doubles: up to four steps of d1, each landing on an open point */
        uint32_t at = src;
        bool hit = false;
        for (int k = 0; k < 4 && at && !hit; k++) {
            at >>= d1;
            hit = (at & blots) != 0;
            at &= open;
        }
        count += hit;
        for (int d2 = 1; d2 < d1; d2++) {
            uint32_t one = (src >> d1) | (src >> d2);
            uint32_t two = (((src >> d1) & open) >> d2) | (((src >> d2) & open) >> d1);
            count += ((one | two) & blots) ? 2 : 0;
        }
    }
    return count;
}

void zt_bg_features(const bg_state *s, float *out)
{
    const uint8_t *own = s->board[s->turn], *opp = s->board[!s->turn];
    memset(out, 0, sizeof(float) * BG_NUM_FEATURES);
    /* 167 is each side's pip count at the start. */
    out[BG_FEAT_PIPS_OWN] = (float)pips(own) / 167.0f;
    out[BG_FEAT_PIPS_OPP] = (float)pips(opp) / 167.0f;
    out[BG_FEAT_CONTACT] = !zt_bg_is_race(s);
    board_bits mine = bits_of(own, opp);
    out[BG_FEAT_SHOTS_OWN] = (float)shots(mine) / 36.0f;
    out[BG_FEAT_SHOTS_OPP] = (float)shots(bits_of(opp, own)) / 36.0f;
    /* With dice in hand: does some legal checker move land on a blot? The
     * legal moves are among the moves of one die from a source (the bar
     * first) onto a blot, so where there is none of those the legal moves
     * need not be generated. */
    uint32_t reach = 0;
    for (int i = 0; i < s->n_dice; i++) reach |= mine.src >> s->dice[i];
    if (!(reach & mine.blots)) return;
    uint16_t actions[BG_NUM_ACTIONS];
    int n = zt_bg_legal(s, actions);
    for (int i = 0; i < n; i++) {
        int dst = actions[i] / 6 - (actions[i] % 6 + 1);
        if (dst >= 0 && opp[23 - dst] == 1) {
            out[BG_FEAT_HIT_NOW] = 1;
            break;
        }
    }
}
