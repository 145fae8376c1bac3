/* The scheduler: metrics, log and status lines, the checkpoint timer and the
 * arena (see scheduler.h). */
#include "train/scheduler.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/evaluator.h"
#include "agent/gnubg.h"
#include "agent/player.h"
#include "arena/arena.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/timer.h"
#include "game/sample.h"
#include "search/nncache.h"
#include "search/settings.h"

#define ARENA_MAX_GAMES 64

/* Metrics cadence (issue 17): in a run's first minute a record every 0.25 s
 * or every 100 learner steps, whichever comes first, so that even a run of
 * a few seconds draws curves; then every log.seconds. */
#define EARLY_SECONDS 60.0
#define EARLY_METRICS_SECONDS 0.25
#define EARLY_METRICS_STEPS 100

/* Totals of what the status line and metrics report, and where the last
 * report left them (rates are differences over the interval). */
typedef struct totals {
    double t;
    int64_t games, positions, step;
    uint64_t inferences, valued, hits, moves;
    zt_runner_waits waits;
    zt_learner_times learner;
    uint64_t checkpoint_ns, arena_ns;
} totals;

struct zt_scheduler {
    zt_scheduler_parts p;
    const zt_train_settings *S;
    FILE *metrics, *logf;
    double t0;       /* zt_now_s() when this invocation started */
    double elapsed0; /* the run's wall seconds before it */

    totals last_log_totals, last_metrics_totals;
    uint64_t checkpoint_ns, arena_ns; /* the learner thread's time in them (periodic ones) */
    double last_log, last_metrics, last_status, last_ckpt, last_arena;
    bool replay_figure_logged;

    /* the arena */
    zt_net *eval_net;
    zt_net_evaluator *eval; /* over eval_net */
    float *int8_obs;        /* int8 actors: random-play positions the arena's net is calibrated on */
    zt_nncache *eval_cache;
    int64_t arena_step;      /* the step of the last arena (-1: none) */
    char arena_summary[256]; /* the status line's arena part */
    bool perfect;
    /* One-player games: the baselines' mean scores, measured at this
     * process's first arena (they do not change) and quoted beside the
     * model's after it. */
    bool baselines_scored;
    double baseline_mean[ZT_TRAIN_MAX_OPPONENTS];
};

static int64_t learner_step(const zt_scheduler *L)
{
    return zt_learner_get_counters(L->p.learner).step;
}

double zt_scheduler_started(const zt_scheduler *L)
{
    return L->t0;
}

double zt_scheduler_elapsed(const zt_scheduler *L)
{
    return L->elapsed0 + (zt_now_s() - L->t0);
}

bool zt_scheduler_perfect(const zt_scheduler *L)
{
    return L->perfect;
}

/* ---- metrics ---- */

