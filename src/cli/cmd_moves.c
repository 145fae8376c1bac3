/* `zeroth moves backgammon --position ID --dice AB`: the distinct legal plays
 * for a position and roll, in GNU Backgammon's notation (the rules check
 * against gnubg; see tests/test_backgammon.c). */
#include "cli/cli.h"
#include "core/alloc.h"
#include "game/backgammon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth moves backgammon --position ID --dice AB\n\n"
               "Lists the distinct legal plays (distinct resulting positions) for the side to\n"
               "move: their number on the first line, then one play per line in GNU\n"
               "Backgammon's notation (e.g. 24/18 13/10*, bar/22 6/5, 13/9(2), 6/off 5/off).\n\n"
               "flags:\n"
               "  --position ID   gnubg position id, 14 characters, from the side to move's view\n"
               "                  (e.g. 4HPwATDgc/ABMA, the start position)\n"
               "  --dice AB       the roll, two digits 1-6 (e.g. 54; 66 plays four sixes)\n"
               "  --help          this text\n");
}

int zt_cmd_moves(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
    if (argc < 2 || argv[1][0] == '-')
        return zt_cli_error("moves: name the game first: zeroth moves backgammon --position ID "
                            "--dice AB");
    if (strcmp(argv[1], "backgammon") != 0)
        return zt_cli_error("moves: lists backgammon plays only, not '%s'", argv[1]);
    const char *position = NULL, *dice = NULL;
    for (int i = 2; i < argc; i++) {
        zt_status st = ZT_OK;
        const char *v;
        if (zt_cli_flag_value(argc, argv, &i, "--position", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            position = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--dice", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            dice = v;
        } else {
            return zt_cli_error("moves: unknown argument '%s' (see zeroth moves --help)", argv[i]);
        }
    }
    if (!position) return zt_cli_error("moves: --position ID is required");
    if (!dice) return zt_cli_error("moves: --dice AB is required");
    bg_state s;
    zt_status st = zt_bg_position(position, dice, &s);
    if (st != ZT_OK) return zt_cli_fail(st);
    bg_playlist *plays = zt_xmalloc(sizeof *plays);
    zt_bg_plays(&s, plays);
    printf("%d\n", plays->count);
    char text[64];
    for (int i = 0; i < plays->count; i++) {
        zt_bg_play_notation(&s, &plays->plays[i], text, sizeof text);
        printf("%s\n", text);
    }
    free(plays);
    return 0;
}
