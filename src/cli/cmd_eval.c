/* zeroth eval GAME --model M --opponent X --games N: a match with
 * alternating colours (W-D-L, score, Elo with its 95 % interval, an SPRT on
 * request); zeroth eval GAME --model M --positions FILE: the share of a
 * solver test set played optimally (arena/arena.h). A one-player game
 * (2048) has no opponent: zeroth eval 2048 --model M --games N, or --player
 * SPEC for a baseline, prints the mean score with its 95 % interval and the
 * distribution of the game's level (the highest tile). The model plays with a
 * net and a search (its run's search settings, else Gumbel's defaults), or
 * its raw policy with --sims 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/gnubg.h"
#include "arena/arena.h"
#include "cli/cli.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/timer.h"
#include "serve/json.h"
#include "search/settings.h"
#include "train/run.h"

/* "alphabeta:D (connect4), negamax:D (sim), pubeval (backgammon)": the
 * baselines the games' registry entries declare. */
static void baselines_text(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < zt_game_registry_count; i++) {
        const zt_game_def *def = zt_game_registry[i];
        for (const zt_baseline *b = def->baselines; b && b->name && used < cap; b++) {
            int n = snprintf(buf + used, cap - used, "%s%s%s (%s)", used ? ", " : "", b->name,
                             b->takes_depth ? ":D" : "", def->name);
            if (n < 0) return;
            used = used + (size_t)n < cap ? used + (size_t)n : cap;
        }
    }
}

static void usage(FILE *f)
{
    char baselines[256];
    baselines_text(baselines, sizeof baselines);
    fprintf(
        f,
        "usage: zeroth eval GAME --model M --opponent X [--games N] [--sprt [--elo0 E0]\n"
        "                        [--elo1 E1] [--alpha A] [--beta B]] [--sims S] [--greedy]\n"
        "                        [--plies P]\n"
        "                        [--set k=v]\n"
        "       zeroth eval GAME --model M --positions FILE [--limit N] [--sims S]\n"
        "                        [--images N|all] [--mistakes F] [--set k=v]\n"
        "       zeroth eval GAME --model M [--games N] [--sims S] [--set k=v]  (one player)\n"
        "       zeroth eval GAME --player X [--games N] [--set k=v]             (one player)\n"
        "       zeroth eval GAME --player X --opponent Y [--games N] [--sprt ...] [--set k=v]\n\n"
        "Measures a model's strength. A model is a weights file, a checkpoint directory\n"
        "or a run directory (its latest checkpoint). In a one-player game (2048) a\n"
        "model or a baseline (--player: random or the game's baselines) plays alone and\n"
        "eval prints the mean score with its 95 %% interval and the distribution of\n"
        "the highest tile. In a two-player game --player X --opponent Y plays two\n"
        "baselines against each other (--set also takes the game's settings).\n"
        "  --opponent X   random, perfect, solver, mcts:N (UCT with random rollouts,\n"
        "                 N simulations a move), the game's baselines:\n"
        "                 %s,\n"
        "                 gnubg or gnubg:PLIES (backgammon, needs GNU Backgammon), or\n"
        "                 another model\n"
        "  --games N      games to play, colours alternating (default 100; 1000 in\n"
        "                 games with chance, backgammon); prints W-D-L, score and Elo\n"
        "                 with its 95 %% interval, and points per game with its 95 %%\n"
        "                 interval where a game is worth more than one point\n"
        "  --sprt         stop early by a sequential probability ratio test of\n"
        "                 H0 Elo = E0 (default 0) against H1 Elo = E1 (default 50),\n"
        "                 error rates A and B (default 0.05)\n"
        "  --positions F  a position file of ../shared/data: last line 'optimal N/M'\n"
        "                 or 'mistakes N/M', as the game's set of that name is judged\n"
        "                 (connect4: mistakes, also by depth band: opening 1..14\n"
        "                 plies, middle 15..28, end 29..41)\n"
        "  --limit N      only the first N positions\n"
        "  --images N     judge each position in its first N images under the game's\n"
        "                 symmetries (all: every one; connect4 2, the mirror image;\n"
        "                 tictactoe 8), each asked as a position of its own: prints\n"
        "                 each image's count, their total, and the positions wrong\n"
        "                 in every image and in some (default 1: as written)\n"
        "  --mistakes F   write the positions whose move lost value to F, a position\n"
        "                 file: each line as the set gives it, after a comment with\n"
        "                 the move played and the moves that keep the value (with\n"
        "                 --images, one comment for each image wrong, in the moves\n"
        "                 of the line as written)\n"
        "  --sims S       simulations per move (0: the raw policy's best move); short\n"
        "                 for --set search.sims=S\n"
        "  --greedy       no search: each turn ends where the net's value is highest\n"
        "                 (backgammon: the best complete play, as gnubg's 0-ply; the\n"
        "                 opponent's roll averaged exactly); models on both sides.\n"
        "                 The default for a model whose run's arena played so\n"
        "                 (arena.sims = 0, backgammon's default) unless --sims is given\n"
        "  --plies P      greedy play P plies deeper (0 or 1; default 0): 1 values the\n"
        "                 best 8 ends again by the opponent's best reply to each roll\n"
        "                 (gnubg's 1-ply); about a hundred times 0-ply's network calls\n"
        "  --seed N       seed of dice and the agents' randomness (default 1)\n"
        "  --set k=v      search settings, search.KEY (docs/search.md): search.algorithm\n"
        "                 (gumbel|puct), search.sims, search.leaves_per_tree,\n"
        "                 search.gumbel_m, search.gumbel_noise (default on in matches,\n"
        "                 off on positions), search.c_visit, search.c_scale,\n"
        "                 search.c_init, search.c_base, search.tree_reuse, ...;\n"
        "                 concurrency (games in flight, default 64), duplicate\n"
        "                 (games with chance: each pair of games plays the same dice\n"
        "                 with colours swapped; default true), backend,\n"
        "                 precision, threads, and the game's settings (default: the\n"
        "                 model's)\n\n"
        "The search: a run or checkpoint directory plays with its run's search\n"
        "(the search.* keys of RUN/config.ini, without self-play's noise), a weights\n"
        "file with the defaults (gumbel, 32 simulations); flags override either.\n",
        baselines);
}