static void metric(zt_scheduler *L, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void metric(zt_scheduler *L, const char *kind, const char *fmt, ...)
{
    if (!L->metrics) return;
    fprintf(
        L->metrics, "{\"t\":%.3f,\"step\":%lld,\"games\":%lld,\"positions\":%lld,\"kind\":\"%s\"",
        zt_scheduler_elapsed(L), (long long)learner_step(L),
        (long long)zt_runner_games(L->p.runner), (long long)zt_runner_positions(L->p.runner), kind);
    if (fmt && fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        fputc(',', L->metrics);
        vfprintf(L->metrics, fmt, ap);
        va_end(ap);
    }
    fputs("}\n", L->metrics);
    fflush(L->metrics);
}

void zt_scheduler_metric(zt_scheduler *L, const char *kind, const char *fmt, ...)
{
    if (!L->metrics) return;
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    metric(L, kind, "%s", body);
}

static totals current_totals(zt_scheduler *L)
{
    zt_actor_stats a = zt_runner_stats(L->p.runner);
    return (totals){.t = zt_scheduler_elapsed(L),
                    .games = zt_runner_games(L->p.runner),
                    .positions = zt_runner_positions(L->p.runner),
                    .step = learner_step(L),
                    .inferences = a.inferences,
                    .valued = a.positions_valued,
                    .hits = a.nncache_hits,
                    .moves = a.moves,
                    .waits = zt_runner_get_waits(L->p.runner),
                    .learner = zt_learner_get_times(L->p.learner),
                    .checkpoint_ns = L->checkpoint_ns,
                    .arena_ns = L->arena_ns};
}

/* actor_wait: the share of the actor threads' time the hold hook kept them
 * waiting for the learner; learner_wait: the share of the learner's spent
 * waiting for games. Concurrent runs; which one is near 0 says which side
 * limits the run. */
typedef struct rates {
    double gps, pps, ips, sps, hit_rate, actor_wait, learner_wait;
} rates;

static rates rates_between(const zt_scheduler *L, const totals *now, const totals *was)
{
    double dt = now->t - was->t;
    if (dt <= 0) dt = 1e-9;
    uint64_t dv = now->valued - was->valued;
    int actors = zt_runner_actors(L->p.runner);
    double held = (double)(now->waits.actors_ns - was->waits.actors_ns) * 1e-9;
    double waited = (double)(now->waits.learner_ns - was->waits.learner_ns) * 1e-9;
    return (rates){.gps = (double)(now->games - was->games) / dt,
                   .pps = (double)(now->moves - was->moves) / dt,
                   .ips = (double)(now->inferences - was->inferences) / dt,
                   .sps = (double)(now->step - was->step) / dt,
                   .hit_rate = dv ? (double)(now->hits - was->hits) / (double)dv : 0,
                   .actor_wait = actors > 0 ? fmin(1.0, held / (dt * actors)) : 0,
                   .learner_wait = fmin(1.0, waited / dt)};
}

/* The status and log line: rates since the last log line. */
static void format_line(zt_scheduler *L, const totals *now, char *line, size_t cap)
{
    rates r = rates_between(L, now, &L->last_log_totals);
    zt_train_losses l;
    zt_learner_mean_losses(L->p.learner, &l);
    zt_replay_stats rs = zt_replay_get_stats(L->p.rb);
    char waits[64] = "";
    if (L->S->mode == ZT_TRAIN_CONCURRENT)
        snprintf(waits, sizeof waits, " | waiting: actors %.0f%% learner %.0f%%",
                 100 * r.actor_wait, 100 * r.learner_wait);
    snprintf(line, cap,
             "step %lld  %.1f steps/s | games %lld  %.1f/s | positions %.0f/s | inferences %.0f/s "
             "(cache %.0f%%)%s | loss p %.3f v %.3f | replay %lld%s%s",
             (long long)now->step, r.sps, (long long)now->games, r.gps, r.pps, r.ips,
             100 * r.hit_rate, waits, l.policy, l.value, (long long)rs.positions,
             L->arena_summary[0] ? " | " : "", L->arena_summary);
}

/* A "learner_time" record: where the learner's thread spent the interval
 * since `was`, as shares of its wall time: training steps, getting batches
 * (waiting for the prefetching sampler), publications, checkpoints, arenas
 * and (concurrent runs) waiting for games; what is left is the loop's own
 * work and, in the other modes, self-play. */
static void write_learner_time(zt_scheduler *L, const totals *now, const totals *was)
{
    double dt = now->t - was->t;
    if (dt <= 0) return;
    double k = 1e-9 / dt;
    metric(L, "learner_time",
           "\"train_share\":%.4f,\"sample_share\":%.4f,\"publish_share\":%.4f,"
           "\"checkpoint_share\":%.4f,\"arena_share\":%.4f,\"wait_share\":%.4f",
           k * (double)(now->learner.train_ns - was->learner.train_ns),
           k * (double)(now->learner.sample_ns - was->learner.sample_ns),
           k * (double)(now->learner.publish_ns - was->learner.publish_ns),
           k * (double)(now->checkpoint_ns - was->checkpoint_ns),
           k * (double)(now->arena_ns - was->arena_ns),
           k * (double)(now->waits.learner_ns - was->waits.learner_ns));
}

/* A "train" record (the mean losses since the last one) and a "selfplay"
 * record (rates since the last one). */
static void write_metrics(zt_scheduler *L, const totals *now)
{
    rates r = rates_between(L, now, &L->last_metrics_totals);
    zt_train_losses l;
    if (zt_learner_mean_losses(L->p.learner, &l) > 0) {
        metric(L, "train",
               "\"loss_policy\":%.6f,\"loss_value\":%.6f,\"loss_reward\":%.6f,\"loss_l2\":%.6f,"
               "\"loss_total\":%.6f,\"lr\":%.6g,\"grad_norm\":%.5f",
               l.policy, l.value, l.reward, l.l2, l.total, l.lr, l.grad_norm);
        if (l.afterstate != 0 || l.chance != 0 || l.commitment != 0)
            metric(L, "train_chance",
                   "\"loss_afterstate\":%.6f,\"loss_chance\":%.6f,\"loss_commitment\":%.6f,"
                   "\"code_perplexity\":%.3f,\"loss_code_balance\":%.6f",
                   l.afterstate, l.chance, l.commitment, l.code_perplexity, l.code_balance);
        if (l.turn != 0) metric(L, "train_turn", "\"loss_turn\":%.6f", l.turn);
        if (l.consistency != 0)
            metric(L, "train_consistency", "\"loss_consistency\":%.6f", l.consistency);
        if (l.value0 != 0 || l.policy0 != 0)
            metric(L, "train_unroll",
                   "\"loss_policy0\":%.6f,\"loss_value0\":%.6f,\"loss_policy_unrolled\":%.6f,"
                   "\"loss_value_unrolled\":%.6f",
                   l.policy0, l.value0, l.policy - l.policy0, l.value - l.value0);
        zt_learner_reset_losses(L->p.learner);
    }
    zt_learner_int8_stats q;
    if (zt_learner_int8(L->p.learner, &q))
        metric(L, "int8",
               "\"int8_versions\":%llu,\"fallback_versions\":%llu,\"gate_runs\":%llu,"
               "\"last_passed\":%s,\"last_agreement\":%.5f,\"last_value_mae\":%.5f,"
               "\"last_ties\":%d,\"gate_positions\":%d,\"gate_seconds\":%.4f",
               (unsigned long long)q.int8_versions, (unsigned long long)q.fallbacks,
               (unsigned long long)q.gate_runs,
               q.last.passed ? "true" : "false", q.last.agreement, q.last.value_mae, q.last.ties,
               q.last.positions, q.last.seconds);
    zt_replay_stats rs = zt_replay_get_stats(L->p.rb);
    char waits[64] = ""; /* concurrent runs only: the other modes take turns */
    if (L->S->mode == ZT_TRAIN_CONCURRENT)
        snprintf(waits, sizeof waits, ",\"actor_wait\":%.4f,\"learner_wait\":%.4f", r.actor_wait,
                 r.learner_wait);
    metric(L, "selfplay",
           "\"games_per_s\":%.3f,\"positions_per_s\":%.2f,\"inferences_per_s\":%.1f,\"replay_"
           "positions\":%lld,"
           "\"replay_bytes_per_position\":%.2f,\"replay_surprise\":%.4f,\"nncache_hit_rate\":%.4f,"
           "\"steps_per_s\":%.3f%s",
           r.gps, r.pps, r.ips, (long long)rs.positions, rs.bytes_per_position, rs.surprise,
           r.hit_rate, r.sps, waits);
    if (L->S->actor.resign) {
        /* cumulative counts; the threshold in force, null while none is */
        zt_actor_stats a = zt_runner_stats(L->p.runner);
        float at = zt_runner_resign_threshold(L->p.runner);
        char thr[32] = "null";
        if (zt_runner_actors(L->p.runner) > 0 && at > ZT_RESIGN_NONE)
            snprintf(thr, sizeof thr, "%.4f", (double)at);
        metric(L, "resign",
               "\"resigned\":%llu,\"played_out_would_resign\":%llu,\"false_resignations\":%llu,"
               "\"threshold\":%s",
               (unsigned long long)a.resignations, (unsigned long long)a.playouts_would_resign,
               (unsigned long long)a.false_resignations, thr);
    }
    write_learner_time(L, now, &L->last_metrics_totals);
    L->last_metrics_totals = *now;
    L->last_metrics = zt_now_s();
}

/* A "replay_diversity" record and a log line, at each checkpoint and at the
 * end (it reads every position of the window: a fraction of a second for a
 * million). */
static zt_status write_diversity(zt_scheduler *L)
{
    zt_replay_diversity d;
    ZT_TRY(zt_replay_get_diversity(L->p.rb, &d));
    if (d.positions == 0) return ZT_OK;
    double pos_share = (double)d.distinct_positions / (double)d.positions;
    double game_share = (double)d.distinct_games / (double)d.games;
    /* two players: the window's games by their result */
    char results[160] = "";
    double n = (double)(d.outcomes[0] + d.outcomes[1] + d.outcomes[2]);
    if (n > 0)
        snprintf(results, sizeof results,
                 ",\"first_won_share\":%.4f,\"draw_share\":%.4f,\"second_won_share\":%.4f",
                 (double)d.outcomes[0] / n, (double)d.outcomes[1] / n, (double)d.outcomes[2] / n);
    metric(L, "replay_diversity",
           "\"window\":%lld,\"distinct_positions\":%lld,\"window_games\":%lld,"
           "\"distinct_games\":%lld,\"distinct_position_share\":%.4f,"
           "\"distinct_game_share\":%.4f%s",
           (long long)d.positions, (long long)d.distinct_positions, (long long)d.games,
           (long long)d.distinct_games, pos_share, game_share, results);
    char text[ZT_REPLAY_DIVERSITY_TEXT];
    zt_replay_diversity_format(&d, text, sizeof text);
    zt_info("replay window: %s", text);
    return ZT_OK;
}

/* The resignation threshold in force, in words (the local actors'; an MPI
 * learner rank has none of its own). */
static void resign_threshold_text(zt_scheduler *L, char *out, size_t cap)
{
    const zt_actor_config *A = &L->S->actor;
    float at = zt_runner_resign_threshold(L->p.runner);
    if (zt_runner_actors(L->p.runner) == 0)
        snprintf(out, cap, "threshold %s", A->resign_false_rate > 0 ? "calibrated by the actor ranks" : "fixed");
    else if (A->resign_false_rate == 0)
        snprintf(out, cap, "threshold %.3f", (double)at);
    else if (at <= ZT_RESIGN_NONE)
        snprintf(out, cap, "no threshold yet keeps false resignations at %g %% or under",
                 100 * A->resign_false_rate);
    else
        snprintf(out, cap, "threshold %.3f (calibrated: at most %g %% false)", (double)at,
                 100 * A->resign_false_rate);
}

/* The plain log line (where no status line shows it) and the notes that go
 * with it. */
static void log_line(zt_scheduler *L, const char *line)
{
    if (!zt_progress_enabled() || L->p.quiet) zt_info("%s", line);
    zt_replay_stats rs = zt_replay_get_stats(L->p.rb);
    if (!L->replay_figure_logged && rs.positions > 0) {
        zt_info("replay: %.1f bytes/position stored, %.0f as float32 planes + dense policy (%.2f "
                "%% less)",
                rs.bytes_per_position, rs.dense_bytes_per_position, 100 * rs.saving);
        L->replay_figure_logged = true;
    }
    zt_actor_stats a = zt_runner_stats(L->p.runner);
    if (L->S->actor.resign) {
        char at[96];
        resign_threshold_text(L, at, sizeof at);
        zt_info("resignation: %s; %llu resigned, false resignations %llu of %llu played out", at,
                (unsigned long long)a.resignations, (unsigned long long)a.false_resignations,
                (unsigned long long)a.playouts_would_resign);
    }
    if (a.games_abandoned > 0)
        zt_info("%llu games abandoned unfinished at %d plies (not learned from)",
                (unsigned long long)a.games_abandoned, L->p.game->max_game_length);
}

void zt_scheduler_final_report(zt_scheduler *L)
{
    totals now = current_totals(L);
    char line[512];
    format_line(L, &now, line, sizeof line);
    write_metrics(L, &now);
    log_line(L, line);
    L->last_log_totals = now;
    /* the window the run ends with, as each checkpoint's */
    if (write_diversity(L) != ZT_OK) zt_warn("replay window: %s", zt_error_message());
}

/* ---- the arena ---- */

static void copy_net(zt_net *dst, const zt_net *src)
{
    int n = zt_net_tensor_count(src);
    for (int i = 0; i < n; i++) {
        zt_net_tensor d = zt_net_tensor_at(dst, i), s = zt_net_tensor_at(src, i);
        ZT_ASSERT(d.count == s.count);
        memcpy(d.data, s.data, s.count * sizeof(float));
    }
    zt_net_params_changed(dst);
}

/* Appends to the arena summary; text beyond cap is cut, and *used never
 * passes cap - 1, so later parts are dropped rather than overrun. */
static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (n > 0) *used = *used + (size_t)n < cap ? *used + (size_t)n : cap - 1;
}

