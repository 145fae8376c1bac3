/* Tests of the MuZero model (src/agent/mz_model.c) under the search: its
 * outputs are the net's (root masked by the real game, players alternating
 * below it; a one-player game's player kept and its values and rewards read
 * back through the game's value transform), its hidden-state store holds
 * exactly one reference per evaluated node of every tree after each move
 * (PUCT and Gumbel, the root cache on, tree reuse asked for and declined,
 * also with evaluator calls failing) and none once the search is freed, and
 * whole games searched over a learned model play only legal moves; a
 * Stochastic MuZero model's afterstates are chance nodes over its codes with
 * sigma's probabilities, in batches that mix decision and chance states;
 * with a to-play head (backgammon) the player after g is the one the head
 * names; the evaluator counts each kind of call at its batch size apart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "agent/mz_model.h"
#include "core/alloc.h"
#include "core/fault.h"
#include "core/rng.h"
#include "game/game.h"
#include "nn/nn.h"
#include "search/search.h"
#include "search/tree.h"

#include "zt_test.h"

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        CHECK(s_ == ZT_OK, "%s", zt_error_message());                                              \
    } while (0)

static uint64_t seed;

/* codes > 0: a Stochastic MuZero net with that many chance codes. */
static zt_net *small_net(const zt_game *g, zt_rng *r, int codes)
{
    zt_net_config c;
    memset(&c, 0, sizeof c);
    c.kind = ZT_NET_MUZERO;
    c.in_h = g->obs_shape[0], c.in_w = g->obs_shape[1], c.in_c = g->obs_shape[2];
    c.num_actions = g->num_actions;
    c.value_kind = ZT_VALUE_SCALAR;
    c.value_hidden = 8;
    c.channels = 8;
    c.blocks = 1;
    c.dyn_blocks = 1;
    c.pred_blocks = 0;
    c.policy_channels = 2;
    c.value_channels = 1;
    c.chance_codes = codes;
    /* backgammon: turns of several moves, so g's to-play head */
    c.turn_head = zt_game_num_players(g) == 2 && g->max_chance_outcomes > 0;
    zt_net *net = NULL;
    CHECK_OK(zt_net_new(&c, "auto", ZT_PRECISION_FP32, 1, &net));
    if (net) zt_net_init(net, r);
    return net;
}

/* Draws chance outcomes in `state` until a player is to move (2048's
 * opening tiles). */
static void settle_chance(const zt_game *g, void *state, zt_rng *r)
{
    while (g->current_player(g, state) == ZT_CHANCE) {
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES];
        int k = g->chance_outcomes(g, state, outcomes, probs);
        g->apply(g, state, outcomes[zt_rng_categorical(r, probs, k)]);
    }
}

