/* The learner: train steps on sampled batches, and weight publication. */
#include "train/learner.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/timer.h"

struct zt_learner {
    const zt_game *game;
    const zt_train_settings *S;
    zt_replay *rb;
    zt_net *net;
    zt_trainer *trainer;
    zt_replay_sampler *sampler; /* NULL while paused or without prefetch */
    zt_replay_batch sync_batch; /* batches drawn on the calling thread */
    float *value_target;        /* batch: the mixed value target (equity: 5 per row) */
    zt_learner_counters counters;
    atomic_llong samples_trained; /* counters.samples_trained, for other threads */
    zt_weight_store *store;
    zt_weight_source source;
    zt_train_losses loss_sum, last_loss;
    int loss_count;
    zt_learner_reducer reducer; /* reduce NULL: alone */
    bool stopped;               /* the reducer skipped a step */
    zt_int8_gate *gate;         /* int8 actors, else NULL */
    zt_replay_batch cal_batch;  /* the calibration positions */
    size_t tensors_n;           /* floats of the tensors before the int8 tail */
    zt_learner_int8_stats int8;
    float *int8_tail;           /* int8.gate_every > 1: the last gate run's tail, for the
                                 * versions until the next */
    uint64_t int8_carried;      /* versions sent out with it since */
    zt_learner_times times;
    double lr_end, lr_start; /* zt_learner_set_lr_deadline; lr_start: the first step's time */
    float *average;          /* learner.average > 0: the weights' moving average (flat) */
};

/* What the batches' rows carry beyond their position: MuZero's unroll
 * (with the observations after each step for Stochastic MuZero's chance
 * encoder and the consistency term, and the value targets' bootstrap);
 * NULL for AlphaZero. */
static const zt_replay_unroll *unroll_of(const zt_train_settings *S, zt_replay_unroll *u)
{
    if (!zt_algorithm_is_muzero(S->algorithm)) return NULL;
    *u = (zt_replay_unroll){.steps = S->unroll,
                            .next_obs = S->algorithm == ZT_ALGO_STOCHASTIC_MUZERO ||
                                        S->optimizer.consistency_weight > 0,
                            .td_steps = S->td_steps,
                            .discount = (float)S->discount,
                            .turns = S->net.turn_head != 0,
                            .outcome_reward = S->outcome_reward,
                            .chance_labels = S->chance_labels};
    return u;
}

zt_status zt_learner_new(const zt_game *g, const zt_train_settings *S, zt_replay *rb,
                         zt_learner **out)
{
    *out = NULL;
    zt_learner *l = zt_xcalloc(1, sizeof *l);
    l->game = g;
    l->S = S;
    l->rb = rb;
    zt_status st = zt_net_new(&S->net, S->backend, S->precision, S->learner_threads, &l->net);
    if (st == ZT_OK) {
        zt_rng init;
        zt_rng_seed(&init, S->seed, 0x6e657421ULL);
        zt_net_init(l->net, &init);
        st = zt_trainer_new(l->net, &S->optimizer, &l->trainer);
    }
    zt_replay_unroll u;
    if (st == ZT_OK)
        st = zt_replay_batch_init_unroll(&l->sync_batch, g, S->batch,
                                         S->net.value_kind == ZT_VALUE_WDL, unroll_of(S, &u));
    if (st != ZT_OK) {
        zt_learner_free(l);
        return st;
    }
    zt_rng_seed(&l->counters.sample_rng, S->seed, 0x73616d70ULL);
    l->value_target =
        zt_xcalloc((size_t)S->batch * (size_t)zt_net_value_size(&S->net), sizeof *l->value_target);
    l->tensors_n = zt_net_flat_size(l->net);
    if (S->average_steps > 0) {
        l->average = zt_xmalloc(l->tensors_n * sizeof *l->average);
        zt_net_flat_get(l->net, l->average);
    }
    if (S->int8_actors) {
        st = zt_int8_gate_new(g, &S->net, S->backend, S->learner_threads, &S->int8_gate, S->seed,
                              &l->gate);
        if (st == ZT_OK)
            st = zt_replay_batch_init(&l->cal_batch, g, S->int8_gate.calibration,
                                      S->net.value_kind == ZT_VALUE_WDL);
        if (st == ZT_OK && S->int8_gate.every > 1)
            l->int8_tail = zt_xmalloc(zt_int8_gate_tail_size(l->gate) * sizeof *l->int8_tail);
        if (st != ZT_OK) {
            zt_learner_free(l);
            return st;
        }
    }
    l->store = zt_weight_store_new(l->tensors_n + zt_learner_weights_tail(l));
    l->source = zt_weight_store_source(l->store);
    *out = l;
    return ZT_OK;
}

