/* Sim: the exact solver against the shared K6 file, settings validation, the
 * "make" variant, clique detection against brute force, long random games on
 * K14, text and compact round trips, symmetries, and the negamax player. */
#include "agent/player.h"
#include "core/config.h"
#include "core/rng.h"
#include "game/sim.h"
#include "game/solver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zt_test.h"

static const uint64_t seed = 0x5eed2024;

/* A Sim game from "key=value" settings (NULL-terminated); NULL on error with
 * the status in *st. */
static zt_game *new_sim(zt_status *st, const char *const *settings)
{
    zt_config *cfg = zt_config_new();
    zt_game *g = NULL;
    *st = ZT_OK;
    for (int i = 0; settings[i] && *st == ZT_OK; i++) *st = zt_config_set(cfg, settings[i]);
    if (*st == ZT_OK) *st = zt_game_new("sim", cfg, &g);
    zt_config_free(cfg);
    return g;
}

static zt_game *sim_or_die(const char *const *settings)
{
    zt_status st;
    zt_game *g = new_sim(&st, settings);
    if (!g) {
        printf("FAIL: cannot create sim: %s\n", zt_error_message());
        exit(1);
    }
    return g;
}

static void test_settings(void)
{
    static const struct {
        const char *settings[4];
        const char *key;
    } bad[] = {
        {{"vertices=3", NULL}, "'vertices'"},
        {{"vertices=19", NULL}, "'vertices'"},
        {{"k=7", NULL}, "'k'"},
        {{"k=2", NULL}, "'k'"},
        {{"vertices=4", "k=5", NULL}, "'k'"},
        {{"vertices=5", "k=6", NULL}, "'k'"},
        {{"variant=maybe", NULL}, "'variant'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        zt_status st;
        zt_game *g = new_sim(&st, bad[i].settings);
        CHECK(g == NULL && st == ZT_ERR_INVALID, "%s accepted", bad[i].settings[0]);
        CHECK(strstr(zt_error_message(), bad[i].key) != NULL, "error '%s' does not name %s",
              zt_error_message(), bad[i].key);
        zt_game_free(g);
    }
    zt_game *g = sim_or_die((const char *const[]){NULL});
    CHECK(strcmp(g->title, "sim K6 k=3 avoid") == 0, "default title '%s'", g->title);
    CHECK(g->num_actions == 15 && g->obs_shape[0] == 6 && g->obs_shape[1] == 6, "K6 sizes");
    CHECK(g->num_symmetries == 720, "K6 has %d symmetries, expected 720", g->num_symmetries);
    zt_game_free(g);
    g = sim_or_die((const char *const[]){"vertices=18", "k=6", "variant=make", NULL});
    CHECK(strcmp(g->title, "sim K18 k=6 make") == 0, "title '%s'", g->title);
    CHECK(g->num_actions == 153 && g->num_symmetries == 1024, "K18 sizes");
    zt_game_free(g);
}

static void test_solver_file(void)
{
    zt_game *g = sim_or_die((const char *const[]){NULL});
    zt_solver *sv = NULL;
    zt_status st = zt_solver_new(g, &sv);
    CHECK(st == ZT_OK, "solver: %s", zt_error_message());
    if (st != ZT_OK) {
        zt_game_free(g);
        return;
    }
    static zt_solution sol;
    static zt_position pos;
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    st = sv->solve(sv, s, true, &sol);
    CHECK(st == ZT_OK && sol.value == -1, "empty K6: value %+d (the first player must lose)",
          sol.value);
    CHECK(sol.num_moves == 15 && sol.score == 15, "empty K6: %d value moves, %d plies",
          sol.num_moves, sol.score);

    char path[512], line[4096];
    FILE *f = zt_test_open_data("sim/sim_k6_positions.txt", path, sizeof path);
    CHECK(f != NULL, "cannot find sim/sim_k6_positions.txt (set ZT_DATA_DIR)");
    int lines = 0, agreed = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        lines++;
        st = sv->parse_line(sv, line, &pos);
        CHECK(st == ZT_OK, "parse '%s': %s", line, zt_error_message());
        if (st != ZT_OK) continue;
        CHECK(pos.has_value && pos.has_score && pos.has_moves && pos.has_best,
              "line '%s' incomplete", line);
        st = sv->solve(sv, pos.state, true, &sol);
        CHECK(st == ZT_OK, "solve '%s': %s", line, zt_error_message());
        bool ok = st == ZT_OK && sv->agrees(&pos.expected, &pos, &sol);
        CHECK(ok, "solver disagrees on '%s': value %+d plies %d, %d value moves, %d best", line,
              sol.value, sol.score, sol.num_moves, sol.num_best);
        agreed += ok;
        char text[ZT_MAX_TEXT];
        g->to_text(g, pos.state, text, sizeof text);
        CHECK(strncmp(text, line, 17) == 0 && line[17] == ' ', "to_text '%s' for '%s'", text, line);
    }
    if (f) fclose(f);
    CHECK(lines > 2000, "%d positions read", lines);
    CHECK(agreed == lines, "solver agrees on %d of %d", agreed, lines);
    char stats[256];
    sv->stats(sv, stats, sizeof stats);
    printf("sim K6: %d/%d shared positions agree; %s\n", agreed, lines, stats);
    CHECK(sv->parse_line(sv, "BR..RB...R....B R +1 9 2,3 x", &pos) == ZT_ERR_INVALID,
          "bad moves accepted");
    CHECK(sv->parse_line(sv, "BR..RB...R....B R +2", &pos) == ZT_ERR_INVALID, "bad value accepted");
    zt_solver_free(sv);
    zt_game_free(g);

    g = sim_or_die((const char *const[]){"vertices=7", NULL});
    CHECK(zt_solver_new(g, &sv) == ZT_ERR_UNSUPPORTED, "K7 solver should be unsupported");
    CHECK(strstr(zt_error_message(), "K7") != NULL, "message '%s'", zt_error_message());
    zt_game_free(g);
}