/* A model with everything its agent borrows. */
typedef struct model_agent {
    zt_game *game;
    zt_net *net;
    zt_evaluator ev;
    zt_agent *agent;
} model_agent;

static void model_agent_free(model_agent *m)
{
    zt_agent_free(m->agent);
    zt_run_evaluator_free(&m->ev);
    zt_net_free(m->net);
    zt_game_free(m->game);
    memset(m, 0, sizeof *m);
}


/* Opens the opponent's model at `path` with the network settings of cfg
 * (read, and checked, with the user's model); its agent is built by
 * model_agent_start. */
static zt_status model_open(const char *path, zt_config *cfg, model_agent *out)
{
    memset(out, 0, sizeof *out);
    const char *backend;
    zt_precision prec;
    int threads;
    ZT_TRY(zt_run_nn_settings(cfg, ZT_RUN_PLAY_THREADS, &backend, &prec, &threads));
    ZT_TRY(zt_run_open_model(path, backend, prec, threads, &out->game, &out->net));
    zt_status st = zt_run_evaluator_new(out->net, &out->ev);
    if (st != ZT_OK) model_agent_free(out);
    return st;
}

static zt_status model_agent_start(model_agent *m, const zt_search_config *sc, bool greedy,
                                   int plies, int max_games)
{
    if (greedy) return zt_agent_greedy_new(m->game, &m->ev, max_games, plies, &m->agent);
    if (sc->num_simulations == 0) return zt_agent_policy_new(m->game, &m->ev, max_games, &m->agent);
    return zt_agent_search_new(m->game, &m->ev, sc, max_games, NULL, &m->agent);
}

static bool parse_int(const char *flag, const char *text, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < lo || v > hi) {
        zt_fail(ZT_ERR_INVALID, "%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi,
                text);
        return false;
    }
    *out = v;
    return true;
}

static bool parse_double(const char *flag, const char *text, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || !(v >= lo && v <= hi)) {
        zt_fail(ZT_ERR_INVALID, "%s: expected a number in [%g, %g], got '%s'", flag, lo, hi, text);
        return false;
    }
    *out = v;
    return true;
}

/* An opponent that names an existing file or directory, or has a path
 * separator, is a model; anything else a baseline player's spec. */
