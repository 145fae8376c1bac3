/* Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<name>/)
 * with the project's own writers: positions and moves of random games,
 * trajectories and replay buffers of them, weights and optimizer state of
 * the tiny nets fuzz_safetensors.c loads, a state.bin, INI snippets. Seeds
 * named ok-* must be accepted by their parser (replay_main.c checks). Run
 * again after a format change:
 *   build/fuzz_corpus tests/fuzz/corpus .
 * Deterministic: the same build writes the same files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/rng.h"
#include "game/backgammon.h"
#include "game/game.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "train/train.h"

static const char *out_dir;

static void die(const char *what)
{
    fprintf(stderr, "fuzz_corpus: %s: %s\n", what, zt_error_message());
    exit(1);
}

/* Writes corpus/<harness>/<name>; a selector byte first when sel >= 0. */
static void put(const char *harness, const char *name, int sel, const void *data, size_t len)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/%s", out_dir, harness);
    if (zt_mkdirs(dir) != ZT_OK) die(dir);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    uint8_t *buf = malloc(len + 1);
    size_t n = 0;
    if (sel >= 0) buf[n++] = (uint8_t)sel;
    memcpy(buf + n, data, len);
    if (zt_write_file_atomic(path, buf, n + len) != ZT_OK) die(path);
    free(buf);
}

static void put_text(const char *harness, const char *name, int sel, const char *text)
{
    put(harness, name, sel, text, strlen(text));
}

static zt_game *game(const char *spec)
{
    zt_game *g;
    if (zt_game_from_spec(spec, &g) != ZT_OK) die(spec);
    return g;
}

/* A random legal action (or chance outcome) at s. */
static int random_move(const zt_game *g, const void *s, zt_rng *rng)
{
    if (g->current_player(g, s) == ZT_CHANCE) {
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES];
        int n = g->chance_outcomes(g, s, outcomes, probs);
        return outcomes[zt_rng_below(rng, (uint32_t)n)];
    }
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    return legal[zt_rng_below(rng, (uint32_t)n)];
}

/* Game harnesses: "<sel><position>\n<action>" at a few plies of a random
 * game, and bad texts of the game's own kinds. */
static void game_seeds(const char *harness, const char *const *specs, int nspecs)
{
    zt_rng rng;
    zt_rng_seed(&rng, 7, 0);
    for (int which = 0; which < nspecs; which++) {
        zt_game *g = game(specs[which]);
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        int ply = 0, saved = 0;
        while (saved < 6) {
            char text[ZT_MAX_TEXT], move[128], seed[ZT_MAX_TEXT + 160], name[64];
            g->to_text(g, s, text, sizeof text);
            bool over = zt_game_is_terminal(g, s);
            int a = over ? -1 : random_move(g, s, &rng);
            move[0] = '\0';
            if (!over) g->action_to_text(g, s, a, move, sizeof move);
            if (ply % 3 == 0 || over) {
                snprintf(seed, sizeof seed, "%s\n%s", text, move);
                snprintf(name, sizeof name, "ok-%d-ply%02d", which, ply);
                put_text(harness, name, which, seed);
                saved++;
            }
            if (over) break;
            g->apply(g, s, a);
            ply++;
        }
        zt_game_free(g);
    }
}

static void games(void)
{
    static const char *const ttt[] = {"tictactoe"};
    game_seeds("tictactoe", ttt, 1);
    put_text("tictactoe", "bad-board", 0, "XXO.O.... O\n4");
    static const char *const c4[] = {"connect4"};
    game_seeds("connect4", c4, 1);
    put_text("connect4", "bad-column", 0, "4455667\n8");
    static const char *const sim[] = {"sim", "sim vertices=4 k=3 variant=make",
                                      "sim vertices=18 k=6 variant=avoid"};
    game_seeds("sim", sim, 3);
    put_text("sim", "bad-edge", 0, "R.B............ B\n2-2");
    static const char *const bg[] = {"backgammon"};
    game_seeds("backgammon", bg, 1);
    put_text("backgammon", "bad-dice", 0, "4HPwATDgc/ABMA:71 opening\nbar/22");
    static const char *const g2048[] = {"2048"};
    game_seeds("g2048", g2048, 1);
    put_text("g2048", "bad-spawn", 0, "2,0,0,0/0,0,0,0/0,0,0,0/0,0,0,0 0 spawn\n4@0");
}

