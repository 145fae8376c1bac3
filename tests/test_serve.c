/* The serve layer without sockets (src/serve/): the JSON reader takes
 * every valid flat object and refuses every malformed one naming the
 * problem, and the writer escapes what JSON needs; the API answers every
 * request with well-formed JSON, plays whole games (tic-tac-toe against a
 * perfect agent that never loses, backgammon with its dice), undoes to the
 * person's previous turn, refuses bad requests with 4xx and one line,
 * bounds the sessions (refusal past the bound, a closed slot reused, an
 * idle one reclaimed), keeps a session unchanged when the agent's network
 * fails, and stays consistent under concurrent players. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluators.h"
#include "core/rng.h"
#include "search/search.h"
#include "serve/json.h"
#include "serve/page.h"
#include "serve/serve.h"

#include "zt_test.h"

/* ---- a JSON validator (RFC 8259 grammar) for the server's replies ---- */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static const char *valid_value(const char *p, int depth);

static const char *valid_string(const char *p)
{
    if (*p++ != '"') return NULL;
    while (*p && *p != '"') {
        if ((unsigned char)*p < 0x20) return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i]) return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
        p++;
    }
    return *p == '"' ? p + 1 : NULL;
}

static const char *valid_value(const char *p, int depth)
{
    if (depth > 32) return NULL;
    p = skip_ws(p);
    if (*p == '"') return valid_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = skip_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                p = valid_string(skip_ws(p));
                if (!p) return NULL;
                p = skip_ws(p);
                if (*p++ != ':') return NULL;
            }
            p = valid_value(p, depth + 1);
            if (!p) return NULL;
            p = skip_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == close ? p + 1 : NULL;
        }
    }
    if (strncmp(p, "true", 4) == 0) return p + 4;
    if (strncmp(p, "false", 5) == 0) return p + 5;
    if (strncmp(p, "null", 4) == 0) return p + 4;
    char *end;
    strtod(p, &end);
    return end == p ? NULL : end;
}

static bool valid_json(const char *text)
{
    const char *p = valid_value(text, 0);
    return p && *skip_ws(p) == '\0';
}

/* ---- the reader and the writer ---- */

