#include "game/solver.h"

#include <string.h>

zt_status zt_solver_new(const zt_game *g, zt_solver **out)
{
    *out = NULL;
    if (strcmp(g->name, "tictactoe") == 0) return zt_solver_new_tictactoe(g, out);
    if (strcmp(g->name, "connect4") == 0) return zt_solver_new_connect4(g, out);
    if (strcmp(g->name, "sim") == 0) return zt_solver_new_sim(g, out);
    return zt_fail(ZT_ERR_UNSUPPORTED, "no exact solver for %s", g->title);
}

void zt_solver_free(zt_solver *sv)
{
    if (sv) sv->free(sv);
}
