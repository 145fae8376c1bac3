/* The training loop: see train.h for the modes. This file holds the run
 * directory, weight publication, the learner step, the two schedules
 * (concurrent and alternate) and the periodic work (metrics, status line,
 * checkpoints, arena). */
#include "train/train.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/player.h"
#include "arena/arena.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/thread.h"
#include "core/timer.h"
#include "search/nncache.h"

static atomic_int stop_requested;

void zt_train_request_stop(void)
{
    atomic_store(&stop_requested, 1);
}

#define ARENA_MAX_GAMES 64

typedef struct loop loop;

typedef struct actor_thread {
    loop *L;
    zt_actor *actor;
    pthread_t thread;
    bool started;
    uint64_t version;      /* weights the actor holds */
    zt_actor_stats stats;  /* snapshot after its last step, under L->mu */
} actor_thread;

/* Totals of what the status line and metrics report, and where the last
 * report left them (rates are differences over the interval). */
typedef struct totals {
    double t;
    int64_t games, positions, step;
    uint64_t inferences, valued, hits, moves;
} totals;

struct loop {
    const zt_train_options *opt;
    zt_train_settings S;
    zt_game *game;
    char spec[128];
    char run[PATH_MAX];
    FILE *metrics, *logf;
    zt_net *net;
    zt_trainer *trainer;
    zt_replay *rb;
    zt_traj_sink sink; /* into rb */
    actor_thread *actors;
    int nactors;
    zt_train_state st;
    double t0;       /* zt_now_s() when this invocation started */
    double elapsed0; /* st.elapsed then */

    /* publication: the learner's tensors copied out, with a version */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    float *published;
    size_t published_floats;
    atomic_ullong version;
    atomic_bool stop_actors;
    atomic_llong positions; /* positions ever added to the buffer */
    atomic_llong games;
    atomic_llong trained; /* st.samples_trained, for the actor threads */
    zt_status actor_error;
    char actor_message[256];

    /* learner */
    zt_replay_sampler *sampler;
    zt_replay_batch sync_batch;
    float *value_target;
    zt_train_losses loss_sum;
    int loss_count;
    zt_train_losses last_loss;

    /* periodic work */
    totals last_report;
    double last_log, last_status, last_ckpt, last_arena;
    int64_t arena_step; /* the step of the last arena (-1: none) */
    char arena_summary[256]; /* the status line's arena part */
    bool perfect;
    bool replay_figure_logged;
    zt_net *eval_net;
    zt_nncache *eval_cache;
};

static double now_elapsed(const loop *L)
{
    return L->elapsed0 + (zt_now_s() - L->t0);
}

/* ---- weights ---- */

static void copy_tensors_out(const zt_net *net, float *dst)
{
    int n = zt_net_tensor_count(net);
    for (int i = 0; i < n; i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        memcpy(dst, t.data, t.count * sizeof(float));
        dst += t.count;
    }
}

static void copy_tensors_in(zt_net *net, const float *src)
{
    int n = zt_net_tensor_count(net);
    for (int i = 0; i < n; i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        memcpy(t.data, src, t.count * sizeof(float));
        src += t.count;
    }
    zt_net_params_changed(net);
}

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

static void publish(loop *L)
{
    pthread_mutex_lock(&L->mu);
    copy_tensors_out(L->net, L->published);
    atomic_fetch_add(&L->version, 1);
    pthread_mutex_unlock(&L->mu);
    L->st.published++;
}

/* Gives an actor the newest published weights if it holds older ones. */
static zt_status pull_weights(loop *L, actor_thread *T)
{
    if (atomic_load(&L->version) == T->version) return ZT_OK;
    pthread_mutex_lock(&L->mu);
    copy_tensors_in(zt_actor_net(T->actor), L->published);
    T->version = atomic_load(&L->version);
    pthread_mutex_unlock(&L->mu);
    return zt_actor_weights_changed(T->actor);
}

/* ---- metrics ---- */

