/* The serve API (docs/serve.md): sessions, the agent's replies, requests
 * to replies. Nothing here knows a game by name: positions, moves and
 * boards go out in the game's own notations (to_text, action_to_text,
 * render) and the page draws them. */
#include "serve/serve.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/greedy.h"
#include "agent/mz_model.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/timer.h"
#include "search/settings.h"
#include "serve/json.h"
#include "serve/page.h"

#define TOP_MOVES 5
#define SESSION_ID_LEN 16

enum { BY_HUMAN, BY_AGENT, BY_CHANCE };
static const char *const by_name[] = {"human", "agent", "chance"};

/* One action of a game, with the agent's view of it when the agent chose it. */
typedef struct ply {
    int16_t action;
    uint8_t by;
    uint8_t player; /* who moved (0 or 1); unused for chance */
    uint8_t ntop;   /* agent: moves in top[] */
    float value;    /* agent: its root value, for itself, in [-1, 1] */
    int16_t top_action[TOP_MOVES];
    float top_share[TOP_MOVES];
} ply;

typedef struct session {
    pthread_mutex_t lock; /* held by the one request working on the session */
    /* Under the server's table_lock: */
    bool open;
    int refs; /* requests that found it and have not let it go */
    double last_used;
    char id[SESSION_ID_LEN + 1];
    /* Under lock: */
    int human; /* the player the person plays */
    int sims;  /* the agent's simulations per move (0: raw policy, or greedy) */
    zt_rng dice;
    uint8_t state[ZT_MAX_STATE_BYTES]; /* after plies[0 .. count) */
    ply *plies;
    int count, cap;
} session;

struct zt_serve {
    zt_serve_config cfg; /* cfg.model points at model_name */
    char *model_name;
    int max_plies; /* per game, chance included: the bound on a session's history */

    pthread_mutex_t table_lock;
    session *sessions; /* cfg.max_sessions slots */
    zt_rng ids;        /* session ids */
    uint64_t opened;   /* sessions opened: each one's dice stream */

    /* The agent: one search for all sessions, under search_lock. */
    pthread_mutex_t search_lock;
    zt_model *model;
    zt_search *search; /* for search_sims simulations; NULL until needed */
    int search_sims;
    float *obs, *logits; /* the raw policy's */
    zt_greedy *greedy;   /* cfg.greedy: one slot for every session (its plan
                          * goes on only where the state is the one it left) */
};

/* ---- replies ---- */

static void reply_json(zt_serve_reply *out, int status, zt_json_buf *b)
{
    out->status = status;
    out->content_type = "application/json; charset=utf-8";
    out->allow = NULL;
    out->body = zt_json_take(b, &out->len);
}

void zt_serve_error_reply(int status, const char *message, zt_serve_reply *out)
{
    zt_json_buf b = {0};
    zt_json_printf(&b, "{\"error\": ");
    zt_json_string(&b, message);
    zt_json_printf(&b, "}\n");
    reply_json(out, status, &b);
}