/* A one-player game's arena: the model's mean score over arena.games games
 * (a "score" metric with player "model"), and once per process each of
 * arena.opponents' on the same games' seeds (a "score" metric each). */
static zt_status score_arena(zt_scheduler *L, zt_agent *agent, int64_t step, char *summary,
                             size_t cap, size_t *used)
{
    const zt_train_settings *S = L->S;
    const zt_game *game = L->p.game;
    zt_score_config sc = {.games = S->arena_games, .seed = S->seed ^ (uint64_t)step};
    zt_score_result r;
    ZT_TRY(zt_arena_score(game, agent, &sc, &r));
    int top = r.num_levels ? r.level_value[r.num_levels - 1] : 0;
    metric(L, "score",
           "\"player\":\"model\",\"arena_games\":%d,\"mean\":%.2f,\"ci95\":%.2f,"
           "\"mean_lo\":%.2f,\"mean_hi\":%.2f,\"max\":%.0f,\"top_level\":%d",
           r.games, r.mean, r.ci95, r.mean - r.ci95, r.mean + r.ci95, r.max, top);
    append(summary, cap, used, "%sscore %.0f +- %.0f", *used ? ", " : "", r.mean, r.ci95);
    for (int i = 0; i < S->arena_num_opponents; i++) {
        const char *spec = S->arena_opponents[i];
        if (!L->baselines_scored) {
            zt_player *p;
            ZT_TRY(zt_player_new(game, spec, &p));
            zt_agent *baseline = zt_agent_from_player(p, true);
            zt_score_config bc = {.games = S->arena_games, .seed = S->seed};
            zt_score_result br;
            zt_status st = zt_arena_score(game, baseline, &bc, &br);
            zt_agent_free(baseline);
            ZT_TRY(st);
            L->baseline_mean[i] = br.mean;
            metric(L, "score",
                   "\"player\":\"%s\",\"arena_games\":%d,\"mean\":%.2f,\"ci95\":%.2f,"
                   "\"mean_lo\":%.2f,\"mean_hi\":%.2f,\"max\":%.0f",
                   spec, br.games, br.mean, br.ci95, br.mean - br.ci95, br.mean + br.ci95, br.max);
        }
        append(summary, cap, used, "%s%s %.0f", i ? ", " : " (", spec, L->baseline_mean[i]);
        if (i + 1 == S->arena_num_opponents) append(summary, cap, used, ")");
    }
    L->baselines_scored = true;
    return ZT_OK;
}

