/* libzeroth: Zeroth's public C API, the only header a program that links
 * libzeroth.so or libzeroth.a includes. Games, networks, searches and
 * training runs are opaque handles configured by "key=value" strings.
 *
 * Ownership: what zeroth_*_new / _open / _resume returns belongs to the
 * caller and is released with the matching _free / _close (NULL is
 * accepted). Strings a handle returns live as long as the handle. Arrays are
 * always the caller's; the library reads and writes them during the call
 * and keeps no pointer to them.
 *
 * Errors: every function that can fail returns a zeroth_status; on failure
 * zeroth_last_error() holds a one-line message naming the problem, for the
 * calling thread, until that thread's next failing call. Bad input never
 * exits or aborts the process (running out of memory still does), and the
 * library never writes to stdout or stderr except through the log (below).
 *
 * Threads: a game handle is read-only after zeroth_game_new, so any number
 * of threads may use one at once. A net, search or run handle is used by one
 * thread at a time (distinct handles on distinct threads are fine), except
 * zeroth_run_request_stop, which may be called from anywhere, signal
 * handlers included. One training run at a time per process.
 *
 * docs/api.md has the whole story, with examples in examples/. */
#ifndef ZEROTH_ZEROTH_H
#define ZEROTH_ZEROTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZEROTH_VERSION_MAJOR 0
#define ZEROTH_VERSION_MINOR 1
#define ZEROTH_VERSION_PATCH 0
#define ZEROTH_VERSION "0.1.0"

/* What the library exports; everything else in it is hidden. */
#if defined(__GNUC__)
#define ZEROTH_API __attribute__((visibility("default")))
#else
#define ZEROTH_API
#endif

/* The library's version, "MAJOR.MINOR.PATCH" (compare with ZEROTH_VERSION
 * to find a header that does not match the library). */
ZEROTH_API const char *zeroth_version(void);

/* The network backends built in, space-separated, fastest first
 * ("cpu ref"). */
ZEROTH_API const char *zeroth_backends(void);

/* ---- errors ---- */

typedef enum zeroth_status {
    ZEROTH_OK = 0,
    ZEROTH_ERR_INVALID = 1,     /* bad argument, malformed input, impossible setting */
    ZEROTH_ERR_NOT_FOUND = 2,   /* unknown name, missing file */
    ZEROTH_ERR_IO = 3,          /* a read or write failed */
    ZEROTH_ERR_CORRUPT = 4,     /* a file is truncated or inconsistent */
    ZEROTH_ERR_NOMEM = 5,       /* memory ran out */
    ZEROTH_ERR_UNSUPPORTED = 6, /* valid, but not in this build or on this machine */
} zeroth_status;

/* The calling thread's last error message ("" if none); valid until its
 * next failing call. */
ZEROTH_API const char *zeroth_last_error(void);
/* "ok", "invalid", "not found", ... */
ZEROTH_API const char *zeroth_status_name(zeroth_status status);
/* Records `message` as the calling thread's last error and returns `status`:
 * for callbacks (a caller-supplied evaluator) to say why they failed,
 * `return zeroth_fail(ZEROTH_ERR_IO, "lost the GPU");`. */
ZEROTH_API zeroth_status zeroth_fail(zeroth_status status, const char *message);

/* ---- logging ---- */

enum {
    ZEROTH_LOG_DEBUG = 0,
    ZEROTH_LOG_INFO = 1,
    ZEROTH_LOG_WARN = 2,
    ZEROTH_LOG_ERROR = 3,
    ZEROTH_LOG_QUIET = 4, /* as a level: log nothing */
};

/* One log message (no newline), its level a ZEROTH_LOG_* value. Called on
 * whichever thread logs (training runs log from their own threads), never
 * with a library lock held; it may call into the library. */
typedef void (*zeroth_log_fn)(void *user, int level, const char *message);

/* Sends log messages to fn instead of stderr (the default); NULL restores
 * stderr. After a replacement the old callback may still finish a call
 * already under way on another thread. */
ZEROTH_API void zeroth_set_log_callback(zeroth_log_fn fn, void *user);
/* Messages below `level` are dropped (default ZEROTH_LOG_INFO). */
ZEROTH_API zeroth_status zeroth_set_log_level(int level);

