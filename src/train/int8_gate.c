/* The int8 publication gate (see int8_gate.h). */
#include "train/int8_gate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "core/timer.h"
#include "game/sample.h"
#include "nn/device.h"

struct zt_int8_gate {
    zt_int8_gate_config cfg;
    zt_net *q;    /* int8 */
    zt_net *ref;  /* the fallback precision */
    int A, V;
    size_t obs_size, tail;
    float *obs;      /* the gate positions */
    uint8_t *legal;
    float *qp, *qv, *rp, *rv;
};

void zt_int8_gate_config_default(zt_int8_gate_config *c)
{
    c->calibration = 128;
    c->positions = 256;
    c->agreement = 0.99;
    c->value_mae = 0.02;
    c->tie = 0.02;
    c->every = 1;
    c->auto_speedup = 2;
}

/* The fallback precision's net of cfg: bf16 where the backend has it. */
static zt_status fallback_net(const zt_net_config *cfg, const char *backend, int threads,
                              zt_net **out)
{
    zt_status st = zt_net_new(cfg, backend, ZT_PRECISION_BF16, threads, out);
    if (st != ZT_OK) st = zt_net_new(cfg, backend, ZT_PRECISION_FP32, threads, out);
    return st;
}

zt_status zt_int8_speedup(const zt_game *g, const zt_net_config *cfg, const char *backend, int B,
                          double seconds, double *ratio)
{
    enum { CALIBRATION = 64 };
    *ratio = 0;
    zt_net *q = NULL, *ref = NULL;
    float *obs = NULL;
    zt_status st = zt_net_new(cfg, backend, ZT_PRECISION_INT8, 1, &q);
    if (st == ZT_OK) st = fallback_net(cfg, backend, 1, &ref);
    if (st == ZT_OK) {
        zt_rng rng;
        zt_rng_seed(&rng, 0x73706565ULL, 0);
        zt_net_init(q, &rng);
        zt_rng_seed(&rng, 0x73706565ULL, 0);
        zt_net_init(ref, &rng);
        obs = zt_xmalloc((size_t)CALIBRATION * cfg->in_h * cfg->in_w * cfg->in_c * sizeof *obs);
        zt_game_sample_observations(g, &rng, CALIBRATION, obs, NULL);
        st = zt_net_calibrate(q, CALIBRATION, obs);
    }
    double best_q = 0, best_ref = 0;
    for (int r = 0; r < 3 && st == ZT_OK; r++) {
        double tq, tr;
        st = zt_device_time_forward(ref, B, seconds, &tr);
        if (st == ZT_OK) st = zt_device_time_forward(q, B, seconds, &tq);
        if (st != ZT_OK) break;
        if (r == 0 || tq < best_q) best_q = tq;
        if (r == 0 || tr < best_ref) best_ref = tr;
    }
    if (st == ZT_OK) *ratio = best_ref / best_q;
    free(obs);
    zt_net_free(q);
    zt_net_free(ref);
    return st;
}

zt_status zt_int8_gate_new(const zt_game *g, const zt_net_config *cfg, const char *backend,
                           int threads, const zt_int8_gate_config *gc, uint64_t seed,
                           zt_int8_gate **out)
{
    if (gc->positions < 1 || gc->calibration < 1)
        return zt_fail(ZT_ERR_INVALID, "int8 gate needs at least 1 position and 1 calibration "
                                       "position");
    zt_int8_gate *q = zt_xcalloc(1, sizeof *q);
    q->cfg = *gc;
    zt_status st = zt_net_new(cfg, backend, ZT_PRECISION_INT8, threads, &q->q);
    if (st == ZT_OK) st = fallback_net(cfg, backend, threads, &q->ref);
    if (st != ZT_OK) {
        zt_int8_gate_free(q);
        return st;
    }
    q->A = cfg->num_actions;
    q->V = zt_net_value_size(cfg);
    q->obs_size = (size_t)cfg->in_h * cfg->in_w * cfg->in_c;
    q->tail = 1 + zt_net_ranges_size(q->q);
    int n = gc->positions;
    q->obs = zt_xmalloc((size_t)n * q->obs_size * sizeof(float));
    q->legal = zt_xmalloc((size_t)n * (size_t)q->A);
    q->qp = zt_xmalloc((size_t)n * q->A * sizeof(float));
    q->rp = zt_xmalloc((size_t)n * q->A * sizeof(float));
    q->qv = zt_xmalloc((size_t)n * 3 * sizeof(float));
    q->rv = zt_xmalloc((size_t)n * 3 * sizeof(float));
    zt_rng rng;
    zt_rng_seed(&rng, seed, 0x696e7438ULL);
    zt_game_sample_observations(g, &rng, n, q->obs, q->legal);
    *out = q;
    return ZT_OK;
}

void zt_int8_gate_free(zt_int8_gate *q)
{
    if (!q) return;
    zt_net_free(q->q);
    zt_net_free(q->ref);
    free(q->obs);
    free(q->legal);
    free(q->qp), free(q->rp), free(q->qv), free(q->rv);
    free(q);
}

size_t zt_int8_gate_tail_size(const zt_int8_gate *q)
{
    return q->tail;
}

zt_status zt_int8_gate_tail_for(const zt_net_config *cfg, const char *backend, size_t *out)
{
    zt_net *net;
    ZT_TRY(zt_net_new(cfg, backend, ZT_PRECISION_INT8, 1, &net));
    *out = 1 + zt_net_ranges_size(net);
    zt_net_free(net);
    return ZT_OK;
}

