/* The training settings: every key a run reads, with its default, range
 * and meaning documented in configs/<game>.ini. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/player.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/fileio.h"
#include "core/thread.h"
#include "game/solver.h"
#include "nn/backend.h"
#include "search/settings.h"
#include "train/train.h"

/* precision = int8: actors run int8 behind the publication gate; the
 * learner trains in auto's precision. precision = auto: the same where the
 * actors' net measures int8.auto_speedup times faster in int8 at the run's
 * start (train.c), not in deterministic mode (a timing would decide what
 * a rerun computes). */
static zt_status read_int8(zt_config *c, zt_train_settings *S)
{
    zt_int8_gate_config *q = &S->int8_gate;
    zt_int8_gate_config_default(q);
    ZT_TRY(zt_config_int32(c, "int8.calibration", q->calibration, 1, 1 << 16, &q->calibration));
    ZT_TRY(zt_config_int32(c, "int8.positions", q->positions, 1, 1 << 16, &q->positions));
    ZT_TRY(zt_config_double(c, "int8.agreement", q->agreement, 0, 1, &q->agreement));
    ZT_TRY(zt_config_double(c, "int8.value_mae", q->value_mae, 0, 2, &q->value_mae));
    ZT_TRY(zt_config_double(c, "int8.tie", q->tie, 0, 1, &q->tie));
    ZT_TRY(zt_config_int32(c, "int8.gate_every", 0, 0, 1 << 20, &q->every));
    ZT_TRY(zt_config_double(c, "int8.auto_speedup", q->auto_speedup, 0, 1e6, &q->auto_speedup));
    bool deterministic = S->mode == ZT_TRAIN_DETERMINISTIC;
    if (q->every == 0) q->every = deterministic ? 1 : ZT_INT8_GATE_EVERY_AUTO;
    S->int8_actors = S->int8_auto = false;
    const zt_nn_backend *be;
    bool can = zt_nn_backend_find(S->backend, &be) == ZT_OK && be->supports(ZT_PRECISION_INT8);
    if (S->precision == ZT_PRECISION_AUTO) {
        S->int8_auto = can && !deterministic && !zt_algorithm_is_muzero(S->algorithm);
        return ZT_OK;
    }
    if (S->precision != ZT_PRECISION_INT8) return ZT_OK;
    if (zt_algorithm_is_muzero(S->algorithm))
        return zt_fail(ZT_ERR_UNSUPPORTED,
                       "precision = int8 is not available with algorithm = %s yet",
                       zt_algorithm_name(S->algorithm));
    if (!can)
        return zt_fail(ZT_ERR_UNSUPPORTED, "precision = int8: nn backend '%s' has no int8 here "
                                           "(it needs the cpu backend and AVX512_VNNI)",
                       S->backend);
    /* A resumed run gates its first publication afresh; the straight run
     * may have sent that version out with the ranges of an earlier one. */
    if (q->every > 1 && S->mode == ZT_TRAIN_DETERMINISTIC)
        return zt_fail(ZT_ERR_INVALID,
                       "int8.gate_every = %d needs mode = concurrent or alternate (a "
                       "deterministic resume could not repeat the versions between gates)",
                       q->every);
    S->int8_actors = true;
    S->precision = ZT_PRECISION_AUTO;
    return ZT_OK;
}

zt_status zt_train_settings_choose_int8(const zt_game *g, zt_train_settings *S)
{
    if (!S->int8_auto) return ZT_OK;
    const zt_nn_backend *be;
    if (zt_nn_backend_find(S->backend, &be) != ZT_OK || !be->supports(ZT_PRECISION_INT8)) {
        S->int8_auto = false; /* `device` put the nets elsewhere */
        return ZT_OK;
    }
    ZT_TRY(zt_int8_speedup(g, &S->net, S->backend, zt_actor_round_batch(&S->actor), 0.05,
                           &S->int8_speedup));
    S->int8_actors = S->int8_speedup >= S->int8_gate.auto_speedup;
    return ZT_OK;
}

