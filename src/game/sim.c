/* Sim on K_n (Simmons 1969; the Ramsey game R(k,k) generalised): players
 * alternately colour one uncoloured edge, player 0 red (R) and player 1 blue
 * (B). Completing a k-clique in one's own colour loses ("avoid", classic Sim
 * is K6 k=3) or wins ("make"); a full board with no such clique is a draw,
 * which can happen only when n < R(k,k). Actions are the edges in
 * lexicographic order (0,1),(0,2),...,(n-2,n-1). Settings: "vertices" (4..18),
 * "k" (3..6, at most vertices), "variant" (avoid|make). */
#include "game/sim.h"
#include "game/solver.h"

#include "core/alloc.h"
#include "core/hash.h"
#include "core/rng.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SIM_OBS_CHANNELS = 5,
    SIM_ALL_PERMS_MAX_N = 6, /* up to 6! = 720 symmetries: the whole group */
    SIM_SAMPLED_SYMS = 1024, /* otherwise a fixed sample of the group */
    SIM_ZOBRIST_TABLE = 0x53494d,
};

static const char *const sim_variants[] = {"avoid", "make", NULL};

static inline const zt_sim_impl *impl_of(const zt_game *g)
{
    return g->impl;
}

static void sim_reset(const zt_game *g, void *vs)
{
    memset(vs, 0, sizeof(zt_sim_state));
}

static int sim_current_player(const zt_game *g, const void *vs)
{
    const zt_sim_state *s = vs;
    return s->result != ZT_SIM_ONGOING ? ZT_TERMINAL : s->side;
}

static int sim_legal(const zt_game *g, const void *vs, uint16_t *actions)
{
    const zt_sim_state *s = vs;
    if (s->result != ZT_SIM_ONGOING) return 0;
    return zt_sim_free_edges(impl_of(g), s, actions);
}

static void sim_apply(const zt_game *g, void *vs, int action)
{
    const zt_sim_impl *im = impl_of(g);
    zt_sim_state *s = vs;
    ZT_ASSERT(s->result == ZT_SIM_ONGOING && action >= 0 && action < im->edges);
    int u = im->edge_u[action], v = im->edge_v[action], c = s->side;
    ZT_ASSERT(!((s->adj[0][u] | s->adj[1][u]) >> v & 1));
    bool clique = zt_sim_completes(s, c, u, v, im->k);
    s->adj[c][u] |= 1u << v;
    s->adj[c][v] |= 1u << u;
    s->coloured++;
    if (clique)
        s->result = (uint8_t)((c == 0) == im->make ? ZT_SIM_WIN0 : ZT_SIM_WIN1);
    else if (s->coloured == im->edges)
        s->result = ZT_SIM_DRAW;
    s->side ^= 1;
}

static int sim_chance_outcomes(const zt_game *g, const void *s, int *outcomes, float *probs)
{
    return 0;
}

static void sim_returns(const zt_game *g, const void *vs, float *r)
{
    const zt_sim_state *s = vs;
    r[0] = s->result == ZT_SIM_WIN0 ? 1.0f : s->result == ZT_SIM_WIN1 ? -1.0f : 0.0f;
    r[1] = -r[0];
}

/* Planes over vertex pairs (i, j), symmetric, zero on the diagonal: own
 * colour, opponent colour, uncoloured, and among the uncoloured edges those
 * that would complete a k-clique of the mover's / the opponent's colour
 * (the edges that decide Sim; cheap to compute, costly for a net to learn). */
