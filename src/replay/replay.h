/* The replay buffer (DESIGN.md §3): finished self-play games stored as
 * compact records in one byte ring, sampled uniformly (or in part by the
 * search's surprise: surprise_weight) over a window that grows with the
 * positions seen, with observations and targets rebuilt (and a
 * random symmetry applied) only for the positions sampled.
 *
 * A record (one position) is a flags byte, a count, the game's compact state
 * bytes (g->encode), the root value as an IEEE half float and the search
 * policy quantised to 16-bit weights summing to 65535, stored over the legal
 * actions in increasing order (the last weight implied) or as sparse
 * (action, weight) pairs, whichever is shorter. The outcome, game id and ply
 * live once per game in a table beside the ring. Positions searched with a
 * reduced budget (playout-cap randomisation, Wu 2019 "Accelerating
 * Self-Play Learning in Go" §3.1) store no policy: they are value targets
 * only.
 *
 * The caller owns what *_new / *_init return and frees it with the matching
 * *_free. The buffer is safe to append to and sample from on different
 * threads; the game is borrowed and must outlive it. */
#ifndef ZT_REPLAY_REPLAY_H
#define ZT_REPLAY_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"
#include "game/game.h"

/* Record flags. */
#define ZT_REPLAY_FULL_SEARCH 0x01u /* the policy is a training target */

/* ---- one game on its way in ---- */

/* A game's positions collected by an actor while it plays (the outcome is
 * known only at the end). Records are encoded as they are added; nothing is
 * allocated after zt_replay_traj_new. */
typedef struct zt_replay_traj zt_replay_traj;

zt_status zt_replay_traj_new(const zt_game *g, zt_replay_traj **out);
void zt_replay_traj_free(zt_replay_traj *t);
void zt_replay_traj_clear(zt_replay_traj *t);
int zt_replay_traj_length(const zt_replay_traj *t);
/* No room for another position: max_game_length of them, twice that for a
 * game with a chance observer (its chance states may be recorded too). */
bool zt_replay_traj_full(const zt_replay_traj *t);

/* Adds the position `state` (a player node) searched to `policy` (num_actions
 * floats, 0 on illegal actions, any positive scale) with root value
 * `root_value` for the player to move. With full_search false (a cheap
 * search) the policy is not stored and may be NULL. A chance state of a
 * game with a chance observer (game.h) may be added too, without policy or
 * action: a value target for its observer (net.chance_values). */
void zt_replay_traj_add(zt_replay_traj *t, const void *state, const float *policy, float root_value,
                        bool full_search);
/* The same with the action taken from the position (legal in it) and that
 * move's reward, as MuZero's unrolled training needs (record.h). */
void zt_replay_traj_add_step(zt_replay_traj *t, const void *state, const float *policy,
                             float root_value, bool full_search, int action, float reward);
/* The same with the search's surprise at the position (zt_replay_surprise;
 * stored with a full search only, for surprise-weighted sampling). */
void zt_replay_traj_add_surprise(zt_replay_traj *t, const void *state, const float *policy,
                                 float root_value, bool full_search, int action, float reward,
                                 float surprise);

/* How much a search's policy target (num_actions floats) moved from the
 * net's prior at its root (num_actions floats, the probabilities the
 * search expanded the root with): KL(policy || prior) in nats over the
 * actions legal_mask marks, both renormalised there, the prior floored at
 * 1e-6; 0 when either has no weight there. KataGo's "policy surprise"
 * (docs/KataGoMethods.md, "Policy Surprise Weighting"). */
float zt_replay_surprise(const zt_game *g, const uint8_t *legal_mask, const float *policy,
                         const float *prior);

/* The trajectory as bytes (traj.c), the form it travels in between processes
 * (an MPI sink) or to files: its compact records as they are, not float
 * planes. Layout, integers little-endian:
 *   "ZTTJ" | u8 version | u64 game fingerprint (hash of zt_game_spec)
 *   f32 return0 | u32 positions | u32 record bytes | the records (record.h)
 *   u64 checksum: zt_hash_bytes of everything before it. */

/* Bytes zt_replay_traj_serialize writes for t. */
size_t zt_replay_traj_serialized_size(const zt_replay_traj *t);
/* Writes t and player 0's return into buf (cap bytes) and the length into
 * *len. ZT_ERR_INVALID, with *len the size needed, if cap is too small. */
zt_status zt_replay_traj_serialize(const zt_replay_traj *t, float return0, uint8_t *buf, size_t cap,
                                   size_t *len);