/* The model's outputs against direct calls of the net. */
static void test_outputs(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 1);
    zt_game *g;
    CHECK_OK(zt_game_new("tictactoe", NULL, &g));
    zt_net *net = small_net(g, &r, 0);
    zt_net_evaluator *ne;
    CHECK_OK(zt_net_evaluator_new(net, 4, &ne));
    zt_evaluator ev = zt_net_evaluator_get(ne);
    zt_model *m;
    CHECK_OK(zt_mz_model_new(g, &ev, 4, &m));
    int A = g->num_actions;
    uint8_t root[ZT_MAX_STATE_BYTES];
    g->reset(g, root);
    g->apply(g, root, 4); /* X in the centre: O to move */
    uint8_t st[2][32];
    float logits[2][9], value[2], reward[2], outp[2];
    int8_t kind[2], player[2];
    int nout[2];
    zt_model_output out = {.logits = logits[0],
                           .value = value,
                           .reward = reward,
                           .kind = kind,
                           .player = player,
                           .num_outcomes = nout,
                           .outcomes = NULL,
                           .outcome_probs = outp};
    const void *roots[1] = {root};
    void *states[1] = {st[0]};
    CHECK(m->state_size <= sizeof st[0], "state size %zu", m->state_size);
    CHECK_OK(m->initial(m, 1, roots, states, &out));
    size_t hs = zt_net_hidden_size(zt_net_config_of(net));
    float *h = zt_xmalloc(hs * sizeof(float)), *h2 = zt_xmalloc(hs * sizeof(float));
    float pl[9], v, rw;
    CHECK_OK(zt_net_initial(net, 1, (float[27]){0}, h, pl, &v)); /* warm, then the real one */
    float obs[27];
    g->observe(g, root, obs);
    CHECK_OK(zt_net_initial(net, 1, obs, h, pl, &v));
    CHECK(kind[0] == ZT_NODE_DECISION && player[0] == 1, "root kind %d player %d", kind[0],
          player[0]);
    CHECK(value[0] == v && reward[0] == 0, "root value %g, net %g", value[0], v);
    for (int a = 0; a < A; a++)
        CHECK(a == 4 ? isinf(logits[0][a]) && logits[0][a] < 0 : logits[0][a] == pl[a],
              "root logit %d: %g (net %g)", a, logits[0][a], pl[a]);
    /* below the root: g then f, every action allowed, the other player */
    int action = 4; /* illegal in the real game: the model does not know */
    const void *from[1] = {st[0]};
    void *to[1] = {st[1]};
    out.logits = logits[1];
    CHECK_OK(m->recurrent(m, 1, from, &action, to, &out));
    CHECK_OK(zt_net_recurrent(net, 1, h, &action, h2, &rw, pl, &v, NULL));
    CHECK(kind[0] == ZT_NODE_DECISION && player[0] == 0, "child kind %d player %d", kind[0],
          player[0]);
    CHECK(value[0] == v && reward[0] == rw, "child value %g reward %g, net %g %g", value[0],
          reward[0], v, rw);
    for (int a = 0; a < A; a++) CHECK(logits[1][a] == pl[a], "child logit %d", a);
    CHECK(zt_mz_model_live_states(m) == 2, "two states stored, %lld held",
          (long long)zt_mz_model_live_states(m));
    const void *both[2] = {st[0], st[1]};
    m->retain(m, 1, both);
    m->release(m, 2, both);
    CHECK(zt_mz_model_live_states(m) == 1, "retain + release");
    m->release(m, 1, both);
    CHECK(zt_mz_model_live_states(m) == 0, "all released");
    free(h);
    free(h2);
    zt_model_free(m);
    zt_net_evaluator_free(ne);
    zt_net_free(net);
    zt_game_free(g);
}

static int64_t evaluated_nodes(const zt_search *s, int trees)
{
    int64_t n = 0;
    for (int t = 0; t <= trees; t++) { /* tree `trees` is the root cache's */
        const zt_tree *tr = zt_search_tree(s, t);
        for (int i = 0; i < tr->num_nodes; i++) n += tr->nodes[i].kind != ZT_NODE_NEW;
    }
    return n;
}

/* Self-play-like games over the model: after every move the store's
 * references equal the evaluated nodes; every move is legal in the real
 * game; nothing is left after the search is freed. fail_at > 0 makes every
 * fail_at-th evaluator call fail (scheduled anew after each failure). */
