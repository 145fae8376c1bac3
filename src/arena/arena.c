/* Matches between two agents, and the solver test sets. */
#include "arena/arena.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "game/solver.h"

/* ---- matches ---- */

/* Games in flight when neither the caller nor the agents limit them: enough
 * for full evaluator batches, few enough that an SPRT wastes little. */
#define MATCH_DEFAULT_CONCURRENCY 256

/* Stream family of duplicate dice, apart from the games' own (seed, i). */
#define DUPLICATE_DICE_SALT 0x6475706c69636174ULL

typedef struct game_slot {
    uint8_t state[ZT_MAX_STATE_BYTES];
    zt_rng rng;    /* the agents' randomness in this game (and chance, unless duplicate) */
    zt_rng dice;   /* duplicate: chance outcomes, shared with the paired game */
    zt_rng *chance; /* where chance outcomes are drawn from: &rng or &dice */
    int index; /* game number, -1 while the slot is free */
    int a_seat;
} game_slot;

typedef struct match {
    const zt_game *g;
    zt_agent *agent[2]; /* a, b */
    const zt_match_config *cfg;
    zt_match_result *res;
    game_slot *slots;
    int num_slots, in_flight, next_game;
    /* Results are counted in game order, so that an SPRT stops at the same
     * game whatever the number of games in flight. */
    int8_t *finished; /* per game: 0 not yet, 1 finished */
    float *returns;   /* per game: a's return */
    int counted;      /* games 0 .. counted - 1 are in res */
    bool decided;     /* the SPRT decided: stop */
} match;

static void notify_played(match *m, int slot, int action)
{
    for (int k = 0; k < 2; k++)
        if (m->agent[k]->played) m->agent[k]->played(m->agent[k], slot, action);
}

static void start_game(match *m, int slot)
{
    game_slot *gs = &m->slots[slot];
    gs->index = m->next_game++;
    gs->a_seat = gs->index & 1;
    zt_rng_seed(&gs->rng, m->cfg->seed, (uint64_t)gs->index);
    gs->chance = &gs->rng;
    if (m->cfg->duplicate) {
        /* Each chance draw takes one uniform number (zt_rng_categorical), so
         * the k-th roll of both games of a pair is the same whatever the
         * agents play in between. */
        zt_rng_seed(&gs->dice, m->cfg->seed ^ DUPLICATE_DICE_SALT, (uint64_t)(gs->index >> 1));
        gs->chance = &gs->dice;
    }
    m->g->reset(m->g, gs->state);
    for (int k = 0; k < 2; k++)
        if (m->agent[k]->new_game) m->agent[k]->new_game(m->agent[k], slot);
    m->in_flight++;
}

static void count_game(match *m, int index)
{
    float ra = m->returns[index];
    zt_match_result *res = m->res;
    res->games++;
    res->total_return += ra;
    if (ra > 0)
        res->wins++;
    else if (ra < 0)
        res->losses++;
    else
        res->draws++;
    if ((index & 1) == 0) {
        res->games_first++;
        res->wins_first += ra > 0;
    }
    if (m->cfg->use_sprt) {
        res->sprt = zt_sprt_update(&m->cfg->sprt, res->wins, res->draws, res->losses);
        if (res->sprt.decision != 0) {
            m->decided = true;
            res->stopped_early = index + 1 < m->cfg->games;
        }
    }
    if (m->cfg->progress) m->cfg->progress(m->cfg->progress_ctx, res);
}

static void finish_game(match *m, int slot)
{
    game_slot *gs = &m->slots[slot];
    float r[2];
    m->g->returns(m->g, gs->state, r);
    m->returns[gs->index] = r[gs->a_seat];
    m->finished[gs->index] = 1;
    gs->index = -1;
    m->in_flight--;
    while (!m->decided && m->counted < m->next_game && m->finished[m->counted])
        count_game(m, m->counted++);
}

/* Plays chance outcomes, finishes ended games and starts new ones in their
 * slots until every slot in use waits on a player's move. */