static bool names_model(const char *x)
{
    struct stat sb;
    return strchr(x, '/') || stat(x, &sb) == 0;
}

/* "eval: 2048 score" meter: games done, mean score so far. */
static void score_progress(void *ctx, const zt_score_result *r)
{
    zt_progress_meter *m = ctx;
    if (!m->draw) return;
    zt_progress_meter_update(m, r->games, "mean score %.0f, max %.0f", r->mean, r->max);
}

/* Plays a one-player game's games with `agent` and prints the scores. */
static zt_status score_run(const zt_game *g, zt_agent *agent, long games, long seed,
                           int concurrency)
{
    zt_score_config sc = {.games = (int)games, .concurrency = concurrency, .seed = (uint64_t)seed};
    zt_score_result r;
    zt_progress_meter meter;
    zt_progress_meter_init(&meter, "eval", "games", games, NULL, NULL);
    sc.progress = score_progress;
    sc.progress_ctx = &meter;
    zt_progress_meter_update(&meter, 0, NULL);
    double t0 = zt_now_s();
    zt_status st = zt_arena_score(g, agent, &sc, &r);
    zt_progress_meter_end(&meter);
    if (st != ZT_OK) return st;
    double dt = zt_now_s() - t0;
    char line[512];
    printf("%d games of %s by %s in %.1f s (%.2f games/s, %.0f moves/s)\n", r.games, g->title,
           agent->name, dt, dt > 0 ? r.games / dt : 0.0, dt > 0 ? (double)r.moves / dt : 0.0);
    zt_score_format(&r, line, sizeof line);
    printf("%s\n", line);
    zt_score_levels_format(g, &r, line, sizeof line);
    if (line[0]) printf("%s\n", line);
    return ZT_OK;
}

/* A match's result: games and time, wins by seat, points per game where a
 * game is worth more than one point, W-D-L with score and Elo. */
static void print_match(const zt_game *g, const zt_match_result *r, const char *opponent,
                        double dt, bool sprt)
{
    printf("%d games against %s in %.1f s (%.2f games/s)%s\n", r->games, opponent, dt,
           dt > 0 ? r->games / dt : 0.0, r->stopped_early ? ", stopped early by the SPRT" : "");
    printf("as first player: %d wins in %d games; as second: %d wins in %d games\n", r->wins_first,
           r->games_first, r->wins - r->wins_first, r->games - r->games_first);
    /* Games worth more than one point (backgammon's gammons) report points. */
    if (g->max_return > 1) {
        char pts[128];
        zt_points_format(&r->points, pts, sizeof pts);
        printf("%s (95 %% interval; %d %s%s%s)\n", pts, r->points.units,
               r->duplicate ? "pair" : "game", r->points.units == 1 ? "" : "s",
               r->duplicate ? " of games, duplicate dice" : "");
    }
    char line[256];
    zt_match_format(r, sprt, line, sizeof line);
    printf("%s\n", line);
}

/* Agent a against b (a's side reported) with eval's match settings, and the
 * result printed: games 0 is 1,000 in games with chance (backgammon's
 * dice, duplicate unless `duplicate` is false), else 100. players[i] is
 * the baseline behind a (i = 0) or b (1), NULL for a model: a GNU
 * Backgammon that fails shows as an illegal move to the arena, and its own
 * message says why. t0: when the timing of the result starts. Returns 0, or
 * 1 after a one-line error. */
static int run_match(const zt_game *g, zt_agent *a, zt_agent *b, zt_player *const players[2],
                     long games, long seed, int64_t concurrency, bool duplicate, bool sprt,
                     const zt_sprt_config *sc, double t0)
{
    bool chance = g->max_chance_outcomes > 0;
    zt_match_config mc = {.games = games > 0 ? (int)games : chance ? 1000 : 100,
                          .concurrency = (int)concurrency,
                          .seed = (uint64_t)seed,
                          .duplicate = duplicate && chance,
                          .use_sprt = sprt,
                          .sprt = *sc};
    zt_match_result r;
    zt_progress_meter meter;
    zt_cli_match_progress(&mc, &meter);
    zt_status st = zt_arena_match(g, a, b, &mc, &r);
    zt_progress_meter_end(&meter);
    for (int i = 0; i < 2; i++)
        if (zt_gnubg_error(players[i])[0]) return zt_cli_error("%s", zt_gnubg_error(players[i]));
    if (st != ZT_OK) return zt_cli_fail(st);
    print_match(g, &r, b->name, zt_now_s() - t0, sprt);
    return 0;
}

