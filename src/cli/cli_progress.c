/* The arena's progress callbacks for the CLI: the arena reports counts, the
 * CLI turns them into a meter's line (core/progress.h). */
#include <math.h>
#include <stdio.h>

#include "cli/cli.h"

/* "W-D-L 8-2-2, score 0.750, Elo +191" and, with an SPRT, ", LLR 1.23". */
static void match_progress(void *ctx, const zt_match_result *r)
{
    zt_progress_meter *m = ctx;
    if (!m->draw) return; /* nothing to show on a non-terminal */
    zt_elo e = zt_elo_estimate(r->wins, r->draws, r->losses);
    char sprt[48] = "";
    if (r->sprt.upper != 0) snprintf(sprt, sizeof sprt, ", LLR %.2f", r->sprt.llr + 0.0);
    zt_progress_meter_update(m, r->games, "W-D-L %d-%d-%d, score %.3f, Elo %s%+.0f%s", r->wins,
                             r->draws, r->losses, e.score,
                             e.bound ? (e.score > 0.5 ? ">" : "<") : "", round(e.elo) + 0.0, sprt);
}

void zt_cli_match_progress(zt_match_config *mc, zt_progress_meter *m)
{
    zt_progress_meter_init(m, "eval", "games", mc->games, NULL, NULL);
    mc->progress = match_progress;
    mc->progress_ctx = m;
    zt_progress_meter_update(m, 0, NULL);
}

/* Judged positions are the count (the file's: each of its images judged);
 * those read (parsed, and solved where the file lists no moves) run ahead
 * of them by up to a batch. The share is over every image judged. */
static void positions_progress(void *ctx, int read, int total, const zt_positions_result *r)
{
    zt_progress_meter *m = ctx;
    if (!m->draw) return;
    if (m->total != total) zt_progress_meter_set_total(m, total);
    if (r->positions == 0) {
        zt_progress_meter_update(m, 0, "read %d", read);
        return;
    }
    int k = r->report_mistakes ? r->mistakes : r->optimal;
    zt_progress_meter_update(
        m, r->positions / (r->images > 1 ? r->images : 1), "read %d, %s %d (%.2f %%)", read,
        r->report_mistakes ? "mistakes" : "optimal", k, 100.0 * k / r->positions);
}

void zt_cli_positions_progress(zt_positions_config *pc, zt_progress_meter *m)
{
    zt_progress_meter_init(m, "eval", "positions", 0, NULL, NULL);
    pc->progress = positions_progress;
    pc->progress_ctx = m;
}