enum { ARENA_INT8_CALIBRATION = 256 };

/* int8 actors: the arena plays in the precision of the last version
 * published (int8 when it passed the gate), its ranges calibrated on
 * random-play positions (the learner's replay positions belong to its
 * thread). */
static zt_status arena_precision(zt_scheduler *L)
{
    zt_learner_int8_stats q;
    if (!zt_learner_int8(L->p.learner, &q)) return ZT_OK;
    if (!q.last.passed) return zt_net_set_precision(L->eval_net, L->S->precision);
    ZT_TRY(zt_net_set_precision(L->eval_net, ZT_PRECISION_INT8));
    const int *sh = L->p.game->obs_shape;
    if (!L->int8_obs) {
        L->int8_obs = zt_xmalloc((size_t)ARENA_INT8_CALIBRATION * sh[0] * sh[1] * sh[2] *
                                 sizeof(float));
        zt_rng rng;
        zt_rng_seed(&rng, L->S->seed, 0x6172656eULL);
        zt_game_sample_observations(L->p.game, &rng, ARENA_INT8_CALIBRATION, L->int8_obs, NULL);
    }
    return zt_net_calibrate(L->eval_net, ARENA_INT8_CALIBRATION, L->int8_obs);
}

static double mean_or_0(double sum, int n)
{
    return n > 0 ? sum / n : 0.0;
}

