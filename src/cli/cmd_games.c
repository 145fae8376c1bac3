/* zeroth games: the registered games and their settings. */
#include <stdio.h>

#include "cli/cli.h"

int zt_cmd_games(int argc, char **argv)
{
    if (argc > 1 && zt_cli_is_help(argv[1])) {
        printf("usage: zeroth games\n\nLists the games with their sizes.\n");
        return 0;
    }
    printf("%-11s %-24s %8s %8s %6s  %s\n", "name", "default instance", "actions", "obs", "syms",
           "about");
    for (int i = 0; i < zt_game_registry_count; i++) {
        const zt_game_def *def = zt_game_registry[i];
        if (!def) continue;
        zt_game *g;
        if (zt_game_new(def->name, NULL, &g) != ZT_OK) return zt_cli_fail(ZT_ERR_INVALID);
        char obs[32];
        snprintf(obs, sizeof obs, "%dx%dx%d", g->obs_shape[0], g->obs_shape[1], g->obs_shape[2]);
        printf("%-11s %-24s %8d %8s %6d  %s\n", def->name, g->title, g->num_actions, obs,
               g->num_symmetries, def->summary);
        zt_game_free(g);
    }
    printf("\nsim settings: --set vertices=N (4..18) --set k=K (3..6) --set variant=avoid|make\n");
    printf("2048 settings: --set value_scale=POINTS (points per unit of value, default 65536)\n");
    return 0;
}