static void gnubg_ids(void)
{
    zt_game *g = game("backgammon");
    zt_rng rng;
    zt_rng_seed(&rng, 8, 0);
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    for (int ply = 0, saved = 0; saved < 5 && !zt_game_is_terminal(g, s); ply++) {
        const bg_state *b = (const bg_state *)s;
        if (ply % 7 == 3) {
            char id[BG_ID_LEN + 1], seed[64], name[32];
            zt_bg_id_encode(b->board[b->turn], b->board[!b->turn], id);
            snprintf(seed, sizeof seed, "%s\n%d%d", id, 1 + ply % 6, 1 + (ply / 6) % 6);
            snprintf(name, sizeof name, "ok-ply%02d", ply);
            put_text("gnubg_id", name, -1, seed);
            saved++;
        }
        g->apply(g, s, random_move(g, s, &rng));
    }
    put_text("gnubg_id", "ok-start", -1, "4HPwATDgc/ABMA\n31");
    put_text("gnubg_id", "bad-char", -1, "4HPwATDgc/AB!A");
    zt_game_free(g);
}

static void positions(void)
{
    put_text("positions", "ok-tictactoe", 0,
             "# board side value moves\n......... X 0 0,1,2,3,4,5,6,7,8\n........X O 0 4\r\n"
             "\n.......X. O 0 1,4,6,8\nXO....... X\n");
    put_text("positions", "ok-connect4", 1,
             "5554224333234511764415115 4\n4455\n1233722555341451114725221333 -1\n");
    put_text("positions", "ok-sim", 2,
             ".R............. B +1 14 0,2,3,4,5,6,7,8,9,10,11,12,13,14 0,2,3,4\n"
             "BR..RB...R....B R -1 9 2,3,6,7,8,10,11,12,13 3,6,8,13\n..BB..RR.R..... B\n");
    put_text("positions", "bad-moves", 0, "......... X 0 9,1\n");
}

static void configs(const char *source_dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/configs/tictactoe.ini", source_dir);
    char *text;
    size_t len;
    if (zt_read_file(path, &text, &len) != ZT_OK) die(path);
    /* its head: a real file's comments, sections and keys, kept short
     * because the fuzzer's inputs grow to the largest seed */
    size_t head = 0;
    for (size_t i = 0; i < len && i < 1500; i++)
        if (text[i] == '\n') head = i + 1;
    put("config", "ok-tictactoe.ini", -1, text, head);
    free(text);
    put_text("config", "ok-sections", -1,
             "steps = 12\n[search]\nsims = 64\nalgorithm = gumbel\n  c_scale = 0.1\n"
             "[learner]\nlr = 2e-3\n[arena]\nstop_on_perfect = yes\n[run]\nnote = a ; comment\n");
    put_text("config", "ok-set", -1, "search.sims=32\nlearner.lr = 0.25\nflag=on\nvariant=make");
    put_text("config", "bad-line", -1, "[search\nsims 64\n");
}

/* The two tiny nets of fuzz_safetensors.c, weights and optimizer state. */
static void safetensors(void)
{
    static const char *const archs[] = {
        "mlp in=1x1x3 actions=2 value=scalar:2 width=3 layers=1 norm=layer",
        "resnet in=2x2x1 actions=3 value=wdl:2 ch=2 blocks=1 pol=1 valc=1",
    };
    for (int i = 0; i < 2; i++) {
        zt_net_config cfg;
        zt_net *net;
        zt_trainer *tr;
        zt_train_config tc;
        zt_train_config_default(&tc);
        if (zt_net_config_parse(archs[i], &cfg) != ZT_OK ||
            zt_net_new(&cfg, "ref", ZT_PRECISION_FP32, 1, &net) != ZT_OK ||
            zt_trainer_new(net, &tc, &tr) != ZT_OK)
            die(archs[i]);
        zt_rng rng;
        zt_rng_seed(&rng, 9, (uint64_t)i);
        zt_net_init(net, &rng);
        char dir[512], path[600];
        snprintf(dir, sizeof dir, "%s/safetensors", out_dir);
        if (zt_mkdirs(dir) != ZT_OK) die(dir);
        snprintf(path, sizeof path, "%s/ok-weights-%d", dir, i);
        if (zt_net_save(net, "fuzzgame", path) != ZT_OK) die(path);
        snprintf(path, sizeof path, "%s/ok-optimizer-%d", dir, i);
        if (zt_trainer_save(tr, path) != ZT_OK) die(path);
        zt_trainer_free(tr);
        zt_net_free(net);
    }
}

