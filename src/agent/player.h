/* Baseline players by spec (used by the arena and eval): the generic ones,
 * "random", "perfect"/"solver" (any game whose registry entry names an
 * exact solver) and "mcts:N" (UCT with random rollouts, any two-player
 * game), the baselines games declare in their registry entries
 * (game.h, zt_baseline: "alphabeta:D" for connect4, "negamax:D" for sim,
 * "pubeval" for backgammon), and the outside engine GNU Backgammon
 * ("gnubg" or "gnubg:P", agent/gnubg.h). The interface is game/player.h. The caller
 * owns what zt_player_new returns; free with zt_player_free. */
#ifndef ZT_AGENT_PLAYER_H
#define ZT_AGENT_PLAYER_H

#include "core/rng.h"
#include "game/game.h"
#include "game/player.h"

/* spec: "random", "perfect" (exact solver, random among value-preserving
 * moves), "solver" (the exact solver, random among the moves that also
 * keep its finer score: fastest win, slowest loss), "mcts:N" (Monte Carlo
 * tree search with random rollouts, N simulations a move; two-player
 * games; agent/mcts_rollout.c), or a baseline of g's
 * registry entry, or "gnubg"/"gnubg:P" (backgammon; needs the gnubg
 * program, ZT_ERR_NOT_FOUND without it). Errors name the spec: an unknown player (listing every
 * spec known), a bad depth, a baseline of another game ("player 'alphabeta'
 * exists for connect4, not sim K6 k=3 avoid"), a game without a solver. */
zt_status zt_player_new(const zt_game *g, const char *spec, zt_player **out);

/* A list's bounds: specs, and bytes of a spec with its terminator. */
#define ZT_PLAYER_LIST_MAX 64
#define ZT_PLAYER_SPEC_LEN 128

/* Splits a comma-separated list of specs (blanks around each ignored; NULL
 * or blank: none) into specs[0 .. *n), `len` bytes each (at most
 * ZT_PLAYER_SPEC_LEN), at most `max`, without judging them. Errors name the
 * list's setting `what`: an empty entry, a spec of `len` characters or
 * more, more than `max` specs. */
zt_status zt_player_list_split(const char *list, const char *what, char *specs, size_t len, int max,
                               int *n);

/* The players of such a list (at most ZT_PLAYER_LIST_MAX), made in order
 * into *out (zt_xmalloc'd, *n of them; NULL and 0 for an empty list); free
 * with zt_players_free. An error names the list's setting `what` and the
 * spec: "what: 'nobody': unknown player ...". */
zt_status zt_players_new(const zt_game *g, const char *list, const char *what, zt_player ***out,
                         int *n);
void zt_players_free(zt_player **players, int n);

/* Every player spec zt_player_new knows, for help texts and messages:
 * "random, perfect, solver, mcts:N, alphabeta:D, negamax:D, pubeval, expectimax:D, gnubg:P". */
void zt_player_specs(char *buf, size_t cap);

/* "mcts:N" (zt_player_new's spec, N in 1..100000). */
zt_status zt_player_new_mcts(const zt_game *g, const char *spec, zt_player **out);

#endif