static void check_lifetime(const char *game_name, zt_search_algorithm alg, int fail_at, int codes)
{
    const char *an = alg == ZT_SEARCH_GUMBEL ? "gumbel" : "puct";
    enum { G = 4 };
    zt_rng r;
    zt_rng_seed(&r, seed, 2);
    zt_game *g;
    CHECK_OK(zt_game_new(game_name, NULL, &g));
    zt_net *net = small_net(g, &r, codes);
    zt_net_evaluator *ne;
    CHECK_OK(zt_net_evaluator_new(net, G * 2, &ne));
    zt_evaluator ev = zt_net_evaluator_get(ne);
    zt_model *m;
    CHECK_OK(zt_mz_model_new(g, &ev, G * 2, &m));
    zt_search_config c;
    zt_search_config_default(&c, alg);
    c.num_simulations = 16;
    c.leaves_per_round = 2;
    c.node_capacity = 400;
    c.edge_capacity = 4000;
    c.tree_reuse = true;
    zt_search *s = NULL;
    CHECK_OK(zt_search_new(&c, m, G, &s));
    /* a game with dice (backgammon) rolls them between the searches, has
     * no root cache (its start is a roll) and need not finish a game */
    bool dice = g->max_chance_outcomes > 0;
    uint8_t start[ZT_MAX_STATE_BYTES], game[G][ZT_MAX_STATE_BYTES];
    g->reset(g, start);
    settle_chance(g, start, &r);
    if (!dice) CHECK_OK(zt_search_build_root_cache(s, start, 32));
    for (int t = 0; t < G; t++) memcpy(game[t], start, g->state_size);
    if (fail_at) zt_fault_set(ZT_FAULT_EVAL, (uint64_t)fail_at, false, 0);
    int failures = 0, moves = 0, finished = 0, illegal = 0;
    for (int round = 0; round < 40; round++) {
        for (int t = 0; t < G; t++) zt_search_begin(s, t, game[t]);
        zt_status st = zt_search_run(s);
        if (st != ZT_OK) {
            failures++;
            if (fail_at) zt_fault_set(ZT_FAULT_EVAL, (uint64_t)fail_at, false, 0);
            CHECK(zt_mz_model_live_states(m) == evaluated_nodes(s, G),
                  "%s %s after a failure: %lld references, %lld nodes", game_name, an,
                  (long long)zt_mz_model_live_states(m), (long long)evaluated_nodes(s, G));
            continue;
        }
        for (int t = 0; t < G; t++) {
            int a = zt_search_choose(s, t, 1.0f);
            uint16_t legal[ZT_MAX_ACTIONS];
            int n = g->legal(g, game[t], legal);
            bool ok = false;
            for (int i = 0; i < n; i++) ok = ok || legal[i] == a;
            illegal += !ok;
            if (!ok) break;
            zt_search_played(s, t, a);
            g->apply(g, game[t], a);
            settle_chance(g, game[t], &r);
            moves++;
            if (g->current_player(g, game[t]) == ZT_TERMINAL) {
                zt_search_forget(s, t);
                memcpy(game[t], start, g->state_size);
                finished++;
            }
        }
        CHECK(zt_mz_model_live_states(m) == evaluated_nodes(s, G),
              "%s %s round %d: %lld references held, %lld evaluated nodes", game_name, an, round,
              (long long)zt_mz_model_live_states(m), (long long)evaluated_nodes(s, G));
        if (round == 20 && !dice) {
            CHECK(zt_search_build_root_cache(s, start, 32) == ZT_OK || fail_at > 0, "rebuild: %s",
                  zt_error_message());
            CHECK(zt_mz_model_live_states(m) == evaluated_nodes(s, G), "root cache rebuilt");
        }
    }
    zt_fault_reset();
    printf("%s %s%s%s: %d moves, %d games finished, %d failed searches\n", game_name, an,
           codes ? " stochastic" : "", fail_at ? " with failures" : "", moves, finished, failures);
    CHECK(illegal == 0, "%s %s: %d illegal moves chosen", game_name, an, illegal);
    CHECK(finished > 0 || dice, "%s %s: no game finished", game_name, an);
    CHECK(fail_at == 0 || failures > 0, "no failure injected");
    zt_search_free(s);
    CHECK(zt_mz_model_live_states(m) == 0, "%s %s: search freed, %lld references leaked", game_name,
          an, (long long)zt_mz_model_live_states(m));
    zt_model_free(m);
    zt_net_evaluator_free(ne);
    zt_net_free(net);
    zt_game_free(g);
}

/* A one-player game (2048): the model keeps player 0 at every depth (so
 * the search never negates), and reads the net's value and reward back
 * through zt_game_value_from_net, the inverse of the targets' transform. */
