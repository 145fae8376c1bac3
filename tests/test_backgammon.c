/* Backgammon: legal plays against GNU Backgammon's lists (every position of
 * backgammon/gnubg_legal_moves.tsv: the decoded id, the number of distinct
 * plays, the notation of each, and that action sequences reach exactly those
 * plays), gnubg id round trips, rules cases, random games, text and error
 * handling, and pubeval's strength against a random player; the hand-made
 * inputs (inputs = extended) against positions counted by hand, the shot
 * counts against a slow count on random boards, and the setting's spec,
 * size and refusal of a bad value. */
#include "agent/player.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "game/backgammon.h"
#include "game/game.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zt_test.h"

/* ---- sets of states reached through the game interface ---- */

enum { SET_BITS = 16 };

typedef struct state_set {
    bg_state *items;
    uint32_t *stamp;
    uint32_t gen;
    int count;
} state_set;

static void set_init(state_set *set)
{
    set->items = zt_xcalloc((size_t)1 << SET_BITS, sizeof(bg_state));
    set->stamp = zt_xcalloc((size_t)1 << SET_BITS, sizeof(uint32_t));
    set->gen = 0;
}

static void set_clear(state_set *set)
{
    set->gen++;
    set->count = 0;
}

/* Adds s; returns false when it was already there. */
static bool set_add(state_set *set, const zt_game *g, const bg_state *s)
{
    uint32_t mask = (1u << SET_BITS) - 1, i = (uint32_t)g->hash(g, s) & mask;
    while (set->stamp[i] == set->gen) {
        if (memcmp(&set->items[i], s, sizeof *s) == 0) return false;
        i = (i + 1) & mask;
    }
    ZT_ASSERT(set->count < (1 << (SET_BITS - 1)));
    set->stamp[i] = set->gen;
    set->items[i] = *s;
    set->count++;
    return true;
}

static bool set_has(const state_set *set, const zt_game *g, const bg_state *s)
{
    uint32_t mask = (1u << SET_BITS) - 1, i = (uint32_t)g->hash(g, s) & mask;
    while (set->stamp[i] == set->gen) {
        if (memcmp(&set->items[i], s, sizeof *s) == 0) return true;
        i = (i + 1) & mask;
    }
    return false;
}

static void set_free(state_set *set)
{
    free(set->items);
    free(set->stamp);
}

/* All turn-ending states reachable by legal actions from s (whose mover is
 * s->turn), visiting each intermediate state once. */
static void reach(const zt_game *g, const bg_state *s, state_set *seen, state_set *ends)
{
    uint16_t actions[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, actions);
    CHECK(n > 0, "no legal action in the middle of a turn");
    for (int i = 0; i < n; i++) {
        CHECK(i == 0 || actions[i] > actions[i - 1], "legal actions not increasing");
        bg_state t = *s;
        g->apply(g, &t, actions[i]);
        int cp = g->current_player(g, &t);
        if (cp == (int)s->turn) {
            if (set_add(seen, g, &t)) reach(g, &t, seen, ends);
        } else {
            set_add(ends, g, &t);
        }
    }
}

/* The plays of zt_bg_plays equal the turn ends the actions reach. */
static void check_actions_reach_plays(const zt_game *g, const bg_state *s, const bg_playlist *pl,
                                      state_set *seen, state_set *ends, const char *what)
{
    set_clear(seen);
    set_clear(ends);
    reach(g, s, seen, ends);
    CHECK(ends->count == pl->count, "%s: actions reach %d plays, enumeration has %d", what,
          ends->count, pl->count);
    for (int i = 0; i < pl->count; i++)
        CHECK(set_has(ends, g, &pl->plays[i].after), "%s: play %d not reachable by actions", what,
              i);
}

