/* Random games through libzeroth's batched game calls: N games in lockstep,
 * each step one call for all the games still on.
 *
 *   cc play_random.c $(pkg-config --cflags --libs zeroth) -o play_random
 *   ./play_random "sim vertices=6 k=3" 500
 *
 * Prints how the games ended. Uses only include/zeroth/zeroth.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zeroth/zeroth.h>

static int fail(const char *what)
{
    fprintf(stderr, "play_random: %s: %s\n", what, zeroth_last_error());
    return 1;
}

/* xorshift64: enough randomness for picking moves */
static uint32_t next_random(uint64_t *s, uint32_t n)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)((*s >> 32) % n);
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "connect4";
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    if (n < 1) {
        fprintf(stderr, "usage: play_random [GAME_SPEC] [GAMES]\n");
        return 2;
    }
    zeroth_game_t *game;
    if (zeroth_game_new(spec, &game) != ZEROTH_OK) return fail("game");
    size_t S = zeroth_game_state_size(game);
    int A = zeroth_game_num_actions(game);

    /* all games, and the batch of those still on */
    uint8_t *states = malloc((size_t)n * S), *batch = malloc((size_t)n * S);
    uint8_t *mask = malloc((size_t)n * A);
    int *players = malloc((size_t)n * sizeof *players),
        *counts = malloc((size_t)n * sizeof *counts);
    int *actions = malloc((size_t)n * sizeof *actions), *index = malloc((size_t)n * sizeof *index);
    float *returns = malloc(2 * (size_t)n * sizeof *returns);
    if (!states || !batch || !mask || !players || !counts || !actions || !index || !returns) {
        fprintf(stderr, "play_random: out of memory\n");
        return 1;
    }
    uint64_t rng = 0x2545f4914f6cdd1dULL;
    long plies = 0;
    if (zeroth_game_reset(game, n, states) != ZEROTH_OK) return fail("reset");
    for (int round = 0;; round++) {
        /* dice and other chance events are drawn by the library */
        if (zeroth_game_sample_chance(game, n, states, (uint64_t)round) != ZEROTH_OK)
            return fail("chance");
        if (zeroth_game_players(game, n, states, players) != ZEROTH_OK) return fail("players");
        if (zeroth_game_legal(game, n, states, mask, counts) != ZEROTH_OK) return fail("legal");
        int live = 0;
        for (int i = 0; i < n; i++) {
            if (players[i] == ZEROTH_TERMINAL) continue;
            int k = (int)next_random(&rng, (uint32_t)counts[i]);
            for (int a = 0; a < A; a++)
                if (mask[(size_t)i * A + a] && k-- == 0) actions[live] = a;
            memcpy(batch + (size_t)live * S, states + (size_t)i * S, S);
            index[live++] = i;
        }
        if (live == 0) break;
        if (zeroth_game_step(game, live, batch, actions) != ZEROTH_OK) return fail("step");
        for (int k = 0; k < live; k++)
            memcpy(states + (size_t)index[k] * S, batch + (size_t)k * S, S);
        plies += live;
    }
    if (zeroth_game_returns(game, n, states, returns) != ZEROTH_OK) return fail("returns");
    int first = 0, second = 0, drawn = 0;
    for (int i = 0; i < n; i++) {
        if (returns[2 * i] > 0)
            first++;
        else if (returns[2 * i] < 0)
            second++;
        else
            drawn++;
    }
    printf("played %d games of %s: %d won by the first player, %d drawn, %d won by the second; "
           "%.1f plies on average\n",
           n, zeroth_game_spec(game), first, drawn, second, (double)plies / n);
    free(states);
    free(batch);
    free(mask);
    free(players);
    free(counts);
    free(actions);
    free(index);
    free(returns);
    zeroth_game_free(game);
    return 0;
}
