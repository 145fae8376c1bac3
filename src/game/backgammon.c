/* Backgammon without the doubling cube (rules: see backgammon.h). A turn is a
 * chance node (the roll) followed by one action per checker moved; the legal
 * actions at each step are the first moves of the maximal plays for the dice
 * still to play, so a sequence of actions always ends in one of the plays GNU
 * Backgammon lists, and every such play is reachable. A roll that leaves no
 * legal move passes at once, inside apply. */
#include "game/backgammon.h"

#include "core/alloc.h"
#include "core/hash.h"
#include "game/game.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { BG_ZOBRIST_TABLE = 0x6267 };

/* Observation (inputs = tesauro): Tesauro's truncated unary code
 * (TD-Gammon, 1992) from the mover's view. For each of the mover's points 1..24, four units for its own
 * checkers n: n >= 1, n >= 2, n >= 3, (n - 3) / 2 when n > 3 (units 0..95);
 * the same four for the opponent's checkers on that point (units 96..191);
 * then bar / 2 (mover, opponent), off / 15 (mover, opponent), the number of
 * dice still to play showing each face 1..6 / 2, and 1 when the mover is
 * still to roll (no dice). inputs = extended appends the hand-made inputs
 * of zt_bg_features (units 203..208). */
enum {
    OBS_OWN = 0,
    OBS_OPP = 96,
    OBS_BAR = 192,
    OBS_OFF = 194,
    OBS_DICE = 196,
    OBS_TO_ROLL = 202,
    OBS_FEATURES = 203,
};

/* Compact encoding: the 10-byte gnubg key from the mover's view, then
 * dice[0] | dice[1] << 3 | turn << 6 | opening << 7, then n_dice. */
enum { COMPACT_BYTES = BG_KEY_BYTES + 2 };

/* Plies (checker moves) bound reported to the framework: random games
 * average about 200 checker moves; no rule bounds a game, so this is a
 * generous buffer size, not a limit the game enforces. */
enum { MAX_GAME_PLIES = 4000 };

typedef struct bg_tables {
    uint64_t point[2][25][BG_CHECKERS + 1];
    uint64_t turn;
    uint64_t opening;
    uint64_t dice[7][5]; /* face, number of dice showing it */
    bool extended;       /* inputs = extended: zt_bg_features after Tesauro's units */
} bg_tables;

static const char *const bg_inputs[] = {"tesauro", "extended", NULL};

static const uint8_t start_points[25] = {[5] = 5, [7] = 3, [12] = 5, [23] = 2};

/* ---- rules ---- */

void zt_bg_reset(bg_state *s)
{
    memset(s, 0, sizeof *s);
    memcpy(s->board[0], start_points, 25);
    memcpy(s->board[1], start_points, 25);
    s->opening = 1;
}

static bool all_home(const uint8_t *own)
{
    for (int i = 6; i < 25; i++)
        if (own[i]) return false;
    return true;
}

/* Can the side to move play `die` from index src (0..23, or BG_BAR)? The
 * opponent's checkers on the mover's index d sit on its own index 23 - d. */
static bool move_ok(const bg_state *s, int src, int die)
{
    const uint8_t *own = s->board[s->turn], *opp = s->board[!s->turn];
    if (!own[src]) return false;
    if (src != BG_BAR && own[BG_BAR]) return false; /* enter first */
    int dst = src - die;
    if (dst >= 0) return opp[23 - dst] < 2;
    if (!all_home(own)) return false;
    if (dst == -1) return true;
    /* A higher die bears off only from the highest occupied point. */
    for (int i = src + 1; i < 6; i++)
        if (own[i]) return false;
    return true;
}

static void move_do(bg_state *s, int src, int die)
{
    uint8_t *own = s->board[s->turn], *opp = s->board[!s->turn];
    own[src]--;
    int dst = src - die;
    if (dst < 0) {
        s->off[s->turn]++;
        return;
    }
    if (opp[23 - dst] == 1) {
        opp[23 - dst] = 0;
        opp[BG_BAR]++;
    }
    own[dst]++;
}

/* Move generation over bit masks in the mover's indices (bit x: its point
 * x + 1, bit 24 the bar). `open` has the points the opponent does not hold;
 * the mover's moves never change it within a turn (a hit leaves the point
 * open), so it is taken once per turn. movable() is move_ok() for every
 * source at once: about as cheap as one move_ok, where the move generator
 * called move_ok for every source at every node. */
static uint32_t open_mask(const bg_state *s)
{
    const uint8_t *opp = s->board[!s->turn];
    uint32_t open = 0;
    for (int x = 0; x < 24; x++) open |= (uint32_t)(opp[23 - x] < 2) << x;
    return open;
}

/* The sources from which `die` can be played. */
static uint32_t movable(const uint8_t *own, uint32_t open, int die)
{
    if (own[BG_BAR]) return (open >> (BG_BAR - die)) & 1u ? 1u << BG_BAR : 0;
    uint32_t held = 0;
    for (int x = 0; x < 24; x++) held |= (uint32_t)(own[x] != 0) << x;
    uint32_t m = held & (open << die) & 0xffffffu; /* src - die >= 0, landing open */
    if (held && !(held >> 6)) {                     /* all home: bearing off */
        if ((held >> (die - 1)) & 1u)
            m |= 1u << (die - 1);
        else if (31 - __builtin_clz(held) < die - 1) /* a higher die from the highest point */
            m |= 1u << (31 - __builtin_clz(held));
    }
    return m;
}

static bool any_move(const bg_state *s, int die)
{
    return movable(s->board[s->turn], open_mask(s), die) != 0;
}

/* The most of k moves of `die` (doubles) playable with sources <= top. Any
 * play of equal dice can be reordered to non-increasing sources (the order
 * gnubg generates), so this is the true maximum when top = BG_BAR. */