/* The scheduled arena: arena.games games against each of arena.opponents
 * (one "arena" metric each), then the game's solver position sets; in a
 * one-player game the mean scores instead (score_arena). */
static zt_status run_arena(zt_scheduler *L)
{
    const zt_train_settings *S = L->S;
    const zt_game *game = L->p.game;
    int64_t step = learner_step(L);
    /* the run's model: learner.average's average, else the learner's net */
    if (zt_learner_average(L->p.learner))
        zt_net_flat_set(L->eval_net, zt_learner_average(L->p.learner));
    else
        copy_net(L->eval_net, zt_learner_net(L->p.learner));
    ZT_TRY(arena_precision(L));
    if (L->eval_cache) zt_nncache_clear(L->eval_cache);
    zt_evaluator ev = zt_net_evaluator_get(L->eval);
    zt_agent *agent;
    if (S->arena_sims == 0) {
        /* no search: each turn's best end by the net's value */
        ZT_TRY(zt_agent_greedy_new(game, &ev, ARENA_MAX_GAMES, 0, &agent));
    } else {
        zt_search_config sc = zt_train_arena_search(S, game);
        ZT_TRY(zt_agent_search_new(game, &ev, &sc, ARENA_MAX_GAMES, L->eval_cache, &agent));
    }
    double t0 = zt_now_s();
    zt_status st = ZT_OK;
    char summary[sizeof L->arena_summary] = "";
    size_t used = 0;
    bool one_player = zt_game_num_players(game) == 1;
    if (one_player && S->arena_games > 0)
        st = score_arena(L, agent, step, summary, sizeof summary, &used);
    for (int i = 0; i < S->arena_num_opponents && S->arena_games > 0 && st == ZT_OK && !one_player;
         i++) {
        const char *spec = S->arena_opponents[i];
        zt_player *p;
        st = zt_player_new(game, spec, &p);
        if (st != ZT_OK) break;
        zt_agent *opponent = zt_agent_from_player(p, true);
        /* The seed depends on the run's seed and the step alone, so any
         * match can be replayed from the checkpoint of its step. */
        zt_match_config mc = {.games = S->arena_games,
                              .concurrency = 0,
                              .seed = S->seed ^ (uint64_t)step,
                              .duplicate = S->arena_duplicate && game->max_chance_outcomes > 0};
        zt_match_result r;
        st = zt_arena_match(game, agent, opponent, &mc, &r);
        /* A failing gnubg shows to the arena as an illegal move: say why. */
        if (st != ZT_OK && strncmp(spec, "gnubg", 5) == 0 && zt_gnubg_error(p)[0])
            st = zt_fail(st, "arena: %s", zt_gnubg_error(p));
        zt_agent_free(opponent);
        if (st != ZT_OK) break;
        /* Points per game where a game can be worth more than one point
         * (backgammon), with the dice duplicated or not. */
        if (game->max_return > 1) {
            metric(L, "arena",
                   "\"opponent\":\"%s\",\"arena_games\":%d,\"wins\":%d,\"draws\":%d,"
                   "\"losses\":%d,\"score\":%.4f,\"elo\":%.1f,\"elo_lo\":%.1f,\"elo_hi\":%.1f,"
                   "\"points\":%.4f,\"points_lo\":%.4f,\"points_hi\":%.4f,\"duplicate\":%s",
                   spec, r.games, r.wins, r.draws, r.losses, r.elo.score, r.elo.elo, r.elo.lo,
                   r.elo.hi, r.points.mean, r.points.lo, r.points.hi,
                   r.duplicate ? "true" : "false");
            append(summary, sizeof summary, &used, "%s%s %d-%d-%d %+.2f ppg", used ? ", " : "",
                   spec, r.wins, r.draws, r.losses, r.points.mean);
        } else {
            metric(L, "arena",
                   "\"opponent\":\"%s\",\"arena_games\":%d,\"wins\":%d,\"draws\":%d,"
                   "\"losses\":%d,\"score\":%.4f,\"elo\":%.1f,\"elo_lo\":%.1f,\"elo_hi\":%.1f",
                   spec, r.games, r.wins, r.draws, r.losses, r.elo.score, r.elo.elo, r.elo.lo,
                   r.elo.hi);
            append(summary, sizeof summary, &used, "%s%s %d-%d-%d", used ? ", " : "", spec,
                   r.wins, r.draws, r.losses);
        }
    }
    const zt_position_set *sets = NULL;
    int nsets = S->arena_positions ? zt_game_position_sets(game, &sets) : 0;
    bool all_perfect = nsets > 0;
    for (int i = 0; i < nsets && st == ZT_OK; i++) {
        char path[PATH_MAX + 64];
        if (!zt_data_find(S->data_dir, sets[i].file, path, sizeof path)) {
            zt_warn("arena: %s not found (set arena.data_dir or ZT_DATA_DIR); skipped", sets[i].file);
            all_perfect = false;
            continue;
        }
        zt_positions_result pr;
        zt_positions_config pc = {
            .path = path, .limit = S->arena_positions_limit, .seed = S->seed, .value_ev = &ev};
        st = zt_arena_positions_run(game, agent, &pc, &pr);
        if (st != ZT_OK) break;
        const char *slash = strrchr(sets[i].file, '/');
        const char *set = slash ? slash + 1 : sets[i].file;
        char setname[64];
        snprintf(setname, sizeof setname, "%s", set);
        char *dot = strrchr(setname, '.');
        if (dot) *dot = '\0';
        int n = pr.report_mistakes ? pr.mistakes : pr.optimal;
        /* the net's own values by the exact ones: won, drawn, lost */
        double rmse = zt_positions_net_totals(&pr, NULL, NULL);
        metric(L, "positions",
               "\"set\":\"%s\",\"metric\":\"%s\",\"n\":%d,\"m\":%d,\"rate\":%.5f,"
               "\"value_m\":[%d,%d,%d],\"value_wrong\":[%d,%d,%d],"
               "\"value_mean\":[%.4f,%.4f,%.4f],\"value_rmse\":%.4f",
               setname, pr.report_mistakes ? "mistakes" : "optimal", n, pr.positions,
               pr.positions ? (double)n / pr.positions : 0.0, pr.net_positions[0],
               pr.net_positions[1], pr.net_positions[2], pr.net_wrong[0], pr.net_wrong[1],
               pr.net_wrong[2], mean_or_0(pr.net_sum[0], pr.net_positions[0]),
               mean_or_0(pr.net_sum[1], pr.net_positions[1]),
               mean_or_0(pr.net_sum[2], pr.net_positions[2]), rmse);
        append(summary, sizeof summary, &used, "%s%s %s %d/%d", used ? ", " : "", setname,
               pr.report_mistakes ? "mistakes" : "optimal", n, pr.positions);
        if (pr.mistakes > 0) all_perfect = false;
    }
    zt_agent_free(agent);
    if (st != ZT_OK) return st;
    snprintf(L->arena_summary, sizeof L->arena_summary, "%s", summary);
    L->arena_step = step;
    if (all_perfect) L->perfect = true;
    zt_info("arena at step %lld (%.1f s): %s", (long long)step, zt_now_s() - t0, summary);
    return ZT_OK;
}

