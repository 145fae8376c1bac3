/* zeroth positions connect4 --seed S --out DIR: solver test sets made from
 * play the way Pascal Pons made his (arena/posmaker.h), one file per depth
 * band and rating, in his format plus the value-preserving columns. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arena/posmaker.h"
#include "cli/cli.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "search/settings.h"
#include "train/run.h"

#define MAX_PLAYERS 8

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth positions connect4 --out DIR [--seed S] [--games N] [--per-set N]\n"
               "                        [--players LIST] [--model M [--sims S]] [--noise P]\n"
               "                        [--sets LIST] [--rating remaining|nodes]\n"
               "                        [--nodes-medium N] [--nodes-hard N] [--max-nodes N]\n"
               "                        [--budget N] [--exclude LIST] [--set k=v]\n\n"
               "Makes solver test sets from play, the way Pascal Pons made his Test_L*_R*:\n"
               "positions of self-play games (each game: one player on both sides, a share of\n"
               "moves random), deduplicated up to mirror symmetry, without those the side to\n"
               "move wins at once, labelled by the exact solver, and sorted by depth band\n"
               "(opening 1..14 plies, middle 15..28, end 29..41: Pons' L1, L2, L3) and rating\n"
               "(easy, medium, hard). Writes DIR/<band>_<rating> for each set asked for,\n"
               "lines '<moves> <score> <value-preserving columns>' that eval --positions reads.\n"
               "  --out DIR        where the sets go (made if missing; files replaced atomically)\n"
               "  --seed S         every random choice derives from it (default 1)\n"
               "  --games N        games played (default 4000)\n"
               "  --per-set N      positions per set (default 300)\n"
               "  --players LIST   comma-separated players: random, perfect, alphabeta:D\n"
               "                   (default alphabeta:2,alphabeta:4,alphabeta:6)\n"
               "  --model M        also a model's self-play (search settings of its run,\n"
               "                   with Gumbel noise; --sims S overrides the simulations)\n"
               "  --noise P        share of moves replaced by a random legal move (default 0.15)\n"
               "  --sets LIST      band:rating pairs, e.g. middle:medium,opening:hard\n"
               "                   (default: all nine)\n"
               "  --rating R       remaining (default): Pons' measure, the plies left to the end\n"
               "                   under perfect play: easy <= 14, medium 15..28, hard >= 29;\n"
               "                   nodes: the nodes of the exact solve on an empty table:\n"
               "                   easy < --nodes-medium (default 20000) <= medium <\n"
               "                   --nodes-hard (default 1000000) <= hard\n"
               "  --max-nodes N    leave out positions whose solve, or label (the weak solve\n"
               "                   of its moves), takes more nodes (default 20000000, a few\n"
               "                   seconds)\n"
               "  --budget N       stop solving after N nodes in all (default 0: no limit)\n"
               "  --exclude LIST   comma-separated position files, or directories of them,\n"
               "                   whose positions (or their mirror images) are never kept,\n"
               "                   e.g. the sets a run is measured on; the other positions\n"
               "                   are the ones made without it\n"
               "  --set k=v        network settings for --model (backend, precision, threads)\n"
               "The same flags and seed give the same files.\n");
}

static bool parse_u64(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*text == '\0' || *text == '-' || *end != '\0' || errno || v < lo || v > hi) {
        zt_fail(ZT_ERR_INVALID, "%s: expected an integer in [%llu, %llu], got '%s'", flag,
                (unsigned long long)lo, (unsigned long long)hi, text);
        return false;
    }
    *out = v;
    return true;
}

/* The flag the exclusions come from, as their errors name it. */
#define EXCLUDE "--exclude"

/* The canonical hashes of the excluded positions read so far. */
typedef struct exclusion {
    const zt_game *g;
    uint64_t *hashes;
    int n, cap;
} exclusion;

