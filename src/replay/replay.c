/* The replay buffer: a byte ring of records (record.h) with a ring of games
 * beside it, sampling, and the checkpoint format. */
#include "replay/replay.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "replay/record.h"

/* ---- the game builder ---- */

/* struct zt_replay_traj is in record.h, shared with traj.c's byte form. */

zt_status zt_replay_traj_new(const zt_game *g, zt_replay_traj **out)
{
    zt_replay_traj *t = zt_xcalloc(1, sizeof *t);
    t->game = g;
    zt_record_layout_init(&t->layout, g);
    /* a game's plies, and where chance states are recorded too (game.h,
     * chance_observer) as many of those: past that the actor abandons it */
    t->max_length = g->chance_observer ? 2 * g->max_game_length : g->max_game_length;
    t->capacity = (size_t)t->max_length * t->layout.max_bytes;
    t->bytes = malloc(t->capacity);
    if (!t->bytes) {
        free(t);
        return zt_fail(ZT_ERR_NOMEM, "replay: no memory for a game of %d positions",
                       g->max_game_length);
    }
    *out = t;
    return ZT_OK;
}

void zt_replay_traj_free(zt_replay_traj *t)
{
    if (!t) return;
    free(t->bytes);
    free(t);
}

bool zt_replay_traj_full(const zt_replay_traj *t)
{
    return t->length >= t->max_length;
}

void zt_replay_traj_clear(zt_replay_traj *t)
{
    t->used = 0;
    t->length = 0;
    t->full_searches = 0;
    t->surprise_sum = 0;
}

int zt_replay_traj_length(const zt_replay_traj *t)
{
    return t->length;
}

void zt_replay_traj_add(zt_replay_traj *t, const void *state, const float *policy, float root_value,
                        bool full_search)
{
    zt_replay_traj_add_step(t, state, policy, root_value, full_search, -1, 0.0f);
}

void zt_replay_traj_add_step(zt_replay_traj *t, const void *state, const float *policy,
                             float root_value, bool full_search, int action, float reward)
{
    zt_replay_traj_add_surprise(t, state, policy, root_value, full_search, action, reward, 0.0f);
}

void zt_replay_traj_add_surprise(zt_replay_traj *t, const void *state, const float *policy,
                                 float root_value, bool full_search, int action, float reward,
                                 float surprise)
{
    /* max_game_length bounds the positions of any game (game.h). */
    ZT_ASSERT(t->length < t->max_length);
    uint8_t *rec = t->bytes + t->used;
    size_t len = zt_record_encode_full(&t->layout, t->game, state, policy, root_value, full_search,
                                       action, reward, surprise, rec);
    t->used += len;
    t->length++;
    t->full_searches += full_search;
    t->surprise_sum += zt_record_surprise(rec, len);
}

float zt_replay_surprise(const zt_game *g, const uint8_t *legal_mask, const float *policy,
                         const float *prior)
{
    /* KL(policy || prior) over the legal actions, both renormalised there;
     * the prior floored at 1e-6 so that one move the net all but ruled out
     * cannot make it infinite. */
    double ps = 0, qs = 0;
    for (int a = 0; a < g->num_actions; a++) {
        if (!legal_mask[a]) continue;
        ps += policy[a];
        qs += prior[a] > 0 ? prior[a] : 0;
    }
    if (!(ps > 0) || !(qs > 0)) return 0.0f;
    double kl = 0;
    for (int a = 0; a < g->num_actions; a++) {
        if (!legal_mask[a] || !(policy[a] > 0)) continue;
        double p = policy[a] / ps, q = (prior[a] > 0 ? prior[a] : 0) / qs;
        if (q < 1e-6) q = 1e-6;
        kl += p * log(p / q);
    }
    return kl > 0 && isfinite(kl) ? (float)kl : 0.0f;
}

/* ---- the buffer ---- */

/* One stored game. Ids are consecutive, so a game's id is its place in the
 * ring counted from games_seen and needs no field. */
typedef struct game_entry {
    int64_t start;   /* absolute index of its first position */
    uint32_t offset; /* of its first record in the byte ring */
    uint32_t bytes;  /* of its records */
    uint32_t length; /* positions */
    float return0;   /* final return of player 0 */
} game_entry;

/* A position's occurrences in the window (repeat_weight, repeat_average):
 * count 0 marks an empty slot. */
typedef struct repeat_slot {
    uint64_t key;
    int32_t count, wins, draws; /* outcomes > 0 and == 0 for the player to move */
    double value_sum;           /* of the value targets (outcome_for) */
} repeat_slot;

struct zt_replay {
    const zt_game *game;
    zt_replay_config cfg;
    zt_record_layout layout;
    pthread_mutex_t mutex;

    uint8_t *ring;
    size_t ring_bytes;
    size_t head; /* where the next game's records go */

    game_entry *games;
    int64_t max_games;
    int64_t first_game, num_games; /* ring of games, oldest first */

    int64_t positions, positions_seen, games_seen, policy_targets;
    int64_t surprise_sum; /* of the stored records' surprise bytes */
    size_t record_bytes;

    repeat_slot *repeats; /* NULL unless repeat_weight > 0 or repeat_average */
    size_t repeat_mask;   /* slots - 1 */
    int64_t tracked_from; /* the first position counted there */
};

void zt_replay_config_default(zt_replay_config *c)
{
    memset(c, 0, sizeof *c);
    c->capacity = 1 << 20;
    c->window_c = 250000;
    c->window_alpha = 0.75;
    c->window_beta = 0.4;
    c->augment = true;
}

int64_t zt_replay_window(const zt_replay_config *cfg, int64_t n)
{
    if (n <= 0) return 0;
    double w = (double)n, c = cfg->window_c;
    if (c > 0 && w > c) {
        double x = w / c;
        double grow =
            cfg->window_alpha > 0 ? (pow(x, cfg->window_alpha) - 1) / cfg->window_alpha : log(x);
        w = c * (1 + cfg->window_beta * grow);
    }
    /* Compared as doubles before the conversion: a steep window (huge
     * alpha or beta) overflows to inf, which no integer holds. */
    int64_t win = w < (double)n ? (int64_t)floor(w) : n;
    if (win > cfg->capacity) win = cfg->capacity;
    return win < 1 ? 1 : win;
}

/* A guess at a record's size from the game's sizes that is exact for dense
 * policies up to 32 legal actions; one whole game of the longest records is
 * added so that any game fits. */
static size_t default_ring_bytes(const zt_replay_config *cfg, const zt_record_layout *l,
                                 const zt_game *g)
{
    int typical_legal = g->num_actions < 32 ? g->num_actions : 32;
    size_t per = 1 + 1 + l->compact_size + 2 + 2 * (size_t)(typical_legal - 1);
    return (size_t)cfg->capacity * per + (size_t)g->max_game_length * l->max_bytes;
}

static zt_status check_config(const zt_replay_config *c)
{
    if (c->capacity < 1)
        return zt_fail(ZT_ERR_INVALID, "replay capacity %lld < 1", (long long)c->capacity);
    /* Every game has a position: more games than positions is a mistake. */
    if (c->max_games < 0 || c->max_games > c->capacity)
        return zt_fail(ZT_ERR_INVALID, "replay max_games %lld not in 0..capacity %lld",
                       (long long)c->max_games, (long long)c->capacity);
    if (!(c->surprise_weight >= 0 && c->surprise_weight <= 1))
        return zt_fail(ZT_ERR_INVALID, "replay surprise_weight %g not in [0, 1]",
                       c->surprise_weight);
    if (!(c->repeat_weight >= 0 && c->repeat_weight <= 1))
        return zt_fail(ZT_ERR_INVALID, "replay repeat_weight %g not in [0, 1]", c->repeat_weight);
    if (!(c->window_c >= 0) || !(c->window_alpha >= 0) || !(c->window_beta >= 0) ||
        !isfinite(c->window_c) || !isfinite(c->window_alpha) || !isfinite(c->window_beta))
        return zt_fail(ZT_ERR_INVALID,
                       "replay window c %g, alpha %g, beta %g: must be finite and >= 0",
                       c->window_c, c->window_alpha, c->window_beta);
    return ZT_OK;
}

static game_entry *game_at(zt_replay *rb, int64_t i)
{
    return &rb->games[(rb->first_game + i) % rb->max_games];
}