static void sim_observe(const zt_game *g, const void *vs, float *obs)
{
    const zt_sim_impl *im = impl_of(g);
    const zt_sim_state *s = vs;
    int n = im->n, me = s->side;
    memset(obs, 0, sizeof(float) * (size_t)(n * n * SIM_OBS_CHANNELS));
    for (int a = 0; a < im->edges; a++) {
        int u = im->edge_u[a], v = im->edge_v[a];
        float ch[SIM_OBS_CHANNELS] = {0};
        if (s->adj[me][u] >> v & 1) {
            ch[0] = 1.0f;
        } else if (s->adj[me ^ 1][u] >> v & 1) {
            ch[1] = 1.0f;
        } else {
            ch[2] = 1.0f;
            ch[3] = zt_sim_completes(s, me, u, v, im->k) ? 1.0f : 0.0f;
            ch[4] = zt_sim_completes(s, me ^ 1, u, v, im->k) ? 1.0f : 0.0f;
        }
        memcpy(obs + (size_t)(u * n + v) * SIM_OBS_CHANNELS, ch, sizeof ch);
        memcpy(obs + (size_t)(v * n + u) * SIM_OBS_CHANNELS, ch, sizeof ch);
    }
}

/* Colour of edge a: 0 uncoloured, 1 red, 2 blue. */
static int edge_colour(const zt_sim_impl *im, const zt_sim_state *s, int a)
{
    int u = im->edge_u[a], v = im->edge_v[a];
    return (s->adj[0][u] >> v & 1) ? 1 : (s->adj[1][u] >> v & 1) ? 2 : 0;
}

/* Builds the state of a board given as one colour per edge (0 none, 1 red,
 * 2 blue), checking that it can arise in play: red moves first, and a
 * k-clique exists only in the colour of the last mover, all its k-cliques
 * through one edge (the move that ended the game). */
static zt_status set_board(const zt_game *g, const uint8_t *colour, zt_sim_state *out)
{
    const zt_sim_impl *im = impl_of(g);
    zt_sim_state s;
    memset(&s, 0, sizeof s);
    int count[3] = {0, 0, 0};
    for (int a = 0; a < im->edges; a++) {
        int c = colour[a];
        ZT_ASSERT(c >= 0 && c <= 2);
        count[c]++;
        if (c == 0) continue;
        s.adj[c - 1][im->edge_u[a]] |= 1u << im->edge_v[a];
        s.adj[c - 1][im->edge_v[a]] |= 1u << im->edge_u[a];
    }
    if (count[1] != count[2] && count[1] != count[2] + 1)
        return zt_fail(ZT_ERR_INVALID,
                       "%s: %d red and %d blue edges cannot arise (red moves first)", g->title,
                       count[1], count[2]);
    s.side = (uint8_t)(count[1] - count[2]);
    s.coloured = (uint8_t)(count[1] + count[2]);
    uint32_t all = (uint32_t)((1u << im->n) - 1);
    bool has[2] = {zt_sim_has_clique(s.adj[0], all, im->k),
                   zt_sim_has_clique(s.adj[1], all, im->k)};
    if (has[0] && has[1])
        return zt_fail(ZT_ERR_INVALID, "%s: both colours have a %d-clique", g->title, im->k);
    for (int c = 0; c < 2; c++) {
        if (!has[c]) continue;
        const char *name = c == 0 ? "red" : "blue";
        if (s.side != 1 - c)
            return zt_fail(ZT_ERR_INVALID, "%s: %s has a %d-clique but did not move last", g->title,
                           name, im->k);
        bool one_move = false;
        for (int a = 0; a < im->edges && !one_move; a++) {
            if (colour[a] != c + 1) continue;
            int u = im->edge_u[a], v = im->edge_v[a];
            s.adj[c][u] ^= 1u << v;
            s.adj[c][v] ^= 1u << u;
            one_move = !zt_sim_has_clique(s.adj[c], all, im->k);
            s.adj[c][u] ^= 1u << v;
            s.adj[c][v] ^= 1u << u;
        }
        if (!one_move)
            return zt_fail(ZT_ERR_INVALID, "%s: %s's %d-cliques cannot all come from its last move",
                           g->title, name, im->k);
        s.result = (uint8_t)((c == 0) == im->make ? ZT_SIM_WIN0 : ZT_SIM_WIN1);
    }
    if (s.result == ZT_SIM_ONGOING && s.coloured == im->edges) s.result = ZT_SIM_DRAW;
    *out = s;
    return ZT_OK;
}