/* Replaces the positions of t (made by zt_replay_traj_new for g) with those
 * of the len bytes at data, and sets *return0. Everything is checked before t
 * is touched: a truncated, damaged or foreign input leaves t unchanged and
 * returns ZT_ERR_CORRUPT naming the problem (ZT_ERR_INVALID for a well-formed
 * trajectory of another game). Never trusts a length or count in the input. */
zt_status zt_replay_traj_deserialize(const zt_game *g, const uint8_t *data, size_t len,
                                     zt_replay_traj *t, float *return0);

/* ---- the buffer ---- */

typedef struct zt_replay_config {
    int64_t capacity;   /* positions kept; the oldest games are evicted first */
    int64_t max_games;  /* games kept (0: capacity / 4) */
    size_t arena_bytes; /* bytes of the record ring (0: from the game's sizes) */
    /* Sampling window over the N positions seen, KataGo's power law (Wu
     * 2019, "Accelerating Self-Play Learning in Go", training appendix):
     * min(N, capacity, c (1 + beta ((N / c)^alpha - 1) / alpha)) once N > c,
     * else N (alpha 0: the limit c (1 + beta ln(N / c))). c = 0, or
     * alpha = beta = 1, give every stored position. */
    double window_c, window_alpha, window_beta;
    bool augment; /* a uniformly random symmetry per sampled position */
    /* Surprise-weighted sampling, a in [0, 1]: a position of the window is
     * drawn with probability proportional to
     * (1 - a) + a min(s / s_mean, ZT_REPLAY_SURPRISE_CAP), s its stored
     * surprise (zt_replay_traj_add_surprise; 0 without one) and s_mean the
     * mean over the stored positions: half uniform, half by surprise at
     * a = 0.5, as KataGo weighs its training rows (KataGo spreads the
     * weight within each game and writes rows that many times; here the
     * sampler draws by it over the whole window). 0 (the default):
     * uniform, the rng consumed exactly as without it. */
    double surprise_weight;
    /* Repeats: self-play that plays the same lines fills the window with
     * copies of a few positions (zt_replay_get_diversity). With w in
     * [0, 1] a position that occurs c times in the window (counted up to
     * the game's symmetries when augmenting) is drawn with weight c^-w,
     * its copies together c^(1 - w): w = 1 draws every distinct position
     * equally often. Combined with surprise_weight, the weights multiply.
     * 0 (the default): uniform, the rng consumed exactly as without it. */
    double repeat_weight;
    /* The value target of a drawn position (`value`, `wdl`) is the mean
     * over its occurrences in the window, not its own game's outcome
     * (CGZero keeps one sample per position with summed targets and a
     * count). MuZero's unrolled targets are left as they are. */
    bool repeat_average;
} zt_replay_config;

/* The largest weight a surprise earns, in units of the mean surprise, and
 * the rejection draws per row before the heaviest of them is kept (a
 * window without surprises, say, while older stored games have them). */
#define ZT_REPLAY_SURPRISE_CAP 8.0
#define ZT_REPLAY_SURPRISE_TRIES 64

/* capacity 2^20 positions, c = 250000, alpha 0.75, beta 0.4 (KataGo's
 * constants), max_games and arena_bytes from the game, augmentation on. */
void zt_replay_config_default(zt_replay_config *c);

typedef struct zt_replay zt_replay;

zt_status zt_replay_new(const zt_game *g, const zt_replay_config *cfg, zt_replay **out);
void zt_replay_free(zt_replay *rb);
const zt_game *zt_replay_game(const zt_replay *rb);
/* The settings in force (defaults resolved: max_games, arena_bytes). */
const zt_replay_config *zt_replay_get_config(const zt_replay *rb);
/* Draws from now on as these settings of zt_replay_config say (a loaded
 * checkpoint keeps the ones it was saved with): ZT_ERR_INVALID for a
 * weight out of range, ZT_ERR_NOMEM where the repeats' count does not fit;
 * the buffer then draws uniformly. */
zt_status zt_replay_set_sampling(zt_replay *rb, double surprise_weight, double repeat_weight,
                                 bool repeat_average);

/* Appends a finished game: its positions in t (which is left unchanged) and
 * the return of player 0 (zero-sum: player 1 gets the negation; one player:
 * the final score / max_return). Evicts the
 * oldest games to make room. ZT_ERR_INVALID if the game alone exceeds the
 * capacity. *game_id (may be NULL) receives the id given to it (0, 1, ...). */
zt_status zt_replay_add_game(zt_replay *rb, const zt_replay_traj *t, float return0,
                             uint64_t *game_id);