static void state(void)
{
    zt_train_state s;
    memset(&s, 0, sizeof s);
    s.step = 40;
    s.samples_trained = 40 * 256;
    s.phase_steps = 3;
    s.generation = 5;
    s.published = 9;
    s.elapsed = 12.5;
    zt_rng_seed(&s.sample_rng, 1, 2);
    snprintf(s.game, sizeof s.game, "sim vertices=6 k=3 variant=avoid");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/state", out_dir);
    if (zt_mkdirs(dir) != ZT_OK) die(dir);
    snprintf(path, sizeof path, "%s/ok-state.bin", dir);
    if (zt_train_state_save(&s, path) != ZT_OK) die(path);
}

/* Random games of each game as trajectories (uniform policies, some
 * positions with a cheap search, some with a surprise stored) and a replay
 * buffer holding them. */
static void replay_and_trajectories(void)
{
    static const char *const specs[] = {"tictactoe", "connect4", "sim", "backgammon"};
    zt_rng rng;
    zt_rng_seed(&rng, 10, 0);
    for (int which = 0; which < 4; which++) {
        zt_game *g = game(specs[which]);
        zt_replay_traj *t;
        zt_replay *rb;
        zt_replay_config cfg;
        zt_replay_config_default(&cfg);
        cfg.capacity = 64;
        cfg.augment = which != 3;
        cfg.surprise_weight = which % 2 ? 0.5 : 0; /* version 2's field, both ways */
        cfg.repeat_weight = which >= 2 ? 0.5 : 0;  /* version 3's, each combination */
        cfg.repeat_average = which == 1 || which == 3;
        if (zt_replay_traj_new(g, &t) != ZT_OK || zt_replay_new(g, &cfg, &rb) != ZT_OK)
            die(specs[which]);
        for (int k = 0; k < 3; k++) {
            uint8_t s[ZT_MAX_STATE_BYTES];
            float policy[ZT_MAX_ACTIONS];
            g->reset(g, s);
            zt_replay_traj_clear(t);
            /* short games: backgammon's are cut at 12 positions */
            for (int ply = 0; !zt_game_is_terminal(g, s) && zt_replay_traj_length(t) < 12; ply++) {
                if (g->current_player(g, s) != ZT_CHANCE) {
                    uint16_t legal[ZT_MAX_ACTIONS];
                    int n = g->legal(g, s, legal);
                    memset(policy, 0, sizeof(float) * (size_t)g->num_actions);
                    for (int i = 0; i < n; i++) policy[legal[i]] = 1.0f + (float)(i % 3);
                    /* some records with the surprise byte, some without */
                    zt_replay_traj_add_surprise(t, s, policy, 0.25f * (float)(ply % 5) - 0.5f,
                                                ply % 4 != 1, -1, 0.0f, 0.4f * (float)(ply % 3));
                }
                g->apply(g, s, random_move(g, s, &rng));
            }
            float r[2] = {0, 0};
            if (zt_game_is_terminal(g, s)) g->returns(g, s, r);
            size_t need = zt_replay_traj_serialized_size(t), len;
            uint8_t *bytes = malloc(need);
            if (zt_replay_traj_serialize(t, r[0], bytes, need, &len) != ZT_OK) die("serialise");
            char name[32];
            snprintf(name, sizeof name, "ok-%s-%d", specs[which], k);
            put("traj", name, which, bytes, len);
            free(bytes);
            if (zt_replay_add_game(rb, t, r[0], NULL) != ZT_OK) die("add game");
        }
        uint8_t *blob;
        size_t len;
        if (zt_replay_serialize(rb, &blob, &len) != ZT_OK) die("replay");
        char name[32];
        snprintf(name, sizeof name, "ok-%s", specs[which]);
        put("replay", name, which, blob, len);
        free(blob);
        zt_replay_free(rb);
        zt_replay_traj_free(t);
        zt_game_free(g);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fuzz_corpus OUT_DIR SOURCE_DIR (e.g. tests/fuzz/corpus .)\n");
        return 2;
    }
    out_dir = argv[1];
    games();
    gnubg_ids();
    positions();
    configs(argv[2]);
    safetensors();
    state();
    replay_and_trajectories();
    printf("fuzz_corpus: seeds written under %s\n", out_dir);
    return 0;
}