/* Opponents or position sets to play: the arena at the start and the end
 * runs only then (the timed one runs regardless, as it always has). */
static bool arena_configured(const zt_scheduler *L)
{
    return (L->S->arena_games > 0 && L->S->arena_num_opponents > 0) || L->S->arena_positions;
}

zt_status zt_scheduler_arena_at_start(zt_scheduler *L)
{
    if (!arena_configured(L) || learner_step(L) != 0 || L->arena_step >= 0) return ZT_OK;
    ZT_TRY(run_arena(L));
    L->last_arena = zt_now_s();
    return ZT_OK;
}

zt_status zt_scheduler_arena_at_end(zt_scheduler *L)
{
    int64_t step = learner_step(L);
    if (!arena_configured(L) || step <= L->arena_step || step == 0) return ZT_OK;
    return run_arena(L);
}

/* ---- the timers ---- */

zt_status zt_scheduler_tick(zt_scheduler *L, bool boundary)
{
    const zt_train_settings *S = L->S;
    double now = zt_now_s();
    bool tty = zt_progress_enabled() && !L->p.quiet;
    bool early = now - L->t0 < EARLY_SECONDS;
    double metrics_every =
        early && S->log_seconds > EARLY_METRICS_SECONDS ? EARLY_METRICS_SECONDS : S->log_seconds;
    bool log_due = now - L->last_log >= S->log_seconds;
    bool metrics_due =
        log_due || now - L->last_metrics >= metrics_every ||
        (early && learner_step(L) - L->last_metrics_totals.step >= EARLY_METRICS_STEPS);
    bool status_due = tty && (log_due || now - L->last_status >= 0.5);
    if (metrics_due || status_due) {
        totals cur = current_totals(L);
        char line[512];
        /* before the metrics record resets the mean losses */
        format_line(L, &cur, line, sizeof line);
        if (status_due) {
            zt_progress("%s", line);
            L->last_status = now;
        }
        if (metrics_due) write_metrics(L, &cur);
        if (log_due) {
            log_line(L, line);
            L->last_log_totals = cur;
            L->last_log = now;
        }
    }
    if (!boundary) return ZT_OK;
    if (S->checkpoint_minutes > 0 && now - L->last_ckpt >= S->checkpoint_minutes * 60) {
        uint64_t t0 = zt_now_ns();
        ZT_TRY(L->p.checkpoint(L->p.ctx));
        ZT_TRY(write_diversity(L));
        L->checkpoint_ns += zt_now_ns() - t0;
        L->last_ckpt = zt_now_s();
    }
    int64_t step = learner_step(L);
    if (S->arena_minutes > 0 && now - L->last_arena >= S->arena_minutes * 60 &&
        step > L->arena_step && step > 0) {
        uint64_t t0 = zt_now_ns();
        ZT_TRY(run_arena(L));
        L->arena_ns += zt_now_ns() - t0;
        L->last_arena = zt_now_s();
    }
    return ZT_OK;
}