static void reply_error(zt_serve_reply *out, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_error(zt_serve_reply *out, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line of ASCII, whatever a message quotes from a request (a path's
     * bytes need not be UTF-8, and JSON strings must be). */
    for (char *p = msg; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n' || c == '\r' || c == '\t')
            *p = ' ';
        else if (c < 0x20 || c >= 0x7f)
            *p = '?';
    }
    zt_serve_error_reply(status, msg, out);
}

void zt_serve_reply_free(zt_serve_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* ---- the server ---- */

zt_status zt_serve_new(const zt_serve_config *c, zt_serve **out)
{
    *out = NULL;
    const zt_game *g = c->game;
    if (!g) return zt_fail(ZT_ERR_INVALID, "serve: no game");
    if (c->max_sessions < 1 || c->max_sessions > 65536)
        return zt_fail(ZT_ERR_INVALID, "serve: max sessions %d is outside [1, 65536]",
                       c->max_sessions);
    if (c->search.num_simulations < 0 || c->max_sims < c->search.num_simulations ||
        c->max_sims > 1000000)
        return zt_fail(ZT_ERR_INVALID, "serve: max sims %d must lie in [%d (the default), 1000000]",
                       c->max_sims, c->search.num_simulations);
    if (!(c->idle_seconds >= 0)) return zt_fail(ZT_ERR_INVALID, "serve: idle seconds must be >= 0");
    if (c->max_body < 64) return zt_fail(ZT_ERR_INVALID, "serve: max body must be >= 64 bytes");
    if (c->search.leaves_per_round < 1)
        return zt_fail(ZT_ERR_INVALID, "serve: leaves per round must be >= 1");

    zt_serve *srv = zt_xcalloc(1, sizeof *srv);
    srv->cfg = *c;
    srv->model_name = zt_xstrdup(c->model ? c->model : "");
    srv->cfg.model = srv->model_name;
    srv->max_plies = 4 * g->max_game_length + 64;
    pthread_mutex_init(&srv->table_lock, NULL);
    pthread_mutex_init(&srv->search_lock, NULL);
    srv->sessions = zt_xcalloc((size_t)c->max_sessions, sizeof *srv->sessions);
    for (int i = 0; i < c->max_sessions; i++) pthread_mutex_init(&srv->sessions[i].lock, NULL);
    /* Session ids from the system's entropy where it has some, so that they
     * are not guessed from the seed (which the dice follow). */
    uint64_t id_seed[2] = {c->seed, 0};
    if (getentropy(id_seed, sizeof id_seed) != 0) id_seed[1] = zt_now_ns();
    zt_rng_seed(&srv->ids, id_seed[0] ^ id_seed[1], 0x5e55);

    size_t obs = (size_t)zt_game_obs_size(g);
    srv->obs = zt_xcalloc(obs, sizeof(float));
    srv->logits = zt_xcalloc((size_t)g->num_actions, sizeof(float));
    zt_status st =
        zt_model_for_evaluator(g, &srv->cfg.ev, c->search.leaves_per_round, NULL, &srv->model);
    if (st == ZT_OK && c->greedy)
        st = zt_greedy_new(g, &srv->cfg.ev, 1, 256, c->greedy_plies, &srv->greedy);
    if (st != ZT_OK) {
        zt_serve_free(srv);
        return st;
    }
    *out = srv;
    return ZT_OK;
}

void zt_serve_free(zt_serve *srv)
{
    if (!srv) return;
    for (int i = 0; i < srv->cfg.max_sessions; i++) {
        free(srv->sessions[i].plies);
        pthread_mutex_destroy(&srv->sessions[i].lock);
    }
    free(srv->sessions);
    zt_search_free(srv->search);
    zt_model_free(srv->model);
    zt_greedy_free(srv->greedy);
    free(srv->obs);
    free(srv->logits);
    pthread_mutex_destroy(&srv->table_lock);
    pthread_mutex_destroy(&srv->search_lock);
    free(srv->model_name);
    free(srv);
}

const zt_serve_config *zt_serve_get_config(const zt_serve *srv)
{
    return &srv->cfg;
}

int zt_serve_session_count(zt_serve *srv)
{
    pthread_mutex_lock(&srv->table_lock);
    int n = 0;
    for (int i = 0; i < srv->cfg.max_sessions; i++) n += srv->sessions[i].open;
    pthread_mutex_unlock(&srv->table_lock);
    return n;
}

/* ---- the agent ---- */

typedef struct scored {
    int action;
    float share;
} scored;

static int by_share(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->share != y->share) return x->share < y->share ? 1 : -1;
    return x->action - y->action;
}

/* The search for `sims` simulations, rebuilt when a player picked another
 * count. Trees are never reused: consecutive searches belong to different
 * sessions. Under search_lock. */
static zt_status search_for(zt_serve *srv, int sims)
{
    if (srv->search && srv->search_sims == sims) return ZT_OK;
    zt_search_free(srv->search);
    srv->search = NULL;
    zt_search_config sc = srv->cfg.search;
    sc.num_simulations = sims;
    sc.tree_reuse = false;
    zt_search_config_size(&sc, srv->cfg.game, 0);
    ZT_TRY(zt_search_new(&sc, srv->model, 1, &srv->search));
    srv->search_sims = sims;
    return ZT_OK;
}

/* The agent's move in s with `sims` simulations (0: the raw policy's best,
 * or the greedy one's), its value and its top moves by visit share (policy
 * share without search; greedy: its move alone), into *out. Fails when the
 * network call fails. */
static zt_status agent_decide(zt_serve *srv, const void *s, int sims, ply *out)
{
    const zt_game *g = srv->cfg.game;
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    ZT_ASSERT(n > 0);
    scored mv[ZT_MAX_ACTIONS];
    int choice;
    float value;
    pthread_mutex_lock(&srv->search_lock);
    zt_status st = ZT_OK;
    if (sims > 0) {
        st = search_for(srv, sims);
        if (st == ZT_OK) {
            zt_search_forget(srv->search, 0);
            zt_search_begin(srv->search, 0, s);
            st = zt_search_run(srv->search);
        }
        if (st == ZT_OK) {
            int32_t visits[ZT_MAX_ACTIONS];
            choice = zt_search_choose(srv->search, 0, 0.0f);
            value = zt_search_root_value(srv->search, 0);
            zt_search_root_visits(srv->search, 0, visits);
            zt_search_forget(srv->search, 0);
            long total = 0;
            for (int i = 0; i < n; i++) total += visits[legal[i]];
            for (int i = 0; i < n; i++)
                mv[i] = (scored){legal[i], total ? (float)visits[legal[i]] / (float)total : 0.0f};
        }
    } else if (srv->greedy) {
        st = zt_greedy_choose(srv->greedy, 0, s, &choice, &value);
        n = 1;
        if (st == ZT_OK) mv[0] = (scored){choice, 1.0f};
    } else {
        const zt_evaluator *ev = &srv->cfg.ev;
        if (ev->eval_states) {
            const void *states[1] = {s};
            st = ev->eval_states(ev->ctx, 1, states, srv->logits, &value);
        } else {
            g->observe(g, s, srv->obs);
            st = ev->eval(ev->ctx, 1, srv->obs, srv->logits, &value);
        }
        if (st == ZT_OK) {
            float top = -INFINITY;
            for (int i = 0; i < n; i++) top = fmaxf(top, srv->logits[legal[i]]);
            double z = 0;
            for (int i = 0; i < n; i++) z += exp(srv->logits[legal[i]] - top);
            choice = legal[0];
            for (int i = 0; i < n; i++) {
                mv[i] = (scored){legal[i], (float)(exp(srv->logits[legal[i]] - top) / z)};
                if (srv->logits[legal[i]] > srv->logits[choice]) choice = legal[i];
            }
        }
    }
    pthread_mutex_unlock(&srv->search_lock);
    if (st != ZT_OK) return st;
    qsort(mv, (size_t)n, sizeof mv[0], by_share);
    memset(out, 0, sizeof *out);
    out->action = (int16_t)choice;
    out->by = BY_AGENT;
    out->player = (uint8_t)g->current_player(g, s);
    out->value = value;
    out->ntop = (uint8_t)(n < TOP_MOVES ? n : TOP_MOVES);
    for (int i = 0; i < out->ntop; i++) {
        out->top_action[i] = (int16_t)mv[i].action;
        out->top_share[i] = mv[i].share;
    }
    return ZT_OK;
}

/* ---- sessions ---- */

static void push_ply(session *ss, const ply *p)
{
    ss->plies = zt_xgrow(ss->plies, &ss->cap, ss->count + 1, sizeof *ss->plies);
    ss->plies[ss->count++] = *p;
}

/* Rebuilds ss->state from the start and plies[0 .. count). */
static void replay(const zt_game *g, session *ss, int count)
{
    g->reset(g, ss->state);
    for (int i = 0; i < count; i++) g->apply(g, ss->state, ss->plies[i].action);
    ss->count = count;
}

static bool at_limit(const zt_serve *srv, const session *ss)
{
    return ss->count >= srv->max_plies;
}

/* Plays chance outcomes and the agent's moves until the person is to move
 * or the game ends. On failure (the agent's network call) the session is
 * back where it was and the message is set. */
static zt_status advance(zt_serve *srv, session *ss)
{
    const zt_game *g = srv->cfg.game;
    int start = ss->count;
    for (;;) {
        int p = g->current_player(g, ss->state);
        if (p == ZT_TERMINAL || p == ss->human || at_limit(srv, ss)) return ZT_OK;
        ply pl = {0};
        if (p == ZT_CHANCE) {
            pl.action = (int16_t)zt_game_sample_chance(g, ss->state, &ss->dice);
            pl.by = BY_CHANCE;
        } else {
            zt_status st = agent_decide(srv, ss->state, ss->sims, &pl);
            if (st != ZT_OK) {
                replay(g, ss, start);
                return st;
            }
        }
        g->apply(g, ss->state, pl.action);
        push_ply(ss, &pl);
    }
}

static void new_id(zt_serve *srv, char *id)
{
    uint64_t v = zt_rng_u64(&srv->ids);
    snprintf(id, SESSION_ID_LEN + 1, "%016llx", (unsigned long long)v);
}

/* Finds the open session `id` and holds it (refs, then its lock), or NULL.
 * A session closed or reclaimed while this waited for its lock is not
 * found. */
static session *find_session(zt_serve *srv, const char *id)
{
    session *found = NULL;
    pthread_mutex_lock(&srv->table_lock);
    for (int i = 0; i < srv->cfg.max_sessions && !found; i++) {
        session *ss = &srv->sessions[i];
        if (ss->open && strcmp(ss->id, id) == 0) {
            ss->refs++;
            found = ss;
        }
    }
    pthread_mutex_unlock(&srv->table_lock);
    if (!found) return NULL;
    pthread_mutex_lock(&found->lock);
    pthread_mutex_lock(&srv->table_lock);
    bool still = found->open && strcmp(found->id, id) == 0;
    if (!still) found->refs--;
    pthread_mutex_unlock(&srv->table_lock);
    if (!still) {
        pthread_mutex_unlock(&found->lock);
        return NULL;
    }
    return found;
}

/* Opens a session in a free slot, else in the one idle longest if it has
 * been idle for idle_seconds; NULL when none can be had. A slot is taken
 * only when no request holds it. Held like find_session's. */
static session *open_session(zt_serve *srv)
{
    session *slot = NULL;
    double now = zt_now_s();
    pthread_mutex_lock(&srv->table_lock);
    for (int i = 0; i < srv->cfg.max_sessions && !slot; i++)
        if (!srv->sessions[i].open && srv->sessions[i].refs == 0) slot = &srv->sessions[i];
    if (!slot) {
        for (int i = 0; i < srv->cfg.max_sessions; i++) {
            session *ss = &srv->sessions[i];
            if (ss->open && ss->refs == 0 && now - ss->last_used >= srv->cfg.idle_seconds &&
                (!slot || ss->last_used < slot->last_used))
                slot = ss;
        }
    }
    if (slot) {
        slot->open = true;
        slot->refs = 1;
        slot->last_used = now;
        new_id(srv, slot->id);
        zt_rng_seed(&slot->dice, srv->cfg.seed, ++srv->opened);
    }
    pthread_mutex_unlock(&srv->table_lock);
    if (slot) {
        pthread_mutex_lock(&slot->lock);
        slot->count = 0;
    }
    return slot;
}

/* Lets go of a held session; `close` ends it and frees its slot. */
static void release_session(zt_serve *srv, session *ss, bool close)
{
    if (close) {
        free(ss->plies);
        ss->plies = NULL;
        ss->count = ss->cap = 0;
    }
    pthread_mutex_lock(&srv->table_lock);
    ss->refs--;
    ss->last_used = zt_now_s();
    if (close) ss->open = false;
    pthread_mutex_unlock(&srv->table_lock);
    pthread_mutex_unlock(&ss->lock);
}

/* ---- the state as JSON ---- */

static void put_move(zt_json_buf *b, const zt_game *g, const void *s, int action)
{
    char t[64];
    g->action_to_text(g, s, action, t, sizeof t);
    zt_json_printf(b, "{\"action\": %d, \"move\": ", action);
    zt_json_string(b, t);
}

static void put_state(zt_serve *srv, session *ss, zt_json_buf *b)
{
    const zt_game *g = srv->cfg.game;
    const uint8_t *s = ss->state;
    char text[4 * ZT_MAX_TEXT];
    zt_json_printf(b, "{\"session\": ");
    zt_json_string(b, ss->id);
    zt_json_printf(b, ", \"game\": ");
    zt_json_string(b, g->name);
    zt_json_printf(b, ", \"title\": ");
    zt_json_string(b, g->title);
    zt_json_printf(b, ", \"settings\": ");
    zt_json_string(b, g->settings);
    zt_json_printf(b, ", \"human\": %d, \"sims\": %d", ss->human, ss->sims);
    g->to_text(g, s, text, sizeof text);
    zt_json_printf(b, ", \"position\": ");
    zt_json_string(b, text);
    g->render(g, s, text, sizeof text);
    zt_json_printf(b, ", \"board\": ");
    zt_json_string(b, text);

    int p = g->current_player(g, s);
    bool over = p == ZT_TERMINAL || at_limit(srv, ss);
    if (p == 0 || p == 1)
        zt_json_printf(b, ", \"to_move\": %d", p);
    else
        zt_json_printf(b, ", \"to_move\": null");
    zt_json_printf(b, ", \"your_turn\": %s, \"over\": %s",
                   !over && p == ss->human ? "true" : "false", over ? "true" : "false");
    if (p == ZT_TERMINAL) {
        float r[2];
        g->returns(g, s, r);
        zt_json_printf(b, ", \"returns\": [");
        zt_json_number(b, r[0]);
        zt_json_printf(b, ", ");
        zt_json_number(b, r[1]);
        /* a one-player game (2048) ends with a score, returns[0] */
        zt_json_printf(b, "], \"result\": \"%s\"",
                       zt_game_num_players(g) == 1 ? "score"
                       : r[ss->human] > 0           ? "win"
                       : r[ss->human] < 0           ? "loss"
                                                    : "draw");
    } else {
        zt_json_printf(b, ", \"returns\": null, \"result\": %s", over ? "\"abandoned\"" : "null");
    }

    zt_json_printf(b, ", \"legal\": [");
    if (!over && p == ss->human) {
        uint16_t legal[ZT_MAX_ACTIONS];
        int n = g->legal(g, s, legal);
        for (int i = 0; i < n; i++) {
            if (i) zt_json_printf(b, ", ");
            put_move(b, g, s, legal[i]);
            zt_json_printf(b, "}");
        }
    }
    zt_json_printf(b, "]");

    /* The history, replayed from the start for each move's notation. */
    bool can_undo = false;
    uint8_t cur[ZT_MAX_STATE_BYTES];
    g->reset(g, cur);
    zt_json_printf(b, ", \"history\": [");
    for (int i = 0; i < ss->count; i++) {
        const ply *pl = &ss->plies[i];
        if (i) zt_json_printf(b, ", ");
        put_move(b, g, cur, pl->action);
        zt_json_printf(b, ", \"by\": \"%s\"", by_name[pl->by]);
        if (pl->by != BY_CHANCE) zt_json_printf(b, ", \"player\": %d", pl->player);
        if (pl->by == BY_HUMAN) can_undo = true;
        if (pl->by == BY_AGENT) {
            zt_json_printf(b, ", \"value\": ");
            zt_json_number(b, pl->value);
            zt_json_printf(b, ", \"top\": [");
            for (int k = 0; k < pl->ntop; k++) {
                if (k) zt_json_printf(b, ", ");
                put_move(b, g, cur, pl->top_action[k]);
                zt_json_printf(b, ", \"share\": ");
                zt_json_number(b, pl->top_share[k]);
                zt_json_printf(b, "}");
            }
            zt_json_printf(b, "]");
        }
        zt_json_printf(b, "}");
        g->apply(g, cur, pl->action);
    }
    zt_json_printf(b, "], \"can_undo\": %s}\n", can_undo ? "true" : "false");
}

static void reply_state(zt_serve *srv, session *ss, zt_serve_reply *out)
{
    zt_json_buf b = {0};
    put_state(srv, ss, &b);
    reply_json(out, 200, &b);
}

/* ---- requests ---- */

/* Parses the body (empty: {}) and refuses fields outside `known`
 * (comma-separated, for the message). False after replying 400. */
static bool parse_body(const char *body, size_t len, const char *known, zt_json_object *o,
                       zt_serve_reply *out)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
        i++;
    if (i == len) {
        o->count = 0;
        return true;
    }
    if (zt_json_parse_object(body, len, o) != ZT_OK) {
        reply_error(out, 400, "%s", zt_error_message());
        return false;
    }
    for (int k = 0; k < o->count; k++) {
        const char *key = o->members[k].key;
        size_t n = strlen(key);
        bool ok = false;
        for (const char *p = known; *p;) {
            const char *end = strchr(p, ',');
            size_t m = end ? (size_t)(end - p) : strlen(p);
            if (m == n && memcmp(p, key, n) == 0) ok = true;
            p += m;
            while (*p == ',' || *p == ' ') p++;
        }
        if (!ok) {
            reply_error(out, 400, "unknown field '%s' (known: %s)", key, known);
            return false;
        }
    }
    return true;
}