/* Brute force: does colour c have a k-clique (containing u and v if u >= 0)? */
static bool brute_clique(const zt_sim_state *s, int n, int c, int k, int u, int v)
{
    for (uint32_t m = 0; m < (1u << n); m++) {
        if (__builtin_popcount(m) != k) continue;
        if (u >= 0 && (!(m >> u & 1) || !(m >> v & 1))) continue;
        bool all = true;
        for (int a = 0; a < n && all; a++)
            for (int b = a + 1; b < n && all; b++)
                if ((m >> a & 1) && (m >> b & 1)) all = (s->adj[c][a] >> b & 1) != 0;
        if (all) return true;
    }
    return false;
}

static void test_cliques_brute_force(void)
{
    zt_rng rng;
    zt_rng_seed(&rng, seed, 1);
    int checks = 0;
    for (int trial = 0; trial < 600; trial++) {
        int n = 7 + (int)zt_rng_below(&rng, 3), k = 3 + (int)zt_rng_below(&rng, 2);
        int density = 30 + (int)zt_rng_below(&rng, 60); /* percent coloured */
        zt_sim_state s;
        memset(&s, 0, sizeof s);
        for (int u = 0; u < n; u++)
            for (int v = u + 1; v < n; v++) {
                if ((int)zt_rng_below(&rng, 100) >= density) continue;
                int c = (int)zt_rng_below(&rng, 2);
                s.adj[c][u] |= 1u << v;
                s.adj[c][v] |= 1u << u;
            }
        uint32_t all = (1u << n) - 1;
        for (int c = 0; c < 2; c++) {
            CHECK(zt_sim_has_clique(s.adj[c], all, k) == brute_clique(&s, n, c, k, -1, -1),
                  "has_clique n=%d k=%d trial %d", n, k, trial);
            for (int u = 0; u < n; u++)
                for (int v = u + 1; v < n; v++) {
                    if ((s.adj[0][u] | s.adj[1][u]) >> v & 1) continue;
                    zt_sim_state t = s;
                    t.adj[c][u] |= 1u << v;
                    t.adj[c][v] |= 1u << u;
                    CHECK(zt_sim_completes(&s, c, u, v, k) == brute_clique(&t, n, c, k, u, v),
                          "completes n=%d k=%d edge %d-%d trial %d", n, k, u, v, trial);
                    checks++;
                }
        }
    }
    printf("sim clique tests: %d edge checks against brute force (seed %llu)\n", checks,
           (unsigned long long)seed);
}