static void metric(loop *L, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void metric(loop *L, const char *kind, const char *fmt, ...)
{
    if (!L->metrics) return;
    fprintf(L->metrics, "{\"t\":%.3f,\"step\":%lld,\"games\":%lld,\"positions\":%lld,\"kind\":\"%s\"",
            now_elapsed(L), (long long)L->st.step, (long long)atomic_load(&L->games),
            (long long)atomic_load(&L->positions), kind);
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

static zt_actor_stats actor_totals(loop *L)
{
    zt_actor_stats sum = {0};
    pthread_mutex_lock(&L->mu);
    for (int i = 0; i < L->nactors; i++) {
        const zt_actor_stats *s = &L->actors[i].stats;
        sum.moves += s->moves;
        sum.full_searches += s->full_searches;
        sum.games += s->games;
        sum.games_abandoned += s->games_abandoned;
        sum.inferences += s->inferences;
        sum.positions_valued += s->positions_valued;
        sum.nncache_hits += s->nncache_hits;
        sum.resignations += s->resignations;
        sum.playouts_would_resign += s->playouts_would_resign;
        sum.false_resignations += s->false_resignations;
    }
    pthread_mutex_unlock(&L->mu);
    return sum;
}

/* ---- the arena ---- */

static void eval_arena_net(void *ctx, int B, const float *obs, float *logits, float *value)
{
    loop *L = ctx;
    if (zt_net_value_size(&L->S.net) == 1) {
        zt_status st = zt_net_forward(L->eval_net, B, obs, logits, value);
        ZT_ASSERT(st == ZT_OK);
        return;
    }
    float *wdl = zt_xmalloc((size_t)B * 3 * sizeof *wdl);
    zt_status st = zt_net_forward(L->eval_net, B, obs, logits, wdl);
    ZT_ASSERT(st == ZT_OK);
    for (int i = 0; i < B; i++) {
        const float *w = wdl + (size_t)i * 3;
        float m = fmaxf(w[0], fmaxf(w[1], w[2]));
        float ew = expf(w[0] - m), ed = expf(w[1] - m), el = expf(w[2] - m);
        value[i] = (ew - el) / (ew + ed + el);
    }
    free(wdl);
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The shared reference data: arena.data_dir, $ZT_DATA_DIR, ../shared/data,
 * tests/data, then beside the executable (build/ in a checkout). */
static bool find_data(const loop *L, const char *rel, char *out, size_t cap)
{
    char exe[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
    }
    const char *env = getenv("ZT_DATA_DIR");
    char beside1[PATH_MAX + 32], beside2[PATH_MAX + 32];
    snprintf(beside1, sizeof beside1, "%s/../tests/data", exe);
    snprintf(beside2, sizeof beside2, "%s/../../shared/data", exe);
    const char *dirs[] = {L->S.data_dir, env, "../shared/data", "tests/data", beside1, beside2};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i] || !dirs[i][0]) continue;
        snprintf(out, cap, "%s/%s", dirs[i], rel);
        if (file_exists(out)) return true;
    }
    return false;
}

/* The solver position sets of the game (relative to the data directory). */
static int position_sets(const loop *L, const char **sets)
{
    const char *name = L->game->name;
    if (strcmp(name, "tictactoe") == 0) {
        sets[0] = "tictactoe/ttt_positions.txt";
        return 1;
    }
    if (strcmp(name, "connect4") == 0) {
        sets[0] = "connect4/Test_L2_R1";
        sets[1] = "connect4/Test_L3_R1";
        return 2;
    }
    if (strcmp(L->spec, "sim vertices=6 k=3 variant=avoid") == 0) {
        sets[0] = "sim/sim_k6_positions.txt";
        return 1;
    }
    return 0;
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

/* The scheduled arena: arena.games games against each of arena.opponents
 * (one "arena" metric each), then the game's solver position sets. */
static zt_status run_arena(loop *L)
{
    const zt_train_settings *S = &L->S;
    copy_net(L->eval_net, L->net);
    if (L->eval_cache) zt_nncache_clear(L->eval_cache);
    zt_evaluator ev = {.ctx = L, .eval = eval_arena_net};
    zt_search_config sc = S->actor.search;
    sc.num_simulations = S->arena_sims;
    sc.gumbel_noise = false;
    sc.dirichlet_fraction = 0;
    sc.node_capacity = 0;
    sc.edge_capacity = 0;
    {
        /* the tree capacity of one search of arena_sims */
        int branching = L->game->num_actions < 32 ? L->game->num_actions : 32;
        if (L->game->max_chance_outcomes > branching) branching = L->game->max_chance_outcomes;
        sc.node_capacity = 2 * (sc.num_simulations + 1) + 64;
        sc.edge_capacity = sc.node_capacity * branching;
        if (sc.edge_capacity < L->game->num_actions) sc.edge_capacity = L->game->num_actions;
    }
    zt_agent *agent;
    ZT_TRY(zt_agent_search_new(L->game, &ev, &sc, ARENA_MAX_GAMES, L->eval_cache, &agent));
    double t0 = zt_now_s();
    zt_status st = ZT_OK;
    char summary[sizeof L->arena_summary] = "";
    size_t used = 0;
    for (int i = 0; i < S->arena_num_opponents && S->arena_games > 0 && st == ZT_OK; i++) {
        const char *spec = S->arena_opponents[i];
        zt_player *p;
        st = zt_player_new(L->game, spec, &p);
        if (st != ZT_OK) break;
        zt_agent *opponent = zt_agent_from_player(p, true);
        /* The seed depends on the run's seed and the step alone, so any
         * match can be replayed from the checkpoint of its step. */
        zt_match_config mc = {.games = S->arena_games, .concurrency = 0,
                              .seed = S->seed ^ (uint64_t)L->st.step};
        zt_match_result r;
        st = zt_arena_match(L->game, agent, opponent, &mc, &r);
        zt_agent_free(opponent);
        if (st != ZT_OK) break;
        metric(L, "arena",
               "\"opponent\":\"%s\",\"games\":%d,\"wins\":%d,\"draws\":%d,\"losses\":%d,"
               "\"score\":%.4f,\"elo\":%.1f,\"elo_lo\":%.1f,\"elo_hi\":%.1f",
               spec, r.games, r.wins, r.draws, r.losses, r.elo.score, r.elo.elo, r.elo.lo,
               r.elo.hi);
        append(summary, sizeof summary, &used, "%s%s %d-%d-%d", used ? ", " : "", spec, r.wins,
               r.draws, r.losses);
    }
    const char *sets[4];
    int nsets = S->arena_positions ? position_sets(L, sets) : 0;
    bool all_perfect = nsets > 0;
    for (int i = 0; i < nsets && st == ZT_OK; i++) {
        char path[PATH_MAX + 64];
        if (!find_data(L, sets[i], path, sizeof path)) {
            zt_warn("arena: %s not found (set arena.data_dir or ZT_DATA_DIR); skipped", sets[i]);
            all_perfect = false;
            continue;
        }
        zt_positions_result pr;
        st = zt_arena_positions(L->game, agent, path, S->arena_positions_limit, S->seed, &pr);
        if (st != ZT_OK) break;
        const char *set = strrchr(sets[i], '/') + 1;
        char setname[64];
        snprintf(setname, sizeof setname, "%s", set);
        char *dot = strrchr(setname, '.');
        if (dot) *dot = '\0';
        int n = pr.report_mistakes ? pr.mistakes : pr.optimal;
        metric(L, "positions", "\"set\":\"%s\",\"metric\":\"%s\",\"n\":%d,\"m\":%d,\"rate\":%.5f", setname,
               pr.report_mistakes ? "mistakes" : "optimal", n, pr.positions,
               pr.positions ? (double)n / pr.positions : 0.0);
        append(summary, sizeof summary, &used, "%s%s %s %d/%d", used ? ", " : "", setname,
               pr.report_mistakes ? "mistakes" : "optimal", n, pr.positions);
        if (pr.mistakes > 0) all_perfect = false;
    }
    zt_agent_free(agent);
    if (st != ZT_OK) return st;
    snprintf(L->arena_summary, sizeof L->arena_summary, "%s", summary);
    L->arena_step = L->st.step;
    if (all_perfect) L->perfect = true;
    zt_info("arena at step %lld (%.1f s): %s", (long long)L->st.step, zt_now_s() - t0, summary);
    return ZT_OK;
}

/* ---- checkpoints ---- */

static zt_status read_latest(const char *run, char *name, size_t cap)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ckpt/latest", run);
    char *text;
    size_t len;
    ZT_TRY(zt_read_file(path, &text, &len));
    size_t n = strcspn(text, "\r\n");
    bool ok = n > 0 && n < cap && strspn(text, "0123456789") == n;
    if (ok) {
        memcpy(name, text, n);
        name[n] = '\0';
    }
    free(text);
    if (!ok) return zt_fail(ZT_ERR_CORRUPT, "%s: not a checkpoint name", path);
    return ZT_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX + 300];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* Keeps the newest `keep` checkpoint directories (and always `latest`). */