static int doubles_depth(const bg_state *s, uint32_t open, int die, int k, int top)
{
    int best = 0;
    uint32_t m = movable(s->board[s->turn], open, die) & ((2u << top) - 1);
    while (m && k > 0) {
        int src = 31 - __builtin_clz(m);
        m &= ~(1u << src);
        bg_state t = *s;
        move_do(&t, src, die);
        int r = 1 + doubles_depth(&t, open, die, k - 1, src);
        if (r > best) best = r;
        if (best == k) break;
    }
    return best;
}

static bool can_play_any(const bg_state *s)
{
    for (int i = 0; i < s->n_dice; i++)
        if ((i == 0 || s->dice[i] != s->dice[i - 1]) && any_move(s, s->dice[i])) return true;
    return false;
}

static void end_turn(bg_state *s)
{
    s->n_dice = 0;
    memset(s->dice, 0, sizeof s->dice);
    s->turn ^= 1;
}

static void set_roll(bg_state *s, int hi, int lo)
{
    memset(s->dice, 0, sizeof s->dice);
    if (hi == lo) {
        s->n_dice = 4;
        memset(s->dice, hi, 4);
    } else {
        s->n_dice = 2;
        s->dice[0] = (uint8_t)(hi > lo ? hi : lo);
        s->dice[1] = (uint8_t)(hi > lo ? lo : hi);
    }
}

static void use_die(bg_state *s, int die)
{
    int n = s->n_dice, j = 0;
    while (j < n && s->dice[j] != die) j++;
    ZT_ASSERT(j < n);
    for (; j + 1 < n; j++) s->dice[j] = s->dice[j + 1];
    s->dice[n - 1] = 0;
    s->n_dice--;
}

static bool is_terminal(const bg_state *s)
{
    return s->off[0] == BG_CHECKERS || s->off[1] == BG_CHECKERS;
}

int zt_bg_roll_id(int hi, int lo)
{
    if (hi < lo) {
        int t = hi;
        hi = lo;
        lo = t;
    }
    return hi * (hi - 1) / 2 + lo - 1;
}

void zt_bg_roll_dice(int id, int *hi, int *lo)
{
    ZT_ASSERT(id >= 0 && id < BG_NUM_ROLLS);
    int h = 1;
    while ((h + 1) * h / 2 <= id) h++;
    *hi = h;
    *lo = id - h * (h - 1) / 2 + 1;
}

int zt_bg_legal(const bg_state *s, uint16_t *actions)
{
    int n = s->n_dice;
    if (n == 0) return 0;
    int hi = s->dice[0], lo = s->dice[n - 1];
    int count = 0;
    uint32_t open = open_mask(s);
    const uint8_t *own = s->board[s->turn];
    if (hi == lo) {
        uint8_t r[25] = {0};
        int best = 0;
        for (uint32_t m = movable(own, open, hi); m; m &= m - 1) {
            int src = __builtin_ctz(m);
            bg_state t = *s;
            move_do(&t, src, hi);
            r[src] = (uint8_t)(1 + doubles_depth(&t, open, hi, n - 1, BG_BAR));
            if (r[src] > best) best = r[src];
        }
        for (int src = 0; src < 25; src++)
            if (best && r[src] == best) actions[count++] = (uint16_t)(src * 6 + hi - 1);
        return count;
    }
    /* Two different dice: a move counts 2 if the other die can follow it. */
    uint8_t rh[25] = {0}, rl[25] = {0};
    int best = 0;
    uint32_t mh = movable(own, open, hi), ml = movable(own, open, lo);
    bool hi_any = mh != 0;
    for (; mh; mh &= mh - 1) {
        int src = __builtin_ctz(mh);
        bg_state t = *s;
        move_do(&t, src, hi);
        rh[src] = (uint8_t)(1 + (movable(t.board[t.turn], open, lo) != 0));
        if (rh[src] > best) best = rh[src];
    }
    for (; ml; ml &= ml - 1) {
        int src = __builtin_ctz(ml);
        bg_state t = *s;
        move_do(&t, src, lo);
        rl[src] = (uint8_t)(1 + (movable(t.board[t.turn], open, hi) != 0));
        if (rl[src] > best) best = rl[src];
    }
    /* When only one die can be played, it must be the larger if possible. */
    bool use_lo = best == 2 || !hi_any;
    bool use_hi = best == 2 || hi_any;
    for (int src = 0; src < 25; src++) {
        if (use_lo && rl[src] == best && best) actions[count++] = (uint16_t)(src * 6 + lo - 1);
        if (use_hi && rh[src] == best && best) actions[count++] = (uint16_t)(src * 6 + hi - 1);
    }
    return count;
}

void zt_bg_apply(bg_state *s, int action)
{
    ZT_ASSERT(!is_terminal(s));
    if (s->n_dice == 0) {
        int hi, lo;
        zt_bg_roll_dice(action, &hi, &lo);
        ZT_ASSERT(!s->opening || hi != lo);
        s->opening = 0;
        set_roll(s, hi, lo);
        if (!can_play_any(s)) end_turn(s);
        return;
    }
    ZT_ASSERT(action >= 0 && action < BG_NUM_ACTIONS);
    int src = action / 6, die = action % 6 + 1;
    ZT_ASSERT(move_ok(s, src, die));
    move_do(s, src, die);
    use_die(s, die);
    if (s->off[s->turn] == BG_CHECKERS || s->n_dice == 0 || !can_play_any(s)) end_turn(s);
}

