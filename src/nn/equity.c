/* The equity head's arithmetic (nn.h, "the equity head"): probabilities
 * from logits with gnubg's consistency constraints, cubeless equity, and the
 * targets a game's result gives. The loss is in train.c. */
#include <math.h>
#include <string.h>

#include "nn/nn.h"

static float sigmoid(float x)
{
    return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

void zt_equity_probs(const float *logits, float *p)
{
    for (int j = 0; j < ZT_EQ_OUTPUTS; j++) p[j] = sigmoid(logits[j]);
    /* The outputs are trained independently, so nothing but these caps
     * keeps them coherent (gnubg's SanityCheck does the same). */
    float w = p[ZT_EQ_WIN], l = 1.0f - w;
    if (p[ZT_EQ_WIN_GAMMON] > w) p[ZT_EQ_WIN_GAMMON] = w;
    if (p[ZT_EQ_WIN_BACKGAMMON] > p[ZT_EQ_WIN_GAMMON])
        p[ZT_EQ_WIN_BACKGAMMON] = p[ZT_EQ_WIN_GAMMON];
    if (p[ZT_EQ_LOSE_GAMMON] > l) p[ZT_EQ_LOSE_GAMMON] = l;
    if (p[ZT_EQ_LOSE_BACKGAMMON] > p[ZT_EQ_LOSE_GAMMON])
        p[ZT_EQ_LOSE_BACKGAMMON] = p[ZT_EQ_LOSE_GAMMON];
}

float zt_equity_points(const float *p)
{
    float w = p[ZT_EQ_WIN];
    return w - (1.0f - w) + p[ZT_EQ_WIN_GAMMON] - p[ZT_EQ_LOSE_GAMMON] +
           p[ZT_EQ_WIN_BACKGAMMON] - p[ZT_EQ_LOSE_BACKGAMMON];
}

void zt_equity_targets(float points, float *t)
{
    /* Results are whole points; the rounding only absorbs the float scale
     * (returns / max_return * max_return) they come back through. */
    float r = roundf(points);
    t[ZT_EQ_WIN] = r > 0 ? 1.0f : r < 0 ? 0.0f : 0.5f;
    t[ZT_EQ_WIN_GAMMON] = r >= 2;
    t[ZT_EQ_WIN_BACKGAMMON] = r >= 3;
    t[ZT_EQ_LOSE_GAMMON] = r <= -2;
    t[ZT_EQ_LOSE_BACKGAMMON] = r <= -3;
}

void zt_net_head_to_value(zt_value_kind kind, int B, const float *raw, float *value)
{
    switch (kind) {
    case ZT_VALUE_SCALAR:
        memmove(value, raw, (size_t)B * sizeof *value);
        return;
    case ZT_VALUE_WDL:
        /* Expected score for the player to move: P(win) - P(loss). */
        for (int i = 0; i < B; i++) {
            const float *w = raw + (size_t)i * 3;
            float m = fmaxf(w[0], fmaxf(w[1], w[2]));
            float ew = expf(w[0] - m), ed = expf(w[1] - m), el = expf(w[2] - m);
            value[i] = (ew - el) / (ew + ed + el);
        }
        return;
    case ZT_VALUE_EQUITY:
        for (int i = 0; i < B; i++) {
            float p[ZT_EQ_OUTPUTS];
            zt_equity_probs(raw + (size_t)i * ZT_EQ_OUTPUTS, p);
            value[i] = zt_equity_points(p) / ZT_EQ_MAX_POINTS;
        }
        return;
    }
}