/* An integer field in [lo, hi]: true with *v set (untouched when absent),
 * false after replying 400. */
static bool int_field(const zt_json_object *o, const char *key, int lo, int hi, int *v,
                      zt_serve_reply *out)
{
    const zt_json_member *m = zt_json_get(o, key);
    if (!m) return true;
    if (m->kind != ZT_JSON_NUMBER || m->number != floor(m->number) || m->number < lo ||
        m->number > hi) {
        reply_error(out, 400, "field '%s' must be an integer in [%d, %d]", key, lo, hi);
        return false;
    }
    *v = (int)m->number;
    return true;
}

/* The session named by the body's "session" field (or the query's),
 * held; NULL after replying 400 or 404. */
static session *body_session(zt_serve *srv, const zt_json_object *o, const char *query,
                             zt_serve_reply *out)
{
    const char *id = query;
    const zt_json_member *m = o ? zt_json_get(o, "session") : NULL;
    if (m) {
        if (m->kind != ZT_JSON_STRING) {
            reply_error(out, 400, "field 'session' must be a string");
            return NULL;
        }
        id = m->string;
    }
    if (!id || !*id) {
        reply_error(out, 400, "no session given (field 'session', from /api/new)");
        return NULL;
    }
    session *ss = find_session(srv, id);
    if (!ss)
        reply_error(out, 404,
                    "unknown session '%.40s' (closed, reclaimed after idling, or never "
                    "opened: start a new game)",
                    id);
    return ss;
}