static void prune_checkpoints(loop *L, const char *latest)
{
    if (L->S.keep_checkpoints <= 0) return;
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/ckpt", L->run);
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (strlen(e->d_name) == 8 && strspn(e->d_name, "0123456789") == 8) names[n++] = zt_xstrdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n; i++) {
        if (i < n - L->S.keep_checkpoints && strcmp(names[i], latest) != 0) {
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            remove_tree(path);
        }
        free(names[i]);
    }
}

/* ckpt/NNNNNNNN/{weights,optimizer}.safetensors, replay.bin, state.bin, each
 * written atomically (fsync'ed), then ckpt/latest names it. */
static zt_status write_checkpoint(loop *L)
{
    double t0 = zt_now_s();
    char name[16], dir[PATH_MAX + 32], path[PATH_MAX + 64];
    snprintf(name, sizeof name, "%08lld", (long long)L->st.step);
    snprintf(dir, sizeof dir, "%s/ckpt/%s", L->run, name);
    ZT_TRY(zt_mkdirs(dir));
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    ZT_TRY(zt_net_save(L->net, L->spec, path));
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    ZT_TRY(zt_trainer_save(L->trainer, path));
    snprintf(path, sizeof path, "%s/replay.bin", dir);
    ZT_TRY(zt_replay_save(L->rb, path));
    L->st.elapsed = now_elapsed(L);
    snprintf(path, sizeof path, "%s/state.bin", dir);
    ZT_TRY(zt_train_state_save(&L->st, path));
    char line[24];
    int len = snprintf(line, sizeof line, "%s\n", name);
    snprintf(path, sizeof path, "%s/ckpt/latest", L->run);
    ZT_TRY(zt_write_file_atomic(path, line, (size_t)len));
    prune_checkpoints(L, name);
    L->last_ckpt = zt_now_s();
    zt_info("checkpoint %s (%.2f s)", dir, zt_now_s() - t0);
    return ZT_OK;
}