static void test_json(void)
{
    zt_json_object o;
    const char *good = " {\"a\": 1.5e2, \"b\" : \"x\\\"y\\u00e9\\ud83d\\ude00\", \"c\": true,"
                       "\"d\": false, \"e\": null, \"f\": -0} ";
    CHECK(zt_json_parse_object(good, strlen(good), &o) == ZT_OK, "%s", zt_error_message());
    CHECK(o.count == 6, "%d members", o.count);
    const zt_json_member *m = zt_json_get(&o, "a");
    CHECK(m && m->kind == ZT_JSON_NUMBER && m->number == 150.0, "a");
    m = zt_json_get(&o, "b");
    CHECK(m && m->kind == ZT_JSON_STRING && strcmp(m->string, "x\"y\xc3\xa9\xf0\x9f\x98\x80") == 0,
          "b: '%s'", m ? m->string : "");
    m = zt_json_get(&o, "c");
    CHECK(m && m->kind == ZT_JSON_BOOL && m->boolean, "c");
    m = zt_json_get(&o, "d");
    CHECK(m && m->kind == ZT_JSON_BOOL && !m->boolean, "d");
    m = zt_json_get(&o, "e");
    CHECK(m && m->kind == ZT_JSON_NULL, "e");
    CHECK(!zt_json_get(&o, "z"), "no member z");
    CHECK(zt_json_parse_object("{}", 2, &o) == ZT_OK && o.count == 0, "empty object");

    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "expected an object"},
        {"[1]", "expected an object"},
        {"{", "expected a key"},
        {"{\"a\" 1}", "expected ':'"},
        {"{\"a\": 1,}", "expected a key"},
        {"{\"a\": 1 \"b\": 2}", "expected ',' or '}'"},
        {"{\"a\": {\"b\": 1}}", "nested"},
        {"{\"a\": [1]}", "nested"},
        {"{\"a\": 01}", "expected ',' or '}'"},
        {"{\"a\": 1.}", "bad number"},
        {"{\"a\": -}", "bad number"},
        {"{\"a\": tru}", "expected a value"},
        {"{\"a\": \"x}", "unterminated"},
        {"{\"a\": \"\\q\"}", "bad escape"},
        {"{\"a\": \"\\u12\"}", "bad \\u escape"},
        {"{\"a\": \"\\ud800\"}", "lone surrogate"},
        {"{\"a\": \"\\u0000\"}", "NUL"},
        {"{\"a\": \"x\ny\"}", "control character"},
        {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
        {"{\"a\": 1} x", "unexpected text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zt_status st = zt_json_parse_object(bad[i].text, strlen(bad[i].text), &o);
        CHECK(st == ZT_ERR_INVALID && strstr(zt_error_message(), bad[i].why),
              "'%s': status %d, message '%s' (wanted '%s')", bad[i].text, (int)st,
              zt_error_message(), bad[i].why);
    }
    /* A NUL byte inside the declared length is refused, not cut at. */
    CHECK(zt_json_parse_object("{\"a\": \"x\0\"}", 11, &o) == ZT_ERR_INVALID, "raw NUL");

    char text[2048];
    int n = snprintf(text, sizeof text, "{");
    for (int i = 0; i <= ZT_JSON_MAX_MEMBERS; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s\"k%d\": %d", i ? ", " : "", i, i);
    snprintf(text + n, sizeof text - (size_t)n, "}");
    CHECK(zt_json_parse_object(text, strlen(text), &o) == ZT_ERR_INVALID &&
              strstr(zt_error_message(), "more than"),
          "too many members: %s", zt_error_message());
    memset(text, 0, sizeof text);
    strcpy(text, "{\"a\": \"");
    memset(text + 7, 'x', ZT_JSON_MAX_STRING);
    strcat(text, "\"}");
    CHECK(zt_json_parse_object(text, strlen(text), &o) == ZT_ERR_INVALID &&
              strstr(zt_error_message(), "longer than"),
          "long string: %s", zt_error_message());

    zt_json_buf b = {0};
    zt_json_printf(&b, "[");
    zt_json_string(&b, "q\"b\\n\nt\t\x01");
    zt_json_printf(&b, ", ");
    zt_json_number(&b, NAN);
    zt_json_printf(&b, ", ");
    zt_json_number(&b, 0.25);
    zt_json_printf(&b, "]");
    size_t len;
    char *s = zt_json_take(&b, &len);
    CHECK(strcmp(s, "[\"q\\\"b\\\\n\\nt\\t\\u0001\", null, 0.25]") == 0, "written: %s", s);
    CHECK(len == strlen(s) && valid_json(s), "%s", s);
    CHECK(b.data == NULL && b.len == 0, "take empties the buffer");
    free(s);
    s = zt_json_take(&b, &len);
    CHECK(s && s[0] == '\0' && len == 0, "an empty buffer gives an empty string");
    free(s);
}

/* ---- requests ---- */

typedef struct response {
    int status;
    char body[1 << 16];
} response;

/* Sends a request; checks that the reply is well-formed JSON (or the page)
 * and that errors are {"error": ...} on one line. Returns the status. */
static int req(zt_serve *srv, const char *method, const char *path, const char *sid,
               const char *body, response *r)
{
    zt_serve_reply rep;
    zt_serve_handle(srv, method, path, sid, body, body ? strlen(body) : 0, &rep);
    r->status = rep.status;
    snprintf(r->body, sizeof r->body, "%s", rep.body ? rep.body : "");
    CHECK(rep.body && rep.len == strlen(rep.body), "%s %s: body and length", method, path);
    if (rep.body && strncmp(rep.content_type, "application/json", 16) == 0) {
        CHECK(valid_json(rep.body), "%s %s: not JSON: %.200s", method, path, rep.body);
        if (rep.status != 200) {
            CHECK(strncmp(rep.body, "{\"error\": \"", 11) == 0, "%s", rep.body);
            CHECK(strchr(rep.body, '\n') == rep.body + rep.len - 1, "one line: %s", rep.body);
        }
    }
    CHECK((rep.status == 405) == (rep.allow != NULL), "Allow with 405 only");
    zt_serve_reply_free(&rep);
    return r->status;
}

/* The value of "key": in a reply, as text up to the next ',' or '}' (a
 * string's quotes removed), into out. False when absent. */
