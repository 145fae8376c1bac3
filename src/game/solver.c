#include "game/solver.h"

zt_status zt_solver_new(const zt_game *g, zt_solver **out)
{
    *out = NULL;
    if (!g->def || !g->def->solver)
        return zt_fail(ZT_ERR_UNSUPPORTED, "no exact solver for %s", g->title);
    return g->def->solver(g, out);
}

void zt_solver_free(zt_solver *sv)
{
    if (sv) sv->free(sv);
}
