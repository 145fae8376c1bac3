/* zeroth serve: games against a model in the browser. This module is the
 * game-agnostic core of the server: sessions (one game each, bounded in
 * number), the agent's replies by search or raw policy, and the JSON API of
 * docs/serve.md as a function from a request to a reply, so that it is
 * tested without sockets. http.h puts it on a socket; page.h is the page.
 *
 * Thread safety: zt_serve_handle may be called from many threads at once.
 * Requests on one session run one at a time; the agent's searches of all
 * sessions share one search and are serialised.
 *
 * Ownership: the caller owns the server (zt_serve_free) and each reply's
 * body (zt_serve_reply_free); the game and the evaluator's context are
 * borrowed and must outlive the server. */
#ifndef ZT_SERVE_SERVE_H
#define ZT_SERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/evaluator.h"
#include "core/status.h"
#include "game/game.h"
#include "search/search.h"

typedef struct zt_serve_config {
    const zt_game *game;
    zt_evaluator ev;
    /* The agent's search (search/settings.h), not yet sized: sized here for
     * each simulation count a player picks. num_simulations is the default
     * of a new game; 0 plays the raw policy, or greedily (below). */
    zt_search_config search;
    /* With 0 simulations the agent plays greedily (agent/greedy.h: each turn
     * ends where the net's value is highest), not the raw policy: a model
     * whose run played so (arena.sims = 0, backgammon's default) and whose
     * policy head learned nothing. */
    bool greedy;
    int greedy_plies; /* greedy: plies deeper, 0 or 1 (zt_greedy_new) */
    int max_sims;        /* the most simulations a player may pick (>= the default) */
    int max_sessions;    /* games at once, >= 1 */
    double idle_seconds; /* a session idle this long may be reclaimed for a new one */
    size_t max_body;     /* request body bytes accepted (the HTTP layer enforces it) */
    uint64_t seed;       /* dice and session ids */
    const char *model;   /* what the model was loaded from, for /api/info (copied) */
} zt_serve_config;

typedef struct zt_serve zt_serve;

/* Checks the config (bad values fail naming them) and creates the model and
 * the search the agent plays with. */
zt_status zt_serve_new(const zt_serve_config *c, zt_serve **out);
void zt_serve_free(zt_serve *srv);
const zt_serve_config *zt_serve_get_config(const zt_serve *srv);

typedef struct zt_serve_reply {
    int status;               /* HTTP status: 200, or 4xx/5xx with {"error": "..."} */
    const char *content_type; /* static */
    const char *allow;        /* the methods allowed, with status 405; else NULL */
    char *body;               /* NUL-terminated; the caller frees it (zt_serve_reply_free) */
    size_t len;
} zt_serve_reply;

/* Answers one request: `method` ("GET", "POST", ...), `path` without the
 * query string, `session_id` the query's session argument (NULL if absent),
 * the body (may be NULL when body_len is 0). Never fails: every problem is
 * a reply with a 4xx or 5xx status and a one-line JSON error. */
void zt_serve_handle(zt_serve *srv, const char *method, const char *path, const char *session_id,
                     const char *body, size_t body_len, zt_serve_reply *out);

/* A reply {"error": message} with the given status (for the HTTP layer's
 * own refusals, e.g. 413). */
void zt_serve_error_reply(int status, const char *message, zt_serve_reply *out);
void zt_serve_reply_free(zt_serve_reply *r);

/* Sessions open now. */
int zt_serve_session_count(zt_serve *srv);

#endif
