/* Self-play actors (DESIGN.md §1, §4): an actor owns G games played in
 * lockstep, their search trees (one zt_search over G trees), the model it
 * searches with (built by an injected model factory: AlphaZero today) and
 * an NN cache. The model calls an injected evaluator: a private net on the
 * actor's thread or a shared evaluator service (agent/evaluator.h). Every
 * step plays one move in each running game, all G searches sharing one
 * batched model call per round; finished games become replay trajectories.
 * With playout-cap randomisation (fast searches) a step is the rounds of one
 * fast search instead: the games whose search ended move, the full
 * searches go on across steps, and every round's call holds all G games.
 *
 * Two ways to run. Continuous: a finished game goes to the trajectory sink
 * (sink.h) at once and its slot starts a new game (what concurrent training
 * wants). Generations: zt_actor_begin_generation starts G games from a seed
 * derived from (seed, actor id, generation), finished games wait in their
 * slots and zt_actor_flush pushes them in slot order, so that a generation's result
 * depends on nothing but its seed and the weights (exact resume).
 *
 * The caller owns what zt_actor_new returns (zt_actor_free); the game must
 * outlive it. An actor is used by one thread at a time. */
#ifndef ZT_SELFPLAY_ACTOR_H
#define ZT_SELFPLAY_ACTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "agent/evaluator.h"
#include "game/game.h"
#include "replay/replay.h"
#include "search/search.h"
#include "selfplay/sink.h"

typedef struct zt_actor_config {
    int games;                 /* G: games in lockstep */
    zt_search_config search;   /* the full search; leaves_per_round is K */
    /* Playout-cap randomisation (Wu 2019 §3.1): a share of the moves get the
     * full search and become policy targets, the others a cheap search of
     * fast_simulations whose positions are value targets only. */
    double full_search_fraction; /* 1: every move searched fully; 0: none (no policy targets) */
    int fast_simulations;
    /* The moves without the full search are chosen greedily instead of by
     * a fast search: the network's value of every end of the mover's turn,
     * the best one played (agent/greedy.h; TD-Gammon's move choice). */
    bool greedy_fast;
    /* The first temperature_moves plies of a game are sampled at
     * `temperature` (zt_search_choose: PUCT from the visit counts, Gumbel
     * from the improved policy); later ones take PUCT's most visited
     * action or Gumbel's sequential-halving winner. 0 by default: Gumbel
     * explores through its noise alone. */
    int temperature_moves;
    float temperature;
    /* > 0: the search's root noise (Gumbel's variables, PUCT's Dirichlet)
     * in a game's first noise_plies plies only (random opening plies
     * count); the later moves are the noiseless search's choice (Gumbel:
     * the halving winner among the top-m of the prior), so that a game's
     * end, and the value target its outcome gives every position, is
     * what the net's best play makes of its middle game. 0: noise in
     * every move. */
    int noise_plies;
    /* Resignation (Silver et al. 2017): a player whose root value falls
     * below the threshold loses at once, except in a share of games played
     * out to the end to count false resignations. With resign_false_rate
     * 0 the threshold is resign_threshold. Above 0 it is calibrated as
     * AlphaGo Zero's was: from the played-out games, the highest threshold
     * at most resign_threshold under which no more than that share of the
     * sides that would have resigned did not lose (zt_resign_calibrate);
     * none, so no resignation, until ZT_RESIGN_MIN_SIDES played-out sides
     * are in or while no threshold keeps the share. A young net's values
     * are far off, and resigned games teach the net the loss it expected,
     * so an uncalibrated threshold feeds its own errors back (backgammon,
     * first minutes at -0.9: a fifth of the played-out sides that would
     * have resigned did not lose, and every resigned game is recorded as
     * a lost backgammon). */
    bool resign;
    float resign_threshold;
    double resign_playout_fraction;
    double resign_false_rate;
    /* Random openings: a share of games begin with 1..random_opening_plies
     * uniformly random moves, neither searched nor recorded, so that the
     * net also sees positions strong self-play never reaches (KataGo plays
     * a few random opening moves for the same reason, Wu 2019 §5). */
    double random_opening_fraction;
    int random_opening_plies;
    /* Opening players: a comma-separated list of zt_player_new specs
     * ("alphabeta:2,alphabeta:4"); where it is not empty (NULL or "": none)
     * each random opening's plies are played by one of them, drawn per game,
     * and each ply with probability opening_noise by a uniformly random move
     * instead. Openings nearer to what reasonable players reach than random
     * moves are (issue 18: the hard sets come from alphabeta play), still
     * neither searched nor recorded. */
    const char *opening_players;
    double opening_noise;
    /* A share of the searched moves played uniformly at random instead of
     * the search's choice, recorded like any other (the search's policy
     * target, the move played): MuZero's dynamics then also learn moves
     * self-play would not make (leaving a threat open), whose consequences
     * a model otherwise only guesses. 0: none (no random draw). */
    double random_move_fraction;
    /* Start positions: a share start_fraction of games begin from one of
     * the num_start_states states (the game's state_size bytes each,
     * borrowed: they outlive the actor), drawn uniformly, with no random
     * opening on top; only what follows is recorded. So the net plays and
     * learns the positions where it errs (issue 18: games started from hard
     * positions). 0 states: every game from the start. */
    const uint8_t *start_states;
    int num_start_states;
    double start_fraction;
    bool nncache;
    int nncache_entries;
    bool root_cache; /* deep search of the start position, cloned into new games */
    int root_cache_simulations;
    /* Every position's record also holds the action played from it and its
     * reward (replay/record.h): what MuZero's unrolled training needs. */
    bool record_actions;
    /* Every full search's record also holds its surprise, how far its
     * policy moved from the net's prior (zt_replay_surprise): what
     * surprise-weighted sampling (replay.surprise_weight) draws by. */
    bool record_surprise;
    bool continuous;
    uint64_t seed;
    int id; /* the actor's number: its random streams */
} zt_actor_config;