static void api_new(zt_serve *srv, const char *body, size_t len, zt_serve_reply *out)
{
    zt_json_object o;
    if (!parse_body(body, len, "side, sims, session", &o, out)) return;
    int side = 0, sims = srv->cfg.search.num_simulations;
    if (!int_field(&o, "side", 0, 1, &side, out)) return;
    if (!int_field(&o, "sims", 0, srv->cfg.max_sims, &sims, out)) return;
    session *ss;
    bool fresh = !zt_json_get(&o, "session");
    if (!fresh) {
        if (!(ss = body_session(srv, &o, NULL, out))) return;
    } else if (!(ss = open_session(srv))) {
        reply_error(out, 503,
                    "too many games at once (%d open): close one with /api/close, or wait until "
                    "one has been idle for %.0f s",
                    srv->cfg.max_sessions, srv->cfg.idle_seconds);
        return;
    }
    ss->human = side;
    ss->sims = sims;
    replay(srv->cfg.game, ss, 0);
    bool ok = advance(srv, ss) == ZT_OK;
    if (!ok)
        reply_error(out, 500, "the agent failed: %s", zt_error_message());
    else
        reply_state(srv, ss, out);
    /* A session opened for a game that could not start is not kept. */
    release_session(srv, ss, !ok && fresh);
}