/* ---- GNU Backgammon's legal move lists ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int split(char *line, char sep, char **parts, int max)
{
    int n = 0;
    parts[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == sep) {
            *p = '\0';
            parts[n++] = p + 1;
        }
    return n;
}

static void test_gnubg_file(const zt_game *g)
{
    char path[512];
    FILE *f = zt_test_open_data("backgammon/gnubg_legal_moves.tsv", path, sizeof path);
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    bg_playlist *pl = zt_xmalloc(sizeof *pl);
    state_set seen, ends;
    set_init(&seen);
    set_init(&ends);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0, mismatched = 0;
    static char *mine[BG_MAX_PLAYS], *theirs[BG_MAX_PLAYS];
    static char notation[BG_MAX_PLAYS][64];
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\r\n")] = '\0';
        char *col[8];
        if (split(line, '\t', col, 8) != 7) {
            CHECK(false, "line %d: expected 7 columns", lines + 1);
            continue;
        }
        lines++;
        const char *id = col[0], *dice = col[1];
        int n_legal = atoi(col[2]);
        bg_state s;
        zt_status st = zt_bg_position(id, dice, &s);
        CHECK(st == ZT_OK, "%s: %s", id, zt_error_message());
        if (st != ZT_OK) continue;

        /* The decoded id matches the board columns. */
        char *pts[26];
        for (int side = 0; side < 2; side++) {
            int n = split(col[5 + side], ',', pts, 26);
            CHECK(n == 25, "%s: board column has %d numbers", id, n);
            for (int i = 0; i < 25 && i < n; i++)
                CHECK(s.board[side][i] == atoi(pts[i]), "%s: side %d index %d: %d vs %s", id, side,
                      i, s.board[side][i], pts[i]);
        }
        char again[BG_ID_LEN + 1];
        zt_bg_id_encode(s.board[0], s.board[1], again);
        CHECK(strcmp(again, id) == 0, "id round trip %s -> %s", id, again);

        /* The plays: count and notation set. */
        zt_bg_plays(&s, pl);
        CHECK(pl->count == n_legal, "%s %s: %d plays, gnubg %d", id, dice, pl->count, n_legal);
        int ntheirs = split(col[4], ';', theirs, BG_MAX_PLAYS);
        CHECK(ntheirs == n_legal, "%s: gnubg lists %d plays for n_legal %d", id, ntheirs, n_legal);
        for (int i = 0; i < pl->count; i++) {
            zt_bg_play_notation(&s, &pl->plays[i], notation[i], sizeof notation[i]);
            mine[i] = notation[i];
        }
        qsort(mine, (size_t)pl->count, sizeof mine[0], cmp_str);
        qsort(theirs, (size_t)ntheirs, sizeof theirs[0], cmp_str);
        bool same = pl->count == ntheirs;
        for (int i = 0; same && i < ntheirs; i++) same = strcmp(mine[i], theirs[i]) == 0;
        if (!same) {
            mismatched++;
            if (mismatched <= 5) {
                printf("notation differs for %s %s\n  mine:", id, dice);
                for (int i = 0; i < pl->count; i++) printf(" [%s]", mine[i]);
                printf("\n  gnubg:");
                for (int i = 0; i < ntheirs; i++) printf(" [%s]", theirs[i]);
                printf("\n");
            }
        }
        bool best_found = false;
        for (int i = 0; i < pl->count; i++) best_found |= strcmp(mine[i], col[3]) == 0;
        CHECK(best_found, "%s %s: gnubg's best play %s not among mine", id, dice, col[3]);

        check_actions_reach_plays(g, &s, pl, &seen, &ends, id);

        /* Text round trips at this state and for each legal action. */
        char text[ZT_MAX_TEXT];
        g->to_text(g, &s, text, sizeof text);
        bg_state back;
        st = g->from_text(g, text, &back);
        CHECK(st == ZT_OK && memcmp(&back, &s, sizeof s) == 0, "text round trip %s: %s", text,
              zt_error_message());
        uint16_t actions[ZT_MAX_ACTIONS];
        int n = g->legal(g, &s, actions);
        for (int i = 0; i < n; i++) {
            char at[64];
            int a = -1;
            g->action_to_text(g, &s, actions[i], at, sizeof at);
            st = g->action_from_text(g, &s, at, &a);
            CHECK(st == ZT_OK && a == actions[i], "%s: action %d -> '%s' -> %d", text, actions[i],
                  at, a);
        }
    }
    CHECK(lines == 2471, "read %d positions, expected 2471", lines);
    CHECK(mismatched == 0, "%d positions whose notation sets differ from gnubg's", mismatched);
    printf("gnubg positions checked: %d (notation mismatches: %d)\n", lines, mismatched);
    free(line);
    fclose(f);
    set_free(&seen);
    set_free(&ends);
    free(pl);
}

/* ---- rules cases ---- */

typedef struct spot {
    int point, count;
} spot;

/* Player 0 to move with `roll` ("AB"), or at the roll if NULL; points are
 * each side's own (25 = bar); unlisted checkers are borne off. */
static bg_state make(const spot *mover, int nm, const spot *opp, int no, const char *roll)
{
    uint8_t b[2][25] = {{0}};
    for (int i = 0; i < nm; i++) b[0][mover[i].point - 1] = (uint8_t)mover[i].count;
    for (int i = 0; i < no; i++) b[1][opp[i].point - 1] = (uint8_t)opp[i].count;
    char id[BG_ID_LEN + 1];
    zt_bg_id_encode(b[0], b[1], id);
    bg_state s;
    zt_status st = zt_bg_position(id, roll, &s);
    ZT_ASSERT(st == ZT_OK);
    return s;
}

static void only_play(const bg_state *s, bg_playlist *pl, const char *want, const char *what)
{
    zt_bg_plays(s, pl);
    char got[64] = "";
    if (pl->count == 1) zt_bg_play_notation(s, &pl->plays[0], got, sizeof got);
    CHECK(pl->count == 1 && strcmp(got, want) == 0, "%s: %d plays, first '%s', want only '%s'",
          what, pl->count, got, want);
}

