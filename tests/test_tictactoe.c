/* Tic-tac-toe: perft counts, the exact solver against every position of the
 * shared file, text round trips, rejection of malformed text, symmetries. */
#include "core/rng.h"
#include "game/game.h"
#include "game/solver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zt_test.h"

static long perft(const zt_game *g, const void *s, int depth)
{
    if (depth == 0) return 1;
    uint16_t actions[ZT_MAX_ACTIONS];
    uint8_t child[ZT_MAX_STATE_BYTES];
    int n = g->legal(g, s, actions);
    long total = 0;
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, actions[i]);
        if (depth == 1 || !zt_game_is_terminal(g, child)) total += perft(g, child, depth - 1);
    }
    return total;
}

static void test_perft(const zt_game *g)
{
    static const long expected[10] = {1, 9, 72, 504, 3024, 15120, 54720, 148176, 200448, 127872};
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    for (int d = 1; d <= 9; d++) {
        long got = perft(g, s, d);
        CHECK(got == expected[d], "perft(%d) = %ld, expected %ld", d, got, expected[d]);
    }
}

static void test_solver_file(const zt_game *g)
{
    char path[512], line[512];
    FILE *f = zt_test_open_data("tictactoe/ttt_positions.txt", path, sizeof path);
    CHECK(f != NULL, "cannot find tictactoe/ttt_positions.txt (set ZT_DATA_DIR)");
    if (!f) return;
    zt_solver *sv = NULL;
    zt_status st = zt_solver_new(g, &sv);
    CHECK(st == ZT_OK, "solver: %s", zt_error_message());
    if (st != ZT_OK) {
        fclose(f);
        return;
    }
    static zt_position pos;
    static zt_solution sol;
    int lines = 0, agreed = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        lines++;
        st = sv->parse_line(sv, line, &pos);
        CHECK(st == ZT_OK, "parse '%s': %s", line, zt_error_message());
        if (st != ZT_OK) continue;
        CHECK(pos.has_value && pos.has_moves, "line '%s' lacks value or moves", line);
        st = sv->solve(sv, pos.state, true, &sol);
        CHECK(st == ZT_OK, "solve '%s': %s", line, zt_error_message());
        bool ok = st == ZT_OK && sv->agrees(&pos.expected, &pos, &sol);
        CHECK(ok, "solver disagrees on '%s' (value %+d, %d moves)", line, sol.value, sol.num_moves);
        agreed += ok;
        char text[ZT_MAX_TEXT];
        g->to_text(g, pos.state, text, sizeof text);
        CHECK(strncmp(text, line, 11) == 0, "to_text gives '%s' for '%s'", text, line);
    }
    fclose(f);
    CHECK(lines == 4520, "%s: %d positions, expected 4520", path, lines);
    CHECK(agreed == lines, "solver agrees on %d of %d positions", agreed, lines);
    printf("tictactoe solver: %d/%d positions agree\n", agreed, lines);

    /* The empty board is a draw and every opening keeps it. */
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    st = sv->solve(sv, s, true, &sol);
    CHECK(st == ZT_OK && sol.value == 0 && sol.num_moves == 9, "empty board: value %d, %d moves",
          sol.value, sol.num_moves);
    zt_solver_free(sv);
}