static void test_one_player(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 5);
    zt_game *g;
    CHECK_OK(zt_game_new("2048", NULL, &g));
    if (!g) return;
    zt_net *net = small_net(g, &r, 0);
    zt_net_evaluator *ne;
    CHECK_OK(zt_net_evaluator_new(net, 4, &ne));
    zt_evaluator ev = zt_net_evaluator_get(ne);
    zt_model *m;
    CHECK_OK(zt_mz_model_new(g, &ev, 4, &m));
    int A = g->num_actions;
    uint8_t root[ZT_MAX_STATE_BYTES];
    g->reset(g, root);
    settle_chance(g, root, &r); /* the opening tiles */
    CHECK(g->current_player(g, root) == 0 && A <= 16, "a 2048 decision at the root");
    uint8_t st[4][32];
    float logits[16], value[1], reward[1], outp[1];
    int8_t kind[1], player[1];
    int nout[1];
    zt_model_output out = {.logits = logits,
                           .value = value,
                           .reward = reward,
                           .kind = kind,
                           .player = player,
                           .num_outcomes = nout,
                           .outcomes = NULL,
                           .outcome_probs = outp};
    const void *roots[1] = {root};
    void *states[1] = {st[0]};
    CHECK_OK(m->initial(m, 1, roots, states, &out));
    size_t hs = zt_net_hidden_size(zt_net_config_of(net));
    float *h = zt_xmalloc(hs * sizeof(float)), *h2 = zt_xmalloc(hs * sizeof(float));
    float *obs = zt_xmalloc((size_t)zt_game_obs_size(g) * sizeof(float));
    float pl[16], v, rw;
    g->observe(g, root, obs);
    CHECK_OK(zt_net_initial(net, 1, obs, h, pl, &v));
    CHECK(player[0] == 0 && value[0] == zt_game_value_from_net(g, v) && reward[0] == 0,
          "root: player %d value %g (net %g)", player[0], value[0], v);
    for (int depth = 1; depth <= 3; depth++) {
        int action = depth % A;
        const void *from[1] = {st[depth - 1]};
        void *to[1] = {st[depth]};
        CHECK_OK(m->recurrent(m, 1, from, &action, to, &out));
        CHECK_OK(zt_net_recurrent(net, 1, h, &action, h2, &rw, pl, &v, NULL));
        memcpy(h, h2, hs * sizeof(float));
        CHECK(kind[0] == ZT_NODE_DECISION && player[0] == 0,
              "depth %d: player %d, the one player throughout", depth, player[0]);
        CHECK(value[0] == zt_game_value_from_net(g, v) && reward[0] == zt_game_value_from_net(g, rw),
              "depth %d: value %g reward %g, net %g %g", depth, value[0], reward[0], v, rw);
        /* from_net is odd and increasing: the sign survives, no negation */
        CHECK((value[0] > 0) == (v > 0) && (reward[0] > 0) == (rw > 0), "depth %d: signs", depth);
    }
    const void *all[4] = {st[0], st[1], st[2], st[3]};
    m->release(m, 4, all);
    CHECK(zt_mz_model_live_states(m) == 0, "all released");
    free(h);
    free(h2);
    free(obs);
    zt_model_free(m);
    zt_net_evaluator_free(ne);
    zt_net_free(net);
    zt_game_free(g);
}

/* Stochastic MuZero: from a decision state the model steps phi then psi to
 * an afterstate, a chance node of the acting player over the C codes with
 * sigma's softmax as probabilities and Q as its value; from an afterstate
 * it steps g then f with a code to a decision state (the other player in a
 * two-player game). One call mixes both kinds, the chance state first. */