static void expect_legal(const bg_state *s, const int *want, int nwant, const char *what)
{
    uint16_t a[BG_NUM_ACTIONS];
    int n = zt_bg_legal(s, a);
    bool same = n == nwant;
    for (int i = 0; same && i < n; i++) same = a[i] == want[i];
    CHECK(same, "%s: %d legal actions (first %d), want %d (first %d)", what, n, n ? a[0] : -1,
          nwant, nwant ? want[0] : -1);
}

#define A(point, die) (((point) == 25 ? 24 : (point)-1) * 6 + (die)-1)

static void test_rules(const zt_game *g)
{
    bg_playlist *pl = zt_xmalloc(sizeof *pl);
    /* Must use both dice: 20/14 is blocked, so the 6 can only follow the 5. */
    {
        spot m[] = {{20, 1}, {1, 14}}, o[] = {{11, 2}, {1, 13}};
        bg_state s = make(m, 2, o, 2, "65");
        only_play(&s, pl, "20/9", "both dice");
        int want[] = {A(20, 5)};
        expect_legal(&s, want, 1, "both dice");
    }
    /* Only one die can be played, either one: the larger it must be. */
    {
        spot m[] = {{20, 1}, {1, 14}}, o[] = {{16, 2}, {1, 13}};
        bg_state s = make(m, 2, o, 2, "65");
        only_play(&s, pl, "20/14", "larger die");
        int want[] = {A(20, 6)};
        expect_legal(&s, want, 1, "larger die");
    }
    /* The larger die blocked, one die playable: the smaller. */
    {
        spot m[] = {{20, 1}, {1, 14}}, o[] = {{11, 2}, {16, 2}, {1, 11}};
        bg_state s = make(m, 2, o, 3, "65");
        only_play(&s, pl, "20/15", "smaller die when the larger is blocked");
    }
    /* On the bar with both entry points closed: no move, and the roll passes. */
    {
        spot m[] = {{25, 1}, {6, 14}}, o[] = {{6, 2}, {5, 2}, {1, 11}};
        bg_state s = make(m, 2, o, 3, NULL);
        bg_state t = s;
        g->apply(g, &t, zt_bg_roll_id(6, 5));
        CHECK(g->current_player(g, &t) == ZT_CHANCE && t.turn == 1 && t.n_dice == 0,
              "closed entry should pass the turn: player %d turn %d", g->current_player(g, &t),
              t.turn);
        bg_state r = make(m, 2, o, 3, "65");
        zt_bg_plays(&r, pl);
        CHECK(pl->count == 0, "closed entry: %d plays", pl->count);
        /* One entry open: only bar/20 (the 5), then the 6 elsewhere. */
        spot o2[] = {{6, 2}, {1, 13}};
        bg_state u = make(m, 2, o2, 2, "65");
        int want[] = {A(25, 5)};
        expect_legal(&u, want, 1, "bar entry with the open die");
        /* Two on the bar, one entry: bar/20 and the turn ends. */
        spot m3[] = {{25, 2}, {6, 13}};
        bg_state v = make(m3, 2, o2, 2, "65");
        only_play(&v, pl, "bar/20", "two on the bar");
        g->apply(g, &v, A(25, 5));
        CHECK(g->current_player(g, &v) == ZT_CHANCE && v.turn == 1, "second checker cannot enter");
    }
    /* Bearing off with a higher die from the highest point. */
    {
        spot m[] = {{3, 1}, {2, 2}}, o[] = {{1, 15}};
        bg_state s = make(m, 2, o, 1, "65");
        only_play(&s, pl, "3/off 2/off", "higher dice bear off");
        int want[] = {A(3, 5), A(3, 6)};
        expect_legal(&s, want, 2, "higher dice from the highest point");
        char txt[32];
        g->action_to_text(g, &s, A(3, 6), txt, sizeof txt);
        CHECK(strcmp(txt, "3/off[6]") == 0, "higher-die bear-off text '%s'", txt);
        int a = -1;
        CHECK(g->action_from_text(g, &s, "3/off", &a) == ZT_OK && a == A(3, 5), "3/off -> %d", a);
        /* Not from a lower point while a higher one is occupied. */
        spot m2[] = {{5, 1}, {3, 1}};
        bg_state t = make(m2, 2, o, 1, "44");
        int want2[] = {A(5, 4)};
        expect_legal(&t, want2, 1, "higher die only from the highest point");
        /* Not before every checker is home. */
        spot m3[] = {{7, 1}, {2, 14}};
        bg_state u = make(m3, 2, o, 1, "21");
        int want3[] = {A(2, 1), A(7, 1), A(7, 2)};
        expect_legal(&u, want3, 3, "no bear-off with a checker outside");
    }
    /* Doubles play four moves. */
    {
        bg_state s;
        g->reset(g, &s);
        g->apply(g, &s, zt_bg_roll_id(2, 1));
        int moves = 0;
        while (g->current_player(g, &s) == 0) {
            uint16_t a[BG_NUM_ACTIONS];
            g->apply(g, &s, a[g->legal(g, &s, a) - 1]);
            moves++;
        }
        CHECK(moves == 2 && s.turn == 1, "opening 21: %d moves", moves);
        g->apply(g, &s, zt_bg_roll_id(3, 3));
        moves = 0;
        while (g->current_player(g, &s) == 1) {
            uint16_t a[BG_NUM_ACTIONS];
            CHECK(s.n_dice == 4 - moves, "dice left %d after %d moves", s.n_dice, moves);
            int n = g->legal(g, &s, a);
            ZT_ASSERT(n > 0);
            g->apply(g, &s, a[0]);
            moves++;
        }
        CHECK(moves == 4, "double threes: %d moves", moves);
        bg_state start = make((spot[]){{24, 2}, {13, 5}, {8, 3}, {6, 5}}, 4,
                              (spot[]){{24, 2}, {13, 5}, {8, 3}, {6, 5}}, 4, "11");
        zt_bg_plays(&start, pl);
        for (int i = 0; i < pl->count; i++)
            CHECK(pl->plays[i].n_moves == 4, "11 play %d uses %d dice", i, pl->plays[i].n_moves);
    }
    /* Results: single, gammon, backgammon. */
    {
        spot m[] = {{1, 1}};
        struct {
            spot o[3];
            int no;
            float want;
        } cases[] = {
            {{{13, 14}}, 1, 1.0f},          /* one checker off: single */
            {{{13, 15}}, 1, 2.0f},          /* none off: gammon */
            {{{13, 14}, {20, 1}}, 2, 3.0f}, /* one in the winner's home: backgammon */
            {{{13, 14}, {25, 1}}, 2, 3.0f}, /* one on the bar: backgammon */
        };
        for (int k = 0; k < 4; k++) {
            bg_state s = make(m, 1, cases[k].o, cases[k].no, "21");
            uint16_t a[BG_NUM_ACTIONS];
            int n = g->legal(g, &s, a);
            CHECK(n > 0, "result case %d has no move", k);
            while (g->current_player(g, &s) == 0) {
                n = g->legal(g, &s, a);
                g->apply(g, &s, a[0]);
            }
            CHECK(g->current_player(g, &s) == ZT_TERMINAL, "result case %d not over", k);
            float r[2] = {0, 0};
            if (g->current_player(g, &s) == ZT_TERMINAL) g->returns(g, &s, r);
            CHECK(r[0] == cases[k].want && r[1] == -cases[k].want, "result case %d: %g %g, want %g",
                  k, r[0], r[1], cases[k].want);
        }
    }
    free(pl);
}

