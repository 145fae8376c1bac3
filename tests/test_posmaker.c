/* Tests of the position-set maker (arena/posmaker.h) and what it rests on:
 * the same seed gives the same sets and another seed other ones; kept
 * positions are distinct up to mirror symmetry and none is won at once;
 * every label (score, value-preserving columns) agrees with a fresh exact
 * solve; depth bands and ratings are the documented ones (bands by plies,
 * remaining plies <= 14 / 15..28 / >= 29, node thresholds), and the
 * remaining-plies rule reproduces Pons' Test_L2_R1 and Test_L3_R1 (all
 * easy); written sets read back through the position-file parser with
 * their columns and bands; excluded positions (given by their mirror
 * images) are never kept, and the sets made with exclusions are those made
 * without, less the excluded, filled up; the solver's node limit and
 * forget; the parser's third field refuses bad columns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena/posmaker.h"
#include "core/fileio.h"

#include "zt_test.h"

static zt_agent *make_player(const zt_game *g, const char *spec)
{
    zt_player *p;
    zt_status st = zt_player_new(g, spec, &p);
    CHECK(st == ZT_OK, "%s: %s", spec, zt_error_message());
    return st == ZT_OK ? zt_agent_from_player(p, true) : NULL;
}

static zt_posmaker_config small_config(uint64_t seed, zt_agent *const *players, int n)
{
    zt_posmaker_config c = {.seed = seed,
                            .games = 40,
                            .players = players,
                            .num_players = n,
                            .noise = 0.2,
                            .per_set = 12,
                            .rating = ZT_RATE_REMAINING,
                            .nodes_medium = 20000,
                            .nodes_hard = 1000000,
                            .max_nodes = 5000000};
    /* middle and end only: opening solves take seconds */
    c.want[ZT_BAND_MIDDLE][ZT_RATING_EASY] = true;
    c.want[ZT_BAND_MIDDLE][ZT_RATING_MEDIUM] = true;
    c.want[ZT_BAND_END][ZT_RATING_EASY] = true;
    return c;
}

static bool same_result(const zt_posmaker_result *a, const zt_posmaker_result *b)
{
    if (a->count != b->count || a->positions != b->positions || a->unique != b->unique ||
        a->solved != b->solved || a->nodes != b->nodes)
        return false;
    for (int i = 0; i < a->count; i++) {
        const zt_made_position *p = &a->kept[i], *q = &b->kept[i];
        if (strcmp(p->moves, q->moves) != 0 || p->score != q->score || p->nodes != q->nodes ||
            p->num_moves != q->num_moves || memcmp(p->best, q->best, sizeof p->best) != 0)
            return false;
    }
    return true;
}

static uint64_t canonical(const zt_game *g, const void *s)
{
    uint8_t m[ZT_MAX_STATE_BYTES];
    g->sym_state(g, 1, s, m);
    uint64_t a = g->hash(g, s), b = g->hash(g, m);
    return a < b ? a : b;
}

static bool wins_at_once(const zt_game *g, const void *s)
{
    uint16_t legal[ZT_MAX_ACTIONS];
    uint8_t c[ZT_MAX_STATE_BYTES];
    float r[2];
    int me = g->current_player(g, s), n = g->legal(g, s, legal);
    for (int i = 0; i < n; i++) {
        memcpy(c, s, g->state_size);
        g->apply(g, c, legal[i]);
        if (g->current_player(g, c) != ZT_TERMINAL) continue;
        g->returns(g, c, r);
        if (r[me] > 0) return true;
    }
    return false;
}