static bool field(const char *body, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(body, pat);
    if (!p) return false;
    p += strlen(pat);
    size_t n = 0;
    if (*p == '"') {
        p++;
        while (p[n] && p[n] != '"') n++;
    } else {
        while (p[n] && p[n] != ',' && p[n] != '}') n++;
    }
    snprintf(out, cap, "%.*s", (int)n, p);
    return true;
}

static int count_of(const char *body, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(body, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* The legal actions in a state reply. */
static int legal_actions(const char *body, int *actions)
{
    const char *p = strstr(body, "\"legal\": [");
    const char *end = p ? strchr(p, ']') : NULL;
    int n = 0;
    for (const char *q = p; q && q < end && (q = strstr(q, "\"action\": ")) && q < end; q++)
        actions[n++] = atoi(q + 10);
    return n;
}

static zt_serve *server(const zt_game *g, zt_evaluator ev, int sims, int max_sessions, double idle)
{
    zt_serve_config c = {.game = g,
                         .ev = ev,
                         .max_sims = 64,
                         .max_sessions = max_sessions,
                         .idle_seconds = idle,
                         .max_body = 4096,
                         .seed = 7,
                         .model = "test"};
    zt_search_config_default(&c.search, ZT_SEARCH_PUCT);
    c.search.num_simulations = sims;
    zt_serve *srv = NULL;
    zt_status st = zt_serve_new(&c, &srv);
    CHECK(st == ZT_OK, "%s", zt_error_message());
    return srv;
}

/* Plays random legal moves for the person until the game is over; returns
 * the number of moves made, -1 on an unexpected reply. */
static int play_out(zt_serve *srv, const char *sid, zt_rng *rng, response *r)
{
    int moves = 0;
    for (;;) {
        char over[16];
        if (!field(r->body, "over", over, sizeof over)) return -1;
        if (strcmp(over, "true") == 0) return moves;
        int legal[ZT_MAX_ACTIONS];
        int n = legal_actions(r->body, legal);
        if (n == 0) return -1;
        char body[128];
        snprintf(body, sizeof body, "{\"session\": \"%s\", \"action\": %d}", sid,
                 legal[zt_rng_below(rng, (uint32_t)n)]);
        if (req(srv, "POST", "/api/move", NULL, body, r) != 200) return -1;
        moves++;
    }
}

static void test_routes(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "");
    zt_serve *srv = server(g, zt_evaluator_uniform(g), 4, 4, 1800);
    response *r = malloc(sizeof *r);

    CHECK(req(srv, "GET", "/", NULL, NULL, r) == 200, "%d", r->status);
    CHECK(strcmp(r->body, zt_serve_page) == 0, "the page is sent whole");
    CHECK(strstr(r->body, "<svg") && strstr(r->body, "/api/move"), "the page draws and plays");
    CHECK(req(srv, "HEAD", "/index.html", NULL, NULL, r) == 200, "HEAD of the page");
    CHECK(req(srv, "GET", "/api/info", NULL, NULL, r) == 200, "%s", r->body);
    char v[64];
    CHECK(field(r->body, "game", v, sizeof v) && strcmp(v, "tictactoe") == 0, "%s", r->body);
    CHECK(field(r->body, "sims", v, sizeof v) && atoi(v) == 4, "%s", r->body);
    CHECK(req(srv, "GET", "/nope", NULL, NULL, r) == 404, "%s", r->body);
    CHECK(strstr(r->body, "no such path '/nope'"), "%s", r->body);
    CHECK(req(srv, "GET", "/\xff\x01", NULL, NULL, r) == 404, "%s", r->body);
    CHECK(strstr(r->body, "no such path '/?"
                          "?'"),
          "bytes of a path quoted as ASCII: %s", r->body);
    CHECK(req(srv, "GET", "/api/new", NULL, NULL, r) == 405, "%s", r->body);
    CHECK(req(srv, "POST", "/api/state", NULL, NULL, r) == 405, "%s", r->body);
    CHECK(req(srv, "DELETE", "/", NULL, NULL, r) == 405, "%s", r->body);
    CHECK(req(srv, "GET", "/api/info", NULL, "{}", r) == 400, "GET with a body: %s", r->body);

    /* Bad bodies and fields. */
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"side\": ", r) == 400, "%s", r->body);
    CHECK(strstr(r->body, "bad JSON"), "%s", r->body);
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"colour\": 1}", r) == 400, "%s", r->body);
    CHECK(strstr(r->body, "unknown field 'colour'"), "%s", r->body);
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"side\": 2}", r) == 400, "%s", r->body);
    CHECK(strstr(r->body, "'side' must be an integer in [0, 1]"), "%s", r->body);
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"side\": 0.5}", r) == 400, "%s", r->body);
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"sims\": 65}", r) == 400, "over max_sims");
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"sims\": \"8\"}", r) == 400, "a string");
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"session\": \"feed\"}", r) == 404, "%s", r->body);
    CHECK(req(srv, "POST", "/api/move", NULL, "{\"action\": 1}", r) == 400, "no session");
    CHECK(strstr(r->body, "no session given"), "%s", r->body);
    CHECK(req(srv, "GET", "/api/state", NULL, NULL, r) == 400, "state without a session");
    CHECK(req(srv, "GET", "/api/state", "0123456789abcdef", NULL, r) == 404, "%s", r->body);
    CHECK(zt_serve_session_count(srv) == 0, "no refused request opened a session");

    /* A game: the person first; moves by action and by notation. */
    CHECK(req(srv, "POST", "/api/new", NULL, "", r) == 200, "%s", r->body);
    char sid[32], body[256];
    CHECK(field(r->body, "session", sid, sizeof sid) && strlen(sid) == 16, "%s", r->body);
    CHECK(field(r->body, "your_turn", v, sizeof v) && strcmp(v, "true") == 0, "%s", r->body);
    CHECK(count_of(r->body, "\"by\": ") == 0 && legal_actions(r->body, (int[512]){0}) == 9,
          "a fresh board: %s", r->body);
    snprintf(body, sizeof body, "{\"session\": \"%s\", \"action\": 4}", sid);
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 200, "%s", r->body);
    CHECK(count_of(r->body, "\"by\": \"human\"") == 1 &&
              count_of(r->body, "\"by\": \"agent\"") == 1,
          "the person's move and the agent's reply: %s", r->body);
    CHECK(strstr(r->body, "\"top\": [") && strstr(r->body, "\"share\": "), "the agent's view");
    CHECK(field(r->body, "position", v, sizeof v) && v[4] == 'X' && strchr(v, 'O'), "%s", v);
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 409, "an occupied cell: %s", r->body);
    CHECK(strstr(r->body, "not legal here"), "%s", r->body);
    snprintf(body, sizeof body, "{\"session\": \"%s\", \"move\": \"x\"}", sid);
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 400, "bad notation: %s", r->body);
    CHECK(strstr(r->body, "expected a cell 0..8"), "the game's own message: %s", r->body);
    snprintf(body, sizeof body, "{\"session\": \"%s\", \"action\": 9}", sid);
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 400, "out of range: %s", r->body);
    snprintf(body, sizeof body, "{\"session\": \"%s\", \"action\": 1, \"move\": \"1\"}", sid);
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 400, "both: %s", r->body);
    snprintf(body, sizeof body, "{\"session\": 5, \"action\": 1}");
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 400, "a number as session");
    CHECK(req(srv, "GET", "/api/state", sid, NULL, r) == 200, "%s", r->body);
    CHECK(count_of(r->body, "\"by\": ") == 2, "bad requests changed nothing: %s", r->body);
    int free_cell = -1;
    int legal[ZT_MAX_ACTIONS];
    int n = legal_actions(r->body, legal);
    CHECK(n == 7, "%d legal", n);
    free_cell = legal[0];
    snprintf(body, sizeof body, "{\"session\": \"%s\", \"move\": \"%d\", \"sims\": 0}", sid,
             free_cell);
    CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 200, "%s", r->body);
    CHECK(field(r->body, "sims", v, sizeof v) && atoi(v) == 0, "sims changed for the game");

    /* Undo: back to the person's previous turn, one move of theirs at a time. */
    snprintf(body, sizeof body, "{\"session\": \"%s\"}", sid);
    CHECK(req(srv, "POST", "/api/undo", NULL, body, r) == 200, "%s", r->body);
    CHECK(count_of(r->body, "\"by\": ") == 2 && strstr(r->body, "\"can_undo\": true"), "%s",
          r->body);
    CHECK(legal_actions(r->body, legal) == 7, "the person's turn again");
    CHECK(req(srv, "POST", "/api/undo", NULL, body, r) == 200, "%s", r->body);
    CHECK(count_of(r->body, "\"by\": ") == 0 && strstr(r->body, "\"can_undo\": false"), "%s",
          r->body);
    CHECK(req(srv, "POST", "/api/undo", NULL, body, r) == 409, "nothing to undo: %s", r->body);

    /* The agent first: it has moved when the game comes back; undo cannot
     * take its opening back. */
    snprintf(body, sizeof body, "{\"session\": \"%s\", \"side\": 1}", sid);
    CHECK(req(srv, "POST", "/api/new", NULL, body, r) == 200, "%s", r->body);
    CHECK(field(r->body, "session", v, sizeof v) && strcmp(v, sid) == 0, "the same session");
    CHECK(count_of(r->body, "\"by\": \"agent\"") == 1 && strstr(r->body, "\"to_move\": 1"), "%s",
          r->body);
    CHECK(req(srv, "POST", "/api/undo", NULL, body + 0, r) == 400, "side is no undo field");
    CHECK(zt_serve_session_count(srv) == 1, "one session");

    snprintf(body, sizeof body, "{\"session\": \"%s\"}", sid);
    CHECK(req(srv, "POST", "/api/close", NULL, body, r) == 200, "%s", r->body);
    CHECK(req(srv, "POST", "/api/close", NULL, body, r) == 404, "closed twice");
    CHECK(req(srv, "GET", "/api/state", sid, NULL, r) == 404, "a closed session is gone");
    CHECK(zt_serve_session_count(srv) == 0, "closed");
    free(r);
    zt_serve_free(srv);
    zt_game_free(g);
}