/* ---- random games ---- */

/* Text, compact bytes and observation at any state. */
static void check_round_trips(const zt_game *g, const bg_state *s)
{
    char text[ZT_MAX_TEXT];
    g->to_text(g, s, text, sizeof text);
    bg_state t;
    zt_status st = g->from_text(g, text, &t);
    CHECK(st == ZT_OK && memcmp(&t, s, sizeof t) == 0, "text round trip '%s': %s", text,
          st == ZT_OK ? "differs" : zt_error_message());
    uint8_t bytes[ZT_MAX_STATE_BYTES];
    g->encode(g, s, bytes);
    st = g->decode(g, bytes, &t);
    CHECK(st == ZT_OK && memcmp(&t, s, sizeof t) == 0, "compact round trip '%s'", text);
    float obs[256];
    CHECK(g->obs_shape[2] <= 256, "observation size %d", g->obs_shape[2]);
    g->observe(g, s, obs);
    for (int i = 0; i < g->obs_shape[2]; i++)
        CHECK(isfinite(obs[i]) && obs[i] >= 0.0f && obs[i] <= 6.0f, "obs[%d] = %g", i, obs[i]);
}

static void test_random_games(const zt_game *g, uint64_t seed)
{
    zt_rng rng;
    zt_rng_seed(&rng, seed, 1);
    bg_playlist *pl = zt_xmalloc(sizeof *pl);
    state_set seen, ends;
    set_init(&seen);
    set_init(&ends);
    const int games = 300;
    int longest = 0, checked_turns = 0;
    long total = 0;
    for (int game = 0; game < games; game++) {
        bg_state s;
        g->reset(g, &s);
        int plies = 0;
        for (;;) {
            int p = g->current_player(g, &s);
            check_round_trips(g, &s);
            if (p == ZT_TERMINAL) break;
            if (p == ZT_CHANCE) {
                int out[ZT_MAX_CHANCE_OUTCOMES];
                float prob[ZT_MAX_CHANCE_OUTCOMES];
                int n = g->chance_outcomes(g, &s, out, prob);
                double sum = 0;
                for (int i = 0; i < n; i++) {
                    CHECK(prob[i] > 0.0f, "chance outcome %d has probability %g", out[i], prob[i]);
                    CHECK(out[i] >= 0 && out[i] < g->max_chance_outcomes, "outcome id %d", out[i]);
                    sum += prob[i];
                }
                CHECK(fabs(sum - 1.0) < 1e-5, "chance probabilities sum to %g", sum);
                CHECK(n == (s.opening ? 15 : 21), "%d outcomes", n);
                g->apply(g, &s, out[zt_rng_categorical(&rng, prob, n)]);
                /* Each turn of a few games: actions reach exactly the plays. */
                if (game < 10 && g->current_player(g, &s) >= 0) {
                    zt_bg_plays(&s, pl);
                    check_actions_reach_plays(g, &s, pl, &seen, &ends, "random game");
                    checked_turns++;
                }
                continue;
            }
            uint16_t a[ZT_MAX_ACTIONS];
            int n = g->legal(g, &s, a);
            CHECK(n > 0, "player node without legal actions");
            if (n <= 0) break;
            g->apply(g, &s, a[zt_rng_below(&rng, (uint32_t)n)]);
            plies++;
            for (int side = 0; side < 2; side++) {
                int c = s.off[side];
                for (int i = 0; i < 25; i++) c += s.board[side][i];
                CHECK(c == BG_CHECKERS, "player %d has %d checkers", side, c);
            }
        }
        float r[2];
        g->returns(g, &s, r);
        int winner = r[0] > 0 ? 0 : 1;
        CHECK(s.off[winner] == BG_CHECKERS && s.off[!winner] < BG_CHECKERS, "winner %d has %d off",
              winner, s.off[winner]);
        CHECK(r[0] == -r[1] && fabsf(r[0]) >= 1 && fabsf(r[0]) <= 3, "returns %g %g", r[0], r[1]);
        if (plies > longest) longest = plies;
        total += plies;
    }
    CHECK(longest <= g->max_game_length, "a game of %d plies exceeds max_game_length", longest);
    printf("random games (seed %llu): %d, mean %.1f plies, longest %d; %d turns checked\n",
           (unsigned long long)seed, games, (double)total / games, longest, checked_turns);
    set_free(&seen);
    set_free(&ends);
    free(pl);
}