/* zeroth eval GAME --player X: a baseline alone at a one-player game. */
static int eval_player(const char *game_name, const char *spec, zt_config *cfg,
                       const char *games_arg, const char *seed_arg)
{
    zt_game *g = NULL;
    zt_player *p = NULL;
    zt_agent *agent = NULL;
    int64_t concurrency;
    long games = 100, seed = 1;
    zt_status st = zt_game_new(game_name, cfg, &g);
    if (st == ZT_OK) st = zt_config_int(cfg, "concurrency", 64, 1, 4096, &concurrency);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK && ((games_arg && !parse_int("--games", games_arg, 1, 100000000, &games)) ||
                        (seed_arg && !parse_int("--seed", seed_arg, 0, 0x7fffffffL, &seed))))
        st = ZT_ERR_INVALID;
    if (st == ZT_OK && zt_game_num_players(g) != 1) {
        int rc = zt_cli_error("eval: --player is for one-player games; %s is played against an "
                              "--opponent with --model",
                              g->title);
        zt_game_free(g);
        return rc;
    }
    if (st == ZT_OK) st = zt_player_new(g, spec, &p);
    if (st == ZT_OK) {
        agent = zt_agent_from_player(p, true);
        printf("player %s (%s)\n", spec, g->title);
        st = score_run(g, agent, games, seed, (int)concurrency);
    }
    zt_agent_free(agent);
    zt_game_free(g);
    return st == ZT_OK ? 0 : zt_cli_fail(st);
}

/* zeroth eval GAME --player X --opponent Y: two baselines' match in a
 * two-player game, X as the "model" side of the result. */
static int eval_baselines(const char *game_name, const char *spec, const char *opponent,
                          zt_config *cfg, long games, long seed, bool sprt,
                          const zt_sprt_config *sc)
{
    zt_game *g = NULL;
    zt_player *p[2] = {NULL, NULL};
    zt_agent *agent[2] = {NULL, NULL};
    int64_t concurrency;
    bool duplicate;
    int rc = 1;
    zt_status st = zt_game_new(game_name, cfg, &g);
    if (st == ZT_OK) st = zt_config_int(cfg, "concurrency", 64, 1, 4096, &concurrency);
    if (st == ZT_OK) st = zt_config_bool(cfg, "duplicate", true, &duplicate);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st != ZT_OK) goto fail;
    if (zt_game_num_players(g) != 2) {
        rc = zt_cli_error("eval: %s is a one-player game: --player X alone (no --opponent)",
                          g->title);
        goto done;
    }
    const char *specs[2] = {spec, opponent};
    for (int i = 0; i < 2; i++) {
        if ((st = zt_player_new(g, specs[i], &p[i])) != ZT_OK) goto fail;
        agent[i] = zt_agent_from_player(p[i], true);
    }
    printf("player %s (%s)\n", spec, g->title);
    rc = run_match(g, agent[0], agent[1], p, games, seed, concurrency, duplicate, sprt, sc,
                   zt_now_s());
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    for (int i = 0; i < 2; i++) {
        if (agent[i])
            zt_agent_free(agent[i]); /* frees its player */
        else
            zt_player_free(p[i]);
    }
    zt_game_free(g);
    return rc;
}

/* The text of the positions whose move lost value (--mistakes): each
 * position's line once, after a comment for each of its images wrong. */
typedef struct mistake_log {
    const zt_game *game;
    zt_json_buf text; /* (a growing printf buffer; nothing JSON about it) */
    int index;        /* the position whose line is pending, -1 none */
    char *line;       /* its line (a copy: the file's text goes with the run) */
} mistake_log;

/* Writes the pending position's line. */
static void mistake_log_flush(mistake_log *m)
{
    if (m->index >= 0) zt_json_printf(&m->text, "%s\n", m->line ? m->line : "");
    free(m->line);
    m->line = NULL;
    m->index = -1;
}

