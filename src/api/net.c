/* libzeroth nets: a zeroth_net_t is a net loaded by zt_run_open_model (any
 * of its path forms), the game its file names, and the evaluator over it
 * that turns a win/draw/loss head into one value (train/run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/alloc.h"
#include "core/thread.h"
#include "train/run.h"

struct zeroth_net {
    zt_game *game;
    zt_net *net;
    zt_evaluator ev;
    int obs_size;
    char spec[256];
    char arch[256];
};

zeroth_status zeroth_net_open(const char *path, const char *settings, zeroth_net_t **out)
{
    const char *fn = "zeroth_net_open";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need(fn, path, "path"));
    zt_config *cfg;
    ZT_API_TRY(zt_api_settings(settings, "net settings", &cfg));
    const char *backend;
    zt_precision prec;
    int threads;
    zt_status st = zt_run_nn_settings(cfg, zt_cpu_count(), &backend, &prec, &threads);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    zeroth_net_t *h = zt_xcalloc(1, sizeof *h);
    if (st == ZT_OK) st = zt_run_open_model(path, backend, prec, threads, &h->game, &h->net);
    if (st == ZT_OK) st = zt_run_evaluator_new(h->net, &h->ev);
    zt_config_free(cfg);
    if (st != ZT_OK) {
        zeroth_net_free(h);
        return zt_api_status(st);
    }
    const zt_game *g = h->game;
    h->obs_size = zt_game_obs_size(g);
    zt_game_spec(g, h->spec, sizeof h->spec);
    zt_net_config_format(zt_net_config_of(h->net), h->arch, sizeof h->arch);
    *out = h;
    return ZEROTH_OK;
}

void zeroth_net_free(zeroth_net_t *net)
{
    if (!net) return;
    zt_run_evaluator_free(&net->ev);
    zt_net_free(net->net);
    zt_game_free(net->game);
    free(net);
}

const char *zeroth_net_game_spec(const zeroth_net_t *net)
{
    return net->spec;
}

const char *zeroth_net_architecture(const zeroth_net_t *net)
{
    return net->arch;
}

const char *zeroth_net_backend(const zeroth_net_t *net)
{
    return zt_net_backend_name(net->net);
}

const char *zeroth_net_precision(const zeroth_net_t *net)
{
    return zt_precision_name(zt_net_precision(net->net));
}

int zeroth_net_num_actions(const zeroth_net_t *net)
{
    return net->game->num_actions;
}

int zeroth_net_obs_size(const zeroth_net_t *net)
{
    return net->obs_size;
}

zeroth_status zeroth_net_forward(zeroth_net_t *net, int n, const float *obs, float *policy_logits,
                                 float *value)
{
    const char *fn = "zeroth_net_forward";
    ZT_API_TRY(zt_api_need(fn, net, "net"));
    ZT_API_TRY(zt_api_count(fn, n, 1));
    ZT_API_TRY(zt_api_need(fn, obs, "obs"));
    ZT_API_TRY(zt_api_need(fn, policy_logits, "policy_logits"));
    ZT_API_TRY(zt_api_need(fn, value, "value"));
    ZT_API_TRY(net->ev.eval(net->ev.ctx, n, obs, policy_logits, value));
    return ZEROTH_OK;
}

/* ---- for search.c ---- */

const zt_game *zt_api_net_game(const zeroth_net_t *net)
{
    return net->game;
}

const zt_evaluator *zt_api_net_evaluator(const zeroth_net_t *net)
{
    return &net->ev;
}

/* ---- tensors ---- */

int zeroth_net_tensor_count(const zeroth_net_t *net)
{
    return net ? zt_net_tensor_count(net->net) : 0;
}

/* Checks the handle and the index, naming `fn`. */
static zt_status tensor_index(const char *fn, const zeroth_net_t *net, int i)
{
    ZT_TRY(zt_api_need(fn, net, "net"));
    int n = zt_net_tensor_count(net->net);
    if (i < 0 || i >= n)
        return zt_fail(ZT_ERR_INVALID, "%s: tensor %d does not exist (%d tensors)", fn, i, n);
    return ZT_OK;
}

zeroth_status zeroth_net_tensor_info(const zeroth_net_t *net, int i, const char **name, int *ndim,
                                     int shape[4], size_t *count)
{
    ZT_API_TRY(tensor_index("zeroth_net_tensor_info", net, i));
    zt_net_tensor t = zt_net_tensor_at(net->net, i);
    if (name) *name = t.name;
    if (ndim) *ndim = t.ndim;
    if (shape) {
        for (int d = 0; d < 4; d++) shape[d] = d < t.ndim ? t.shape[d] : 0;
    }
    if (count) *count = t.count;
    return ZEROTH_OK;
}

zeroth_status zeroth_net_tensor_read(const zeroth_net_t *net, int i, float *data, size_t count)
{
    const char *fn = "zeroth_net_tensor_read";
    ZT_API_TRY(tensor_index(fn, net, i));
    ZT_API_TRY(zt_api_need(fn, data, "data"));
    zt_net_tensor t = zt_net_tensor_at(net->net, i);
    if (count != t.count)
        return zt_api_status(zt_fail(ZT_ERR_INVALID, "%s: tensor %d (%s) has %zu floats, not %zu",
                                     fn, i, t.name, t.count, count));
    memcpy(data, t.data, t.count * sizeof *data);
    return ZEROTH_OK;
}