/* ---- text, encodings, errors ---- */

static void test_text(const zt_game *g)
{
    bg_state s, t;
    g->reset(g, &s);
    char text[ZT_MAX_TEXT];
    g->to_text(g, &s, text, sizeof text);
    CHECK(strcmp(text, "4HPwATDgc/ABMA opening") == 0, "start text '%s'", text);
    CHECK(g->from_text(g, "4HPwATDgc/ABMA:54", &t) == ZT_OK && t.n_dice == 2 && t.dice[0] == 5,
          "from_text with dice: %s", zt_error_message());
    uint8_t bytes[64];
    g->encode(g, &t, bytes);
    bg_state u;
    CHECK(g->decode(g, bytes, &u) == ZT_OK && memcmp(&u, &t, sizeof t) == 0, "compact round trip");
    CHECK(g->compact_size == 12, "compact size %zu", g->compact_size);

    const char *bad[] = {
        "4HPwATDgc/ABM",      /* 13 characters */
        "4HPwATDgc/ABMAA",    /* 15 characters */
        "4HPwATDgc/AB!A",     /* not base64 */
        "////////////AA",     /* too many checkers */
        "4HPwATDgc/ABMA:7",   /* die 7 */
        "4HPwATDgc/ABMA:543", /* three dice, not doubles */
        "4HPwATDgc/ABMA x",   /* unknown word */
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zt_status st = g->from_text(g, bad[i], &t);
        CHECK(st != ZT_OK && zt_error_message()[0] && !strchr(zt_error_message(), '\n'),
              "'%s' should be rejected with a one-line message", bad[i]);
    }
    /* Both sides on one point: the mover's 24-point and the opponent's 1-point. */
    uint8_t m[25] = {[23] = 2}, o[25] = {[0] = 1};
    char id[BG_ID_LEN + 1];
    zt_bg_id_encode(m, o, id);
    uint8_t m2[25], o2[25];
    CHECK(zt_bg_id_decode(id, m2, o2) != ZT_OK, "overlapping sides accepted (%s)", id);
    CHECK(zt_bg_position("4HPwATDgc/ABMA", "7", &t) != ZT_OK, "roll '7' accepted");
    CHECK(zt_bg_position("4HPwATDgc/ABMA", "ab", &t) != ZT_OK, "roll 'ab' accepted");
    CHECK(zt_bg_position("4HPwATDgc/ABMA", "1", &t) != ZT_OK, "roll '1' accepted");

    /* Player 1 to move, mid-turn, and the terminal state. */
    g->apply(g, &s, zt_bg_roll_id(3, 1));
    g->apply(g, &s, A(8, 3));
    g->apply(g, &s, A(6, 1));
    g->apply(g, &s, zt_bg_roll_id(6, 6));
    g->apply(g, &s, A(24, 6));
    g->to_text(g, &s, text, sizeof text);
    CHECK(g->from_text(g, text, &t) == ZT_OK && memcmp(&t, &s, sizeof s) == 0, "mid-turn '%s'",
          text);
    CHECK(strstr(text, ":666 p1") != NULL, "mid-turn text '%s'", text);
    char render[4096];
    g->render(g, &s, render, sizeof render);
    CHECK(strstr(render, "O (player 1) to move") != NULL, "render:\n%s", render);
    int a = -1;
    CHECK(g->action_from_text(g, &s, "13/7", &a) == ZT_OK && a == A(13, 6), "13/7 -> %d", a);
    CHECK(g->action_from_text(g, &s, "24/17", &a) != ZT_OK, "24/17 accepted with sixes");
    CHECK(g->action_from_text(g, &s, "hello", &a) != ZT_OK, "'hello' accepted");
}

