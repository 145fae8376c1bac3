/* zeroth solve GAME --positions FILE: exact values of every position in a
 * shared position file (tic-tac-toe, Connect Four Pons format, Sim K6). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/timer.h"
#include "game/solver.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zeroth solve GAME --positions FILE [--limit N] [--quiet] [--set key=value]\n\n"
            "Solves every position of FILE exactly. One line per position:\n"
            "  <position> value=<+1|0|-1> score=<s> moves=<value-preserving moves>\n"
            "then the mean and max time per position, and when the file carries expected\n"
            "values a last line 'agree N/M'.\n"
            "  --positions FILE   position file (formats of ../shared/data, see its README)\n"
            "  --limit N          only the first N positions\n"
            "  --quiet            no per-position lines (on a terminal, a progress line\n"
            "                     instead, also when stdout is redirected)\n"
            "  --set key=value    game setting (sim: vertices, k, variant)\n");
}

static void moves_text(const zt_game *g, const void *s, const uint16_t *moves, int n, char *buf,
                       size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    if (n == 0) snprintf(buf, cap, "-");
    for (int i = 0; i < n && used + 16 < cap; i++) {
        char a[64];
        g->action_to_text(g, s, moves[i], a, sizeof a);
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "," : "", a);
    }
}

int zt_cmd_solve(int argc, char **argv)
{
    zt_config *cfg = zt_config_new();
    const char *game_name = NULL, *path = NULL, *limit_arg = NULL;
    bool quiet = false;
    zt_status st = ZT_OK;
    int rc = 1;
    zt_game *g = NULL;
    zt_solver *sv = NULL;
    zt_progress_meter meter;
    bool meter_on = false;
    zt_position_file pf = {0};
    zt_position *pos = zt_xcalloc(1, sizeof *pos);
    zt_solution *sol = zt_xcalloc(1, sizeof *sol);

    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--positions", &path, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--limit", &limit_arg, &st)) {
            if (st != ZT_OK) goto fail;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            quiet = true;
        } else if ((rc = zt_cli_positional("solve", argv[i], (const char **const[]){&game_name}, 1)) != 0) {
            goto done;
        }
    }
    if (!game_name || !path) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    long limit = -1;
    if (limit_arg) {
        char *end;
        limit = strtol(limit_arg, &end, 10);
        if (*end != '\0' || limit < 1) {
            rc = zt_cli_error("solve: --limit must be a positive integer, got '%s'", limit_arg);
            goto done;
        }
    }
    if ((st = zt_cli_game(game_name, cfg, &g)) != ZT_OK) goto fail;
    if ((st = zt_solver_new(g, &sv)) != ZT_OK) goto fail;
    if ((st = zt_position_file_open(path, &pf)) != ZT_OK) goto fail;

    char text[ZT_MAX_TEXT], mv[2048];
    long total = 0, checked = 0, agreed = 0;
    double time_sum = 0, time_max = 0;
    /* A progress line on a terminal, unless the per-position lines go to
     * that terminal too (they are the progress then). */
    if (zt_progress_enabled() && (quiet || !isatty(STDOUT_FILENO))) {
        zt_progress_meter_init(&meter, "solve", "positions", zt_position_file_count(&pf, limit),
                               NULL, NULL);
        meter_on = true;
    }
    while (limit < 0 || total < limit) {
        bool got;
        if ((st = zt_position_file_next(&pf, sv, pos, &got)) != ZT_OK) goto fail;
        if (!got) break;
        double t0 = zt_now_s();
        if ((st = sv->solve(sv, pos->state, true, sol)) != ZT_OK) goto fail;
        double dt = zt_now_s() - t0;
        time_sum += dt;
        if (dt > time_max) time_max = dt;
        total++;
        bool ok = true;
        if (pos->has_value || pos->has_score || pos->has_moves) {
            checked++;
            ok = sv->agrees(&pos->expected, pos, sol);
            agreed += ok;
        }
        if (meter_on) {
            if (checked)
                zt_progress_meter_update(&meter, total, "agree %ld/%ld, max %.1f ms", agreed,
                                         checked, 1e3 * time_max);
            else
                zt_progress_meter_update(&meter, total, "max %.1f ms", 1e3 * time_max);
        }
        if (!quiet) {
            g->to_text(g, pos->state, text, sizeof text);
            moves_text(g, pos->state, sol->moves, sol->num_moves, mv, sizeof mv);
            printf("%s value=%+d score=%d moves=%s%s\n", text, sol->value, sol->score, mv,
                   ok ? "" : " DISAGREES");
        }
    }
    if (meter_on) {
        zt_progress_meter_end(&meter);
        meter_on = false;
    }
    if (total == 0) {
        rc = zt_cli_error("%s: no positions", path);
        goto done;
    }
    if (sv->stats) {
        char stats[256];
        sv->stats(sv, stats, sizeof stats);
        printf("# %s\n", stats);
    }
    printf("# %ld positions, time per position: mean %.3f ms, max %.3f ms\n", total,
           total ? 1e3 * time_sum / (double)total : 0.0, 1e3 * time_max);
    if (checked) printf("agree %ld/%ld\n", agreed, checked);
    rc = (checked && agreed != checked) ? 1 : 0;
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    if (meter_on) zt_progress_meter_end(&meter);
    zt_position_file_close(&pf);
    free(pos);
    free(sol);
    zt_solver_free(sv);
    zt_game_free(g);
    zt_config_free(cfg);
    return rc;
}
