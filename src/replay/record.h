/* Internals of the replay layer: the byte layout of one record, shared by the
 * buffer (replay.c), its checkpoint format and the trajectory's byte form
 * (traj.c). Not part of the replay API.
 *
 * A record:
 *   flags    1 byte   ZT_REPLAY_FULL_SEARCH | RECORD_SPARSE
 *   count    1-2 bytes, little-endian base-128 varint: the number of stored
 *            weights (dense: legal actions - 1) or pairs (sparse); 0 when
 *            there is no policy
 *   state    g->compact_size bytes (g->encode)
 *   value    2 bytes, IEEE 754 half float, little-endian
 *   policy   dense: count uint16 weights of the legal actions in increasing
 *                   order, the last legal action's weight implied
 *            sparse: count actions (1 byte each if num_actions <= 256, else
 *                   2), then count - 1 uint16 weights, the last implied
 *   action   with RECORD_ACTION (MuZero runs): the action taken from this
 *            position (1 or 2 bytes as above), legal in it
 *   reward   with RECORD_REWARD (only beside RECORD_ACTION, only when not
 *            0): the reward of that move, IEEE half float
 *   surprise with RECORD_SURPRISE (only beside ZT_REPLAY_FULL_SEARCH, only
 *            when not 0): 1 byte, how far the search's policy moved from
 *            the net's prior, KL(policy || prior) in units of
 *            1 / ZT_RECORD_SURPRISE_SCALE nat, rounded and capped at 255
 *            (replay.h, surprise_weight). Always the record's last byte.
 * Weights sum to exactly ZT_REPLAY_WEIGHT_SUM. Records without the two
 * optional fields are the ones every earlier version wrote.
 * RECORD_REANALYSED marks a record whose policy and root value a reanalyse
 * search rewrote in place (zt_record_refit); its length never changes. */
#ifndef ZT_REPLAY_RECORD_H
#define ZT_REPLAY_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "game/game.h"

#define ZT_REPLAY_WEIGHT_SUM 65535u
#define RECORD_SPARSE 0x02u
#define RECORD_ACTION 0x04u
#define RECORD_REWARD 0x08u
#define RECORD_REANALYSED 0x10u
#define RECORD_SURPRISE 0x20u
#define RECORD_KNOWN_FLAGS                                                              \
    (ZT_REPLAY_FULL_SEARCH | RECORD_SPARSE | RECORD_ACTION | RECORD_REWARD | RECORD_REANALYSED | \
     RECORD_SURPRISE)
/* A stored surprise byte is min(255, round(KL * scale)): 1/32 nat steps,
 * capped near 8 nats (a search that puts all its weight on a move the net
 * gave 0.03 % is that surprised; sampling caps its weight well before). */
#define ZT_RECORD_SURPRISE_SCALE 32.0f
#define RECORD_MAX_COUNT 16383 /* two varint bytes */
/* Seed of the checkpoint checksum (zt_hash_bytes); tests forge checksums. */
#define ZT_REPLAY_HASH_SEED 0x7a7265706c6179ULL
/* ... and of a trajectory's byte form (traj.c). */
#define ZT_REPLAY_TRAJ_HASH_SEED 0x7a747472616a31ULL

typedef struct zt_record_layout {
    size_t compact_size;
    int num_actions;
    int action_bytes; /* 1 or 2 */
    size_t max_bytes; /* the longest record this game can produce */
} zt_record_layout;

void zt_record_layout_init(zt_record_layout *l, const zt_game *g);

/* Writes the record of (state, policy, value) at out (max_bytes available);
 * returns its length. policy may be NULL when !full_search. */
size_t zt_record_encode(const zt_record_layout *l, const zt_game *g, const void *state,
                        const float *policy, float root_value, bool full_search, uint8_t *out);

/* The same with the action taken from the position (action >= 0: stored,
 * legal in state; -1: none) and its reward (stored when not 0). */
size_t zt_record_encode_step(const zt_record_layout *l, const zt_game *g, const void *state,
                             const float *policy, float root_value, bool full_search, int action,
                             float reward, uint8_t *out);

/* The same with the search's surprise (>= 0, finite; stored when full_search
 * and it rounds to at least one unit). */
size_t zt_record_encode_full(const zt_record_layout *l, const zt_game *g, const void *state,
                             const float *policy, float root_value, bool full_search, int action,
                             float reward, float surprise, uint8_t *out);

/* The surprise byte of the record at p (len bytes, valid): 0 when none is
 * stored. Reads the flags and the last byte only. */
static inline uint8_t zt_record_surprise(const uint8_t *p, size_t len)
{
    return (p[0] & RECORD_SURPRISE) ? p[len - 1] : 0;
}

/* The length of the record at p from its header, or 0 if the header is
 * malformed or the record would run past `avail` bytes. */
size_t zt_record_length(const zt_record_layout *l, const uint8_t *p, size_t avail);

/* A record parsed back: the state decoded, and the policy as (action,
 * weight) pairs over the decoded state's actions (not symmetry-mapped). */
typedef struct zt_record_view {
    uint8_t flags;
    float root_value;
    int num_pairs;
    uint16_t actions[ZT_MAX_ACTIONS];
    uint16_t weights[ZT_MAX_ACTIONS];
    int action;   /* taken from the position, or -1 when not recorded */
    float reward; /* of that move (0 when not recorded) */
    uint8_t surprise; /* the stored surprise byte (0 when none) */
} zt_record_view;

/* Decodes the record at p (whose length is known to be valid) into state
 * and view, checking everything a corrupt record could get wrong:
 * ZT_ERR_CORRUPT naming the problem. */
zt_status zt_record_decode(const zt_record_layout *l, const zt_game *g, const uint8_t *p,
                           size_t len, void *state, zt_record_view *view);

/* Rewrites the record at p (len bytes, valid) in place with a fresh
 * search's policy (num_actions floats, positive sum over the legal
 * actions, the others ignored; unused for a record without a policy) and
 * root value, and marks it RECORD_REANALYSED. The length stays: a dense
 * policy is rewritten whole; a sparse one of P pairs keeps the P actions
 * the new policy weights most (ties to the lower action), renormalised, so
 * that the game's other records need not move. Returns the L1 distance
 * between the old and new stored policies (0 without a policy). */
double zt_record_refit(const zt_record_layout *l, const zt_game *g, uint8_t *p, size_t len,
                       const float *policy, float root_value);

/* Largest-remainder rounding of n non-negative weights (positive sum) to
 * integers summing exactly to ZT_REPLAY_WEIGHT_SUM; each within one unit of
 * its exact share. */
void zt_record_quantise(const double *w, int n, uint16_t *q);

uint16_t zt_record_half_from_float(float f);
float zt_record_half_to_float(uint16_t h);

/* A game on its way in (replay.h): its records back to back in `bytes`,
 * encoded as they were added. Shared by the buffer (replay.c) and the
 * trajectory's byte form (traj.c). */
struct zt_replay_traj {
    const zt_game *game;
    zt_record_layout layout;
    uint8_t *bytes;
    size_t used, capacity;
    int length, max_length;
    int full_searches;
    int64_t surprise_sum; /* of the records' surprise bytes */
};

#endif