/* ---- pubeval ---- */

static void test_pubeval(const zt_game *g, uint64_t seed)
{
    zt_player *pub = NULL;
    zt_status st = zt_player_new_pubeval(g, &pub);
    CHECK(st == ZT_OK, "pubeval: %s", zt_error_message());
    if (st != ZT_OK) return;
    zt_rng rng;
    zt_rng_seed(&rng, seed, 2);
    const int games = 200;
    int wins = 0;
    double points = 0;
    for (int game = 0; game < games; game++) {
        int pub_side = game & 1;
        bg_state s;
        g->reset(g, &s);
        for (;;) {
            int p = g->current_player(g, &s);
            if (p == ZT_TERMINAL) break;
            if (p == ZT_CHANCE) {
                int out[ZT_MAX_CHANCE_OUTCOMES];
                float prob[ZT_MAX_CHANCE_OUTCOMES];
                int n = g->chance_outcomes(g, &s, out, prob);
                g->apply(g, &s, out[zt_rng_categorical(&rng, prob, n)]);
                continue;
            }
            uint16_t a[ZT_MAX_ACTIONS];
            int n = g->legal(g, &s, a);
            int action;
            if (p == pub_side) {
                action = pub->choose(pub, &s, &rng);
                bool legal = false;
                for (int i = 0; i < n; i++) legal |= a[i] == action;
                CHECK(legal, "pubeval chose illegal action %d", action);
            } else {
                action = a[zt_rng_below(&rng, (uint32_t)n)];
            }
            g->apply(g, &s, action);
        }
        float r[2];
        g->returns(g, &s, r);
        wins += r[pub_side] > 0;
        points += r[pub_side];
    }
    printf("pubeval vs random (seed %llu): %d/%d wins, %+.2f points per game\n",
           (unsigned long long)seed, wins, games, points / games);
    CHECK(wins > games * 8 / 10, "pubeval won only %d of %d", wins, games);
    zt_player_free(pub);
}

static bool near_f(float x, double want)
{
    return fabs(x - want) < 1e-6;
}