static void check_stochastic_outputs(const char *game_name)
{
    enum { Z = 6 };
    zt_rng r;
    zt_rng_seed(&r, seed, 6);
    zt_game *g;
    CHECK_OK(zt_game_new(game_name, NULL, &g));
    if (!g) return;
    bool one = zt_game_num_players(g) == 1;
    zt_net *net = small_net(g, &r, Z);
    zt_net_evaluator *ne;
    CHECK_OK(zt_net_evaluator_new(net, 4, &ne));
    zt_evaluator ev = zt_net_evaluator_get(ne);
    zt_model *m;
    CHECK_OK(zt_mz_model_new(g, &ev, 4, &m));
    CHECK(m->max_outcomes == Z, "max_outcomes %d", m->max_outcomes);
    int A = g->num_actions;
    uint8_t root[ZT_MAX_STATE_BYTES];
    g->reset(g, root);
    settle_chance(g, root, &r);
    int mover = g->current_player(g, root);
    uint8_t st[4][32];
    float logits[2 * ZT_MAX_ACTIONS], value[2], reward[2], outp[2 * Z];
    int8_t kind[2], player[2];
    int nout[2], outc[2 * Z];
    zt_model_output out = {.logits = logits,
                           .value = value,
                           .reward = reward,
                           .kind = kind,
                           .player = player,
                           .num_outcomes = nout,
                           .outcomes = outc,
                           .outcome_probs = outp};
    const void *roots[1] = {root};
    void *states[1] = {st[0]};
    CHECK_OK(m->initial(m, 1, roots, states, &out));
    size_t hs = zt_net_hidden_size(zt_net_config_of(net)), obs_n = (size_t)zt_game_obs_size(g);
    float *h = zt_xmalloc(hs * sizeof(float)), *after = zt_xmalloc(hs * sizeof(float)),
          *h2 = zt_xmalloc(hs * sizeof(float)), *obs = zt_xmalloc(obs_n * sizeof(float));
    float pl[ZT_MAX_ACTIONS], sigma[Z], v, q, rw;
    g->observe(g, root, obs);
    CHECK_OK(zt_net_initial(net, 1, obs, h, pl, &v));
    /* the root's action to an afterstate */
    uint16_t legal[ZT_MAX_ACTIONS];
    CHECK(g->legal(g, root, legal) > 0, "a legal action at the root");
    int action = legal[0];
    const void *from[2] = {st[0], NULL};
    void *to[2] = {st[1], NULL};
    CHECK_OK(m->recurrent(m, 1, from, &action, to, &out));
    CHECK_OK(zt_net_afterstate(net, 1, h, &action, after, sigma, &q));
    float qv = one ? zt_game_value_from_net(g, q) : q;
    CHECK(kind[0] == ZT_NODE_CHANCE && player[0] == mover && nout[0] == Z,
          "%s afterstate: kind %d player %d outcomes %d", game_name, kind[0], player[0], nout[0]);
    CHECK(value[0] == qv && reward[0] == 0, "%s afterstate value %g, net's Q %g", game_name, value[0],
          qv);
    double zsum = 0, psum = 0, worst = 0;
    for (int z = 0; z < Z; z++) zsum += exp(sigma[z]);
    for (int z = 0; z < Z; z++) {
        CHECK(outc[z] == z, "outcome %d is code %d", z, outc[z]);
        psum += outp[z];
        worst = fmax(worst, fabs(outp[z] - exp(sigma[z]) / zsum));
    }
    CHECK(fabs(psum - 1) < 1e-5 && worst < 1e-6, "%s: outcome probabilities are not sigma's "
          "softmax (sum %g, worst %.2e)", game_name, psum, worst);
    /* one call: the afterstate with code 3 (first), the root with action */
    int acts[2] = {3, action};
    from[0] = st[1], from[1] = st[0];
    to[0] = st[2], to[1] = st[3];
    CHECK_OK(m->recurrent(m, 2, from, acts, to, &out));
    CHECK_OK(zt_net_recurrent(net, 1, after, &acts[0], h2, &rw, pl, &v, NULL));
    int next = one ? mover : 1 - mover;
    CHECK(kind[0] == ZT_NODE_DECISION && player[0] == next && nout[0] == 0,
          "%s after chance: kind %d player %d", game_name, kind[0], player[0]);
    float vv = one ? zt_game_value_from_net(g, v) : v, rr = one ? zt_game_value_from_net(g, rw) : rw;
    CHECK(value[0] == vv && reward[0] == rr, "%s after chance: value %g reward %g, net %g %g",
          game_name, value[0], reward[0], vv, rr);
    for (int a = 0; a < A; a++) CHECK(logits[a] == pl[a], "%s after chance: logit %d", game_name, a);
    CHECK(kind[1] == ZT_NODE_CHANCE && value[1] == qv && player[1] == mover,
          "%s: the mixed call's afterstate (kind %d value %g)", game_name, kind[1], value[1]);
    CHECK(zt_mz_model_live_states(m) == 4, "four states stored");
    const void *all[4] = {st[0], st[1], st[2], st[3]};
    m->release(m, 4, all);
    CHECK(zt_mz_model_live_states(m) == 0, "all released");
    free(h), free(after), free(h2), free(obs);
    zt_model_free(m);
    zt_net_evaluator_free(ne);
    zt_net_free(net);
    zt_game_free(g);
}

