/* The position-set maker (posmaker.h). Three passes: play the games, keep
 * each distinct candidate once (the first met, by canonical hash over the
 * game's symmetries), then solve candidates in a shuffled order, passing
 * over the excluded ones, until the wanted sets are full. Solves start on
 * an empty table (the solver's forget), so a position's node count is its
 * own, whatever came before. */
#include "arena/posmaker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/timer.h"

const char *const zt_rating_names[ZT_RATINGS] = {"easy", "medium", "hard"};

/* Games played in lockstep per agent call. */
#define PLAY_BATCH 64
/* Stream tags of the random choices besides the agents' own. */
#define NOISE_STREAM 0x6e6f697365ULL
#define SHUFFLE_STREAM 0x73687566ULL

typedef struct candidate {
    char moves[48];
    int plies;
} candidate;

typedef struct maker {
    const zt_game *g;
    const zt_posmaker_config *cfg;
    candidate *cands;
    int64_t count, cap;
    uint64_t *seen; /* open addressing over canonical hashes; 0 = empty */
    size_t seen_mask;
    uint64_t *exclude; /* cfg->exclude, sorted */
    zt_posmaker_result *out;
} maker;

int zt_posmaker_remaining(int plies, int score)
{
    if (score == 0) return 42 - plies;
    int stones = 22 - (score > 0 ? score : -score); /* the winner's at its winning move */
    bool mover_first = plies % 2 == 0;
    bool winner_first = score > 0 ? mover_first : !mover_first;
    int end = winner_first ? 2 * stones - 1 : 2 * stones;
    return end - plies;
}

int zt_posmaker_rate(const zt_posmaker_config *cfg, int remaining, uint64_t nodes)
{
    if (cfg->rating == ZT_RATE_NODES)
        return nodes >= cfg->nodes_hard     ? ZT_RATING_HARD
               : nodes >= cfg->nodes_medium ? ZT_RATING_MEDIUM
                                            : ZT_RATING_EASY;
    return remaining <= 14 ? ZT_RATING_EASY : remaining <= 28 ? ZT_RATING_MEDIUM : ZT_RATING_HARD;
}

/* Pons' levels by plies (the parser's bands, connect4_solver.c). */
static int band_of(int plies)
{
    return plies <= 14 ? ZT_BAND_OPENING : plies <= 28 ? ZT_BAND_MIDDLE : ZT_BAND_END;
}

uint64_t zt_posmaker_canonical(const zt_game *g, const void *s)
{
    uint8_t sym[ZT_MAX_STATE_BYTES];
    uint64_t best = g->hash(g, s);
    for (int k = 1; k < g->num_symmetries; k++) {
        g->sym_state(g, k, s, sym);
        uint64_t h = g->hash(g, sym);
        if (h < best) best = h;
    }
    return best ? best : 1; /* 0 marks an empty slot */
}

/* Is h new? Records it. */
static bool first_seen(maker *m, uint64_t h)
{
    if ((size_t)m->out->unique * 2 >= m->seen_mask) {
        size_t old_n = m->seen_mask + 1, n = old_n * 2;
        uint64_t *old = m->seen;
        m->seen = zt_xcalloc(n, sizeof *m->seen);
        m->seen_mask = n - 1;
        for (size_t i = 0; i < old_n; i++) {
            if (!old[i]) continue;
            size_t j = old[i] & m->seen_mask;
            while (m->seen[j]) j = (j + 1) & m->seen_mask;
            m->seen[j] = old[i];
        }
        free(old);
    }
    size_t j = h & m->seen_mask;
    while (m->seen[j]) {
        if (m->seen[j] == h) return false;
        j = (j + 1) & m->seen_mask;
    }
    m->seen[j] = h;
    m->out->unique++;
    return true;
}

/* Every prefix of a finished game that asks for a move: a candidate when
 * new and not won at once. */
static void collect(maker *m, const int *cols, int plies)
{
    const zt_game *g = m->g;
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    for (int k = 0; k < plies; k++) {
        if (k > 0) {
            m->out->positions++;
            if (!first_seen(m, zt_posmaker_canonical(g, s))) {
                /* a repeat */
            } else if (zt_game_wins_at_once(g, s)) {
                m->out->wins_now++;
            } else {
                if (m->count == m->cap) {
                    m->cap = m->cap ? 2 * m->cap : 4096;
                    m->cands = zt_xrealloc(m->cands, (size_t)m->cap * sizeof *m->cands);
                }
                candidate *c = &m->cands[m->count++];
                for (int j = 0; j < k; j++) c->moves[j] = (char)('1' + cols[j]);
                c->moves[k] = '\0';
                c->plies = k;
            }
        }
        g->apply(g, s, cols[k]);
    }
}

typedef struct game_slot {
    uint8_t state[ZT_MAX_STATE_BYTES];
    int cols[64];
    int plies;
    zt_rng rng, noise;
    bool over;
} game_slot;

