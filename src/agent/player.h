/* Baseline players behind one small interface (used by the arena): random,
 * perfect (exact solver), Connect Four alpha-beta, Sim negamax, backgammon
 * pubeval. A player chooses one action for the side to move; a backgammon
 * turn is several actions, so the player is asked once per checker move.
 * The caller owns what zt_player_new returns; free with zt_player_free. */
#ifndef ZT_AGENT_PLAYER_H
#define ZT_AGENT_PLAYER_H

#include "core/rng.h"
#include "game/game.h"

typedef struct zt_player zt_player;
struct zt_player {
    const zt_game *game;
    char name[64];
    void *impl;
    /* A legal action in s, which is not terminal and not a chance node. */
    int (*choose)(zt_player *p, const void *s, zt_rng *rng);
    void (*free)(zt_player *p);
};

/* spec: "random", "perfect" (exact solver, random among value-preserving
 * moves), "solver" (Connect Four: the best-scoring move), "alphabeta:D"
 * (Connect Four), "negamax:D" (Sim), "pubeval" (backgammon). */
zt_status zt_player_new(const zt_game *g, const char *spec, zt_player **out);
void zt_player_free(zt_player *p);

/* Per-game constructors, called by zt_player_new. */
zt_status zt_player_new_alphabeta_connect4(const zt_game *g, int depth, zt_player **out);
zt_status zt_player_new_negamax_sim(const zt_game *g, int depth, zt_player **out);
zt_status zt_player_new_pubeval(const zt_game *g, zt_player **out);

#endif