/* The stored game holding absolute position `index` (binary search over the
 * games' starts, which increase). Caller holds the lock. */
static int64_t find_game(zt_replay *rb, int64_t index)
{
    int64_t lo = 0, hi = rb->num_games - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (game_at(rb, mid)->start <= index)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* ---- repeats (repeat_weight, repeat_average) ----
 *
 * The window's positions counted by their hash, with their value targets
 * summed, in an open-addressed table (linear probing, deletion by backward
 * shift) of a power of two at least twice the capacity. The positions
 * [tracked_from, positions_seen) are counted: each game's positions as it
 * comes in, and those that leave the window, as it moves on or their game
 * is evicted, are taken out again. Caller holds the lock. */

/* A position's key: its hash, the least over the game's symmetries when
 * sampling augments (a mirror image is the same lesson). */
static uint64_t repeat_key(const zt_replay *rb, const void *state)
{
    const zt_game *g = rb->game;
    uint64_t key = g->hash(g, state);
    int syms = rb->cfg.augment ? g->num_symmetries : 1;
    for (int s = 1; s < syms; s++) {
        uint8_t image[ZT_MAX_STATE_BYTES];
        g->sym_state(g, s, state, image);
        uint64_t h = g->hash(g, image);
        if (h < key) key = h;
    }
    return key;
}

/* The slot of key, or the empty slot where it would go. */
static repeat_slot *repeat_slot_of(const zt_replay *rb, uint64_t key)
{
    size_t i = (size_t)zt_hash_mix(key) & rb->repeat_mask;
    while (rb->repeats[i].count != 0 && rb->repeats[i].key != key) i = (i + 1) & rb->repeat_mask;
    return &rb->repeats[i];
}

static void repeat_remove(zt_replay *rb, repeat_slot *slot)
{
    size_t hole = (size_t)(slot - rb->repeats), i = hole;
    for (;;) {
        i = (i + 1) & rb->repeat_mask;
        if (rb->repeats[i].count == 0) break;
        size_t home = (size_t)zt_hash_mix(rb->repeats[i].key) & rb->repeat_mask;
        /* an entry may fill the hole unless its home lies in (hole, i] */
        if (((i - home) & rb->repeat_mask) >= ((i - hole) & rb->repeat_mask)) {
            rb->repeats[hole] = rb->repeats[i];
            hole = i;
        }
    }
    memset(&rb->repeats[hole], 0, sizeof rb->repeats[hole]);
}

/* The value target of a position: two players, the final result for the
 * player to move (at a chance state, for its observer: game.h); one
 * player, the points still to come, undiscounted (the final score less the
 * score banked in the position, on the value scale): the Monte Carlo
 * return-to-go, the quantity search backs up (q = reward + value, model.h),
 * read from the record and the game's return alone. */
static float outcome_for(const zt_game *g, const void *state, float return0)
{
    if (zt_game_num_players(g) == 1) return return0 - zt_game_score(g, state) / g->max_return;
    return zt_game_observer(g, state) == 0 ? return0 : -return0;
}

/* Counts (sign +1) or uncounts (-1) the stored positions [from, to). */
static void repeat_track(zt_replay *rb, int64_t from, int64_t to, int sign)
{
    for (int64_t gi = find_game(rb, from); gi < rb->num_games; gi++) {
        const game_entry *e = game_at(rb, gi);
        if (e->start >= to) break;
        const uint8_t *p = rb->ring + e->offset;
        for (int64_t i = e->start; i < e->start + e->length && i < to; i++) {
            size_t len = zt_record_length(&rb->layout, p, rb->layout.max_bytes);
            if (i >= from) {
                uint8_t state[ZT_MAX_STATE_BYTES];
                zt_record_view view;
                /* the records were checked when they came in */
                zt_status st = zt_record_decode(&rb->layout, rb->game, p, len, state, &view);
                ZT_ASSERT(st == ZT_OK);
                uint64_t key = repeat_key(rb, state);
                repeat_slot *slot = repeat_slot_of(rb, key);
                ZT_ASSERT(sign > 0 || slot->count > 0);
                float z = outcome_for(rb->game, state, e->return0);
                slot->key = key;
                slot->count += sign;
                slot->wins += sign * (z > 0);
                slot->draws += sign * (z == 0);
                slot->value_sum += sign * (double)z;
                if (slot->count == 0) repeat_remove(rb, slot);
            }
            p += len;
        }
    }
}

/* Uncounts the positions before `to` still counted. */
static void repeat_untrack_until(zt_replay *rb, int64_t to)
{
    if (!rb->repeats || to <= rb->tracked_from) return;
    repeat_track(rb, rb->tracked_from, to, -1);
    rb->tracked_from = to;
}

/* The table, empty, if the settings want one; false if out of memory. */
static bool repeats_alloc(zt_replay *rb)
{
    if (!(rb->cfg.repeat_weight > 0 || rb->cfg.repeat_average)) return true;
    size_t slots = 16;
    while (slots < 2 * (size_t)rb->cfg.capacity) slots *= 2;
    rb->repeats = calloc(slots, sizeof *rb->repeats);
    rb->repeat_mask = slots - 1;
    return rb->repeats != NULL;
}

/* The slot of the stored record p (len bytes), which the window holds. */
static const repeat_slot *repeat_lookup(const zt_replay *rb, const uint8_t *p, size_t len)
{
    uint8_t state[ZT_MAX_STATE_BYTES];
    zt_record_view view;
    zt_status st = zt_record_decode(&rb->layout, rb->game, p, len, state, &view);
    ZT_ASSERT(st == ZT_OK);
    const repeat_slot *slot = repeat_slot_of(rb, repeat_key(rb, state));
    ZT_ASSERT(slot->count > 0);
    return slot;
}

/* The positions sampled from: the newest zt_replay_window of them, at most
 * those stored. Caller holds the lock. */
static int64_t window_size(const zt_replay *rb)
{
    int64_t window = zt_replay_window(&rb->cfg, rb->positions_seen);
    return window < rb->positions ? window : rb->positions;
}

/* The first position of the sampling window. */
static int64_t window_from(const zt_replay *rb)
{
    return rb->positions_seen - window_size(rb);
}

/* Counts the window's positions into the empty table, if there is one. */
static void repeats_track_window(zt_replay *rb)
{
    if (!rb->repeats) return;
    rb->tracked_from = window_from(rb);
    repeat_track(rb, rb->tracked_from, rb->positions_seen, +1);
}

/* The counted positions made the window's again after a game came in (the
 * window's start only moves on with the settings in use, but any window
 * is followed). */
static void repeats_follow_window(zt_replay *rb)
{
    int64_t from = window_from(rb);
    if (from > rb->tracked_from) repeat_track(rb, rb->tracked_from, from, -1);
    if (from < rb->tracked_from) repeat_track(rb, from, rb->tracked_from, +1);
    rb->tracked_from = from;
}

zt_status zt_replay_new(const zt_game *g, const zt_replay_config *cfg, zt_replay **out)
{
    *out = NULL;
    ZT_TRY(check_config(cfg));
    zt_replay *rb = zt_xcalloc(1, sizeof *rb);
    rb->game = g;
    rb->cfg = *cfg;
    zt_record_layout_init(&rb->layout, g);
    if (rb->cfg.max_games == 0) rb->cfg.max_games = rb->cfg.capacity / 4 + 1;
    if (rb->cfg.arena_bytes == 0) rb->cfg.arena_bytes = default_ring_bytes(cfg, &rb->layout, g);
    rb->max_games = rb->cfg.max_games;
    rb->ring_bytes = rb->cfg.arena_bytes;
    /* Offsets are 32-bit: 4 GiB of records is some 150 million positions. */
    if (rb->ring_bytes > UINT32_MAX) {
        size_t bytes = rb->ring_bytes;
        free(rb);
        return zt_fail(ZT_ERR_INVALID, "replay ring of %zu bytes exceeds 4 GiB", bytes);
    }
    rb->ring = malloc(rb->ring_bytes ? rb->ring_bytes : 1);
    rb->games = calloc((size_t)rb->max_games, sizeof *rb->games);
    if (!rb->ring || !rb->games || !repeats_alloc(rb)) {
        free(rb->ring);
        free(rb->games);
        free(rb->repeats);
        free(rb);
        return zt_fail(ZT_ERR_NOMEM, "replay: no memory for %lld positions",
                       (long long)cfg->capacity);
    }
    pthread_mutex_init(&rb->mutex, NULL);
    *out = rb;
    return ZT_OK;
}

void zt_replay_free(zt_replay *rb)
{
    if (!rb) return;
    pthread_mutex_destroy(&rb->mutex);
    free(rb->ring);
    free(rb->games);
    free(rb->repeats);
    free(rb);
}

const zt_game *zt_replay_game(const zt_replay *rb)
{
    return rb->game;
}

const zt_replay_config *zt_replay_get_config(const zt_replay *rb)
{
    return &rb->cfg;
}

zt_status zt_replay_set_sampling(zt_replay *rb, double surprise_weight, double repeat_weight,
                                 bool repeat_average)
{
    zt_replay_config c = rb->cfg;
    c.surprise_weight = surprise_weight;
    c.repeat_weight = repeat_weight;
    c.repeat_average = repeat_average;
    ZT_TRY(check_config(&c));
    pthread_mutex_lock(&rb->mutex);
    free(rb->repeats);
    rb->repeats = NULL;
    rb->cfg = c;
    bool ok = repeats_alloc(rb);
    if (ok) {
        repeats_track_window(rb);
    } else {
        rb->cfg.repeat_weight = 0;
        rb->cfg.repeat_average = false;
    }
    pthread_mutex_unlock(&rb->mutex);
    if (!ok) return zt_fail(ZT_ERR_NOMEM, "replay: no memory to count the window's repeats");
    return ZT_OK;
}

/* What a game's `length` records at p add to the buffer's counters: its
 * policy targets and the sum of its surprise bytes, from their headers. */
static void tally_records(zt_replay *rb, const uint8_t *p, uint32_t length, int64_t *targets,
                          int64_t *surprise)
{
    *targets = *surprise = 0;
    for (uint32_t i = 0; i < length; i++) {
        size_t len = zt_record_length(&rb->layout, p, rb->layout.max_bytes);
        *targets += p[0] & ZT_REPLAY_FULL_SEARCH;
        *surprise += zt_record_surprise(p, len);
        p += len;
    }
}

static void evict_oldest(zt_replay *rb)
{
    game_entry *e = game_at(rb, 0);
    repeat_untrack_until(rb, e->start + e->length);
    int64_t targets, surprise;
    tally_records(rb, rb->ring + e->offset, e->length, &targets, &surprise);
    rb->positions -= e->length;
    rb->record_bytes -= e->bytes;
    rb->policy_targets -= targets;
    rb->surprise_sum -= surprise;
    rb->first_game = (rb->first_game + 1) % rb->max_games;
    rb->num_games--;
}

/* Where `bytes` contiguous bytes go, evicting the oldest games until they
 * fit. Games never wrap: live records are [tail, head) or, once wrapped,
 * [tail, end of the last game) and [0, head). */
static size_t make_room(zt_replay *rb, size_t bytes)
{
    for (;;) {
        if (rb->num_games == 0) return 0;
        size_t tail = game_at(rb, 0)->offset;
        if (tail < rb->head) {
            if (rb->head + bytes <= rb->ring_bytes) return rb->head;
            if (bytes <= tail) return 0;
        } else if (rb->head + bytes <= tail) {
            return rb->head;
        }
        evict_oldest(rb);
    }
}

zt_status zt_replay_add_game(zt_replay *rb, const zt_replay_traj *t, float return0,
                             uint64_t *game_id)
{
    ZT_ASSERT(t->game == rb->game || strcmp(t->game->title, rb->game->title) == 0);
    if (t->length == 0) return zt_fail(ZT_ERR_INVALID, "replay: a game with no positions");
    if (t->length > rb->cfg.capacity || t->used > rb->ring_bytes)
        return zt_fail(ZT_ERR_INVALID,
                       "replay: a game of %d positions (%zu bytes) exceeds the capacity", t->length,
                       t->used);
    if (!isfinite(return0)) return zt_fail(ZT_ERR_INVALID, "replay: non-finite game return");
    pthread_mutex_lock(&rb->mutex);
    while (rb->num_games > 0 &&
           (rb->positions + t->length > rb->cfg.capacity || rb->num_games == rb->max_games))
        evict_oldest(rb);
    size_t at = make_room(rb, t->used);
    memcpy(rb->ring + at, t->bytes, t->used);
    rb->head = at + t->used;
    game_entry *e = &rb->games[(rb->first_game + rb->num_games) % rb->max_games];
    e->start = rb->positions_seen;
    e->offset = (uint32_t)at;
    e->bytes = (uint32_t)t->used;
    e->length = (uint32_t)t->length;
    e->return0 = return0;
    rb->surprise_sum += t->surprise_sum;
    rb->num_games++;
    rb->positions += t->length;
    rb->positions_seen += t->length;
    rb->policy_targets += t->full_searches;
    rb->record_bytes += t->used;
    if (game_id) *game_id = (uint64_t)rb->games_seen;
    rb->games_seen++;
    if (rb->repeats) {
        repeat_track(rb, e->start, rb->positions_seen, +1);
        repeats_follow_window(rb);
    }
    pthread_mutex_unlock(&rb->mutex);
    return ZT_OK;
}

size_t zt_replay_dense_bytes(const zt_game *g)
{
    size_t obs = (size_t)zt_game_obs_size(g);
    return sizeof(float) * (obs + (size_t)g->num_actions);
}

zt_replay_stats zt_replay_get_stats(zt_replay *rb)
{
    zt_replay_stats st;
    memset(&st, 0, sizeof st);
    pthread_mutex_lock(&rb->mutex);
    st.positions = rb->positions;
    st.games = rb->num_games;
    st.positions_seen = rb->positions_seen;
    st.games_seen = rb->games_seen;
    st.policy_targets = rb->policy_targets;
    st.record_bytes = rb->record_bytes;
    if (rb->positions > 0)
        st.surprise = (double)rb->surprise_sum / ZT_RECORD_SURPRISE_SCALE / (double)rb->positions;
    st.game_bytes = (size_t)rb->num_games * sizeof(game_entry);
    st.window = window_size(rb);
    st.allocated_bytes = sizeof *rb + rb->ring_bytes + (size_t)rb->max_games * sizeof(game_entry) +
                         (rb->repeats ? (rb->repeat_mask + 1) * sizeof *rb->repeats : 0);
    pthread_mutex_unlock(&rb->mutex);
    st.dense_bytes_per_position = (double)zt_replay_dense_bytes(rb->game);
    if (st.positions > 0) {
        st.bytes_per_position = (double)(st.record_bytes + st.game_bytes) / (double)st.positions;
        st.saving = 1 - st.bytes_per_position / st.dense_bytes_per_position;
    }
    return st;
}

/* The record of absolute position `index` (stored) and its length. Records
 * are found by walking the game's records: each header gives its length. */
static const uint8_t *find_record(zt_replay *rb, int64_t index, int64_t *game, size_t *len)
{
    *game = find_game(rb, index);
    const game_entry *e = game_at(rb, *game);
    const uint8_t *p = rb->ring + e->offset;
    for (int64_t i = e->start; i < index; i++)
        p += zt_record_length(&rb->layout, p, rb->layout.max_bytes);
    *len = zt_record_length(&rb->layout, p, rb->layout.max_bytes);
    return p;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct values among n sorted in place. */
static int64_t count_distinct(uint64_t *v, int64_t n)
{
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    int64_t d = 1;
    for (int64_t i = 1; i < n; i++) d += v[i] != v[i - 1];
    return d;
}

zt_status zt_replay_get_diversity(zt_replay *rb, zt_replay_diversity *out)
{
    memset(out, 0, sizeof *out);
    zt_replay_stats st = zt_replay_get_stats(rb);
    if (st.window == 0) return ZT_OK;
    uint64_t *pos = zt_xmalloc((size_t)st.window * sizeof *pos);
    uint64_t *games = zt_xmalloc((size_t)st.window * sizeof *games);
    uint8_t state[ZT_MAX_STATE_BYTES];
    int64_t next = st.positions_seen - st.window, np = 0, ng = 0;
    bool two_players = zt_game_num_players(rb->game) == 2;
    zt_status status = ZT_OK;
    while (status == ZT_OK && next < st.positions_seen) {
        pthread_mutex_lock(&rb->mutex);
        int64_t first = rb->positions_seen - rb->positions;
        if (next < first) next = first; /* evicted meanwhile: the window moved on */
        int64_t gi = find_game(rb, next);
        const game_entry *e = game_at(rb, gi);
        const uint8_t *p = rb->ring + e->offset;
        uint64_t seq = 0x9e3779b97f4a7c15ULL;
        for (int64_t i = e->start; i < e->start + e->length; i++) {
            size_t len = zt_record_length(&rb->layout, p, rb->layout.max_bytes);
            if (i >= next && np < st.window) {
                zt_record_view view;
                status = zt_record_decode(&rb->layout, rb->game, p, len, state, &view);
                if (status != ZT_OK) break;
                uint64_t h = rb->game->hash(rb->game, state);
                pos[np++] = h;
                seq = zt_hash_mix(seq ^ h);
            }
            p += len;
        }
        next = e->start + e->length;
        float r0 = e->return0;
        pthread_mutex_unlock(&rb->mutex);
        games[ng++] = seq;
        if (two_players) out->outcomes[r0 > 0 ? 0 : r0 == 0 ? 1 : 2]++;
    }
    if (status == ZT_OK) {
        out->positions = np;
        out->distinct_positions = count_distinct(pos, np);
        out->games = ng;
        out->distinct_games = count_distinct(games, ng);
    } else {
        memset(out->outcomes, 0, sizeof out->outcomes);
    }
    free(pos);
    free(games);
    return status;
}

void zt_replay_diversity_format(const zt_replay_diversity *d, char *buf, size_t cap)
{
    int w = snprintf(
        buf, cap, "%lld positions, %.1f %% distinct; %lld games, %.1f %% distinct",
        (long long)d->positions,
        d->positions ? 100.0 * (double)d->distinct_positions / (double)d->positions : 0.0,
        (long long)d->games, d->games ? 100.0 * (double)d->distinct_games / (double)d->games : 0.0);
    double n = (double)(d->outcomes[0] + d->outcomes[1] + d->outcomes[2]);
    if (w < 0 || (size_t)w >= cap || n == 0) return;
    snprintf(buf + w, cap - (size_t)w, "; first won %.1f %%, drawn %.1f %%, second won %.1f %%",
             100.0 * (double)d->outcomes[0] / n, 100.0 * (double)d->outcomes[1] / n,
             100.0 * (double)d->outcomes[2] / n);
}

zt_status zt_replay_get(zt_replay *rb, int64_t index, zt_replay_position *pos, float *policy)
{
    pthread_mutex_lock(&rb->mutex);
    int64_t first = rb->positions_seen - rb->positions;
    if (index < first || index >= rb->positions_seen) {
        pthread_mutex_unlock(&rb->mutex);
        return zt_fail(ZT_ERR_INVALID, "replay: position %lld is not stored (%lld..%lld)",
                       (long long)index, (long long)first, (long long)rb->positions_seen - 1);
    }
    int64_t game;
    size_t len;
    const uint8_t *p = find_record(rb, index, &game, &len);
    const game_entry *e = game_at(rb, game);
    memset(pos, 0, sizeof *pos);
    pos->game_id = (uint64_t)(rb->games_seen - rb->num_games + game);
    pos->ply = (int)(index - e->start);
    float return0 = e->return0;
    zt_record_view view;
    zt_status st = zt_record_decode(&rb->layout, rb->game, p, len, pos->state, &view);
    pthread_mutex_unlock(&rb->mutex);
    ZT_TRY(st);
    pos->flags = view.flags & ZT_REPLAY_FULL_SEARCH;
    pos->root_value = view.root_value;
    pos->action = view.action;
    pos->reward = view.reward;
    pos->reanalysed = (view.flags & RECORD_REANALYSED) != 0;
    pos->surprise = view.surprise / ZT_RECORD_SURPRISE_SCALE;
    pos->outcome = outcome_for(rb->game, pos->state, return0);
    if (policy) {
        memset(policy, 0, sizeof(float) * (size_t)rb->game->num_actions);
        for (int i = 0; i < view.num_pairs; i++)
            policy[view.actions[i]] = (float)view.weights[i] / (float)ZT_REPLAY_WEIGHT_SUM;
    }
    return ZT_OK;
}

zt_status zt_replay_refresh(zt_replay *rb, int64_t index, const float *policy, float root_value,
                            double *l1, bool *had_policy)
{
    ZT_ASSERT(isfinite(root_value));
    pthread_mutex_lock(&rb->mutex);
    int64_t first = rb->positions_seen - rb->positions;
    if (index < first || index >= rb->positions_seen) {
        pthread_mutex_unlock(&rb->mutex);
        return zt_fail(ZT_ERR_NOT_FOUND, "replay: position %lld is no longer stored",
                       (long long)index);
    }
    int64_t game;
    size_t len;
    /* the ring is written only here and in zt_replay_add_game, both under
     * the lock; a record keeps its length, so the walk stays valid */
    uint8_t *p = (uint8_t *)find_record(rb, index, &game, &len);
    bool has = (p[0] & ZT_REPLAY_FULL_SEARCH) != 0;
    double d = zt_record_refit(&rb->layout, rb->game, p, len, policy, root_value);
    pthread_mutex_unlock(&rb->mutex);
    if (l1) *l1 = d;
    if (had_policy) *had_policy = has;
    return ZT_OK;
}

/* ---- sampling ---- */

/* What phase one copies per row, ahead of the record bytes: the first
 * record's length, and with an unroll how many records of the game follow
 * it back to back (steps, 1 .. K + 1) and their bytes in all. */
typedef struct row_head {
    size_t len;
    float return0;
    /* repeat_average: the value target and the shares of wins and draws
     * over the position's occurrences in the window (count 0: not averaged) */
    int32_t count;
    float mean_value, wins, draws, losses;
    int32_t steps;
    bool last; /* the game's last record is the row's last */
    size_t bytes;
} row_head;

/* Carves `bytes` (cache-line aligned) out of a block being laid out; with
 * base NULL it only measures. */
static void *carve(uint8_t *base, size_t *at, size_t bytes)
{
    void *p = base ? base + *at : NULL;
    *at += (bytes + ZT_CACHE_LINE - 1) & ~(size_t)(ZT_CACHE_LINE - 1);
    return p;
}

static size_t lay_out(zt_replay_batch *b, uint8_t *base, bool wdl, bool next_obs, bool turns,
                      bool labels)
{
    size_t B = (size_t)b->size, A = (size_t)b->num_actions, at = 0;
    b->obs = carve(base, &at, B * (size_t)b->obs_size * sizeof(float));
    b->policy = carve(base, &at, B * A * sizeof(float));
    b->legal = carve(base, &at, B * A);
    b->policy_weight = carve(base, &at, B * sizeof(float));
    b->value = carve(base, &at, B * sizeof(float));
    b->root_value = carve(base, &at, B * sizeof(float));
    b->reanalysed = carve(base, &at, B * sizeof(float));
    b->wdl = wdl ? carve(base, &at, B * 3 * sizeof(float)) : NULL;
    b->index = carve(base, &at, B * sizeof(int64_t));
    b->sym = carve(base, &at, B * sizeof(int32_t));
    if (b->unroll > 0) {
        size_t K = (size_t)b->unroll;
        b->u_policy = carve(base, &at, B * (K + 1) * A * sizeof(float));
        b->u_mask = carve(base, &at, B * (K + 1));
        b->u_value = carve(base, &at, B * (K + 1) * sizeof(float));
        b->u_action = carve(base, &at, B * K * sizeof(int32_t));
        b->u_reward = carve(base, &at, B * K * sizeof(float));
        if (next_obs) {
            b->u_next_obs = carve(base, &at, B * K * (size_t)b->obs_size * sizeof(float));
            b->u_chance_mask = carve(base, &at, B * K);
        }
        if (turns) b->u_turn = carve(base, &at, B * K * sizeof(float));
        if (labels) b->u_chance_code = carve(base, &at, B * K * sizeof(int32_t));
    }
    b->scratch_ = carve(base, &at, B * b->scratch_stride_);
    return at;
}

zt_status zt_replay_batch_init(zt_replay_batch *b, const zt_game *g, int size, bool wdl)
{
    return zt_replay_batch_init_unroll(b, g, size, wdl, NULL);
}

zt_status zt_replay_batch_init_unroll(zt_replay_batch *b, const zt_game *g, int size, bool wdl,
                                      const zt_replay_unroll *u)
{
    int unroll = u ? u->steps : 0, td = u && unroll > 0 ? u->td_steps : 0;
    bool next_obs = u && unroll > 0 && u->next_obs, turns = u && unroll > 0 && u->turns;
    bool labels = u && unroll > 0 && u->chance_labels;
    memset(b, 0, sizeof *b);
    ZT_ASSERT(size >= 1 && unroll >= 0 && unroll <= ZT_REPLAY_MAX_UNROLL && td >= 0 &&
              td <= ZT_REPLAY_MAX_TD);
    b->size = size;
    b->unroll = unroll;
    b->td_steps = td;
    b->discount = u && unroll > 0 && u->discount > 0 ? u->discount : 1.0f;
    b->outcome_reward = u && unroll > 0 && u->outcome_reward;
    if (b->outcome_reward && zt_game_num_players(g) != 2)
        return zt_fail(ZT_ERR_INVALID,
                       "replay: outcome rewards are for two-player games (%s has %d player)",
                       g->title, zt_game_num_players(g));
    if (!(b->discount > 0 && b->discount <= 1) ||
        (b->discount < 1 && (td == 0 || zt_game_num_players(g) != 1)))
        return zt_fail(ZT_ERR_INVALID,
                       "replay: a discount (%g) needs a one-player game and td_steps > 0",
                       (double)b->discount);
    b->obs_size = zt_game_obs_size(g);
    b->num_actions = g->num_actions;
    zt_record_layout l;
    zt_record_layout_init(&l, g);
    /* the row's record, the K that follow, and n more for the bootstrap */
    b->scratch_stride_ =
        (sizeof(row_head) + (size_t)(unroll + td + 1) * l.max_bytes + 7) & ~(size_t)7;
    size_t bytes = lay_out(b, NULL, wdl, next_obs, turns, labels);
    b->owned_ = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
    if (!b->owned_) return zt_fail(ZT_ERR_NOMEM, "replay: no memory for a batch of %d", size);
    lay_out(b, b->owned_, wdl, next_obs, turns, labels);
    return ZT_OK;
}

void zt_replay_batch_free(zt_replay_batch *b)
{
    zt_aligned_free(b->owned_);
    memset(b, 0, sizeof *b);
}

/* Uniform in [0, n) for n that may exceed 32 bits. */
static int64_t below64(zt_rng *rng, int64_t n)
{
    if (n <= (int64_t)UINT32_MAX) return zt_rng_below(rng, (uint32_t)n);
    uint64_t limit = UINT64_MAX - UINT64_MAX % (uint64_t)n, x;
    do x = zt_rng_u64(rng);
    while (x >= limit);
    return (int64_t)(x % (uint64_t)n);
}

/* Rebuilds row r of b from its copied record: observation and legal mask
 * of the symmetric position, the policy mapped through the same symmetry
 * (game.h: sym_action(a) in sym_state(s) is sym(apply(s, a))). */
static zt_status build_row(zt_replay *rb, zt_replay_batch *b, int r)
{
    const zt_game *g = rb->game;
    const uint8_t *row = b->scratch_ + (size_t)r * b->scratch_stride_;
    row_head h;
    memcpy(&h, row, sizeof h);
    uint8_t state[ZT_MAX_STATE_BYTES], sym_state[ZT_MAX_STATE_BYTES];
    zt_record_view view;
    ZT_TRY(zt_record_decode(&rb->layout, g, row + sizeof h, h.len, state, &view));
    int sym = b->sym[r];
    const void *seen = state;
    if (sym != 0) {
        g->sym_state(g, sym, state, sym_state);
        seen = sym_state;
    }
    size_t A = (size_t)b->num_actions;
    g->observe(g, seen, b->obs + (size_t)r * (size_t)b->obs_size);
    zt_game_legal_mask(g, seen, b->legal + (size_t)r * A);
    float *policy = b->policy + (size_t)r * A;
    memset(policy, 0, A * sizeof(float));
    for (int i = 0; i < view.num_pairs; i++) {
        int a = sym != 0 ? g->sym_action(g, sym, view.actions[i]) : view.actions[i];
        policy[a] = (float)view.weights[i] / (float)ZT_REPLAY_WEIGHT_SUM;
    }
    b->policy_weight[r] = (view.flags & ZT_REPLAY_FULL_SEARCH) ? 1.0f : 0.0f;
    float z = h.count > 0 ? h.mean_value : outcome_for(g, state, h.return0);
    /* the network learns values through the game's transform (game.h) */
    b->value[r] = zt_game_value_to_net(g, z);
    b->root_value[r] = zt_game_value_to_net(g, view.root_value);
    b->reanalysed[r] = (view.flags & RECORD_REANALYSED) ? 1.0f : 0.0f;
    if (b->wdl) {
        float *wdl = b->wdl + (size_t)r * 3;
        wdl[0] = h.count > 0 ? h.wins : z > 0;
        wdl[1] = h.count > 0 ? h.draws : z == 0;
        wdl[2] = h.count > 0 ? h.losses : z < 0;
    }
    return ZT_OK;
}

/* The value target of a step with position `state`, on the linear scale
 * (the caller applies the net's transform): the game's return, or with
 * `boot` (the record td_steps positions on, NULL where the game ends
 * sooner or td_steps is 0) the bootstrap from its root value (one player:
 * plus the points scored in between). */
static zt_status step_value(zt_replay *rb, const uint8_t *boot, float return0, const void *state,
                            float *z)
{
    const zt_game *g = rb->game;
    if (!boot) {
        *z = outcome_for(g, state, return0);
        return ZT_OK;
    }
    uint8_t later[ZT_MAX_STATE_BYTES];
    zt_record_view view;
    ZT_TRY(zt_record_decode(&rb->layout, g, boot,
                            zt_record_length(&rb->layout, boot, rb->layout.max_bytes), later,
                            &view));
    if (zt_game_num_players(g) == 1)
        *z = (zt_game_score(g, later) - zt_game_score(g, state)) / g->max_return + view.root_value;
    else
        *z = g->current_player(g, later) == g->current_player(g, state) ? view.root_value
                                                                        : -view.root_value;
    return ZT_OK;
}

/* A one-player game's discounted n-step return from step k of a row whose
 * `steps` records start at `rec`, their rewards in rewards[]: the rewards
 * of the moves from step k on, the i-th weighted gamma^i, up to n of them,
 * plus gamma^n times the root value of the record n on where the row has it
 * (the game goes on; it ends sooner otherwise). */
static zt_status discounted_value(zt_replay *rb, const zt_replay_batch *b, const float *rewards,
                                  int steps, int k, const uint8_t *boot, float *z)
{
    int n = b->td_steps;
    double sum = 0, w = 1;
    for (int i = 0; i < n && k + i < steps; i++, w *= b->discount) sum += w * rewards[k + i];
    if (boot && k + n < steps) {
        uint8_t later[ZT_MAX_STATE_BYTES];
        zt_record_view view;
        ZT_TRY(zt_record_decode(&rb->layout, rb->game, boot,
                                zt_record_length(&rb->layout, boot, rb->layout.max_bytes), later,
                                &view));
        sum += w * view.root_value;
    }
    *z = (float)sum;
    return ZT_OK;
}

static bool reaches(const zt_game *g, const uint8_t *s, const uint8_t *to, int depth);

/* The index of the first outcome of chance position `s` from which `to`
 * follows by up to `depth` more chance events, or -1. */
static int outcome_reaching(const zt_game *g, const uint8_t *s, const uint8_t *to, int depth)
{
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int n = g->chance_outcomes(g, s, outcomes, probs);
    for (int i = 0; i < n; i++) {
        uint8_t t[ZT_MAX_STATE_BYTES];
        memcpy(t, s, g->state_size);
        g->apply(g, t, outcomes[i]);
        if (reaches(g, t, to, depth)) return i;
    }
    return -1;
}

/* Whether `to` follows from `s` by up to `depth` more chance events. */
static bool reaches(const zt_game *g, const uint8_t *s, const uint8_t *to, int depth)
{
    if (memcmp(s, to, g->state_size) == 0) return true;
    if (depth == 0 || g->current_player(g, s) != ZT_CHANCE) return false;
    return outcome_reaching(g, s, to, depth - 1) >= 0;
}

int zt_replay_chance_code(const zt_game *g, int sym, const void *from, int action, const void *to)
{
    uint8_t s[ZT_MAX_STATE_BYTES], target[ZT_MAX_STATE_BYTES];
    if (sym != 0) {
        g->sym_state(g, sym, from, s);
        g->sym_state(g, sym, to, target);
        action = g->sym_action(g, sym, action);
    } else {
        memcpy(s, from, g->state_size);
        memcpy(target, to, g->state_size);
    }
    g->apply(g, s, action);
    if (g->current_player(g, s) != ZT_CHANCE) return memcmp(s, target, g->state_size) == 0 ? 0 : -1;
    int i = outcome_reaching(g, s, target, 2);
    return i < 0 ? -1 : 1 + i;
}

/* The unroll targets of row r (zt_replay_batch, "MuZero"). */
static zt_status build_unroll(zt_replay *rb, zt_replay_batch *b, int r)
{
    const zt_game *g = rb->game;
    const uint8_t *row = b->scratch_ + (size_t)r * b->scratch_stride_;
    row_head h;
    memcpy(&h, row, sizeof h);
    const uint8_t *p = row + sizeof h;
    int K = b->unroll, sym = b->sym[r], last_player = 0, A = b->num_actions, n = b->td_steps;
    size_t base = (size_t)r * (size_t)(K + 1);
    /* the previous step's position and action (unmapped), for the codes */
    uint8_t prev[ZT_MAX_STATE_BYTES];
    int prev_action = -1;
    /* outcome rewards: the row's last move ended the game (absorbing 0) */
    bool ended_by_move = false;
    /* the record td_steps on from step k's, walked along with it */
    const uint8_t *boot = NULL;
    if (n > 0 && n < h.steps) {
        boot = p;
        for (int j = 0; j < n; j++)
            boot += zt_record_length(&rb->layout, boot, rb->layout.max_bytes);
    }
    /* with a discount, every move's reward in the row (a one-player game) */
    float rewards[ZT_REPLAY_MAX_UNROLL + ZT_REPLAY_MAX_TD + 1];
    bool discounted = b->discount < 1;
    for (int j = 0, at = 0; discounted && j < h.steps; j++) {
        uint8_t st[ZT_MAX_STATE_BYTES];
        zt_record_view view;
        size_t len = zt_record_length(&rb->layout, p + at, rb->layout.max_bytes);
        ZT_TRY(zt_record_decode(&rb->layout, g, p + at, len, st, &view));
        rewards[j] = view.reward;
        at += (int)len;
    }
    for (int k = 0; k <= K; k++) {
        float *policy = b->u_policy + (base + (size_t)k) * (size_t)A;
        memset(policy, 0, (size_t)A * sizeof(float));
        int action = -1;
        float reward = 0;
        if (k < h.steps) {
            size_t len = zt_record_length(&rb->layout, p, rb->layout.max_bytes);
            uint8_t state[ZT_MAX_STATE_BYTES];
            zt_record_view view;
            ZT_TRY(zt_record_decode(&rb->layout, g, p, len, state, &view));
            p += len;
            for (int i = 0; i < view.num_pairs; i++) {
                int a = sym != 0 ? g->sym_action(g, sym, view.actions[i]) : view.actions[i];
                policy[a] = (float)view.weights[i] / (float)ZT_REPLAY_WEIGHT_SUM;
            }
            b->u_mask[base + k] = (view.flags & ZT_REPLAY_FULL_SEARCH) != 0;
            int player = g->current_player(g, state);
            /* did the turn pass on the way here (several moves by one
             * player, or a roll the opponent could not play)? */
            if (b->u_turn && k > 0) b->u_turn[(size_t)r * K + (size_t)(k - 1)] = player != last_player;
            last_player = player;
            if (b->u_chance_code && k > 0) {
                int code = zt_replay_chance_code(g, sym, prev, prev_action, state);
                if (code < 0)
                    return zt_fail(ZT_ERR_CORRUPT,
                                   "replay: no chance outcome leads to step %d of the unroll from "
                                   "position %lld",
                                   k, (long long)b->index[r]);
                b->u_chance_code[(size_t)r * K + (size_t)(k - 1)] = code;
            }
            if (b->u_chance_code) {
                memcpy(prev, state, g->state_size);
                prev_action = view.action;
            }
            if (b->u_next_obs && k > 0) {
                float *o = b->u_next_obs + ((size_t)r * K + (size_t)(k - 1)) * (size_t)b->obs_size;
                if (sym != 0) {
                    uint8_t seen[ZT_MAX_STATE_BYTES];
                    g->sym_state(g, sym, state, seen);
                    g->observe(g, seen, o);
                } else {
                    g->observe(g, state, o);
                }
                b->u_chance_mask[(size_t)r * K + (size_t)(k - 1)] = 1;
            }
            /* through the game's transform, as AlphaZero's targets
             * (build_row); identity for two players */
            float z;
            if (discounted)
                ZT_TRY(discounted_value(rb, b, rewards, h.steps, k, boot, &z));
            else
                ZT_TRY(step_value(rb, k + n < h.steps ? boot : NULL, h.return0, state, &z));
            if (boot && k + n + 1 < h.steps)
                boot += zt_record_length(&rb->layout, boot, rb->layout.max_bytes);
            b->u_value[base + k] = zt_game_value_to_net(g, z);
            if (view.action < 0 && k + 1 < h.steps)
                return zt_fail(ZT_ERR_CORRUPT,
                               "replay position without the action taken: a muzero run needs "
                               "games recorded with their actions");
            if (view.action >= 0)
                action = sym != 0 ? g->sym_action(g, sym, view.action) : view.action;
            /* the reward head learns rewards through the value transform
             * too (the model reads both back with zt_game_value_from_net) */
            reward = zt_game_value_to_net(g, view.reward);
            if (b->outcome_reward && h.last && k == h.steps - 1 && view.action >= 0) {
                uint8_t after[ZT_MAX_STATE_BYTES];
                memcpy(after, state, g->state_size);
                g->apply(g, after, view.action);
                if (g->current_player(g, after) == ZT_TERMINAL) {
                    ended_by_move = true;
                    reward = outcome_for(g, state, h.return0);
                }
            }
        } else if (zt_game_num_players(g) == 1) {
            /* absorbing, one player: nothing more to come, and no reward */
            b->u_mask[base + k] = 0;
            b->u_value[base + k] = 0;
        } else {
            /* absorbing: turns go on alternating after the last position;
             * with outcome rewards the move that ended it took the outcome */
            b->u_mask[base + k] = 0;
            int player = (k - (h.steps - 1)) % 2 == 0 ? last_player : 1 - last_player;
            b->u_value[base + k] = ended_by_move ? 0.0f : player == 0 ? h.return0 : -h.return0;
        }
        if (b->u_turn && k > 0 && k >= h.steps) b->u_turn[(size_t)r * K + (size_t)(k - 1)] = 1;
        if (b->u_chance_code && k > 0 && k >= h.steps)
            b->u_chance_code[(size_t)r * K + (size_t)(k - 1)] = 0;
        if (b->u_next_obs && k > 0 && k >= h.steps) {
            /* past the end: the last position's observation, no code target */
            size_t at = (size_t)r * K + (size_t)(k - 1), obs = (size_t)b->obs_size;
            const float *last = k == 1 ? b->obs + (size_t)r * obs : b->u_next_obs + (at - 1) * obs;
            memcpy(b->u_next_obs + at * obs, last, obs * sizeof(float));
            b->u_chance_mask[at] = 0;
        }
        if (k == K) break;
        if (action < 0)
            action = (int)(zt_hash_mix((uint64_t)b->index[r] * 64 + (uint64_t)k) % (uint64_t)A);
        b->u_action[(size_t)r * K + k] = action;
        b->u_reward[(size_t)r * K + k] = reward;
    }
    return ZT_OK;
}

zt_status zt_replay_sample(zt_replay *rb, zt_rng *rng, zt_replay_batch *b)
{
    const zt_game *g = rb->game;
    ZT_ASSERT(b->num_actions == g->num_actions && b->obs_size == zt_game_obs_size(g));
    pthread_mutex_lock(&rb->mutex);
    if (rb->positions == 0) {
        pthread_mutex_unlock(&rb->mutex);
        return zt_fail(ZT_ERR_INVALID, "replay buffer is empty: nothing to sample");
    }
    int64_t window = window_size(rb), from = window_from(rb);
    int syms = rb->cfg.augment ? g->num_symmetries : 1;
    /* Surprise weighting (replay.h): a position is drawn with probability
     * proportional to (1 - a) + a min(s / mean s, CAP) (without surprises
     * stored, uniformly), times c^-rw for one that occurs c times in the
     * window (repeat_weight), by rejection against the largest weight. */
    double a = rb->cfg.surprise_weight, rw = rb->cfg.repeat_weight;
    bool by_surprise = a > 0 && rb->surprise_sum > 0;
    bool weighted = by_surprise || rw > 0;
    double mean = by_surprise ? (double)rb->surprise_sum / (double)rb->positions : 1;
    double wmax = by_surprise ? (1 - a) + a * ZT_REPLAY_SURPRISE_CAP : 1;
    /* Phase one, under the lock: draw and copy the records out, so that
     * actors appending games wait only for memcpy's, not for observations. */
    for (int r = 0; r < b->size; r++) {
        int64_t index = from + below64(rng, window), game;
        row_head h;
        const uint8_t *p = find_record(rb, index, &game, &h.len);
        /* after ZT_REPLAY_SURPRISE_TRIES rejections, the heaviest drawn */
        double best_w = -1;
        int64_t best_index = index;
        /* the drawn record's slot, looked up once (NULL: not yet) */
        const repeat_slot *slot = NULL;
        for (int tries = 1; weighted; tries++) {
            double w = 1;
            if (by_surprise) {
                double ratio = zt_record_surprise(p, h.len) / mean;
                w = (1 - a) + a * (ratio < ZT_REPLAY_SURPRISE_CAP ? ratio : ZT_REPLAY_SURPRISE_CAP);
            }
            if (rw > 0) {
                slot = repeat_lookup(rb, p, h.len);
                w *= pow(slot->count, -rw);
            }
            if (zt_rng_uniform(rng) * wmax < w) break;
            if (w > best_w) {
                best_w = w;
                best_index = index;
            }
            if (tries == ZT_REPLAY_SURPRISE_TRIES) {
                index = best_index;
                slot = NULL;
                p = find_record(rb, index, &game, &h.len);
                break;
            }
            index = from + below64(rng, window);
            p = find_record(rb, index, &game, &h.len);
        }
        b->index[r] = index;
        b->sym[r] = syms > 1 ? (int32_t)zt_rng_below(rng, (uint32_t)syms) : 0;
        const game_entry *e = game_at(rb, game);
        h.return0 = e->return0;
        h.count = 0;
        if (rb->cfg.repeat_average) {
            if (!slot) slot = repeat_lookup(rb, p, h.len);
            double c = slot->count;
            h.count = slot->count;
            h.mean_value = (float)(slot->value_sum / c);
            h.wins = (float)(slot->wins / c);
            h.draws = (float)(slot->draws / c);
            h.losses = (float)((slot->count - slot->wins - slot->draws) / c);
        }
        h.steps = 1;
        h.bytes = h.len;
        /* the records of the unroll follow in the game's contiguous bytes */
        int64_t left = e->start + e->length - index - 1;
        for (int k = 0; k < b->unroll + b->td_steps && k < left; k++) {
            h.bytes += zt_record_length(&rb->layout, p + h.bytes, rb->layout.max_bytes);
            h.steps++;
        }
        h.last = left <= b->unroll + b->td_steps;
        uint8_t *row = b->scratch_ + (size_t)r * b->scratch_stride_;
        memcpy(row, &h, sizeof h);
        memcpy(row + sizeof h, p, h.bytes);
    }
    pthread_mutex_unlock(&rb->mutex);
    for (int r = 0; r < b->size; r++) {
        ZT_TRY(build_row(rb, b, r));
        if (b->unroll > 0) ZT_TRY(build_unroll(rb, b, r));
    }
    return ZT_OK;
}

/* ---- checkpoint format ----
 *
 * All integers little-endian.
 *   "ZTREPLAY" | u32 version | u64 total bytes (this blob)
 *   u16 title length | title | u32 compact_size | u32 num_actions
 *   i64 capacity | i64 max_games | u64 arena_bytes | f64 c, alpha, beta | u8 augment
 *   f64 surprise_weight (from version 2; version 1 files load with 0)
 *   f64 repeat_weight | u8 repeat_average (from version 3; before, 0)
 *   i64 positions_seen | i64 games_seen | i64 games stored
 *   per game: i64 start | u32 length | u32 bytes | f32 return0
 *   u64 record bytes | the records of every game, oldest first
 *   u64 checksum (zt_hash_bytes of everything before it)
 * The ring's physical layout is not saved: a loaded buffer holds the same
 * games and records, packed from offset 0, and samples identically. */

#define REPLAY_MAGIC "ZTREPLAY"
#define REPLAY_VERSION 3u

typedef struct writer {
    uint8_t *p;
    size_t len, cap;
} writer;

static void put_bytes(writer *w, const void *data, size_t n)
{
    w->p = zt_xreserve(w->p, &w->cap, w->len + n);
    memcpy(w->p + w->len, data, n);
    w->len += n;
}

static void put_le(writer *w, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, (size_t)bytes);
}

static void put_f64(writer *w, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_le(w, v, 8);
}

static void put_f32(writer *w, float f)
{
    uint32_t v;
    memcpy(&v, &f, sizeof v);
    put_le(w, v, 4);
}

zt_status zt_replay_serialize(zt_replay *rb, uint8_t **data, size_t *len)
{
    writer w = {0};
    const zt_game *g = rb->game;
    pthread_mutex_lock(&rb->mutex);
    put_bytes(&w, REPLAY_MAGIC, 8);
    put_le(&w, REPLAY_VERSION, 4);
    size_t total_at = w.len;
    put_le(&w, 0, 8);
    size_t title_len = strlen(g->title);
    put_le(&w, title_len, 2);
    put_bytes(&w, g->title, title_len);
    put_le(&w, g->compact_size, 4);
    put_le(&w, (uint64_t)g->num_actions, 4);
    put_le(&w, (uint64_t)rb->cfg.capacity, 8);
    put_le(&w, (uint64_t)rb->cfg.max_games, 8);
    put_le(&w, rb->cfg.arena_bytes, 8);
    put_f64(&w, rb->cfg.window_c);
    put_f64(&w, rb->cfg.window_alpha);
    put_f64(&w, rb->cfg.window_beta);
    put_le(&w, rb->cfg.augment, 1);
    put_f64(&w, rb->cfg.surprise_weight);
    put_f64(&w, rb->cfg.repeat_weight);
    put_le(&w, rb->cfg.repeat_average, 1);
    put_le(&w, (uint64_t)rb->positions_seen, 8);
    put_le(&w, (uint64_t)rb->games_seen, 8);
    put_le(&w, (uint64_t)rb->num_games, 8);
    for (int64_t i = 0; i < rb->num_games; i++) {
        const game_entry *e = game_at(rb, i);
        put_le(&w, (uint64_t)e->start, 8);
        put_le(&w, e->length, 4);
        put_le(&w, e->bytes, 4);
        put_f32(&w, e->return0);
    }
    put_le(&w, rb->record_bytes, 8);
    for (int64_t i = 0; i < rb->num_games; i++) {
        const game_entry *e = game_at(rb, i);
        put_bytes(&w, rb->ring + e->offset, e->bytes);
    }
    pthread_mutex_unlock(&rb->mutex);
    uint64_t total = w.len + 8;
    for (int i = 0; i < 8; i++) w.p[total_at + (size_t)i] = (uint8_t)(total >> (8 * i));
    put_le(&w, zt_hash_bytes(w.p, w.len, ZT_REPLAY_HASH_SEED), 8);
    *data = w.p;
    *len = w.len;
    return ZT_OK;
}

typedef struct reader {
    const uint8_t *p;
    size_t len, at;
    bool short_read;
} reader;

static const uint8_t *take(reader *r, size_t n)
{
    if (r->short_read || n > r->len - r->at) {
        r->short_read = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->at;
    r->at += n;
    return p;
}

static uint64_t get_le(reader *r, int bytes)
{
    const uint8_t *p = take(r, (size_t)bytes);
    uint64_t v = 0;
    for (int i = 0; p && i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static double get_f64(reader *r)
{
    uint64_t v = get_le(r, 8);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

static float get_f32(reader *r)
{
    uint32_t v = (uint32_t)get_le(r, 4);
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

/* Checks the games' records, packs them into rb from offset 0 and sets the
 * counters. */
static zt_status load_games(zt_replay *rb, reader *r, int64_t num_games, int64_t positions_seen,
                            int64_t games_seen)
{
    if (num_games < 0 || num_games > rb->max_games || num_games > games_seen)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: %lld games stored (at most %lld)",
                       (long long)num_games, (long long)rb->max_games);
    int64_t expect_start = 0;
    size_t bytes_sum = 0;
    for (int64_t i = 0; i < num_games; i++) {
        game_entry *e = &rb->games[i];
        e->start = (int64_t)get_le(r, 8);
        e->length = (uint32_t)get_le(r, 4);
        e->bytes = (uint32_t)get_le(r, 4);
        e->return0 = get_f32(r);
        if (r->short_read) break;
        if (i == 0) expect_start = e->start;
        if (e->start != expect_start || e->length == 0 || !isfinite(e->return0))
            return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: game %lld is inconsistent",
                           (long long)i);
        expect_start += e->length;
        e->offset = (uint32_t)bytes_sum;
        bytes_sum += e->bytes;
        if (bytes_sum > rb->ring_bytes)
            return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: records exceed the ring's %zu bytes",
                           rb->ring_bytes);
    }
    uint64_t record_bytes = get_le(r, 8);
    if (r->short_read) return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: truncated game table");
    if (num_games > 0 && expect_start != positions_seen)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: games end at position %lld, not %lld",
                       (long long)expect_start, (long long)positions_seen);
    if (record_bytes != bytes_sum)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: %llu record bytes, games hold %zu",
                       (unsigned long long)record_bytes, bytes_sum);
    const uint8_t *records = take(r, bytes_sum);
    if (!records) return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: truncated records");
    int64_t positions = 0, targets = 0, surprise = 0;
    for (int64_t i = 0; i < num_games; i++) {
        const game_entry *e = &rb->games[i];
        const uint8_t *p = records + e->offset;
        size_t left = e->bytes;
        for (uint32_t k = 0; k < e->length; k++) {
            size_t len = zt_record_length(&rb->layout, p, left);
            if (len == 0)
                return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: bad record %u of game %lld", k,
                               (long long)i);
            uint8_t state[ZT_MAX_STATE_BYTES];
            zt_record_view view;
            zt_status st = zt_record_decode(&rb->layout, rb->game, p, len, state, &view);
            if (st != ZT_OK)
                return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: record %u of game %lld: %s", k,
                               (long long)i, zt_error_message());
            targets += view.flags & ZT_REPLAY_FULL_SEARCH;
            surprise += view.surprise;
            p += len;
            left -= len;
        }
        if (left != 0)
            return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: game %lld has %zu stray bytes",
                           (long long)i, left);
        positions += e->length;
    }
    if (positions > rb->cfg.capacity)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: %lld positions exceed the capacity %lld",
                       (long long)positions, (long long)rb->cfg.capacity);
    memcpy(rb->ring, records, bytes_sum);
    rb->first_game = 0;
    rb->num_games = num_games;
    rb->head = bytes_sum;
    rb->positions = positions;
    rb->positions_seen = positions_seen;
    rb->games_seen = games_seen;
    rb->policy_targets = targets;
    rb->surprise_sum = surprise;
    rb->record_bytes = bytes_sum;
    repeats_track_window(rb);
    return ZT_OK;
}