void zt_learner_free(zt_learner *l)
{
    if (!l) return;
    zt_learner_pause(l);
    zt_replay_batch_free(&l->sync_batch);
    if (l->gate) zt_replay_batch_free(&l->cal_batch);
    zt_int8_gate_free(l->gate);
    free(l->int8_tail);
    free(l->average);
    free(l->value_target);
    zt_weight_store_free(l->store);
    zt_trainer_free(l->trainer);
    zt_net_free(l->net);
    free(l);
}

void zt_learner_set_replay(zt_learner *l, zt_replay *rb)
{
    ZT_ASSERT(l->sampler == NULL);
    l->rb = rb;
}

zt_net *zt_learner_net(zt_learner *l)
{
    return l->net;
}

double zt_learner_average_weight(int64_t step, int horizon)
{
    double decay = 1.0 - 1.0 / horizon, ramp = (1.0 + (double)step) / (10.0 + (double)step);
    return 1.0 - (ramp < decay ? ramp : decay);
}

const float *zt_learner_average(const zt_learner *l)
{
    return l->average;
}

void zt_learner_set_average(zt_learner *l, const float *average)
{
    ZT_ASSERT(l->average != NULL);
    memcpy(l->average, average, l->tensors_n * sizeof *l->average);
}

zt_trainer *zt_learner_trainer(zt_learner *l)
{
    return l->trainer;
}

zt_learner_counters zt_learner_get_counters(const zt_learner *l)
{
    return l->counters;
}

void zt_learner_set_counters(zt_learner *l, const zt_learner_counters *c)
{
    ZT_ASSERT(l->sampler == NULL);
    l->counters = *c;
    atomic_store(&l->samples_trained, c->samples_trained);
}

int64_t zt_learner_samples_trained(const zt_learner *l)
{
    return atomic_load(&((zt_learner *)l)->samples_trained);
}

static zt_status start_sampler(zt_learner *l)
{
    if (!l->S->prefetch || l->sampler) return ZT_OK;
    zt_replay_unroll u;
    return zt_replay_sampler_new_unroll(l->rb, l->S->batch, l->S->net.value_kind == ZT_VALUE_WDL,
                                        unroll_of(l->S, &u), &l->counters.sample_rng, &l->sampler);
}

void zt_learner_pause(zt_learner *l)
{
    zt_replay_sampler_free(l->sampler);
    l->sampler = NULL;
}

static zt_status train_on(zt_learner *l, const zt_train_batch *tb);

zt_status zt_learner_step(zt_learner *l)
{
    const zt_train_settings *S = l->S;
    ZT_TRY(start_sampler(l));
    const zt_replay_batch *b;
    uint64_t t0 = zt_now_ns();
    if (l->sampler) {
        ZT_TRY(zt_replay_sampler_next(l->sampler, &b));
        l->counters.sample_rng = b->rng_after;
    } else {
        ZT_TRY(zt_replay_sample(l->rb, &l->counters.sample_rng, &l->sync_batch));
        b = &l->sync_batch;
    }
    l->times.sample_ns += zt_now_ns() - t0;
    if (b->unroll > 0) {
        /* MuZero: targets of every step of the unroll (root_value_weight
         * does not apply: the value targets are the outcomes) */
        zt_train_batch tb = {.B = b->size,
                             .obs = b->obs,
                             .policy_target = b->u_policy,
                             .value_target = b->u_value,
                             .unroll = b->unroll,
                             .actions = b->u_action,
                             .policy_mask = b->u_mask,
                             .reward_target = b->u_reward,
                             .next_obs = b->u_next_obs,
                             .chance_mask = b->u_chance_mask,
                             .turn_target = b->u_turn,
                             .chance_code = b->u_chance_code};
        return train_on(l, &tb);
    }
    const float *vt = b->value;
    if (S->net.value_kind == ZT_VALUE_WDL) {
        vt = b->wdl;
    } else if (S->net.value_kind == ZT_VALUE_EQUITY) {
        /* The five outcome targets from the game's result in points (the
         * outcome on the [-1, 1] scale times max_return). */
        for (int i = 0; i < b->size; i++)
            zt_equity_targets(b->value[i] * l->game->max_return,
                              l->value_target + (size_t)i * ZT_EQ_OUTPUTS);
        vt = l->value_target;
    } else if (S->root_value_weight > 0 || S->reanalyse_fraction > 0) {
        /* A mix of outcome and search value (Wu 2019 and others): less
         * noisy than the outcome alone. A reanalysed position mixes in its
         * fresh root value by reanalyse.value_mix instead. */
        float w = (float)S->root_value_weight, m = (float)S->reanalyse_value_mix;
        for (int i = 0; i < b->size; i++) {
            float wi = b->reanalysed[i] != 0 ? m : w;
            l->value_target[i] = (1 - wi) * b->value[i] + wi * b->root_value[i];
        }
        vt = l->value_target;
    }
    zt_train_batch tb = {.B = b->size,
                         .obs = b->obs,
                         .policy_target = b->policy,
                         .legal = b->legal,
                         .value_target = vt};
    return train_on(l, &tb);
}

