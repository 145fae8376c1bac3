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

/* The roller's landing point x (its index 0..23) is blocked when the target
 * holds two or more checkers there (the target's index 23 - x). */
static bool blocked(const uint8_t *target, int x)
{
    return target[23 - x] >= 2;
}

/* Can a roller checker on `src` hit a blot `d` points ahead with dice
 * (d1, d2)? Directly with one die, or with both dice (each die in turn for
 * doubles) over intermediate points that are open. */
static bool hits(const uint8_t *target, int src, int d, int d1, int d2)
{
    if (d1 != d2) {
        if (d == d1 || d == d2) return true;
        return d == d1 + d2 && (!blocked(target, src - d1) || !blocked(target, src - d2));
    }
    for (int k = 1; k <= 4 && k * d1 <= d; k++) {
        if (k * d1 == d) return true;
        if (blocked(target, src - k * d1)) return false;
    }
    return false;
}

/* Rolls of 36 with which `roller` hits a blot of `target` (each side's
 * board from its own view). A roller with checkers on the bar must enter
 * first, so then only shots from the bar count (an approximation: the other
 * die of a single bar checker could hit from elsewhere too). */
static int shots(const uint8_t *roller, const uint8_t *target)
{
    int blots[24], nb = 0;
    for (int j = 0; j < 24; j++)
        if (target[j] == 1) blots[nb++] = 23 - j; /* the roller's index of the blot */
    if (nb == 0) return 0;
    int count = 0;
    for (int d1 = 1; d1 <= 6; d1++)
        for (int d2 = 1; d2 <= d1; d2++) {
            bool hit = false;
            int lo = roller[BG_BAR] ? BG_BAR : 0;
            for (int src = BG_BAR; src >= lo && !hit; src--) {
                if (!roller[src]) continue;
                for (int b = 0; b < nb && !hit; b++)
                    if (blots[b] < src) hit = hits(target, src, src - blots[b], d1, d2);
            }
            if (hit) count += d1 == d2 ? 1 : 2;
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
    out[BG_FEAT_SHOTS_OWN] = (float)shots(own, opp) / 36.0f;
    out[BG_FEAT_SHOTS_OPP] = (float)shots(opp, own) / 36.0f;
    /* With dice in hand: does some legal checker move land on a blot? */
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
