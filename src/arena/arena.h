/* The arena: matches between two agents with alternating colours, Elo with a
 * 95 % interval, a sequential probability ratio test to stop early, and the
 * solver test sets (share of positions played optimally, or the mistake
 * rate judged by the exact solver).
 *
 * An agent is anything that chooses actions. It is asked for several games
 * at once, so an agent built on a network and a batched search evaluates
 * all the games it is to move in with one call; baseline players
 * (game/player.h) are wrapped one position at a time.
 *
 * The caller owns what zt_agent_* constructors return (zt_agent_free) and
 * the game, which must outlive them. */
#ifndef ZT_ARENA_ARENA_H
#define ZT_ARENA_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/az_model.h"
#include "agent/mz_model.h"
#include "agent/player.h"
#include "core/rng.h"
#include "core/status.h"
#include "game/game.h"
#include "game/solver.h"
#include "search/nncache.h"
#include "search/search.h"

/* ---- agents ---- */

typedef struct zt_agent zt_agent;
struct zt_agent {
    const zt_game *game;
    char name[64];
    void *impl;
    int max_games; /* games it can follow at once (slots 0 .. max_games - 1) */
    /* Chooses actions[i], legal in states[i] (a player node), for the game in
     * slots[i], i < n <= max_games, slots distinct; rngs[i] is that game's
     * own stream. A failure (a network call that failed) ends the match
     * with that status. */
    zt_status (*choose)(zt_agent *a, int n, const int *slots, const void *const *states,
                        zt_rng *const *rngs, int *actions);
    /* Optional: a new game starts in `slot` (forget what was kept of it). */
    void (*new_game)(zt_agent *a, int slot);
    /* Optional: `action` (either side's, or a chance outcome) was played in
     * the game in `slot` (tree reuse follows it). */
    void (*played)(zt_agent *a, int slot, int action);
    void (*free)(zt_agent *a);
};

void zt_agent_free(zt_agent *a);

/* A baseline player, asked one position at a time. With `own`, the agent
 * frees the player. */
zt_agent *zt_agent_from_player(zt_player *p, bool own);

/* The raw policy: the legal action with the highest logit of one evaluator
 * call over all positions asked (ties to the lowest action). The evaluator
 * context is borrowed. */
zt_status zt_agent_policy_new(const zt_game *g, const zt_evaluator *ev, int max_games,
                              zt_agent **out);

/* Greedy play without search (agent/greedy.h): each turn ends where the
 * evaluator's value is highest (backgammon: the best complete play, the
 * opponent's roll averaged exactly), looking `plies` (0 or 1) deeper
 * (zt_greedy_new). The evaluator context is borrowed. */
zt_status zt_agent_greedy_new(const zt_game *g, const zt_evaluator *ev, int max_games, int plies,
                              zt_agent **out);

/* Search on the model the evaluator's net calls for (AlphaZero's, or MuZero's for a
 * MuZero net: agent/mz_model.h) over an evaluator: one
 * tree per game, all of them searched in lockstep, playing the search's
 * choice at temperature 0 (PUCT: most visits; Gumbel: the sequential-halving
 * winner). cache may be NULL. */
zt_status zt_agent_search_new(const zt_game *g, const zt_evaluator *ev, const zt_search_config *cfg,
                              int max_games, zt_nncache *cache, zt_agent **out);

/* ---- Elo and the SPRT ---- */

/* Logistic Elo: score = 1 / (1 + 10^(-elo / 400)). */
double zt_elo_from_score(double score);
double zt_score_from_elo(double elo);

typedef struct zt_elo {
    double score;  /* (wins + draws / 2) / games */
    double elo;    /* point estimate */
    double lo, hi; /* 95 % interval */
    bool bound;    /* a perfect score: elo is an estimate from half a game less */
} zt_elo;

