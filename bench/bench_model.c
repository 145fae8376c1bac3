/* zeroth bench model: a MuZero net judged in its parts on solved positions,
 * with no search. At each position of a position file: does the value of
 * h(observation) have the sign of the exact value, and does the move each
 * of three one-move lookaheads picks keep the exact value? The policy's
 * first move; one step of the learned model (the move's reward minus the
 * value of g's next state); and one step of the rules (the real next
 * position's outcome, or minus the value h gives its observation). The
 * last is one move of lookahead with perfect dynamics: where it is no
 * better than the policy, the value gives a search little to go on. With
 * --replay, the positions of a run's replay buffer where the side to move
 * could win at once: how often self-play took the win, and how often the
 * policy and one model step would. docs/muzero.md ("Connect Four") reads these. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/config.h"
#include "game/solver.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "train/run.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench model GAME --model M --positions FILE [--limit N]\n"
               "                          [--replay FILE [--recent N]] [--set k=v]\n\n"
               "Judges a MuZero net's parts on a position file of a deterministic two-player\n"
               "game with a solver (tictactoe, connect4, sim), without search: the share of\n"
               "positions whose root value f(h(o)) has the exact value's sign, and the share\n"
               "where the move picked keeps the exact value, by the policy, by one step of\n"
               "the learned model (reward - value of g's next state) and by one step of the\n"
               "rules (the real next position's outcome, else - the value of its h), all\n"
               "positions and the won ones. The rules' step is one move of lookahead with a\n"
               "perfect model: where it does no better than the policy, the value gives a\n"
               "search little to go on.\n"
               "  --model M      a weights file, a checkpoint or a run directory (MuZero)\n"
               "  --positions F  a position file, as eval --positions reads\n"
               "  --limit N      only the first N positions\n"
               "  --replay FILE  also a replay checkpoint (a run's ckpt/STEP/replay.bin): of its\n"
               "                 positions where the side to move could win at once, the share\n"
               "                 where self-play took a win, and where the policy's first move\n"
               "                 and one model step's best move win\n"
               "  --recent N     only the newest N positions of the replay (default: all)\n"
               "  --set k=v      network settings (backend, precision, threads)\n");
}

/* One position's three lookaheads over a MuZero net, in the scratch of a
 * prober sized for the game: per legal move (at most A) a copy of the
 * root's hidden state, g's next state, the real next observation and the
 * net's outputs. */
typedef struct prober {
    const zt_game *g;
    zt_net *net;
    size_t obs, hidden;
    float *block;
    float *o, *h, *hs, *after, *next_obs, *logits, *value, *reward, *next_logits, *next_value;
    float *q_model, *q_rules; /* per legal move */
    uint16_t legal[ZT_MAX_ACTIONS];
    int num_legal;
    float root_value;
} prober;

static zt_status prober_init(prober *p, const zt_game *g, zt_net *net)
{
    size_t A = (size_t)g->num_actions;
    *p = (prober){.g = g, .net = net};
    p->obs = (size_t)zt_game_obs_size(g);
    p->hidden = zt_net_hidden_size(zt_net_config_of(net));
    p->block = zt_xcalloc(p->obs * (1 + A) + p->hidden * (1 + 2 * A) + A * (A + 7), sizeof(float));
    float *at = p->block;
    p->o = at, at += p->obs;
    p->next_obs = at, at += p->obs * A;
    p->h = at, at += p->hidden;
    p->hs = at, at += p->hidden * A;
    p->after = at, at += p->hidden * A;
    p->logits = at, at += A;
    p->value = at, at += A;
    p->reward = at, at += A;
    p->next_logits = at, at += A * A;
    p->next_value = at, at += A;
    p->q_model = at, at += A;
    p->q_rules = at;
    return zt_net_reserve(net, (int)A);
}

static void prober_free(prober *p)
{
    free(p->block);
}

/* The root's value and policy at s, and both lookaheads' value of each
 * legal move for the side to move. */
static zt_status probe(prober *p, const void *s)
{
    const zt_game *g = p->g;
    int mover = g->current_player(g, s), n = g->legal(g, s, p->legal);
    p->num_legal = n;
    g->observe(g, s, p->o);
    ZT_TRY(zt_net_initial(p->net, 1, p->o, p->h, p->logits, p->value));
    p->root_value = zt_game_value_from_net(g, p->value[0]);
    /* one model step: every legal move from the root's hidden state */
    int actions[ZT_MAX_ACTIONS], live[ZT_MAX_ACTIONS], n_live = 0;
    for (int i = 0; i < n; i++) {
        actions[i] = p->legal[i];
        memcpy(p->hs + (size_t)i * p->hidden, p->h, p->hidden * sizeof(float));
    }
    ZT_TRY(zt_net_recurrent(p->net, n, p->hs, actions, p->after, p->reward, p->next_logits,
                            p->next_value, NULL));
    for (int i = 0; i < n; i++)
        p->q_model[i] =
            zt_game_value_from_net(g, p->reward[i]) - zt_game_value_from_net(g, p->next_value[i]);
    /* one rules step: the real next position */
    for (int i = 0; i < n; i++) {
        uint8_t t[ZT_MAX_STATE_BYTES];
        memcpy(t, s, g->state_size);
        g->apply(g, t, actions[i]);
        if (g->current_player(g, t) == ZT_TERMINAL) {
            float r[2];
            g->returns(g, t, r);
            p->q_rules[i] = r[mover];
        } else {
            g->observe(g, t, p->next_obs + (size_t)n_live * p->obs);
            live[n_live++] = i;
        }
    }
    if (n_live > 0) {
        ZT_TRY(
            zt_net_initial(p->net, n_live, p->next_obs, p->after, p->next_logits, p->next_value));
        for (int j = 0; j < n_live; j++)
            p->q_rules[live[j]] = -zt_game_value_from_net(g, p->next_value[j]);
    }
    return ZT_OK;
}

