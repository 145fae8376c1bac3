/* The player interface: something that chooses one action for the side to
 * move, one position at a time (a backgammon turn is several actions, so a
 * player is asked once per checker move). Games declare their baseline
 * players through their registry entry (game.h, zt_baseline); the generic
 * ones (random, perfect) and the factory over all of them are in
 * agent/player.h. The caller owns a player and frees it with zt_player_free. */
#ifndef ZT_GAME_PLAYER_H
#define ZT_GAME_PLAYER_H

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

static inline void zt_player_free(zt_player *p)
{
    if (p) p->free(p);
}

#endif