static void on_mistake(void *ctx, int index, int image, const char *line, const void *state,
                       int action, const uint16_t *keep, int num_keep)
{
    mistake_log *m = ctx;
    if (index != m->index) {
        mistake_log_flush(m);
        m->index = index;
        m->line = line ? zt_xstrdup(line) : NULL;
    }
    char move[64];
    m->game->action_to_text(m->game, state, action, move, sizeof move);
    if (image > 0)
        zt_json_printf(&m->text, "# position %d, image %d: played %s, keeps", index + 1, image,
                       move);
    else
        zt_json_printf(&m->text, "# position %d: played %s, keeps", index + 1, move);
    for (int i = 0; i < num_keep; i++) {
        m->game->action_to_text(m->game, state, keep[i], move, sizeof move);
        zt_json_printf(&m->text, "%s%s", i ? "," : " ", move);
    }
    zt_json_printf(&m->text, "%s\n", num_keep ? "" : " none");
}

/* The judgement of a position set: its count, with images (per_image, one
 * result each) every image's and the positions wrong in every one and in
 * some; then by depth, by value and the net's own value, over all images. */
static void print_positions(const char *path, const zt_positions_result *r,
                            const zt_positions_result *per_image, double seconds)
{
    const char *metric = r->report_mistakes ? "mistakes" : "optimal";
    int k = r->report_mistakes ? r->mistakes : r->optimal;
    if (r->images > 1)
        printf("positions %s: %d judged (%d positions in %d images each) in %.1f s, %.2f %% %s\n",
               path, r->positions, r->positions / r->images, r->images, seconds,
               100.0 * k / r->positions, metric);
    else
        printf("positions %s: %d judged in %.1f s, %.2f %% %s\n", path, r->positions, seconds,
               100.0 * k / r->positions, metric);
    char line[256];
    zt_positions_format(r, line, sizeof line);
    printf("%s\n", line);
    for (int i = 0; per_image && i < r->images; i++) {
        const zt_positions_result *p = &per_image[i];
        int pk = p->report_mistakes ? p->mistakes : p->optimal;
        zt_positions_format(p, line, sizeof line);
        printf("image %d%s: %s (%.2f %%)\n", i, i == 0 ? " (as written)" : "", line,
               100.0 * pk / p->positions);
    }
    if (r->images > 1) {
        int n = r->positions / r->images;
        printf("positions whose move lost value in every image %d/%d (%.2f %%), in some image "
               "%d/%d (%.2f %%)\n",
               r->wrong_every, n, 100.0 * r->wrong_every / n, r->wrong_some, n,
               100.0 * r->wrong_some / n);
    }
    zt_positions_format_bands(r, line, sizeof line);
    if (line[0]) printf("by depth: %s\n", line);
    zt_positions_format_values(r, line, sizeof line);
    if (line[0]) printf("by value: %s\n", line);
    zt_positions_format_net(r, line, sizeof line);
    if (line[0]) printf("net value: %s\n", line);
}

