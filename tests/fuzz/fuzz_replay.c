/* Replay checkpoints (zt_replay_load, replay.bin of a checkpoint) of each
 * game. Input: one byte choosing the game, then the file; each is read as
 * it is and again with its checksum made right. A buffer that loads saves
 * to the same bytes (a file of an older version: to bytes that load and
 * save to themselves), and every stored position decodes and samples (by
 * the repeats' counts where the file's settings ask for them). */
#include "fuzz.h"
#include "core/rng.h"
#include "game/game.h"
#include "replay/record.h"
#include "replay/replay.h"

static const char *const specs[] = {"tictactoe", "connect4", "sim", "backgammon"};
#define NUM_SPECS ((int)(sizeof specs / sizeof specs[0]))
static zt_game *games[NUM_SPECS];
static zt_replay_batch batches[NUM_SPECS];

static void setup(void)
{
    if (games[0]) return;
    fuzz_quiet();
    for (int i = 0; i < NUM_SPECS; i++)
        if (zt_game_from_spec(specs[i], &games[i]) != ZT_OK ||
            zt_replay_batch_init(&batches[i], games[i], 4, true) != ZT_OK) {
            fprintf(stderr, "fuzz: '%s': %s\n", specs[i], zt_error_message());
            abort();
        }
}

static uint64_t le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The buffer's sizes are settings, not data: a file of a few bytes may ask
 * for the largest buffer a run could (a 4 GiB ring, a game table as large
 * as its capacity), and loading allocates it. Those are skipped here, so
 * that the fuzzer's 2 GB limit flags only allocations that the data
 * itself drives. Offsets from the layout in replay.c. */
static bool too_big(const uint8_t *data, size_t size)
{
    if (size < 22) return false;
    size_t at = 22 + (size_t)le(data + 20, 2) + 8;
    if (at + 24 > size) return false;
    uint64_t capacity = le(data + at, 8), max_games = le(data + at + 8, 8);
    uint64_t ring = le(data + at + 16, 8);
    /* version 3's repeats (f64 weight, u8 average) count the window in a
     * table of up to 128 bytes a position of the capacity */
    bool repeats = le(data + 8, 4) >= 3 && at + 66 <= size &&
                   (le(data + at + 57, 8) != 0 || data[at + 65] != 0);
    return max_games > (1u << 22) || ring > (1u << 28) || (repeats && capacity > (1u << 22));
}

static void load(int which, const uint8_t *data, size_t size)
{
    const zt_game *g = games[which];
    zt_replay *rb;
    if (too_big(data, size)) return;
    if (zt_replay_load(g, fuzz_write_temp(data, size), &rb) != ZT_OK) return;
    fuzz_accepted++;
    uint8_t *again;
    size_t len;
    FUZZ_CHECK(zt_replay_serialize(rb, &again, &len) == ZT_OK);
    if (le(data + 8, 4) < 3) {
        /* an older version is saved in the current one, which reads back
         * and saves to the same bytes */
        zt_replay *back;
        FUZZ_CHECK(zt_replay_deserialize(g, again, len, &back) == ZT_OK);
        uint8_t *third;
        size_t len3;
        FUZZ_CHECK(zt_replay_serialize(back, &third, &len3) == ZT_OK);
        FUZZ_CHECK(len3 == len && memcmp(third, again, len) == 0);
        free(third);
        zt_replay_free(back);
    } else {
        FUZZ_CHECK(len == size && memcmp(again, data, size) == 0);
    }
    free(again);
    zt_replay_stats stats = zt_replay_get_stats(rb);
    FUZZ_CHECK(stats.positions >= 0 && stats.positions <= stats.positions_seen);
    static float policy[ZT_MAX_ACTIONS];
    zt_replay_position pos;
    for (int64_t i = stats.positions_seen - stats.positions; i < stats.positions_seen; i++)
        FUZZ_CHECK(zt_replay_get(rb, i, &pos, policy) == ZT_OK);
    if (stats.positions > 0) {
        zt_rng rng;
        zt_rng_seed(&rng, 1, 2);
        FUZZ_CHECK(zt_replay_sample(rb, &rng, &batches[which]) == ZT_OK);
    }
    zt_replay_free(rb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1) return 0;
    int which = data[0] % NUM_SPECS;
    load(which, data + 1, size - 1);
    if (size - 1 >= 8) {
        uint8_t *fixed = malloc(size - 1);
        memcpy(fixed, data + 1, size - 1);
        fuzz_fix_checksum(fixed, size - 1, ZT_REPLAY_HASH_SEED);
        if (memcmp(fixed, data + 1, size - 1) != 0) load(which, fixed, size - 1);
        free(fixed);
    }
    return 0;
}