static void api_move(zt_serve *srv, const char *body, size_t len, zt_serve_reply *out)
{
    const zt_game *g = srv->cfg.game;
    zt_json_object o;
    if (!parse_body(body, len, "session, action, move, sims", &o, out)) return;
    const zt_json_member *am = zt_json_get(&o, "action"), *mm = zt_json_get(&o, "move");
    if (!am == !mm) {
        reply_error(out, 400, "give the move as one of 'action' (a number) or 'move' (its text)");
        return;
    }
    if (mm && mm->kind != ZT_JSON_STRING) {
        reply_error(out, 400, "field 'move' must be a string");
        return;
    }
    int action = -1, sims = -1;
    if (am && !int_field(&o, "action", 0, g->num_actions - 1, &action, out)) return;
    if (!int_field(&o, "sims", 0, srv->cfg.max_sims, &sims, out)) return;
    session *ss = body_session(srv, &o, NULL, out);
    if (!ss) return;
    int p = g->current_player(g, ss->state);
    if (p == ZT_TERMINAL || at_limit(srv, ss)) {
        reply_error(out, 409, "the game is over: start a new one");
    } else if (p != ss->human) {
        reply_error(out, 409, "it is not your turn");
    } else if (mm && g->action_from_text(g, ss->state, mm->string, &action) != ZT_OK) {
        reply_error(out, 400, "%s", zt_error_message());
    } else {
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, ss->state, mask);
        if (action < 0 || action >= g->num_actions || !mask[action]) {
            char t[64];
            g->action_to_text(g, ss->state, action, t, sizeof t);
            reply_error(out, 409, "move '%s' (action %d) is not legal here", mm ? mm->string : t,
                        action);
        } else {
            if (sims >= 0) ss->sims = sims;
            int before = ss->count;
            ply pl = {.action = (int16_t)action, .by = BY_HUMAN, .player = (uint8_t)p};
            g->apply(g, ss->state, action);
            push_ply(ss, &pl);
            if (advance(srv, ss) != ZT_OK) {
                reply_error(out, 500, "the agent failed: %s", zt_error_message());
                replay(g, ss, before);
            } else {
                reply_state(srv, ss, out);
            }
        }
    }
    release_session(srv, ss, false);
}

