/* zeroth play GAME --model M: a game against the model in the terminal. The
 * board is shown before every move; on its turns the agent shows its value
 * estimate and its most visited moves; the human types moves in the game's
 * notation (bad input is asked again; end of input leaves). Dice are rolled
 * by the program and shown. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/greedy.h"
#include "cli/cli.h"
#include "core/rng.h"
#include "search/search.h"
#include "search/settings.h"
#include "train/run.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth play GAME --model M [--sims S | --greedy [--plies P]]\n"
               "                   [--first human|agent] [--seed N] [--set k=v]\n\n"
               "Plays one game against a model (a weights file, a checkpoint or a run directory)\n"
               "in the terminal. Type a move in the game's notation (tictactoe: a cell 0..8;\n"
               "connect4: a column 1..7; sim: an edge u-v; backgammon: one checker move such as\n"
               "24/18, bar/22 or 5/off, or a whole play '24/18 13/9'; 2048: up, right, down, left\n"
               "or u, r, d, l), 'moves' to list the legal moves, 'quit' to leave. In a one-player\n"
               "game (2048) you play alone, or with --first agent watch the agent play.\n"
               "  --sims S         simulations per agent move (0: the raw policy); short for\n"
               "                   --set search.sims=S\n"
               "  --greedy         no search: each turn ends where the net's value is highest\n"
               "                   (backgammon: the best complete play, gnubg's 0-ply)\n"
               "  --plies P        greedy play P plies deeper (0 or 1, default 0; 1: the best\n"
               "                   8 plays valued by the opponent's best replies, gnubg's 1-ply)\n"
               "  --first WHO      who plays first, human (default) or agent (one player: who plays)\n"
               "  --seed N         seed of the dice and the search (default: the clock)\n"
               "  --set k=v        search settings search.KEY as for zeroth eval\n"
               "                   (search.algorithm=puct, ...; search.gumbel_noise default off)\n\n"
               "A run or checkpoint directory plays with its run's search (the search.* keys\n"
               "of RUN/config.ini, without self-play's noise), a weights file with the\n"
               "defaults; flags override either. A run whose arena played greedily\n"
               "(arena.sims = 0, backgammon's default) plays greedily unless --sims is given.\n");
}

typedef struct session {
    const zt_game *g;
    zt_evaluator ev;
    zt_model *model;   /* NULL with the raw policy and greedy */
    zt_search *search; /* NULL with the raw policy and greedy */
    zt_greedy *greedy; /* NULL unless greedy */
    int sims;
    float *obs, *logits;
} session;

typedef struct scored_move {
    int action;
    double share;
} scored_move;

static int by_share(const void *a, const void *b)
{
    const scored_move *x = a, *y = b;
    if (x->share != y->share) return x->share < y->share ? 1 : -1;
    return x->action - y->action;
}

/* The agent's move in s, with its value estimate and its top moves printed. */
/* The agent's move, or -1 when its network call failed (the message is set). */
static int agent_move(session *ss, const void *s)
{
    const zt_game *g = ss->g;
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    scored_move mv[ZT_MAX_ACTIONS];
    float value;
    int choice;
    if (ss->greedy) {
        /* one slot: the turn's plan goes on while the state is the one it
         * expects, and a new turn (or the human's) makes a new one */
        if (zt_greedy_choose(ss->greedy, 0, s, &choice, &value) != ZT_OK) return -1;
        printf("agent: value %+.3f (its own view: +1 a win, -1 a loss); greedy, the best end "
               "of its turn\n",
               value);
        return choice;
    }
    if (ss->search) {
        int32_t visits[ZT_MAX_ACTIONS];
        zt_search_begin(ss->search, 0, s);
        if (zt_search_run(ss->search) != ZT_OK) return -1;
        choice = zt_search_choose(ss->search, 0, 0.0f);
        value = zt_search_root_value(ss->search, 0);
        zt_search_root_visits(ss->search, 0, visits);
        long total = 0;
        for (int i = 0; i < n; i++) total += visits[legal[i]];
        for (int i = 0; i < n; i++)
            mv[i] = (scored_move){legal[i], total ? (double)visits[legal[i]] / (double)total : 0};
    } else {
        g->observe(g, s, ss->obs);
        if (ss->ev.eval(ss->ev.ctx, 1, ss->obs, ss->logits, &value) != ZT_OK) return -1;
        float top = -INFINITY;
        for (int i = 0; i < n; i++) top = fmaxf(top, ss->logits[legal[i]]);
        double z = 0;
        for (int i = 0; i < n; i++) z += exp(ss->logits[legal[i]] - top);
        choice = legal[0];
        for (int i = 0; i < n; i++) {
            mv[i] = (scored_move){legal[i], exp(ss->logits[legal[i]] - top) / z};
            if (ss->logits[legal[i]] > ss->logits[choice]) choice = legal[i];
        }
    }
    qsort(mv, (size_t)n, sizeof mv[0], by_share);
    printf("agent: value %+.3f (its own view: +1 a win, -1 a loss); %s:", value,
           ss->search ? "visit share" : "policy");
    for (int i = 0; i < n && i < 5; i++) {
        char t[64];
        g->action_to_text(g, s, mv[i].action, t, sizeof t);
        printf(" %s %.0f%%", t, 100.0 * mv[i].share);
    }
    printf("\n");
    return choice;
}