/* ---- setup ---- */

/* The number after "\"KEY\":" in a metrics record; false if absent. */
static bool record_number(const char *line, const char *key, double *out)
{
    const char *p = strstr(line, key);
    if (!p) return false;
    char *end;
    *out = strtod(p + strlen(key), &end);
    return end != p + strlen(key);
}

/* metrics.jsonl without the records written after the checkpoint the run
 * resumes from (and without a last line cut short by a kill). */
static zt_status truncate_metrics(const char *path, int64_t step, double elapsed)
{
    char *text;
    size_t len;
    zt_status st = zt_read_file(path, &text, &len);
    if (st == ZT_ERR_NOT_FOUND) return ZT_OK;
    ZT_TRY(st);
    size_t kept = 0;
    int dropped = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
        char saved = line[n - (nl ? 1 : 0)];
        line[n - (nl ? 1 : 0)] = '\0';
        double t, s;
        /* times are printed to the millisecond */
        bool keep = nl && record_number(line, "\"t\":", &t) &&
                    record_number(line, "\"step\":", &s) && s <= (double)step &&
                    t <= elapsed + 0.001;
        line[n - (nl ? 1 : 0)] = saved;
        if (keep) {
            memmove(text + kept, line, n);
            kept += n;
        } else {
            dropped++;
        }
        line += n;
    }
    if (dropped > 0) {
        zt_warn("%s: dropped %d record(s) written after the checkpoint of step %lld", path, dropped,
                (long long)step);
        st = zt_write_file_atomic(path, text, kept);
    }
    free(text);
    return st;
}