static void api_undo(zt_serve *srv, const char *body, size_t len, zt_serve_reply *out)
{
    zt_json_object o;
    if (!parse_body(body, len, "session", &o, out)) return;
    session *ss = body_session(srv, &o, NULL, out);
    if (!ss) return;
    int last = ss->count - 1;
    while (last >= 0 && ss->plies[last].by != BY_HUMAN) last--;
    if (last < 0) {
        reply_error(out, 409, "nothing to undo: you have not moved yet");
    } else {
        replay(srv->cfg.game, ss, last);
        reply_state(srv, ss, out);
    }
    release_session(srv, ss, false);
}

static void api_close(zt_serve *srv, const char *body, size_t len, zt_serve_reply *out)
{
    zt_json_object o;
    if (!parse_body(body, len, "session", &o, out)) return;
    session *ss = body_session(srv, &o, NULL, out);
    if (!ss) return;
    zt_json_buf b = {0};
    zt_json_printf(&b, "{\"closed\": ");
    zt_json_string(&b, ss->id);
    zt_json_printf(&b, "}\n");
    release_session(srv, ss, true);
    reply_json(out, 200, &b);
}

static void api_state(zt_serve *srv, const char *query_session, zt_serve_reply *out)
{
    session *ss = body_session(srv, NULL, query_session, out);
    if (!ss) return;
    reply_state(srv, ss, out);
    release_session(srv, ss, false);
}