zt_precision zt_int8_gate_fallback(const zt_int8_gate *q)
{
    return zt_net_precision(q->ref);
}

/* Softmax over the legal actions of logits (n of them) into p. */
static void legal_softmax(const float *logits, const uint8_t *legal, int n, double *p)
{
    double mx = -INFINITY, sum = 0;
    for (int a = 0; a < n; a++)
        if (legal[a] && logits[a] > mx) mx = logits[a];
    for (int a = 0; a < n; a++) sum += p[a] = legal[a] ? exp(logits[a] - mx) : 0.0;
    for (int a = 0; a < n; a++) p[a] /= sum;
}

static double value_of(const float *v, int V)
{
    if (V == 1) return v[0];
    double mx = fmax(v[0], fmax(v[1], v[2]));
    double w = exp(v[0] - mx), d = exp(v[1] - mx), l = exp(v[2] - mx);
    return (w - l) / (w + d + l);
}

/* Holds the int8 net against the fallback on n positions (obs, legal), in
 * chunks of the gate's buffers: adds to *agree, *ties and *abs_err. */
static zt_status compare(zt_int8_gate *q, int n, const float *obs, const uint8_t *legal_all,
                         int *agree, int *ties, double *abs_err)
{
    int chunk = q->cfg.positions;
    double *pq = zt_xmalloc((size_t)q->A * 2 * sizeof(double)), *pr = pq + q->A;
    zt_status st = ZT_OK;
    for (int at = 0; at < n && st == ZT_OK; at += chunk) {
        int m = n - at < chunk ? n - at : chunk;
        const float *x = obs + (size_t)at * q->obs_size;
        st = zt_net_forward(q->q, m, x, q->qp, q->qv);
        if (st == ZT_OK) st = zt_net_forward(q->ref, m, x, q->rp, q->rv);
        for (int i = 0; i < m && st == ZT_OK; i++) {
            const uint8_t *legal = legal_all + (size_t)(at + i) * q->A;
            legal_softmax(q->qp + (size_t)i * q->A, legal, q->A, pq);
            legal_softmax(q->rp + (size_t)i * q->A, legal, q->A, pr);
            int bq = -1, br = -1;
            for (int a = 0; a < q->A; a++) {
                if (!legal[a]) continue;
                if (bq < 0 || pq[a] > pq[bq]) bq = a;
                if (br < 0 || pr[a] > pr[br]) br = a;
            }
            if (bq == br) ++*agree;
            else if (pr[bq] >= pr[br] - q->cfg.tie) ++*agree, ++*ties;
            *abs_err += fabs(value_of(q->qv + (size_t)i * q->V, q->V) -
                             value_of(q->rv + (size_t)i * q->V, q->V));
        }
    }
    free(pq);
    return st;
}

/* Loads `weights` into both nets and calibrates the int8 one. */
static zt_status quantise(zt_int8_gate *q, const float *weights, int B, const float *obs)
{
    zt_net_flat_set(q->q, weights);
    zt_net_flat_set(q->ref, weights);
    if (!obs || B < 1) {
        obs = q->obs;
        B = q->cfg.positions;
    }
    if (B > q->cfg.calibration) B = q->cfg.calibration;
    return zt_net_calibrate(q->q, B, obs);
}

static zt_int8_gate_result result_of(const zt_int8_gate *q, int n, int agree, int ties,
                                     double abs_err)
{
    zt_int8_gate_result r = {.agreement = (double)agree / n,
                             .value_mae = abs_err / n,
                             .positions = n,
                             .ties = ties};
    r.passed = r.agreement >= q->cfg.agreement && r.value_mae <= q->cfg.value_mae;
    return r;
}

zt_status zt_int8_gate_run(zt_int8_gate *q, const float *weights, int B, const float *obs,
                           float *tail, zt_int8_gate_result *out)
{
    double t0 = zt_now_s();
    int n = q->cfg.positions, agree = 0, ties = 0;
    double abs_err = 0;
    ZT_TRY(quantise(q, weights, B, obs));
    ZT_TRY(compare(q, n, q->obs, q->legal, &agree, &ties, &abs_err));
    zt_int8_gate_result r = result_of(q, n, agree, ties, abs_err);
    tail[0] = r.passed ? 1.0f : 0.0f;
    if (!zt_net_ranges_get(q->q, tail + 1)) return zt_fail(ZT_ERR_INVALID, "int8 net has no ranges");
    r.seconds = zt_now_s() - t0;
    if (out) *out = r;
    return ZT_OK;
}

zt_status zt_int8_gate_measure(zt_int8_gate *q, const float *weights, int B, const float *obs,
                               int n, const float *pos_obs, const uint8_t *pos_legal,
                               zt_int8_gate_result *out)
{
    if (n < 1) return zt_fail(ZT_ERR_INVALID, "int8 measure: no positions");
    double t0 = zt_now_s();
    int agree = 0, ties = 0;
    double abs_err = 0;
    ZT_TRY(quantise(q, weights, B, obs));
    ZT_TRY(compare(q, n, pos_obs, pos_legal, &agree, &ties, &abs_err));
    *out = result_of(q, n, agree, ties, abs_err);
    out->seconds = zt_now_s() - t0;
    return ZT_OK;
}