/* Against the exact solver's values with search, the agent never loses a
 * whole game, from either side, to random moves. */
static void test_whole_games(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "");
    zt_evaluator oracle;
    CHECK(zt_evaluator_oracle_new(g, &oracle) == ZT_OK, "%s", zt_error_message());
    zt_serve *srv = server(g, oracle, 16, 2, 1800);
    response *r = malloc(sizeof *r);
    zt_rng rng;
    zt_rng_seed(&rng, zt_test_seed(11), 0);
    int results[3] = {0};
    for (int game = 0; game < 20; game++) {
        char body[128], sid[32], v[32];
        snprintf(body, sizeof body, "{\"side\": %d}", game % 2);
        CHECK(req(srv, "POST", "/api/new", NULL, body, r) == 200, "%s", r->body);
        field(r->body, "session", sid, sizeof sid);
        int moves = play_out(srv, sid, &rng, r);
        CHECK(moves >= 2 && moves <= 5, "game %d: %d moves", game, moves);
        CHECK(field(r->body, "result", v, sizeof v), "%s", r->body);
        CHECK(strcmp(v, "win") != 0, "game %d: the perfect agent lost: %s", game, r->body);
        results[strcmp(v, "loss") == 0 ? 0 : strcmp(v, "draw") == 0 ? 1 : 2]++;
        CHECK(strstr(r->body, "\"legal\": []") && strstr(r->body, "\"returns\": ["), "%s", r->body);
        snprintf(body, sizeof body, "{\"session\": \"%s\", \"action\": 0}", sid);
        CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 409, "a move after the end");
        CHECK(strstr(r->body, "the game is over"), "%s", r->body);
        snprintf(body, sizeof body, "{\"session\": \"%s\"}", sid);
        CHECK(req(srv, "POST", "/api/close", NULL, body, r) == 200, "%s", r->body);
    }
    printf("tic-tac-toe, random moves against the perfect agent: %d lost, %d drawn, %d won\n",
           results[0], results[1], results[2]);
    CHECK(results[0] > 0, "random play loses some games");
    free(r);
    zt_serve_free(srv);
    zt_evaluator_oracle_free(&oracle);
    zt_game_free(g);
}