/* A step on tb (NULL: none of this learner's own, with a reducer) and its
 * bookkeeping. */
void zt_learner_set_lr_deadline(zt_learner *l, double end)
{
    l->lr_end = end;
    l->lr_start = 0;
}

static zt_status train_on(zt_learner *l, const zt_train_batch *tb)
{
    zt_train_losses loss;
    bool skipped = false;
    if (l->lr_end > 0) {
        double now = zt_now_s();
        if (l->lr_start == 0) l->lr_start = now;
        double span = l->lr_end - l->lr_start;
        zt_trainer_set_progress(l->trainer, span > 0 ? (now - l->lr_start) / span : 1);
    }
    uint64_t t0 = zt_now_ns();
    zt_status st = zt_trainer_step_reduced(l->trainer, tb, l->reducer.reduce, l->reducer.ctx,
                                           &loss, &skipped);
    l->times.train_ns += zt_now_ns() - t0;
    ZT_TRY(st);
    if (skipped) {
        l->stopped = true;
        return ZT_OK;
    }
    int replicas = l->reducer.reduce ? l->reducer.replicas : 1;
    l->counters.step++;
    if (l->average)
        zt_net_flat_average(
            l->net, l->average,
            (float)zt_learner_average_weight(l->counters.step, l->S->average_steps));
    int64_t rows = tb ? tb->B : l->S->batch;
    l->counters.samples_trained += rows * replicas;
    atomic_store(&l->samples_trained, l->counters.samples_trained);
    l->last_loss = loss;
    l->loss_sum.policy += loss.policy;
    l->loss_sum.value += loss.value;
    l->loss_sum.reward += loss.reward;
    l->loss_sum.afterstate += loss.afterstate;
    l->loss_sum.chance += loss.chance;
    l->loss_sum.commitment += loss.commitment;
    l->loss_sum.code_balance += loss.code_balance;
    l->loss_sum.turn += loss.turn;
    l->loss_sum.consistency += loss.consistency;
    l->loss_sum.policy0 += loss.policy0;
    l->loss_sum.value0 += loss.value0;
    l->loss_sum.code_perplexity += loss.code_perplexity;
    l->loss_sum.l2 += loss.l2;
    l->loss_sum.total += loss.total;
    l->loss_sum.grad_norm += loss.grad_norm;
    l->loss_count++;
    if (!isfinite(loss.total))
        return zt_fail(ZT_ERR_INVALID, "training diverged at step %lld (loss %g)",
                       (long long)l->counters.step, loss.total);
    return ZT_OK;
}

void zt_learner_set_reducer(zt_learner *l, const zt_learner_reducer *r)
{
    l->reducer = r ? *r : (zt_learner_reducer){0};
}

zt_status zt_learner_step_without_batch(zt_learner *l)
{
    ZT_ASSERT(l->reducer.reduce != NULL);
    return train_on(l, NULL);
}

bool zt_learner_stopped(const zt_learner *l)
{
    return l->stopped;
}

