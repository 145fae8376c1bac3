/* Tests of GNU Backgammon as a player (skipped where gnubg is not installed):
 * whole games against random play through the arena, with games in flight
 * at once, run without an illegal or unmatched play; gnubg at 0-ply beats
 * random play; a non-backgammon game and a bad spec are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gnubg.h"
#include "arena/arena.h"

#include "zt_test.h"

int main(void)
{
    zt_game *bg, *c4;
    if (zt_game_new("backgammon", NULL, &bg) != ZT_OK ||
        zt_game_new("connect4", NULL, &c4) != ZT_OK) {
        printf("FAIL: games: %s\n", zt_error_message());
        return 1;
    }
    zt_player *p;
    CHECK(zt_player_new_gnubg(c4, "gnubg", &p) == ZT_ERR_INVALID, "connect4 accepted");
    CHECK(zt_player_new_gnubg(bg, "gnubg:9", &p) == ZT_ERR_INVALID, "gnubg:9 accepted");
    CHECK(zt_player_new_gnubg(bg, "gnubg:x", &p) == ZT_ERR_INVALID, "gnubg:x accepted");

    zt_status st = zt_player_new_gnubg(bg, "gnubg", &p);
    if (st == ZT_ERR_NOT_FOUND) {
        printf("skipped: %s\n", zt_error_message());
        zt_game_free(bg);
        zt_game_free(c4);
        return zt_test_finish("test_gnubg");
    }
    CHECK(st == ZT_OK, "gnubg: %s", zt_error_message());
    if (st == ZT_OK) {
        zt_player *rp;
        CHECK(zt_player_new(bg, "random", &rp) == ZT_OK, "random: %s", zt_error_message());
        zt_agent *a = zt_agent_from_player(p, true), *b = zt_agent_from_player(rp, true);
        uint64_t seed = 20260101;
        printf("seed %llu\n", (unsigned long long)seed);
        zt_match_config mc = {.games = 12, .concurrency = 4, .seed = seed};
        zt_match_result r;
        st = zt_arena_match(bg, a, b, &mc, &r);
        CHECK(st == ZT_OK, "match: %s / gnubg: %s", zt_error_message(), zt_gnubg_error(p));
        CHECK(zt_gnubg_error(p)[0] == '\0', "gnubg error: %s", zt_gnubg_error(p));
        CHECK(r.games == 12, "games %d", r.games);
        CHECK(r.wins >= 10, "gnubg won only %d of 12 against random", r.wins);
        char line[256];
        zt_match_format(&r, false, line, sizeof line);
        printf("gnubg vs random: %s, points %+.0f\n", line, r.total_return);
        zt_agent_free(a);
        zt_agent_free(b);
    }
    zt_game_free(bg);
    zt_game_free(c4);
    return zt_test_finish("test_gnubg");
}