/* Backgammon: the server rolls, the history shows the rolls, the person
 * plays one checker at a time and a whole game ends. */
static void test_backgammon(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("backgammon", NULL, &g) == ZT_OK, "");
    zt_serve *srv = server(g, zt_evaluator_uniform(g), 0, 1, 1800);
    response *r = malloc(sizeof *r);
    zt_rng rng;
    zt_rng_seed(&rng, zt_test_seed(12), 1);
    CHECK(req(srv, "POST", "/api/new", NULL, "{\"side\": 1}", r) == 200, "%s", r->body);
    char sid[32], v[64];
    field(r->body, "session", sid, sizeof sid);
    CHECK(strstr(r->body, "\"by\": \"chance\"") && strstr(r->body, "\"by\": \"agent\""),
          "the opening roll and the agent's move: %.300s", r->body);
    CHECK(field(r->body, "position", v, sizeof v) && strchr(v, ':') && strstr(v, "p1"),
          "the person (player 1) has dice to play: %s", v);
    int moves = play_out(srv, sid, &rng, r);
    CHECK(moves > 10, "%d moves", moves);
    CHECK(field(r->body, "result", v, sizeof v) && (!strcmp(v, "win") || !strcmp(v, "loss")),
          "result %s", v);
    printf("backgammon: a whole game, %d checker moves by the person, %d plies in all\n", moves,
           count_of(r->body, "\"by\": "));
    free(r);
    zt_serve_free(srv);
    zt_game_free(g);
}