static void test_text(const zt_game *g)
{
    static const char *good[] = {"......... X", "X.O...... X", "XX.OO.... X",
                                 "XXXOO.... O", "XOXXOOOXX O", "OOOXX.X.. X"};
    uint8_t s[ZT_MAX_STATE_BYTES], t[ZT_MAX_STATE_BYTES];
    char text[ZT_MAX_TEXT];
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        zt_status st = g->from_text(g, good[i], s);
        CHECK(st == ZT_OK, "from_text('%s'): %s", good[i], zt_error_message());
        if (st != ZT_OK) continue;
        g->to_text(g, s, text, sizeof text);
        CHECK(strcmp(text, good[i]) == 0, "round trip '%s' -> '%s'", good[i], text);
    }
    CHECK(g->from_text(g, "XXXOO.... O", s) == ZT_OK && zt_game_is_terminal(g, s),
          "X three in a row is terminal");
    CHECK(g->from_text(g, "XOXXOOOXX O", s) == ZT_OK && zt_game_is_terminal(g, s),
          "full board is terminal");
    float r[2];
    g->returns(g, s, r);
    CHECK(r[0] == 0 && r[1] == 0, "full board without a line is a draw");

    static const char *bad[] = {
        "",
        "........ X",
        "........... X",
        "X........ X",
        ".......... X",
        "XX....... O",
        "O........ X",
        "X........ Z",
        "X..Q..... O",
        "XXXOOO... X",
        "XXXOO.... X",
        "OOOXX.X.. O",
        "X........ O junk",
        "X........",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        zt_status st = g->from_text(g, bad[i], s);
        CHECK(st == ZT_ERR_INVALID, "from_text accepted malformed '%s'", bad[i]);
        CHECK(strchr(zt_error_message(), '\n') == NULL, "error message is not one line");
    }

    /* Actions. */
    g->reset(g, s);
    for (int a = 0; a < 9; a++) {
        int back = -1;
        g->action_to_text(g, s, a, text, sizeof text);
        CHECK(g->action_from_text(g, s, text, &back) == ZT_OK && back == a,
              "action %d -> '%s' -> %d", a, text, back);
    }
    int a;
    CHECK(g->action_from_text(g, s, "9", &a) == ZT_ERR_INVALID, "action '9' accepted");
    CHECK(g->action_from_text(g, s, "x", &a) == ZT_ERR_INVALID, "action 'x' accepted");
    CHECK(g->action_from_text(g, s, "", &a) == ZT_ERR_INVALID, "empty action accepted");

    /* Compact codes round trip. */
    uint8_t code[16];
    CHECK(g->from_text(g, "XO.X.O... X", s) == ZT_OK, "from_text");
    g->encode(g, s, code);
    CHECK(g->decode(g, code, t) == ZT_OK && memcmp(s, t, g->state_size) == 0, "decode(encode)");
    code[0] = 0xff;
    code[1] = 0xff;
    CHECK(g->decode(g, code, t) == ZT_ERR_CORRUPT, "out-of-range compact code accepted");
    code[0] = 1 + 3 + 9; /* X on 0, 1, 2 and no O stone */
    code[1] = 0;
    CHECK(g->decode(g, code, t) == ZT_ERR_CORRUPT, "impossible board accepted from compact code");

    char grid[512];
    g->render(g, s, grid, sizeof grid);
    CHECK(strstr(grid, " X | O | . ") != NULL, "render:\n%s", grid);
}

/* Every symmetry maps the 8 lines onto lines and commutes with apply. */
static void test_symmetries(const zt_game *g)
{
    zt_rng rng;
    uint64_t seed = 20240601;
    zt_rng_seed(&rng, seed, 0);
    printf("tictactoe symmetry seed %llu\n", (unsigned long long)seed);
    CHECK(g->num_symmetries == 8, "8 symmetries");
    uint8_t s[ZT_MAX_STATE_BYTES], a1[ZT_MAX_STATE_BYTES], a2[ZT_MAX_STATE_BYTES];
    uint16_t actions[ZT_MAX_ACTIONS];
    for (int game = 0; game < 200; game++) {
        g->reset(g, s);
        while (!zt_game_is_terminal(g, s)) {
            int n = g->legal(g, s, actions);
            int a = actions[zt_rng_below(&rng, (uint32_t)n)];
            for (int k = 0; k < g->num_symmetries; k++) {
                g->sym_state(g, k, s, a1);
                g->apply(g, a1, g->sym_action(g, k, a));
                memcpy(a2, s, g->state_size);
                g->apply(g, a2, a);
                g->sym_state(g, k, a2, a2);
                CHECK(memcmp(a1, a2, g->state_size) == 0, "symmetry %d does not commute", k);
                CHECK(g->hash(g, a1) == g->hash(g, a2), "hash differs");
            }
            g->apply(g, s, a);
        }
    }
    /* The symmetries are 8 distinct maps. */
    CHECK(g->from_text(g, "XO....... X", s) == ZT_OK, "from_text");
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < i; j++) {
            g->sym_state(g, i, s, a1);
            g->sym_state(g, j, s, a2);
            CHECK(memcmp(a1, a2, g->state_size) != 0, "symmetries %d and %d coincide", i, j);
        }
}

int main(void)
{
    zt_game *g = NULL;
    zt_status st = zt_game_new("tictactoe", NULL, &g);
    if (st != ZT_OK) {
        printf("FAIL: cannot create tictactoe: %s\n", zt_error_message());
        return 1;
    }
    test_perft(g);
    test_text(g);
    test_symmetries(g);
    test_solver_file(g);
    zt_game_free(g);
    return zt_test_finish("test_tictactoe");
}