zt_status zt_scheduler_new(const zt_scheduler_parts *parts, zt_scheduler **out)
{
    *out = NULL;
    zt_scheduler *L = zt_xcalloc(1, sizeof *L);
    L->p = *parts;
    L->S = parts->S;
    L->arena_step = -1;
    zt_status st =
        zt_net_new(&L->S->net, L->S->backend, L->S->precision, L->S->learner_threads, &L->eval_net);
    if (st == ZT_OK) st = zt_net_evaluator_new(L->eval_net, ARENA_MAX_GAMES, &L->eval);
    if (st == ZT_OK) L->eval_cache = zt_nncache_new(1 << 16, parts->game->num_actions);
    char path[PATH_MAX + 32];
    if (st == ZT_OK) {
        snprintf(path, sizeof path, "%s/log.txt", parts->run);
        st = zt_open_append(path, &L->logf);
    }
    if (st == ZT_OK) {
        zt_log_set_file(L->logf);
        snprintf(path, sizeof path, "%s/metrics.jsonl", parts->run);
        /* a resume continues from its checkpoint; a new run (in a
         * directory a killed attempt left without a checkpoint) from 0 */
        st = truncate_metrics(path, learner_step(L), parts->elapsed0);
        if (st == ZT_OK) st = zt_open_append(path, &L->metrics);
    }
    if (st != ZT_OK) {
        zt_scheduler_free(L);
        return st;
    }
    L->t0 = zt_now_s();
    L->elapsed0 = parts->elapsed0;
    L->last_log = L->last_metrics = L->last_status = L->last_ckpt = L->last_arena = L->t0;
    L->last_log_totals = L->last_metrics_totals = current_totals(L);
    *out = L;
    return ZT_OK;
}

void zt_scheduler_free(zt_scheduler *L)
{
    if (!L) return;
    zt_nncache_free(L->eval_cache);
    zt_net_evaluator_free(L->eval);
    zt_net_free(L->eval_net);
    free(L->int8_obs);
    if (L->logf) {
        zt_log_set_file(NULL);
        fclose(L->logf);
    }
    if (L->metrics) fclose(L->metrics);
    free(L);
}
