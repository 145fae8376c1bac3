/* The learner (DESIGN.md §1): the net being trained, its optimizer, the
 * sampler thread that prepares its batches, the train step, the running
 * mean of its losses, and the weight store it publishes numbered versions
 * to (the actors' weight source).
 *
 * The learner owns all of that and frees it in zt_learner_free; it borrows
 * the game, the settings and the replay buffer, which must outlive it. It
 * is driven by one thread; zt_learner_samples_trained and the weight source
 * may be used from any. */
#ifndef ZT_TRAIN_LEARNER_H
#define ZT_TRAIN_LEARNER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"
#include "game/game.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/weights.h"
#include "train/train.h"

typedef struct zt_learner zt_learner;

/* What a checkpoint keeps of the learner besides its net and optimizer
 * (the zt_train_state fields of the same names). */
typedef struct zt_learner_counters {
    int64_t step;            /* train steps */
    int64_t samples_trained; /* rows of all batches trained on */
    uint64_t published;      /* weight versions published, over all invocations */
    zt_rng sample_rng;       /* the batch stream, after the last batch trained on */
} zt_learner_counters;

/* A learner whose net is initialised from the run's seed. */
zt_status zt_learner_new(const zt_game *g, const zt_train_settings *S, zt_replay *rb,
                         zt_learner **out);
void zt_learner_free(zt_learner *l);
/* Trains from rb from now on (a buffer loaded from a checkpoint). The
 * sampler thread must be stopped (zt_learner_pause). */
void zt_learner_set_replay(zt_learner *l, zt_replay *rb);

zt_net *zt_learner_net(zt_learner *l);
zt_trainer *zt_learner_trainer(zt_learner *l);
/* learner.average = N > 0: after each step the average moves toward the
 * net's weights and running statistics by zt_learner_average_weight(the
 * step, N): the exponential moving average of decay 1 - 1/N, with
 * TensorFlow's ramp min(1 - 1/N, (1 + step) / (10 + step)) so that the
 * first steps' weights do not linger in it. zt_learner_average is the flat
 * average (zt_net_flat_get's layout), NULL when learner.average = 0; set
 * replaces it (a resumed run's). With learner.average_actors each
 * publication (zt_learner_publish) carries the average, not the net. */
double zt_learner_average_weight(int64_t step, int horizon);
const float *zt_learner_average(const zt_learner *l);
void zt_learner_set_average(zt_learner *l, const float *average);
zt_learner_counters zt_learner_get_counters(const zt_learner *l);
void zt_learner_set_counters(zt_learner *l, const zt_learner_counters *c);
/* Rows trained on so far; any thread may read it (the actors' throttle). */
int64_t zt_learner_samples_trained(const zt_learner *l);

/* One train step on the next batch: from the sampler thread (started here
 * when learner.prefetch is on and it is not running) or drawn on the
 * calling thread. ZT_ERR_INVALID when the loss is no longer finite
 * ("training diverged at step N"). */
zt_status zt_learner_step(zt_learner *l);
/* Data-parallel learners (dist.learners, src/dist/): every step's gradient
 * goes through `reduce` (zt_trainer_step_reduced: the mean over the
 * learners), and a step counts `replicas` batches as trained, the global
 * batch. A reduce that skips the step ends the learner's part in the run:
 * zt_learner_step then returns ZT_OK with *stopped (zt_learner_stopped). */
typedef struct zt_learner_reducer {
    void *ctx;
    int replicas;
    zt_trainer_reduce_fn reduce;
} zt_learner_reducer;
/* NULL: train alone again. The reducer is copied. */
void zt_learner_set_reducer(zt_learner *l, const zt_learner_reducer *r);

/* A cosine schedule of learner.total_steps = 0 over wall time: each step
 * reports the trainer its progress, the share of the time from its first
 * step to `end` (zt_now_s's clock) spent; end <= 0: none (the default). */
void zt_learner_set_lr_deadline(zt_learner *l, double end);
/* With a reducer: a step without a batch of this learner's own (its buffer
 * is still filling): the others' mean gradient is applied all the same, so
 * that every learner holds the same weights. */
zt_status zt_learner_step_without_batch(zt_learner *l);
/* True once the reducer skipped a step: the run's learners stop. */
bool zt_learner_stopped(const zt_learner *l);

/* Stops the sampler thread; the next step starts a new one from the rng
 * of the last batch trained on, so pausing changes no batch. */
void zt_learner_pause(zt_learner *l);

/* Copies the net's weights into the store as the next version; for int8
 * actors with the int8 tail: calibrated on replay positions drawn from
 * (seed, step), so a resumed run publishes the same, then gated. A
 * failed quantisation is logged and the version falls back. */
void zt_learner_publish(zt_learner *l);

/* int8 actors: versions that went out in int8 and that fell back, and the
 * last gate's result. */
typedef struct zt_learner_int8_stats {
    uint64_t int8_versions, fallbacks; /* versions sent out int8 / in the fallback */
    uint64_t gate_runs; /* the rest carried the last run's ranges (int8.gate_every) */
    zt_int8_gate_result last; /* the last gate run's */
} zt_learner_int8_stats;
/* False (nothing written) when the actors are not int8. */
bool zt_learner_int8(const zt_learner *l, zt_learner_int8_stats *out);
/* Floats of the int8 tail each version carries (0: none). */
size_t zt_learner_weights_tail(const zt_learner *l);
/* The store as a weight source (valid while the learner lives). */
const zt_weight_source *zt_learner_weight_source(const zt_learner *l);

/* Where the learner's thread spent its time, in nanoseconds since the
 * learner was made: getting batches (the prefetching sampler's wait, or
 * sampling on this thread without one), the training steps on them, and
 * publications (int8 actors: their gate included). */
typedef struct zt_learner_times {
    uint64_t sample_ns, train_ns, publish_ns;
} zt_learner_times;
zt_learner_times zt_learner_get_times(const zt_learner *l);

/* The mean of the losses since zt_learner_reset_losses (lr: the last
 * step's) into *mean, and how many steps it covers; with none, the last
 * step's losses. */
int zt_learner_mean_losses(const zt_learner *l, zt_train_losses *mean);
void zt_learner_reset_losses(zt_learner *l);
zt_train_losses zt_learner_last_loss(const zt_learner *l);

#endif