static zt_status read_net(zt_config *c, const zt_game *g, zt_net_config *n)
{
    zt_net_config_default(n, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    static const char *const kinds[] = {"resnet", "mlp", NULL};
    int kind;
    ZT_TRY(
        zt_config_choice(c, "net.kind", n->kind == ZT_NET_RESNET ? "resnet" : "mlp", kinds, &kind));
    n->kind = kind == 0 ? ZT_NET_RESNET : ZT_NET_MLP;
    static const char *const values[] = {"scalar", "wdl", "equity", NULL};
    int value;
    ZT_TRY(zt_config_choice(c, "net.value", "scalar", values, &value));
    n->value_kind = value == 0 ? ZT_VALUE_SCALAR : value == 1 ? ZT_VALUE_WDL : ZT_VALUE_EQUITY;
    if (n->value_kind == ZT_VALUE_WDL && zt_game_num_players(g) == 1)
        return zt_fail(ZT_ERR_INVALID,
                       "net.value: wdl is for games won, drawn or lost; %s scores points "
                       "(net.value = scalar)",
                       g->title);
    /* The equity head's value is points / 3: it fits games whose results
     * are 1, 2 or 3 points and nothing else. */
    if (n->value_kind == ZT_VALUE_EQUITY && g->max_return != ZT_EQ_MAX_POINTS)
        return zt_fail(ZT_ERR_INVALID,
                       "net.value = equity: the equity head is for games of 1/2/3-point results "
                       "(backgammon), not %s",
                       g->title);
    ZT_TRY(zt_config_int32(c, "net.value_hidden", n->value_hidden, 1, 1 << 14, &n->value_hidden));
    /* Values of chance states too: self-play records them as value targets
     * and the search values one with a single evaluation (nn.h). */
    bool chance;
    ZT_TRY(zt_config_bool(c, "net.chance_values", false, &chance));
    if (chance && !g->chance_observer)
        return zt_fail(ZT_ERR_INVALID,
                       "net.chance_values: %s has no chance states a net can value (backgammon "
                       "has: the positions before a roll)",
                       g->title);
    n->chance_values = chance;
    /* Both kinds' keys are read (and checked) whatever the kind, the other
     * kind's into a copy, so that a config written for one kind can be run
     * as the other (--set net.kind=mlp over configs/sim.ini). */
    zt_net_config other = *n;
    zt_net_config *r = n->kind == ZT_NET_RESNET ? n : &other, *m = n->kind == ZT_NET_MLP ? n : &other;
    /* (a game whose default net is an MLP has no resnet shape: 64 x 5) */
    int def_blocks = r->channels ? r->blocks : 5;
    ZT_TRY(zt_config_int32(c, "net.channels", r->channels ? r->channels : 64, 1, 4096, &r->channels));
    ZT_TRY(zt_config_int32(c, "net.blocks", def_blocks, 0, 256, &r->blocks));
    ZT_TRY(zt_config_int32(c, "net.policy_channels", r->policy_channels ? r->policy_channels : 2, 1,
                           4096, &r->policy_channels));
    ZT_TRY(zt_config_int32(c, "net.value_channels", r->value_channels ? r->value_channels : 1, 1, 4096,
                           &r->value_channels));
    ZT_TRY(zt_config_int32(c, "net.mlp_hidden", m->mlp_hidden ? m->mlp_hidden : 256, 1, 1 << 14,
                           &m->mlp_hidden));
    ZT_TRY(zt_config_int32(c, "net.mlp_layers", m->mlp_layers ? m->mlp_layers : 3, 1, 256,
                           &m->mlp_layers));
    static const char *const norms[] = {"layer", "batch", NULL};
    int norm;
    ZT_TRY(zt_config_choice(c, "net.mlp_norm", "layer", norms, &norm));
    m->mlp_norm = norm == 0 ? ZT_NORM_LAYER : ZT_NORM_BATCH;
    return zt_net_config_check(n);
}

/* The muzero.* keys, read whatever the algorithm (a config file may set
 * them for either); with algorithm = muzero they replace the net: MuZero's
 * three resnets (net.value_hidden sizes the value and reward heads). */
static zt_status read_muzero(zt_config *c, const zt_game *g, zt_train_settings *S)
{
    zt_net_config m = S->net;
    m.kind = ZT_NET_MUZERO;
    /* net.chance_values, like the rest of [net], is the AlphaZero net's:
     * MuZero models chance in its own dynamics */
    m.chance_values = 0;
    ZT_TRY(zt_config_int32(c, "muzero.channels", 32, 1, 4096, &m.channels));
    ZT_TRY(zt_config_int32(c, "muzero.blocks", 2, 0, 256, &m.blocks));
    ZT_TRY(zt_config_int32(c, "muzero.dyn_blocks", 2, 0, 256, &m.dyn_blocks));
    ZT_TRY(zt_config_int32(c, "muzero.pred_blocks", 1, 0, 256, &m.pred_blocks));
    ZT_TRY(zt_config_int32(c, "muzero.unroll", 5, 1, ZT_REPLAY_MAX_UNROLL, &S->unroll));
    ZT_TRY(zt_config_int32(c, "muzero.td_steps", 0, 0, ZT_REPLAY_MAX_TD, &S->td_steps));
    ZT_TRY(zt_config_bool(c, "muzero.outcome_reward", false, &S->outcome_reward));
    if (S->outcome_reward && zt_game_num_players(g) != 2)
        return zt_fail(ZT_ERR_INVALID,
                       "muzero.outcome_reward is for two-player games: %s's rewards are its own",
                       g->title);
    ZT_TRY(zt_config_double(c, "muzero.reward_weight", 1.0, 0, 100, &S->optimizer.reward_weight));
    ZT_TRY(zt_config_double(c, "muzero.dynamics_grad_scale", 0.5, 0, 1,
                            &S->optimizer.dynamics_grad_scale));
    /* Stochastic MuZero: 32 codes as the paper's 2048 and backgammon runs
     * (Antonoglou et al. 2022); the commitment cost VQ-VAE's 0.25 (van den
     * Oord et al. 2017) */
    int codes;
    ZT_TRY(zt_config_int32(c, "muzero.codes", 32, 1, 4096, &codes));
    ZT_TRY(zt_config_double(c, "muzero.chance_weight", 1.0, 0, 100, &S->optimizer.chance_weight));
    ZT_TRY(zt_config_double(c, "muzero.commitment", 0.25, 0, 100,
                            &S->optimizer.commitment_weight));
    /* the weight of the codes' balance term (the load-balancing loss of
     * Switch Transformers, Fedus et al. 2021), which keeps the encoder from
     * giving every transition one code */
    ZT_TRY(zt_config_double(c, "muzero.code_balance", 0, 0, 100,
                            &S->optimizer.code_balance_weight));
    /* the weight of EfficientZero's consistency term (Ye et al. 2021): each
     * unrolled hidden state held to the representation of the observation
     * it stands for */
    ZT_TRY(zt_config_double(c, "muzero.consistency", 0, 0, 100, &S->optimizer.consistency_weight));
    /* where the codes come from: the learned encoder, or the game's own
     * chance outcomes (0 for none, 1 + the outcome's index) */
    static const char *const sources[] = {"encoder", "game", NULL};
    int source;
    ZT_TRY(zt_config_choice(c, "muzero.chance", "encoder", sources, &source));
    S->chance_labels = source == 1 && S->algorithm == ZT_ALGO_STOCHASTIC_MUZERO;
    if (S->chance_labels && codes < g->max_chance_outcomes + 1)
        return zt_fail(ZT_ERR_INVALID,
                       "muzero.chance = game needs muzero.codes >= %d (%s's %d chance outcomes "
                       "and one code for none), not %d",
                       g->max_chance_outcomes + 1, g->title, g->max_chance_outcomes, codes);
    /* categorical value and reward heads (0: tanh) */
    ZT_TRY(zt_config_int32(c, "muzero.support", 0, 0, ZT_MZ_MAX_SUPPORT, &m.value_support));
    /* g reads an action as the board column it names (nn.h) */
    bool columns;
    ZT_TRY(zt_config_bool(c, "muzero.action_columns", false, &columns));
    if (columns && g->num_actions != g->obs_shape[1])
        return zt_fail(ZT_ERR_INVALID,
                       "muzero.action_columns needs an action per board column: %s has %d "
                       "actions on a board %d wide",
                       g->title, g->num_actions, g->obs_shape[1]);
    m.action_columns = columns;
    /* the towers on one cell: the observation read as one vector of H x W x
     * C features, so every conv is 1x1 (a dense layer) and the towers are
     * MLPs, as AlphaZero's 2048 net is */
    bool flat;
    ZT_TRY(zt_config_bool(c, "muzero.flat", false, &flat));
    if (flat && columns)
        return zt_fail(ZT_ERR_INVALID,
                       "muzero.flat and muzero.action_columns: a flat net has no board columns");
    if (flat) {
        m.in_c = zt_game_obs_size(g);
        m.in_h = m.in_w = 1;
    }
    /* the heads' first layer (nn.h, head_norm): auto is the plain one on a
     * board of one cell, where a layer norm leaves a constant, and the
     * layer norm elsewhere, what tic-tac-toe and Connect Four were measured
     * with (docs/muzero.md, "The heads") */
    static const char *const heads[] = {"auto", "norm", "plain", NULL};
    int head;
    ZT_TRY(zt_config_choice(c, "muzero.heads", "auto", heads, &head));
    bool one_cell = m.in_h * m.in_w == 1;
    if (head == 1 && one_cell)
        return zt_fail(ZT_ERR_INVALID,
                       "muzero.heads = norm on a one-cell board (%s%s) would make every value "
                       "head a constant (a layer norm over one number); use auto or plain",
                       g->name, flat ? ", muzero.flat" : "");
    m.head_norm = head == 1 || (head == 0 && !one_cell);
    if (!zt_algorithm_is_muzero(S->algorithm)) return ZT_OK;
    m.chance_codes = S->algorithm == ZT_ALGO_STOCHASTIC_MUZERO ? codes : 0;
    /* MuZero's value, reward and Q heads are its own (tanh, or categorical
     * with muzero.support): net.value, like the rest of [net], is the
     * AlphaZero net's */
    m.value_kind = ZT_VALUE_SCALAR;
    /* Two players with chance (backgammon: a turn is several checker moves
     * by one player, then the dice) do not alternate move by move: g learns
     * who moves next (nn.h, the to-play head). */
    m.turn_head = zt_game_num_players(g) == 2 && g->max_chance_outcomes > 0;
    m.policy_channels = 2;
    m.value_channels = 1;
    ZT_TRY(zt_net_config_check(&m));
    S->net = m;
    return ZT_OK;
}

static zt_status read_optimizer(zt_config *c, zt_train_config *o)
{
    zt_train_config_default(o);
    static const char *const optimizers[] = {"sgd", "adamw", NULL};
    int opt;
    ZT_TRY(zt_config_choice(c, "learner.optimizer", "sgd", optimizers, &opt));
    o->optimizer = opt == 0 ? ZT_OPT_SGD : ZT_OPT_ADAMW;
    ZT_TRY(zt_config_double(c, "learner.lr", o->lr, 1e-9, 10, &o->lr));
    ZT_TRY(zt_config_double(c, "learner.momentum", o->momentum, 0, 0.999, &o->momentum));
    ZT_TRY(zt_config_double(c, "learner.weight_decay", o->weight_decay, 0, 1, &o->weight_decay));
    static const char *const schedules[] = {"constant", "step", "cosine", NULL};
    int sched;
    ZT_TRY(zt_config_choice(c, "learner.schedule", "constant", schedules, &sched));
    o->schedule = sched == 0 ? ZT_SCHED_CONSTANT : sched == 1 ? ZT_SCHED_STEP : ZT_SCHED_COSINE;
    ZT_TRY(zt_config_int32(c, "learner.warmup_steps", 0, 0, 1 << 30, &o->warmup_steps));
    ZT_TRY(zt_config_int32(c, "learner.total_steps", 100000, 0, 1 << 30, &o->total_steps));
    ZT_TRY(zt_config_int32(c, "learner.step_size", o->step_size, 1, 1 << 30, &o->step_size));
    ZT_TRY(zt_config_double(c, "learner.step_gamma", o->step_gamma, 0, 1, &o->step_gamma));
    ZT_TRY(zt_config_double(c, "learner.lr_min", 0, 0, 10, &o->lr_min));
    ZT_TRY(zt_config_double(c, "learner.value_weight", o->value_weight, 0, 100, &o->value_weight));
    ZT_TRY(zt_config_int32(c, "learner.micro_batch", o->micro_batch, 1, 1 << 16, &o->micro_batch));
    ZT_TRY(zt_config_double(c, "learner.clip_norm", 0, 0, 1e9, &o->clip_norm));
    return ZT_OK;
}

/* arena.opponents: comma-separated zt_player_new specs (blanks around the
 * commas ignored; empty: none). Each is built once here and freed, so that a
 * misspelt name or a player the game lacks (perfect without a solver,
 * alphabeta outside Connect Four) stops the run before it starts rather
 * than at its first arena minutes later. */
static zt_status read_opponents(zt_config *c, const zt_game *g, const char *def,
                                zt_train_settings *S)
{
    const char *list;
    ZT_TRY(zt_config_string(c, "arena.opponents", def, &list));
    ZT_TRY(zt_player_list_split(list, "arena.opponents", &S->arena_opponents[0][0],
                                ZT_TRAIN_OPPONENT_LEN, ZT_TRAIN_MAX_OPPONENTS,
                                &S->arena_num_opponents));
    /* a repeat would merge two matches into one curve of the report */
    for (int i = 0; i < S->arena_num_opponents; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(S->arena_opponents[i], S->arena_opponents[j]) == 0)
                return zt_fail(ZT_ERR_INVALID, "arena.opponents: '%s' is listed twice",
                               S->arena_opponents[i]);
    for (int i = 0; i < S->arena_num_opponents; i++) {
        zt_player *p;
        zt_status st = zt_player_new(g, S->arena_opponents[i], &p);
        if (st != ZT_OK) {
            char why[ZT_MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", zt_error_message());
            return zt_fail(st, "arena.opponents: '%s': %s", S->arena_opponents[i], why);
        }
        zt_player_free(p);
    }
    return ZT_OK;
}

zt_status zt_train_settings_read(zt_config *c, const zt_game *g, zt_train_settings *S)
{
    memset(S, 0, sizeof *S);
    int64_t v;
    bool debug;
    /* debug=1: every optimisation off (cross-game batching, K leaves, bf16,
     * NN cache, root cache, tree reuse, sampler prefetch), for the plainest
     * run. It overrides the config files (which set every key), so the
     * written config.ini shows what actually ran; the search reader does
     * the same for its keys (K and tree reuse). */
    ZT_TRY(zt_config_bool(c, "debug", false, &debug));
    if (debug) {
        static const char *const plain[][2] = {
            {"games_per_actor", "1"},
            {"precision", "fp32"},
            {"selfplay.nncache", "false"},
            {"selfplay.root_cache", "false"},
            {"learner.prefetch", "false"},
        };
        for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
            zt_config_put(c, plain[i][0], plain[i][1]);
    }
    ZT_TRY(zt_config_int(c, "seed", 1, 0, INT64_MAX, &v));
    S->seed = (uint64_t)v;
    static const char *const algorithms[] = {"alphazero", "muzero", "stochastic_muzero", NULL};
    int algorithm;
    ZT_TRY(zt_config_choice(c, "algorithm", "alphazero", algorithms, &algorithm));
    S->algorithm = (zt_train_algorithm)algorithm;
    /* Gumbel's sigma(q) = (c_visit + max N) c_scale q, with q min-max
     * normalised over the root's children: at c_scale 1 the improved policy
     * is the argmax of Q, which early in a MuZero run is the noise of an
     * untrained value (the real game's terminals give AlphaZero exact Q
     * from the first step). mctx's Gumbel MuZero uses 0.1 (value_scale);
     * measured on tic-tac-toe after 1200 deterministic steps, seed 7:
     * 3052/4520 positions optimal against 2745 at c_scale 1. Like debug=1,
     * it overrides the file so the run's config.ini shows what ran (and
     * eval and play on the run search with it). */
    double mz_c_scale;
    ZT_TRY(zt_config_double(c, "muzero.c_scale", 0.1, 0, 1e6, &mz_c_scale));
    /* muzero.precision likewise replaces precision: oneDNN's bf16 runs
     * tic-tac-toe's 16-channel nets 4-5x slower than fp32 (bench muzero:
     * 6.9 against 31.8 train steps/s), while AlphaZero's MLP there keeps
     * auto. */
    const char *mz_precision;
    ZT_TRY(zt_config_string(c, "muzero.precision", "auto", &mz_precision));
    zt_precision mz_prec;
    ZT_TRY(zt_precision_parse(mz_precision, &mz_prec));
    /* and muzero.full_search_fraction selfplay's: MuZero learns its policy
     * and its dynamics from full searches, while backgammon's AlphaZero
     * recipe (TD-Gammon's) has none */
    double mz_full;
    ZT_TRY(zt_config_double(c, "muzero.full_search_fraction", 1.0, 1e-3, 1.0, &mz_full));
    /* muzero.discount, gamma of a one-player game's search and n-step
     * targets, likewise replaces search.discount (which AlphaZero runs, whose
     * targets are the undiscounted return, leave at 1) */
    ZT_TRY(zt_config_double(c, "muzero.discount", 1.0, 0.5, 1.0, &S->discount));
    if (zt_algorithm_is_muzero(S->algorithm) && S->discount < 1) {
        int td;
        ZT_TRY(zt_config_int32(c, "muzero.td_steps", 0, 0, ZT_REPLAY_MAX_TD, &td));
        if (zt_game_num_players(g) != 1)
            return zt_fail(ZT_ERR_INVALID,
                           "muzero.discount = %g: %s has two players, whose targets are the "
                           "final outcome (discount 1)",
                           S->discount, g->title);
        if (td == 0)
            return zt_fail(ZT_ERR_INVALID,
                           "muzero.discount = %g needs muzero.td_steps > 0 (the n-step return; "
                           "0 stands for the undiscounted points still to come)",
                           S->discount);
    }
    if (!zt_algorithm_is_muzero(S->algorithm)) {
        double d;
        ZT_TRY(zt_config_double(c, "search.discount", 1.0, 0, 1, &d));
        if (d != 1)
            return zt_fail(ZT_ERR_INVALID,
                           "search.discount = %g: only MuZero runs discount (muzero.discount); "
                           "AlphaZero's value targets are undiscounted",
                           d);
        S->discount = 1;
    }
    /* The keys above that have names of their own in [muzero], with the
     * values a MuZero run puts in their place. */
    const struct {
        const char *key, *own;
        double value;
    } named[] = {
        {"search.discount", "muzero.discount", S->discount},
        {"search.c_scale", "muzero.c_scale", mz_c_scale},
        {"selfplay.full_search_fraction", "muzero.full_search_fraction", mz_full},
    };
    /* and muzero.SECTION.KEY, for any other section's key, replaces
     * SECTION.KEY likewise: a game's MuZero defaults in its [muzero]
     * section (configs/tictactoe.ini), beside its AlphaZero ones. The keys
     * with names of their own go by those. */
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        char alias[64];
        snprintf(alias, sizeof alias, "muzero.%s", named[i].key);
        if (zt_config_has(c, alias))
            return zt_fail(ZT_ERR_INVALID, "key '%s': set %s instead", alias, named[i].own);
    }
    zt_config_promote(c, "muzero.", zt_algorithm_is_muzero(S->algorithm));
    if (zt_algorithm_is_muzero(S->algorithm)) {
        for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
            char text[32];
            snprintf(text, sizeof text, "%.17g", named[i].value);
            zt_config_put(c, named[i].key, text);
        }
        if (!debug) zt_config_put(c, "precision", zt_precision_name(mz_prec)); /* debug: fp32 */
    }
    static const char *const modes[] = {"concurrent", "alternate", "deterministic", NULL};
    int mode;
    ZT_TRY(zt_config_choice(c, "mode", "concurrent", modes, &mode));
    S->mode = (zt_train_mode)mode;
    /* One actor per core, the learner sharing the cores with them; on two
     * cores one actor and the learner (measured: the learner alone keeps up
     * with one actor on small nets, see configs/tictactoe.ini). */
    int cores = zt_cpu_count();
    int auto_actors = cores > 2 ? cores - 1 : 1;
    ZT_TRY(zt_config_int32(c, "actors", 0, 0, 1024, &S->actors));
    if (S->actors == 0) S->actors = auto_actors;
    ZT_TRY(zt_config_int32(c, "learner.threads", 0, 0, 1024, &S->learner_threads));
    /* In concurrent mode the learner gets the cores the actors leave free:
     * oneDNN's OpenMP threads spin at barriers, and one more busy thread than
     * cores made a 64x5 Connect Four run 30x slower (measured: 0.3 learner
     * steps/s instead of ~10). The other modes train while actors wait. */
    S->learner_threads_auto = S->learner_threads == 0;
    if (S->learner_threads == 0)
        S->learner_threads = mode == ZT_TRAIN_CONCURRENT && cores > S->actors ? cores - S->actors
                             : mode == ZT_TRAIN_CONCURRENT                    ? 1
                                                                              : cores;
    const char *backend;
    ZT_TRY(zt_config_string(c, "backend", "auto", &backend));
    snprintf(S->backend, sizeof S->backend, "%s", backend);
    /* device = cpu keeps `backend`; cuda[:N] puts every net on that GPU
     * ("no CUDA GPU found: ..." without one); auto is the CPU without a GPU
     * and is resolved with the run directory at start otherwise
     * (zt_device_resolve: the measured crossover, cached in the run). */
    const char *device;
    ZT_TRY(zt_config_string(c, "device", "auto", &device));
    ZT_TRY(zt_device_parse(device, &S->device));
    /* backend=cuda reads as device=cuda (the GPU checked here, early). */
    if (strcmp(S->backend, "cuda") == 0) S->device.kind = ZT_DEVICE_CUDA;
    if (S->device.kind == ZT_DEVICE_CUDA) {
        const char *be;
        ZT_TRY(zt_device_backend(S->device, S->backend, &be));
        if (be != S->backend) snprintf(S->backend, sizeof S->backend, "%s", be);
    }
    const char *precision;
    ZT_TRY(zt_config_string(c, "precision", debug ? "fp32" : "auto", &precision));
    ZT_TRY(zt_precision_parse(precision, &S->precision));
    ZT_TRY(read_int8(c, S));
    ZT_TRY(read_net(c, g, &S->net));

    zt_actor_config *A = &S->actor;
    zt_actor_config_default(A);
    zt_search_read_options search_opt = {.use = ZT_SEARCH_SELFPLAY, .debug = debug};
    ZT_TRY(zt_search_config_read(c, &search_opt, &A->search));
    ZT_TRY(zt_config_int32(c, "games_per_actor", debug ? 1 : 64, 1, 1 << 16, &A->games));
    ZT_TRY(zt_config_float(c, "selfplay.temperature", A->temperature, 0, 100, &A->temperature));
    ZT_TRY(zt_config_int32(c, "selfplay.temperature_moves", A->temperature_moves, 0, 1 << 20,
                   &A->temperature_moves));
    /* 0: no full searches, so no policy targets (TD-Gammon's way with
     * fast_moves = greedy: value targets alone) */
    ZT_TRY(zt_config_double(c, "selfplay.full_search_fraction", 1.0, 0, 1.0,
                            &A->full_search_fraction));
    ZT_TRY(zt_config_int32(c, "selfplay.fast_sims", A->fast_simulations, 1, 1 << 20, &A->fast_simulations));
    static const char *const fast_moves[] = {"search", "greedy", NULL};
    int fast;
    ZT_TRY(zt_config_choice(c, "selfplay.fast_moves", "search", fast_moves, &fast));
    A->greedy_fast = fast == 1;
    if (A->full_search_fraction < 1 && !A->greedy_fast &&
        A->fast_simulations > A->search.num_simulations)
        return zt_fail(ZT_ERR_INVALID,
                       "selfplay.fast_sims = %d exceeds search.sims = %d (a fast search is the "
                       "full one with fewer simulations, in the same trees)",
                       A->fast_simulations, A->search.num_simulations);
    ZT_TRY(zt_config_bool(c, "selfplay.resign", false, &A->resign));
    ZT_TRY(zt_config_float(c, "selfplay.resign_threshold", A->resign_threshold, -1, 1,
                     &A->resign_threshold));
    ZT_TRY(zt_config_double(c, "selfplay.resign_playout_fraction", A->resign_playout_fraction, 0, 1,
                            &A->resign_playout_fraction));
    ZT_TRY(zt_config_double(c, "selfplay.resign_false_rate", A->resign_false_rate, 0, 0.5,
                            &A->resign_false_rate));
    if (A->resign && A->resign_false_rate > 0 && A->resign_playout_fraction == 0)
        return zt_fail(ZT_ERR_INVALID,
                       "selfplay.resign_false_rate = %g calibrates on played-out games: it needs "
                       "selfplay.resign_playout_fraction > 0 (or resign_false_rate = 0 for the "
                       "fixed resign_threshold)",
                       A->resign_false_rate);
    ZT_TRY(zt_config_double(c, "selfplay.random_opening_fraction", 0.0, 0, 1,
                            &A->random_opening_fraction));
    ZT_TRY(zt_config_int32(c, "selfplay.random_opening_plies", 0, 0, 1 << 16, &A->random_opening_plies));
    ZT_TRY(zt_config_string(c, "selfplay.opening_players", "", &A->opening_players));
    ZT_TRY(zt_config_double(c, "selfplay.opening_noise", 0.0, 0, 1, &A->opening_noise));
    ZT_TRY(zt_config_double(c, "selfplay.random_move_fraction", 0.0, 0, 1,
                            &A->random_move_fraction));
    ZT_TRY(zt_config_int32(c, "selfplay.noise_plies", 0, 0, 1 << 16, &A->noise_plies));
    if (*A->opening_players && (A->random_opening_fraction == 0 || A->random_opening_plies == 0))
        return zt_fail(ZT_ERR_INVALID,
                       "selfplay.opening_players is set but no game has a random opening for them "
                       "to play (selfplay.random_opening_fraction = %g, random_opening_plies = %d)",
                       A->random_opening_fraction, A->random_opening_plies);
    /* (made and dropped: a misspelt player stops the run before it starts) */
    zt_player **openers;
    int num_openers;
    ZT_TRY(zt_players_new(g, A->opening_players, "selfplay.opening_players", &openers,
                          &num_openers));
    zt_players_free(openers, num_openers);
    ZT_TRY(zt_config_string(c, "selfplay.start_positions", "", &S->start_positions));
    ZT_TRY(zt_config_double(c, "selfplay.start_fraction", 0.0, 0, 1, &A->start_fraction));
    if (A->start_fraction > 0 && !*S->start_positions)
        return zt_fail(ZT_ERR_INVALID, "selfplay.start_fraction = %g needs selfplay.start_positions "
                                       "(position files to start games from)",
                       A->start_fraction);
    if (A->start_fraction == 0 && *S->start_positions)
        return zt_fail(ZT_ERR_INVALID, "selfplay.start_positions is set but "
                                       "selfplay.start_fraction is 0 (the share of games to start "
                                       "from them)");
    static const char *const evaluators[] = {"private", "shared", NULL};
    int evaluator;
    ZT_TRY(zt_config_choice(c, "selfplay.evaluator", "private", evaluators, &evaluator));
    S->evaluator = evaluator == 0 ? ZT_EVALUATOR_PRIVATE : ZT_EVALUATOR_SHARED;
    ZT_TRY(zt_config_int32(c, "selfplay.inflight", 0, 0, 2, &S->inflight));
    ZT_TRY(zt_config_bool(c, "selfplay.nncache", !debug, &A->nncache));
    ZT_TRY(zt_config_int32(c, "selfplay.nncache_entries", A->nncache_entries, 1, 1 << 28,
                   &A->nncache_entries));
    ZT_TRY(zt_config_bool(c, "selfplay.root_cache", !debug, &A->root_cache));
    ZT_TRY(zt_config_int32(c, "selfplay.root_cache_sims", A->root_cache_simulations, 1, 1 << 20,
                   &A->root_cache_simulations));

    zt_replay_config_default(&S->replay);
    ZT_TRY(zt_config_int(c, "replay.capacity", S->replay.capacity, 1, INT64_C(1) << 36,
                         &S->replay.capacity));
    ZT_TRY(
        zt_config_double(c, "replay.window_c", S->replay.window_c, 0, 1e12, &S->replay.window_c));
    ZT_TRY(zt_config_double(c, "replay.window_alpha", S->replay.window_alpha, 0, 1,
                            &S->replay.window_alpha));
    ZT_TRY(zt_config_double(c, "replay.window_beta", S->replay.window_beta, 0, 10,
                            &S->replay.window_beta));
    ZT_TRY(zt_config_bool(c, "replay.augment", true, &S->replay.augment));
    ZT_TRY(zt_config_double(c, "replay.surprise_weight", 0.0, 0, 1, &S->replay.surprise_weight));
    ZT_TRY(zt_config_double(c, "replay.repeat_weight", 0.0, 0, 1, &S->replay.repeat_weight));
    ZT_TRY(zt_config_bool(c, "replay.repeat_average", false, &S->replay.repeat_average));
    /* the actors store each full search's surprise only for a run that
     * samples by it (a byte per record) */
    A->record_surprise = S->replay.surprise_weight > 0;

    ZT_TRY(read_optimizer(c, &S->optimizer));
    ZT_TRY(read_muzero(c, g, S));
    A->record_actions = zt_algorithm_is_muzero(S->algorithm);
    ZT_TRY(zt_config_int32(c, "learner.batch", 256, 1, 1 << 16, &S->batch));
    ZT_TRY(zt_config_double(c, "replay_ratio", 4.0, 1e-3, 1e6, &S->replay_ratio));
    ZT_TRY(zt_config_int32(c, "publish_every", 20, 1, 1 << 30, &S->publish_every));
    ZT_TRY(zt_config_int(c, "learner.min_positions", 2000, 1, INT64_C(1) << 36, &S->min_positions));
    ZT_TRY(zt_config_double(c, "learner.root_value_weight", 0.0, 0, 1, &S->root_value_weight));
    /* The search's root value is one number: it mixes into a scalar target
     * only, never into WDL or equity probabilities. */
    if (S->root_value_weight > 0 && S->net.value_kind != ZT_VALUE_SCALAR)
        return zt_fail(ZT_ERR_INVALID,
                       "learner.root_value_weight = %g needs net.value = scalar (the search's "
                       "root value is one number, not %s probabilities)",
                       S->root_value_weight, S->net.value_kind == ZT_VALUE_WDL ? "WDL" : "equity");
    /* a position before a roll is recorded with no search, so no root value */
    if (S->root_value_weight > 0 && S->net.chance_values)
        return zt_fail(ZT_ERR_INVALID,
                       "learner.root_value_weight = %g needs net.chance_values = false (the "
                       "positions before a roll are recorded without a search's value)",
                       S->root_value_weight);
    ZT_TRY(zt_config_bool(c, "learner.prefetch", !debug, &S->prefetch));
    ZT_TRY(zt_config_int32(c, "learner.average", 0, 0, 1 << 30, &S->average_steps));
    ZT_TRY(zt_config_bool(c, "learner.average_actors", false, &S->average_actors));
    if (S->average_actors && S->average_steps == 0)
        return zt_fail(ZT_ERR_INVALID,
                       "learner.average_actors needs learner.average > 0 (there is no average "
                       "to publish)");
    ZT_TRY(zt_config_double(c, "reanalyse.fraction", 0.0, 0, 1, &S->reanalyse_fraction));
    ZT_TRY(zt_config_int32(c, "reanalyse.simulations", 0, 0, 1 << 20, &S->reanalyse_simulations));
    ZT_TRY(zt_config_double(c, "reanalyse.value_mix", 0.5, 0, 1, &S->reanalyse_value_mix));
    ZT_TRY(zt_config_int32(c, "reanalyse.trees", 64, 1, 1 << 16, &S->reanalyse_trees));
    ZT_TRY(zt_config_bool(c, "reanalyse.idle", false, &S->reanalyse_idle));
    /* The idle thread takes the core time a concurrent run's learner and
     * actors leave; the alternate and deterministic modes have no such
     * thread, and reanalyse there on the learner's schedule only with idle
     * false. So a config that asks for the idle thread (configs/connect4.ini
     * does) reanalyses nothing in those modes, rather than failing or
     * loading F x batch searches per step onto their learner; the run says
     * so at its start (log_start). */
    S->reanalyse_off_by_mode =
        S->reanalyse_idle && S->reanalyse_fraction > 0 && S->mode != ZT_TRAIN_CONCURRENT;
    if (S->reanalyse_off_by_mode) S->reanalyse_fraction = 0;
    ZT_TRY(zt_config_int32(c, "alternate.steps", 0, 0, 1 << 30, &S->alternate_steps));

    ZT_TRY(zt_config_double(c, "checkpoint.minutes", 10, 0, 1e6, &S->checkpoint_minutes));
    ZT_TRY(zt_config_int32(c, "checkpoint.keep", 3, 0, 1 << 20, &S->keep_checkpoints));
    ZT_TRY(zt_config_double(c, "log.seconds", 10, 0.01, 1e6, &S->log_seconds));

    /* The game's defaults come from its registry entry (game.h). */
    const char *opponents = g->def && g->def->arena_opponents ? g->def->arena_opponents : "random";
    int positions_limit = g->def ? g->def->arena_positions_limit : 0;
    ZT_TRY(zt_config_double(c, "arena.minutes", 5, 0, 1e6, &S->arena_minutes));
    ZT_TRY(zt_config_int32(c, "arena.games", 100, 0, 1 << 20, &S->arena_games));
    ZT_TRY(zt_config_bool(c, "arena.duplicate", true, &S->arena_duplicate));
    ZT_TRY(read_opponents(c, g, opponents, S));
    ZT_TRY(zt_config_bool(c, "arena.positions", true, &S->arena_positions));
    ZT_TRY(zt_config_int32(c, "arena.positions_limit", positions_limit, 0, 1 << 30,
                   &S->arena_positions_limit));
    ZT_TRY(zt_config_int32(c, "arena.sims", A->search.num_simulations, 0, 1 << 20, &S->arena_sims));
    ZT_TRY(zt_config_bool(c, "arena.stop_on_perfect", false, &S->arena_stop_on_perfect));
    ZT_TRY(zt_config_string(c, "arena.data_dir", "", &S->data_dir));
    ZT_TRY(zt_config_int32(c, "dist.learners", 1, 1, 4096, &S->dist_learners));
    ZT_TRY(zt_config_double(c, "dist.timeout", 30, 0.1, 1e6, &S->dist_timeout));
    ZT_TRY(zt_config_int32(c, "dist.check_every", 100, 0, 1 << 30, &S->dist_check_every));

    if (S->mode == ZT_TRAIN_DETERMINISTIC) {
        /* One thread: the actor runs inline, batches are drawn synchronously,
         * the learner's net computes on the calling thread alone. */
        S->actors = 1;
        S->learner_threads = 1;
        S->prefetch = false;
    }
    A->continuous = S->mode == ZT_TRAIN_CONCURRENT;
    A->seed = S->seed;
    if (S->batch > S->replay.capacity)
        return zt_fail(ZT_ERR_INVALID, "learner.batch %d exceeds replay.capacity %lld", S->batch,
                       (long long)S->replay.capacity);
    return ZT_OK;
}

