/* Connect Four: perft from the start, the exact solver against both Pons test
 * sets (scores, mirrored positions, value-preserving moves), move-string
 * errors, text and compact round trips (decode accepts exactly the reachable
 * positions up to 8 stones), and the alpha-beta player's wins and blocks. */
#include "agent/player.h"
#include "core/rng.h"
#include "game/connect4.h"
#include "game/game.h"
#include "game/solver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zt_test.h"

/* ---- perft ---- */

static long perft(const zt_game *g, const void *s, int depth)
{
    uint16_t actions[ZT_MAX_ACTIONS];
    uint8_t child[ZT_MAX_STATE_BYTES];
    int n = g->legal(g, s, actions);
    if (depth == 1) return n;
    long total = 0;
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, actions[i]);
        if (!zt_game_is_terminal(g, child)) total += perft(g, child, depth - 1);
    }
    return total;
}

static void test_perft(const zt_game *g)
{
    /* Move sequences of each length; games that ended earlier stop counting. */
    static const long expected[9] = {1, 7, 49, 343, 2401, 16807, 117649, 823536, 5673234};
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    for (int d = 1; d <= 8; d++) {
        long got = perft(g, s, d);
        CHECK(got == expected[d], "perft(%d) = %ld, expected %ld", d, got, expected[d]);
    }
}

/* ---- text ---- */