/* Compact form: edge colours in base 3, five edges per byte (3^5 = 243). */
static void sim_encode(const zt_game *g, const void *vs, uint8_t *out)
{
    const zt_sim_impl *im = impl_of(g);
    memset(out, 0, g->compact_size);
    for (int a = im->edges - 1; a >= 0; a--)
        out[a / 5] = (uint8_t)(out[a / 5] * 3 + edge_colour(im, vs, a));
}

static zt_status sim_decode(const zt_game *g, const uint8_t *in, void *vs)
{
    const zt_sim_impl *im = impl_of(g);
    uint8_t colour[ZT_SIM_MAX_EDGES];
    for (size_t b = 0; b < g->compact_size; b++) {
        unsigned code = in[b];
        if (code >= 243)
            return zt_fail(ZT_ERR_CORRUPT, "%s: compact byte %zu is %u (>= 243)", g->title, b,
                           code);
        for (int i = 0; i < 5; i++, code /= 3) {
            int a = (int)b * 5 + i;
            if (a < im->edges)
                colour[a] = (uint8_t)(code % 3);
            else if (code % 3)
                return zt_fail(ZT_ERR_CORRUPT, "%s: compact code has colours past the last edge",
                               g->title);
        }
    }
    zt_sim_state s;
    if (set_board(g, colour, &s) != ZT_OK) return zt_fail(ZT_ERR_CORRUPT, "%s", zt_error_message());
    memcpy(vs, &s, sizeof s);
    return ZT_OK;
}

static void sim_sym_state(const zt_game *g, int sym, const void *vs, void *vout)
{
    const zt_sim_impl *im = impl_of(g);
    const zt_sim_state *s = vs;
    const uint8_t *perm = im->sym_perm + (size_t)sym * (size_t)im->n;
    zt_sim_state t = *s;
    memset(t.adj, 0, sizeof t.adj);
    for (int c = 0; c < 2; c++)
        for (int u = 0; u < im->n; u++) {
            uint32_t m = 0;
            for (uint32_t b = s->adj[c][u]; b; b &= b - 1) m |= 1u << perm[__builtin_ctz(b)];
            t.adj[c][perm[u]] = m;
        }
    memcpy(vout, &t, sizeof t);
}

static int sim_sym_action(const zt_game *g, int sym, int action)
{
    const zt_sim_impl *im = impl_of(g);
    return im->sym_edge[(size_t)sym * (size_t)im->edges + (size_t)action];
}

static uint64_t sim_hash(const zt_game *g, const void *vs)
{
    const zt_sim_impl *im = impl_of(g);
    const zt_sim_state *s = vs;
    uint64_t h = s->side ? im->zobrist_side : 0;
    for (int c = 0; c < 2; c++)
        for (int u = 0; u < im->n - 1; u++)
            for (uint32_t b = s->adj[c][u] & ~((2u << u) - 1); b; b &= b - 1)
                h ^= im->zobrist[c][im->row_base[u] + __builtin_ctz(b) - u - 1];
    return h;
}

/* "<edge colours in action order> <side>", e.g. "BR..RB...R....B R" on K6. */
static void sim_to_text(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    const zt_sim_impl *im = impl_of(g);
    const zt_sim_state *s = vs;
    char text[ZT_SIM_MAX_EDGES + 4];
    for (int a = 0; a < im->edges; a++) text[a] = ".RB"[edge_colour(im, s, a)];
    text[im->edges] = ' ';
    text[im->edges + 1] = s->side == 0 ? 'R' : 'B';
    text[im->edges + 2] = '\0';
    snprintf(buf, cap, "%s", text);
}