static zt_status add_excluded(const zt_position *pos, void *ctx)
{
    exclusion *ex = ctx;
    ex->hashes = zt_xgrow(ex->hashes, &ex->cap, ex->n + 1, sizeof *ex->hashes);
    ex->hashes[ex->n++] = zt_posmaker_canonical(ex->g, pos->state);
    return ZT_OK;
}

/* Every regular file of directory `path` (names beginning with '.' left
 * out), in name order, into ex; *files counts them. A directory without
 * one is refused. */
static zt_status exclude_dir(const char *path, zt_solver *sv, exclusion *ex, int *files)
{
    char **names = zt_dir_names(path);
    if (!names)
        return zt_fail(ZT_ERR_IO, "%s: cannot open '%s': %s", EXCLUDE, path, strerror(errno));
    zt_status st = ZT_OK;
    int in_dir = 0;
    for (int i = 0; names[i] && st == ZT_OK; i++) {
        if (names[i][0] == '.') continue;
        char file[4400];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        struct stat sb;
        if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode)) {
            st = zt_position_file_each(file, sv, EXCLUDE, add_excluded, ex);
            in_dir++;
        }
    }
    zt_dir_names_free(names);
    if (st == ZT_OK && in_dir == 0)
        st = zt_fail(ZT_ERR_INVALID, "%s: directory '%s' holds no files", EXCLUDE, path);
    *files += in_dir;
    return st;
}

/* The canonical hashes of the positions of the comma-separated files in
 * list; a directory stands for the files in it (not those whose names
 * start with '.'). */
static zt_status read_exclude(const zt_game *g, const char *list, uint64_t **hashes, int *n,
                              int *files)
{
    *hashes = NULL;
    *n = *files = 0;
    zt_solver *sv;
    ZT_TRY(zt_solver_new(g, &sv));
    exclusion ex = {.g = g};
    zt_status st = ZT_OK;
    for (const char *p = list; st == ZT_OK;) {
        char path[4096];
        bool got;
        if ((st = zt_list_next(list, &p, EXCLUDE, path, sizeof path, &got)) != ZT_OK || !got) break;
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            st = exclude_dir(path, sv, &ex, files);
        } else {
            st = zt_position_file_each(path, sv, EXCLUDE, add_excluded, &ex);
            ++*files;
        }
    }
    zt_solver_free(sv);
    if (st != ZT_OK) {
        free(ex.hashes);
        return st;
    }
    *hashes = ex.hashes;
    *n = ex.n;
    return ZT_OK;
}

static int find_name(const char *const *names, int n, const char *text, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && strncmp(names[i], text, len) == 0) return i;
    return -1;
}

/* "middle:medium,opening:hard" into want[][]. */
static zt_status parse_sets(const char *text, bool want[ZT_BANDS][ZT_RATINGS])
{
    memset(want, 0, sizeof(bool) * ZT_BANDS * ZT_RATINGS);
    char set[64];
    bool got;
    int n = 0;
    for (const char *p = text;; n++) {
        ZT_TRY(zt_list_next(text, &p, "--sets", set, sizeof set, &got));
        if (!got) break;
        const char *colon = strchr(set, ':');
        int band = colon ? find_name(zt_band_names, ZT_BANDS, set, (size_t)(colon - set)) : -1;
        int rating =
            colon ? find_name(zt_rating_names, ZT_RATINGS, colon + 1, strlen(colon + 1)) : -1;
        if (band < 0 || rating < 0)
            return zt_fail(ZT_ERR_INVALID,
                           "--sets: bad set '%s' (expected BAND:RATING, bands opening, middle, "
                           "end; ratings easy, medium, hard)",
                           set);
        want[band][rating] = true;
    }
    if (n == 0) return zt_fail(ZT_ERR_INVALID, "--sets: no set in '%s'", text);
    return ZT_OK;
}

typedef struct meters {
    zt_progress_meter m;
    int phase;
    bool on;
} meters;