zt_status zt_replay_deserialize(const zt_game *g, const uint8_t *data, size_t len, zt_replay **out)
{
    *out = NULL;
    reader r = {data, len, 0, false};
    const uint8_t *magic = take(&r, 8);
    if (!magic || memcmp(magic, REPLAY_MAGIC, 8) != 0)
        return zt_fail(ZT_ERR_CORRUPT, "not a replay checkpoint (bad magic)");
    uint32_t version = (uint32_t)get_le(&r, 4);
    uint64_t total = get_le(&r, 8);
    if (r.short_read) return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint truncated in its header");
    /* version 1: the same without surprise_weight (0); 2: without the
     * repeats' settings (0, false) */
    if (version < 1 || version > REPLAY_VERSION)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint version %u (this program reads 1 to %u)",
                       version, REPLAY_VERSION);
    if (total > len)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint truncated: %zu of %llu bytes", len,
                       (unsigned long long)total);
    if (total < len)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint has %zu trailing bytes",
                       len - (size_t)total);
    if (total < r.at + 8) return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint too short");
    uint64_t stored_hash = 0;
    for (int i = 0; i < 8; i++) stored_hash |= (uint64_t)data[len - 8 + (size_t)i] << (8 * i);
    if (zt_hash_bytes(data, len - 8, ZT_REPLAY_HASH_SEED) != stored_hash)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint checksum mismatch (corrupt data)");
    r.len = len - 8;

    size_t title_len = (size_t)get_le(&r, 2);
    const uint8_t *title = take(&r, title_len);
    uint32_t compact = (uint32_t)get_le(&r, 4), actions = (uint32_t)get_le(&r, 4);
    if (r.short_read) return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint truncated in its header");
    if (title_len != strlen(g->title) || memcmp(title, g->title, title_len) != 0 ||
        compact != g->compact_size || actions != (uint32_t)g->num_actions)
        return zt_fail(ZT_ERR_INVALID, "replay checkpoint is for '%.*s', not '%s'", (int)title_len,
                       (const char *)title, g->title);
    zt_replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capacity = (int64_t)get_le(&r, 8);
    cfg.max_games = (int64_t)get_le(&r, 8);
    cfg.arena_bytes = (size_t)get_le(&r, 8);
    cfg.window_c = get_f64(&r);
    cfg.window_alpha = get_f64(&r);
    cfg.window_beta = get_f64(&r);
    uint64_t augment = get_le(&r, 1);
    cfg.surprise_weight = version >= 2 ? get_f64(&r) : 0.0;
    cfg.repeat_weight = version >= 3 ? get_f64(&r) : 0.0;
    uint64_t average = version >= 3 ? get_le(&r, 1) : 0;
    int64_t positions_seen = (int64_t)get_le(&r, 8);
    int64_t games_seen = (int64_t)get_le(&r, 8);
    int64_t num_games = (int64_t)get_le(&r, 8);
    if (r.short_read) return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint truncated in its header");
    cfg.augment = augment != 0;
    cfg.repeat_average = average != 0;
    if (augment > 1 || average > 1 || cfg.max_games < 1 || cfg.arena_bytes == 0 ||
        positions_seen < 0 || games_seen < 0 || check_config(&cfg) != ZT_OK)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: impossible settings or counters");
    /* Sizes come from the file: refuse what no buffer of ours would hold
     * before allocating it. */
    if ((uint64_t)num_games * 20 > len || cfg.arena_bytes > UINT32_MAX)
        return zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: sizes out of range");
    zt_replay *rb;
    ZT_TRY(zt_replay_new(g, &cfg, &rb));
    zt_status st = load_games(rb, &r, num_games, positions_seen, games_seen);
    if (st == ZT_OK && r.at != r.len)
        st = zt_fail(ZT_ERR_CORRUPT, "replay checkpoint: %zu unread bytes", r.len - r.at);
    if (st != ZT_OK) {
        zt_replay_free(rb);
        return st;
    }
    *out = rb;
    return ZT_OK;
}

zt_status zt_replay_save(zt_replay *rb, const char *path)
{
    uint8_t *data;
    size_t len;
    ZT_TRY(zt_replay_serialize(rb, &data, &len));
    zt_status st = zt_write_file_atomic(path, data, len);
    free(data);
    return st;
}

zt_status zt_replay_load(const zt_game *g, const char *path, zt_replay **out)
{
    char *data;
    size_t len;
    *out = NULL;
    ZT_TRY(zt_read_file(path, &data, &len));
    zt_status st = zt_replay_deserialize(g, (const uint8_t *)data, len, out);
    if (st != ZT_OK) st = zt_fail(st, "%s: %s", path, zt_error_message());
    free(data);
    return st;
}
