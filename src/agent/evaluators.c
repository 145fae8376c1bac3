#include "agent/evaluators.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "game/solver.h"

static zt_status uniform_states(void *ctx, int B, const void *const *states, float *logits,
                                float *value)
{
    const zt_game *g = ctx;
    memset(logits, 0, (size_t)B * (size_t)g->num_actions * sizeof *logits);
    memset(value, 0, (size_t)B * sizeof *value);
    return ZT_OK;
}

zt_evaluator zt_evaluator_uniform(const zt_game *g)
{
    return (zt_evaluator){.ctx = (void *)g, .eval_states = uniform_states};
}

typedef struct oracle {
    zt_solver *solver;
    zt_solution solution;
} oracle;

static zt_status oracle_states(void *ctx, int B, const void *const *states, float *logits,
                               float *value)
{
    oracle *o = ctx;
    const zt_game *g = o->solver->game;
    int A = g->num_actions;
    for (int b = 0; b < B; b++) {
        zt_solution *sol = &o->solution;
        ZT_TRY(o->solver->solve(o->solver, states[b], true, sol));
        float *lg = logits + (size_t)b * A;
        for (int a = 0; a < A; a++) lg[a] = -ZT_ORACLE_LOGIT_GAP;
        for (int k = 0; k < sol->num_moves; k++) lg[sol->moves[k]] = 0.0f;
        value[b] = (float)sol->value;
    }
    return ZT_OK;
}

zt_status zt_evaluator_oracle_new(const zt_game *g, zt_evaluator *out)
{
    memset(out, 0, sizeof *out);
    zt_solver *sv;
    ZT_TRY(zt_solver_new(g, &sv));
    oracle *o = zt_xcalloc(1, sizeof *o);
    o->solver = sv;
    out->ctx = o;
    out->eval_states = oracle_states;
    return ZT_OK;
}

void zt_evaluator_oracle_free(zt_evaluator *ev)
{
    oracle *o = ev->ctx;
    if (!o) return;
    zt_solver_free(o->solver);
    free(o);
    ev->ctx = NULL;
}