static zt_status load_checkpoint(loop *L)
{
    char name[64], dir[PATH_MAX + 80], path[PATH_MAX + 128];
    ZT_TRY(read_latest(L->run, name, sizeof name));
    snprintf(dir, sizeof dir, "%s/ckpt/%s", L->run, name);
    snprintf(path, sizeof path, "%s/state.bin", dir);
    ZT_TRY(zt_train_state_load(path, &L->st));
    if (strcmp(L->st.game, L->spec) != 0)
        return zt_fail(ZT_ERR_INVALID, "%s: checkpoint of '%s', not '%s'", dir, L->st.game, L->spec);
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    ZT_TRY(zt_net_load(L->net, L->spec, path));
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    ZT_TRY(zt_trainer_load(L->trainer, path));
    snprintf(path, sizeof path, "%s/replay.bin", dir);
    zt_replay *rb;
    ZT_TRY(zt_replay_load(L->game, path, &rb));
    zt_replay_free(L->rb);
    L->rb = rb;
    if (zt_trainer_steps(L->trainer) != L->st.step)
        return zt_fail(ZT_ERR_CORRUPT, "%s: optimizer at step %ld, state at step %lld", dir,
                       zt_trainer_steps(L->trainer), (long long)L->st.step);
    zt_info("resumed %s at step %lld", dir, (long long)L->st.step);
    return ZT_OK;
}

/* ---- reports ---- */

static totals current_totals(loop *L)
{
    zt_actor_stats a = actor_totals(L);
    return (totals){.t = now_elapsed(L),
                    .games = atomic_load(&L->games),
                    .positions = atomic_load(&L->positions),
                    .step = L->st.step,
                    .inferences = a.inferences,
                    .valued = a.positions_valued,
                    .hits = a.nncache_hits,
                    .moves = a.moves};
}

static void report(loop *L, bool log_line, bool status_line)
{
    totals now = current_totals(L);
    const totals *was = &L->last_report;
    double dt = now.t - was->t;
    if (dt <= 0) dt = 1e-9;
    double gps = (double)(now.games - was->games) / dt;
    double pps = (double)(now.moves - was->moves) / dt;
    double ips = (double)(now.inferences - was->inferences) / dt;
    double sps = (double)(now.step - was->step) / dt;
    uint64_t dv = now.valued - was->valued;
    double hit_rate = dv ? (double)(now.hits - was->hits) / (double)dv : 0;
    zt_train_losses l = L->last_loss;
    if (L->loss_count > 0) {
        double k = 1.0 / L->loss_count;
        l = L->loss_sum;
        l.policy *= k, l.value *= k, l.l2 *= k, l.total *= k, l.grad_norm *= k;
        l.lr = L->last_loss.lr;
    }
    zt_replay_stats rs = zt_replay_get_stats(L->rb);
    char line[512];
    snprintf(line, sizeof line,
             "step %lld  %.1f steps/s | games %lld  %.1f/s | positions %.0f/s | inferences %.0f/s "
             "(cache %.0f%%) | loss p %.3f v %.3f | replay %lld%s%s",
             (long long)now.step, sps, (long long)now.games, gps, pps, ips, 100 * hit_rate, l.policy, l.value,
             (long long)rs.positions, L->arena_summary[0] ? " | " : "", L->arena_summary);
    if (status_line) zt_progress("%s", line);
    if (!log_line) return;
    if (!zt_progress_enabled() || L->opt->quiet) zt_info("%s", line);
    if (!L->replay_figure_logged && rs.positions > 0) {
        zt_info("replay: %.1f bytes/position stored, %.0f as float32 planes + dense policy (%.2f %% less)",
                rs.bytes_per_position, rs.dense_bytes_per_position, 100 * rs.saving);
        L->replay_figure_logged = true;
    }
    if (L->loss_count > 0) {
        metric(L, "train",
               "\"loss_policy\":%.6f,\"loss_value\":%.6f,\"loss_l2\":%.6f,\"loss_total\":%.6f,\"lr\":%.6g,"
               "\"grad_norm\":%.5f",
               l.policy, l.value, l.l2, l.total, l.lr, l.grad_norm);
        memset(&L->loss_sum, 0, sizeof L->loss_sum);
        L->loss_count = 0;
    }
    metric(L, "selfplay",
           "\"games_per_s\":%.3f,\"positions_per_s\":%.2f,\"inferences_per_s\":%.1f,\"replay_positions\":%lld,"
           "\"replay_bytes_per_position\":%.2f,\"nncache_hit_rate\":%.4f,\"steps_per_s\":%.3f",
           gps, pps, ips, (long long)rs.positions, rs.bytes_per_position, hit_rate, sps);
    zt_actor_stats a = actor_totals(L);
    if (L->S.actor.resign && a.playouts_would_resign > 0)
        zt_info("resignation: %llu resigned, false resignations %llu of %llu played out",
                (unsigned long long)a.resignations, (unsigned long long)a.false_resignations,
                (unsigned long long)a.playouts_would_resign);
    if (a.games_abandoned > 0)
        zt_info("%llu games abandoned unfinished at %d plies (not learned from)",
                (unsigned long long)a.games_abandoned, L->game->max_game_length);
    L->last_report = now;
}