bool zt_bg_is_race(const bg_state *s)
{
    /* Contact: a checker of one side behind one of the other. With each
     * side's rearmost checker at its own point a and b (bar = 25), the
     * sides meet exactly when a + b > 25. */
    int back[2] = {0, 0};
    for (int p = 0; p < 2; p++)
        for (int i = 24; i >= 0; i--)
            if (s->board[p][i]) {
                back[p] = i + 1;
                break;
            }
    return back[0] + back[1] <= 25;
}

/* ---- complete plays, gnubg's way ---- */

typedef struct gen_ctx {
    bg_playlist *out;
    int roll[4];
    int n_roll;
    bool doubles;
    int max_moves;
    int need_die; /* when one of two different dice can be played: that die */
    uint32_t open; /* open_mask of the turn */
    uint8_t from[4], to[4], die[4];
} gen_ctx;

static void save_play(gen_ctx *c, const bg_state *t, int n_moves)
{
    if (n_moves != c->max_moves) return;
    if (c->need_die && c->die[0] != c->need_die) return;
    ZT_ASSERT(c->out->count < BG_MAX_PLAYS);
    bg_play *p = &c->out->plays[c->out->count];
    p->after = *t;
    end_turn(&p->after);
    const int slots = (int)(sizeof c->out->slot / sizeof c->out->slot[0]);
    uint64_t h = zt_hash_bytes(&p->after, sizeof p->after, 0x6267);
    int i = (int)(h & (uint64_t)(slots - 1));
    while (c->out->slot[i] >= 0) {
        if (memcmp(&c->out->plays[c->out->slot[i]].after, &p->after, sizeof p->after) == 0) return;
        i = (i + 1) & (slots - 1);
    }
    c->out->slot[i] = (int16_t)c->out->count++;
    p->n_moves = (uint8_t)n_moves;
    memset(p->from, 0, sizeof p->from);
    memset(p->to, 0, sizeof p->to);
    memset(p->die, 0, sizeof p->die);
    memcpy(p->from, c->from, (size_t)n_moves);
    memcpy(p->to, c->to, (size_t)n_moves);
    memcpy(p->die, c->die, (size_t)n_moves);
}

/* Depth-first over the dice in c->roll order, sources from the back; for
 * doubles the next source is never behind the last. Returns -1 when no move
 * was possible at this depth (the caller's sequence is then complete). */
static int gen_plays(gen_ctx *c, const bg_state *s, int depth, int top)
{
    if (depth >= c->n_roll) return -1;
    int die = c->roll[depth];
    const uint8_t *own = s->board[s->turn];
    uint32_t m = movable(own, c->open, die); /* from the bar: that alone */
    if (!own[BG_BAR]) m &= (2u << top) - 1;
    bool used = false;
    while (m) {
        int src = 31 - __builtin_clz(m);
        m &= ~(1u << src);
        bg_state t = *s;
        move_do(&t, src, die);
        c->from[depth] = (uint8_t)(src + 1);
        c->to[depth] = (uint8_t)(src - die >= 0 ? src - die + 1 : 0);
        c->die[depth] = (uint8_t)die;
        int next_top = c->doubles ? src : 23;
        if (gen_plays(c, &t, depth + 1, next_top) < 0) save_play(c, &t, depth + 1);
        used = true;
    }
    return used ? 0 : -1;
}

void zt_bg_plays(const bg_state *s, bg_playlist *out)
{
    ZT_ASSERT(s->n_dice > 0 && !is_terminal(s));
    out->count = 0;
    memset(out->slot, 0xff, sizeof out->slot);
    gen_ctx c = {.out = out, .open = open_mask(s)};
    int n = s->n_dice, hi = s->dice[0], lo = s->dice[n - 1];
    if (hi == lo) {
        c.doubles = true;
        c.n_roll = n;
        for (int i = 0; i < n; i++) c.roll[i] = hi;
        c.max_moves = doubles_depth(s, c.open, hi, n, BG_BAR);
        if (c.max_moves) gen_plays(&c, s, 0, 23);
        return;
    }
    uint16_t first[BG_NUM_ACTIONS];
    int nfirst = zt_bg_legal(s, first);
    if (nfirst == 0) return;
    /* The maximum is 2 when some first move leaves a move for the other die. */
    c.max_moves = 1;
    for (int i = 0; i < nfirst && c.max_moves == 1; i++) {
        bg_state t = *s;
        move_do(&t, first[i] / 6, first[i] % 6 + 1);
        if (movable(t.board[t.turn], c.open, first[i] % 6 + 1 == hi ? lo : hi)) c.max_moves = 2;
    }
    if (c.max_moves == 1) c.need_die = first[0] % 6 + 1;
    c.n_roll = 2;
    c.roll[0] = hi;
    c.roll[1] = lo;
    gen_plays(&c, s, 0, 23);
    c.roll[0] = lo;
    c.roll[1] = hi;
    gen_plays(&c, s, 0, 23);
}

/* ---- notation ---- */

typedef struct textbuf {
    char *buf;
    size_t cap, len;
} textbuf;