/* The interface properties the generic game test also checks, on one state. */
static void check_state(const zt_game *g, const void *s, zt_rng *rng)
{
    uint8_t t[ZT_MAX_STATE_BYTES], code[64];
    char text[ZT_MAX_TEXT];
    g->to_text(g, s, text, sizeof text);
    memset(t, 0xaa, sizeof t);
    CHECK(g->from_text(g, text, t) == ZT_OK && memcmp(s, t, g->state_size) == 0,
          "text round trip '%s': %s", text, zt_error_message());
    g->encode(g, s, code);
    memset(t, 0xaa, sizeof t);
    CHECK(g->decode(g, code, t) == ZT_OK && memcmp(s, t, g->state_size) == 0,
          "compact round trip '%s'", text);
    if (zt_game_is_terminal(g, s)) return;
    uint16_t actions[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, actions);
    int a = actions[zt_rng_below(rng, (uint32_t)n)];
    char at[32];
    int back = -1;
    g->action_to_text(g, s, a, at, sizeof at);
    CHECK(g->action_from_text(g, s, at, &back) == ZT_OK && back == a, "action %d -> '%s' -> %d", a,
          at, back);
    for (int i = 0; i < 4; i++) {
        int k = i == 0 ? 0 : (int)zt_rng_below(rng, (uint32_t)g->num_symmetries);
        uint8_t x[ZT_MAX_STATE_BYTES], y[ZT_MAX_STATE_BYTES];
        g->sym_state(g, k, s, x);
        g->apply(g, x, g->sym_action(g, k, a));
        memcpy(y, s, g->state_size);
        g->apply(g, y, a);
        g->sym_state(g, k, y, y);
        CHECK(memcmp(x, y, g->state_size) == 0 && g->hash(g, x) == g->hash(g, y),
              "symmetry %d does not commute with %s on '%s'", k, at, text);
    }
}

/* Random games: the end is reached exactly when the mover completes a
 * k-clique of its colour (checked by brute force), or the board is full. */
static void test_random_games(const char *const *settings, int games)
{
    zt_game *g = sim_or_die(settings);
    const zt_sim_impl *im = g->impl;
    zt_rng rng;
    zt_rng_seed(&rng, seed, 2);
    uint8_t s[ZT_MAX_STATE_BYTES];
    uint16_t actions[ZT_MAX_ACTIONS];
    long plies = 0;
    int wins[3] = {0, 0, 0};
    size_t obs_len = (size_t)zt_game_obs_size(g);
    float *obs = malloc(obs_len * sizeof *obs);
    for (int game = 0; game < games; game++) {
        g->reset(g, s);
        zt_sim_state *st = (zt_sim_state *)s;
        while (!zt_game_is_terminal(g, s)) {
            if (game < 20) check_state(g, s, &rng);
            int n = g->legal(g, s, actions), mover = g->current_player(g, s);
            CHECK(n == im->edges - st->coloured, "%d legal moves after %d of %d edges", n,
                  st->coloured, im->edges);
            int a = actions[zt_rng_below(&rng, (uint32_t)n)];
            g->apply(g, s, a);
            plies++;
            if (game >= 50 || im->n > 14) continue;
            bool clique = brute_clique(st, im->n, mover, im->k, im->edge_u[a], im->edge_v[a]);
            CHECK(zt_game_is_terminal(g, s) == (clique || st->coloured == im->edges),
                  "%s: game end does not match the cliques", g->title);
            if (clique) {
                float r[2];
                g->returns(g, s, r);
                CHECK(r[mover] == (im->make ? 1.0f : -1.0f),
                      "%s: clique made by player %d not scored", g->title, mover);
            }
        }
        if (game < 20) {
            check_state(g, s, &rng);
            g->observe(g, s, obs);
        }
        wins[((zt_sim_state *)s)->result - 1]++;
    }
    free(obs);
    printf("%s: %d random games, %.1f plies on average, wins %d/%d, draws %d (seed %llu)\n",
           g->title, games, (double)plies / games, wins[0], wins[1], wins[2],
           (unsigned long long)seed);
    zt_game_free(g);
}

/* K4, k=3: red 0-1, blue 2-3, red 0-2, blue 1-3, red 1-2 closes triangle
 * 0-1-2. In "make" red wins, in "avoid" red loses. */
