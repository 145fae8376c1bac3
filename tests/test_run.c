/* Tests of model paths and of the commands that use models (eval, play,
 * report). Model paths: a weights file, a checkpoint directory and a run
 * directory (ckpt/latest) all resolve to the same file; a missing path, a
 * run without a checkpoint, a latest naming nothing, a file that is no
 * weights file and a model of another game are refused with one line each;
 * the evaluator over a net gives the net's outputs (WDL heads as P(win) -
 * P(loss)); a run or checkpoint directory brings its run's search settings
 * (without self-play's noise), a weights file none. With ZT_BIN (set by
 * CTest), the binary itself: eval against
 * random prints W-D-L and Elo, eval on the tic-tac-toe set ends with
 * "optimal N/4520" (search and raw policy), bad models give a one-line
 * error, report writes a page with SVG charts from metrics with unknown
 * kinds and a truncated last line, and play reads moves from a pipe,
 * survives garbage and ends cleanly at end of input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"
#include "search/settings.h"
#include "train/run.h"

#include "zt_test.h"

static char dir[256];

static void path_in(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", dir, rel);
}

static void write_text(const char *rel, const char *text)
{
    char p[512];
    path_in(p, sizeof p, rel);
    CHECK(zt_write_file_atomic(p, text, strlen(text)) == ZT_OK, "%s: %s", p, zt_error_message());
}

static void mkdir_in(const char *rel)
{
    char p[512];
    path_in(p, sizeof p, rel);
    CHECK(zt_mkdirs(p) == ZT_OK, "%s: %s", p, zt_error_message());
}

/* A small net for `game_name`, He-initialised, saved under its spec. */
static void make_weights(const char *game_name, zt_value_kind vk, const char *rel)
{
    zt_game *g;
    if (zt_game_new(game_name, NULL, &g) != ZT_OK) {
        CHECK(0, "%s: %s", game_name, zt_error_message());
        return;
    }
    zt_net_config cfg;
    zt_net_config_default(&cfg, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    cfg.channels = 8;
    cfg.blocks = 1;
    cfg.value_hidden = 8;
    cfg.mlp_hidden = 16;
    cfg.mlp_layers = 1;
    cfg.value_kind = vk;
    zt_net *net;
    zt_status st = zt_net_new(&cfg, "ref", ZT_PRECISION_FP32, 1, &net);
    CHECK(st == ZT_OK, "net: %s", zt_error_message());
    if (st == ZT_OK) {
        zt_rng rng;
        zt_rng_seed(&rng, 99, 0);
        zt_net_init(net, &rng);
        char spec[256], p[512];
        zt_game_spec(g, spec, sizeof spec);
        path_in(p, sizeof p, rel);
        CHECK(zt_net_save(net, spec, p) == ZT_OK, "save %s: %s", p, zt_error_message());
        zt_net_free(net);
    }
    zt_game_free(g);
}

static void check_paths(void)
{
    char file[512], ckpt[512], run[512], got[1024];
    mkdir_in("run/ckpt/00000100");
    make_weights("tictactoe", ZT_VALUE_SCALAR, "run/ckpt/00000100/weights.safetensors");
    write_text("run/ckpt/latest", "00000100\n");
    path_in(file, sizeof file, "run/ckpt/00000100/weights.safetensors");
    path_in(ckpt, sizeof ckpt, "run/ckpt/00000100");
    path_in(run, sizeof run, "run");
    const char *forms[] = {file, ckpt, run};
    for (int i = 0; i < 3; i++) {
        zt_status st = zt_run_resolve_weights(forms[i], got, sizeof got);
        CHECK(st == ZT_OK && strcmp(got, file) == 0, "%s -> %s (%s)", forms[i], got,
              zt_error_message());
        zt_game *g;
        zt_net *net;
        st = zt_run_open_model(forms[i], "ref", ZT_PRECISION_FP32, 1, &g, &net);
        CHECK(st == ZT_OK, "open %s: %s", forms[i], zt_error_message());
        if (st != ZT_OK) continue;
        CHECK(strcmp(g->name, "tictactoe") == 0, "game %s", g->name);
        zt_config *cfg = zt_config_new();
        CHECK(zt_run_check_game(forms[i], g, "tictactoe", cfg) == ZT_OK, "%s", zt_error_message());
        CHECK(zt_run_check_game(forms[i], g, "connect4", cfg) == ZT_ERR_INVALID,
              "connect4 accepted");
        CHECK(strstr(zt_error_message(), "plays 'tictactoe'"), "message: %s", zt_error_message());
        zt_config_free(cfg);
        zt_net_free(net);
        zt_game_free(g);
    }

    /* Refusals, each one line naming the problem. */
    zt_game *g;
    zt_net *net;
    char p[512];
    path_in(p, sizeof p, "nothing-here");
    CHECK(zt_run_open_model(p, "ref", ZT_PRECISION_FP32, 1, &g, &net) == ZT_ERR_NOT_FOUND &&
              strstr(zt_error_message(), "cannot open model"),
          "missing: %s", zt_error_message());
    mkdir_in("empty-run/ckpt");
    path_in(p, sizeof p, "empty-run");
    CHECK(zt_run_open_model(p, "ref", ZT_PRECISION_FP32, 1, &g, &net) != ZT_OK &&
              strstr(zt_error_message(), "no checkpoint in"),
          "empty run: %s", zt_error_message());
    mkdir_in("bad-run/ckpt");
    write_text("bad-run/ckpt/latest", "../../etc\n");
    path_in(p, sizeof p, "bad-run");
    CHECK(zt_run_open_model(p, "ref", ZT_PRECISION_FP32, 1, &g, &net) == ZT_ERR_CORRUPT,
          "latest with a path: %s", zt_error_message());
    write_text("bad-run/ckpt/latest", "00000007\n");
    CHECK(zt_run_open_model(p, "ref", ZT_PRECISION_FP32, 1, &g, &net) == ZT_ERR_CORRUPT &&
              strstr(zt_error_message(), "00000007"),
          "latest naming nothing: %s", zt_error_message());
    write_text("garbage.safetensors", "this is not a weights file at all, just some text\n");
    path_in(p, sizeof p, "garbage.safetensors");
    CHECK(zt_run_open_model(p, "ref", ZT_PRECISION_FP32, 1, &g, &net) != ZT_OK &&
              strstr(zt_error_message(), "not a weights file") && !strchr(zt_error_message(), '\n'),
          "garbage: %s", zt_error_message());
}

/* The search of a model's run: a run directory and a checkpoint directory
 * of it bring the search.* keys of RUN/config.ini that the user left unset,
 * without self-play's noise keys; a weights file and a run without a
 * config.ini bring nothing; a damaged config.ini is refused naming it. */
static void check_search_defaults(void)
{
    mkdir_in("srun/ckpt/00000005");
    make_weights("tictactoe", ZT_VALUE_SCALAR, "srun/ckpt/00000005/weights.safetensors");
    write_text("srun/ckpt/latest", "00000005\n");
    write_text("srun/config.ini", "seed = 3\n[net]\nkind = mlp\n[search]\nalgorithm = puct\n"
                                  "sims = 7\ngumbel_m = 4\ngumbel_noise = true\n"
                                  "dirichlet_alpha = 0.3\ndirichlet_fraction = 0.25\n");
    const char *forms[] = {"srun", "srun/ckpt/00000005", "srun/ckpt/00000005/weights.safetensors",
                           "run"};
    for (int i = 0; i < 4; i++) {
        char p[512], from[1024];
        path_in(p, sizeof p, forms[i]);
        zt_config *cfg = zt_config_new();
        zt_config_put(cfg, "search.algorithm", "gumbel"); /* the user's */
        zt_status st = zt_run_search_defaults(p, cfg, from, sizeof from, NULL);
        CHECK(st == ZT_OK, "%s: %s", forms[i], zt_error_message());
        bool from_run = i < 2;
        CHECK(from_run == (strstr(from, "srun/config.ini") != NULL), "%s: from '%s'", forms[i],
              from);
        zt_search_read_options opt = {.use = ZT_SEARCH_PLAY, .gumbel_noise = false};
        zt_search_config sc;
        st = zt_search_config_read(cfg, &opt, &sc);
        CHECK(st == ZT_OK, "%s: %s", forms[i], zt_error_message());
        CHECK(sc.algorithm == ZT_SEARCH_GUMBEL, "%s: the user's algorithm lost", forms[i]);
        CHECK(sc.num_simulations == (from_run ? 7 : 32) && sc.gumbel_m == (from_run ? 4 : 16),
              "%s: %d sims, m %d", forms[i], sc.num_simulations, sc.gumbel_m);
        CHECK(!sc.gumbel_noise && sc.dirichlet_fraction == 0.0f,
              "%s: self-play's noise came along", forms[i]);
        /* Only search.* keys: the run's seed and net are no business of eval. */
        CHECK(!zt_config_has(cfg, "seed") && !zt_config_has(cfg, "net.kind") &&
                  zt_config_check_unused(cfg) == ZT_OK,
              "%s: keys beyond search.* were taken", forms[i]);
        zt_config_free(cfg);
    }
    /* A run whose arena played greedily (arena.sims = 0) is played so,
     * unless the user asks for a search (search.sims); a weights file, a run
     * whose arena searched and a run without arena.sims are not. */
    struct {
        const char *ini, *form;
        bool user_sims, greedy;
    } cases[] = {
        {"[search]\nsims = 7\n[arena]\nsims = 0\n", "srun", false, true},
        {"[search]\nsims = 7\n[arena]\nsims = 0\n", "srun/ckpt/00000005", false, true},
        {"[search]\nsims = 7\n[arena]\nsims = 0\n", "srun", true, false},
        {"[search]\nsims = 7\n[arena]\nsims = 0\n", "srun/ckpt/00000005/weights.safetensors",
         false, false},
        {"[search]\nsims = 7\n[arena]\nsims = 4\n", "srun", false, false},
        {"[search]\nsims = 7\n", "srun", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text("srun/config.ini", cases[i].ini);
        char p[512], from[1024];
        path_in(p, sizeof p, cases[i].form);
        zt_config *cfg = zt_config_new();
        if (cases[i].user_sims) zt_config_put(cfg, "search.sims", "5");
        bool greedy = !cases[i].greedy;
        zt_status st = zt_run_search_defaults(p, cfg, from, sizeof from, &greedy);
        CHECK(st == ZT_OK && greedy == cases[i].greedy, "greedy case %zu: %s, greedy %d", i,
              st == ZT_OK ? "ok" : zt_error_message(), greedy);
        zt_config_free(cfg);
    }
    write_text("srun/config.ini", "[search\nsims = 7\n");
    char p[512], from[1024];
    path_in(p, sizeof p, "srun");
    zt_config *cfg = zt_config_new();
    CHECK(zt_run_search_defaults(p, cfg, from, sizeof from, NULL) == ZT_ERR_INVALID &&
              strstr(zt_error_message(), "config.ini"),
          "a damaged config.ini: %s", zt_error_message());
    zt_config_free(cfg);
}

/* The evaluator gives the net's outputs; a WDL head's value is
 * P(win) - P(loss) of its softmax. */
static void check_evaluator(void)
{
    const zt_value_kind kinds[] = {ZT_VALUE_SCALAR, ZT_VALUE_WDL};
    for (int k = 0; k < 2; k++) {
        make_weights("connect4", kinds[k], "c4.safetensors");
        char p[512];
        path_in(p, sizeof p, "c4.safetensors");
        zt_game *g;
        zt_net *net;
        if (zt_run_open_model(p, "ref", ZT_PRECISION_FP32, 1, &g, &net) != ZT_OK) {
            CHECK(0, "open: %s", zt_error_message());
            continue;
        }
        enum { B = 3 };
        int obs_size = zt_game_obs_size(g), A = g->num_actions;
        float *obs = calloc((size_t)B * obs_size, sizeof(float));
        float *lp = calloc((size_t)B * A, sizeof(float)),
              *le = calloc((size_t)B * A, sizeof(float));
        float raw[B * 3], value[B];
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        for (int i = 0; i < B; i++) {
            g->observe(g, s, obs + (size_t)i * obs_size);
            g->apply(g, s, i + 2);
        }
        CHECK(zt_net_forward(net, B, obs, lp, raw) == ZT_OK, "%s", zt_error_message());
        zt_evaluator ev;
        CHECK(zt_run_evaluator_new(net, &ev) == ZT_OK, "%s", zt_error_message());
        ev.eval(ev.ctx, B, obs, le, value);
        CHECK(memcmp(lp, le, sizeof(float) * B * A) == 0, "logits differ");
        for (int i = 0; i < B; i++) {
            float want = raw[i];
            if (kinds[k] == ZT_VALUE_WDL) {
                double w = exp(raw[3 * i]), d = exp(raw[3 * i + 1]), l = exp(raw[3 * i + 2]);
                want = (float)((w - l) / (w + d + l));
            }
            CHECK(fabsf(value[i] - want) < 1e-5f, "kind %d value %d: %g, want %g", k, i, value[i],
                  want);
        }
        zt_run_evaluator_free(&ev);
        free(obs);
        free(lp);
        free(le);
        zt_net_free(net);
        zt_game_free(g);
    }
}

/* ---- the binary ---- */

static const char *bin;

/* Runs `cmd` through the shell; stdout into out, stderr into err. */
static int run(const char *cmd, char *out, size_t out_cap, char *err, size_t err_cap)
{
    char full[4096], of[512], ef[512];
    path_in(of, sizeof of, "stdout.txt");
    path_in(ef, sizeof ef, "stderr.txt");
    snprintf(full, sizeof full, "%s >%s 2>%s", cmd, of, ef);
    int rc = system(full);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    const char *files[2] = {of, ef};
    char *bufs[2] = {out, err};
    size_t caps[2] = {out_cap, err_cap};
    for (int i = 0; i < 2; i++) {
        bufs[i][0] = '\0';
        FILE *f = fopen(files[i], "r");
        if (!f) continue;
        size_t n = fread(bufs[i], 1, caps[i] - 1, f);
        bufs[i][n] = '\0';
        fclose(f);
    }
    return rc;
}

static const char *last_line(char *text)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

/* The first line of text that starts with prefix, "" if none. */
static const char *line_starting(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p;) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) return p;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return "";
}

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++) n += *p == '\n';
    return n + (text[0] && text[strlen(text) - 1] != '\n');
}

