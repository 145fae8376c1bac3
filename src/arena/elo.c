/* Elo from match results and Wald's sequential probability ratio test. */
#include <math.h>

#include "arena/arena.h"

double zt_elo_from_score(double score)
{
    return -400.0 * log10(1.0 / score - 1.0) + 0.0; /* + 0.0: an even score is +0, not -0 */
}

double zt_score_from_elo(double elo)
{
    return 1.0 / (1.0 + pow(10.0, -elo / 400.0));
}

/* Mean and per-game variance of the score (win 1, draw 1/2, loss 0). */
static void score_moments(double w, double d, double l, double *mean, double *var)
{
    double n = w + d + l;
    double s = (w + 0.5 * d) / n;
    *mean = s;
    *var = (w * (1 - s) * (1 - s) + d * (0.5 - s) * (0.5 - s) + l * s * s) / n;
}

zt_elo zt_elo_estimate(int wins, int draws, int losses)
{
    zt_elo r = {0.5, 0, 0, 0, false};
    int n = wins + draws + losses;
    if (n <= 0) return r;
    double w = wins, d = draws, l = losses;
    r.score = (w + 0.5 * d) / n;
    /* A perfect or nil score has an infinite maximum-likelihood Elo: count
     * half a game the other way (a continuity correction) for a finite
     * estimate, and say it is a bound. */
    if (wins == n) {
        w -= 0.5;
        l += 0.5;
        r.bound = true;
    } else if (losses == n) {
        l -= 0.5;
        w += 0.5;
        r.bound = true;
    } else if (draws == n) {
        /* All draws have no spread to measure: split half a game into a
         * quarter won and a quarter lost, so the interval is not [0, 0]
         * but narrows with games, as the perfect score's does. */
        d -= 0.5;
        w += 0.25;
        l += 0.25;
    }
    double s, var;
    score_moments(w, d, l, &s, &var);
    double se = sqrt(var / n);
    double edge = 0.25 / n;
    double lo = fmax(s - 1.96 * se, edge), hi = fmin(s + 1.96 * se, 1 - edge);
    r.elo = zt_elo_from_score(s);
    r.lo = zt_elo_from_score(fmin(lo, s));
    r.hi = zt_elo_from_score(fmax(hi, s));
    return r;
}

zt_sprt_state zt_sprt_update(const zt_sprt_config *cfg, int wins, int draws, int losses)
{
    zt_sprt_state st;
    st.lower = log(cfg->beta / (1 - cfg->alpha));
    st.upper = log((1 - cfg->beta) / cfg->alpha);
    st.llr = 0;
    st.decision = 0;
    if (wins + draws + losses <= 0) return st;
    /* The normal approximation takes the sample variance as known; after a
     * few games, or a run of one result, it is near zero and the LLR would
     * explode. Half a win and half a loss of prior keep it honest. */
    double n = wins + draws + losses, s, var;
    score_moments(wins + 0.5, draws, losses + 0.5, &s, &var);
    double s0 = zt_score_from_elo(cfg->elo0), s1 = zt_score_from_elo(cfg->elo1);
    /* Normal approximation of the trinomial likelihood ratio (Van den Bergh,
     * "GSPRT approximation", as in Fishtest): the per-game scores are
     * N(s, var) under either hypothesis, with means s0 and s1. */
    st.llr = n * (s1 - s0) * (2 * s - s0 - s1) / (2 * var);
    if (st.llr >= st.upper)
        st.decision = 1;
    else if (st.llr <= st.lower)
        st.decision = -1;
    return st;
}