/* Quantises and gates the version in `weights`, writing its int8 tail. */
static void run_gate(zt_learner *l, const float *weights, float *tail)
{
    const float *obs = NULL;
    int B = 0;
    if (l->rb) {
        zt_rng rng;
        /* Drawn from the step, not the version number: a resumed run publishes
         * its first version at the step the checkpoint was taken, where the
         * straight run published the same weights. */
        zt_rng_seed(&rng, l->S->seed ^ (uint64_t)l->counters.step, 0x63616c69ULL);
        if (zt_replay_sample(l->rb, &rng, &l->cal_batch) == ZT_OK) {
            obs = l->cal_batch.obs;
            B = l->cal_batch.size;
        }
    }
    zt_int8_gate_result r;
    if (zt_int8_gate_run(l->gate, weights, B, obs, tail, &r) != ZT_OK) {
        zt_warn("int8: version %llu not quantised (%s); it runs in %s",
                (unsigned long long)l->counters.published + 1, zt_error_message(),
                zt_precision_name(zt_int8_gate_fallback(l->gate)));
        memset(&r, 0, sizeof r);
        tail[0] = 0.0f;
    } else if (!r.passed) {
        zt_info("int8: version %llu fails the gate (top-1 agreement %.4f, value MAE %.4f); it "
                "runs in %s",
                (unsigned long long)l->counters.published + 1, r.agreement, r.value_mae,
                zt_precision_name(zt_int8_gate_fallback(l->gate)));
    }
    l->int8.last = r;
    l->int8.gate_runs++;
}

/* The version's int8 tail: the gate's, or between gate runs
 * (int8.gate_every) the last run's; counted by the verdict it carries. */
static void publish_int8(zt_learner *l, const float *weights, float *tail)
{
    size_t tail_n = zt_int8_gate_tail_size(l->gate);
    if (l->int8.gate_runs > 0 && l->int8_carried + 1 < (uint64_t)l->S->int8_gate.every) {
        memcpy(tail, l->int8_tail, tail_n * sizeof *tail);
        l->int8_carried++;
    } else {
        run_gate(l, weights, tail);
        if (l->int8_tail) {
            memcpy(l->int8_tail, tail, tail_n * sizeof *tail);
            l->int8_carried = 0;
        }
    }
    if (tail[0] == 1.0f)
        l->int8.int8_versions++;
    else
        l->int8.fallbacks++;
}

zt_learner_times zt_learner_get_times(const zt_learner *l)
{
    return l->times;
}

void zt_learner_publish(zt_learner *l)
{
    uint64_t t0 = zt_now_ns();
    float *start = zt_weight_store_begin(l->store), *dst;
    if (l->average && l->S->average_actors) {
        memcpy(start, l->average, l->tensors_n * sizeof *start);
        dst = start + l->tensors_n;
    } else {
        dst = zt_net_flat_get(l->net, start);
    }
    if (l->gate) publish_int8(l, start, dst);
    zt_weight_store_commit(l->store);
    l->counters.published++;
    l->times.publish_ns += zt_now_ns() - t0;
}

bool zt_learner_int8(const zt_learner *l, zt_learner_int8_stats *out)
{
    if (!l->gate) return false;
    *out = l->int8;
    return true;
}

size_t zt_learner_weights_tail(const zt_learner *l)
{
    return l->gate ? zt_int8_gate_tail_size(l->gate) : 0;
}

const zt_weight_source *zt_learner_weight_source(const zt_learner *l)
{
    return &l->source;
}

int zt_learner_mean_losses(const zt_learner *l, zt_train_losses *mean)
{
    *mean = l->last_loss;
    if (l->loss_count == 0) return 0;
    double k = 1.0 / l->loss_count;
    *mean = l->loss_sum;
    mean->policy *= k, mean->value *= k, mean->reward *= k, mean->l2 *= k, mean->total *= k,
        mean->grad_norm *= k;
    mean->afterstate *= k, mean->chance *= k, mean->commitment *= k, mean->turn *= k;
    mean->consistency *= k;
    mean->code_perplexity *= k, mean->code_balance *= k;
    mean->policy0 *= k, mean->value0 *= k;
    mean->lr = l->last_loss.lr;
    return l->loss_count;
}

void zt_learner_reset_losses(zt_learner *l)
{
    memset(&l->loss_sum, 0, sizeof l->loss_sum);
    l->loss_count = 0;
}

zt_train_losses zt_learner_last_loss(const zt_learner *l)
{
    return l->last_loss;
}
