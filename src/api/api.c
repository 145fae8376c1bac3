/* libzeroth: version, errors, logging, and the helpers of api.h. */
#include "api/api.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "nn/nn.h"
#include "nn/backend.h"

_Static_assert((int)ZEROTH_OK == (int)ZT_OK && (int)ZEROTH_ERR_INVALID == (int)ZT_ERR_INVALID &&
                   (int)ZEROTH_ERR_NOT_FOUND == (int)ZT_ERR_NOT_FOUND &&
                   (int)ZEROTH_ERR_IO == (int)ZT_ERR_IO &&
                   (int)ZEROTH_ERR_CORRUPT == (int)ZT_ERR_CORRUPT &&
                   (int)ZEROTH_ERR_NOMEM == (int)ZT_ERR_NOMEM &&
                   (int)ZEROTH_ERR_UNSUPPORTED == (int)ZT_ERR_UNSUPPORTED,
               "zeroth_status mirrors zt_status");
_Static_assert(ZEROTH_LOG_DEBUG == (int)ZT_LOG_DEBUG && ZEROTH_LOG_INFO == (int)ZT_LOG_INFO &&
                   ZEROTH_LOG_WARN == (int)ZT_LOG_WARN && ZEROTH_LOG_ERROR == (int)ZT_LOG_ERROR &&
                   ZEROTH_LOG_QUIET == (int)ZT_LOG_QUIET,
               "ZEROTH_LOG_* mirror zt_log_level");
_Static_assert(ZEROTH_CHANCE == ZT_CHANCE && ZEROTH_TERMINAL == ZT_TERMINAL,
               "the public player codes are the game interface's");

const char *zeroth_version(void)
{
    return ZEROTH_VERSION;
}

static char backends[64];
static pthread_once_t backends_once = PTHREAD_ONCE_INIT;

static void list_backends(void)
{
    /* zt_nn_backend_find records a message for the names it lacks, which
     * must not replace the caller's last error. */
    char saved[ZT_MESSAGE_MAX];
    snprintf(saved, sizeof saved, "%s", zt_error_message());
    static const char *const names[] = {"cuda", "cpu", "ref"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const zt_nn_backend *be;
        if (zt_nn_backend_find(names[i], &be) != ZT_OK) continue;
        size_t len = strlen(backends);
        snprintf(backends + len, sizeof backends - len, "%s%s", len ? " " : "", names[i]);
    }
    zt_fail(ZT_OK, "%s", saved);
}

const char *zeroth_backends(void)
{
    pthread_once(&backends_once, list_backends);
    return backends;
}

const char *zeroth_last_error(void)
{
    return zt_error_message();
}

const char *zeroth_status_name(zeroth_status status)
{
    return zt_status_name((zt_status)status);
}

zeroth_status zeroth_fail(zeroth_status status, const char *message)
{
    return zt_api_status(zt_fail((zt_status)status, "%s", message ? message : ""));
}

void zeroth_set_log_callback(zeroth_log_fn fn, void *user)
{
    zt_log_set_hook(fn, user);
}

zeroth_status zeroth_set_log_level(int level)
{
    if (level < ZEROTH_LOG_DEBUG || level > ZEROTH_LOG_QUIET)
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "zeroth_set_log_level: %d is not a ZEROTH_LOG_* level", level));
    zt_log_set_level((zt_log_level)level);
    return ZEROTH_OK;
}

/* ---- helpers (api.h) ---- */

zt_status zt_api_settings_apply(zt_config *cfg, const char *text, const char *what)
{
    if (!text) return ZT_OK;
    if (strchr(text, '\n') || strchr(text, '[')) return zt_config_load_string(cfg, text, what);
    zt_status st = ZT_OK;
    char *copy = zt_xstrdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, " \t", &save); tok && st == ZT_OK;
         tok = strtok_r(NULL, " \t", &save))
        st = zt_config_set(cfg, tok);
    free(copy);
    if (st != ZT_OK) st = zt_fail(st, "%s: %s", what, zt_error_message());
    return st;
}

zt_status zt_api_settings(const char *text, const char *what, zt_config **out)
{
    zt_config *cfg = zt_config_new();
    zt_status st = zt_api_settings_apply(cfg, text, what);
    if (st != ZT_OK) {
        zt_config_free(cfg);
        cfg = NULL;
    }
    *out = cfg;
    return st;
}

zt_status zt_api_need(const char *fn, const void *ptr, const char *what)
{
    if (!ptr) return zt_fail(ZT_ERR_INVALID, "%s: %s is NULL", fn, what);
    return ZT_OK;
}

zt_status zt_api_need_net_for(const char *fn, const zeroth_game_t *game, const zeroth_net_t *net)
{
    ZT_TRY(zt_api_need(fn, game, "game"));
    ZT_TRY(zt_api_need(fn, net, "net"));
    if (strcmp(zeroth_game_spec(game), zeroth_net_game_spec(net)) != 0)
        return zt_fail(ZT_ERR_INVALID, "%s: the net plays '%s', not '%s'", fn,
                       zeroth_net_game_spec(net), zeroth_game_spec(game));
    return ZT_OK;
}

zt_status zt_api_count(const char *fn, int n, int min)
{
    if (n < min) return zt_fail(ZT_ERR_INVALID, "%s: n = %d, must be at least %d", fn, n, min);
    return ZT_OK;
}