static zt_status sim_from_text(const zt_game *g, const char *text, void *vs)
{
    const zt_sim_impl *im = impl_of(g);
    uint8_t colour[ZT_SIM_MAX_EDGES];
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    int len = 0;
    while (p[len] && p[len] != ' ' && p[len] != '\t') len++;
    if (len != im->edges)
        return zt_fail(ZT_ERR_INVALID,
                       "%s: expected %d edge colours (R, B or .) then the side, got '%s'", g->title,
                       im->edges, text);
    for (int a = 0; a < len; a++) {
        char c = (char)toupper((unsigned char)p[a]);
        if (c != 'R' && c != 'B' && c != '.')
            return zt_fail(ZT_ERR_INVALID, "%s: edge %d-%d has colour '%c' (expected R, B or .)",
                           g->title, im->edge_u[a], im->edge_v[a], p[a]);
        colour[a] = c == 'R' ? 1 : c == 'B' ? 2 : 0;
    }
    p += len;
    while (*p == ' ' || *p == '\t') p++;
    char side = (char)toupper((unsigned char)*p);
    if (side != 'R' && side != 'B')
        return zt_fail(ZT_ERR_INVALID, "%s: side to move must be R or B in '%s'", g->title, text);
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p)
        return zt_fail(ZT_ERR_INVALID, "%s: unexpected '%s' after the side to move", g->title, p);
    zt_sim_state s;
    ZT_TRY(set_board(g, colour, &s));
    if (s.side != (side == 'R' ? 0 : 1))
        return zt_fail(ZT_ERR_INVALID, "%s: %c cannot be to move after %d coloured edges", g->title,
                       side, s.coloured);
    memcpy(vs, &s, sizeof s);
    return ZT_OK;
}

/* An adjacency matrix of colours with vertex labels, then the status. */
static void sim_render(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    const zt_sim_impl *im = impl_of(g);
    const zt_sim_state *s = vs;
    char out[2048];
    size_t len = 0;
    len += (size_t)snprintf(out + len, sizeof out - len, "  ");
    for (int v = 0; v < im->n; v++) len += (size_t)snprintf(out + len, sizeof out - len, "%3d", v);
    len += (size_t)snprintf(out + len, sizeof out - len, "\n");
    for (int u = 0; u < im->n; u++) {
        len += (size_t)snprintf(out + len, sizeof out - len, "%2d", u);
        for (int v = 0; v < im->n; v++) {
            char c = u == v                    ? ' '
                     : (s->adj[0][u] >> v & 1) ? 'R'
                     : (s->adj[1][u] >> v & 1) ? 'B'
                                               : '.';
            len += (size_t)snprintf(out + len, sizeof out - len, "  %c", c);
        }
        len += (size_t)snprintf(out + len, sizeof out - len, "\n");
    }
    static const char *status[] = {"", "red wins", "blue wins", "draw"};
    if (s->result == ZT_SIM_ONGOING)
        snprintf(out + len, sizeof out - len, "%s to move (%s)\n", s->side == 0 ? "red" : "blue",
                 g->title);
    else
        snprintf(out + len, sizeof out - len, "%s (%s)\n", status[s->result], g->title);
    snprintf(buf, cap, "%s", out);
}

static void sim_action_to_text(const zt_game *g, const void *s, int action, char *buf, size_t cap)
{
    const zt_sim_impl *im = impl_of(g);
    ZT_ASSERT(action >= 0 && action < im->edges);
    snprintf(buf, cap, "%d-%d", im->edge_u[action], im->edge_v[action]);
}

static bool parse_uint(const char **p, int *out)
{
    if (!isdigit((unsigned char)**p)) return false;
    long v = 0;
    while (isdigit((unsigned char)**p) && v < 100000) v = v * 10 + (*(*p)++ - '0');
    *out = (int)v;
    return !isdigit((unsigned char)**p);
}

/* "u-v" (either order) or the edge's action number. Legality is the
 * caller's check against legal(). */