/* An evaluator over a net with a to-play head whose turn outputs are
 * replaced by `forced` (row i gets forced[i % 4]), so both answers occur. */
typedef struct forced_turns {
    zt_evaluator inner;
    float forced[4];
    int asked; /* calls that asked for the turn output */
} forced_turns;

static zt_status forced_recurrent(void *ctx, int B, const float *hidden, const int *actions,
                                  float *next_hidden, float *reward, float *policy_logits,
                                  float *value, float *turn)
{
    forced_turns *f = ctx;
    ZT_TRY(f->inner.recurrent(f->inner.ctx, B, hidden, actions, next_hidden, reward, policy_logits,
                              value, turn));
    if (turn) {
        f->asked++;
        for (int i = 0; i < B; i++) turn[i] = f->forced[i % 4];
    }
    return ZT_OK;
}

static zt_status forced_initial(void *ctx, int B, const float *obs, float *hidden, float *policy,
                                float *value)
{
    forced_turns *f = ctx;
    return f->inner.initial(f->inner.ctx, B, obs, hidden, policy, value);
}

static zt_status forced_afterstate(void *ctx, int B, const float *hidden, const int *actions,
                                   float *after, float *chance_logits, float *q)
{
    forced_turns *f = ctx;
    return f->inner.afterstate(f->inner.ctx, B, hidden, actions, after, chance_logits, q);
}

/* Backgammon (a turn is several moves by one player): with the net's
 * to-play head the model gives the state after g the other player where
 * the head says the turn passed (probability >= 0.5), else the same one;
 * with Stochastic MuZero the afterstate keeps the acting player and the
 * head decides after the code. The net's own head gives probabilities. */