/* ---- games ----
 *
 * A game handle is the rules and sizes of one game with its settings;
 * states are the caller's: state_size bytes each, memcpy-able, n states
 * contiguous in one array. A state must come from this game (reset, step,
 * from_text, or a copy of one): other bytes are not checked and may make a
 * call misbehave. Players are 0 and 1; player 0 moves first. Actions are
 * 0 .. num_actions-1. Observations are float32, H x W x C (channels last),
 * from the point of view of the player to move. Returns are the points each
 * player scored (zero-sum; +-1 per game, backgammon up to 3). */

typedef struct zeroth_game zeroth_game_t;

/* The player field of a state that is not a decision. */
#define ZEROTH_CHANCE (-1)   /* nature draws an outcome (backgammon's dice) */
#define ZEROTH_TERMINAL (-2) /* the game is over */

/* The registered games: the i-th name (i = 0, 1, ...), NULL past the end. */
ZEROTH_API const char *zeroth_game_list(int i);

/* spec: a name, then its settings, e.g. "connect4", "sim vertices=6 k=3".
 * Unknown names, keys and out-of-range values fail naming them. */
ZEROTH_API zeroth_status zeroth_game_new(const char *spec, zeroth_game_t **out);
ZEROTH_API void zeroth_game_free(zeroth_game_t *game);

/* The full spec with every setting ("sim vertices=6 k=3 variant=avoid"),
 * which zeroth_game_new accepts back, and the registry name ("sim"). */
ZEROTH_API const char *zeroth_game_spec(const zeroth_game_t *game);
ZEROTH_API const char *zeroth_game_name(const zeroth_game_t *game);
ZEROTH_API size_t zeroth_game_state_size(const zeroth_game_t *game);
ZEROTH_API int zeroth_game_num_actions(const zeroth_game_t *game);
/* shape[0..2] = H, W, C; returns H * W * C, the floats of one observation. */
ZEROTH_API int zeroth_game_obs_shape(const zeroth_game_t *game, int shape[3]);
/* The most outcomes a chance state has (0 for games without chance). */
ZEROTH_API int zeroth_game_max_chance_outcomes(const zeroth_game_t *game);
/* The most plies a game may take (self-play abandons a longer one). */
ZEROTH_API int zeroth_game_max_length(const zeroth_game_t *game);
/* The largest |return| (1; backgammon 3). */
ZEROTH_API float zeroth_game_max_return(const zeroth_game_t *game);

/* Batched calls over n states (n >= 0); `states` holds n * state_size bytes.
 * A failing call names the first bad state and changes nothing. */

/* Writes n start positions (at a chance node where the game opens with one). */
ZEROTH_API zeroth_status zeroth_game_reset(const zeroth_game_t *game, int n, void *states);
/* players[i]: 0 or 1 to move, ZEROTH_CHANCE or ZEROTH_TERMINAL. */
ZEROTH_API zeroth_status zeroth_game_players(const zeroth_game_t *game, int n, const void *states,
                                             int *players);
/* mask[n * num_actions]: 1 for the legal actions (none at chance and
 * terminal states); counts[n] (may be NULL): how many. */
ZEROTH_API zeroth_status zeroth_game_legal(const zeroth_game_t *game, int n, const void *states,
                                           uint8_t *mask, int *counts);
/* Applies actions[i] to state i: a legal action at a decision state, an
 * outcome id at a chance state. An illegal action or a terminal state fails. */
ZEROTH_API zeroth_status zeroth_game_step(const zeroth_game_t *game, int n, void *states,
                                          const int *actions);
/* obs[n * H * W * C]. */
ZEROTH_API zeroth_status zeroth_game_observe(const zeroth_game_t *game, int n, const void *states,
                                             float *obs);
/* returns[2 * i + p]: player p's return at terminal state i, 0 elsewhere. */
ZEROTH_API zeroth_status zeroth_game_returns(const zeroth_game_t *game, int n, const void *states,
                                             float *returns);