int zt_cmd_eval(int argc, char **argv)
{
    zt_config *cfg = zt_config_new();
    const char *game_name = NULL, *model_path = NULL, *opponent = NULL, *positions = NULL;
    const char *player_spec = NULL;
    const char *games_arg = NULL, *limit_arg = NULL, *sims_arg = NULL, *seed_arg = NULL;
    const char *elo0_arg = NULL, *elo1_arg = NULL, *alpha_arg = NULL, *beta_arg = NULL;
    const char *plies_arg = NULL, *mistakes_path = NULL, *images_arg = NULL;
    mistake_log mlog = {.index = -1};
    bool sprt = false, greedy = false;
    zt_status st = ZT_OK;
    int rc = 1;
    model_agent me = {0}, them = {0};
    zt_player *opp_player = NULL; /* owned by opp_agent once wrapped */
    zt_agent *opp_agent = NULL;

    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--model", &model_path, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--opponent", &opponent, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--player", &player_spec, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--games", &games_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--positions", &positions, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--limit", &limit_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--mistakes", &mistakes_path, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--images", &images_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--sims", &sims_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--plies", &plies_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--seed", &seed_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--elo0", &elo0_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--elo1", &elo1_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--alpha", &alpha_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--beta", &beta_arg, &st)) {
            if (st != ZT_OK) goto fail;
        } else if (strcmp(argv[i], "--sprt") == 0) {
            sprt = true;
        } else if (strcmp(argv[i], "--greedy") == 0) {
            greedy = true;
        } else if ((rc = zt_cli_positional("eval", argv[i], (const char **const[]){&game_name},
                                           1)) != 0) {
            goto done;
        }
    }
    if (game_name && player_spec && !model_path && !opponent && !positions) {
        rc = eval_player(game_name, player_spec, cfg, games_arg, seed_arg);
        goto done;
    }
    bool baselines = player_spec && opponent && !model_path; /* two baselines' match */
    if (!game_name || (!model_path && !baselines) || (model_path && player_spec) ||
        (baselines && (sims_arg || greedy || plies_arg))) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    if (opponent && positions) {
        rc = zt_cli_error("eval: give either --opponent or --positions, not both");
        goto done;
    }
    if (mistakes_path && !positions) {
        rc = zt_cli_error("eval: --mistakes needs --positions");
        goto done;
    }
    if (images_arg && !positions) {
        rc = zt_cli_error("eval: --images needs --positions");
        goto done;
    }

    long games = 0, limit = 0, seed = 1, images = 1;
    zt_sprt_config sc = {.elo0 = 0, .elo1 = 50, .alpha = 0.05, .beta = 0.05};
    if ((games_arg && !parse_int("--games", games_arg, 1, 100000000, &games)) ||
        (limit_arg && !parse_int("--limit", limit_arg, 1, 100000000, &limit)) ||
        (images_arg && strcmp(images_arg, "all") != 0 &&
         !parse_int("--images (or all)", images_arg, 1, 100000000, &images)) ||
        (seed_arg && !parse_int("--seed", seed_arg, 0, 0x7fffffffL, &seed)) ||
        (elo0_arg && !parse_double("--elo0", elo0_arg, -2000, 2000, &sc.elo0)) ||
        (elo1_arg && !parse_double("--elo1", elo1_arg, -2000, 2000, &sc.elo1)) ||
        (alpha_arg && !parse_double("--alpha", alpha_arg, 1e-6, 0.5, &sc.alpha)) ||
        (beta_arg && !parse_double("--beta", beta_arg, 1e-6, 0.5, &sc.beta))) {
        st = ZT_ERR_INVALID;
        goto fail;
    }
    if (sprt && sc.elo0 >= sc.elo1) {
        rc = zt_cli_error("eval: --elo0 (%g) must be below --elo1 (%g)", sc.elo0, sc.elo1);
        goto done;
    }
    if (baselines) {
        rc = eval_baselines(game_name, player_spec, opponent, cfg, games, seed, sprt, &sc);
        goto done;
    }
    if (sims_arg) {
        long s;
        if (!parse_int("--sims", sims_arg, 0, 1000000, &s)) {
            st = ZT_ERR_INVALID;
            goto fail;
        }
        zt_config_put(cfg, "search.sims", sims_arg);
    }

    /* Settings: the network's, the model (and its game), the search's. */
    int64_t concurrency;
    zt_search_config search;
    char run_config[4200];
    /* Gumbel noise varies the games of a match; positions are judged on
     * the search's best move. */
    bool run_greedy; /* the run's arena played greedily, and --sims was not given */
    if ((st = zt_run_open_player(model_path, game_name, cfg, positions == NULL, &me.game, &me.net,
                                 &search, run_config, sizeof run_config, &run_greedy)) != ZT_OK)
        goto fail;
    int plies;
    char what[128];
    if ((rc = zt_cli_greedy_play("eval", &greedy, run_greedy, plies_arg, &plies, what,
                                 sizeof what)) != 0)
        goto done;
    rc = 1;
    if ((st = zt_run_evaluator_new(me.net, &me.ev)) != ZT_OK) goto fail;
    zt_search_config_size(&search, me.game, 0);
    if ((st = zt_config_int(cfg, "concurrency", 64, 1, 4096, &concurrency)) != ZT_OK) goto fail;
    bool duplicate;
    if ((st = zt_config_bool(cfg, "duplicate", true, &duplicate)) != ZT_OK) goto fail;
    if ((st = zt_config_check_unused(cfg)) != ZT_OK) goto fail;
    search.seed = (uint64_t)seed;
    if ((st = model_agent_start(&me, &search, greedy, plies,
                                positions ? 256 : (int)concurrency)) != ZT_OK)
        goto fail;
    const zt_game *g = me.game;
    if (zt_game_num_players(g) == 1 && (opponent || positions)) {
        rc = zt_cli_error("eval: %s is a one-player game: no --opponent or --positions (it "
                          "reports the mean score)",
                          g->title);
        goto done;
    }
    if (zt_game_num_players(g) == 2 && !opponent && !positions) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    char spec[256];
    zt_game_spec(g, spec, sizeof spec);
    if (!greedy) { /* (greedy: zt_cli_greedy_play's words) */
        if (search.num_simulations == 0)
            snprintf(what, sizeof what, "raw policy");
        else
            snprintf(what, sizeof what, "%s, %d simulations",
                     search.algorithm == ZT_SEARCH_GUMBEL ? "gumbel" : "puct",
                     search.num_simulations);
    }
    int nth = zt_net_threads(me.net);
    printf("model %s (%s; %s, %s nn on %d thread%s)\n", model_path, spec, what,
           zt_net_backend_name(me.net), nth, nth == 1 ? "" : "s");
    if (run_config[0]) printf("search settings of %s (flags override them)\n", run_config);
    double t0 = zt_now_s();

    if (positions) {
        if (images_arg && strcmp(images_arg, "all") == 0) images = g->num_symmetries;
        zt_positions_result pr, *per_image = NULL;
        zt_positions_config pc = {.path = positions,
                                  .limit = (int)limit,
                                  .seed = (uint64_t)seed,
                                  .value_ev = &me.ev,
                                  .images = (int)images};
        if (images > 1 && images <= g->num_symmetries)
            pc.per_image = per_image = zt_xcalloc((size_t)images, sizeof *per_image);
        zt_progress_meter meter;
        zt_cli_positions_progress(&pc, &meter);
        if (mistakes_path) {
            mlog.game = g;
            zt_json_printf(&mlog.text, "# %s: the positions whose move lost value (%s)\n",
                           positions, what);
            pc.mistake = on_mistake;
            pc.mistake_ctx = &mlog;
        }
        st = zt_arena_positions_run(g, me.agent, &pc, &pr);
        zt_progress_meter_end(&meter);
        mistake_log_flush(&mlog);
        if (st == ZT_OK && mistakes_path)
            st = zt_write_file_atomic(mistakes_path, mlog.text.data, mlog.text.len);
        if (st == ZT_OK) print_positions(positions, &pr, per_image, zt_now_s() - t0);
        free(per_image);
        if (st != ZT_OK) goto fail;
        rc = 0;
        goto done;
    }

    if (zt_game_num_players(g) == 1) {
        st = score_run(g, me.agent, games, seed, (int)concurrency);
        if (st != ZT_OK) goto fail;
        rc = 0;
        goto done;
    }

    /* (gnubg is a baseline even where a file of that name exists) */
    if (!zt_gnubg_names(opponent) && names_model(opponent)) {
        if ((st = model_open(opponent, cfg, &them)) != ZT_OK) goto fail;
        char theirs[256];
        zt_game_spec(them.game, theirs, sizeof theirs);
        if (strcmp(spec, theirs) != 0) {
            rc = zt_cli_error("opponent '%s' plays '%s', not '%s'", opponent, theirs, spec);
            goto done;
        }
        if ((st = model_agent_start(&them, &search, greedy, plies, (int)concurrency)) != ZT_OK)
            goto fail;
        opp_agent = them.agent;
        them.agent = NULL; /* freed as opp_agent */
    } else {
        if ((st = zt_player_new(g, opponent, &opp_player)) != ZT_OK) goto fail;
        opp_agent = zt_agent_from_player(opp_player, true);
    }
    /* Games with chance (backgammon's dice) need many games to separate
     * agents: 1000 by default, with duplicate dice. */
    rc = run_match(g, me.agent, opp_agent, (zt_player *const[2]){NULL, opp_player}, games, seed,
                   concurrency, duplicate, sprt, &sc, t0);
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    zt_json_buf_free(&mlog.text);
    zt_agent_free(opp_agent);
    model_agent_free(&them);
    model_agent_free(&me);
    zt_config_free(cfg);
    return rc;
}
