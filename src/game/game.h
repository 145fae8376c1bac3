/* The game interface (DESIGN.md §3). A game is a `zt_game`: sizes and function
 * pointers over a fixed-size, memcpy-able state. Games with settings (Sim's
 * vertices and k) are instantiated from a config by the registry; the caller
 * owns the returned zt_game and frees it with zt_game_free.
 *
 * Conventions every game follows:
 *  - Two players, 0 and 1; player 0 moves first (after any opening chance);
 *    or one player (num_players 1, 2048), who is player 0.
 *  - current_player() is 0 or 1 (only 0 in a one-player game), ZT_CHANCE at
 *    a chance node, ZT_TERMINAL at the end. At a chance node apply() takes
 *    an outcome id from chance_outcomes(), not a policy action.
 *  - Actions are 0..num_actions-1 (the policy head's size). legal() lists
 *    the legal ones in increasing order.
 *  - Observations are float32, laid out HWC (channels last, matching NHWC
 *    networks), always from the point of view of the player to move.
 *  - Symmetry 0 is the identity. sym_state(s) and sym_action(a) are
 *    consistent: applying sym_action(a) to sym_state(s) gives
 *    sym_state(apply(s, a)). Values are preserved.
 *  - hash() is a Zobrist-style 64-bit key of everything that matters for play
 *    (board, side to move, dice, pending moves).
 *  - The compact encoding is the smallest byte string from which decode()
 *    rebuilds the state exactly; replay stores it.
 *  - Rewards. A two-player game pays only at the end: returns() at a
 *    terminal state, zero-sum. A one-player game pays as it goes: returns()
 *    is defined at every state and r[0] is the score banked so far (r[1] is
 *    0), so a transition's reward is the difference of r[0] across it
 *    (zt_game_reward) and the final return is the sum of the rewards. The
 *    state keeps the score; no function's signature changes, and two-player
 *    games pay nothing for the feature. */
#ifndef ZT_GAME_GAME_H
#define ZT_GAME_GAME_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/status.h"

#define ZT_CHANCE (-1)
#define ZT_TERMINAL (-2)

/* Upper bounds over all games, for stack buffers in generic code. */
#define ZT_MAX_ACTIONS 512
#define ZT_MAX_CHANCE_OUTCOMES 32
#define ZT_MAX_STATE_BYTES 256
#define ZT_MAX_TEXT 1024

typedef enum zt_obs_kind {
    ZT_OBS_PLANES,   /* obs_shape = {H, W, C} board planes */
    ZT_OBS_FEATURES, /* obs_shape = {1, 1, N} a feature vector */
} zt_obs_kind;

typedef struct zt_game zt_game;

struct zt_game {
    const char *name;     /* registry name, e.g. "connect4" */
    const struct zt_game_def *def; /* its registry entry (set by zt_game_new; NULL
                                    * for a game built by hand) */
    char title[64];       /* with settings, e.g. "sim K6 k=3 avoid" */
    /* Every setting the game read, as "key=value" separated by spaces, in a
     * form zt_game_new accepts back ("vertices=6 k=3 variant=avoid"); "" for
     * games without settings. name + " " + settings identifies the game. */
    char settings[96];
    size_t state_size;    /* bytes of the memcpy-able state */
    int num_actions;      /* policy size */
    int max_chance_outcomes; /* 0 for deterministic games */
    int max_game_length;  /* plies (player actions) a game may take: self-play
                           * abandons a game that reaches it (backgammon's
                           * games are unbounded in principle) */
    float max_return;     /* the largest |return| (1; backgammon 3 for a
                           * backgammon): search and training see returns / max_return,
                           * values in [-1, 1] like the network's. A one-player
                           * game's returns are unbounded scores: its max_return
                           * is the value scale, the score that the network's
                           * value 1 stands for (2048: the setting value_scale) */
    int num_players;      /* 1 or 2 (0, a game built by hand before the field
                           * existed, reads as 2: zt_game_num_players) */
    zt_obs_kind obs_kind;
    int obs_shape[3];     /* H, W, C */
    size_t compact_size;  /* bytes of the compact encoding */
    int num_symmetries;   /* >= 1 */
    const void *impl;     /* the game's own constant data (tables, settings) */

    void (*reset)(const zt_game *g, void *s);
    int (*current_player)(const zt_game *g, const void *s);
    /* Writes the legal actions in increasing order; returns how many. */
    int (*legal)(const zt_game *g, const void *s, uint16_t *actions);
    void (*apply)(const zt_game *g, void *s, int action);
    /* At a chance node: outcome ids and probabilities (summing to 1). */
    int (*chance_outcomes)(const zt_game *g, const void *s, int *outcomes, float *probs);
    /* Two players: at a terminal state, the return of each player (zero-sum:
     * r[1] = -r[0]). One player: at any state, r[0] the score banked so far
     * and r[1] = 0 (see "Rewards"). */
    void (*returns)(const zt_game *g, const void *s, float *r);
    void (*observe)(const zt_game *g, const void *s, float *obs);
    void (*encode)(const zt_game *g, const void *s, uint8_t *out);
    zt_status (*decode)(const zt_game *g, const uint8_t *in, void *s);
    void (*sym_state)(const zt_game *g, int sym, const void *s, void *out);
    int (*sym_action)(const zt_game *g, int sym, int action);
    uint64_t (*hash)(const zt_game *g, const void *s);