/* At chance state i: counts[i] outcomes, their ids and probabilities in row i
 * of outcomes and probs (max_chance_outcomes per row); counts[i] = 0 at other
 * states. */
ZEROTH_API zeroth_status zeroth_game_chance_outcomes(const zeroth_game_t *game, int n,
                                                     const void *states, int *counts, int *outcomes,
                                                     float *probs);
/* Draws chance outcomes by their probabilities until no state is at a
 * chance node; the draws of state i depend only on (seed, i, the state). */
ZEROTH_API zeroth_status zeroth_game_sample_chance(const zeroth_game_t *game, int n, void *states,
                                                   uint64_t seed);

/* One step of n games played as a vectorised environment (pgx's shape), in
 * one pass: applies actions[i] to state i as zeroth_game_step does, then
 * draws chance outcomes until the game waits for a player or is over (the
 * draws of state i depend only on (seed, i, the state), as in
 * zeroth_game_sample_chance). rewards[2 * i + p]: player p's points if game
 * i ended in this step, else 0; done[i]: 1 if it ended. With auto_reset
 * non-zero a game that ended starts again at once (its opening chance drawn
 * the same way), so that players[i] and mask[i * num_actions] (legal
 * actions; either may be NULL) describe the new game. Fails as
 * zeroth_game_step does, changing no state. */
ZEROTH_API zeroth_status zeroth_game_step_env(const zeroth_game_t *game, int n, void *states,
                                              const int *actions, uint64_t seed, int auto_reset,
                                              float *rewards, uint8_t *done, int *players,
                                              uint8_t *mask);
/* zeroth_game_step_env with a uniformly random legal action in every game,
 * drawn in C and written to actions[i] (random rollouts, and what a
 * vectorised environment's random player needs). Every state must wait for
 * a player's move; state i's move and chance draws depend only on (seed, i,
 * the state). */
ZEROTH_API zeroth_status zeroth_game_step_env_random(const zeroth_game_t *game, int n, void *states,
                                                     uint64_t seed, int auto_reset, int *actions,
                                                     float *rewards, uint8_t *done, int *players,
                                                     uint8_t *mask);

/* Text, one state at a time. ZEROTH_ERR_INVALID when cap is too small; 1024
 * bytes always suffice for to_text and action_to_text, 4096 for render. */
/* The game's one-line position notation (README.md "Position notation"). */
ZEROTH_API zeroth_status zeroth_game_to_text(const zeroth_game_t *game, const void *state,
                                             char *buf, size_t cap);
ZEROTH_API zeroth_status zeroth_game_from_text(const zeroth_game_t *game, const char *text,
                                               void *state);
/* A multi-line board for people. */
ZEROTH_API zeroth_status zeroth_game_render(const zeroth_game_t *game, const void *state, char *buf,
                                            size_t cap);
/* A legal action (or chance outcome) of `state` in the game's notation. */
ZEROTH_API zeroth_status zeroth_game_action_to_text(const zeroth_game_t *game, const void *state,
                                                    int action, char *buf, size_t cap);
/* The action that `text` names at decision state `state`, if it is legal. */
ZEROTH_API zeroth_status zeroth_game_action_from_text(const zeroth_game_t *game, const void *state,
                                                      const char *text, int *action);

/* ---- networks ---- */

typedef struct zeroth_net zeroth_net_t;

/* Loads a network from `path`: a weights file (.safetensors), a checkpoint
 * directory or a run directory (its latest checkpoint). The file names its
 * architecture and game. settings (NULL or "" for defaults): backend=auto|
 * cpu|ref, precision=auto|fp32|bf16|int8 (int8: calibrated on random-play
 * positions), threads=N (default all cores). */
ZEROTH_API zeroth_status zeroth_net_open(const char *path, const char *settings,
                                         zeroth_net_t **out);
ZEROTH_API void zeroth_net_free(zeroth_net_t *net);