static void settle(match *m)
{
    const zt_game *g = m->g;
    for (int i = 0; i < m->num_slots; i++) {
        game_slot *gs = &m->slots[i];
        for (;;) {
            if (gs->index < 0) {
                if (m->decided || m->next_game >= m->cfg->games) break;
                start_game(m, i);
            }
            int p = g->current_player(g, gs->state);
            if (p >= 0) break;
            if (p == ZT_TERMINAL) {
                finish_game(m, i);
                continue;
            }
            int o = zt_game_sample_chance(g, gs->state, gs->chance);
            g->apply(g, gs->state, o);
            notify_played(m, i, o);
        }
    }
}

zt_status zt_arena_match(const zt_game *g, zt_agent *a, zt_agent *b, const zt_match_config *cfg,
                         zt_match_result *out)
{
    memset(out, 0, sizeof *out);
    if (cfg->games < 1) return zt_fail(ZT_ERR_INVALID, "match: games %d < 1", cfg->games);
    if (cfg->use_sprt && !(cfg->sprt.alpha > 0 && cfg->sprt.alpha < 1 && cfg->sprt.beta > 0 &&
                           cfg->sprt.beta < 1 && cfg->sprt.elo0 < cfg->sprt.elo1))
        return zt_fail(ZT_ERR_INVALID, "sprt: need 0 < alpha, beta < 1 and elo0 < elo1");
    int conc = a->max_games < b->max_games ? a->max_games : b->max_games;
    if (cfg->concurrency > 0 && cfg->concurrency < conc) conc = cfg->concurrency;
    if (cfg->concurrency <= 0 && conc > MATCH_DEFAULT_CONCURRENCY) conc = MATCH_DEFAULT_CONCURRENCY;
    if (conc > cfg->games) conc = cfg->games;
    match m = {.g = g, .agent = {a, b}, .cfg = cfg, .res = out, .num_slots = conc};
    m.slots = zt_xcalloc((size_t)conc, sizeof *m.slots);
    m.finished = zt_xcalloc((size_t)cfg->games, sizeof *m.finished);
    m.returns = zt_xcalloc((size_t)cfg->games, sizeof *m.returns);
    const void **states = zt_xmalloc((size_t)conc * sizeof *states);
    zt_rng **rngs = zt_xmalloc((size_t)conc * sizeof *rngs);
    int *slot_ids = zt_xmalloc((size_t)conc * sizeof *slot_ids);
    int *actions = zt_xmalloc((size_t)conc * sizeof *actions);
    for (int i = 0; i < conc; i++) m.slots[i].index = -1;
    if (cfg->use_sprt) out->sprt = zt_sprt_update(&cfg->sprt, 0, 0, 0);
    zt_status st = ZT_OK;
    settle(&m);
    while (m.in_flight > 0 && !m.decided && st == ZT_OK) {
        /* One call per agent for every game in which it is to move. */
        for (int k = 0; k < 2 && st == ZT_OK; k++) {
            int n = 0;
            for (int i = 0; i < conc; i++) {
                game_slot *gs = &m.slots[i];
                if (gs->index < 0) continue;
                int p = g->current_player(g, gs->state);
                if (p < 0 || (p == gs->a_seat) != (k == 0)) continue;
                slot_ids[n] = i;
                states[n] = gs->state;
                rngs[n] = &gs->rng;
                n++;
            }
            if (n == 0) continue;
            zt_agent *ag = m.agent[k];
            st = ag->choose(ag, n, slot_ids, states, rngs, actions);
            if (st != ZT_OK) break;
            for (int j = 0; j < n; j++) {
                game_slot *gs = &m.slots[slot_ids[j]];
                uint8_t mask[ZT_MAX_ACTIONS];
                zt_game_legal_mask(g, gs->state, mask);
                int act = actions[j];
                if (act < 0 || act >= g->num_actions || !mask[act]) {
                    char text[ZT_MAX_TEXT];
                    g->to_text(g, gs->state, text, sizeof text);
                    st = zt_fail(ZT_ERR_INVALID, "agent %s chose illegal action %d in %s", ag->name,
                                 act, text);
                    break;
                }
                g->apply(g, gs->state, act);
                notify_played(&m, slot_ids[j], act);
            }
        }
        settle(&m);
    }
    out->elo = zt_elo_estimate(out->wins, out->draws, out->losses);
    out->duplicate = cfg->duplicate;
    out->points = zt_points_estimate(m.returns, out->games, cfg->duplicate, g->max_return);
    free(m.slots);
    free(m.finished);
    free(m.returns);
    free(states);
    free(rngs);
    free(slot_ids);
    free(actions);
    return st;
}