/* The window's size after n positions seen (at most the capacity). */
int64_t zt_replay_window(const zt_replay_config *cfg, int64_t n);

typedef struct zt_replay_stats {
    int64_t positions;      /* stored */
    int64_t games;          /* stored */
    int64_t positions_seen; /* ever added */
    int64_t games_seen;
    int64_t window;                  /* positions sampled from (the newest ones) */
    int64_t policy_targets;          /* stored positions with a full search */
    size_t record_bytes;             /* bytes of the stored records */
    size_t game_bytes;               /* bytes of the per-game table entries in use */
    size_t allocated_bytes;          /* everything the buffer holds */
    double bytes_per_position;       /* (record + game bytes) / positions */
    double dense_bytes_per_position; /* float32 observation + dense float policy */
    double saving;                   /* 1 - bytes_per_position / dense */
    double surprise;                 /* mean stored surprise per position, nats */
} zt_replay_stats;

zt_replay_stats zt_replay_get_stats(zt_replay *rb);

/* How varied the window is: how many of its positions and games are
 * repeats. Self-play whose moves vary little plays the same lines again
 * and again, and a window of N positions then teaches fewer than N. */
typedef struct zt_replay_diversity {
    int64_t positions;          /* in the window */
    int64_t distinct_positions; /* of them, distinct (by the game's hash) */
    int64_t games;              /* with positions in the window */
    int64_t distinct_games;     /* of them, distinct sequences of positions there */
    /* Two-player games: of those games, the ones the first player won, the
     * drawn ones and the ones the second won (by their final result); zeros
     * for one-player games. */
    int64_t outcomes[3];
} zt_replay_diversity;

/* Counts the window's distinct positions and games (exact up to 64-bit hash
 * collisions; positions that are mirror images count as two). Takes the
 * buffer's lock one game at a time, so actors may append meanwhile; it
 * allocates 16 bytes per window position for its work. */
zt_status zt_replay_get_diversity(zt_replay *rb, zt_replay_diversity *out);
/* "P positions, x % distinct; G games, y % distinct" and for two players
 * "; first won a %, drawn b %, second won c %", as the log, bench fit and
 * bench selfplay print it; ZT_REPLAY_DIVERSITY_TEXT bytes hold it. */
#define ZT_REPLAY_DIVERSITY_TEXT 192
void zt_replay_diversity_format(const zt_replay_diversity *d, char *buf, size_t cap);

/* What one position takes as float32 observation planes plus a dense float
 * policy: 4 * (H * W * C + num_actions). */
size_t zt_replay_dense_bytes(const zt_game *g);

/* One stored position, decoded: the position with absolute index `index`
 * (0 = the first ever added; stored ones are positions_seen - positions ..
 * positions_seen - 1). policy (num_actions floats, may be NULL) receives the
 * dequantised policy, all zero without a full search. */
typedef struct zt_replay_position {
    uint8_t state[ZT_MAX_STATE_BYTES];
    float root_value;
    float outcome; /* the final return of the player to move (one player:
                    * the points still to come, on the value scale) */
    uint8_t flags;
    uint64_t game_id;
    int ply; /* index of the position in its game */
    int action;   /* the action taken from it, or -1 when not recorded */
    float reward; /* that move's reward (0 when not recorded) */
    bool reanalysed; /* its targets were refreshed (zt_replay_refresh) */
    float surprise;  /* the stored surprise, nats (0 when none) */
} zt_replay_position;

zt_status zt_replay_get(zt_replay *rb, int64_t index, zt_replay_position *pos, float *policy);

/* Reanalyse (replay/reanalyse.h): rewrites the stored targets of position
 * `index` in place with a fresh search's policy (num_actions floats, 0 on
 * illegal actions; unused when the position has no policy target) and root
 * value, marking it reanalysed. The record keeps its length (record.h,
 * zt_record_refit: a sparse policy keeps its number of actions). *l1 (may
 * be NULL) receives the L1 distance between the old and the new stored
 * policy, *had_policy whether there was one. ZT_ERR_NOT_FOUND if the
 * position is no longer stored (evicted since it was drawn). */
zt_status zt_replay_refresh(zt_replay *rb, int64_t index, const float *policy, float root_value,
                            double *l1, bool *had_policy);

/* ---- sampling ---- */

/* A batch of B training rows in contiguous arrays, row-major. Made by
 * zt_replay_batch_init, which allocates all of them in one block; any of the
 * output arrays may be pointed at caller-owned arrays of the same sizes
 * before sampling (zt_replay_batch_free frees only the block). */