static void test_make_variant(void)
{
    static const char *line[] = {"0-1", "2-3", "0-2", "1-3", "1-2"};
    for (int make = 0; make < 2; make++) {
        zt_game *g = sim_or_die((const char *const[]){
            "vertices=4", "k=3", make ? "variant=make" : "variant=avoid", NULL});
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        for (int i = 0; i < 5; i++) {
            CHECK(!zt_game_is_terminal(g, s), "%s: over before move %d", g->title, i);
            if (i == 4) {
                char text[ZT_MAX_TEXT];
                g->to_text(g, s, text, sizeof text);
                CHECK(strcmp(text, "RR..BB R") == 0, "%s: position before the last move '%s'",
                      g->title, text);
                zt_solver *sv;
                static zt_solution sol;
                CHECK(zt_solver_new(g, &sv) == ZT_OK, "K4 solver: %s", zt_error_message());
                CHECK(sv->solve(sv, s, true, &sol) == ZT_OK, "K4 solve");
                if (make)
                    CHECK(sol.value == 1 && sol.score == 1 && sol.num_best == 1 && sol.best[0] == 3,
                          "make: value %+d plies %d best %d", sol.value, sol.score, sol.best[0]);
                else
                    CHECK(sol.value == 1 && sol.num_moves == 1 && sol.moves[0] == 2,
                          "avoid: edge 1-2 must not keep the value");
                zt_solver_free(sv);
            }
            int a;
            CHECK(g->action_from_text(g, s, line[i], &a) == ZT_OK, "action '%s'", line[i]);
            g->apply(g, s, a);
        }
        float r[2];
        g->returns(g, s, r);
        CHECK(zt_game_is_terminal(g, s) && r[0] == (make ? 1.0f : -1.0f) && r[1] == -r[0],
              "%s: red should %s", g->title, make ? "win" : "lose");
        zt_game_free(g);
    }
    /* Full solves of small boards finish and give a value. */
    zt_game *g = sim_or_die((const char *const[]){"vertices=5", "k=3", NULL});
    zt_solver *sv;
    static zt_solution sol;
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    CHECK(zt_solver_new(g, &sv) == ZT_OK && sv->solve(sv, s, true, &sol) == ZT_OK, "K5 solve");
    printf("sim K5 k=3 avoid: empty board value %+d, plies %d\n", sol.value, sol.score);
    CHECK(sol.value == 0 && sol.score == 10, "K5 (R(3,3) = 6 > 5) can be drawn: %+d %d", sol.value,
          sol.score);
    zt_solver_free(sv);
    zt_game_free(g);
}

static void test_text(void)
{
    zt_game *g = sim_or_die((const char *const[]){NULL});
    uint8_t s[ZT_MAX_STATE_BYTES];
    static const char *bad[] = {
        "",
        "BR..RB...R....B",    /* no side */
        "BR..RB...R....B X",  /* bad side */
        "BR..RB...R.... R",   /* 14 edges */
        "BR..RB...R....BB R", /* 16 edges */
        "BR..RB...R..x.B R",  /* bad colour */
        "BR..RB...R....B B",  /* wrong side for the counts */
        "RR............. B",  /* two red, no blue */
        "RR...R...B.B.B. R",  /* red triangle 0-1-2 but blue moved last */
        "RR...R......BBB R",  /* both colours have triangles */
        "BR..RB...R....B R extra",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(g->from_text(g, bad[i], s) == ZT_ERR_INVALID, "from_text accepted '%s'", bad[i]);
        CHECK(strchr(zt_error_message(), '\n') == NULL, "multi-line error");
    }
    CHECK(g->from_text(g, "RR...R...B.B... B", s) == ZT_OK && zt_game_is_terminal(g, s),
          "red triangle with red last is a finished game: %s", zt_error_message());
    int a = -1;
    CHECK(g->action_from_text(g, s, "4-0", &a) == ZT_OK && a == 3, "'4-0' is edge 3, got %d", a);
    CHECK(g->action_from_text(g, s, "14", &a) == ZT_OK && a == 14, "'14' is edge 14");
    CHECK(g->action_from_text(g, s, "15", &a) == ZT_ERR_INVALID, "'15' accepted");
    CHECK(g->action_from_text(g, s, "2-2", &a) == ZT_ERR_INVALID, "'2-2' accepted");
    CHECK(g->action_from_text(g, s, "0-6", &a) == ZT_ERR_INVALID, "'0-6' accepted");
    CHECK(g->action_from_text(g, s, "a-b", &a) == ZT_ERR_INVALID, "'a-b' accepted");
    char out[2048];
    g->render(g, s, out, sizeof out);
    CHECK(strstr(out, "blue wins") != NULL, "render:\n%s", out);
    uint8_t code[8] = {255, 0, 0, 0};
    CHECK(g->decode(g, code, s) == ZT_ERR_CORRUPT, "bad compact byte accepted");
    zt_game_free(g);
}

