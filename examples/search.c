/* Tree search over a model the caller supplies, through libzeroth: a
 * tic-tac-toe game played out by PUCT search whose model knows nothing
 * (every move equally likely, every position even), so the moves come from
 * the search alone, which sees wins and losses where the game ends.
 *
 *   cc search.c $(pkg-config --cflags --libs zeroth) -o search
 *   ./search "XX.OO.... X"
 *
 * Prints one line per move and the result. Uses only include/zeroth/zeroth.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zeroth/zeroth.h>

static int fail(const char *what)
{
    fprintf(stderr, "search: %s: %s\n", what, zeroth_last_error());
    return 1;
}

/* The caller's model: n observations in, logits and values out. */
static zeroth_status uniform(void *user, int n, const float *obs, float *logits, float *value)
{
    const zeroth_game_t *game = user;
    int A = zeroth_game_num_actions(game);
    (void)obs;
    memset(logits, 0, (size_t)n * A * sizeof *logits);
    for (int i = 0; i < n; i++) value[i] = 0.0f;
    return ZEROTH_OK;
}

int main(int argc, char **argv)
{
    zeroth_game_t *game;
    if (zeroth_game_new("tictactoe", &game) != ZEROTH_OK) return fail("game");
    uint8_t state[256];
    if (zeroth_game_state_size(game) > sizeof state) return fail("state size");
    if (argc > 1) {
        if (zeroth_game_from_text(game, argv[1], state) != ZEROTH_OK) return fail("position");
    } else if (zeroth_game_reset(game, 1, state) != ZEROTH_OK) {
        return fail("reset");
    }
    zeroth_search_t *search;
    if (zeroth_search_new_callbacks(game, uniform, NULL, game, 1, "search.algorithm=puct search.sims=400",
                                    &search) != ZEROTH_OK)
        return fail("search");
    for (;;) {
        int player;
        zeroth_game_players(game, 1, state, &player);
        if (player == ZEROTH_TERMINAL) break;
        int action;
        float value;
        char position[1024], move[1024];
        if (zeroth_search_begin(search, 1, NULL, state) != ZEROTH_OK ||
            zeroth_search_run(search) != ZEROTH_OK ||
            zeroth_search_choose(search, 1, NULL, 0.0f, &action) != ZEROTH_OK ||
            zeroth_search_root_value(search, 1, NULL, &value) != ZEROTH_OK)
            return fail("searching");
        zeroth_game_to_text(game, state, position, sizeof position);
        zeroth_game_action_to_text(game, state, action, move, sizeof move);
        printf("%s -> %s (value %+.2f)\n", position, move, value);
        /* the tree keeps the subtree of the move for the next search */
        if (zeroth_search_played(search, 1, NULL, &action) != ZEROTH_OK ||
            zeroth_game_step(game, 1, state, &action) != ZEROTH_OK)
            return fail("playing");
    }
    float returns[2];
    zeroth_game_returns(game, 1, state, returns);
    printf("result: %s\n", returns[0] > 0 ? "X wins" : returns[0] < 0 ? "O wins" : "draw");
    zeroth_search_free(search);
    zeroth_game_free(game);
    return 0;
}