static void test_features(void)
{
    float f[BG_NUM_FEATURES];
    bg_state s;
    zt_bg_reset(&s);
    zt_bg_features(&s, f);
    CHECK(near_f(f[BG_FEAT_PIPS_OWN], 1) && near_f(f[BG_FEAT_PIPS_OPP], 1) &&
              f[BG_FEAT_CONTACT] == 1 && f[BG_FEAT_SHOTS_OWN] == 0 && f[BG_FEAT_SHOTS_OPP] == 0 &&
              f[BG_FEAT_HIT_NOW] == 0,
          "start: %g %g %g %g %g %g", f[0], f[1], f[2], f[3], f[4], f[5]);

    /* The mover: one checker on its 8-point (index 7), 14 on its 1-point.
     * The opponent (indices of its own view): a blot on index 21 (the
     * mover's 3-point, 5 pips ahead of the mover's checker), two checkers on
     * each of 17..20 (the mover's 7..4-points) and 6 on its 1-point.
     * The mover's shots: every roll with a 5 (11 of 36); 4-1 and 3-2 would
     * need to land on the mover's 4..7-points, all blocked: 11/36.
     * The opponent's shots at the blot on the mover's 8-point (its index 16):
     * from 17..21 it is 1..5 pips away, so every roll but 6-6: 35/36.
     * Pips: the mover 14 + 8 = 22; the opponent 22 + 2 (18 + 19 + 20 + 21)
     * + 6 = 184. */
    memset(&s, 0, sizeof s);
    uint8_t *own = s.board[0], *opp = s.board[1];
    own[7] = 1;
    own[0] = 14;
    opp[21] = 1;
    opp[17] = opp[18] = opp[19] = opp[20] = 2;
    opp[0] = 6;
    s.n_dice = 2;
    s.dice[0] = 5;
    s.dice[1] = 2;
    zt_bg_features(&s, f);
    CHECK(near_f(f[BG_FEAT_PIPS_OWN], 22.0 / 167) && near_f(f[BG_FEAT_PIPS_OPP], 184.0 / 167),
          "pips %g %g", f[BG_FEAT_PIPS_OWN] * 167, f[BG_FEAT_PIPS_OPP] * 167);
    CHECK(f[BG_FEAT_CONTACT] == 1, "contact %g", f[BG_FEAT_CONTACT]);
    CHECK(near_f(f[BG_FEAT_SHOTS_OWN], 11.0 / 36), "own shots %g / 36", f[BG_FEAT_SHOTS_OWN] * 36);
    CHECK(near_f(f[BG_FEAT_SHOTS_OPP], 35.0 / 36), "opponent shots %g / 36",
          f[BG_FEAT_SHOTS_OPP] * 36);
    CHECK(f[BG_FEAT_HIT_NOW] == 1, "5-2 hits with 8/3*");
    /* Open one landing point (the opponent's pair on its 19, the mover's
     * 5-point, moves to its 1-point): now 3-2 hits over it as well. */
    opp[19] = 0;
    opp[0] = 8;
    zt_bg_features(&s, f);
    CHECK(near_f(f[BG_FEAT_SHOTS_OWN], 13.0 / 36), "own shots over an open point %g / 36",
          f[BG_FEAT_SHOTS_OWN] * 36);
    s.dice[0] = s.dice[1] = 6;
    s.n_dice = 4;
    zt_bg_features(&s, f);
    CHECK(f[BG_FEAT_HIT_NOW] == 0, "6-6 cannot hit");

    /* A race: every mover checker home, every opponent checker in its own
     * home (the mover's 19..24-points): no contact, no shots. */
    memset(&s, 0, sizeof s);
    s.board[0][0] = 7;
    s.board[0][3] = 8;
    s.board[1][1] = 15;
    zt_bg_features(&s, f);
    CHECK(f[BG_FEAT_CONTACT] == 0 && f[BG_FEAT_SHOTS_OWN] == 0 && f[BG_FEAT_SHOTS_OPP] == 0,
          "race: contact %g, shots %g %g", f[BG_FEAT_CONTACT], f[BG_FEAT_SHOTS_OWN],
          f[BG_FEAT_SHOTS_OPP]);

    /* The setting: extended inputs append the features to Tesauro's 203. */
    zt_config *cfg = zt_config_new();
    zt_config_put(cfg, "inputs", "extended");
    zt_game *g;
    zt_status st = zt_game_new("backgammon", cfg, &g);
    CHECK(st == ZT_OK, "inputs=extended: %s", zt_error_message());
    if (st == ZT_OK) {
        char spec[128];
        zt_game_spec(g, spec, sizeof spec);
        CHECK(strcmp(spec, "backgammon inputs=extended") == 0, "spec '%s'", spec);
        CHECK(g->obs_shape[2] == 203 + BG_NUM_FEATURES, "observation size %d", g->obs_shape[2]);
        bg_state t;
        zt_bg_reset(&t);
        t.n_dice = 2;
        t.dice[0] = 3;
        t.dice[1] = 1;
        t.opening = 0;
        float obs[256], want[BG_NUM_FEATURES];
        g->observe(g, &t, obs);
        zt_bg_features(&t, want);
        CHECK(memcmp(obs + 203, want, sizeof want) == 0, "features not appended");
        zt_game_free(g);
    }
    zt_config_free(cfg);
    cfg = zt_config_new();
    zt_config_put(cfg, "inputs", "fancy");
    CHECK(zt_game_new("backgammon", cfg, &g) == ZT_ERR_INVALID &&
              strstr(zt_error_message(), "inputs"),
          "inputs=fancy: %s", zt_error_message());
    zt_config_free(cfg);
    CHECK(zt_game_new("backgammon", NULL, &g) == ZT_OK, "%s", zt_error_message());
    char spec[128];
    zt_game_spec(g, spec, sizeof spec);
    CHECK(strcmp(spec, "backgammon") == 0 && g->obs_shape[2] == 203,
          "default: spec '%s', %d inputs", spec, g->obs_shape[2]);
    zt_game_free(g);
}

/* The shots of `roller` at `target`'s blots counted the slow way, over the
 * 36 ordered rolls and every roller checker: a blot one die away, both dice
 * away over an open point (either order), or for doubles up to four steps
 * over open points; from the bar only while checkers are there. */