static bool limits_reached(loop *L)
{
    if (atomic_load(&stop_requested)) return true;
    if (L->opt->steps > 0 && L->st.step >= L->opt->steps) return true;
    if (L->opt->minutes > 0 && zt_now_s() - L->t0 >= L->opt->minutes * 60) return true;
    if (L->S.arena_stop_on_perfect && L->perfect) return true;
    pthread_mutex_lock(&L->mu);
    bool failed = L->actor_error != ZT_OK;
    pthread_mutex_unlock(&L->mu);
    return failed;
}

/* Logs, metrics and the status line always; checkpoints and the arena only
 * where `boundary` says the state is consistent for them (alternate mode:
 * between phases). */
static zt_status periodic(loop *L, bool boundary)
{
    double now = zt_now_s();
    bool tty = zt_progress_enabled() && !L->opt->quiet;
    if (now - L->last_log >= L->S.log_seconds) {
        report(L, true, tty);
        L->last_log = now;
        L->last_status = now;
    } else if (tty && now - L->last_status >= 0.5) {
        report(L, false, true);
        L->last_status = now;
    }
    if (!boundary) return ZT_OK;
    if (L->S.checkpoint_minutes > 0 && now - L->last_ckpt >= L->S.checkpoint_minutes * 60)
        ZT_TRY(write_checkpoint(L));
    if (L->S.arena_minutes > 0 && now - L->last_arena >= L->S.arena_minutes * 60 &&
        L->st.step > L->arena_step && L->st.step > 0) {
        ZT_TRY(run_arena(L));
        L->last_arena = zt_now_s();
    }
    return ZT_OK;
}

/* ---- the learner ---- */

static zt_status start_sampler(loop *L)
{
    if (!L->S.prefetch || L->sampler) return ZT_OK;
    return zt_replay_sampler_new(L->rb, L->S.batch, L->S.net.value_kind == ZT_VALUE_WDL, &L->st.sample_rng,
                                 &L->sampler);
}

static void stop_sampler(loop *L)
{
    zt_replay_sampler_free(L->sampler);
    L->sampler = NULL;
}

static zt_status learner_step(loop *L)
{
    const zt_replay_batch *b;
    if (L->sampler) {
        ZT_TRY(zt_replay_sampler_next(L->sampler, &b));
        L->st.sample_rng = b->rng_after;
    } else {
        ZT_TRY(zt_replay_sample(L->rb, &L->st.sample_rng, &L->sync_batch));
        b = &L->sync_batch;
    }
    const float *vt = b->value;
    if (L->S.net.value_kind == ZT_VALUE_WDL) {
        vt = b->wdl;
    } else if (L->S.root_value_weight > 0) {
        /* A mix of outcome and search value (Wu 2019 and others): less
         * noisy than the outcome alone. */
        float w = (float)L->S.root_value_weight;
        for (int i = 0; i < b->size; i++) L->value_target[i] = (1 - w) * b->value[i] + w * b->root_value[i];
        vt = L->value_target;
    }
    zt_train_batch tb = {.B = b->size, .obs = b->obs, .policy_target = b->policy, .legal = b->legal,
                         .value_target = vt};
    zt_train_losses l;
    ZT_TRY(zt_trainer_step(L->trainer, &tb, &l));
    L->st.step++;
    L->st.samples_trained += b->size;
    atomic_store(&L->trained, L->st.samples_trained);
    L->last_loss = l;
    L->loss_sum.policy += l.policy;
    L->loss_sum.value += l.value;
    L->loss_sum.l2 += l.l2;
    L->loss_sum.total += l.total;
    L->loss_sum.grad_norm += l.grad_norm;
    L->loss_count++;
    if (!isfinite(l.total)) return zt_fail(ZT_ERR_INVALID, "training diverged at step %lld (loss %g)",
                                           (long long)L->st.step, l.total);
    return ZT_OK;
}

/* ---- concurrent mode ---- */

/* The actors may lead the learner by this many positions beyond the replay
 * ratio before they wait. */
static int64_t actor_lead(const loop *L)
{
    int64_t lead = (int64_t)(4.0 * L->S.batch / L->S.replay_ratio);
    int64_t per_round = 2 * (int64_t)L->S.actor.games * L->nactors;
    return lead > per_round ? lead : per_round;
}

static bool actors_ahead(loop *L)
{
    int64_t pos = atomic_load(&L->positions);
    if (pos < L->S.min_positions) return false;
    double allowed = (double)atomic_load(&L->trained) / L->S.replay_ratio;
    return (double)(pos - L->S.min_positions) > allowed + (double)actor_lead(L);
}

static bool learner_ahead(loop *L)
{
    int64_t pos = atomic_load(&L->positions);
    if (pos < L->S.min_positions) return true;
    return (double)(L->st.samples_trained + L->S.batch) > L->S.replay_ratio * (double)pos;
}

static void timed_wait(loop *L, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = (long)(seconds * 1e9);
    ts.tv_sec += (ts.tv_nsec + ns) / 1000000000L;
    ts.tv_nsec = (ts.tv_nsec + ns) % 1000000000L;
    pthread_cond_timedwait(&L->cv, &L->mu, &ts);
}