static void tb_put(textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_put(textbuf *t, const char *fmt, ...)
{
    if (t->len >= t->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
    if (t->len >= t->cap) t->len = t->cap;
}

static void tb_point(textbuf *t, int point)
{
    if (point == 25)
        tb_put(t, "bar");
    else if (point == 0)
        tb_put(t, "off");
    else
        tb_put(t, "%d", point);
}

/* An opponent's checker stood on the mover's point q (1..24) before the
 * play; a checker of ours that reached q hit it. */
static bool blot_before(const uint8_t *opp, int q)
{
    return q > 0 && q < 25 && opp[24 - q] > 0;
}

/* gnubg's FormatMove, re-derived: moves sorted by source then destination,
 * both descending; a checker's consecutive moves joined into one path that
 * keeps an intermediate point only where it hit; identical paths counted as
 * "(n)"; '*' marks each point where a blot stood before the play, once. */
void zt_bg_play_notation(const bg_state *before, const bg_play *play, char *buf, size_t cap)
{
    const uint8_t *opp = before->board[!before->turn];
    int n = play->n_moves;
    int mv[4][2];
    for (int i = 0; i < n; i++) {
        mv[i][0] = play->from[i];
        mv[i][1] = play->to[i];
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            bool later =
                mv[j][0] > mv[j - 1][0] || (mv[j][0] == mv[j - 1][0] && mv[j][1] > mv[j - 1][1]);
            if (!later) break;
            int a = mv[j][0], b = mv[j][1];
            mv[j][0] = mv[j - 1][0];
            mv[j][1] = mv[j - 1][1];
            mv[j - 1][0] = a;
            mv[j - 1][1] = b;
        }
    int path[4][5], len[4], count[4];
    bool alive[4];
    for (int i = 0; i < n; i++) {
        path[i][0] = mv[i][0];
        path[i][1] = mv[i][1];
        len[i] = 2;
        alive[i] = true;
        count[i] = 1;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!alive[i] || !alive[j] || path[i][len[i] - 1] != path[j][0]) continue;
            if (blot_before(opp, path[i][len[i] - 1]))
                path[i][len[i]++] = path[j][1];
            else
                path[i][len[i] - 1] = path[j][1];
            alive[j] = false;
        }
    for (int i = 0; i < n; i++) {
        if (!alive[i]) continue;
        for (int j = i + 1; j < n; j++)
            if (alive[j] && len[j] == len[i] &&
                memcmp(path[j], path[i], sizeof(int) * (size_t)len[i]) == 0) {
                count[i]++;
                alive[j] = false;
            }
    }
    textbuf t = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    uint32_t marked = 0;
    bool first = true;
    for (int i = 0; i < n; i++) {
        if (!alive[i]) continue;
        if (!first) tb_put(&t, " ");
        first = false;
        tb_point(&t, path[i][0]);
        for (int k = 1; k < len[i] - 1; k++) {
            tb_put(&t, "/");
            tb_point(&t, path[i][k]);
            tb_put(&t, "*");
            marked |= 1u << path[i][k];
        }
        int dst = path[i][len[i] - 1];
        tb_put(&t, "/");
        tb_point(&t, dst);
        if (blot_before(opp, dst) && !(marked & (1u << dst))) {
            tb_put(&t, "*");
            marked |= 1u << dst;
        }
        if (count[i] > 1) tb_put(&t, "(%d)", count[i]);
    }
}

void zt_bg_move_text(const bg_state *s, int action, char *buf, size_t cap)
{
    textbuf t = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    int src = action / 6, die = action % 6 + 1, dst = src - die;
    tb_point(&t, src == BG_BAR ? 25 : src + 1);
    tb_put(&t, "/");
    if (dst >= 0) {
        tb_point(&t, dst + 1);
        if (s->board[!s->turn][23 - dst] == 1) tb_put(&t, "*");
    } else {
        tb_put(&t, "off");
        if (die > src + 1) tb_put(&t, "[%d]", die);
    }
}

/* ---- gnubg position ids ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 80-bit key: for the opponent then the mover, for each point 1..24 and
 * the bar, as many 1 bits as checkers followed by a 0 bit; bit k is bit
 * k % 8 of byte k / 8. */
static void key_encode(const uint8_t mover[25], const uint8_t opp[25], uint8_t key[BG_KEY_BYTES])
{
    memset(key, 0, BG_KEY_BYTES);
    int bit = 0;
    const uint8_t *sides[2] = {opp, mover};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 25; i++) {
            for (int c = 0; c < sides[p][i]; c++, bit++)
                key[bit >> 3] |= (uint8_t)(1u << (bit & 7));
            bit++;
        }
}

static zt_status key_decode(const uint8_t key[BG_KEY_BYTES], uint8_t mover[25], uint8_t opp[25])
{
    uint8_t *sides[2] = {opp, mover};
    static const char *const names[2] = {"opponent", "player to move"};
    memset(mover, 0, 25);
    memset(opp, 0, 25);
    int bit = 0;
    for (int p = 0; p < 2; p++) {
        int total = 0;
        for (int i = 0; i < 25; i++) {
            while (bit < 80 && (key[bit >> 3] >> (bit & 7) & 1)) {
                bit++;
                if (++total > BG_CHECKERS)
                    return zt_fail(ZT_ERR_INVALID,
                                   "backgammon: position id gives the %s more than 15 checkers",
                                   names[p]);
                sides[p][i]++;
            }
            bit++; /* the 0 that ends point i (80 bits always suffice for 30 checkers) */
        }
    }
    for (; bit < 80; bit++)
        if (key[bit >> 3] >> (bit & 7) & 1)
            return zt_fail(ZT_ERR_INVALID,
                           "backgammon: position id has bits set after the last point");
    for (int i = 0; i < 24; i++)
        if (mover[i] && opp[23 - i])
            return zt_fail(ZT_ERR_INVALID, "backgammon: position id puts both sides on point %d",
                           i + 1);
    return ZT_OK;
}

void zt_bg_id_encode(const uint8_t mover[25], const uint8_t opp[25], char out[BG_ID_LEN + 1])
{
    uint8_t key[BG_KEY_BYTES + 1] = {0};
    key_encode(mover, opp, key);
    for (int c = 0; c < BG_ID_LEN; c++) {
        int v = 0;
        for (int b = 0; b < 6; b++) {
            int bit = c * 6 + b; /* base64 reads each byte from its high bit */
            int byte = bit >> 3, in = 7 - (bit & 7);
            v = v << 1 | (key[byte] >> in & 1);
        }
        out[c] = b64[v];
    }
    out[BG_ID_LEN] = '\0';
}