static void test_remaining(void)
{
    /* Pons' examples (blog.gamesolver.org, part 2): "4455" scores 18, the
     * first player winning with its 4th stone at ply 7; "44455554221"
     * scores -15, the first player winning with its 7th stone at ply 13. */
    CHECK(zt_posmaker_remaining(4, 18) == 3, "");
    CHECK(zt_posmaker_remaining(11, -15) == 2, "");
    CHECK(zt_posmaker_remaining(30, 0) == 12, "a draw lasts to ply 42");
    zt_posmaker_config c = {.rating = ZT_RATE_REMAINING};
    CHECK(zt_posmaker_rate(&c, 14, 999999999) == ZT_RATING_EASY, "");
    CHECK(zt_posmaker_rate(&c, 15, 0) == ZT_RATING_MEDIUM, "");
    CHECK(zt_posmaker_rate(&c, 28, 0) == ZT_RATING_MEDIUM, "");
    CHECK(zt_posmaker_rate(&c, 29, 0) == ZT_RATING_HARD, "");
    c = (zt_posmaker_config){.rating = ZT_RATE_NODES, .nodes_medium = 100, .nodes_hard = 1000};
    CHECK(zt_posmaker_rate(&c, 40, 99) == ZT_RATING_EASY, "");
    CHECK(zt_posmaker_rate(&c, 1, 100) == ZT_RATING_MEDIUM, "");
    CHECK(zt_posmaker_rate(&c, 1, 999) == ZT_RATING_MEDIUM, "");
    CHECK(zt_posmaker_rate(&c, 1, 1000) == ZT_RATING_HARD, "");
}

/* Pons' easy sets are easy by the remaining-plies rule, in the bands their
 * names give (L2 middle, L3 end). */
static void test_pons_sets(const zt_game *g, zt_solver *sv)
{
    const char *files[2] = {"connect4/Test_L2_R1", "connect4/Test_L3_R1"};
    const int bands[2] = {ZT_BAND_MIDDLE, ZT_BAND_END};
    zt_posmaker_config c = {.rating = ZT_RATE_REMAINING};
    for (int f = 0; f < 2; f++) {
        char path[4200];
        if (!zt_test_data_path(files[f], path, sizeof path)) {
            CHECK(false, "%s not found", files[f]);
            continue;
        }
        zt_position_file pf;
        CHECK(zt_position_file_open(path, &pf) == ZT_OK, "%s", zt_error_message());
        zt_position pos;
        bool got;
        int n = 0, easy = 0, in_band = 0;
        while (zt_position_file_next(&pf, sv, &pos, &got) == ZT_OK && got) {
            char text[ZT_MAX_TEXT];
            g->to_text(g, pos.state, text, sizeof text);
            int plies = (int)strlen(text);
            easy += zt_posmaker_rate(&c, zt_posmaker_remaining(plies, pos.expected.score), 0) ==
                    ZT_RATING_EASY;
            in_band += pos.band == bands[f];
            n++;
        }
        zt_position_file_close(&pf);
        CHECK(n == 1000 && easy == n && in_band == n, "%s: %d positions, %d easy, %d in band",
              files[f], n, easy, in_band);
    }
}

static void test_solver_limits(const zt_game *g, zt_solver *sv)
{
    uint8_t s[ZT_MAX_STATE_BYTES];
    CHECK(g->from_text(g, "344446576555345", s) == ZT_OK, "");
    zt_solution a, b;
    sv->forget(sv);
    CHECK(sv->solve(sv, s, false, &a) == ZT_OK && !a.cut, "");
    CHECK(a.nodes > 1000, "nodes %llu", (unsigned long long)a.nodes);
    /* A warm table makes the same solve cheaper; forget makes it the same. */
    CHECK(sv->solve(sv, s, false, &b) == ZT_OK && b.nodes < a.nodes, "");
    uint8_t other[ZT_MAX_STATE_BYTES];
    CHECK(g->from_text(g, "447544543553654", other) == ZT_OK, "");
    CHECK(sv->solve(sv, other, false, &b) == ZT_OK, "");
    sv->forget(sv);
    CHECK(sv->solve(sv, s, false, &b) == ZT_OK && b.nodes == a.nodes && b.score == a.score,
          "%llu vs %llu", (unsigned long long)b.nodes, (unsigned long long)a.nodes);
    /* Past the limit: cut, and the table stays sound for the next solve. */
    sv->forget(sv);
    sv->node_limit = a.nodes / 2;
    CHECK(sv->solve(sv, s, true, &b) == ZT_OK && b.cut && b.nodes == a.nodes / 2, "");
    sv->node_limit = 0;
    CHECK(sv->solve(sv, s, false, &b) == ZT_OK && !b.cut && b.score == a.score, "");
}

