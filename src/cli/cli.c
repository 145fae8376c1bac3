#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return true;
    }
    if (arg[n] != '\0') return false;
    if (*i + 1 >= argc) {
        *st = zt_fail(ZT_ERR_INVALID, "%s needs a value", flag);
        return true;
    }
    *value = argv[++*i];
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