    /* The game's one-line position notation (see docs/adding-a-game.md). */
    void (*to_text)(const zt_game *g, const void *s, char *buf, size_t cap);
    zt_status (*from_text)(const zt_game *g, const char *text, void *s);
    /* A multi-line board for people (terminal play). */
    void (*render)(const zt_game *g, const void *s, char *buf, size_t cap);
    /* Action notation in the game's usual words; from_text returns the action
     * or a ZT_ERR_INVALID naming the problem. */
    void (*action_to_text)(const zt_game *g, const void *s, int action, char *buf, size_t cap);
    zt_status (*action_from_text)(const zt_game *g, const void *s, const char *text, int *action);

    /* Optional (NULL if absent): frees what create() put in impl. */
    void (*destroy)(zt_game *g);
    /* Optional (NULL if absent), for one-player games: the level a finished
     * game reached, which eval reports as a distribution (2048: the highest
     * tile), and its name ("highest tile"). */
    int (*level)(const zt_game *g, const void *s);
    const char *level_name;
    /* Optional (NULL if absent), for games whose chance states a network
     * can value (backgammon: before the roll): the player from whose view
     * observe() writes chance state s, whose value the net then gives.
     * With it, a net may learn chance states' values (net.chance_values)
     * and a search value one with a single evaluation. */
    int (*chance_observer)(const zt_game *g, const void *s);
};

/* ---- registry ---- */

struct zt_solver;
struct zt_player;

/* How a solver position set is judged: each position asks for one move,
 * which is right when it keeps the position's exact value. Reported as the
 * share of right moves ("optimal N/M") or as the wrong ones ("mistakes
 * N/M", how Pascal Pons' Connect Four sets are quoted). */
typedef enum zt_judge {
    ZT_JUDGE_OPTIMAL,
    ZT_JUDGE_MISTAKES,
} zt_judge;

/* A solver test set: a file of the reference data (core/fileio.h,
 * zt_data_find) in the game's position-file format (game/solver.h). */
typedef struct zt_position_set {
    const char *file; /* relative to the data directory, e.g. "connect4/Test_L2_R1" */
    zt_judge judge;
} zt_position_set;

/* A baseline player the game brings (game/player.h): its spec is `name`,
 * or "name:D" with D an integer in [1, 64] when it takes a depth. */
typedef struct zt_baseline {
    const char *name;
    bool takes_depth;
    /* depth is 0 for a player without one. */
    zt_status (*create)(const zt_game *g, int depth, struct zt_player **out);
} zt_baseline;

/* A game's registry entry: how to create it, and what else the game brings.
 * Everything after `create` is optional (NULL or 0: none). */
typedef struct zt_game_def {
    const char *name;
    const char *summary;
    /* Fills *g (zeroed by the caller) reading its settings from cfg
     * (e.g. "vertices", "k", "variant"); rejects bad settings naming them. */
    zt_status (*create)(zt_config *cfg, zt_game *g);

    /* The exact solver of instance g (game/solver.h); it may refuse
     * instances too large to solve with ZT_ERR_UNSUPPORTED. The "perfect"
     * and "solver" players and the position sets need it. */
    zt_status (*solver)(const zt_game *g, struct zt_solver **out);
    /* The solver position sets that fit instance g (Sim's are for K6 k=3
     * avoid only): points *sets at them and returns how many. */
    int (*position_sets)(const zt_game *g, const zt_position_set **sets);
    /* Baseline players, ended by an entry whose name is NULL. */
    const zt_baseline *baselines;
    /* Defaults of the training arena (configs/<game>.ini restates them):
     * arena.opponents, comma-separated player specs (NULL: "random"), and
     * arena.positions_limit, positions judged per set (0: all). */
    const char *arena_opponents;
    int arena_positions_limit;
} zt_game_def;

/* All registered games. */
extern const zt_game_def *const zt_game_registry[];
extern const int zt_game_registry_count;

/* Looks up `name` and instantiates it; cfg may be NULL (all defaults).
 * "unknown game 'x' (known: tictactoe, connect4, sim, backgammon)". */
zt_status zt_game_new(const char *name, zt_config *cfg, zt_game **out);
void zt_game_free(zt_game *g);

/* The game's spec: its name followed by its settings ("sim vertices=14 k=4
 * variant=avoid"), as weight files and checkpoints record it. */
void zt_game_spec(const zt_game *g, char *buf, size_t cap);
/* Instantiates a game from a spec written by zt_game_spec. */
zt_status zt_game_from_spec(const char *spec, zt_game **out);