typedef struct zt_replay_batch {
    int size;     /* B */
    int obs_size; /* H * W * C */
    int num_actions;
    float *obs;           /* B x obs_size, NHWC as g->observe writes it */
    float *policy;        /* B x num_actions; all zero where policy_weight is 0 */
    uint8_t *legal;       /* B x num_actions, 1 on legal actions */
    float *policy_weight; /* B: 1 if the policy is a target (full search), else 0 */
    float *value;         /* B: final return for the player to move (one player:
                           * the points still to come, through
                           * zt_game_value_to_net) */
    float *root_value;    /* B: the search's root value (zt_game_value_to_net) */
    float *reanalysed;    /* B: 1 where a reanalyse search refreshed the targets */
    float *wdl;           /* B x 3 (win, draw, loss one-hot), or NULL if not wanted */
    int64_t *index;       /* B: absolute position index sampled */
    int32_t *sym;         /* B: symmetry applied */
    /* MuZero (zt_replay_batch_init_unroll, unroll = K > 0; else NULL): the
     * K steps that follow each sampled position in its game, the same
     * symmetry applied to all. Step k of row n is at n * (K + 1) + k (the
     * actions and rewards: n * K + k, the move from step k). Past the end
     * of the game the position is absorbing (MuZero appendix G): no policy
     * target (mask 0), the value the final outcome for the player who would
     * be to move (turns alternating; a one-player game: 0, nothing more to
     * come; with outcome_reward 0, the game-ending move's reward holding the
     * outcome), reward 0, and an arbitrary action (a hash of the position
     * index and step). Steps searched with the fast budget have mask 0 as
     * well. A one-player game's values are the return-to-go (the points
     * still to come, undiscounted, or with a discount its n-step return)
     * and its rewards the recorded ones, both
     * through zt_game_value_to_net like `value`. */
    int unroll;
    bool outcome_reward;  /* zt_replay_unroll's: rewards and absorbing values so */
    int td_steps;         /* n of the value targets (zt_replay_unroll) */
    float discount;       /* their gamma (zt_replay_unroll): 1 undiscounted */
    float *u_policy;      /* B x (K + 1) x num_actions */
    uint8_t *u_mask;      /* B x (K + 1): 1 where the policy is a target */
    float *u_value;       /* B x (K + 1) */
    int32_t *u_action;    /* B x K */
    float *u_reward;      /* B x K */
    /* Stochastic MuZero (zt_replay_batch_init_unroll with next_obs; else
     * NULL): the observation of step k + 1 at row n * K + k, the same
     * symmetry applied (past the end of the game the last position's), and
     * 1 in u_chance_mask where step k + 1 is a position of the game. */
    float *u_next_obs;    /* B x K x obs_size */
    uint8_t *u_chance_mask; /* B x K */
    /* With `turns` (zt_replay_unroll; else NULL): 1 where the player to
     * move at step k + 1 is not step k's, at row n * K + k; past the end of
     * the game turns alternate (1), as the absorbing value targets assume. */
    float *u_turn;        /* B x K */
    /* With `chance_labels` (else NULL): the chance outcome between step k
     * and k + 1 at row n * K + k, as a code: 0 where the move left nothing
     * to chance, 1 + i where chance took the i-th of the outcomes the game
     * lists after the move (zt_replay_chance_code); 0 past the end. */
    int32_t *u_chance_code; /* B x K */
    zt_rng rng_after;     /* sampler: the rng state after drawing this batch */
    zt_status status;     /* sampler: how drawing it went */
    uint8_t *scratch_;    /* records copied out under the lock */
    size_t scratch_stride_;
    void *owned_; /* the one block all the arrays above came from */
} zt_replay_batch;