/* Settings every game can start from: Gumbel with 32 simulations, 16 games,
 * no playout-cap randomisation, resignation off, NN and root caches on. */
void zt_actor_config_default(zt_actor_config *c);

typedef struct zt_actor_stats {
    uint64_t moves;          /* moves played (positions recorded) */
    uint64_t full_searches;  /* of which with the full search */
    uint64_t games;          /* games finished */
    uint64_t games_abandoned; /* games dropped at max_game_length plies, unfinished */
    uint64_t games_added;    /* games appended to the replay buffer */
    uint64_t positions_added; /* their positions */
    uint64_t inferences;     /* positions sent to the network */
    uint64_t net_calls;      /* network calls (batches): inferences / net_calls is the mean batch */
    uint64_t positions_valued; /* positions the model needed (cache lookups) */
    uint64_t nncache_hits;
    uint64_t resignations;
    uint64_t playouts_would_resign; /* played-out games where a side would have resigned */
    uint64_t false_resignations;    /* ... and that side did not lose */
    uint64_t weight_updates;
} zt_actor_stats;

typedef struct zt_actor zt_actor;

/* Resignation's calibration: each side of a played-out game gives the
 * lowest root value it saw at its own moves and whether it lost. */
typedef struct zt_resign_side {
    float min_value;
    bool lost;
} zt_resign_side;

enum {
    ZT_RESIGN_WINDOW = 1000,   /* the newest played-out sides an actor calibrates on */
    ZT_RESIGN_MIN_SIDES = 100, /* ... and the fewest it sets a threshold from */
};
#define ZT_RESIGN_NONE (-2.0f) /* no threshold: below every root value */

/* The highest threshold t <= ceiling such that, of the n sides with
 * min_value < t, at most false_rate (a share) did not lose, where such a t
 * exists and n >= ZT_RESIGN_MIN_SIDES; ZT_RESIGN_NONE otherwise. t is a
 * side's min_value (or the ceiling), so it separates the sides exactly.
 * Sorts sides[0..n) in place. */
float zt_resign_calibrate(zt_resign_side *sides, int n, float ceiling, double false_rate);

/* The batch one round of an actor of cfg's searches sends at most: G
 * games x K leaves (the batch int8's speed is measured at). */
int zt_actor_round_batch(const zt_actor_config *cfg);

/* The largest batch an actor of cfg sends its evaluator: a round's, times
 * the chance outcomes where the model expands them (the batch to reserve). */
int zt_actor_eval_batch(const zt_game *g, const zt_actor_config *cfg);

/* A fresh actor searching with the model mf builds over ev (both borrowed;
 * the evaluator must outlive the actor). Building the root cache evaluates
 * positions, so the evaluator's weights should be in place first, else call
 * zt_actor_weights_changed once they are. */
zt_status zt_actor_new(const zt_game *g, const zt_model_factory *mf, const zt_evaluator *ev,
                       const zt_actor_config *cfg, zt_actor **out);
void zt_actor_free(zt_actor *a);

/* After the evaluator's weights changed: forgets the NN cache and rebuilds
 * the root cache. No game may be mid-search (between steps is fine). */
zt_status zt_actor_weights_changed(zt_actor *a);

/* Generations: starts G new games from the generation's seed. */
zt_status zt_actor_begin_generation(zt_actor *a, uint64_t generation);
/* True when no game is running (a generation is over). */
bool zt_actor_idle(const zt_actor *a);
/* Pushes the finished games of the generation to the sink in slot order. */
zt_status zt_actor_flush(zt_actor *a, const zt_traj_sink *sink);

/* One move in every running game. Continuous mode pushes finished games to
 * the sink (which may be NULL in generation mode) and starts new ones. */
zt_status zt_actor_step(zt_actor *a, const zt_traj_sink *sink);

zt_actor_stats zt_actor_get_stats(const zt_actor *a);
/* The resignation threshold in force: resign_threshold, or the calibrated
 * one, or ZT_RESIGN_NONE (resignation off, or not calibrated yet). */
float zt_actor_resign_threshold(const zt_actor *a);

/* zt_actor_eval_batch of the actor's game and settings. */
int zt_actor_max_batch(const zt_actor *a);

/* Bytes the actor holds for its searches and NN cache (the parts that
 * depend on the settings; the network's own memory is not counted). */
typedef struct zt_actor_memory {
    size_t trees;   /* every search's trees, root cache and spare included */
    size_t nncache; /* 0 without the NN cache */
} zt_actor_memory;

zt_actor_memory zt_actor_get_memory(const zt_actor *a);

#endif