/* The spec of the game the net was trained for (zeroth_game_new takes it). */
ZEROTH_API const char *zeroth_net_game_spec(const zeroth_net_t *net);
/* "resnet in=6x7x2 actions=7 value=scalar:64 ch=64 blocks=5 pol=2 valc=1" */
ZEROTH_API const char *zeroth_net_architecture(const zeroth_net_t *net);
ZEROTH_API const char *zeroth_net_backend(const zeroth_net_t *net);
ZEROTH_API const char *zeroth_net_precision(const zeroth_net_t *net);
ZEROTH_API int zeroth_net_num_actions(const zeroth_net_t *net);
ZEROTH_API int zeroth_net_obs_size(const zeroth_net_t *net);

/* n >= 1 observations (n * obs_size floats, as zeroth_game_observe writes
 * them) -> policy_logits[n * num_actions] (raw, for every action: mask the
 * illegal ones yourself) and value[n] in [-1, 1] for the player to move (a
 * win/draw/loss head gives P(win) - P(loss)). */
ZEROTH_API zeroth_status zeroth_net_forward(zeroth_net_t *net, int n, const float *obs,
                                            float *policy_logits, float *value);

/* The net's tensors as its weight file holds them (docs/networks.md "Weight
 * files": PyTorch's names, conv weights OHWI, dense weights [out][in] with
 * `in` in HWC order): the trainable parameters and the batch-norm running
 * statistics, fp32, tensors 0 .. count-1 in the file's order. */
ZEROTH_API int zeroth_net_tensor_count(const zeroth_net_t *net);
/* Tensor i's name ("blocks.0.conv1.weight"; the string lives as long as the
 * net), its number of dimensions (1..4) and shape[0 .. ndim-1]; returns its
 * number of floats in *count. Any output pointer may be NULL. */
ZEROTH_API zeroth_status zeroth_net_tensor_info(const zeroth_net_t *net, int i, const char **name,
                                                int *ndim, int shape[4], size_t *count);
/* Copies tensor i into data[count]; count must be the tensor's. */
ZEROTH_API zeroth_status zeroth_net_tensor_read(const zeroth_net_t *net, int i, float *data,
                                                size_t count);

/* ---- search ----
 *
 * G trees searched in lockstep (one batched evaluation per round for all of
 * them): begin some trees at positions, run, then read each tree's choice,
 * policy and value. Calls name trees by index: trees[k] for k < n, or the
 * first n trees when `trees` is NULL. settings (NULL or "" for defaults):
 * the search.* keys of docs/search.md (search.algorithm=gumbel|puct
 * [gumbel], search.sims [gumbel 32, puct 200], search.leaves_per_tree [1],
 * search.gumbel_m [16], search.gumbel_noise [false], search.c_visit [50],
 * ...) and seed [1]. */

typedef struct zeroth_search zeroth_search_t;

/* The caller's model: n positions, given as observations (n * obs_size
 * floats) or as states (n pointers to state_size bytes of `game`), ->
 * policy_logits[n * num_actions], finite for every action (illegal ones are
 * masked by the library), and value[n] in [-1, 1] for the player to move.
 * Return ZEROTH_OK, or a failure (with zeroth_fail for a message), which
 * ends the search run with that status. Called on the thread that called
 * zeroth_search_run; n is at most trees * leaves_per_tree (times
 * max_chance_outcomes in games with chance). */
typedef zeroth_status (*zeroth_eval_obs_fn)(void *user, int n, const float *obs,
                                            float *policy_logits, float *value);
typedef zeroth_status (*zeroth_eval_states_fn)(void *user, int n, const void *const *states,
                                               float *policy_logits, float *value);

/* A search of `trees` trees over the AlphaZero model with `net` evaluating
 * positions of `game` (which must be the net's game). The net is borrowed:
 * it must outlive the search and not be used elsewhere during its calls. */
ZEROTH_API zeroth_status zeroth_search_new(const zeroth_game_t *game, zeroth_net_t *net, int trees,
                                           const char *settings, zeroth_search_t **out);
/* The same with the caller's model: exactly one of eval_obs and eval_states
 * is non-NULL; `user` is passed to it. */
ZEROTH_API zeroth_status zeroth_search_new_callbacks(const zeroth_game_t *game,
                                                     zeroth_eval_obs_fn eval_obs,
                                                     zeroth_eval_states_fn eval_states, void *user,
                                                     int trees, const char *settings,
                                                     zeroth_search_t **out);