zt_status zt_replay_batch_init(zt_replay_batch *b, const zt_game *g, int size, bool wdl);
/* What the rows of a MuZero batch carry beyond their position. */
#define ZT_REPLAY_MAX_UNROLL 32
#define ZT_REPLAY_MAX_TD 64
typedef struct zt_replay_unroll {
    int steps;     /* K: the positions that follow (1 .. ZT_REPLAY_MAX_UNROLL) */
    bool next_obs; /* their observations (Stochastic MuZero's encoder) */
    /* n (0 .. ZT_REPLAY_MAX_TD): with n > 0 the value target of a step is
     * bootstrapped, undiscounted, from the search's root value n positions
     * on (one player: the points of the moves in between plus that value;
     * two players: that value for the player to move at the step), or the
     * game's return where it ends sooner; 0: the game's return throughout */
    int td_steps;
    /* gamma of a one-player game's n-step targets (needs td_steps > 0): the
     * moves' rewards discounted, gamma^i for the i-th on, and the bootstrap
     * by gamma^n; 0 or 1: undiscounted */
    float discount;
    bool turns; /* the to-play targets (u_turn) of a net with a to-play head */
    /* Two players: the move that ends the game earns its outcome as its
     * reward (the mover's: 1 for a win), and the absorbing steps after it
     * are worth 0, as in the MuZero paper's board games, instead of a
     * reward of 0 and absorbing values of the outcome (alternating). The
     * value targets of the game's own positions do not change. */
    bool outcome_reward;
    /* the game's own chance outcomes as the codes of Stochastic MuZero
     * (u_chance_code; muzero.chance = game) */
    bool chance_labels;
} zt_replay_unroll;

/* The code of the transition from position `from` by `action` to position
 * `to` of the same game (symmetry `sym` applied to all three): 0 when the
 * move leaves nothing to chance, else 1 + the index of the chance outcome
 * (among those g->chance_outcomes lists after the move) from which `to`
 * follows, trying up to two more chance events after it (a backgammon roll
 * that cannot be played and the next roll); -1 when none leads there. */
int zt_replay_chance_code(const zt_game *g, int sym, const void *from, int action, const void *to);

/* A batch whose rows carry an unroll as u says (NULL: zt_replay_batch_init).
 * Sampling it needs stored actions: a record without one (inside a game) is
 * ZT_ERR_CORRUPT. */
zt_status zt_replay_batch_init_unroll(zt_replay_batch *b, const zt_game *g, int size, bool wdl,
                                      const zt_replay_unroll *u);
void zt_replay_batch_free(zt_replay_batch *b);

/* Draws b->size positions uniformly from the window (with replacement; by
 * surprise with cfg.surprise_weight > 0) and a symmetry for each (if
 * augmenting), consuming rng in that order, then rebuilds their
 * observations and targets. ZT_ERR_INVALID if the buffer is
 * empty. The buffer lock is held only while the records are copied. */
zt_status zt_replay_sample(zt_replay *rb, zt_rng *rng, zt_replay_batch *b);

/* ---- the sampler thread ---- */

/* A thread that draws batches ahead of the learner: two batches, one held by
 * the caller while the thread fills the other (no allocation per batch).
 * Batches come out exactly as consecutive zt_replay_sample calls with the
 * same rng would give on an unchanging buffer; a batch is drawn from the
 * buffer as it was when the thread got to it, so a run that must repeat
 * exactly with actors appending samples synchronously instead. For exact
 * resume, checkpoint the rng_after of the last batch consumed and start the
 * new sampler from it. Start it once the buffer holds positions: a batch
 * drawn from an empty one comes back as an error. */
typedef struct zt_replay_sampler zt_replay_sampler;

zt_status zt_replay_sampler_new(zt_replay *rb, int batch_size, bool wdl, const zt_rng *rng,
                                zt_replay_sampler **out);
/* The same with batches of `unroll` steps (zt_replay_batch_init_unroll). */
zt_status zt_replay_sampler_new_unroll(zt_replay *rb, int batch_size, bool wdl,
                                       const zt_replay_unroll *u, const zt_rng *rng,
                                       zt_replay_sampler **out);
/* Stops the thread (after the batch in progress) and frees both batches. */
void zt_replay_sampler_free(zt_replay_sampler *s);
/* The next batch (waiting for it if needed). It stays valid until the next
 * call; the one returned before goes back to the thread to be refilled.
 * *batch is NULL and the batch's status returned if drawing it failed. */
zt_status zt_replay_sampler_next(zt_replay_sampler *s, const zt_replay_batch **batch);

/* ---- checkpoints ---- */

/* The whole buffer (settings, counters, games, records) as one binary blob:
 * a versioned header, the games and their records, and a checksum. The
 * caller frees *data. */
zt_status zt_replay_serialize(zt_replay *rb, uint8_t **data, size_t *len);
/* Rebuilds a buffer from a blob; ZT_ERR_CORRUPT naming the problem if it is
 * truncated, fails its checksum or holds records the game cannot decode. */
zt_status zt_replay_deserialize(const zt_game *g, const uint8_t *data, size_t len, zt_replay **out);
/* Atomic write (core/fileio.h) and read of the same blob. */
zt_status zt_replay_save(zt_replay *rb, const char *path);
zt_status zt_replay_load(const zt_game *g, const char *path, zt_replay **out);

#endif