zt_status zt_bg_id_decode(const char *id, uint8_t mover[25], uint8_t opp[25])
{
    size_t n = strlen(id);
    if (n != BG_ID_LEN)
        return zt_fail(ZT_ERR_INVALID,
                       "backgammon: position id '%.40s' has %zu characters, expected 14", id, n);
    uint8_t key[BG_KEY_BYTES + 1] = {0};
    for (int c = 0; c < BG_ID_LEN; c++) {
        const char *at = strchr(b64, id[c]);
        if (!id[c] || !at)
            return zt_fail(ZT_ERR_INVALID,
                           "backgammon: position id '%s' has '%c' at %d, not a base64 character",
                           id, id[c], c + 1);
        int v = (int)(at - b64);
        for (int b = 0; b < 6; b++) {
            int bit = c * 6 + b, byte = bit >> 3, in = 7 - (bit & 7);
            if (v >> (5 - b) & 1) {
                if (byte >= BG_KEY_BYTES)
                    return zt_fail(
                        ZT_ERR_INVALID,
                        "backgammon: position id '%s' has stray bits in its last character", id);
                key[byte] |= (uint8_t)(1u << in);
            }
        }
    }
    return key_decode(key, mover, opp);
}

/* Fills off[] from the boards and checks what the rules need beyond a valid
 * key: the dice and flags agree and, with dice, there is a move to make. */
static zt_status check_state(bg_state *s)
{
    for (int p = 0; p < 2; p++) {
        int on = 0;
        for (int i = 0; i < 25; i++) on += s->board[p][i];
        if (on > BG_CHECKERS)
            return zt_fail(ZT_ERR_INVALID, "backgammon: player %d has %d checkers", p, on);
        s->off[p] = (uint8_t)(BG_CHECKERS - on);
    }
    if (s->off[s->turn] == BG_CHECKERS)
        return zt_fail(ZT_ERR_INVALID,
                       "backgammon: the side to move has borne off all its checkers already");
    if (is_terminal(s) && (s->n_dice || s->opening))
        return zt_fail(ZT_ERR_INVALID, "backgammon: the game is over, no dice can be rolled");
    if (s->opening && (s->n_dice || s->turn != 0))
        return zt_fail(ZT_ERR_INVALID,
                       "backgammon: the opening roll is before any dice, with player 0 to play");
    if (s->n_dice && !can_play_any(s)) {
        char d[5] = {0};
        for (int i = 0; i < s->n_dice; i++) d[i] = (char)('0' + s->dice[i]);
        return zt_fail(ZT_ERR_INVALID,
                       "backgammon: no legal move with dice %s here (the turn would pass)", d);
    }
    return ZT_OK;
}

static zt_status parse_roll(const char *roll, int *hi, int *lo)
{
    if (strlen(roll) != 2 || roll[0] < '1' || roll[0] > '6' || roll[1] < '1' || roll[1] > '6')
        return zt_fail(ZT_ERR_INVALID,
                       "backgammon: dice '%.20s': expected two digits 1-6, such as 54 or 66", roll);
    *hi = roll[0] - '0';
    *lo = roll[1] - '0';
    return ZT_OK;
}

zt_status zt_bg_position(const char *id, const char *roll, bg_state *s)
{
    memset(s, 0, sizeof *s);
    int hi = 0, lo = 0;
    if (roll) ZT_TRY(parse_roll(roll, &hi, &lo));
    ZT_TRY(zt_bg_id_decode(id, s->board[0], s->board[1]));
    for (int p = 0; p < 2; p++) {
        int on = 0;
        for (int i = 0; i < 25; i++) on += s->board[p][i];
        s->off[p] = (uint8_t)(BG_CHECKERS - on);
    }
    if (is_terminal(s))
        return zt_fail(ZT_ERR_INVALID, "backgammon: position %s is a finished game", id);
    if (roll) set_roll(s, hi, lo);
    return ZT_OK;
}

/* ---- the zt_game interface ---- */

static const bg_state *cst(const void *s)
{
    return (const bg_state *)s;
}

static void g_reset(const zt_game *g, void *s)
{
    (void)g;
    zt_bg_reset(s);
}

static int g_current_player(const zt_game *g, const void *vs)
{
    (void)g;
    const bg_state *s = cst(vs);
    if (is_terminal(s)) return ZT_TERMINAL;
    return s->n_dice ? s->turn : ZT_CHANCE;
}

static int g_legal(const zt_game *g, const void *s, uint16_t *actions)
{
    (void)g;
    return zt_bg_legal(cst(s), actions);
}

static void g_apply(const zt_game *g, void *s, int action)
{
    (void)g;
    zt_bg_apply(s, action);
}

static int g_chance_outcomes(const zt_game *g, const void *vs, int *outcomes, float *probs)
{
    (void)g;
    const bg_state *s = cst(vs);
    int n = 0;
    for (int hi = 1; hi <= 6; hi++)
        for (int lo = 1; lo <= hi; lo++) {
            if (s->opening && hi == lo) continue;
            outcomes[n] = zt_bg_roll_id(hi, lo);
            probs[n] = s->opening ? 1.0f / 15.0f : (hi == lo ? 1.0f : 2.0f) / 36.0f;
            n++;
        }
    return n;
}

static void g_returns(const zt_game *g, const void *vs, float *r)
{
    (void)g;
    const bg_state *s = cst(vs);
    ZT_ASSERT(is_terminal(s));
    int winner = s->off[0] == BG_CHECKERS ? 0 : 1, loser = !winner;
    float points = 1.0f;
    if (s->off[loser] == 0) {
        points = 2.0f;
        /* Backgammon: the loser still has a checker on the bar or in the
         * winner's home board (the loser's points 19..24). */
        for (int i = 18; i < 25; i++)
            if (s->board[loser][i]) points = 3.0f;
    }
    r[winner] = points;
    r[loser] = -points;
}