static void test_parser(const zt_game *g, zt_solver *sv)
{
    const char *bad[] = {"4453 18 9",   "4453 18 44", "4453 18 31",
                         "4453 18 3 4", "4453 x",     "4453 18 3x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zt_position pos;
        memset(&pos, 0, sizeof pos);
        CHECK(sv->parse_line(sv, bad[i], &pos) != ZT_OK, "'%s' accepted", bad[i]);
    }
    zt_position pos;
    memset(&pos, 0, sizeof pos);
    CHECK(sv->parse_line(sv, "4453 18 35", &pos) == ZT_OK, "%s", zt_error_message());
    CHECK(pos.has_moves && pos.has_band && pos.expected.num_moves == 2 &&
              pos.expected.moves[0] == 2 && pos.expected.moves[1] == 4 &&
              pos.band == ZT_BAND_OPENING,
          "");
    (void)g;
}

/* zt_position_moves takes a line's own moves (and value) where it gives
 * them, solving nothing, and the solver's weak solve where it does not */
static void test_position_moves(zt_solver *sv)
{
    zt_position pos;
    zt_solution sol, solved;
    bool has_value = false;
    memset(&pos, 0, sizeof pos);
    CHECK(sv->parse_line(sv, "4453 18 3", &pos) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_position_moves(sv, &pos, &sol, &has_value) == ZT_OK, "%s", zt_error_message());
    CHECK(has_value && sol.value == 1 && sol.num_moves == 1 && sol.moves[0] == 2,
          "the line's moves: value %d, %d moves", sol.value, sol.num_moves);
    memset(&pos, 0, sizeof pos);
    CHECK(sv->parse_line(sv, "4453", &pos) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_position_moves(sv, &pos, &sol, &has_value) == ZT_OK, "%s", zt_error_message());
    CHECK(sv->solve(sv, pos.state, true, &solved) == ZT_OK, "%s", zt_error_message());
    CHECK(has_value && sol.value == solved.value && sol.num_moves == solved.num_moves &&
              memcmp(sol.moves, solved.moves, sizeof(uint16_t) * (size_t)sol.num_moves) == 0,
          "a line without moves: %d moves, the solver's %d", sol.num_moves, solved.num_moves);
    /* so the first line's one move was its own, not a solve's */
    CHECK(solved.num_moves != 1, "the solver too keeps the value with one move only");
}

/* zt_game_move_wins and zt_game_wins_at_once: three stones of the side to
 * move stacked in column 1, the opponent's in column 2 */
static void test_wins_at_once(const zt_game *g)
{
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    CHECK(!zt_game_wins_at_once(g, s), "the start position is won at once");
    for (int i = 0; i < 6; i++) g->apply(g, s, i % 2);
    CHECK(zt_game_move_wins(g, s, 0), "column 1 does not win");
    CHECK(!zt_game_move_wins(g, s, 1) && !zt_game_move_wins(g, s, 2), "another column wins");
    CHECK(zt_game_wins_at_once(g, s), "no win at once found");
    g->apply(g, s, 2); /* the opponent to move: its column 2 wins for it */
    CHECK(zt_game_move_wins(g, s, 1) && !zt_game_move_wins(g, s, 0), "the opponent's win");
}