static void test_text(const zt_game *g)
{
    uint8_t s[ZT_MAX_STATE_BYTES], t[ZT_MAX_STATE_BYTES];
    char text[ZT_MAX_TEXT];
    CHECK(g->from_text(g, "", s) == ZT_OK, "empty move string: %s", zt_error_message());
    g->reset(g, t);
    CHECK(memcmp(s, t, g->state_size) == 0, "empty move string is not the start");
    g->to_text(g, s, text, sizeof text);
    CHECK(strcmp(text, "") == 0, "start position text '%s'", text);

    struct {
        const char *text, *needle;
    } bad[] = {
        {"4458", "move 4"},       /* column 8 */
        {"40", "move 2"},         /* column 0 */
        {"44a", "move 3"},        /* not a digit */
        {"4 4", "move 2"},        /* a space */
        {"1111111", "move 7"},    /* the seventh stone in a column of six */
        {"12121212", "move 8"},   /* player 0 won with its fourth stone in column 1 */
        {"121212123", "move 8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zt_status st = g->from_text(g, bad[i].text, s);
        CHECK(st == ZT_ERR_INVALID, "'%s' accepted", bad[i].text);
        CHECK(strstr(zt_error_message(), bad[i].needle) != NULL, "'%s': message '%s' lacks '%s'",
              bad[i].text, zt_error_message(), bad[i].needle);
        CHECK(strchr(zt_error_message(), '\n') == NULL, "'%s': message spans lines", bad[i].text);
    }
    CHECK(g->from_text(g, "1212121", s) == ZT_OK, "a winning last move is accepted");
    CHECK(zt_game_is_terminal(g, s), "1212121 is over");
    float r[2];
    g->returns(g, s, r);
    CHECK(r[0] == 1 && r[1] == -1, "1212121: returns %g %g", r[0], r[1]);

    /* Transpositions map to one state and one canonical text. */
    CHECK(g->from_text(g, "4453", s) == ZT_OK && g->from_text(g, "5344", t) == ZT_OK,
          "4453 / 5344");
    CHECK(memcmp(s, t, g->state_size) == 0, "4453 and 5344 differ");
    CHECK(g->hash(g, s) == g->hash(g, t), "4453 and 5344 hash differently");
    CHECK(g->from_text(g, "445", t) == ZT_OK && g->hash(g, s) != g->hash(g, t), "hash 445");

    /* Mirror: column c -> 8 - c. */
    uint8_t m[ZT_MAX_STATE_BYTES];
    g->sym_state(g, 1, s, m);
    CHECK(g->from_text(g, "4435", t) == ZT_OK && memcmp(m, t, g->state_size) == 0,
          "mirror of 4453 is not 4435");

    int a = -1;
    CHECK(g->action_from_text(g, s, "7", &a) == ZT_OK && a == 6, "action '7' -> %d", a);
    CHECK(g->action_from_text(g, s, "8", &a) == ZT_ERR_INVALID, "action '8' accepted");
    CHECK(g->from_text(g, "444444", s) == ZT_OK, "444444");
    CHECK(g->action_from_text(g, s, "4", &a) == ZT_ERR_INVALID, "full column 4 accepted");

    char board[ZT_MAX_TEXT];
    g->render(g, s, board, sizeof board);
    CHECK(strstr(board, "1 2 3 4 5 6 7") != NULL, "render lacks column numbers:\n%s", board);
}

/* ---- round trips along random games ---- */

static void test_round_trips(const zt_game *g, zt_rng *rng)
{
    uint8_t s[ZT_MAX_STATE_BYTES], t[ZT_MAX_STATE_BYTES], bytes[16];
    uint16_t actions[ZT_MAX_ACTIONS];
    char text[ZT_MAX_TEXT];
    for (int game = 0; game < 300; game++) {
        g->reset(g, s);
        for (;;) {
            g->to_text(g, s, text, sizeof text);
            CHECK(g->from_text(g, text, t) == ZT_OK, "from_text('%s'): %s", text,
                  zt_error_message());
            CHECK(memcmp(s, t, g->state_size) == 0, "text round trip of '%s'", text);
            g->encode(g, s, bytes);
            CHECK(g->decode(g, bytes, t) == ZT_OK, "decode of '%s': %s", text, zt_error_message());
            CHECK(memcmp(s, t, g->state_size) == 0, "compact round trip of '%s'", text);
            if (zt_game_is_terminal(g, s)) break;
            int n = g->legal(g, s, actions);
            g->apply(g, s, actions[zt_rng_below(rng, (uint32_t)n)]);
        }
    }
}

/* ---- decode accepts exactly the reachable positions ---- */

typedef struct key_set {
    uint64_t *keys;
    size_t n, cap;
} key_set;

static void collect(const zt_game *g, const c4_state *s, int depth, key_set *set)
{
    if (set->n == set->cap) {
        set->cap = set->cap ? 2 * set->cap : 1024;
        set->keys = realloc(set->keys, set->cap * sizeof *set->keys);
    }
    set->keys[set->n++] = c4_key(s->current, s->mask);
    if (depth == 0 || s->status != C4_ONGOING) return;
    for (int c = 0; c < C4_WIDTH; c++) {
        if (s->mask & c4_top_cell(c)) continue;
        c4_state child = *s;
        g->apply(g, &child, c);
        collect(g, &child, depth - 1, set);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

typedef struct key_check {
    const zt_game *g;
    const uint64_t *reachable;
    size_t n;
    long candidates, accepted;
} key_check;

/* Every key of columns with at most `left` more stones, balanced or not. */
static void try_keys(key_check *kc, int col, int left, uint64_t key)
{
    if (col == C4_WIDTH) {
        uint8_t bytes[8], s[ZT_MAX_STATE_BYTES];
        for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(key >> (8 * i));
        bool ok = kc->g->decode(kc->g, bytes, s) == ZT_OK;
        bool expect = bsearch(&key, kc->reachable, kc->n, sizeof key, cmp_u64) != NULL;
        kc->candidates++;
        kc->accepted += ok;
        CHECK(ok == expect, "decode of key %llx: %s, expected %s", (unsigned long long)key,
              ok ? "accepted" : "refused", expect ? "reachable" : "unreachable");
        return;
    }
    for (int h = 0; h <= left && h <= C4_HEIGHT; h++)
        for (uint64_t own = 0; own < (1ULL << h); own++)
            try_keys(kc, col + 1, left - h, key | (((1ULL << h) | own) << (col * C4_COL_BITS)));
}

static void test_decode_exact(const zt_game *g)
{
    const int depth = 8;
    key_set set = {0};
    c4_state start;
    g->reset(g, &start);
    collect(g, &start, depth, &set);
    qsort(set.keys, set.n, sizeof *set.keys, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < set.n; i++)
        if (u == 0 || set.keys[i] != set.keys[u - 1]) set.keys[u++] = set.keys[i];
    key_check kc = {.g = g, .reachable = set.keys, .n = u};
    try_keys(&kc, 0, depth, 0);
    CHECK(kc.accepted == (long)u, "decode accepted %ld keys, %zu positions are reachable",
          kc.accepted, u);
    printf("decode: %ld keys with <= %d stones tried, %ld accepted (all reachable ones)\n",
           kc.candidates, depth, kc.accepted);
    free(set.keys);

    /* Malformed bytes. */
    uint8_t bytes[8];
    uint8_t s[ZT_MAX_STATE_BYTES];
    memset(bytes, 0, sizeof bytes); /* no height markers */
    CHECK(g->decode(g, bytes, s) == ZT_ERR_CORRUPT, "zero bytes accepted");
    memset(bytes, 0xff, sizeof bytes); /* bits above the 49-bit key */
    CHECK(g->decode(g, bytes, s) == ZT_ERR_CORRUPT, "0xff bytes accepted");
    /* X X O O stacked in column 1 alone: counts balance but no game builds it. */
    uint64_t key = (C4_BOTTOM & ~1ULL) | 0x13;
    for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(key >> (8 * i));
    CHECK(g->decode(g, bytes, s) == ZT_ERR_CORRUPT, "X X O O in one column accepted");
}

/* ---- solver ---- */

static c4_state mirrored(const zt_game *g, const void *s)
{
    c4_state m;
    g->sym_state(g, 1, s, &m);
    return m;
}

static void test_solver_set(const zt_game *g, zt_solver *sv, const char *rel)
{
    char path[512], line[256];
    FILE *f = zt_test_open_data(rel, path, sizeof path);
    CHECK(f != NULL, "cannot open %s", rel);
    if (!f) return;
    static zt_position pos;
    static zt_solution sol, msol, csol;
    int lines = 0, wrong = 0, mirror_wrong = 0, moves_wrong = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        memset(&pos, 0, sizeof pos);
        zt_status st = sv->parse_line(sv, line, &pos);
        CHECK(st == ZT_OK, "%s: parse '%s': %s", rel, line, zt_error_message());
        if (st != ZT_OK) continue;
        lines++;
        /* The first 100 lines also get their value-preserving moves checked
         * against strong solves of every child. */
        bool with_moves = lines <= 100;
        CHECK(sv->solve(sv, pos.state, with_moves, &sol) == ZT_OK, "solve");
        if (!sv->agrees(&pos.expected, &pos, &sol) && wrong++ < 5)
            printf("FAIL %s '%s': score %d\n", rel, line, sol.score);
        CHECK(sol.value == (sol.score > 0) - (sol.score < 0), "value %d for score %d", sol.value,
              sol.score);
        /* The mirror image has the same score (every 4th line, to keep it short). */
        if (lines % 4 == 0) {
            c4_state m = mirrored(g, pos.state);
            sv->solve(sv, &m, false, &msol);
            if (msol.score != sol.score && mirror_wrong++ < 5)
                printf("FAIL %s '%s': mirror score %d != %d\n", rel, line, msol.score, sol.score);
        }
        if (!with_moves) continue;
        uint8_t keep[C4_WIDTH] = {0};
        const c4_state *s = (const c4_state *)pos.state;
        for (int c = 0; c < C4_WIDTH; c++) {
            if (s->mask & c4_top_cell(c)) continue;
            c4_state child = *s;
            g->apply(g, &child, c);
            int v;
            if (child.status == C4_WON)
                v = 1;
            else if (child.status == C4_DRAW)
                v = 0;
            else {
                sv->solve(sv, &child, false, &csol);
                v = -csol.value;
            }
            keep[c] = v == sol.value;
        }
        int k = 0;
        bool same = true;
        for (int c = 0; c < C4_WIDTH; c++) {
            if (!keep[c]) continue;
            same = same && k < sol.num_moves && sol.moves[k] == c;
            k++;
        }
        if (!(same && k == sol.num_moves) && moves_wrong++ < 5)
            printf("FAIL %s '%s': value-preserving moves differ from the children's values\n",
                   rel, line);
    }
    fclose(f);
    CHECK(lines == 1000, "%s: %d lines", rel, lines);
    CHECK(wrong == 0, "%s: %d scores differ", rel, wrong);
    CHECK(mirror_wrong == 0, "%s: %d mirrored scores differ", rel, mirror_wrong);
    CHECK(moves_wrong == 0, "%s: %d move sets differ", rel, moves_wrong);
    printf("%s: %d positions solved, %d wrong\n", rel, lines, wrong);
}

static void test_solver(const zt_game *g)
{
    zt_solver *sv = NULL;
    CHECK(zt_solver_new(g, &sv) == ZT_OK, "solver: %s", zt_error_message());
    if (!sv) return;
    test_solver_set(g, sv, "connect4/Test_L3_R1");
    test_solver_set(g, sv, "connect4/Test_L2_R1");

    /* Known values: a win next move is 22 - 4 = 18 after "121212" for X. */
    static zt_position pos;
    static zt_solution sol;
    CHECK(sv->parse_line(sv, "121212 18", &pos) == ZT_OK, "parse 121212");
    sv->solve(sv, pos.state, true, &sol);
    CHECK(sol.score == 18 && sol.num_moves == 1 && sol.moves[0] == 0, "121212: score %d", sol.score);
    CHECK(sv->parse_line(sv, "1212 9", &pos) == ZT_OK, "parse score only");
    CHECK(sv->parse_line(sv, "1212 x", &pos) == ZT_ERR_INVALID, "bad score accepted");
    CHECK(sv->parse_line(sv, "1218 3", &pos) == ZT_ERR_INVALID, "column 8 accepted");
    char stats[256];
    sv->stats(sv, stats, sizeof stats);
    printf("%s\n", stats);
    zt_solver_free(sv);
}

/* ---- alpha-beta player ---- */

static void test_alphabeta(const zt_game *g, zt_rng *rng)
{
    zt_player *p = NULL;
    CHECK(zt_player_new_alphabeta_connect4(g, 4, &p) == ZT_OK, "alphabeta: %s",
          zt_error_message());
    if (!p) return;
    uint16_t actions[ZT_MAX_ACTIONS];
    int wins = 0, blocks = 0;
    for (int game = 0; game < 300; game++) {
        c4_state s;
        g->reset(g, &s);
        while (s.status == C4_ONGOING) {
            uint64_t playable = c4_playable(s.mask);
            uint64_t win = c4_winning_cells(s.current, s.mask) & playable;
            uint64_t threat = c4_winning_cells(s.current ^ s.mask, s.mask) & playable;
            if (win || threat) {
                int a = p->choose(p, &s, rng);
                uint64_t cell = playable & c4_column_mask(a);
                if (win) {
                    CHECK(cell & win, "alphabeta misses a win at ply %d", s.plies);
                    wins++;
                } else {
                    CHECK(cell & threat, "alphabeta does not block at ply %d", s.plies);
                    blocks++;
                }
            }
            int n = g->legal(g, &s, actions);
            g->apply(g, &s, actions[zt_rng_below(rng, (uint32_t)n)]);
        }
    }
    CHECK(wins > 100 && blocks > 100, "only %d wins and %d blocks tested", wins, blocks);

    /* Against random play it should essentially always win. */
    int won = 0;
    for (int game = 0; game < 20; game++) {
        c4_state s;
        g->reset(g, &s);
        int me = game & 1;
        while (s.status == C4_ONGOING) {
            int a;
            if ((s.plies & 1) == me)
                a = p->choose(p, &s, rng);
            else {
                int n = g->legal(g, &s, actions);
                a = actions[zt_rng_below(rng, (uint32_t)n)];
            }
            g->apply(g, &s, a);
        }
        won += s.status == C4_WON && ((s.plies - 1) & 1) == me;
    }
    CHECK(won >= 18, "alphabeta:4 won only %d/20 against random", won);
    zt_player_free(p);
}

int main(void)
{
    zt_game *g = NULL;
    if (zt_game_new("connect4", NULL, &g) != ZT_OK) {
        printf("FAIL: %s\n", zt_error_message());
        return 1;
    }
    uint64_t seed = 20240601;
    printf("seed %llu\n", (unsigned long long)seed);
    zt_rng rng;
    zt_rng_seed(&rng, seed, 0);
    test_perft(g);
    test_text(g);
    test_round_trips(g, &rng);
    test_decode_exact(g);
    test_solver(g);
    test_alphabeta(g, &rng);
    zt_game_free(g);
    return zt_test_finish("test_connect4");
}
