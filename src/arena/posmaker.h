/* The position-set maker: solver test sets made the way Pascal Pons made
 * his Connect Four sets (Test_L*_R*): positions drawn from played games
 * (self-play of the given agents, with some random moves mixed in),
 * deduplicated up to the game's symmetries, without those the side to move
 * wins at once, labelled by the exact solver and sorted into depth bands
 * (game/solver.h, ZT_BAND_*) and difficulty ratings.
 *
 * Connect Four only: the ratings read Pons' score (its remaining plies) and
 * the files are his format plus the value-preserving columns. The caller
 * owns the agents it passes and the result (zt_posmaker_result_free). */
#ifndef ZT_ARENA_POSMAKER_H
#define ZT_ARENA_POSMAKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena/arena.h"
#include "game/solver.h"

/* Difficulty ratings. */
enum { ZT_RATING_EASY = 0, ZT_RATING_MEDIUM, ZT_RATING_HARD, ZT_RATINGS };
/* "easy", "medium", "hard". */
extern const char *const zt_rating_names[ZT_RATINGS];

typedef enum zt_rating_kind {
    /* Pons' own measure (what his sets' data show): the plies left to the
     * end under perfect play, easy <= 14, medium 15..28, hard >= 29. */
    ZT_RATE_REMAINING,
    /* The solver's work: the nodes of the exact solve of the position on
     * an empty table, easy < nodes_medium <= medium < nodes_hard <= hard. */
    ZT_RATE_NODES,
} zt_rating_kind;

typedef struct zt_posmaker_config {
    uint64_t seed; /* every random choice derives from it */
    int games;     /* games played to draw positions from */
    /* Game i is self-play of players[i % num_players] (both sides). */
    zt_agent *const *players;
    int num_players;
    double noise; /* share of moves replaced by a uniformly random legal move */
    int per_set;  /* positions kept per (band, rating) set */
    /* Which sets to fill (want[band][rating]); candidates of a band none of
     * whose sets is wanted, or all full, are not solved. */
    bool want[ZT_BANDS][ZT_RATINGS];
    zt_rating_kind rating;
    uint64_t nodes_medium, nodes_hard; /* ZT_RATE_NODES thresholds */
    /* Solver budgets: a position whose exact solve, or whose label (the
     * children's weak solves), would take more than max_nodes is left out
     * (counted in `cut`); solving stops once all
     * solves together took budget_nodes (0: no limit). Both are node
     * counts, not seconds, so the result does not depend on the machine. */
    uint64_t max_nodes, budget_nodes;
    /* Positions never to keep, as zt_posmaker_canonical hashes (any order;
     * NULL: none): e.g. those of the sets a run is measured on, so that
     * games started from the made sets never start from a measured one.
     * A candidate among them is passed over before it is solved (counted in
     * `excluded`); the others come in the same order as without them, so
     * each set is the one made without exclusions, less the excluded
     * positions, filled up from the candidates after it. */
    const uint64_t *exclude;
    int num_exclude;
    /* Optional progress (on the caller's thread): phase 0 plays (done games
     * of total), phase 1 solves (done candidates of total, kept so far). */
    void (*progress)(void *ctx, int phase, int64_t done, int64_t total, int kept);
    void *progress_ctx;
} zt_posmaker_config;

typedef struct zt_made_position {
    char moves[48];   /* Pons' notation: columns 1..7, one per ply */
    int plies, score; /* the exact score for the side to move */
    int remaining;    /* plies to the end under perfect play */
    uint64_t nodes;   /* of its exact solve on an empty table */
    int num_moves;    /* value-preserving moves (columns 0..6) */
    uint8_t best[8];
    int band, rating;
} zt_made_position;

typedef struct zt_posmaker_result {
    zt_made_position *kept; /* in the order drawn; count of them */
    int count;
    int per[ZT_BANDS][ZT_RATINGS]; /* kept per set */
    int64_t positions;             /* non-terminal positions in the games played */
    int64_t unique;                /* of them, distinct up to symmetry */
    int64_t wins_now;              /* unique ones the side to move wins at once (left out) */
    int64_t solved;                /* candidates solved */
    int64_t cut;                   /* of them, stopped at max_nodes, rating or label (left out) */
    int64_t excluded;              /* candidates passed over as cfg->exclude positions */
    uint64_t nodes;                /* all solves together */
    double play_seconds, solve_seconds;
    double set_seconds[ZT_BANDS][ZT_RATINGS]; /* solving the kept ones */
} zt_posmaker_result;

/* Plays cfg->games games, then solves the distinct candidates in an order
 * drawn from the seed until every wanted set holds per_set positions, the
 * candidates or the budget run out. The same seed, agents and settings give
 * the same result. */
zt_status zt_posmaker_run(const zt_game *g, const zt_posmaker_config *cfg, zt_posmaker_result *out);

void zt_posmaker_result_free(zt_posmaker_result *r);

/* A position's hash up to the game's symmetries (the least over them,
 * never 0): two positions get the same one when one is a symmetry of the
 * other. What cfg->exclude holds. */
uint64_t zt_posmaker_canonical(const zt_game *g, const void *s);

/* The band and rating of a solved position. */
int zt_posmaker_rate(const zt_posmaker_config *cfg, int remaining, uint64_t nodes);

/* Connect Four: plies left to the end under perfect play, from the exact
 * score of a position after `plies` plies (Pons: |s| = 22 - the winner's
 * stones at its winning move). */
int zt_posmaker_remaining(int plies, int score);

/* Writes the set (band, rating) of r to path atomically: `header` (lines
 * to put after '# ', may be NULL), then "<moves> <score> <columns>" a line,
 * which `zeroth eval --positions` and `zeroth solve` read. */
zt_status zt_posmaker_write(const zt_posmaker_result *r, int band, int rating, const char *header,
                            const char *path);

#endif