/* The legal move (index into p->legal) with the highest of v[]; the policy
 * when v is NULL. Ties: the first. */
static int best_move(const prober *p, const float *v)
{
    int best = 0;
    for (int i = 1; i < p->num_legal; i++) {
        float a = v ? v[i] : p->logits[p->legal[i]], b = v ? v[best] : p->logits[p->legal[best]];
        if (a > b) best = i;
    }
    return best;
}

enum { BY_POLICY, BY_MODEL, BY_RULES, LOOKAHEADS };
static const char *const lookahead_names[LOOKAHEADS] = {
    "policy's first move", "one model step (r - v(g))", "one rules step (-v(h(next)))"};

typedef struct tally {
    long positions, decided, sign_right, won;
    long keeps[LOOKAHEADS], won_keeps[LOOKAHEADS];
} tally;

static zt_status judge_file(prober *p, zt_solver *sv, const char *path, long limit, tally *t)
{
    zt_position_file pf;
    ZT_TRY(zt_position_file_open(path, &pf));
    zt_status st = ZT_OK;
    zt_position pos;
    bool got = true;
    while (st == ZT_OK && (limit == 0 || t->positions < limit)) {
        st = zt_position_file_next(&pf, sv, &pos, &got);
        if (st != ZT_OK || !got) break;
        zt_solution sol;
        bool known; /* the value: the file's moves may come without it */
        st = zt_position_moves(sv, &pos, &sol, &known);
        if (st == ZT_OK && sol.cut)
            st = zt_fail(ZT_ERR_INVALID, "%s:%ld: the solver gave up on this position", path,
                         pf.line_no);
        if (st == ZT_OK) st = probe(p, pos.state);
        if (st != ZT_OK) break;
        bool keeps[ZT_MAX_ACTIONS] = {false};
        for (int j = 0; j < sol.num_moves; j++) keeps[sol.moves[j]] = true;
        t->positions++;
        bool won = known && sol.value > 0;
        if (known && sol.value != 0) {
            t->decided++;
            t->sign_right += (p->root_value > 0) == (sol.value > 0);
        }
        t->won += won;
        const float *by[LOOKAHEADS] = {NULL, p->q_model, p->q_rules};
        for (int k = 0; k < LOOKAHEADS; k++) {
            bool kept = keeps[p->legal[best_move(p, by[k])]];
            t->keeps[k] += kept;
            if (won) t->won_keeps[k] += kept;
        }
    }
    zt_position_file_close(&pf);
    return st;
}

static double pct(long a, long b)
{
    return b > 0 ? 100.0 * (double)a / (double)b : 0.0;
}

enum { SLICES = 10 };

static zt_status judge_replay(prober *p, const char *path, long recent)
{
    const zt_game *g = p->g;
    zt_replay *rb;
    ZT_TRY(zt_replay_load(g, path, &rb));
    zt_replay_stats rs = zt_replay_get_stats(rb);
    int64_t last = rs.positions_seen, first = last - rs.positions;
    if (recent > 0 && last - recent > first) first = last - recent;
    long seen = 0, chances = 0, recorded = 0, taken = 0, policy = 0, model = 0;
    long sliced[SLICES] = {0}, sliced_taken[SLICES] = {0}, missed[3] = {0}; /* won, drawn, lost */
    zt_status st = ZT_OK;
    for (int64_t i = first; i < last && st == ZT_OK; i++) {
        zt_replay_position pos;
        st = zt_replay_get(rb, i, &pos, NULL);
        if (st != ZT_OK) break;
        seen++;
        if (!zt_game_wins_at_once(g, pos.state)) continue;
        chances++;
        if (pos.action >= 0) {
            bool took = zt_game_move_wins(g, pos.state, pos.action);
            int slice = (int)((i - first) * SLICES / (last - first));
            recorded++;
            taken += took;
            sliced[slice]++;
            sliced_taken[slice] += took;
            if (!took) missed[pos.outcome > 0 ? 0 : pos.outcome < 0 ? 2 : 1]++;
        }
        st = probe(p, pos.state);
        if (st != ZT_OK) break;
        policy += zt_game_move_wins(g, pos.state, p->legal[best_move(p, NULL)]);
        model += zt_game_move_wins(g, pos.state, p->legal[best_move(p, p->q_model)]);
    }
    if (st == ZT_OK) {
        printf("replay %s: %ld positions%s, %ld where the side to move could win at once\n", path,
               seen, recent > 0 ? " (the newest)" : "", chances);
        if (chances > 0) {
            if (recorded > 0) {
                printf("  self-play took a win in %.1f %% (%ld of %ld)\n", pct(taken, recorded),
                       taken, recorded);
                printf("  ... by tenth of the positions read, oldest first, %%:");
                for (int k = 0; k < SLICES; k++) printf(" %.0f", pct(sliced_taken[k], sliced[k]));
                long m = missed[0] + missed[1] + missed[2];
                printf("\n  after a win missed the mover's game was won %.1f %%, drawn %.1f %%, "
                       "lost %.1f %% (%ld misses)\n",
                       pct(missed[0], m), pct(missed[1], m), pct(missed[2], m), m);
            } else
                printf("  self-play's moves are not recorded (an AlphaZero run's replay)\n");
            printf("  the policy's first move wins in %.1f %%, one model step's best in %.1f %%\n",
                   pct(policy, chances), pct(model, chances));
        }
    }
    zt_replay_free(rb);
    return st;
}