static void check_turns(int codes)
{
    enum { B = 8, A = 150, O = 64 };
    zt_rng r;
    zt_rng_seed(&r, seed, 7);
    zt_game *g;
    CHECK_OK(zt_game_new("backgammon", NULL, &g));
    if (!g) return;
    CHECK(g->num_actions == A && codes <= O, "backgammon's action count");
    zt_net *net = small_net(g, &r, codes);
    CHECK(zt_net_config_of(net)->turn_head == 1, "backgammon's net has a to-play head");
    zt_net_evaluator *ne;
    CHECK_OK(zt_net_evaluator_new(net, B, &ne));
    forced_turns f = {.inner = zt_net_evaluator_get(ne), .forced = {0.9f, 0.1f, 0.5f, 0.49f}};
    CHECK(f.inner.turns, "the evaluator says the net has a to-play head");
    zt_evaluator ev = f.inner;
    ev.ctx = &f;
    ev.initial = forced_initial;
    ev.recurrent = forced_recurrent;
    ev.afterstate = f.inner.afterstate ? forced_afterstate : NULL;
    zt_model *m;
    CHECK_OK(zt_mz_model_new(g, &ev, B, &m));
    uint8_t root[ZT_MAX_STATE_BYTES];
    g->reset(g, root);
    settle_chance(g, root, &r);
    int p0 = g->current_player(g, root);
    uint16_t legal[ZT_MAX_ACTIONS];
    int nl = g->legal(g, root, legal);
    static float logits[B * A];
    float value[B], reward[B], probs[B * O];
    int8_t kind[B], player[B];
    int nout[B], outcomes[B * O];
    zt_model_output out = {.logits = logits,
                           .value = value,
                           .reward = reward,
                           .kind = kind,
                           .player = player,
                           .num_outcomes = nout,
                           .outcomes = outcomes,
                           .outcome_probs = probs};
    static uint8_t st[3][B][64];
    CHECK(m->state_size <= sizeof st[0][0], "state size %zu", m->state_size);
    const void *roots[1] = {root};
    void *rs[1] = {st[0][0]};
    CHECK_OK(m->initial(m, 1, roots, rs, &out));
    CHECK(player[0] == p0, "the root's player");
    const void *from[B];
    void *to[B], *to2[B];
    int actions[B];
    for (int i = 0; i < B; i++) {
        from[i] = st[0][0];
        to[i] = st[1][i];
        to2[i] = st[2][i];
        actions[i] = legal[i % nl];
    }
    CHECK_OK(m->recurrent(m, B, from, actions, to, &out));
    if (codes) {
        /* afterstates: the acting player's chance nodes; then a code each */
        for (int i = 0; i < B; i++)
            CHECK(kind[i] == ZT_NODE_CHANCE && player[i] == p0, "afterstate %d: kind %d player %d",
                  i, kind[i], player[i]);
        for (int i = 0; i < B; i++) {
            from[i] = st[1][i];
            actions[i] = i % codes;
        }
        CHECK_OK(m->recurrent(m, B, from, actions, to2, &out));
    }
    CHECK(f.asked > 0, "the model asked for the to-play output");
    for (int i = 0; i < B; i++) {
        int want = f.forced[i % 4] >= 0.5f ? 1 - p0 : p0;
        CHECK(kind[i] == ZT_NODE_DECISION && player[i] == want,
              "%s state %d: turn %.2f, player %d, want %d", codes ? "stochastic" : "plain", i,
              f.forced[i % 4], player[i], want);
    }
    /* the net's own head: probabilities, from a direct call */
    size_t hs = zt_net_hidden_size(zt_net_config_of(net));
    float *h = zt_xmalloc(B * hs * sizeof(float)), *h2 = zt_xmalloc(B * hs * sizeof(float));
    float *obs = zt_xmalloc((size_t)g->obs_shape[2] * sizeof(float));
    g->observe(g, root, obs);
    float rw[B], v[B], turn[B];
    CHECK_OK(zt_net_initial(net, 1, obs, h, logits, v));
    for (int i = 1; i < B; i++) memcpy(h + i * hs, h, hs * sizeof(float));
    for (int i = 0; i < B; i++) actions[i] = legal[i % nl];
    if (codes) {
        float *after = zt_xmalloc(B * hs * sizeof(float));
        CHECK_OK(zt_net_afterstate(net, B, h, actions, after, probs, v));
        memcpy(h, after, B * hs * sizeof(float));
        free(after);
        for (int i = 0; i < B; i++) actions[i] = i % codes;
    }
    for (int i = 0; i < B; i++) turn[i] = -1;
    CHECK_OK(zt_net_recurrent(net, B, h, actions, h2, rw, logits, v, turn));
    for (int i = 0; i < B; i++)
        CHECK(turn[i] > 0 && turn[i] < 1, "turn %d: %g is not a probability", i, turn[i]);
    printf("backgammon %s: players after g follow the to-play head (net: %.3f)\n",
           codes ? "stochastic" : "plain", turn[0]);
    const void *all[2 * B + 1];
    int n = 0;
    all[n++] = st[0][0];
    for (int i = 0; i < B; i++) all[n++] = st[1][i];
    for (int i = 0; codes && i < B; i++) all[n++] = st[2][i];
    m->release(m, n, all);
    CHECK(zt_mz_model_live_states(m) == 0, "all released");
    free(h), free(h2), free(obs);
    zt_model_free(m);
    zt_net_evaluator_free(ne);
    zt_net_free(net);
    zt_game_free(g);
}

/* The evaluator counts each kind of call at its batch size apart (what
 * `zeroth bench selfplay` times the net alone on), and keeps the counts
 * when a larger batch grows it. */