static void g_observe(const zt_game *g, const void *vs, float *obs)
{
    const bg_tables *t = g->impl;
    const bg_state *s = cst(vs);
    memset(obs, 0, sizeof(float) * OBS_FEATURES);
    const uint8_t *own = s->board[s->turn], *opp = s->board[!s->turn];
    for (int i = 0; i < 24; i++) {
        int counts[2] = {own[i], opp[23 - i]};
        for (int side = 0; side < 2; side++) {
            float *u = obs + (side ? OBS_OPP : OBS_OWN) + 4 * i;
            int c = counts[side];
            u[0] = c >= 1;
            u[1] = c >= 2;
            u[2] = c >= 3;
            u[3] = c > 3 ? (float)(c - 3) / 2.0f : 0.0f;
        }
    }
    obs[OBS_BAR] = own[BG_BAR] / 2.0f;
    obs[OBS_BAR + 1] = opp[BG_BAR] / 2.0f;
    obs[OBS_OFF] = s->off[s->turn] / 15.0f;
    obs[OBS_OFF + 1] = s->off[!s->turn] / 15.0f;
    for (int i = 0; i < s->n_dice; i++) obs[OBS_DICE + s->dice[i] - 1] += 0.5f;
    obs[OBS_TO_ROLL] = s->n_dice == 0;
    if (t->extended) zt_bg_features(s, obs + OBS_FEATURES);
}

/* Before the roll the board is observed from the side about to roll
 * (end_turn passed it the turn), with the to-roll input set. */
static int g_chance_observer(const zt_game *g, const void *vs)
{
    (void)g;
    return cst(vs)->turn;
}

static void g_encode(const zt_game *g, const void *vs, uint8_t *out)
{
    (void)g;
    const bg_state *s = cst(vs);
    key_encode(s->board[s->turn], s->board[!s->turn], out);
    out[BG_KEY_BYTES] = (uint8_t)(s->dice[0] | s->dice[1] << 3 | s->turn << 6 | s->opening << 7);
    out[BG_KEY_BYTES + 1] = s->n_dice;
}

static zt_status g_decode(const zt_game *g, const uint8_t *in, void *vs)
{
    (void)g;
    bg_state *s = vs;
    memset(s, 0, sizeof *s);
    uint8_t flags = in[BG_KEY_BYTES], n = in[BG_KEY_BYTES + 1];
    s->turn = flags >> 6 & 1;
    s->opening = flags >> 7;
    ZT_TRY(key_decode(in, s->board[s->turn], s->board[!s->turn]));
    int d0 = flags & 7, d1 = flags >> 3 & 7;
    bool ok;
    switch (n) {
    case 0:
        ok = d0 == 0 && d1 == 0;
        break;
    case 1:
        ok = d0 >= 1 && d0 <= 6 && d1 == 0;
        break;
    case 2:
        ok = d0 >= 1 && d0 <= 6 && d1 >= 1 && d1 <= d0;
        break;
    case 3:
    case 4:
        ok = d0 >= 1 && d0 <= 6 && d1 == d0;
        break;
    default:
        ok = false;
    }
    if (!ok) return zt_fail(ZT_ERR_CORRUPT, "backgammon: encoded dice are invalid");
    s->n_dice = n;
    for (int i = 0; i < n; i++) s->dice[i] = (uint8_t)d0;
    if (n == 2) s->dice[1] = (uint8_t)d1;
    return check_state(s);
}

static void g_sym_state(const zt_game *g, int sym, const void *s, void *out)
{
    (void)g;
    ZT_ASSERT(sym == 0);
    memmove(out, s, sizeof(bg_state));
}

static int g_sym_action(const zt_game *g, int sym, int action)
{
    (void)g;
    ZT_ASSERT(sym == 0);
    return action;
}

static uint64_t g_hash(const zt_game *g, const void *vs)
{
    const bg_tables *t = g->impl;
    const bg_state *s = cst(vs);
    uint64_t h = 0;
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 25; i++)
            if (s->board[p][i]) h ^= t->point[p][i][s->board[p][i]];
    if (s->turn) h ^= t->turn;
    if (s->opening) h ^= t->opening;
    int faces[7] = {0};
    for (int i = 0; i < s->n_dice; i++) faces[s->dice[i]]++;
    for (int f = 1; f <= 6; f++)
        if (faces[f]) h ^= t->dice[f][faces[f]];
    return h;
}

/* Text: "<gnubg id>[:<dice still to play>][ p1][ opening]". The id is from
 * the side to move's view (at the end, the loser's); no dice means the roll
 * is next; " p1" says the side to move is player 1; " opening" marks the
 * opening roll (no doubles). Doubles list every die left: "6666" is a fresh
 * roll of double sixes, "66" two sixes still to play. */
static void g_to_text(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    (void)g;
    const bg_state *s = cst(vs);
    char id[BG_ID_LEN + 1];
    zt_bg_id_encode(s->board[s->turn], s->board[!s->turn], id);
    textbuf t = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    tb_put(&t, "%s", id);
    if (s->n_dice) {
        tb_put(&t, ":");
        for (int i = 0; i < s->n_dice; i++) tb_put(&t, "%d", s->dice[i]);
    }
    if (s->turn) tb_put(&t, " p1");
    if (s->opening) tb_put(&t, " opening");
}