zt_points zt_points_estimate(const float *returns, int n, bool paired, double max_return)
{
    zt_points p = {0};
    if (n <= 0) {
        p.se = max_return;
        p.lo = -max_return;
        p.hi = max_return;
        return p;
    }
    /* Welford over the samples: single games, or pair means. */
    double mean = 0, m2 = 0, total = 0;
    int units = 0;
    for (int i = 0; i < n;) {
        double x;
        if (paired && i + 1 < n) {
            x = 0.5 * ((double)returns[i] + (double)returns[i + 1]);
            total += (double)returns[i] + (double)returns[i + 1];
            i += 2;
        } else {
            x = returns[i];
            total += x;
            i++;
        }
        units++;
        double d = x - mean;
        mean += d / units;
        m2 += d * (x - mean);
    }
    p.mean = total / n;
    p.units = units;
    p.se = units >= 2 ? sqrt(m2 / (units - 1) / units) : max_return;
    p.lo = p.mean - 1.96 * p.se;
    p.hi = p.mean + 1.96 * p.se;
    if (p.lo < -max_return) p.lo = -max_return;
    if (p.hi > max_return) p.hi = max_return;
    return p;
}

void zt_points_format(const zt_points *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "points per game %+.3f [%+.3f, %+.3f]", p->mean + 0.0, p->lo + 0.0,
             p->hi + 0.0);
}

/* x rounded to an integer, never "-0" when printed. */
static double whole(double x)
{
    return round(x) + 0.0;
}

void zt_match_format(const zt_match_result *r, bool with_sprt, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "W-D-L %d-%d-%d, score %.3f, Elo %s%+.0f [%+.0f, %+.0f]", r->wins,
                     r->draws, r->losses, r->elo.score,
                     r->elo.bound ? (r->elo.score > 0.5 ? ">" : "<") : "", whole(r->elo.elo),
                     whole(r->elo.lo), whole(r->elo.hi));
    if (with_sprt && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", SPRT LLR %.2f [%.2f, %.2f] %s", r->sprt.llr,
                 r->sprt.lower, r->sprt.upper,
                 r->sprt.decision > 0   ? "H1"
                 : r->sprt.decision < 0 ? "H0"
                                        : "undecided");
}

/* ---- solver test sets ---- */

/* Positions judged per agent call. */
#define POSITIONS_BATCH 256

typedef struct judged {
    int index;        /* among the positions read */
    int image;        /* the symmetry the agent is asked (0: as written) */
    const char *line; /* the file's line (in the open position file's text) */
    int band;         /* ZT_BAND_* */
    int value_index;  /* 0 won, 1 drawn, 2 lost for the side to move; -1 unknown */
    int num_moves;
    uint16_t moves[ZT_MAX_ACTIONS];
} judged;

static bool keeps_value(const judged *j, int action)
{
    for (int i = 0; i < j->num_moves; i++)
        if (j->moves[i] == action) return true;
    return false;
}

/* Buffers of the net's values of a batch (cfg->value_ev). */
typedef struct value_buffers {
    float *obs, *logits, *values, *hidden;
} value_buffers;

static void value_buffers_init(value_buffers *vb, const zt_game *g, const zt_evaluator *ev, int n)
{
    memset(vb, 0, sizeof *vb);
    if (!ev) return;
    vb->obs = zt_xmalloc((size_t)n * (size_t)zt_game_obs_size(g) * sizeof(float));
    vb->logits = zt_xmalloc((size_t)n * (size_t)g->num_actions * sizeof(float));
    vb->values = zt_xmalloc((size_t)n * sizeof(float));
    if (ev->initial) vb->hidden = zt_xmalloc((size_t)n * ev->hidden_size * sizeof(float));
}

static void value_buffers_free(value_buffers *vb)
{
    free(vb->obs);
    free(vb->logits);
    free(vb->values);
    free(vb->hidden);
}

