/* libzeroth (DESIGN.md §2, layer "api"): the public handles of
 * include/zeroth/zeroth.h over the modules of src/, one file per handle
 * (game.c, net.c, search.c, run.c) and api.c for versions, errors and
 * logging. This header holds what those files share; nothing outside
 * src/api/ includes it. Every public function checks its arguments before
 * any module sees them, since the modules ZT_ASSERT their invariants and the
 * library must not abort on a caller's mistake. */
#ifndef ZT_API_API_H
#define ZT_API_API_H

#include <stdbool.h>

#include "core/config.h"
#include "core/status.h"
#include "agent/az_model.h"
#include "game/game.h"
#include "zeroth/zeroth.h"

/* zt_status and zeroth_status have the same values (api.c checks it). */
static inline zeroth_status zt_api_status(zt_status s)
{
    return (zeroth_status)s;
}

/* ZT_TRY for the public functions, which return a zeroth_status. */
#define ZT_API_TRY(expr)                                                                           \
    do {                                                                                           \
        zt_status zt_api_s_ = (expr);                                                              \
        if (zt_api_s_ != ZT_OK) return zt_api_status(zt_api_s_);                                   \
    } while (0)

/* A settings string as a new config (the caller frees it): INI text when it
 * holds a newline or a '[', else key=value pairs separated by blanks
 * ("backend=ref threads=2"). NULL and "" give an empty config. `what` names
 * the string in messages ("net settings"). */
zt_status zt_api_settings(const char *text, const char *what, zt_config **out);
/* The same applied over an existing config (later values win). */
zt_status zt_api_settings_apply(zt_config *cfg, const char *text, const char *what);

/* Argument checks that name the function `fn`: ZT_ERR_INVALID unless ptr
 * is non-NULL ("zeroth_game_step: actions is NULL"); unless n >= min
 * ("zeroth_net_forward: n = 0, must be at least 1"). */
zt_status zt_api_need(const char *fn, const void *ptr, const char *what);
zt_status zt_api_count(const char *fn, int n, int min);
/* A game and a net given to `fn`, both non-NULL, the net playing that game
 * ("zeroth_search_new: the net plays 'tictactoe', not 'connect4'"). */
zt_status zt_api_need_net_for(const char *fn, const zeroth_game_t *game, const zeroth_net_t *net);

/* The game of a public game handle (game.c). */
const zt_game *zt_api_game_of(const zeroth_game_t *game);

/* The game a net plays and the evaluator over it (net.c); both live as
 * long as the net. */
const zt_game *zt_api_net_game(const zeroth_net_t *net);
const zt_evaluator *zt_api_net_evaluator(const zeroth_net_t *net);

/* Checks that state i of game g is at a decision (a player to move), naming
 * `fn` and i otherwise. */
zt_status zt_api_decision_state(const zt_game *g, const void *state, int i, const char *fn);

/* Whether `action` may be applied to state s of g: a legal action at a
 * decision, an outcome of non-zero probability at a chance node. The
 * message names `fn` and the place, `where` formatted with `index`
 * ("state %d", "the root of tree %d"). */
zt_status zt_api_check_action(const zt_game *g, const void *s, int action, const char *fn,
                              const char *where, int index);

/* The caller's recurrent model of zeroth_search_new_recurrent over game g
 * (recurrent.c), for batches up to max_batch; g must outlive it. */
zt_status zt_api_recurrent_model_new(const zt_game *g, size_t embedding_size,
                                     zeroth_root_fn root_fn, zeroth_recurrent_fn recurrent_fn,
                                     void *user, int max_batch, zt_model **out);

#endif