int zt_bench_model(int argc, char **argv)
{
    const char *game_name = NULL, *model = NULL, *positions = NULL, *replay = NULL;
    const char *limit_arg = NULL, *recent_arg = NULL;
    zt_config *cfg = zt_config_new();
    zt_status st = ZT_OK;
    int rc = 1;
    zt_game *g = NULL;
    zt_net *net = NULL;
    zt_solver *sv = NULL;
    prober p = {0};
    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--model", &model, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--positions", &positions, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--limit", &limit_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--replay", &replay, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--recent", &recent_arg, &st)) {
            if (st != ZT_OK) goto fail;
        } else if ((rc = zt_cli_positional("bench model", argv[i],
                                           (const char **const[]){&game_name}, 1)) != 0) {
            goto done;
        }
    }
    rc = 1;
    if (!game_name || !model || !positions) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    long limit = 0, recent = 0;
    char *end;
    if (limit_arg && ((limit = strtol(limit_arg, &end, 10)) < 1 || *end)) {
        rc = zt_cli_error("bench model: --limit: expected a positive count, got '%s'", limit_arg);
        goto done;
    }
    if (recent_arg && ((recent = strtol(recent_arg, &end, 10)) < 1 || *end)) {
        rc = zt_cli_error("bench model: --recent: expected a positive count, got '%s'", recent_arg);
        goto done;
    }
    if (recent_arg && !replay) {
        rc = zt_cli_error("bench model: --recent needs --replay");
        goto done;
    }
    zt_search_config sc;
    char from[PATH_MAX + 64];
    if ((st = zt_run_open_player(model, game_name, cfg, false, &g, &net, &sc, from, sizeof from,
                                 NULL)) != ZT_OK)
        goto fail;
    if ((st = zt_config_check_unused(cfg)) != ZT_OK) goto fail;
    const zt_net_config *nc = zt_net_config_of(net);
    if (nc->kind != ZT_NET_MUZERO || nc->chance_codes > 0 || nc->turn_head) {
        rc = zt_cli_error("bench model: %s is not a MuZero net of a game whose turns alternate "
                          "(an AlphaZero or Stochastic MuZero net, or one with a to-play head)",
                          model);
        goto done;
    }
    if (zt_game_num_players(g) != 2 || g->max_chance_outcomes > 0) {
        rc = zt_cli_error("bench model: %s is not a deterministic two-player game", g->title);
        goto done;
    }
    if ((st = zt_solver_new(g, &sv)) != ZT_OK) goto fail;
    if ((st = prober_init(&p, g, net)) != ZT_OK) goto fail;
    char arch[256];
    zt_net_config_format(nc, arch, sizeof arch);
    printf("bench model %s: %s (%s, %s)\n", g->title, model, arch, zt_net_backend_name(net));
    tally t = {0};
    if ((st = judge_file(&p, sv, positions, limit, &t)) != ZT_OK) goto fail;
    printf("positions %s: %ld (%ld won, %ld decided)\n", positions, t.positions, t.won, t.decided);
    printf("  root value's sign right: %.1f %% of the decided (%ld of %ld)\n",
           pct(t.sign_right, t.decided), t.sign_right, t.decided);
    printf("  the move keeps the exact value: all positions, won ones\n");
    for (int k = 0; k < LOOKAHEADS; k++)
        printf("    %-30s %5.1f %%  %5.1f %%\n", lookahead_names[k], pct(t.keeps[k], t.positions),
               pct(t.won_keeps[k], t.won));
    if (replay && (st = judge_replay(&p, replay, recent)) != ZT_OK) goto fail;
    rc = 0;
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    prober_free(&p);
    zt_solver_free(sv);
    zt_net_free(net);
    zt_game_free(g);
    zt_config_free(cfg);
    return rc;
}