zt_train_threads zt_train_thread_budget(const zt_train_settings *S, int cores)
{
    zt_train_threads b = {.actors = S->actors,
                          .learner = S->learner_threads,
                          .evaluator = S->evaluator == ZT_EVALUATOR_SHARED ? S->actors : 0,
                          .cores = cores};
    /* Self-play: the actors, or with the shared evaluator the service's
     * team running while at least one actor waits for it. */
    int selfplay = b.evaluator > 0 ? b.actors - 1 + (b.evaluator > 1 ? b.evaluator : 1) : b.actors;
    /* The arena runs on the learner's thread with as many threads, in its
     * place; the sampler thread is light and not counted, nor is
     * reanalyse.idle's thread (idle priority: it takes no busy core). */
    b.busy = S->mode == ZT_TRAIN_CONCURRENT ? selfplay + b.learner
                                            : (selfplay > b.learner ? selfplay : b.learner);
    b.oversubscribed = b.busy > cores;
    return b;
}

zt_status zt_train_check_threads(zt_config *cfg, const char *game, zt_train_threads *out)
{
    zt_game *g;
    ZT_TRY(zt_game_new(game, cfg, &g));
    zt_train_settings S;
    zt_status st = zt_train_settings_read(cfg, g, &S);
    if (st == ZT_OK) *out = zt_train_thread_budget(&S, zt_cpu_count());
    zt_game_free(g);
    return st;
}