/* The net's value of each of the n states, for the side to move. */
static zt_status net_values(const zt_game *g, const zt_evaluator *ev, int n, const void **states,
                            value_buffers *vb)
{
    if (ev->eval_states) return ev->eval_states(ev->ctx, n, states, vb->logits, vb->values);
    size_t per = (size_t)zt_game_obs_size(g);
    for (int i = 0; i < n; i++) g->observe(g, states[i], vb->obs + (size_t)i * per);
    if (ev->initial) return ev->initial(ev->ctx, n, vb->obs, vb->hidden, vb->logits, vb->values);
    return ev->eval(ev->ctx, n, vb->obs, vb->logits, vb->values);
}

/* The net's value v of a position whose exact value is k (0 won, 1
 * drawn, 2 lost) into r. */
static void count_net_value(zt_positions_result *r, int k, float v)
{
    static const float target[3] = {1.0f, 0.0f, -1.0f};
    bool wrong = k == 0 ? v <= 1.0f / 3 : k == 1 ? fabsf(v) > 1.0f / 3 : v >= -1.0f / 3;
    r->net_positions[k]++;
    r->net_wrong[k] += wrong;
    r->net_sum[k] += v;
    r->net_sq[k] += (double)(v - target[k]) * (v - target[k]);
}

/* One judged move (ok: it keeps the value) into r. */
static void count_move(zt_positions_result *r, const judged *j, bool ok)
{
    r->positions++;
    r->optimal += ok;
    r->mistakes = r->positions - r->optimal;
    if (j->band >= 0 && j->band < ZT_BANDS) {
        r->band_positions[j->band]++;
        r->band_optimal[j->band] += ok;
    }
    if (j->value_index >= 0) {
        r->value_positions[j->value_index]++;
        r->value_optimal[j->value_index] += ok;
    }
}

/* The batch of positions in flight: jd[i] judged on asked[i] (states[i] as
 * written, where an image is asked; else the same buffer). A position's
 * images may span two batches or more (Sim has hundreds). */
typedef struct positions_batch {
    const zt_game *g;
    int images;
    int wrong; /* the images judged wrong so far of the position at hand */
    size_t stride;
    uint8_t *states, *asked;
    zt_rng *rngs;
    judged *jd;
    /* unmap[k * num_actions + a]: the move of image k's action a in the
     * position as written (images > 1) */
    int *unmap;
    value_buffers vb;
} positions_batch;

/* Asks the agent for the n entries of the batch and counts them. */
static zt_status judge_batch(const zt_positions_config *cfg, zt_agent *agent, int n,
                             positions_batch *b, zt_positions_result *out)
{
    const zt_game *g = b->g;
    int slots[POSITIONS_BATCH] = {0}, actions[POSITIONS_BATCH] = {0};
    const void *ptrs[POSITIONS_BATCH] = {0};
    zt_rng *rng_ptrs[POSITIONS_BATCH] = {0};
    for (int i = 0; i < n; i++) {
        slots[i] = i;
        ptrs[i] = b->asked + (size_t)i * b->stride;
        rng_ptrs[i] = &b->rngs[i];
        if (agent->new_game) agent->new_game(agent, i);
    }
    ZT_TRY(agent->choose(agent, n, slots, ptrs, rng_ptrs, actions));
    if (cfg->value_ev) {
        ZT_TRY(net_values(g, cfg->value_ev, n, ptrs, &b->vb));
        for (int i = 0; i < n; i++) {
            int k = b->jd[i].value_index;
            if (k < 0) continue;
            count_net_value(out, k, b->vb.values[i]);
            if (cfg->per_image)
                count_net_value(&cfg->per_image[b->jd[i].image], k, b->vb.values[i]);
        }
    }
    for (int i = 0; i < n; i++) {
        const judged *j = &b->jd[i];
        int action = actions[i];
        if (j->image > 0) {
            if (action < 0 || action >= g->num_actions)
                return zt_fail(ZT_ERR_INVALID, "%s chose action %d of %d", agent->name, action,
                               g->num_actions);
            action = b->unmap[j->image * g->num_actions + action];
        }
        bool ok = keeps_value(j, action);
        count_move(out, j, ok);
        if (cfg->per_image) count_move(&cfg->per_image[j->image], j, ok);
        if (!ok && cfg->mistake)
            cfg->mistake(cfg->mistake_ctx, j->index, j->image, j->line,
                         b->states + (size_t)i * b->stride, action, j->moves, j->num_moves);
        b->wrong += !ok;
        if (j->image == b->images - 1) { /* the position's last image */
            out->wrong_every += b->wrong == b->images;
            out->wrong_some += b->wrong > 0;
            b->wrong = 0;
        }
    }
    return ZT_OK;
}

