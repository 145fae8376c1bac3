/* The shared position files (game/solver.h): the reader (lines of any
 * length, comments, NUL bytes) and each solver's parse_line. Input: one byte
 * choosing the game, then the file. Every position read is not over, its
 * expected moves are actions of the game, and the reader reads as many
 * positions as zt_position_file_count counted. */
#include "fuzz.h"
#include "game/solver.h"

static const char *const specs[] = {"tictactoe", "connect4", "sim"};
#define NUM_SPECS ((int)(sizeof specs / sizeof specs[0]))
static zt_game *games[NUM_SPECS];
static zt_solver *solvers[NUM_SPECS];

static void setup(void)
{
    if (games[0]) return;
    fuzz_quiet();
    for (int i = 0; i < NUM_SPECS; i++)
        if (zt_game_from_spec(specs[i], &games[i]) != ZT_OK ||
            zt_solver_new(games[i], &solvers[i]) != ZT_OK) {
            fprintf(stderr, "fuzz: '%s': %s\n", specs[i], zt_error_message());
            abort();
        }
}

static void check_moves(const zt_game *g, const uint16_t *moves, int n)
{
    FUZZ_CHECK(n >= 0 && n <= g->num_actions);
    for (int i = 0; i < n; i++) FUZZ_CHECK(moves[i] < g->num_actions);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1) return 0;
    int which = data[0] % NUM_SPECS;
    const zt_game *g = games[which];
    zt_solver *sv = solvers[which];
    zt_position_file pf;
    if (zt_position_file_open_text("fuzz", (const char *)data + 1, size - 1, &pf) != ZT_OK)
        return 0;
    long count = zt_position_file_count(&pf, 0), read = 0;
    static zt_position pos;
    bool got = true;
    zt_status st = ZT_OK;
    while (got && (st = zt_position_file_next(&pf, sv, &pos, &got)) == ZT_OK && got) {
        read++;
        FUZZ_CHECK(!zt_game_is_terminal(g, pos.state));
        if (pos.has_moves) check_moves(g, pos.expected.moves, pos.expected.num_moves);
        if (pos.has_best) check_moves(g, pos.expected.best, pos.expected.num_best);
        if (pos.has_value) FUZZ_CHECK(pos.expected.value >= -1 && pos.expected.value <= 1);
    }
    /* the count and the reader agree on what a position line is */
    FUZZ_CHECK(st != ZT_OK || read == count);
    if (st == ZT_OK && read > 0) fuzz_accepted++;
    zt_position_file_close(&pf);
    return 0;
}