/* The caller's recurrent model, mctx's shape (MuZero's, or any simulator the
 * caller steps itself): the tree holds the caller's embeddings,
 * embedding_size bytes each, n of them contiguous in every array.
 * root_fn: n root positions, as game states (n * state_size bytes) and as
 *   observations (n * obs_size floats) -> embeddings[n * embedding_size],
 *   policy_logits[n * num_actions] (finite for the legal actions; the
 *   library masks the illegal ones from the game) and value[n] in [-1, 1]
 *   for the player to move.
 * recurrent_fn: n (embedding, action) pairs -> next_embeddings, the next
 *   positions' policy_logits (-INFINITY marks an action that cannot be
 *   taken there; at least one finite unless the game ended), value[n] in
 *   [-1, 1] for the player to move next, reward[n] in [-1, 1] that the
 *   action paid to the player who took it, and discount[n]: -1 when the
 *   opponent moves next, +1 when the same player does, 0 when the game
 *   ended (mctx's two-player convention; value and logits are then
 *   ignored).
 * Both return ZEROTH_OK or a failure (zeroth_fail for a message), which ends
 * the search run with that status, as an evaluator's does; n is at most
 * trees * leaves_per_tree; both are called on the thread running the search. */
typedef zeroth_status (*zeroth_root_fn)(void *user, int n, const void *states, const float *obs,
                                        void *embeddings, float *policy_logits, float *value);
typedef zeroth_status (*zeroth_recurrent_fn)(void *user, int n, const void *embeddings,
                                             const int *actions, void *next_embeddings,
                                             float *policy_logits, float *value, float *reward,
                                             float *discount);
/* A search of `trees` trees over the caller's recurrent model, rooted at
 * decision states of `game` (which gives the root's legal actions and
 * observations). embedding_size: 1 .. 65536 bytes. */
ZEROTH_API zeroth_status zeroth_search_new_recurrent(const zeroth_game_t *game,
                                                     size_t embedding_size, zeroth_root_fn root_fn,
                                                     zeroth_recurrent_fn recurrent_fn, void *user,
                                                     int trees, const char *settings,
                                                     zeroth_search_t **out);
ZEROTH_API void zeroth_search_free(zeroth_search_t *search);
ZEROTH_API int zeroth_search_num_trees(const zeroth_search_t *search);

/* Starts trees[k] at states[k] (n * state_size bytes), each a decision
 * state. A tree told of the move played (zeroth_search_played) keeps the
 * statistics of that subtree. */
ZEROTH_API zeroth_status zeroth_search_begin(zeroth_search_t *search, int n, const int *trees,
                                             const void *states);
/* Searches every begun tree to its number of simulations. On failure (the
 * caller's model failed) every tree is forgotten. */
ZEROTH_API zeroth_status zeroth_search_run(zeroth_search_t *search);
/* Results of searched trees. choose, temperature 0: Gumbel's sequential-
 * halving winner, PUCT's most visited; temperature T > 0: a sample of the
 * improved policy^(1/T) (Gumbel) or of visits^(1/T) (PUCT). */
ZEROTH_API zeroth_status zeroth_search_choose(zeroth_search_t *search, int n, const int *trees,
                                              float temperature, int *actions);
/* policy[n * num_actions]: the improved policy (Gumbel) or visit fractions
 * (PUCT), 0 for illegal actions. */
ZEROTH_API zeroth_status zeroth_search_policy(const zeroth_search_t *search, int n,
                                              const int *trees, float *policy);
/* visits[n * num_actions]: root visits per action. */
ZEROTH_API zeroth_status zeroth_search_visits(const zeroth_search_t *search, int n,
                                              const int *trees, int32_t *visits);
/* values[k]: the root's value for the player to move, in [-1, 1]. */
ZEROTH_API zeroth_status zeroth_search_root_value(const zeroth_search_t *search, int n,
                                                  const int *trees, float *values);
/* actions[k] (or a chance outcome) was played from the root of trees[k]. */
ZEROTH_API zeroth_status zeroth_search_played(zeroth_search_t *search, int n, const int *trees,
                                              const int *actions);