static void list_moves(const zt_game *g, const void *s)
{
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    printf("legal moves:");
    for (int i = 0; i < n; i++) {
        char t[64];
        g->action_to_text(g, s, legal[i], t, sizeof t);
        printf(" %s", t);
    }
    printf("\n");
}

/* Reads one line; false at end of input. Long lines are read whole and cut. */
static bool read_line(char *buf, size_t cap)
{
    if (!fgets(buf, (int)cap, stdin)) return false;
    size_t len = strlen(buf);
    if (len > 0 && buf[len - 1] != '\n') {
        int c;
        while ((c = getchar()) != EOF && c != '\n') {
        }
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                       buf[len - 1] == '\t'))
        buf[--len] = '\0';
    return true;
}

/* Parses the human's input: one move, or several moves separated by spaces
 * or commas that the same player plays in a row (a backgammon play). On
 * success the moves are in actions[*n]; else a message says what is wrong. */
static bool parse_moves(const zt_game *g, const void *s, char *text, int *actions, int max, int *n,
                        char *why, size_t cap)
{
    uint8_t cur[ZT_MAX_STATE_BYTES];
    memcpy(cur, s, g->state_size);
    int player = g->current_player(g, s);
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(text, " ,\t", &save); tok; tok = strtok_r(NULL, " ,\t", &save)) {
        if (*n == max || (*n > 0 && g->current_player(g, cur) != player)) {
            snprintf(why, cap, "too many moves: your turn ends before '%s'", tok);
            return false;
        }
        int a;
        if (g->action_from_text(g, cur, tok, &a) != ZT_OK) {
            snprintf(why, cap, "%s", zt_error_message());
            return false;
        }
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, cur, mask);
        if (a < 0 || a >= g->num_actions || !mask[a]) {
            snprintf(why, cap, "'%s' is not a legal move here", tok);
            return false;
        }
        g->apply(g, cur, a);
        actions[(*n)++] = a;
    }
    if (*n == 0) {
        snprintf(why, cap, "no move given");
        return false;
    }
    return true;
}

static void show(const zt_game *g, const void *s)
{
    char board[4 * ZT_MAX_TEXT];
    g->render(g, s, board, sizeof board);
    printf("\n%s", board);
    size_t len = strlen(board);
    if (len == 0 || board[len - 1] != '\n') printf("\n");
}

static void played(session *ss, int action)
{
    if (ss->search) zt_search_played(ss->search, 0, action);
}

/* Plays the game; returns 0 at its end or when the human leaves. */
static int play_game(session *ss, int human, zt_rng *rng)
{
    const zt_game *g = ss->g;
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    bool one_player = zt_game_num_players(g) == 1;
    if (one_player)
        printf("%s: %s\n", g->title, human == 0 ? "you play" : "the agent plays, you watch");
    else
        printf("%s: you play %s\n", g->title, human == 0 ? "first" : "second");
    bool shown = false;
    for (;;) {
        int p = g->current_player(g, s);
        if (p == ZT_TERMINAL) break;
        if (p == ZT_CHANCE) {
            int o = zt_game_sample_chance(g, s, rng);
            char t[64];
            g->action_to_text(g, s, o, t, sizeof t);
            g->apply(g, s, o);
            played(ss, o);
            int next = g->current_player(g, s);
            /* two chance nodes in a row: the mover had no move (backgammon);
             * in a one-player game, the opening spawns */
            printf("\nroll: %s%s\n", t, next == ZT_CHANCE && !one_player ? " (no legal move)" : "");
            shown = false;
            continue;
        }
        if (!shown) show(g, s);
        shown = true;
        if (p != human) {
            int a = agent_move(ss, s);
            if (a < 0) return zt_cli_fail(ZT_ERR_IO);
            char t[64];
            g->action_to_text(g, s, a, t, sizeof t);
            printf("agent plays %s\n", t);
            g->apply(g, s, a);
            played(ss, a);
            shown = false;
            continue;
        }
        printf("your move ('moves' lists them, 'quit' leaves): ");
        fflush(stdout);
        char line[512], why[256];
        if (!read_line(line, sizeof line)) {
            printf("\nend of input: game abandoned\n");
            return 0;
        }
        /* Piped input is not echoed by a terminal: show what was read. */
        if (!isatty(STDIN_FILENO)) printf("%s\n", line);
        if (line[0] == '\0') continue;
        if (strcmp(line, "quit") == 0 || strcmp(line, "q") == 0) {
            printf("game abandoned\n");
            return 0;
        }
        if (strcmp(line, "moves") == 0 || strcmp(line, "help") == 0 || strcmp(line, "?") == 0) {
            list_moves(g, s);
            continue;
        }
        int actions[8], n;
        if (!parse_moves(g, s, line, actions, 8, &n, why, sizeof why)) {
            printf("%s; try again\n", why);
            continue;
        }
        for (int i = 0; i < n; i++) {
            g->apply(g, s, actions[i]);
            played(ss, actions[i]);
        }
        shown = false;
    }
    show(g, s);
    float r[2];
    g->returns(g, s, r);
    if (one_player)
        printf("game over: score %g\n", r[0]);
    else if (r[human] > 0)
        printf("you win (%+g)\n", r[human]);
    else if (r[human] < 0)
        printf("the agent wins (%+g)\n", r[1 - human]);
    else
        printf("a draw\n");
    return 0;
}