static void test_maker(const zt_game *g, zt_solver *sv, uint64_t seed)
{
    zt_agent *players[2] = {make_player(g, "random"), make_player(g, "alphabeta:2")};
    if (!players[0] || !players[1]) return;
    zt_posmaker_config c = small_config(seed, players, 2);
    zt_posmaker_result r1, r2, r3;
    CHECK(zt_posmaker_run(g, &c, &r1) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_posmaker_run(g, &c, &r2) == ZT_OK, "%s", zt_error_message());
    CHECK(same_result(&r1, &r2), "the same seed made other sets");
    zt_posmaker_config c3 = small_config(seed + 1, players, 2);
    CHECK(zt_posmaker_run(g, &c3, &r3) == ZT_OK, "%s", zt_error_message());
    CHECK(!same_result(&r1, &r3), "another seed made the same sets");
    CHECK(r1.count > 0 && r1.unique <= r1.positions && r1.unique > 0, "");
    CHECK(r1.per[ZT_BAND_MIDDLE][ZT_RATING_EASY] == c.per_set &&
              r1.per[ZT_BAND_END][ZT_RATING_EASY] == c.per_set,
          "easy sets not filled: %d %d", r1.per[ZT_BAND_MIDDLE][ZT_RATING_EASY],
          r1.per[ZT_BAND_END][ZT_RATING_EASY]);

    uint64_t *seen = calloc((size_t)r1.count, sizeof *seen);
    int dups = 0, won = 0, bad_label = 0, bad_band = 0, bad_rating = 0;
    zt_solution sol;
    for (int i = 0; i < r1.count; i++) {
        const zt_made_position *p = &r1.kept[i];
        uint8_t s[ZT_MAX_STATE_BYTES];
        CHECK(g->from_text(g, p->moves, s) == ZT_OK, "%s", p->moves);
        uint64_t h = canonical(g, s);
        for (int j = 0; j < i; j++) dups += seen[j] == h;
        seen[i] = h;
        won += wins_at_once(g, s);
        sv->forget(sv);
        CHECK(sv->solve(sv, s, true, &sol) == ZT_OK, "");
        bool moves_ok = sol.num_moves == p->num_moves;
        for (int j = 0; moves_ok && j < sol.num_moves; j++) moves_ok = sol.moves[j] == p->best[j];
        bad_label += sol.score != p->score || !moves_ok;
        int plies = (int)strlen(p->moves);
        int band = plies <= 14 ? ZT_BAND_OPENING : plies <= 28 ? ZT_BAND_MIDDLE : ZT_BAND_END;
        bad_band += band != p->band || plies != p->plies;
        int rem = zt_posmaker_remaining(plies, p->score);
        int want = rem <= 14 ? ZT_RATING_EASY : rem <= 28 ? ZT_RATING_MEDIUM : ZT_RATING_HARD;
        bad_rating += want != p->rating || !c.want[p->band][p->rating];
    }
    free(seen);
    CHECK(dups == 0, "%d positions kept twice (up to symmetry)", dups);
    CHECK(won == 0, "%d positions won at once", won);
    CHECK(bad_label == 0, "%d labels disagree with the solver", bad_label);
    CHECK(bad_band == 0 && bad_rating == 0, "%d bad bands, %d bad ratings", bad_band, bad_rating);

    /* Written and read back: every line of the set, with its columns. */
    char path[] = "/tmp/zt_posmaker_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "");
    if (fd >= 0) close(fd);
    CHECK(zt_posmaker_write(&r1, ZT_BAND_MIDDLE, ZT_RATING_EASY, "a header\nsecond line", path) ==
              ZT_OK,
          "%s", zt_error_message());
    zt_position_file pf;
    CHECK(zt_position_file_open(path, &pf) == ZT_OK, "%s", zt_error_message());
    zt_position pos;
    bool got;
    int n = 0, agree = 0;
    while (zt_position_file_next(&pf, sv, &pos, &got) == ZT_OK && got) {
        CHECK(sv->solve(sv, pos.state, true, &sol) == ZT_OK, "");
        agree += pos.has_moves && pos.has_score && pos.band == ZT_BAND_MIDDLE &&
                 sv->agrees(&pos.expected, &pos, &sol);
        n++;
    }
    zt_position_file_close(&pf);
    remove(path);
    CHECK(n == c.per_set && agree == n, "read back %d, agree %d", n, agree);

    /* Exclusions, given as the mirror images of every other kept position:
     * none of them is kept; every kept one not excluded is kept again, in
     * the same order; the sets are still filled. */
    uint64_t *ex = calloc((size_t)r1.count, sizeof *ex);
    int num_ex = 0;
    for (int i = 1; i < r1.count; i += 2) {
        uint8_t s[ZT_MAX_STATE_BYTES], mirror[ZT_MAX_STATE_BYTES];
        CHECK(g->from_text(g, r1.kept[i].moves, s) == ZT_OK, "%s", r1.kept[i].moves);
        g->sym_state(g, 1, s, mirror);
        ex[num_ex++] = zt_posmaker_canonical(g, mirror);
        CHECK(ex[num_ex - 1] == zt_posmaker_canonical(g, s), "a mirror image hashes apart");
    }
    zt_posmaker_config cx = c;
    cx.exclude = ex;
    cx.num_exclude = num_ex;
    zt_posmaker_result rx;
    CHECK(zt_posmaker_run(g, &cx, &rx) == ZT_OK, "%s", zt_error_message());
    int kept_excluded = 0, missing = 0, out_of_order = 0, last = -1;
    for (int i = 0; i < rx.count; i++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        CHECK(g->from_text(g, rx.kept[i].moves, s) == ZT_OK, "");
        uint64_t h = zt_posmaker_canonical(g, s);
        for (int j = 0; j < num_ex; j++) kept_excluded += ex[j] == h;
    }
    for (int i = 0; i < r1.count; i += 2) {
        int at = -1;
        for (int j = 0; j < rx.count && at < 0; j++)
            if (strcmp(rx.kept[j].moves, r1.kept[i].moves) == 0) at = j;
        missing += at < 0;
        out_of_order += at >= 0 && at < last;
        if (at >= 0) last = at;
    }
    CHECK(num_ex > 0 && kept_excluded == 0, "%d excluded positions kept", kept_excluded);
    CHECK(missing == 0 && out_of_order == 0,
          "%d positions kept without exclusions are missing, %d out of order", missing,
          out_of_order);
    CHECK(rx.excluded >= num_ex, "passed over %lld, excluded %d of the kept",
          (long long)rx.excluded, num_ex);
    CHECK(r1.excluded == 0, "passed over %lld with no exclusions", (long long)r1.excluded);
    CHECK(rx.per[ZT_BAND_MIDDLE][ZT_RATING_EASY] == c.per_set &&
              rx.per[ZT_BAND_END][ZT_RATING_EASY] == c.per_set,
          "sets not filled up: %d %d", rx.per[ZT_BAND_MIDDLE][ZT_RATING_EASY],
          rx.per[ZT_BAND_END][ZT_RATING_EASY]);
    zt_posmaker_result_free(&rx);
    free(ex);

    /* The node rating: the thresholds as documented. */
    zt_posmaker_config cn = small_config(seed, players, 2);
    cn.rating = ZT_RATE_NODES;
    cn.nodes_medium = 50;
    cn.nodes_hard = 2000;
    cn.want[ZT_BAND_MIDDLE][ZT_RATING_HARD] = true;
    zt_posmaker_result rn;
    CHECK(zt_posmaker_run(g, &cn, &rn) == ZT_OK, "%s", zt_error_message());
    int off = 0;
    for (int i = 0; i < rn.count; i++) {
        const zt_made_position *p = &rn.kept[i];
        int want = p->nodes >= 2000 ? ZT_RATING_HARD
                   : p->nodes >= 50 ? ZT_RATING_MEDIUM
                                    : ZT_RATING_EASY;
        off += want != p->rating;
    }
    CHECK(rn.count > 0 && off == 0, "%d of %d rated off their node counts", off, rn.count);

    zt_posmaker_result_free(&rn);
    zt_posmaker_result_free(&r1);
    zt_posmaker_result_free(&r2);
    zt_posmaker_result_free(&r3);
    zt_agent_free(players[0]);
    zt_agent_free(players[1]);
}

int main(void)
{
    uint64_t seed = zt_test_seed(11);
    zt_game *g;
    if (zt_game_new("connect4", NULL, &g) != ZT_OK) {
        CHECK(false, "%s", zt_error_message());
        return zt_test_finish("test_posmaker");
    }
    zt_solver *sv;
    CHECK(zt_solver_new(g, &sv) == ZT_OK, "%s", zt_error_message());
    test_remaining();
    test_pons_sets(g, sv);
    test_solver_limits(g, sv);
    test_parser(g, sv);
    test_position_moves(sv);
    test_wins_at_once(g);
    test_maker(g, sv, seed);
    zt_solver_free(sv);
    zt_game_free(g);
    return zt_test_finish("test_posmaker");
}