static zt_status g_from_text(const zt_game *g, const char *text, void *vs)
{
    (void)g;
    bg_state *s = vs;
    memset(s, 0, sizeof *s);
    char copy[128];
    if (strlen(text) >= sizeof copy)
        return zt_fail(ZT_ERR_INVALID, "backgammon: position text is too long");
    strcpy(copy, text);
    char *save = NULL;
    char *word = strtok_r(copy, " \t\r\n", &save);
    if (!word) return zt_fail(ZT_ERR_INVALID, "backgammon: empty position (expected a gnubg id)");
    char *dice = strchr(word, ':');
    if (dice) *dice++ = '\0';
    for (char *w = strtok_r(NULL, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
        if (strcmp(w, "p1") == 0)
            s->turn = 1;
        else if (strcmp(w, "p0") == 0)
            s->turn = 0;
        else if (strcmp(w, "opening") == 0)
            s->opening = 1;
        else
            return zt_fail(ZT_ERR_INVALID,
                           "backgammon: unexpected '%.20s' after the position (p0, p1, opening)",
                           w);
    }
    ZT_TRY(zt_bg_id_decode(word, s->board[s->turn], s->board[!s->turn]));
    if (dice) {
        size_t n = strlen(dice);
        if (n < 1 || n > 4)
            return zt_fail(ZT_ERR_INVALID, "backgammon: dice ':%.20s' must list 1 to 4 dice", dice);
        for (size_t i = 0; i < n; i++) {
            if (dice[i] < '1' || dice[i] > '6')
                return zt_fail(ZT_ERR_INVALID, "backgammon: die '%c' is not 1-6", dice[i]);
            s->dice[i] = (uint8_t)(dice[i] - '0');
        }
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && s->dice[j] > s->dice[j - 1]; j--) {
                uint8_t x = s->dice[j];
                s->dice[j] = s->dice[j - 1];
                s->dice[j - 1] = x;
            }
        if (n > 2 && s->dice[0] != s->dice[n - 1])
            return zt_fail(ZT_ERR_INVALID,
                           "backgammon: dice ':%s': three or four dice left must be doubles", dice);
        s->n_dice = (uint8_t)n;
    }
    return check_state(s);
}

/* A border line with point numbers over each 3-character column: the one
 * digit or the first of two under the column's checker. */
static void render_labels(textbuf *t, const int *points)
{
    tb_put(t, " +");
    for (int k = 0; k < 12; k++) {
        if (k == 6) tb_put(t, "+---+");
        tb_put(t, points[k] > 9 ? "%d-" : "-%d-", points[k]);
    }
    tb_put(t, "+");
}