static void progress(void *ctx, int phase, int64_t done, int64_t total, int kept)
{
    meters *pm = ctx;
    if (pm->phase != phase) {
        if (pm->on) zt_progress_meter_end(&pm->m);
        zt_progress_meter_init(&pm->m, phase ? "positions: solve" : "positions: play",
                               phase ? "candidates" : "games", total, NULL, NULL);
        pm->phase = phase;
        pm->on = true;
    }
    if (!pm->m.draw) return;
    if (phase)
        zt_progress_meter_update(&pm->m, done, "kept %d", kept);
    else
        zt_progress_meter_update(&pm->m, done, NULL);
}

int zt_cmd_positions(int argc, char **argv)
{
    zt_config *cfg = zt_config_new();
    const char *game_name = NULL, *out_dir = NULL, *seed_arg = NULL, *games_arg = NULL,
               *per_set_arg = NULL, *players_arg = "alphabeta:2,alphabeta:4,alphabeta:6",
               *model_path = NULL, *sims_arg = NULL, *noise_arg = NULL, *sets_arg = NULL,
               *rating_arg = NULL, *medium_arg = NULL, *hard_arg = NULL, *max_arg = NULL,
               *budget_arg = NULL, *exclude_arg = NULL;
    zt_status st = ZT_OK;
    int rc = 1;
    zt_game *g = NULL;
    zt_net *net = NULL;
    zt_evaluator ev = {0};
    bool have_ev = false;
    zt_agent *agents[MAX_PLAYERS + 1] = {0};
    int num_agents = 0;
    zt_posmaker_result res = {0};
    uint64_t *exclude = NULL;
    int num_exclude = 0, exclude_files = 0;
    meters pm = {.phase = -1};

    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--out", &out_dir, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--seed", &seed_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--games", &games_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--per-set", &per_set_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--players", &players_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--model", &model_path, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--sims", &sims_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--noise", &noise_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--sets", &sets_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--rating", &rating_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--nodes-medium", &medium_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--nodes-hard", &hard_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--max-nodes", &max_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--budget", &budget_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--exclude", &exclude_arg, &st)) {
            if (st != ZT_OK) goto fail;
        } else if ((rc = zt_cli_positional("positions", argv[i], (const char **const[]){&game_name},
                                           1)) != 0) {
            goto done;
        }
    }
    if (!game_name || !out_dir) {
        usage(stderr);
        rc = 2;
        goto done;
    }

    zt_posmaker_config mc = {.seed = 1,
                             .games = 4000,
                             .noise = 0.15,
                             .per_set = 300,
                             .rating = ZT_RATE_REMAINING,
                             .nodes_medium = 20000,
                             .nodes_hard = 1000000,
                             .max_nodes = 20000000};
    uint64_t v;
    if (seed_arg) {
        if (!parse_u64("--seed", seed_arg, 0, UINT64_MAX, &v)) goto bad;
        mc.seed = v;
    }
    if (games_arg) {
        if (!parse_u64("--games", games_arg, 1, 100000000, &v)) goto bad;
        mc.games = (int)v;
    }
    if (per_set_arg) {
        if (!parse_u64("--per-set", per_set_arg, 1, 10000000, &v)) goto bad;
        mc.per_set = (int)v;
    }
    if (noise_arg) {
        char *end;
        mc.noise = strtod(noise_arg, &end);
        if (*noise_arg == '\0' || *end != '\0' || !(mc.noise >= 0 && mc.noise <= 1)) {
            rc = zt_cli_error("--noise: expected a number in [0, 1], got '%s'", noise_arg);
            goto done;
        }
    }
    if (rating_arg) {
        if (strcmp(rating_arg, "remaining") == 0)
            mc.rating = ZT_RATE_REMAINING;
        else if (strcmp(rating_arg, "nodes") == 0)
            mc.rating = ZT_RATE_NODES;
        else {
            rc = zt_cli_error("--rating: expected remaining or nodes, got '%s'", rating_arg);
            goto done;
        }
    }
    if (medium_arg && !parse_u64("--nodes-medium", medium_arg, 1, UINT64_MAX, &mc.nodes_medium))
        goto bad;
    if (hard_arg && !parse_u64("--nodes-hard", hard_arg, 1, UINT64_MAX, &mc.nodes_hard)) goto bad;
    if (mc.nodes_hard <= mc.nodes_medium) {
        rc = zt_cli_error("--nodes-hard (%llu) must be above --nodes-medium (%llu)",
                          (unsigned long long)mc.nodes_hard, (unsigned long long)mc.nodes_medium);
        goto done;
    }
    if (max_arg && !parse_u64("--max-nodes", max_arg, 1, UINT64_MAX, &mc.max_nodes)) goto bad;
    if (budget_arg && !parse_u64("--budget", budget_arg, 0, UINT64_MAX, &mc.budget_nodes)) goto bad;
    if (sets_arg) {
        if ((st = parse_sets(sets_arg, mc.want)) != ZT_OK) goto fail;
    } else {
        for (int b = 0; b < ZT_BANDS; b++)
            for (int k = 0; k < ZT_RATINGS; k++) mc.want[b][k] = true;
    }
    if (sims_arg && !model_path) {
        rc = zt_cli_error("positions: --sims is for --model");
        goto done;
    }
    if (sims_arg) {
        if (!parse_u64("--sims", sims_arg, 1, 1000000, &v)) goto bad;
        zt_config_put(cfg, "search.sims", sims_arg);
    }

    /* The game: the model's, else the named one. */
    zt_search_config search;
    if (model_path) {
        char from[4200];
        if ((st = zt_run_open_player(model_path, game_name, cfg, true, &g, &net, &search, from,
                                     sizeof from, NULL)) != ZT_OK)
            goto fail;
        if ((st = zt_run_evaluator_new(net, &ev)) != ZT_OK) goto fail;
        have_ev = true;
        zt_search_config_size(&search, g, 0);
        search.seed = mc.seed;
    } else if ((st = zt_cli_game(game_name, cfg, &g)) != ZT_OK) {
        goto fail;
    }
    if ((st = zt_config_check_unused(cfg)) != ZT_OK) goto fail;
    if (strcmp(g->name, "connect4") != 0) {
        rc = zt_cli_error("positions: only connect4 has a position-set maker, not %s", g->name);
        goto done;
    }

    /* The players: the list, then the model. */
    char list[512];
    if (strlen(players_arg) >= sizeof list) {
        rc = zt_cli_error("--players: list too long");
        goto done;
    }
    snprintf(list, sizeof list, "%s", players_arg);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (num_agents == MAX_PLAYERS) {
            rc = zt_cli_error("--players: at most %d players", MAX_PLAYERS);
            goto done;
        }
        zt_player *p;
        if ((st = zt_player_new(g, tok, &p)) != ZT_OK) goto fail;
        agents[num_agents++] = zt_agent_from_player(p, true);
    }
    if (model_path &&
        (st = zt_agent_search_new(g, &ev, &search, 64, NULL, &agents[num_agents++])) != ZT_OK) {
        num_agents--;
        goto fail;
    }
    if (num_agents == 0) {
        rc = zt_cli_error("positions: no players (--players or --model)");
        goto done;
    }
    mc.players = agents;
    mc.num_players = num_agents;
    if (exclude_arg) {
        if ((st = read_exclude(g, exclude_arg, &exclude, &num_exclude, &exclude_files)) != ZT_OK)
            goto fail;
        mc.exclude = exclude;
        mc.num_exclude = num_exclude;
    }
    if ((st = zt_mkdirs(out_dir)) != ZT_OK) goto fail;

    mc.progress = progress;
    mc.progress_ctx = &pm;
    st = zt_posmaker_run(g, &mc, &res);
    if (pm.on) zt_progress_meter_end(&pm.m);
    pm.on = false;
    if (st != ZT_OK) goto fail;

    /* The header of every file: how to make it again. */
    char header[2048];
    size_t used = (size_t)snprintf(header, sizeof header, "made by: zeroth positions");
    for (int i = 1; i < argc && used < sizeof header; i++)
        used += (size_t)snprintf(header + used, sizeof header - used, " %s", argv[i]);
    if (used < sizeof header)
        snprintf(header + used, sizeof header - used,
                 "\nline: <moves> <score> <value-preserving columns>; rating by %s\n"
                 "players: %s%s%s%s; noise %g; %d games, %lld positions, %lld distinct, "
                 "%lld won at once (left out), %lld solved, %lld over %llu nodes (left out)",
                 mc.rating == ZT_RATE_NODES ? "solver nodes" : "plies left under perfect play",
                 players_arg, model_path && players_arg[0] ? ", " : "", model_path ? "model " : "",
                 model_path ? model_path : "", mc.noise, mc.games, (long long)res.positions,
                 (long long)res.unique, (long long)res.wins_now, (long long)res.solved,
                 (long long)res.cut, (unsigned long long)mc.max_nodes);
    used = strlen(header);
    if (exclude_arg && used < sizeof header)
        snprintf(header + used, sizeof header - used,
                 ", %lld passed over as positions of --exclude (%d in %d file%s)",
                 (long long)res.excluded, num_exclude, exclude_files,
                 exclude_files == 1 ? "" : "s");
    printf("%d games in %.1f s: %lld positions, %lld distinct up to symmetry, %lld won at once "
           "(left out)\n",
           mc.games, res.play_seconds, (long long)res.positions, (long long)res.unique,
           (long long)res.wins_now);
    printf("solved %lld in %.1f s (%.3g nodes), %lld over --max-nodes (left out)\n",
           (long long)res.solved, res.solve_seconds, (double)res.nodes, (long long)res.cut);
    if (exclude_arg)
        printf("passed over %lld candidates as positions of --exclude (%d positions in %d "
               "file%s, mirror images included)\n",
               (long long)res.excluded, num_exclude, exclude_files, exclude_files == 1 ? "" : "s");
    for (int b = 0; b < ZT_BANDS; b++)
        for (int k = 0; k < ZT_RATINGS; k++) {
            if (!mc.want[b][k]) continue;
            char path[4200];
            snprintf(path, sizeof path, "%s/%s_%s", out_dir, zt_band_names[b], zt_rating_names[k]);
            uint64_t lo = UINT64_MAX, hi = 0;
            int n = res.per[b][k];
            for (int i = 0; i < res.count; i++) {
                const zt_made_position *p = &res.kept[i];
                if (p->band != b || p->rating != k) continue;
                if (p->nodes < lo) lo = p->nodes;
                if (p->nodes > hi) hi = p->nodes;
            }
            if (n == 0) {
                printf("%s: no positions%s\n", path, "");
                continue;
            }
            if ((st = zt_posmaker_write(&res, b, k, header, path)) != ZT_OK) goto fail;
            printf("%s: %d positions%s, solver nodes %llu..%llu, %.1f s to label\n", path, n,
                   n < mc.per_set ? " (fewer than asked: candidates or budget ran out)" : "",
                   (unsigned long long)lo, (unsigned long long)hi, res.set_seconds[b][k]);
        }
    rc = 0;
    goto done;
bad:
    st = ZT_ERR_INVALID;
fail:
    rc = zt_cli_fail(st);
done:
    if (pm.on) zt_progress_meter_end(&pm.m);
    zt_posmaker_result_free(&res);
    free(exclude);
    for (int i = 0; i < num_agents; i++) zt_agent_free(agents[i]);
    if (have_ev) zt_run_evaluator_free(&ev);
    zt_net_free(net);
    zt_game_free(g);
    zt_config_free(cfg);
    return rc;
}