static void account_actor(loop *L, actor_thread *T)
{
    zt_actor_stats s = zt_actor_get_stats(T->actor);
    pthread_mutex_lock(&L->mu);
    atomic_fetch_add(&L->positions, (long long)(s.positions_added - T->stats.positions_added));
    atomic_fetch_add(&L->games, (long long)(s.games_added - T->stats.games_added));
    T->stats = s;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
}

static void *actor_main(void *arg)
{
    actor_thread *T = arg;
    loop *L = T->L;
    zt_status st = ZT_OK;
    while (!atomic_load(&L->stop_actors)) {
        /* the learner's weight statistics (samples_trained) are read
         * unlocked: a stale value only delays the wake-up by one wait */
        pthread_mutex_lock(&L->mu);
        while (!atomic_load(&L->stop_actors) && actors_ahead(L)) timed_wait(L, 0.05);
        pthread_mutex_unlock(&L->mu);
        if (atomic_load(&L->stop_actors)) break;
        st = pull_weights(L, T);
        if (st == ZT_OK) st = zt_actor_step(T->actor, &L->sink);
        if (st != ZT_OK) break;
        account_actor(L, T);
    }
    if (st != ZT_OK) {
        pthread_mutex_lock(&L->mu);
        if (L->actor_error == ZT_OK) {
            L->actor_error = st;
            snprintf(L->actor_message, sizeof L->actor_message, "%s", zt_error_message());
        }
        pthread_mutex_unlock(&L->mu);
    }
    return NULL;
}

static zt_status run_concurrent(loop *L)
{
    zt_status st = ZT_OK;
    for (int i = 0; i < L->nactors && st == ZT_OK; i++) {
        if (pthread_create(&L->actors[i].thread, NULL, actor_main, &L->actors[i]) != 0)
            st = zt_fail(ZT_ERR_UNSUPPORTED, "cannot start actor thread %d", i);
        else
            L->actors[i].started = true;
    }
    while (st == ZT_OK && !limits_reached(L)) {
        pthread_mutex_lock(&L->mu);
        bool wait = learner_ahead(L);
        if (wait) timed_wait(L, 0.05);
        pthread_mutex_unlock(&L->mu);
        if (!wait) {
            st = start_sampler(L);
            if (st == ZT_OK) st = learner_step(L);
            if (st == ZT_OK && L->st.step % L->S.publish_every == 0) publish(L);
        }
        if (st == ZT_OK) st = periodic(L, true);
    }
    /* the actors stop before the final checkpoint reads the buffer */
    atomic_store(&L->stop_actors, true);
    pthread_mutex_lock(&L->mu);
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    for (int i = 0; i < L->nactors; i++)
        if (L->actors[i].started) {
            pthread_join(L->actors[i].thread, NULL);
            L->actors[i].started = false;
        }
    stop_sampler(L);
    if (st == ZT_OK && L->actor_error != ZT_OK) st = zt_fail(L->actor_error, "actor: %s", L->actor_message);
    return st;
}

/* ---- alternate and deterministic modes ---- */

typedef struct generation_job {
    loop *L;
    zt_status status[256];
    char message[256][160];
} generation_job;

static zt_status play_generation(loop *L, actor_thread *T)
{
    while (!zt_actor_idle(T->actor)) {
        if (atomic_load(&stop_requested)) return ZT_OK;
        ZT_TRY(zt_actor_step(T->actor, NULL));
        if (L->nactors == 1) {
            account_actor(L, T);
            ZT_TRY(periodic(L, false));
        }
    }
    return ZT_OK;
}

static void generation_worker(void *arg, int ith, int nth)
{
    generation_job *job = arg;
    loop *L = job->L;
    for (int i = ith; i < L->nactors; i += nth) {
        zt_status st = play_generation(L, &L->actors[i]);
        job->status[i] = st;
        if (st != ZT_OK) snprintf(job->message[i], sizeof job->message[i], "%s", zt_error_message());
    }
}

static bool training_due(const loop *L)
{
    int64_t pos = atomic_load(&L->positions);
    if (pos < L->S.min_positions) return false;
    if (L->S.alternate_steps > 0) return L->st.phase_steps < L->S.alternate_steps;
    return (double)(L->st.samples_trained + L->S.batch) <= L->S.replay_ratio * (double)pos;
}