int zt_cmd_play(int argc, char **argv)
{
    zt_config *cfg = zt_config_new();
    const char *game_name = NULL, *model_path = NULL, *sims_arg = NULL, *first = "human";
    const char *seed_arg = NULL, *plies_arg = NULL;
    bool greedy = false;
    zt_status st = ZT_OK;
    int rc = 1;
    zt_game *g = NULL;
    zt_net *net = NULL;
    session ss = {0};

    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--model", &model_path, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--sims", &sims_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--first", &first, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--plies", &plies_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--seed", &seed_arg, &st)) {
            if (st != ZT_OK) goto fail;
        } else if (strcmp(argv[i], "--greedy") == 0) {
            greedy = true;
        } else if ((rc = zt_cli_positional("play", argv[i], (const char **const[]){&game_name}, 1)) != 0) {
            goto done;
        }
    }
    if (!game_name || !model_path || (greedy && sims_arg) || (plies_arg && sims_arg)) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    int human;
    if (strcmp(first, "human") == 0) {
        human = 0;
    } else if (strcmp(first, "agent") == 0) {
        human = 1;
    } else {
        rc = zt_cli_error("play: --first must be human or agent, not '%s'", first);
        goto done;
    }
    uint64_t seed = (uint64_t)time(NULL);
    if (seed_arg) {
        char *end;
        unsigned long long v = strtoull(seed_arg, &end, 10);
        if (!*seed_arg || *end) {
            rc = zt_cli_error("play: --seed must be a non-negative integer, not '%s'", seed_arg);
            goto done;
        }
        seed = v;
    }
    if (sims_arg) {
        char *end;
        long v = strtol(sims_arg, &end, 10);
        if (!*sims_arg || *end || v < 0 || v > 1000000) {
            rc =
                zt_cli_error("play: --sims must be an integer in [0, 1000000], not '%s'", sims_arg);
            goto done;
        }
        zt_config_put(cfg, "search.sims", sims_arg);
    }

    zt_search_config sc;
    char run_config[4200];
    /* Deterministic by default: the agent's best, not an exploring move. */
    bool run_greedy;
    if ((st = zt_run_open_player(model_path, game_name, cfg, false, &g, &net, &sc, run_config,
                                 sizeof run_config, &run_greedy)) != ZT_OK)
        goto fail;
    int plies;
    char what[128];
    if ((rc = zt_cli_greedy_play("play", &greedy, run_greedy, plies_arg, &plies, what,
                                 sizeof what)) != 0)
        goto done;
    rc = 1;
    zt_search_config_size(&sc, g, 0);
    if ((st = zt_config_check_unused(cfg)) != ZT_OK) goto fail;
    sc.seed = seed;
    ss.g = g;
    ss.sims = sc.num_simulations;
    if ((st = zt_run_evaluator_new(net, &ss.ev)) != ZT_OK) goto fail;
    if (greedy) {
        if ((st = zt_greedy_new(g, &ss.ev, 1, 256, plies, &ss.greedy)) != ZT_OK) goto fail;
    } else if (sc.num_simulations > 0) {
        if ((st = zt_model_for_evaluator(g, &ss.ev, sc.leaves_per_round, NULL, &ss.model)) != ZT_OK)
            goto fail;
        if ((st = zt_search_new(&sc, ss.model, 1, &ss.search)) != ZT_OK) goto fail;
    } else {
        size_t obs = (size_t)zt_game_obs_size(g);
        ss.obs = calloc(obs, sizeof(float));
        ss.logits = calloc((size_t)g->num_actions, sizeof(float));
        if (!ss.obs || !ss.logits) {
            rc = zt_cli_error("play: out of memory");
            goto done;
        }
    }
    zt_rng rng;
    zt_rng_seed(&rng, seed, 0);
    if (!greedy)
        snprintf(what, sizeof what, "%s",
                 sc.num_simulations == 0            ? "raw policy"
                 : sc.algorithm == ZT_SEARCH_GUMBEL ? "gumbel search"
                                                    : "puct search");
    printf("model %s; agent: %s (seed %llu)\n", model_path, what, (unsigned long long)seed);
    if (!greedy && sc.num_simulations > 0) printf("%d simulations per move\n", sc.num_simulations);
    if (run_config[0]) printf("search settings of %s (flags override them)\n", run_config);
    rc = play_game(&ss, human, &rng);
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    zt_greedy_free(ss.greedy);
    zt_search_free(ss.search);
    zt_model_free(ss.model);
    zt_run_evaluator_free(&ss.ev);
    free(ss.obs);
    free(ss.logits);
    zt_net_free(net);
    zt_game_free(g);
    zt_config_free(cfg);
    return rc;
}
