/* The routed backend ("routed", what device=auto means where a GPU is
 * found): two plans over the same host arrays, the CPU's and the GPU's,
 * and each inference call goes to the CPU below the crossover batch size
 * measured for this net (nn/device.h, zt_device_resolve) and to the GPU
 * from it on, so that small batches skip the copies and launches that cost
 * a GPU more than the arithmetic. Training (forward and backward) always
 * runs on the GPU. The GPU plan runs the net's precision; the CPU plan the
 * same where the CPU supports it, else its own fastest. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/backend.h"
#include "nn/device.h"

enum { MAX_ROUTES = 16 };

/* Crossovers by net shape (parameter and tensor counts, input shape). */
typedef struct route {
    size_t param_floats, state_floats;
    int ntensors;
    zt_nn_shape input;
    int crossover;
} route;

static route routes[MAX_ROUTES];
static int nroutes;
static pthread_mutex_t routes_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_shape(const route *r, const zt_nn_graph *g)
{
    zt_nn_shape in = g->tensors[g->input];
    return r->param_floats == g->param_floats && r->state_floats == g->state_floats &&
           r->ntensors == g->ntensors && r->input.h == in.h && r->input.w == in.w &&
           r->input.c == in.c;
}

void zt_routed_set_crossover(const zt_nn_graph *g, int crossover)
{
    pthread_mutex_lock(&routes_lock);
    int i = 0;
    while (i < nroutes && !same_shape(&routes[i], g)) i++;
    if (i == nroutes && nroutes < MAX_ROUTES) nroutes++;
    if (i == MAX_ROUTES) i = MAX_ROUTES - 1; /* full: the newest shape replaces the last */
    routes[i] = (route){.param_floats = g->param_floats,
                        .state_floats = g->state_floats,
                        .ntensors = g->ntensors,
                        .input = g->tensors[g->input],
                        .crossover = crossover};
    pthread_mutex_unlock(&routes_lock);
}

static int find_crossover(const zt_nn_graph *g)
{
    int c = -1;
    pthread_mutex_lock(&routes_lock);
    for (int i = 0; i < nroutes; i++)
        if (same_shape(&routes[i], g)) c = routes[i].crossover;
    pthread_mutex_unlock(&routes_lock);
    return c;
}

struct zt_nn_plan {
    const zt_nn_backend *cpu_be, *gpu_be;
    zt_nn_plan *cpu, *gpu;
    int crossover; /* first batch size run on the GPU (INT_MAX: never) */
    /* forward_submit's slots: a call below the crossover runs on the CPU
     * at the wait (B > 0: that call's size and input) */
    struct {
        int B;
        const float *in;
    } cpu_call[2];
};

static bool backends(const zt_nn_backend **cpu, const zt_nn_backend **gpu)
{
    return zt_nn_backend_find("auto", cpu) == ZT_OK && zt_nn_backend_find("cuda", gpu) == ZT_OK;
}

static bool routed_supports(zt_precision p)
{
    const zt_nn_backend *cpu, *gpu;
    return backends(&cpu, &gpu) && gpu->supports(p);
}

static zt_precision routed_auto_precision(void)
{
    return ZT_PRECISION_BF16;
}

static void routed_plan_free(zt_nn_plan *p)
{
    if (!p) return;
    if (p->cpu) p->cpu_be->plan_free(p->cpu);
    if (p->gpu) p->gpu_be->plan_free(p->gpu);
    free(p);
}

static zt_status routed_plan_new(const zt_nn_graph *g, float *params, float *state,
                                 zt_precision prec, int threads, zt_nn_plan **out)
{
    const zt_nn_backend *cpu, *gpu;
    if (!backends(&cpu, &gpu))
        return zt_fail(ZT_ERR_UNSUPPORTED, "routed backend: this build has no CUDA backend");
    int crossover = find_crossover(g);
    if (crossover < 1)
        return zt_fail(ZT_ERR_INVALID, "routed backend: no crossover was measured for this net "
                                       "(device=auto measures it)");
    zt_nn_plan *p = zt_xcalloc(1, sizeof *p);
    p->cpu_be = cpu;
    p->gpu_be = gpu;
    p->crossover = crossover;
    zt_precision cprec = cpu->supports(prec) ? prec : cpu->auto_precision();
    zt_status s = gpu->plan_new(g, params, state, prec, threads, &p->gpu);
    if (s == ZT_OK) s = cpu->plan_new(g, params, state, cprec, threads, &p->cpu);
    if (s != ZT_OK) {
        routed_plan_free(p);
        return s;
    }
    *out = p;
    return ZT_OK;
}

static zt_status routed_reserve(zt_nn_plan *p, int max_batch, bool training)
{
    ZT_TRY(p->gpu_be->reserve(p->gpu, max_batch, training));
    int cpu_max = max_batch < p->crossover ? max_batch : p->crossover - 1;
    if (cpu_max >= 1) ZT_TRY(p->cpu_be->reserve(p->cpu, cpu_max, false));
    return ZT_OK;
}

static void routed_params_changed(zt_nn_plan *p)
{
    if (p->gpu_be->params_changed) p->gpu_be->params_changed(p->gpu);
    if (p->cpu_be->params_changed) p->cpu_be->params_changed(p->cpu);
}

static zt_status routed_forward(zt_nn_plan *p, int B, const float *in, float *const *outs,
                                bool training, bool update_stats)
{
    if (training || B >= p->crossover)
        return p->gpu_be->forward(p->gpu, B, in, outs, training, update_stats);
    return p->cpu_be->forward(p->cpu, B, in, outs, false, false);
}

static zt_status routed_forward_submit(zt_nn_plan *p, int slot, int B, const float *in)
{
    if (B >= p->crossover) {
        p->cpu_call[slot].B = 0;
        return p->gpu_be->forward_submit(p->gpu, slot, B, in);
    }
    p->cpu_call[slot].B = B;
    p->cpu_call[slot].in = in;
    return ZT_OK;
}

static zt_status routed_forward_wait(zt_nn_plan *p, int slot, float *const *outs)
{
    int B = p->cpu_call[slot].B;
    if (B == 0) return p->gpu_be->forward_wait(p->gpu, slot, outs);
    p->cpu_call[slot].B = 0;
    return p->cpu_be->forward(p->cpu, B, p->cpu_call[slot].in, outs, false, false);
}

static zt_status routed_backward(zt_nn_plan *p, int B, const float *const *d_outs, float *grads,
                                 float *d_in)
{
    return p->gpu_be->backward(p->gpu, B, d_outs, grads, d_in);
}

const zt_nn_backend zt_nn_backend_routed = {
    .name = "routed",
    .supports = routed_supports,
    .auto_precision = routed_auto_precision,
    .plan_new = routed_plan_new,
    .plan_free = routed_plan_free,
    .reserve = routed_reserve,
    .params_changed = routed_params_changed,
    .forward = routed_forward,
    .forward_submit = routed_forward_submit,
    .forward_wait = routed_forward_wait,
    .backward = routed_backward,
};