static zt_status sim_action_from_text(const zt_game *g, const void *s, const char *text,
                                      int *action)
{
    const zt_sim_impl *im = impl_of(g);
    const char *p = text;
    int u, v;
    while (*p == ' ' || *p == '\t') p++;
    if (!parse_uint(&p, &u))
        return zt_fail(ZT_ERR_INVALID, "%s: expected an edge 'u-v' or an edge number, got '%s'",
                       g->title, text);
    bool pair = *p == '-';
    if (pair) {
        p++;
        if (!parse_uint(&p, &v))
            return zt_fail(ZT_ERR_INVALID, "%s: expected an edge 'u-v', got '%s'", g->title, text);
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p)
        return zt_fail(ZT_ERR_INVALID, "%s: expected an edge 'u-v' or an edge number, got '%s'",
                       g->title, text);
    if (!pair) {
        if (u >= im->edges)
            return zt_fail(ZT_ERR_INVALID, "%s: edge number %d is not below %d", g->title, u,
                           im->edges);
        *action = u;
        return ZT_OK;
    }
    if (u >= im->n || v >= im->n || u == v)
        return zt_fail(ZT_ERR_INVALID, "%s: '%s' is not an edge of K%d", g->title, text, im->n);
    *action = zt_sim_edge(im, u, v);
    return ZT_OK;
}

static void sim_destroy(zt_game *g)
{
    zt_sim_impl *im = (zt_sim_impl *)g->impl;
    if (!im) return;
    free(im->sym_perm);
    free(im->sym_edge);
    free(im);
    g->impl = NULL;
}

/* Advances perm to the next permutation in lexicographic order; false after
 * the last one. */
static bool next_permutation(uint8_t *perm, int n)
{
    int i = n - 2;
    while (i >= 0 && perm[i] >= perm[i + 1]) i--;
    if (i < 0) return false;
    int j = n - 1;
    while (perm[j] <= perm[i]) j--;
    uint8_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = perm[a];
        perm[a] = perm[b];
        perm[b] = t;
    }
    return true;
}

/* Vertex permutations used as symmetries (every relabelling preserves the
 * game): the whole symmetric group for n <= 6, else SIM_SAMPLED_SYMS distinct
 * permutations drawn from a fixed seed. Identity first either way. */