/* From the trinomial counts: the score's standard error over games gives
 * score +- 1.96 se, mapped to Elo. A perfect (or nil) score is computed as
 * if half a game had gone the other way, all draws as if half a game had
 * been a quarter won and a quarter lost (an interval around 0, not
 * [0, 0]), and interval ends are kept a quarter game from 0 and 1, so
 * everything is finite. */
zt_elo zt_elo_estimate(int wins, int draws, int losses);

typedef struct zt_sprt_config {
    double elo0, elo1;  /* H0: elo = elo0; H1: elo = elo1 (logistic Elo) */
    double alpha, beta; /* error rates of type I and II */
} zt_sprt_config;

typedef struct zt_sprt_state {
    double llr;          /* log-likelihood ratio of H1 to H0 */
    double lower, upper; /* log(beta / (1 - alpha)), log((1 - beta) / alpha) */
    int decision;        /* +1 H1 accepted, -1 H0 accepted, 0 continue */
} zt_sprt_state;

/* Wald's SPRT on the trinomial results in the normal approximation (the
 * GSPRT of M. Van den Bergh used by Fishtest: LLR = N (s1 - s0)(2 s - s0 -
 * s1) / (2 var), s and var the score's sample mean and per-game variance).
 * The mean and variance include a prior of half a win and half a loss, so
 * that short or one-sided runs (all draws, all wins) decide after a
 * sensible number of games instead of at once. */
zt_sprt_state zt_sprt_update(const zt_sprt_config *cfg, int wins, int draws, int losses);

/* ---- points per game ---- */

/* A mean return per game (backgammon: 1, 2 or 3 points for a single game,
 * gammon or backgammon) with its 95 % interval. */
typedef struct zt_points {
    double mean;   /* returns summed / games */
    double se;     /* standard error of the mean */
    double lo, hi; /* mean -+ 1.96 se, kept inside [-max_return, max_return] */
    int units;     /* independent samples the se is from: games, or pairs */
} zt_points;

/* From the returns of n games, in game order. Paired (duplicate dice): games
 * 2k and 2k+1 are one sample, their mean return, since they share their dice
 * and so are not independent; a trailing unpaired game is a sample of its
 * own. se = sample standard deviation of the samples / sqrt(samples); with
 * fewer than two samples, se = max_return (the interval is the whole range). */
zt_points zt_points_estimate(const float *returns, int n, bool paired, double max_return);

/* "points per game +0.312 [+0.250, +0.374]". */
void zt_points_format(const zt_points *p, char *buf, size_t cap);

/* ---- matches ---- */

typedef struct zt_match_result zt_match_result;

typedef struct zt_match_config {
    int games;       /* games to play (at most, with an SPRT) */
    int concurrency; /* games in flight (0: as many as both agents follow, at most 256) */
    uint64_t seed;   /* game i draws chance and the agents' randomness from (seed, i) */
    /* Duplicate dice (games with chance nodes): games 2k and 2k+1, colours
     * swapped, draw their chance outcomes from one stream of their own
     * (seed, k), apart from the agents' randomness, so each side gets the
     * rolls the other had; luck cancels within a pair. */
    bool duplicate;
    bool use_sprt;
    zt_sprt_config sprt;
    /* Optional: called on the match's thread after each game is counted
     * (in game order), with the counts so far (elo not yet filled in) and
     * progress_ctx. For a progress display; the arena prints nothing. */
    void (*progress)(void *ctx, const zt_match_result *so_far);
    void *progress_ctx;
} zt_match_config;

struct zt_match_result {
    int games, wins, draws, losses; /* from agent a's side */
    int wins_first, games_first;    /* a's wins and games as player 0 */
    double total_return;            /* a's summed returns (backgammon points) */
    zt_points points;               /* a's points per game (paired when duplicate) */
    bool duplicate;                 /* played with duplicate dice */
    zt_elo elo;
    zt_sprt_state sprt; /* when use_sprt */
    bool stopped_early; /* the SPRT decided before cfg.games */
};