/* Positions from random play where the mover has both safe and losing
 * edges (or, in "make", a winning edge): the player must take the safe /
 * winning one at every depth. */
static void test_negamax(const char *const *settings, int max_depth)
{
    zt_game *g = sim_or_die(settings);
    const zt_sim_impl *im = g->impl;
    zt_rng rng;
    zt_rng_seed(&rng, seed, 3);
    zt_player *players[4] = {NULL};
    for (int d = 1; d <= max_depth; d++)
        CHECK(zt_player_new_negamax_sim(g, d, &players[d - 1]) == ZT_OK, "negamax:%d", d);
    zt_player *bad;
    CHECK(zt_player_new_negamax_sim(g, 0, &bad) == ZT_ERR_INVALID, "depth 0 accepted");
    uint8_t s[ZT_MAX_STATE_BYTES];
    uint16_t actions[ZT_MAX_ACTIONS];
    int tested = 0;
    for (int game = 0; game < 60; game++) {
        g->reset(g, s);
        const zt_sim_state *st = (const zt_sim_state *)s;
        while (!zt_game_is_terminal(g, s)) {
            int n = g->legal(g, s, actions), ending = 0;
            for (int i = 0; i < n; i++)
                ending += zt_sim_completes(st, st->side, im->edge_u[actions[i]],
                                           im->edge_v[actions[i]], im->k);
            if (ending > 0 && ending < n) {
                tested++;
                for (int d = 1; d <= max_depth; d++) {
                    int a = players[d - 1]->choose(players[d - 1], s, &rng);
                    bool ends = zt_sim_completes(st, st->side, im->edge_u[a], im->edge_v[a], im->k);
                    CHECK(ends == im->make,
                          "%s negamax:%d chose %d (%s) with %d of %d edges ending the game",
                          g->title, d, a, ends ? "ending" : "quiet", ending, n);
                }
            }
            g->apply(g, s, actions[zt_rng_below(&rng, (uint32_t)n)]);
        }
    }
    CHECK(tested > 20, "%s: only %d positions tested", g->title, tested);
    printf("%s: negamax depth 1..%d checked on %d positions\n", g->title, max_depth, tested);
    for (int d = 0; d < max_depth; d++) zt_player_free(players[d]);
    zt_game_free(g);
}

/* On K6 the depth-4 negamax never loses a won position of the shared file
 * that is at most 3 plies from the end. */
static void test_negamax_endgames(void)
{
    zt_game *g = sim_or_die((const char *const[]){NULL});
    zt_solver *sv;
    zt_player *p;
    CHECK(zt_solver_new(g, &sv) == ZT_OK && zt_player_new_negamax_sim(g, 4, &p) == ZT_OK, "setup");
    static zt_position pos;
    char path[512], line[4096];
    FILE *f = zt_test_open_data("sim/sim_k6_positions.txt", path, sizeof path);
    zt_rng rng;
    zt_rng_seed(&rng, seed, 4);
    int tested = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || sv->parse_line(sv, line, &pos) != ZT_OK) continue;
        if (pos.expected.value != 1 || pos.expected.score > 3) continue;
        int a = p->choose(p, pos.state, &rng);
        bool keeps = false;
        for (int i = 0; i < pos.expected.num_moves; i++) keeps |= pos.expected.moves[i] == a;
        CHECK(keeps, "negamax:4 throws away the win in '%s' with %d", line, a);
        tested++;
    }
    if (f) fclose(f);
    printf("sim K6: negamax:4 keeps the win in %d short endgames\n", tested);
    zt_player_free(p);
    zt_solver_free(sv);
    zt_game_free(g);
}

int main(void)
{
    printf("test_sim seed %llu\n", (unsigned long long)seed);
    test_settings();
    test_text();
    test_make_variant();
    test_cliques_brute_force();
    test_random_games((const char *const[]){NULL}, 2000);
    test_random_games((const char *const[]){"vertices=9", "k=4", "variant=make", NULL}, 300);
    test_random_games((const char *const[]){"vertices=14", "k=4", NULL}, 300);
    test_random_games((const char *const[]){"vertices=18", "k=5", NULL}, 30);
    test_negamax((const char *const[]){NULL}, 3);
    test_negamax((const char *const[]){"vertices=8", "k=3", NULL}, 2);
    test_negamax((const char *const[]){"vertices=7", "k=3", "variant=make", NULL}, 3);
    test_solver_file();
    test_negamax_endgames();
    return zt_test_finish("test_sim");
}