/* Past the bound: refused with 503; a closed slot is reused; with an idle
 * time of 0 the least recently used session is reclaimed. */
static void test_bound(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("connect4", NULL, &g) == ZT_OK, "");
    for (int idle = 0; idle < 2; idle++) {
        zt_serve *srv = server(g, zt_evaluator_uniform(g), 2, 2, idle ? 0 : 1800);
        response *r = malloc(sizeof *r);
        char a[32], b[32], c[32], body[128];
        CHECK(req(srv, "POST", "/api/new", NULL, NULL, r) == 200, "%s", r->body);
        field(r->body, "session", a, sizeof a);
        CHECK(req(srv, "POST", "/api/new", NULL, NULL, r) == 200, "%s", r->body);
        field(r->body, "session", b, sizeof b);
        CHECK(strcmp(a, b) != 0, "distinct ids");
        /* a is used after b: b is the one idle longest. */
        CHECK(req(srv, "GET", "/api/state", a, NULL, r) == 200, "%s", r->body);
        if (!idle) {
            CHECK(req(srv, "POST", "/api/new", NULL, NULL, r) == 503, "%s", r->body);
            CHECK(strstr(r->body, "too many games at once (2 open)"), "%s", r->body);
            snprintf(body, sizeof body, "{\"session\": \"%s\"}", a);
            CHECK(req(srv, "POST", "/api/close", NULL, body, r) == 200, "%s", r->body);
            CHECK(req(srv, "POST", "/api/new", NULL, NULL, r) == 200, "a freed slot: %s", r->body);
            CHECK(req(srv, "GET", "/api/state", b, NULL, r) == 200, "b is kept");
        } else {
            CHECK(req(srv, "POST", "/api/new", NULL, NULL, r) == 200, "reclaimed: %s", r->body);
            field(r->body, "session", c, sizeof c);
            CHECK(req(srv, "GET", "/api/state", b, NULL, r) == 404, "b was reclaimed");
            CHECK(req(srv, "GET", "/api/state", a, NULL, r) == 200, "a is kept");
            CHECK(req(srv, "GET", "/api/state", c, NULL, r) == 200, "c is open");
        }
        CHECK(zt_serve_session_count(srv) == 2, "two open");
        free(r);
        zt_serve_free(srv);
    }
    zt_game_free(g);
}

static zt_status failing_eval(void *ctx, int B, const void *const *states, float *logits,
                              float *value)
{
    return zt_fail(ZT_ERR_IO, "injected network failure");
}