static void g_render(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    const bg_state *s = cst(vs);
    textbuf t = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    char pos[64];
    g_to_text(g, vs, pos, sizeof pos);
    tb_put(&t, " Position: %s\n", pos);
    /* Drawn from player 0's side: X is player 0 (home board bottom right,
     * points numbered for X), O is player 1. */
    const uint8_t *x = s->board[0], *o = s->board[1];
    static const int top[12] = {13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    static const int bottom[12] = {12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    render_labels(&t, top);
    tb_put(&t, "  O off: %d\n", s->off[1]);
    for (int half = 0; half < 2; half++) {
        const int *pts = half ? bottom : top;
        for (int r = 0; r < 5; r++) {
            int row = half ? 4 - r : r;
            tb_put(&t, " |");
            for (int k = 0; k < 12; k++) {
                if (k == 6) {
                    int bar = half ? x[BG_BAR] : o[BG_BAR];
                    char ch = half ? 'X' : 'O';
                    if (bar > row && !(row == 4 && bar > 5))
                        tb_put(&t, "| %c |", ch);
                    else if (row == 4 && bar > 5)
                        tb_put(&t, "|%2d |", bar);
                    else
                        tb_put(&t, "|   |");
                }
                int p = pts[k];
                int nx = x[p - 1], no = o[24 - p];
                int c = nx ? nx : no;
                char ch = nx ? 'X' : 'O';
                if (row == 4 && c > 5)
                    tb_put(&t, "%2d ", c);
                else if (c > row)
                    tb_put(&t, " %c ", ch);
                else
                    tb_put(&t, "   ");
            }
            tb_put(&t, "|\n");
            if (half == 0 && r == 4) tb_put(&t, " |                  |BAR|                  |\n");
        }
    }
    render_labels(&t, bottom);
    tb_put(&t, "  X off: %d\n", s->off[0]);
    const char *names[2] = {"X (player 0)", "O (player 1)"};
    if (is_terminal(s)) {
        float r[2];
        g_returns(g, vs, r);
        int w = r[0] > 0 ? 0 : 1;
        tb_put(&t, " %s wins %d point%s\n", names[w], (int)r[w], r[w] > 1 ? "s" : "");
    } else if (s->n_dice) {
        tb_put(&t, " %s to move, dice to play:", names[s->turn]);
        for (int i = 0; i < s->n_dice; i++) tb_put(&t, " %d", s->dice[i]);
        tb_put(&t, "\n");
    } else {
        tb_put(&t, " %s to roll%s\n", names[s->turn], s->opening ? " (opening roll)" : "");
    }
}

static void g_action_to_text(const zt_game *g, const void *vs, int action, char *buf, size_t cap)
{
    (void)g;
    const bg_state *s = cst(vs);
    if (s->n_dice == 0) {
        int hi, lo;
        zt_bg_roll_dice(action, &hi, &lo);
        snprintf(buf, cap, "%d%d", hi, lo);
        return;
    }
    zt_bg_move_text(s, action, buf, cap);
}

/* Reads a point: 1..24, "bar" (or 25) as a source, "off" (or 0) as a target. */
static const char *parse_point(const char *p, int *out)
{
    if (strncasecmp(p, "bar", 3) == 0) {
        *out = 25;
        return p + 3;
    }
    if (strncasecmp(p, "off", 3) == 0) {
        *out = 0;
        return p + 3;
    }
    if (!isdigit((unsigned char)*p)) return NULL;
    char *end;
    long v = strtol(p, &end, 10);
    if (v < 0 || v > 25) return NULL;
    *out = (int)v;
    return end;
}

static zt_status g_action_from_text(const zt_game *g, const void *vs, const char *text, int *action)
{
    (void)g;
    const bg_state *s = cst(vs);
    while (isspace((unsigned char)*text)) text++;
    if (is_terminal(s)) return zt_fail(ZT_ERR_INVALID, "backgammon: the game is over");
    if (s->n_dice == 0) {
        int hi, lo;
        ZT_TRY(parse_roll(text, &hi, &lo));
        if (s->opening && hi == lo)
            return zt_fail(ZT_ERR_INVALID, "backgammon: the opening roll cannot be doubles");
        *action = zt_bg_roll_id(hi, lo);
        return ZT_OK;
    }
    int from, to, die = 0;
    const char *p = parse_point(text, &from);
    if (!p || *p != '/' || !(p = parse_point(p + 1, &to)))
        return zt_fail(ZT_ERR_INVALID,
                       "backgammon: move '%.30s': expected FROM/TO such as 24/18, "
                       "bar/22 or 5/off",
                       text);
    if (*p == '*') p++;
    if (*p == '[') {
        char *end;
        die = (int)strtol(p + 1, &end, 10);
        if (end == p + 1 || *end != ']' || die < 1 || die > 6)
            return zt_fail(ZT_ERR_INVALID, "backgammon: move '%.30s': bad die in [ ]", text);
        p = end + 1;
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p || from == 0 || to == 25 || (from != 25 && to >= from))
        return zt_fail(ZT_ERR_INVALID, "backgammon: move '%.30s' is not a single checker move",
                       text);
    uint16_t legal[BG_NUM_ACTIONS];
    int n = zt_bg_legal(s, legal), src = from == 25 ? BG_BAR : from - 1;
    int found = -1;
    for (int i = 0; i < n; i++) {
        int a_src = legal[i] / 6, a_die = legal[i] % 6 + 1, dst = a_src - a_die;
        if (a_src != src || (dst >= 0 ? dst + 1 : 0) != to) continue;
        if (die && a_die != die) continue;
        /* Bare "5/off": the exact die when legal, else the smallest higher. */
        if (found < 0 || a_die == src + 1) found = legal[i];
        if (a_die == src + 1) break;
    }
    if (found < 0)
        return zt_fail(ZT_ERR_INVALID, "backgammon: move '%.30s' is not legal here", text);
    *action = found;
    return ZT_OK;
}

static void destroy(zt_game *g)
{
    free((void *)g->impl);
    g->impl = NULL;
}

static zt_status create(zt_config *cfg, zt_game *g)
{
    int inputs;
    ZT_TRY(zt_config_choice(cfg, "inputs", "tesauro", bg_inputs, &inputs));
    bg_tables *t = zt_xcalloc(1, sizeof *t);
    t->extended = inputs == 1;
    uint32_t k = 0;
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 25; i++)
            for (int c = 0; c <= BG_CHECKERS; c++)
                t->point[p][i][c] = zt_zobrist(BG_ZOBRIST_TABLE, k++);
    t->turn = zt_zobrist(BG_ZOBRIST_TABLE, k++);
    t->opening = zt_zobrist(BG_ZOBRIST_TABLE, k++);
    for (int f = 0; f < 7; f++)
        for (int c = 0; c < 5; c++) t->dice[f][c] = zt_zobrist(BG_ZOBRIST_TABLE, k++);

    g->name = "backgammon";
    snprintf(g->title, sizeof g->title, "backgammon (no cube)%s",
             t->extended ? " extended inputs" : "");
    /* The default, Tesauro's inputs, is left out of the settings, so that a
     * spec written before the setting existed ("backgammon") still names
     * the same game and its nets keep loading. */
    snprintf(g->settings, sizeof g->settings, "%s", t->extended ? "inputs=extended" : "");
    g->state_size = sizeof(bg_state);
    g->num_actions = BG_NUM_ACTIONS;
    g->max_chance_outcomes = BG_NUM_ROLLS;
    g->max_game_length = MAX_GAME_PLIES;
    g->max_return = 3.0f; /* a backgammon */
    g->obs_kind = ZT_OBS_FEATURES;
    g->obs_shape[0] = 1;
    g->obs_shape[1] = 1;
    g->obs_shape[2] = OBS_FEATURES + (t->extended ? BG_NUM_FEATURES : 0);
    g->compact_size = COMPACT_BYTES;
    g->num_symmetries = 1;
    g->impl = t;
    g->reset = g_reset;
    g->current_player = g_current_player;
    g->legal = g_legal;
    g->apply = g_apply;
    g->chance_outcomes = g_chance_outcomes;
    g->returns = g_returns;
    g->observe = g_observe;
    g->chance_observer = g_chance_observer;
    g->encode = g_encode;
    g->decode = g_decode;
    g->sym_state = g_sym_state;
    g->sym_action = g_sym_action;
    g->hash = g_hash;
    g->to_text = g_to_text;
    g->from_text = g_from_text;
    g->render = g_render;
    g->action_to_text = g_action_to_text;
    g->action_from_text = g_action_from_text;
    g->destroy = destroy;
    return ZT_OK;
}

static zt_status new_pubeval(const zt_game *g, int depth, zt_player **out)
{
    (void)depth;
    return zt_player_new_pubeval(g, out);
}

static const zt_baseline bg_baselines[] = {
    {"pubeval", false, new_pubeval},
    {NULL, false, NULL},
};

const zt_game_def zt_game_backgammon = {
    .name = "backgammon",
    .summary = "backgammon without the doubling cube (gnubg ids, 1/2/3-point results)",
    .create = create,
    .baselines = bg_baselines,
    .arena_opponents = "random,pubeval",
};