/* The solver position sets of instance g (its entry's position_sets; 0 and
 * *sets NULL when it has none). */
int zt_game_position_sets(const zt_game *g, const zt_position_set **sets);

/* How the position file at `path` is judged for g: as the set of g with the
 * same file name, else as g's first set, else ZT_JUDGE_OPTIMAL. */
zt_judge zt_game_positions_judge(const zt_game *g, const char *path);

/* ---- helpers over the interface ---- */

static inline bool zt_game_is_terminal(const zt_game *g, const void *s)
{
    return g->current_player(g, s) == ZT_TERMINAL;
}

/* Does `action` end the game at once with a win for the side to move at s? */
bool zt_game_move_wins(const zt_game *g, const void *s, int action);
/* Can the side to move at s win with its next move? */
bool zt_game_wins_at_once(const zt_game *g, const void *s);

static inline int zt_game_num_players(const zt_game *g)
{
    return g->num_players == 1 ? 1 : 2;
}

/* Floats in one observation: H x W x C. */
static inline int zt_game_obs_size(const zt_game *g)
{
    return g->obs_shape[0] * g->obs_shape[1] * g->obs_shape[2];
}

/* One-player game: the score banked in state s (returns' r[0]). */
static inline float zt_game_score(const zt_game *g, const void *s)
{
    float r[2];
    g->returns(g, s, r);
    return r[0];
}

/* One-player game: the reward of the transition from `before` to `after`
 * on the value scale (score difference / max_return); 0 for two players,
 * whose games pay only at the end. */
static inline float zt_game_reward(const zt_game *g, const void *before, const void *after)
{
    if (zt_game_num_players(g) != 1) return 0.0f;
    return (zt_game_score(g, after) - zt_game_score(g, before)) / g->max_return;
}

/* The network's value of a one-player game is not linear in the points:
 * scores span 0 to hundreds of thousands, so the value head learns
 * h(points) / h(max_return) with h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x,
 * eps = 0.001, the invertible transform of Pohlen et al. 2018 ("Observe
 * and Look Further") that MuZero applies to its Atari value targets
 * (Schrittwieser et al. 2020, Appendix F), which keeps small and large
 * returns apart within tanh's range. Search adds rewards and values linearly (on the value
 * scale, points / max_return); these two convert between the two. Two-
 * player values are the same on both sides. */
#define ZT_VALUE_H_EPS 0.001

static inline double zt_value_h(double x)
{
    double a = x < 0 ? -x : x;
    double y = sqrt(a + 1) - 1 + ZT_VALUE_H_EPS * a;
    return x < 0 ? -y : y;
}

static inline double zt_value_h_inverse(double y)
{
    double a = y < 0 ? -y : y, e = ZT_VALUE_H_EPS;
    double r = (sqrt(1 + 4 * e * (a + 1 + e)) - 1) / (2 * e);
    double x = r * r - 1;
    return y < 0 ? -x : x;
}

/* A value on the search's scale -> the network's target. */
static inline float zt_game_value_to_net(const zt_game *g, float v)
{
    if (g->num_players != 1) return v;
    return (float)(zt_value_h((double)v * g->max_return) / zt_value_h(g->max_return));
}

/* The network's value -> the search's scale (the inverse of the above). */
static inline float zt_game_value_from_net(const zt_game *g, float y)
{
    if (g->num_players != 1) return y;
    return (float)(zt_value_h_inverse((double)y * zt_value_h(g->max_return)) / g->max_return);
}

/* The player whose value a record or evaluation of s stands for: the
 * player to move, or at a chance state the game's chance observer (-1
 * where there is none, and at a terminal state). */
static inline int zt_game_observer(const zt_game *g, const void *s)
{
    int cp = g->current_player(g, s);
    if (cp >= 0) return cp;
    if (cp == ZT_CHANCE && g->chance_observer) return g->chance_observer(g, s);
    return -1;
}

/* Terminal state s's return for `player` on the network's value scale,
 * [-1, 1]: returns / max_return. (A one-player game's banked score, on the
 * value scale: not bounded by 1.) */
static inline float zt_game_value_of(const zt_game *g, const void *s, int player)
{
    float r[2];
    g->returns(g, s, r);
    return r[player] / g->max_return;
}

/* Fills mask[num_actions] with 1 for legal actions; returns their number. */
int zt_game_legal_mask(const zt_game *g, const void *s, uint8_t *mask);

/* Plays uniformly random legal actions and chance outcomes by their
 * probabilities until the end; returns the plies played. */
struct zt_rng;
int zt_game_random_playout(const zt_game *g, void *s, struct zt_rng *rng);

/* A chance outcome of chance position s, drawn from rng by its
 * probability (one draw of rng); not applied. */
int zt_game_sample_chance(const zt_game *g, const void *s, struct zt_rng *rng);

#endif