/* A fresh result of the set at path, judging `images` images. */
static void positions_result_init(zt_positions_result *r, const zt_game *g, const char *path,
                                  int images)
{
    memset(r, 0, sizeof *r);
    r->report_mistakes = zt_game_positions_judge(g, path) == ZT_JUDGE_MISTAKES;
    r->images = images;
}

zt_status zt_arena_positions(const zt_game *g, zt_agent *agent, const char *path, int limit,
                             uint64_t seed, zt_positions_result *out)
{
    zt_positions_config cfg = {.path = path, .limit = limit, .seed = seed};
    return zt_arena_positions_run(g, agent, &cfg, out);
}

zt_status zt_arena_positions_run(const zt_game *g, zt_agent *agent, const zt_positions_config *cfg,
                                 zt_positions_result *out)
{
    const char *path = cfg->path;
    int limit = cfg->limit;
    uint64_t seed = cfg->seed;
    int images = cfg->images > 1 ? cfg->images : 1;
    positions_result_init(out, g, path, images);
    if (images > g->num_symmetries)
        return zt_fail(ZT_ERR_INVALID,
                       "%d images of each position asked of %s, which has %d (its "
                       "symmetries)",
                       images, g->title, g->num_symmetries);
    int batch = agent->max_games < POSITIONS_BATCH ? agent->max_games : POSITIONS_BATCH;
    for (int k = 0; cfg->per_image && k < images; k++)
        positions_result_init(&cfg->per_image[k], g, path, 1);
    zt_solver *sv;
    ZT_TRY(zt_solver_new(g, &sv));
    zt_position_file pf;
    zt_status st = zt_position_file_open(path, &pf);
    if (st != ZT_OK) {
        zt_solver_free(sv);
        return st;
    }
    int total = cfg->progress ? (int)zt_position_file_count(&pf, limit) : 0;
    if (cfg->progress) cfg->progress(cfg->progress_ctx, 0, total, out);
    positions_batch b = {.g = g, .images = images, .stride = g->state_size};
    b.states = zt_xmalloc((size_t)batch * b.stride);
    b.asked = images > 1 ? zt_xmalloc((size_t)batch * b.stride) : b.states;
    b.rngs = zt_xmalloc((size_t)batch * sizeof *b.rngs);
    b.jd = zt_xmalloc((size_t)batch * sizeof *b.jd);
    if (images > 1) {
        b.unmap = zt_xmalloc((size_t)images * (size_t)g->num_actions * sizeof *b.unmap);
        for (int k = 0; k < images; k++)
            for (int a = 0; a < g->num_actions; a++)
                b.unmap[k * g->num_actions + g->sym_action(g, k, a)] = a;
    }
    value_buffers_init(&b.vb, g, cfg->value_ev, batch);
    zt_position *pos = zt_xmalloc(sizeof *pos);
    zt_solution *sol = zt_xmalloc(sizeof *sol);
    int n = 0, taken = 0;
    while (st == ZT_OK && (limit <= 0 || taken < limit)) {
        bool got;
        st = zt_position_file_next(&pf, sv, pos, &got);
        if (st != ZT_OK || !got) break;
        /* the file's moves, else the weak solve: each child's outcome only,
         * not its exact score */
        bool has_value;
        st = zt_position_moves(sv, pos, sol, &has_value);
        if (st != ZT_OK) break;
        for (int k = 0; k < images && st == ZT_OK; k++) {
            judged *j = &b.jd[n];
            j->index = taken;
            j->image = k;
            j->line = pf.line;
            j->band = pos->has_band ? pos->band : ZT_BAND_NONE;
            j->num_moves = sol->num_moves;
            memcpy(j->moves, sol->moves, sizeof(uint16_t) * (size_t)j->num_moves);
            j->value_index = has_value ? 1 - sol->value : -1;
            memcpy(b.states + (size_t)n * b.stride, pos->state, b.stride);
            if (images > 1) g->sym_state(g, k, pos->state, b.asked + (size_t)n * b.stride);
            /* image 0 draws from (seed, i) as a set judged as written does */
            zt_rng_seed(&b.rngs[n], seed, (uint64_t)k << 32 | (uint64_t)taken);
            if (++n == batch) {
                st = judge_batch(cfg, agent, n, &b, out);
                n = 0;
                if (st == ZT_OK && cfg->progress)
                    cfg->progress(cfg->progress_ctx, taken + 1, total, out); /* (read) */
            }
        }
        if (st != ZT_OK) break;
        taken++;
        if (cfg->progress) cfg->progress(cfg->progress_ctx, taken, total, out);
    }
    if (st == ZT_OK && n > 0) {
        st = judge_batch(cfg, agent, n, &b, out);
        if (st == ZT_OK && cfg->progress) cfg->progress(cfg->progress_ctx, taken, total, out);
    }
    if (st == ZT_OK && out->positions == 0) st = zt_fail(ZT_ERR_INVALID, "%s: no positions", path);
    value_buffers_free(&b.vb);
    free(sol);
    free(pos);
    free(b.unmap);
    free(b.jd);
    free(b.rngs);
    if (b.asked != b.states) free(b.asked);
    free(b.states);
    zt_position_file_close(&pf);
    zt_solver_free(sv);
    return st;
}