/* Plays a against b; a is player 0 in even games and player 1 in odd ones.
 * Results are counted in game order; with an SPRT the match ends at the
 * first game after which it decides, and games in flight beyond it are
 * dropped, so the result does not depend on the concurrency.
 * ZT_ERR_INVALID if an agent chooses an illegal action. */
zt_status zt_arena_match(const zt_game *g, zt_agent *a, zt_agent *b, const zt_match_config *cfg,
                         zt_match_result *out);

/* "W-D-L 12-3-5, score 0.675, Elo +127 [+21, +262]" and, with an SPRT,
 * " SPRT LLR 2.95 [-2.94, 2.94] H1". */
void zt_match_format(const zt_match_result *r, bool with_sprt, char *buf, size_t cap);

/* ---- one-player games: the score ---- */

#define ZT_SCORE_MAX_LEVELS 24

typedef struct zt_score_result {
    int games;
    double mean;     /* mean final score (the returns' r[0]) */
    double ci95;     /* half-width of its 95 % interval: 1.96 s / sqrt(games) */
    double min, max; /* lowest and highest score */
    double total, total_sq;
    int64_t moves;   /* the agent's moves over all games */
    /* The game's `level` of each finished game (2048: the highest tile), as
     * (value, games) pairs in increasing value; num_levels 0 without one. */
    int num_levels;
    int level_value[ZT_SCORE_MAX_LEVELS];
    int level_games[ZT_SCORE_MAX_LEVELS];
} zt_score_result;

typedef struct zt_score_config {
    int games;
    int concurrency; /* games in flight (0: as many as the agent follows, at most 256) */
    uint64_t seed;   /* game i draws chance and the agent's randomness from (seed, i) */
    /* Optional: called after each game is counted (in game order). */
    void (*progress)(void *ctx, const zt_score_result *so_far);
    void *progress_ctx;
} zt_score_config;

/* Plays cfg->games games of one-player game g with the agent and gathers
 * their scores, counted in game order (so the result does not depend on the
 * concurrency). ZT_ERR_INVALID for a two-player game or an illegal move. */
zt_status zt_arena_score(const zt_game *g, zt_agent *agent, const zt_score_config *cfg,
                         zt_score_result *out);

/* "mean score 2417 +- 153 (95 %), min 612, max 6904, 100 games". */
void zt_score_format(const zt_score_result *r, char *buf, size_t cap);
/* "highest tile: 128 3 %, 256 21 %, 512 60 %, 1024 16 %" ("" without levels). */
void zt_score_levels_format(const zt_game *g, const zt_score_result *r, char *buf, size_t cap);

/* ---- solver test sets ---- */

typedef struct zt_positions_result {
    int positions; /* judged */
    int optimal;   /* the chosen move keeps the position's exact value */
    int mistakes;  /* positions - optimal: a win turned into a draw or loss, a draw into a loss */
    bool report_mistakes; /* "mistakes N/M", else "optimal N/M": the judge of the
                           * game's position set of that name (game.h) */
    /* The same by depth band (ZT_BAND_*), for games whose positions have
     * bands (Connect Four); positions without one are counted only above. */
    int band_positions[ZT_BANDS], band_optimal[ZT_BANDS];
    /* The same by the position's exact value for the side to move (where the
     * file gives it or eval solves it): [0] won, [1] drawn, [2] lost. Every
     * move keeps a lost position lost, so its count of mistakes is 0. */
    int value_positions[3], value_optimal[3];
    /* With cfg->value_ev: the net's own value of each position whose exact
     * value is known, for the side to move, by that value ([0] won, [1]
     * drawn, [2] lost): how many, the sum of the values, the sum of their
     * squared errors against 1, 0 and -1, and how many lie on the wrong
     * side of a third (won: v <= 1/3; drawn: |v| > 1/3; lost: v >= -1/3),
     * so a value error shows apart from the search that acts on it. */
    int net_positions[3], net_wrong[3];
    double net_sum[3], net_sq[3];
    /* Images of each position judged (cfg->images; 1: as written). Every
     * count above is over all of them, `positions` = images x the file's
     * positions; these two count the file's positions: those whose move
     * lost value in every image, and in at least one. */
    int images;
    int wrong_every, wrong_some;
} zt_positions_result;