static int shots_by_hand(const uint8_t *roller, const uint8_t *target)
{
    int count = 0;
    for (int a = 1; a <= 6; a++)
        for (int b = 1; b <= 6; b++) {
            bool hit = false;
            for (int src = 0; src <= BG_BAR && !hit; src++) {
                if (!roller[src] || (roller[BG_BAR] && src != BG_BAR)) continue;
#define BLOT(x) ((x) >= 0 && target[23 - (x)] == 1)
#define OPEN(x) ((x) >= 0 && target[23 - (x)] < 2)
                if (a != b) {
                    hit = BLOT(src - a) || BLOT(src - b) ||
                          (BLOT(src - a - b) && (OPEN(src - a) || OPEN(src - b)));
                } else {
                    for (int k = 1; k <= 4 && !hit; k++) {
                        if (BLOT(src - k * a)) hit = true;
                        else if (!OPEN(src - k * a)) break;
                    }
                }
#undef BLOT
#undef OPEN
            }
            count += hit;
        }
    return count;
}

/* The shot features against shots_by_hand, and the hit-now feature against
 * the legal moves, on random boards: each point held by one side or
 * neither, 0..4 checkers, bars often occupied, a roll in hand or not. */
static void test_shots_random(uint64_t seed)
{
    zt_rng rng;
    zt_rng_seed(&rng, seed, 7);
    int differ = 0, some = 0, hits = 0;
    for (int i = 0; i < 20000; i++) {
        bg_state s;
        memset(&s, 0, sizeof s);
        for (int x = 0; x < 24; x++) {
            int n = (int)zt_rng_below(&rng, 5), side = (int)zt_rng_below(&rng, 2);
            if (side == 0) s.board[0][x] = (uint8_t)n;
            else s.board[1][23 - x] = (uint8_t)n;
        }
        for (int side = 0; side < 2; side++)
            if (zt_rng_uniform(&rng) < 0.3) s.board[side][BG_BAR] = (uint8_t)(1 + zt_rng_below(&rng, 2));
        s.turn = (uint8_t)zt_rng_below(&rng, 2);
        int hi = 1 + (int)zt_rng_below(&rng, 6), lo = 1 + (int)zt_rng_below(&rng, 6);
        if (i % 4) { /* a roll in hand (else the roll is next) */
            s.n_dice = hi == lo ? 4 : 2;
            s.dice[0] = (uint8_t)(hi > lo ? hi : lo);
            s.dice[1] = (uint8_t)(hi > lo ? lo : hi);
            if (hi == lo) s.dice[2] = s.dice[3] = (uint8_t)hi;
        }
        float f[BG_NUM_FEATURES];
        zt_bg_features(&s, f);
        const uint8_t *own = s.board[s.turn], *opp = s.board[!s.turn];
        int want_own = shots_by_hand(own, opp), want_opp = shots_by_hand(opp, own);
        /* hit now: a legal first move lands on a blot */
        uint16_t acts[BG_NUM_ACTIONS];
        int na = zt_bg_legal(&s, acts);
        bool want_hit = false;
        for (int k = 0; k < na; k++) {
            int dst = acts[k] / 6 - (acts[k] % 6 + 1);
            want_hit |= dst >= 0 && opp[23 - dst] == 1;
        }
        if (!near_f(f[BG_FEAT_SHOTS_OWN], want_own / 36.0) ||
            !near_f(f[BG_FEAT_SHOTS_OPP], want_opp / 36.0) || f[BG_FEAT_HIT_NOW] != want_hit) {
            if (differ++ < 3)
                CHECK(0, "board %d: shots %g and %g, by hand %d and %d; hit now %g, legal %d", i,
                      f[BG_FEAT_SHOTS_OWN] * 36, f[BG_FEAT_SHOTS_OPP] * 36, want_own, want_opp,
                      f[BG_FEAT_HIT_NOW], want_hit);
        }
        some += want_own > 0 && want_own < 36;
        hits += want_hit;
    }
    CHECK(differ == 0 && some > 1000 && hits > 1000,
          "%d of 20000 boards differ; %d with some shots, %d that can hit now", differ, some, hits);
}

int main(void)
{
    uint64_t seed = zt_test_seed(20240611);
    zt_game *g = NULL;
    zt_status st = zt_game_new("backgammon", NULL, &g);
    if (st != ZT_OK) {
        printf("FAIL: %s\n", zt_error_message());
        return 1;
    }
    CHECK(g->state_size == sizeof(bg_state) && g->num_actions == BG_NUM_ACTIONS, "sizes");
    test_rules(g);
    test_text(g);
    test_gnubg_file(g);
    test_random_games(g, seed);
    test_pubeval(g, seed);
    test_features();
    test_shots_random(seed);
    zt_game_free(g);
    return zt_test_finish("test_backgammon");
}