static void api_info(zt_serve *srv, zt_serve_reply *out)
{
    const zt_serve_config *c = &srv->cfg;
    zt_json_buf b = {0};
    zt_json_printf(&b, "{\"game\": ");
    zt_json_string(&b, c->game->name);
    zt_json_printf(&b, ", \"title\": ");
    zt_json_string(&b, c->game->title);
    zt_json_printf(&b, ", \"settings\": ");
    zt_json_string(&b, c->game->settings);
    zt_json_printf(&b, ", \"model\": ");
    zt_json_string(&b, c->model);
    zt_json_printf(&b, ", \"algorithm\": \"%s\", \"sims\": %d, \"max_sims\": %d, \"greedy\": %s",
                   c->search.algorithm == ZT_SEARCH_GUMBEL ? "gumbel" : "puct",
                   c->search.num_simulations, c->max_sims, c->greedy ? "true" : "false");
    if (c->greedy) zt_json_printf(&b, ", \"greedy_plies\": %d", c->greedy_plies);
    zt_json_printf(&b, ", \"sessions\": %d, \"max_sessions\": %d, \"max_body\": %zu}\n",
                   zt_serve_session_count(srv), c->max_sessions, c->max_body);
    reply_json(out, 200, &b);
}

typedef struct route {
    const char *path;
    const char *method; /* GET also answers HEAD */
} route;