/* Drops the trees: their next search starts from nothing. */
ZEROTH_API zeroth_status zeroth_search_forget(zeroth_search_t *search, int n, const int *trees);

/* ---- greedy play ----
 *
 * Play without search (backgammon's usual way, GNU Backgammon's 0-ply):
 * every position the mover's turn can end in (in backgammon every complete
 * play of the dice) is valued by the net, and the best is played; a turn
 * that ends at the opponent's roll is valued by the net directly where it
 * learned positions before a roll, else as the exact expectation over the
 * roll. plies = 1 looks one ply deeper (gnubg's 1-ply): the best 8 ends
 * valued again by the opponent's best reply to each roll. `slots` games at
 * once: each slot keeps the rest of its chosen turn, so the later moves of
 * a turn cost no network call. The net is borrowed as for a search. */

typedef struct zeroth_greedy zeroth_greedy_t;

ZEROTH_API zeroth_status zeroth_greedy_new(const zeroth_game_t *game, zeroth_net_t *net, int slots,
                                           int plies, zeroth_greedy_t **out);
ZEROTH_API void zeroth_greedy_free(zeroth_greedy_t *greedy);
/* For k < n: the move to play at states[k] (n * state_size bytes, decision
 * states) in slots[k] (the first n slots when NULL) into actions[k], and the
 * value of the turn it begins, for the player to move, into values[k] (NULL:
 * not wanted). */
ZEROTH_API zeroth_status zeroth_greedy_choose(zeroth_greedy_t *greedy, int n, const int *slots,
                                              const void *states, int *actions, float *values);

/* ---- training runs ----
 *
 * A run trains by self-play into a run directory (config.ini, log.txt,
 * metrics.jsonl, ckpt/), as `zeroth train` does; every key is documented in
 * configs/<game>.ini of the source tree. Nothing runs until zeroth_run_step. */

typedef struct zeroth_run zeroth_run_t;

/* A new run. config: INI text or "key=value" lines (or one line of
 * space-separated key=value pairs); it names the game with game=NAME and
 * may set the game's settings (vertices=14). Keys left out take the built-in
 * defaults, not configs/<game>.ini. run_dir NULL: runs/<game>-<date-time>.
 * Fails on an unknown key or an existing run in run_dir. */
ZEROTH_API zeroth_status zeroth_run_new(const char *config, const char *run_dir,
                                        zeroth_run_t **out);
/* Continues the run in run_dir from its latest checkpoint, with its
 * config.ini and then `overrides` (NULL or "" for none). */
ZEROTH_API zeroth_status zeroth_run_resume(const char *run_dir, const char *overrides,
                                           zeroth_run_t **out);
/* Trains until `steps` more learner steps or `seconds` of wall time have
 * passed (0: no such bound; both 0: until stopped). *done becomes 1 when
 * the run is over (stopped, or played perfectly with
 * arena.stop_on_perfect), else 0; stepping a run that is over does nothing. */
ZEROTH_API zeroth_status zeroth_run_step(zeroth_run_t *run, int64_t steps, double seconds,
                                         int *done);
/* Asks a zeroth_run_step under way (or the next one) to return early with
 * *done = 1. Async-signal-safe. */
ZEROTH_API void zeroth_run_request_stop(zeroth_run_t *run);
/* One figure of the run so far: "step", "games", "positions", "elapsed"
 * (seconds over all sessions), "loss_policy", "loss_value", "loss_total"
 * (the last reported averages; 0 before any). */
ZEROTH_API zeroth_status zeroth_run_metric(const zeroth_run_t *run, const char *name,
                                           double *value);
/* The run directory (zeroth_net_open takes it for the latest weights). */
ZEROTH_API const char *zeroth_run_dir(const zeroth_run_t *run);
/* Ends the run, leaving a checkpoint of where it stopped (zeroth_run_resume
 * continues from it), and frees it; NULL is accepted. After a failed
 * zeroth_run_step it writes nothing: the last checkpoint stays the one to
 * resume (a failed step is not retried). */
ZEROTH_API zeroth_status zeroth_run_close(zeroth_run_t *run);

#ifdef __cplusplus
}
#endif

#endif