static zt_status run_alternate(loop *L)
{
    zt_pool *pool = L->nactors > 1 ? zt_pool_new(L->nactors) : NULL;
    generation_job *job = pool ? zt_xcalloc(1, sizeof *job) : NULL;
    zt_status st = ZT_OK;
    bool stopping = false;
    while (st == ZT_OK && !stopping) {
        /* training phase; a stop inside it leaves phase_steps in the
         * checkpoint so that a resumed run finishes the same phase */
        while (st == ZT_OK && training_due(L)) {
            if ((stopping = limits_reached(L))) break;
            st = start_sampler(L);
            if (st == ZT_OK) st = learner_step(L);
            if (st == ZT_OK) L->st.phase_steps++;
            if (st == ZT_OK) st = periodic(L, false);
        }
        stop_sampler(L);
        if (st != ZT_OK || stopping) break;
        if (L->st.phase_steps > 0) {
            publish(L);
            for (int i = 0; i < L->nactors && st == ZT_OK; i++) st = pull_weights(L, &L->actors[i]);
            L->st.phase_steps = 0;
        }
        if (st == ZT_OK) st = periodic(L, true);
        if (st != ZT_OK || (stopping = limits_reached(L))) break;
        /* self-play phase: one generation from every actor, appended in
         * actor order so that thread timing changes nothing */
        for (int i = 0; i < L->nactors && st == ZT_OK; i++)
            st = zt_actor_begin_generation(L->actors[i].actor, L->st.generation);
        if (st != ZT_OK) break;
        if (pool) {
            job->L = L;
            zt_pool_run(pool, generation_worker, job);
            for (int i = 0; i < L->nactors && st == ZT_OK; i++)
                if (job->status[i] != ZT_OK) st = zt_fail(job->status[i], "actor %d: %s", i, job->message[i]);
        } else {
            st = play_generation(L, &L->actors[0]);
        }
        if (st != ZT_OK || atomic_load(&stop_requested)) break; /* an unfinished generation is dropped */
        for (int i = 0; i < L->nactors && st == ZT_OK; i++) st = zt_actor_flush(L->actors[i].actor, &L->sink);
        for (int i = 0; i < L->nactors; i++) account_actor(L, &L->actors[i]);
        L->st.generation++;
        if (st == ZT_OK) st = periodic(L, false);
    }
    stop_sampler(L);
    zt_pool_free(pool);
    free(job);
    return st;
}

/* ---- setup ---- */

static zt_status open_run_dir(loop *L)
{
    const zt_train_options *opt = L->opt;
    if (opt->run_dir) {
        snprintf(L->run, sizeof L->run, "%s", opt->run_dir);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(L->run, sizeof L->run, "runs/%s-%s", L->game->name, stamp);
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ckpt/latest", L->run);
    bool has_run = file_exists(path);
    if (opt->resume && !has_run)
        return zt_fail(ZT_ERR_NOT_FOUND, "%s: no checkpoint to resume (ckpt/latest missing)", L->run);
    if (!opt->resume && has_run)
        return zt_fail(ZT_ERR_INVALID, "%s already holds a run (continue it with --resume %s)", L->run, L->run);
    snprintf(path, sizeof path, "%s/ckpt", L->run);
    ZT_TRY(zt_mkdirs(path));
    return ZT_OK;
}

static zt_status open_logs(loop *L)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/log.txt", L->run);
    L->logf = fopen(path, "a");
    if (!L->logf) return zt_fail(ZT_ERR_IO, "%s: %s", path, strerror(errno));
    zt_log_set_file(L->logf);
    snprintf(path, sizeof path, "%s/metrics.jsonl", L->run);
    L->metrics = fopen(path, "a");
    if (!L->metrics) return zt_fail(ZT_ERR_IO, "%s: %s", path, strerror(errno));
    return ZT_OK;
}

static zt_status setup(loop *L)
{
    const zt_train_settings *S = &L->S;
    zt_game_spec(L->game, L->spec, sizeof L->spec);
    snprintf(L->st.game, sizeof L->st.game, "%s", L->spec);
    ZT_TRY(zt_net_new(&S->net, S->backend, S->precision, S->learner_threads, &L->net));
    ZT_TRY(zt_net_new(&S->net, S->backend, S->precision, S->learner_threads, &L->eval_net));
    zt_rng init;
    zt_rng_seed(&init, S->seed, 0x6e657421ULL);
    zt_net_init(L->net, &init);
    ZT_TRY(zt_trainer_new(L->net, &S->optimizer, &L->trainer));
    ZT_TRY(zt_replay_new(L->game, &S->replay, &L->rb));
    zt_rng_seed(&L->st.sample_rng, S->seed, 0x73616d70ULL);
    ZT_TRY(zt_replay_batch_init(&L->sync_batch, L->game, S->batch, S->net.value_kind == ZT_VALUE_WDL));
    L->value_target = zt_xcalloc((size_t)S->batch, sizeof *L->value_target);
    L->eval_cache = zt_nncache_new(1 << 16, L->game->num_actions);
    L->published_floats = 0;
    for (int i = 0; i < zt_net_tensor_count(L->net); i++) L->published_floats += zt_net_tensor_at(L->net, i).count;
    L->published = zt_xmalloc(L->published_floats * sizeof *L->published);
    L->nactors = S->actors;
    L->actors = zt_xcalloc((size_t)L->nactors, sizeof *L->actors);
    for (int i = 0; i < L->nactors; i++) {
        zt_actor_config ac = S->actor;
        ac.id = i;
        L->actors[i].L = L;
        ZT_TRY(zt_actor_new(L->game, &S->net, S->backend, S->precision, &ac, &L->actors[i].actor));
    }
    return ZT_OK;
}