static const route routes[] = {
    {"/", "GET"},         {"/index.html", "GET"}, {"/api/info", "GET"},  {"/api/state", "GET"},
    {"/api/new", "POST"}, {"/api/move", "POST"},  {"/api/undo", "POST"}, {"/api/close", "POST"},
};

void zt_serve_handle(zt_serve *srv, const char *method, const char *path, const char *session_id,
                     const char *body, size_t body_len, zt_serve_reply *out)
{
    memset(out, 0, sizeof *out);
    const route *r = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(path, routes[i].path) == 0) r = &routes[i];
    if (!r) {
        reply_error(out, 404,
                    "no such path '%.60s' (the page is /; the API: /api/new, /api/move, "
                    "/api/undo, /api/state, /api/close, /api/info)",
                    path);
        return;
    }
    bool get = strcmp(r->method, "GET") == 0;
    if (strcmp(method, r->method) != 0 && !(get && strcmp(method, "HEAD") == 0)) {
        reply_error(out, 405, "%s takes %s, not %.16s", path, r->method, method);
        out->allow = get ? "GET, HEAD" : "POST";
        return;
    }
    if (get && body_len > 0) {
        reply_error(out, 400, "%s takes no request body", path);
        return;
    }
    if (r == &routes[0] || r == &routes[1]) {
        out->status = 200;
        out->content_type = "text/html; charset=utf-8";
        out->body = zt_xmalloc(zt_serve_page_size + 1);
        memcpy(out->body, zt_serve_page, zt_serve_page_size + 1);
        out->len = zt_serve_page_size;
    } else if (strcmp(path, "/api/info") == 0) {
        api_info(srv, out);
    } else if (strcmp(path, "/api/state") == 0) {
        api_state(srv, session_id, out);
    } else if (strcmp(path, "/api/new") == 0) {
        api_new(srv, body, body_len, out);
    } else if (strcmp(path, "/api/move") == 0) {
        api_move(srv, body, body_len, out);
    } else if (strcmp(path, "/api/undo") == 0) {
        api_undo(srv, body, body_len, out);
    } else {
        api_close(srv, body, body_len, out);
    }
}