/* The agent's network fails: 500 naming it, and the session as it was. */
static void test_agent_failure(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "");
    zt_evaluator ev = {.ctx = g, .eval_states = failing_eval};
    for (int sims = 0; sims <= 4; sims += 4) {
        zt_serve *srv = server(g, ev, sims, 4, 1800);
        response *r = malloc(sizeof *r);
        CHECK(req(srv, "POST", "/api/new", NULL, "{\"side\": 1}", r) == 500, "%s", r->body);
        CHECK(strstr(r->body, "injected network failure"), "%s", r->body);
        CHECK(zt_serve_session_count(srv) == 0, "no session kept for a game that did not start");
        CHECK(req(srv, "POST", "/api/new", NULL, "{}", r) == 200, "%s", r->body);
        char sid[32], body[128];
        field(r->body, "session", sid, sizeof sid);
        snprintf(body, sizeof body, "{\"session\": \"%s\", \"action\": 4}", sid);
        CHECK(req(srv, "POST", "/api/move", NULL, body, r) == 500, "%s", r->body);
        CHECK(req(srv, "GET", "/api/state", sid, NULL, r) == 200, "%s", r->body);
        CHECK(count_of(r->body, "\"by\": ") == 0 && strstr(r->body, "\"your_turn\": true") &&
                  strstr(r->body, "\"position\": \"......... X\""),
              "unchanged: %s", r->body);
        free(r);
        zt_serve_free(srv);
    }
    zt_game_free(g);
}

typedef struct player_arg {
    zt_serve *srv;
    int index, games, failures;
    char last_sid[32];
} player_arg;

static void *player_thread(void *p)
{
    player_arg *a = p;
    response *r = malloc(sizeof *r);
    zt_rng rng;
    zt_rng_seed(&rng, 99, (uint64_t)a->index);
    for (int game = 0; game < a->games; game++) {
        char body[128], sid[32];
        snprintf(body, sizeof body, "{\"side\": %d, \"sims\": %d}", game % 2, 1 + a->index % 3);
        if (req(a->srv, "POST", "/api/new", NULL, body, r) != 200) {
            a->failures++;
            continue;
        }
        field(r->body, "session", sid, sizeof sid);
        if (play_out(a->srv, sid, &rng, r) < 0) a->failures++;
        snprintf(body, sizeof body, "{\"session\": \"%s\"}", sid);
        /* The state read back is the one the last move returned. */
        char pos[128], again[128];
        field(r->body, "position", pos, sizeof pos);
        if (req(a->srv, "GET", "/api/state", sid, NULL, r) != 200 ||
            !field(r->body, "position", again, sizeof again) || strcmp(pos, again) != 0)
            a->failures++;
        if (req(a->srv, "POST", "/api/close", NULL, body, r) != 200) a->failures++;
    }
    free(r);
    return NULL;
}

/* Eight players at once, each with its own games (Connect Four, searches
 * of different sizes, so the shared search is rebuilt between them). */
static void test_concurrent(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("connect4", NULL, &g) == ZT_OK, "");
    enum { PLAYERS = 8 };
    zt_serve *srv = server(g, zt_evaluator_uniform(g), 2, PLAYERS, 1800);
    pthread_t th[PLAYERS];
    player_arg args[PLAYERS];
    for (int i = 0; i < PLAYERS; i++) {
        args[i] = (player_arg){.srv = srv, .index = i, .games = 3};
        pthread_create(&th[i], NULL, player_thread, &args[i]);
    }
    for (int i = 0; i < PLAYERS; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].failures == 0, "player %d: %d failures", i, args[i].failures);
    }
    CHECK(zt_serve_session_count(srv) == 0, "every game closed");
    zt_serve_free(srv);
    zt_game_free(g);
}

/* The oracle's exact values under a flat policy: what a greedy agent plays
 * perfectly with, and a raw policy cannot use. */
typedef struct values_only {
    zt_evaluator oracle;
    int num_actions;
} values_only;

static zt_status values_only_eval(void *ctx, int B, const void *const *states, float *logits,
                                  float *values)
{
    values_only *v = ctx;
    ZT_TRY(v->oracle.eval_states(v->oracle.ctx, B, states, logits, values));
    memset(logits, 0, (size_t)B * (size_t)v->num_actions * sizeof *logits);
    return ZT_OK;
}

/* With `greedy` and 0 simulations the agent plays the move whose position
 * its values rank best (at 0 plies, or 1 deeper), its one top move: on
 * tic-tac-toe's exact values it never loses to random moves, where the flat
 * policy's first legal move loses some games; /api/info says which it is. */