typedef struct zt_positions_config {
    const char *path; /* a shared position file (game/solver.h parses it) */
    int limit;        /* > 0: only the first `limit` positions */
    uint64_t seed;    /* position i draws the agent's randomness from (seed, i) */
    /* Optional: called on the caller's thread as the work goes on: `read`
     * positions of `total` (the file's, cut to the limit) are parsed and
     * solved, so_far->positions of them judged. For a progress display;
     * the arena prints nothing. */
    void (*progress)(void *ctx, int read, int total, const zt_positions_result *so_far);
    void *progress_ctx;
    /* Optional: called on the caller's thread for each position whose move
     * lost value, in file order (a position's images in turn): its 0-based
     * index among the positions read, the image asked (0: as written), its
     * line of the file as written and its state, the move played and the
     * moves that keep the value (those the file lists, or the solver's),
     * both in the position's own orientation, as written. */
    void (*mistake)(void *ctx, int index, int image, const char *line, const void *state,
                    int action, const uint16_t *keep, int num_keep);
    void *mistake_ctx;
    /* Optional: the network whose value of each position the result
     * reports beside the moves (net_* above; a MuZero net's value from its
     * representation), usually the one the agent searches with. */
    const zt_evaluator *value_ev;
    /* Images of each position to judge, from 1 (0 reads as 1: the
     * position as written) to the game's num_symmetries: image k is the
     * position under the game's symmetry k (sym_state), each asked as a
     * position of its own and its move mapped back. A value-preserving
     * image should change no move's verdict; the counts over all images
     * judge an agent on more positions than the file holds, and those
     * wrong in one image but not another show how much of a count is the
     * orientation's. */
    int images;
    /* Optional, with images > 1: `images` results, each image's own
     * (filled like `out` with images = 1, but for wrong_every and
     * wrong_some, which only `out` counts). */
    zt_positions_result *per_image;
} zt_positions_config;

/* Asks the agent for a move in each position of the file (each of its
 * cfg->images images) and judges it by the value-preserving moves the file
 * lists, or where it lists none (Connect Four) by the exact solver's weak
 * solve of the children. Positions (images) are asked in batches of up to
 * 256 (fewer if the agent follows fewer games). */
zt_status zt_arena_positions_run(const zt_game *g, zt_agent *agent, const zt_positions_config *cfg,
                                 zt_positions_result *out);

/* The same without a progress callback. */
zt_status zt_arena_positions(const zt_game *g, zt_agent *agent, const char *path, int limit,
                             uint64_t seed, zt_positions_result *out);

/* "optimal 4520/4520" or "mistakes 12/1000". */
void zt_positions_format(const zt_positions_result *r, char *buf, size_t cap);

/* The net's values by the positions' exact values: "won +0.62 (wrong 8/96),
 * drawn +0.21 (wrong 40/144), lost -0.55 (wrong 6/60), RMSE 0.41"; "" when
 * none was valued. */
void zt_positions_format_net(const zt_positions_result *r, char *buf, size_t cap);

/* The same over the three groups together: the positions valued
 * (*valued) and those on the wrong side (*wrong; either may be NULL);
 * returns the RMSE, 0 when none was valued. */
double zt_positions_net_totals(const zt_positions_result *r, int *valued, int *wrong);

/* The bands with positions: "opening mistakes 3/120 (2.50 %), middle
 * mistakes 1/80 (1.25 %)"; "" when no position has a band. */
void zt_positions_format_bands(const zt_positions_result *r, char *buf, size_t cap);
/* The values with positions: "won mistakes 9/96 (9.38 %), drawn mistakes
 * 16/144 (11.11 %), lost mistakes 0/60 (0.00 %)"; "" when no value is known. */
void zt_positions_format_values(const zt_positions_result *r, char *buf, size_t cap);

#endif