static void expect_error(const char *args, const char *want)
{
    static char out[1 << 16], err[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s </dev/null", bin, args);
    int rc = run(cmd, out, sizeof out, err, sizeof err);
    CHECK(rc != 0 && count_lines(err) == 1 && strstr(err, want),
          "zeroth %s: rc %d, stderr '%s' (want one line with '%s')", args, rc, err, want);
}

static void check_binary(void)
{
    static char out[1 << 20], err[1 << 16];
    char cmd[2048], run_dir[512], file[512], positions[512], c4[512];
    path_in(run_dir, sizeof run_dir, "run");
    path_in(file, sizeof file, "run/ckpt/00000100/weights.safetensors");
    path_in(c4, sizeof c4, "c4.safetensors");
    zt_test_data_path("tictactoe/ttt_positions.txt", positions, sizeof positions);

    snprintf(cmd, sizeof cmd,
             "%s eval tictactoe --model %s --opponent random --games 20 --sims 8 --set backend=ref",
             bin, run_dir);
    int rc = run(cmd, out, sizeof out, err, sizeof err);
    const char *last = last_line(out);
    CHECK(rc == 0 && strncmp(last, "W-D-L ", 6) == 0 && strstr(last, "Elo") &&
              strstr(last, "score"),
          "eval vs random: rc %d, last line '%s', stderr '%s'", rc, last, err);
    int w, d, l;
    CHECK(sscanf(last, "W-D-L %d-%d-%d", &w, &d, &l) == 3 && w + d + l == 20, "counts: %s", last);

    snprintf(cmd, sizeof cmd,
             "%s eval tictactoe --model %s --opponent %s --games 4 --sprt --sims 2", bin, file,
             run_dir);
    rc = run(cmd, out, sizeof out, err, sizeof err);
    last = last_line(out);
    CHECK(rc == 0 && strstr(last, "SPRT"), "model vs model: rc %d, '%s', stderr '%s'", rc, last,
          err);

    const char *sims[] = {"8", "0"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s eval tictactoe --model %s --positions %s --sims %s", bin,
                 run_dir, positions, sims[i]);
        rc = run(cmd, out, sizeof out, err, sizeof err);
        const char *total = line_starting(out, "optimal ");
        int n, m;
        CHECK(rc == 0 && sscanf(total, "optimal %d/%d", &n, &m) == 2 && m == 4520 && n >= 0 &&
                  n <= m,
              "positions --sims %s: rc %d, out '%s', stderr '%s'", sims[i], rc, out, err);
        /* after it, the same by the positions' value: every one has a value */
        int won[2], drawn[2], lost[2];
        const char *values = line_starting(out, "by value: ");
        CHECK(sscanf(values,
                     "by value: won optimal %d/%d (%*f %%), drawn optimal %d/%d (%*f %%), lost "
                     "optimal %d/%d",
                     &won[0], &won[1], &drawn[0], &drawn[1], &lost[0], &lost[1]) == 6 &&
                  won[1] + drawn[1] + lost[1] == m && won[0] + drawn[0] + lost[0] == n &&
                  lost[0] == lost[1],
              "positions --sims %s: by value '%.200s' against optimal %d/%d", sims[i], values, n,
              m);
    }

    char args[2048];
    snprintf(args, sizeof args, "eval tictactoe --model %s/nothing-here --opponent random", dir);
    expect_error(args, "cannot open model");
    snprintf(args, sizeof args, "eval tictactoe --model %s/garbage.safetensors --opponent random",
             dir);
    expect_error(args, "not a weights file");
    snprintf(args, sizeof args, "eval tictactoe --model %s/empty-run --positions %s", dir,
             positions);
    expect_error(args, "no checkpoint in");
    snprintf(args, sizeof args, "eval tictactoe --model %s --opponent random", c4);
    expect_error(args, "plays 'connect4'");
    snprintf(args, sizeof args, "eval tictactoe --model %s --opponent %s", file, c4);
    expect_error(args, "plays 'connect4'");
    snprintf(args, sizeof args, "eval tictactoe --model %s --opponent chess", file);
    expect_error(args, "unknown player");
    snprintf(args, sizeof args, "eval tictactoe --model %s --opponent random --set colour=red",
             file);
    expect_error(args, "unknown key 'colour'");
    snprintf(args, sizeof args, "play tictactoe --model %s/garbage.safetensors", dir);
    expect_error(args, "not a weights file");

    /* report: unknown kinds and fields, a blank line, a truncated last line */
    mkdir_in("rep");
    write_text("rep/config.ini", "[game]\nname = tictactoe <&>\n");
    write_text(
        "rep/metrics.jsonl",
        "{\"kind\":\"train\",\"t\":1.5,\"step\":10,\"games\":20,\"positions\":150,"
        "\"loss_policy\":2.1,\"loss_value\":0.9,\"loss_l2\":0.01,\"loss_total\":3.01,"
        "\"lr\":0.02,\"grad_norm\":1.2,\"extra\":{\"a\":[1,2,\"}\"]}}\n"
        "{\"kind\":\"train\",\"t\":3,\"step\":20,\"games\":45,\"positions\":330,"
        "\"loss_policy\":1.7,\"loss_value\":0.7,\"loss_l2\":0.01,\"loss_total\":2.41}\n"
        "\n"
        "{\"kind\":\"selfplay\",\"t\":3,\"step\":20,\"games\":45,\"positions\":330,"
        "\"games_per_s\":15,\"positions_per_s\":110,\"inferences_per_s\":3000,"
        "\"replay_positions\":330,\"replay_bytes_per_position\":12.5,\"nncache_hit_rate\":0.4}\n"
        "{\"kind\":\"arena\",\"t\":3.5,\"step\":20,\"games\":45,\"positions\":330,"
        "\"opponent\":\"random\",\"games\":100,\"wins\":80,\"draws\":10,\"losses\":10,"
        "\"score\":0.85,\"elo\":301,\"elo_lo\":220,\"elo_hi\":410}\n"
        "{\"kind\":\"positions\",\"t\":3.6,\"step\":20,\"games\":45,\"positions\":330,"
        "\"set\":\"ttt_positions\",\"metric\":\"optimal\",\"n\":4000,\"m\":4520,\"rate\":0.885}\n"
        "{\"kind\":\"someday\",\"t\":4,\"whatever\":true,\"nothing\":null}\n"
        "{\"kind\":\"train\",\"t\":5,\"step\":30,\"gam");
    snprintf(cmd, sizeof cmd, "%s report %s/rep", bin, dir);
    rc = run(cmd, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "report: rc %d, stderr '%s'", rc, err);
    char page_path[512];
    path_in(page_path, sizeof page_path, "rep/report.html");
    char *page = NULL;
    size_t len = 0;
    CHECK(zt_read_file(page_path, &page, &len) == ZT_OK, "no report.html: %s", zt_error_message());
    if (page) {
        CHECK(strstr(page, "<svg") && strstr(page, "vs random") && strstr(page, "positions/s") &&
                  strstr(page, "ttt_positions") && strstr(page, "&lt;&amp;&gt;") &&
                  !strstr(page, "<script") && !strstr(page, "http"),
              "report.html lacks its charts or is not self-contained");
        free(page);
    }
    snprintf(args, sizeof args, "report %s/empty-run", dir);
    expect_error(args, "no metrics");

    /* play: garbage, an occupied cell, 'moves', then moves until the game
     * ends or the input does */
    snprintf(cmd, sizeof cmd,
             "printf 'hello\\n42\\n\\nmoves\\n4\\n4\\n0\\n1\\n2\\n3\\n5\\n6\\n7\\n8\\n' | "
             "%s play tictactoe --model %s --sims 4 --seed 3",
             bin, run_dir);
    rc = run(cmd, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "try again") && strstr(out, "legal moves:") &&
              strstr(out, "agent plays") && strstr(out, "visit share"),
          "play: rc %d, stderr '%s', stdout tail '%s'", rc, err, last_line(out));
    snprintf(cmd, sizeof cmd, "%s play tictactoe --model %s --first agent --sims 0 </dev/null", bin,
             file);
    rc = run(cmd, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "end of input"), "play at EOF: rc %d, stderr '%s'", rc, err);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/zt_test_run_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL: mkdtemp\n");
        return 1;
    }
    check_paths();
    check_search_defaults();
    check_evaluator();
    bin = getenv("ZT_BIN");
    if (bin && access(bin, X_OK) == 0)
        check_binary();
    else
        printf("ZT_BIN not set: the binary's commands are not tested\n");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    return zt_test_finish("test_run");
}