static void test_greedy(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "");
    values_only vo = {.num_actions = g->num_actions};
    CHECK(zt_evaluator_oracle_new(g, &vo.oracle) == ZT_OK, "%s", zt_error_message());
    CHECK(vo.oracle.eval_states, "the oracle values states");
    zt_evaluator ev = {.ctx = &vo, .eval_states = values_only_eval};
    response *r = malloc(sizeof *r);
    for (int mode = 0; mode < 3; mode++) { /* raw policy, greedy, greedy 1-ply */
        bool greedy = mode > 0;
        zt_serve_config c = {.game = g,
                             .ev = ev,
                             .greedy = greedy,
                             .greedy_plies = mode == 2,
                             .max_sims = 8,
                             .max_sessions = 1,
                             .idle_seconds = 1800,
                             .max_body = 4096,
                             .seed = 7,
                             .model = "test"};
        zt_search_config_default(&c.search, ZT_SEARCH_GUMBEL);
        c.search.num_simulations = 0;
        zt_serve *srv = NULL;
        CHECK(zt_serve_new(&c, &srv) == ZT_OK, "%s", zt_error_message());
        CHECK(req(srv, "GET", "/api/info", NULL, NULL, r) == 200 &&
                  strstr(r->body, greedy ? "\"greedy\": true" : "\"greedy\": false") &&
                  (mode < 2) == !strstr(r->body, "\"greedy_plies\": 1"),
              "info: %s", r->body);
        zt_rng rng;
        zt_rng_seed(&rng, zt_test_seed(13), (uint64_t)mode);
        int lost = 0;
        for (int game = 0; game < 20; game++) {
            char body[64], sid[32], v[32];
            snprintf(body, sizeof body, "{\"side\": %d}", game % 2);
            CHECK(req(srv, "POST", "/api/new", NULL, body, r) == 200, "%s", r->body);
            field(r->body, "session", sid, sizeof sid);
            if (greedy && game % 2 == 1)
                CHECK(count_of(r->body, "\"share\": ") == 1, "greedy: one top move: %s", r->body);
            CHECK(play_out(srv, sid, &rng, r) >= 2, "game %d", game);
            CHECK(field(r->body, "result", v, sizeof v), "%s", r->body);
            lost += strcmp(v, "win") == 0; /* the person's result */
            snprintf(body, sizeof body, "{\"session\": \"%s\"}", sid);
            CHECK(req(srv, "POST", "/api/close", NULL, body, r) == 200, "%s", r->body);
        }
        printf("tic-tac-toe on exact values, %s: the agent lost %d of 20 to random moves\n",
               mode == 2 ? "greedy 1-ply" : greedy ? "greedy" : "raw flat policy", lost);
        CHECK(greedy ? lost == 0 : lost > 0, "%s agent lost %d", greedy ? "greedy" : "raw", lost);
        zt_serve_free(srv);
    }
    free(r);
    zt_evaluator_oracle_free(&vo.oracle);
    zt_game_free(g);
}

static void test_config(void)
{
    zt_game *g = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "");
    zt_serve_config c = {.game = g,
                         .ev = zt_evaluator_uniform(g),
                         .max_sims = 8,
                         .max_sessions = 0,
                         .idle_seconds = 1,
                         .max_body = 4096};
    zt_search_config_default(&c.search, ZT_SEARCH_GUMBEL);
    c.search.num_simulations = 4;
    zt_serve *srv = NULL;
    CHECK(zt_serve_new(&c, &srv) == ZT_ERR_INVALID && strstr(zt_error_message(), "max sessions"),
          "%s", zt_error_message());
    c.max_sessions = 1;
    c.max_sims = 2;
    CHECK(zt_serve_new(&c, &srv) == ZT_ERR_INVALID && strstr(zt_error_message(), "max sims"), "%s",
          zt_error_message());
    c.max_sims = 8;
    CHECK(zt_serve_new(&c, &srv) == ZT_OK, "%s", zt_error_message());
    zt_serve_free(srv);
    zt_game_free(g);
}

int main(void)
{
    test_json();
    test_config();
    test_routes();
    test_whole_games();
    test_greedy();
    test_backgammon();
    test_bound();
    test_agent_failure();
    test_concurrent();
    return zt_test_finish("test_serve");
}