/* Plays the games of one agent, `ids` of them, in lockstep batches. */
static zt_status play_agent(maker *m, zt_agent *a, const int *ids, int n, int64_t *played)
{
    const zt_game *g = m->g;
    const zt_posmaker_config *cfg = m->cfg;
    int batch = a->max_games < PLAY_BATCH ? a->max_games : PLAY_BATCH;
    game_slot *gs = zt_xcalloc((size_t)batch, sizeof *gs);
    zt_status st = ZT_OK;
    for (int from = 0; from < n && st == ZT_OK; from += batch) {
        int b = n - from < batch ? n - from : batch;
        for (int i = 0; i < b; i++) {
            game_slot *x = &gs[i];
            g->reset(g, x->state);
            x->plies = 0;
            x->over = false;
            zt_rng_seed(&x->rng, cfg->seed, (uint64_t)ids[from + i]);
            zt_rng_seed(&x->noise, cfg->seed ^ NOISE_STREAM, (uint64_t)ids[from + i]);
            if (a->new_game) a->new_game(a, i);
        }
        for (;;) {
            int slots[PLAY_BATCH], actions[PLAY_BATCH], k = 0;
            const void *states[PLAY_BATCH];
            zt_rng *rngs[PLAY_BATCH];
            for (int i = 0; i < b; i++) {
                if (gs[i].over) continue;
                slots[k] = i;
                states[k] = gs[i].state;
                rngs[k] = &gs[i].rng;
                k++;
            }
            if (k == 0) break;
            if ((st = a->choose(a, k, slots, states, rngs, actions)) != ZT_OK) break;
            for (int j = 0; j < k; j++) {
                game_slot *x = &gs[slots[j]];
                int act = actions[j];
                /* Always drawn, so the noise stream does not depend on the
                 * agent's choices. */
                double u = zt_rng_uniform(&x->noise);
                uint16_t legal[ZT_MAX_ACTIONS];
                int nl = g->legal(g, x->state, legal);
                int pick = (int)zt_rng_below(&x->noise, (uint32_t)nl);
                if (u < cfg->noise) act = legal[pick];
                ZT_ASSERT(x->plies < (int)(sizeof x->cols / sizeof x->cols[0]));
                x->cols[x->plies++] = act;
                g->apply(g, x->state, act);
                if (a->played) a->played(a, slots[j], act);
                if (g->current_player(g, x->state) == ZT_TERMINAL) {
                    x->over = true;
                    collect(m, x->cols, x->plies);
                    ++*played;
                    if (cfg->progress) cfg->progress(cfg->progress_ctx, 0, *played, cfg->games, 0);
                }
            }
        }
    }
    free(gs);
    return st;
}