/* The start states read so far. */
typedef struct start_states {
    const zt_game *g;
    uint8_t *states;
    int n, cap;
} start_states;

static zt_status add_start_state(const zt_position *pos, void *ctx)
{
    start_states *ss = ctx;
    size_t size = ss->g->state_size;
    ss->states = zt_xgrow(ss->states, &ss->cap, ss->n + 1, size);
    memcpy(ss->states + (size_t)ss->n++ * size, pos->state, size);
    return ZT_OK;
}

zt_status zt_train_start_states(const zt_game *g, zt_train_settings *S, uint8_t **owned)
{
    static const char what[] = "selfplay.start_positions";
    *owned = NULL;
    S->actor.start_states = NULL;
    S->actor.num_start_states = 0;
    const char *list = S->start_positions;
    if (!list || !*list) return ZT_OK;
    zt_solver *sv;
    zt_status st = zt_solver_new(g, &sv);
    if (st != ZT_OK) return zt_fail(st, "%s: %s has no position files", what, g->name);
    start_states ss = {.g = g};
    for (const char *p = list; st == ZT_OK;) {
        char name[1024], path[4096];
        bool got;
        if ((st = zt_list_next(list, &p, what, name, sizeof name, &got)) != ZT_OK || !got) break;
        /* a path as given, else a name under the reference data */
        if (access(name, R_OK) == 0 || !zt_data_find(S->data_dir, name, path, sizeof path))
            snprintf(path, sizeof path, "%s", name);
        st = zt_position_file_each(path, sv, what, add_start_state, &ss);
    }
    zt_solver_free(sv);
    if (st != ZT_OK) {
        free(ss.states);
        return st;
    }
    S->actor.start_states = ss.states;
    S->actor.num_start_states = ss.n;
    *owned = ss.states;
    return ZT_OK;
}

zt_search_config zt_train_arena_search(const zt_train_settings *S, const zt_game *g)
{
    zt_search_config sc = S->actor.search;
    sc.num_simulations = S->arena_sims;
    sc.gumbel_noise = false;
    sc.dirichlet_fraction = 0;
    sc.node_capacity = 0;
    sc.edge_capacity = 0;
    zt_search_config_size(&sc, g, 0);
    return sc;
}