static void test_call_counts(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 9);
    zt_game *g;
    CHECK_OK(zt_game_new("2048", NULL, &g));
    zt_net *net = small_net(g, &r, 4);
    zt_net_evaluator *ne;
    CHECK_OK(zt_net_evaluator_new(net, 3, &ne));
    zt_evaluator ev = zt_net_evaluator_get(ne);
    const zt_net_config *cfg = zt_net_config_of(net);
    size_t hs = zt_net_hidden_size(cfg), obs_size = (size_t)zt_game_obs_size(g);
    enum { MAXB = 5 };
    float *obs = zt_xcalloc(MAXB * obs_size, sizeof(float));
    float *h = zt_xcalloc(MAXB * hs, sizeof(float)), *h2 = zt_xcalloc(MAXB * hs, sizeof(float));
    float logits[MAXB * 4], value[MAXB], reward[MAXB], sigma[MAXB * 4], q[MAXB];
    int actions[MAXB] = {0, 1, 2, 3, 0};
    CHECK_OK(ev.initial(ev.ctx, 2, obs, h, logits, value));
    CHECK_OK(ev.afterstate(ev.ctx, 3, h, actions, h2, sigma, q));
    CHECK_OK(ev.afterstate(ev.ctx, 3, h, actions, h2, sigma, q));
    CHECK_OK(ev.recurrent(ev.ctx, 1, h2, actions, h, reward, logits, value, NULL));
    CHECK(zt_net_evaluator_max_batch(ne) == 3, "max batch %d", zt_net_evaluator_max_batch(ne));
    /* past the reserved batch: the evaluator grows to 5 */
    CHECK_OK(ev.recurrent(ev.ctx, 5, h2, actions, h, reward, logits, value, NULL));
    CHECK(zt_net_evaluator_max_batch(ne) == MAXB, "max batch %d after growing",
          zt_net_evaluator_max_batch(ne));
    const uint64_t *c = zt_net_evaluator_batch_counts(ne);
    uint64_t want[ZT_CALL_KINDS][MAXB + 1] = {{0}};
    want[ZT_CALL_INITIAL][2] = 1;
    want[ZT_CALL_AFTERSTATE][3] = 2;
    want[ZT_CALL_RECURRENT][1] = 1;
    want[ZT_CALL_RECURRENT][5] = 1;
    for (int k = 0; k < ZT_CALL_KINDS; k++)
        for (int b = 0; b <= MAXB; b++)
            CHECK(c[k * (MAXB + 1) + b] == want[k][b], "kind %d batch %d: %llu calls, want %llu", k,
                  b, (unsigned long long)c[k * (MAXB + 1) + b], (unsigned long long)want[k][b]);
    zt_evaluator_stats s = zt_net_evaluator_get_stats(ne);
    CHECK(s.calls == 5 && s.positions == 2 + 3 + 3 + 1 + 5, "%llu calls, %llu positions",
          (unsigned long long)s.calls, (unsigned long long)s.positions);
    free(obs), free(h), free(h2);
    zt_net_evaluator_free(ne);
    zt_net_free(net);
    zt_game_free(g);
}

static void test_refusals(void)
{
    zt_game *g;
    CHECK_OK(zt_game_new("tictactoe", NULL, &g));
    zt_evaluator plain = {.ctx = NULL, .eval = NULL};
    zt_model *m = NULL;
    CHECK(zt_mz_model_new(g, &plain, 4, &m) != ZT_OK && m == NULL,
          "a model over an evaluator without a muzero net");
    printf("refused: %s\n", zt_error_message());
    zt_game_free(g);
}

int main(void)
{
    seed = zt_test_seed(3);
    test_outputs();
    check_lifetime("tictactoe", ZT_SEARCH_PUCT, 0, 0);
    check_lifetime("tictactoe", ZT_SEARCH_GUMBEL, 0, 0);
    check_lifetime("connect4", ZT_SEARCH_GUMBEL, 0, 0);
    check_lifetime("tictactoe", ZT_SEARCH_PUCT, 13, 0);
    check_lifetime("connect4", ZT_SEARCH_GUMBEL, 23, 0);
    check_lifetime("tictactoe", ZT_SEARCH_GUMBEL, 0, 4);
    check_lifetime("tictactoe", ZT_SEARCH_PUCT, 0, 4);
    check_lifetime("connect4", ZT_SEARCH_GUMBEL, 17, 4);
    test_one_player();
    check_stochastic_outputs("tictactoe");
    check_stochastic_outputs("2048");
    check_turns(0);
    check_turns(5);
    check_lifetime("backgammon", ZT_SEARCH_GUMBEL, 0, 0);
    check_lifetime("backgammon", ZT_SEARCH_GUMBEL, 61, 4);
    test_call_counts();
    test_refusals();
    return zt_test_finish("test_mz_model");
}