static void teardown(loop *L)
{
    for (int i = 0; L->actors && i < L->nactors; i++) zt_actor_free(L->actors[i].actor);
    free(L->actors);
    stop_sampler(L);
    zt_replay_batch_free(&L->sync_batch);
    free(L->value_target);
    free(L->published);
    zt_nncache_free(L->eval_cache);
    zt_trainer_free(L->trainer);
    zt_net_free(L->net);
    zt_net_free(L->eval_net);
    zt_replay_free(L->rb);
    zt_log_set_file(NULL);
    if (L->logf) fclose(L->logf);
    if (L->metrics) fclose(L->metrics);
    zt_game_free(L->game);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv);
}

static const char *mode_name(zt_train_mode m)
{
    return m == ZT_TRAIN_CONCURRENT ? "concurrent" : m == ZT_TRAIN_ALTERNATE ? "alternate" : "deterministic";
}

static void log_start(loop *L)
{
    const zt_train_settings *S = &L->S;
    char arch[256];
    zt_net_config_format(&S->net, arch, sizeof arch);
    zt_info("train %s in %s: mode %s, %d actor(s) x %d games, %s %d sims (K=%d), net %s on %s/%s, "
            "%zu parameters",
            L->spec, L->run, mode_name(S->mode), L->nactors, S->actor.games,
            S->actor.search.algorithm == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", S->actor.search.num_simulations,
            S->actor.search.leaves_per_round, arch, zt_net_backend_name(L->net),
            zt_precision_name(zt_net_precision(L->net)), zt_net_param_count(L->net));
    size_t dense = zt_replay_dense_bytes(L->game);
    /* a record's fixed part: flags, count, compact state and the half-float
     * root value; the policy adds 16 bits per legal action */
    zt_info("replay: a dense float32 position takes %zu bytes (observation %d floats + policy %d floats); "
            "a compact record takes %zu bytes + 2 per legal action (measured figure once games arrive)",
            dense, L->game->obs_shape[0] * L->game->obs_shape[1] * L->game->obs_shape[2],
            L->game->num_actions, L->game->compact_size + 4);
}

zt_status zt_train_run(const zt_train_options *opt)
{
    loop *L = zt_xcalloc(1, sizeof *L);
    L->opt = opt;
    L->arena_step = -1;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    atomic_store(&stop_requested, 0);
    zt_config *cfg = opt->config;
    const char *game_name = opt->game;
    zt_status st = ZT_OK;
    if (!game_name) st = zt_config_string(cfg, "game", "", &game_name);
    if (st == ZT_OK && !game_name[0]) st = zt_fail(ZT_ERR_INVALID, "no game given");
    if (st == ZT_OK) {
        zt_config_put(cfg, "game", game_name);
        const char *g;
        st = zt_config_string(cfg, "game", game_name, &g);
    }
    if (st == ZT_OK) st = zt_game_new(game_name, cfg, &L->game);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, L->game, &L->S);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK) st = open_run_dir(L);
    if (st == ZT_OK) st = setup(L);
    if (st == ZT_OK && opt->resume) st = load_checkpoint(L);
    if (st == ZT_OK) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/config.ini", L->run);
        st = zt_config_write(cfg, path);
    }
    if (st == ZT_OK) st = open_logs(L);
    if (st != ZT_OK) {
        /* the message belongs to this thread; teardown logs nothing */
        teardown(L);
        free(L);
        return st;
    }
    L->sink = zt_traj_sink_replay(L->rb);
    zt_replay_stats rs = zt_replay_get_stats(L->rb);
    atomic_store(&L->positions, rs.positions_seen);
    atomic_store(&L->games, rs.games_seen);
    atomic_store(&L->trained, L->st.samples_trained);
    L->t0 = zt_now_s();
    L->elapsed0 = L->st.elapsed;
    L->last_log = L->last_status = L->last_ckpt = L->last_arena = L->t0;
    L->last_report = current_totals(L);
    log_start(L);
    publish(L);
    for (int i = 0; i < L->nactors && st == ZT_OK; i++) st = pull_weights(L, &L->actors[i]);
    if (st == ZT_OK) st = L->S.mode == ZT_TRAIN_CONCURRENT ? run_concurrent(L) : run_alternate(L);
    char why[512] = "";
    if (st != ZT_OK) snprintf(why, sizeof why, "%s", zt_error_message());
    zt_progress_clear();
    if (st == ZT_OK) {
        report(L, true, false);
        /* a last look at the final weights, unless interrupted */
        if (!atomic_load(&stop_requested) && L->st.step > L->arena_step && L->st.step > 0 &&
            ((L->S.arena_games > 0 && L->S.arena_num_opponents > 0) || L->S.arena_positions))
            st = run_arena(L);
        if (st == ZT_OK) st = write_checkpoint(L);
        if (st != ZT_OK) snprintf(why, sizeof why, "%s", zt_error_message());
    }
    zt_info("stopped at step %lld after %.1f s (%lld games, %lld positions)", (long long)L->st.step,
            zt_now_s() - L->t0, (long long)atomic_load(&L->games), (long long)atomic_load(&L->positions));
    teardown(L);
    free(L);
    if (st != ZT_OK) return zt_fail(st, "%s", why);
    return ZT_OK;
}