static void build_symmetries(zt_sim_impl *im)
{
    int n = im->n;
    long group = 1;
    for (int i = 2; i <= n; i++) group *= i;
    im->num_syms = n <= SIM_ALL_PERMS_MAX_N ? (int)group : SIM_SAMPLED_SYMS;
    im->sym_perm = zt_xmalloc((size_t)im->num_syms * (size_t)n);
    im->sym_edge = zt_xmalloc((size_t)im->num_syms * (size_t)im->edges);
    uint8_t perm[ZT_SIM_MAX_N];
    for (int i = 0; i < n; i++) perm[i] = (uint8_t)i;
    memcpy(im->sym_perm, perm, (size_t)n);
    if (n <= SIM_ALL_PERMS_MAX_N) {
        for (int s = 1; s < im->num_syms; s++) {
            ZT_ASSERT(next_permutation(perm, n));
            memcpy(im->sym_perm + (size_t)s * (size_t)n, perm, (size_t)n);
        }
    } else {
        zt_rng rng;
        zt_rng_seed(&rng, 0x5133u, (uint64_t)n);
        int have = 1;
        while (have < im->num_syms) {
            for (int i = n - 1; i > 0; i--) {
                int j = (int)zt_rng_below(&rng, (uint32_t)i + 1);
                uint8_t t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            bool seen = false;
            for (int s = 0; s < have && !seen; s++)
                seen = memcmp(im->sym_perm + (size_t)s * (size_t)n, perm, (size_t)n) == 0;
            if (seen) continue;
            memcpy(im->sym_perm + (size_t)have * (size_t)n, perm, (size_t)n);
            have++;
        }
    }
    for (int s = 0; s < im->num_syms; s++) {
        const uint8_t *p = im->sym_perm + (size_t)s * (size_t)n;
        for (int a = 0; a < im->edges; a++)
            im->sym_edge[(size_t)s * (size_t)im->edges + (size_t)a] =
                (uint8_t)zt_sim_edge(im, p[im->edge_u[a]], p[im->edge_v[a]]);
    }
}

static zt_status sim_create(zt_config *cfg, zt_game *g)
{
    int64_t n, k;
    int variant;
    ZT_TRY(zt_config_int(cfg, "vertices", 6, 4, ZT_SIM_MAX_N, &n));
    ZT_TRY(zt_config_int(cfg, "k", 3, 3, 6, &k));
    ZT_TRY(zt_config_choice(cfg, "variant", "avoid", sim_variants, &variant));
    if (k > n)
        return zt_fail(ZT_ERR_INVALID, "key 'k': %d is more than vertices=%d", (int)k, (int)n);

    zt_sim_impl *im = zt_xcalloc(1, sizeof *im);
    im->n = (int)n;
    im->k = (int)k;
    im->make = variant == 1;
    im->edges = im->n * (im->n - 1) / 2;
    for (int u = 0, a = 0; u < im->n; u++) {
        im->row_base[u] = (uint8_t)a;
        for (int v = u + 1; v < im->n; v++, a++) {
            im->edge_u[a] = (uint8_t)u;
            im->edge_v[a] = (uint8_t)v;
        }
    }
    for (int c = 0; c < 2; c++)
        for (int a = 0; a < im->edges; a++)
            im->zobrist[c][a] = zt_zobrist(SIM_ZOBRIST_TABLE, (uint32_t)(c * ZT_SIM_MAX_EDGES + a));
    im->zobrist_side = zt_zobrist(SIM_ZOBRIST_TABLE, 2 * ZT_SIM_MAX_EDGES);
    build_symmetries(im);

    g->name = "sim";
    snprintf(g->title, sizeof g->title, "sim K%d k=%d %s", im->n, im->k, sim_variants[variant]);
    snprintf(g->settings, sizeof g->settings, "vertices=%d k=%d variant=%s", im->n, im->k,
             sim_variants[variant]);
    g->state_size = sizeof(zt_sim_state);
    g->num_actions = im->edges;
    g->max_chance_outcomes = 0;
    g->max_game_length = im->edges;
    g->max_return = 1.0f;
    g->obs_kind = ZT_OBS_PLANES;
    g->obs_shape[0] = im->n;
    g->obs_shape[1] = im->n;
    g->obs_shape[2] = SIM_OBS_CHANNELS;
    g->compact_size = (size_t)(im->edges + 4) / 5;
    g->num_symmetries = im->num_syms;
    g->impl = im;
    g->reset = sim_reset;
    g->current_player = sim_current_player;
    g->legal = sim_legal;
    g->apply = sim_apply;
    g->chance_outcomes = sim_chance_outcomes;
    g->returns = sim_returns;
    g->observe = sim_observe;
    g->encode = sim_encode;
    g->decode = sim_decode;
    g->sym_state = sim_sym_state;
    g->sym_action = sim_sym_action;
    g->hash = sim_hash;
    g->to_text = sim_to_text;
    g->from_text = sim_from_text;
    g->render = sim_render;
    g->action_to_text = sim_action_to_text;
    g->action_from_text = sim_action_from_text;
    g->destroy = sim_destroy;
    return ZT_OK;
}

/* The solved positions of classic Sim (K6, triangles, avoid); other
 * instances have none. */
static const zt_position_set sim_sets[] = {{"sim/sim_k6_positions.txt", ZT_JUDGE_OPTIMAL}};

static int sim_position_sets(const zt_game *g, const zt_position_set **sets)
{
    const zt_sim_impl *im = g->impl;
    if (im->n != 6 || im->k != 3 || im->make) return 0;
    *sets = sim_sets;
    return 1;
}

static const zt_baseline sim_baselines[] = {
    {"negamax", true, zt_player_new_negamax_sim},
    {NULL, false, NULL},
};

const zt_game_def zt_game_sim = {
    .name = "sim",
    .summary = "Sim on K_n: colour edges, a k-clique in your colour loses (avoid) or wins (make)",
    .create = sim_create,
    .solver = zt_solver_new_sim,
    .position_sets = sim_position_sets,
    .baselines = sim_baselines,
    .arena_opponents = "random,negamax:2",
    .arena_positions_limit = 500,
};