static zt_status play(maker *m)
{
    const zt_posmaker_config *cfg = m->cfg;
    int *ids = zt_xmalloc((size_t)cfg->games * sizeof *ids);
    int64_t played = 0;
    zt_status st = ZT_OK;
    for (int p = 0; p < cfg->num_players && st == ZT_OK; p++) {
        int n = 0;
        for (int i = p; i < cfg->games; i += cfg->num_players) ids[n++] = i;
        st = play_agent(m, cfg->players[p], ids, n, &played);
    }
    free(ids);
    return st;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static bool excluded(const maker *m, uint64_t h)
{
    return m->exclude &&
           bsearch(&h, m->exclude, (size_t)m->cfg->num_exclude, sizeof h, cmp_u64) != NULL;
}

static bool band_open(const zt_posmaker_config *cfg, const zt_posmaker_result *r, int band)
{
    for (int k = 0; k < ZT_RATINGS; k++)
        if (cfg->want[band][k] && r->per[band][k] < cfg->per_set) return true;
    return false;
}

static zt_status solve_all(maker *m)
{
    const zt_game *g = m->g;
    const zt_posmaker_config *cfg = m->cfg;
    zt_posmaker_result *r = m->out;
    /* Fisher-Yates over the candidates, from the seed. */
    zt_rng rng;
    zt_rng_seed(&rng, cfg->seed ^ SHUFFLE_STREAM, 0);
    for (int64_t i = m->count - 1; i > 0; i--) {
        int64_t j = (int64_t)zt_rng_below(&rng, (uint32_t)(i + 1));
        candidate t = m->cands[i];
        m->cands[i] = m->cands[j];
        m->cands[j] = t;
    }
    zt_solver *sv;
    ZT_TRY(zt_solver_new(g, &sv));
    zt_status st = ZT_OK;
    if (!sv->forget) {
        zt_solver_free(sv);
        return zt_fail(ZT_ERR_UNSUPPORTED, "the %s solver cannot count a position's nodes",
                       g->name);
    }
    sv->node_limit = cfg->max_nodes;
    zt_solution *sol = zt_xmalloc(sizeof *sol);
    uint8_t s[ZT_MAX_STATE_BYTES];
    int wanted_total = 0;
    for (int b = 0; b < ZT_BANDS; b++)
        for (int k = 0; k < ZT_RATINGS; k++) wanted_total += cfg->want[b][k] ? cfg->per_set : 0;
    for (int64_t i = 0; i < m->count && st == ZT_OK && r->count < wanted_total; i++) {
        if (cfg->budget_nodes && r->nodes >= cfg->budget_nodes) break;
        const candidate *c = &m->cands[i];
        int band = band_of(c->plies);
        if (!band_open(cfg, r, band)) continue;
        if ((st = g->from_text(g, c->moves, s)) != ZT_OK) break;
        if (excluded(m, zt_posmaker_canonical(g, s))) {
            r->excluded++;
            goto next;
        }
        double t0 = zt_now_s();
        sv->forget(sv);
        if ((st = sv->solve(sv, s, false, sol)) != ZT_OK) break;
        r->solved++;
        r->nodes += sol->nodes;
        if (sol->cut) {
            r->cut++;
        } else {
            zt_made_position mp = {
                .plies = c->plies, .score = sol->score, .nodes = sol->nodes, .band = band};
            mp.remaining = zt_posmaker_remaining(c->plies, sol->score);
            mp.rating = zt_posmaker_rate(cfg, mp.remaining, sol->nodes);
            if (cfg->want[band][mp.rating] && r->per[band][mp.rating] < cfg->per_set) {
                /* The weak solve of the children, on the table just filled:
                 * what the arena would otherwise pay at every evaluation.
                 * It often takes more than the score's (a move that does
                 * not win must be proved so), and is held to the same
                 * limit. */
                if ((st = sv->solve(sv, s, true, sol)) != ZT_OK) break;
                r->nodes += sol->nodes;
                if (sol->cut) {
                    r->cut++;
                    goto next;
                }
                ZT_ASSERT(sol->score == mp.score);
                snprintf(mp.moves, sizeof mp.moves, "%s", c->moves);
                mp.num_moves = sol->num_moves;
                for (int j = 0; j < sol->num_moves; j++) mp.best[j] = (uint8_t)sol->moves[j];
                r->kept = zt_xrealloc(r->kept, (size_t)(r->count + 1) * sizeof *r->kept);
                r->kept[r->count++] = mp;
                r->per[band][mp.rating]++;
                r->set_seconds[band][mp.rating] += zt_now_s() - t0;
            }
        }
    next:
        if (cfg->progress) cfg->progress(cfg->progress_ctx, 1, i + 1, m->count, r->count);
    }
    free(sol);
    zt_solver_free(sv);
    return st;
}

zt_status zt_posmaker_run(const zt_game *g, const zt_posmaker_config *cfg, zt_posmaker_result *out)
{
    memset(out, 0, sizeof *out);
    if (strcmp(g->name, "connect4") != 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "positions: only connect4 has a position-set maker");
    if (cfg->num_players < 1 || cfg->games < 1 || cfg->per_set < 1 || cfg->num_exclude < 0 ||
        (cfg->num_exclude > 0 && !cfg->exclude))
        return zt_fail(ZT_ERR_INVALID, "positions: needs players, games and a set size");
    maker m = {.g = g, .cfg = cfg, .out = out};
    if (cfg->num_exclude > 0) {
        size_t bytes = (size_t)cfg->num_exclude * sizeof *m.exclude;
        m.exclude = zt_xmalloc(bytes);
        memcpy(m.exclude, cfg->exclude, bytes);
        qsort(m.exclude, (size_t)cfg->num_exclude, sizeof *m.exclude, cmp_u64);
    }
    m.seen_mask = 4095;
    m.seen = zt_xcalloc(m.seen_mask + 1, sizeof *m.seen);
    double t0 = zt_now_s();
    zt_status st = play(&m);
    out->play_seconds = zt_now_s() - t0;
    if (st == ZT_OK) {
        t0 = zt_now_s();
        st = solve_all(&m);
        out->solve_seconds = zt_now_s() - t0;
    }
    free(m.seen);
    free(m.exclude);
    free(m.cands);
    if (st != ZT_OK) zt_posmaker_result_free(out);
    return st;
}

void zt_posmaker_result_free(zt_posmaker_result *r)
{
    free(r->kept);
    memset(r, 0, sizeof *r);
}

zt_status zt_posmaker_write(const zt_posmaker_result *r, int band, int rating, const char *header,
                            const char *path)
{
    size_t cap = 4096 + (header ? 2 * strlen(header) : 0) + (size_t)r->count * 64, used = 0;
    char *buf = zt_xmalloc(cap);
    buf[0] = '\0';
    for (const char *h = header; h && *h;) {
        size_t len = strcspn(h, "\n");
        used += (size_t)snprintf(buf + used, cap - used, "# %.*s\n", (int)len, h);
        h += len + (h[len] == '\n');
    }
    for (int i = 0; i < r->count; i++) {
        const zt_made_position *p = &r->kept[i];
        if (p->band != band || p->rating != rating) continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s %d ", p->moves, p->score);
        for (int j = 0; j < p->num_moves; j++) buf[used++] = (char)('1' + p->best[j]);
        buf[used++] = '\n';
        buf[used] = '\0';
    }
    ZT_ASSERT(used < cap);
    zt_status st = zt_write_file_atomic(path, buf, used);
    free(buf);
    return st;
}