void zt_positions_format(const zt_positions_result *r, char *buf, size_t cap)
{
    if (r->report_mistakes)
        snprintf(buf, cap, "mistakes %d/%d", r->mistakes, r->positions);
    else
        snprintf(buf, cap, "optimal %d/%d", r->optimal, r->positions);
}

/* "NAME mistakes k/m (p %)" for each of the n groups with positions. */
static void format_groups(const zt_positions_result *r, int n, const char *const *names,
                          const int *positions, const int *optimal, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int b = 0; b < n && used < cap; b++) {
        int m = positions[b];
        if (m == 0) continue;
        int k = r->report_mistakes ? m - optimal[b] : optimal[b];
        int w =
            snprintf(buf + used, cap - used, "%s%s %s %d/%d (%.2f %%)", used ? ", " : "", names[b],
                     r->report_mistakes ? "mistakes" : "optimal", k, m, 100.0 * k / m);
        if (w < 0) return;
        used += (size_t)w;
    }
}

void zt_positions_format_bands(const zt_positions_result *r, char *buf, size_t cap)
{
    format_groups(r, ZT_BANDS, zt_band_names, r->band_positions, r->band_optimal, buf, cap);
}

double zt_positions_net_totals(const zt_positions_result *r, int *valued, int *wrong)
{
    int m = 0, w = 0;
    double sq = 0;
    for (int k = 0; k < 3; k++) {
        m += r->net_positions[k];
        w += r->net_wrong[k];
        sq += r->net_sq[k];
    }
    if (valued) *valued = m;
    if (wrong) *wrong = w;
    return m > 0 ? sqrt(sq / m) : 0.0;
}

void zt_positions_format_net(const zt_positions_result *r, char *buf, size_t cap)
{
    static const char *const names[3] = {"won", "drawn", "lost"};
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < 3 && used < cap; k++) {
        int m = r->net_positions[k];
        if (m == 0) continue;
        int w = snprintf(buf + used, cap - used, "%s%s %+.2f (wrong %d/%d)", used ? ", " : "",
                         names[k], r->net_sum[k] / m, r->net_wrong[k], m);
        if (w < 0) return;
        used += (size_t)w;
    }
    int valued;
    double rmse = zt_positions_net_totals(r, &valued, NULL);
    if (valued > 0 && used < cap) snprintf(buf + used, cap - used, ", RMSE %.3f", rmse);
}

void zt_positions_format_values(const zt_positions_result *r, char *buf, size_t cap)
{
    static const char *const names[3] = {"won", "drawn", "lost"};
    format_groups(r, 3, names, r->value_positions, r->value_optimal, buf, cap);
}
