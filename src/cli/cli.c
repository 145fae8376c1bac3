#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/run.h"

int zt_cli_error(const char *fmt, ...)
{
    static _Thread_local char line[ZT_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    zt_vformat_tail(line, sizeof line, fmt, ap); /* a cut keeps the reason */
    va_end(ap);
    /* Never appended to a progress line still on the terminal. */
    zt_progress_clear();
    fprintf(stderr, "zeroth: %s\n", line);
    return 1;
}

int zt_cli_greedy_play(const char *cmd, bool *greedy, bool run_greedy, const char *plies_arg,
                       int *plies, char *words, size_t cap)
{
    run_greedy = run_greedy && !*greedy; /* the run's way, not the flag's */
    *greedy = *greedy || run_greedy;
    *plies = 0;
    if (plies_arg) {
        if (!*greedy)
            return zt_cli_error("%s: --plies is for greedy play (--greedy, or a run whose arena "
                                "played greedily), not a search",
                                cmd);
        if (strcmp(plies_arg, "0") != 0 && strcmp(plies_arg, "1") != 0)
            return zt_cli_error("%s: --plies must be 0 or 1, not '%s'", cmd, plies_arg);
        *plies = plies_arg[0] - '0';
    }
    if (*greedy)
        snprintf(words, cap, "greedy%s, no search%s", *plies ? " 1-ply" : "",
                 run_greedy ? ", as its run's arena played; --sims S searches" : "");
    return 0;
}

int zt_cli_fail(zt_status st)
{
    (void)st;
    const char *msg = zt_error_message();
    return zt_cli_error("%s", msg[0] ? msg : zt_status_name(st));
}

bool zt_cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0;
}

int zt_cli_positional(const char *cmd, const char *arg, const char **const positional[], int n)
{
    if (arg[0] == '-') return zt_cli_error("%s: unknown flag '%s'", cmd, arg);
    for (int k = 0; k < n; k++)
        if (!*positional[k]) {
            *positional[k] = arg;
            return 0;
        }
    return zt_cli_error("%s: unexpected argument '%s'", cmd, arg);
}

bool zt_cli_flag_value(int argc, char **argv, int *i, const char *flag, const char **value,
                       zt_status *st)
{
    size_t n = strlen(flag);
    const char *arg = argv[*i];
    if (strncmp(arg, flag, n) != 0) return false;
    /* on an error *value is "", never left unset */
    *value = "";
    if (arg[n] == '=') {
        *value = arg + n + 1;
    } else if (arg[n] != '\0') {
        return false;
    } else if (*i + 1 >= argc) {
        *st = zt_fail(ZT_ERR_INVALID, "%s needs a value", flag);
        return true;
    } else {
        *value = argv[++*i];
    }
    /* "--run --minutes 5" forgot the run's name; taking the next flag as it
     * would make a directory called "--minutes". No value of any flag
     * starts with "--" (a negative number has one dash). */
    if (strncmp(*value, "--", 2) == 0) {
        *st = zt_fail(ZT_ERR_INVALID, "%s needs a value, not the flag '%s'", flag, *value);
        *value = "";
    }
    return true;
}

bool zt_cli_config_arg(int argc, char **argv, int *i, zt_config *cfg, zt_status *st)
{
    const char *v;
    if (zt_cli_flag_value(argc, argv, i, "--set", &v, st)) {
        if (*st == ZT_OK) *st = zt_config_set(cfg, v);
        return true;
    }
    if (zt_cli_flag_value(argc, argv, i, "--config", &v, st)) {
        if (*st == ZT_OK) *st = zt_config_load_file(cfg, v);
        return true;
    }
    /* Convenience spellings from the Sim literature: --vertices N --k K. */
    if (zt_cli_flag_value(argc, argv, i, "--vertices", &v, st)) {
        if (*st == ZT_OK) zt_config_put(cfg, "vertices", v);
        return true;
    }
    if (zt_cli_flag_value(argc, argv, i, "--k", &v, st)) {
        if (*st == ZT_OK) zt_config_put(cfg, "k", v);
        return true;
    }
    return false;
}

bool zt_cli_skip_config_arg(int argc, char **argv, int *i, bool *config_file, zt_status *st)
{
    const char *v;
    if (zt_cli_flag_value(argc, argv, i, "--config", &v, st)) {
        *config_file = true;
        return true;
    }
    return zt_cli_flag_value(argc, argv, i, "--set", &v, st) ||
           zt_cli_flag_value(argc, argv, i, "--vertices", &v, st) ||
           zt_cli_flag_value(argc, argv, i, "--k", &v, st);
}

zt_status zt_cli_game(const char *name, zt_config *cfg, zt_game **out)
{
    ZT_TRY(zt_game_new(name, cfg, out));
    zt_status st = zt_config_check_unused(cfg);
    if (st != ZT_OK) {
        zt_game_free(*out);
        *out = NULL;
    }
    return st;
}

zt_status zt_cli_layered_config(int argc, char **argv, const char *base, const char *game,
                                zt_config *cfg, const char **game_out)
{
    *game_out = NULL;
    /* the files and overrides alone, to learn whether they name a game */
    zt_config *given = zt_config_new();
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) zt_cli_config_arg(argc, argv, &i, given, &st);
    const char *given_game = NULL;
    if (st == ZT_OK && zt_config_has(given, "game"))
        st = zt_config_string(given, "game", "", &given_game);
    const char *base_game = NULL;
    if (st == ZT_OK && base) {
        st = zt_config_load_file(cfg, base);
        if (st == ZT_OK && zt_config_has(cfg, "game"))
            st = zt_config_string(cfg, "game", "", &base_game);
    }
    char named[128] = "";
    if (st == ZT_OK) {
        const char *g = game ? game : base_game;
        if (g && base_game && strcmp(g, base_game) != 0)
            st = zt_fail(ZT_ERR_INVALID, "'%s' is the config of a %s run, not %s", base, base_game,
                         g);
        else if (g && given_game && strcmp(g, given_game) != 0)
            st = zt_fail(ZT_ERR_INVALID, "--config/--set say game = %s, but %s %s", given_game,
                         base ? "the run plays" : "the command line names", g);
        else
            snprintf(named, sizeof named, "%s", g ? g : given_game ? given_game : "");
    }
    char path[4400];
    if (st == ZT_OK && !base && named[0] && zt_run_default_config(named, path, sizeof path))
        st = zt_config_load_file(cfg, path);
    for (int i = 1; i < argc && st == ZT_OK; i++) zt_cli_config_arg(argc, argv, &i, cfg, &st);
    zt_config_free(given);
    if (st != ZT_OK || !named[0]) return st;
    zt_config_put(cfg, "game", named);
    return zt_config_string(cfg, "game", named, game_out);
}

static char **saved_argv;

void zt_cli_save_args(char **argv)
{
    saved_argv = argv;
}

void zt_cli_rerun_with_env(const char *name, const char *value)
{
    if (!saved_argv || getenv(name)) return;
    if (setenv(name, value, 1) != 0) return;
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", saved_argv);
    /* not re-run (no /proc): go on as we are, the run warns */
    unsetenv(name);
}
