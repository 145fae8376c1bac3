/* Serialised trajectories (zt_replay_traj_deserialize: what an MPI sink
 * receives and files of games hold) of each game. Input: one byte choosing
 * the game, then the bytes; each is read as it is and again with its
 * checksum made right. A trajectory that reads serialises to the same bytes
 * and goes into a replay buffer, where every position decodes. A refused
 * one leaves the trajectory as it was. */
#include "fuzz.h"
#include "game/game.h"
#include "replay/record.h"
#include "replay/replay.h"

static const char *const specs[] = {"tictactoe", "connect4", "sim", "backgammon"};
#define NUM_SPECS ((int)(sizeof specs / sizeof specs[0]))
static zt_game *games[NUM_SPECS];
static zt_replay_traj *trajs[NUM_SPECS];
static zt_replay *buffers[NUM_SPECS];

static void setup(void)
{
    if (games[0]) return;
    fuzz_quiet();
    for (int i = 0; i < NUM_SPECS; i++) {
        zt_replay_config cfg;
        zt_replay_config_default(&cfg);
        cfg.capacity = 4096;
        if (zt_game_from_spec(specs[i], &games[i]) != ZT_OK ||
            zt_replay_traj_new(games[i], &trajs[i]) != ZT_OK ||
            zt_replay_new(games[i], &cfg, &buffers[i]) != ZT_OK) {
            fprintf(stderr, "fuzz: '%s': %s\n", specs[i], zt_error_message());
            abort();
        }
    }
}

static void read_traj(int which, const uint8_t *data, size_t size)
{
    const zt_game *g = games[which];
    zt_replay_traj *t = trajs[which];
    /* a refused input must leave t as it was: empty */
    zt_replay_traj_clear(t);
    float return0;
    if (zt_replay_traj_deserialize(g, data, size, t, &return0) != ZT_OK) {
        FUZZ_CHECK(zt_replay_traj_length(t) == 0);
        return;
    }
    fuzz_accepted++;
    size_t need = zt_replay_traj_serialized_size(t), len;
    uint8_t *again = malloc(need);
    FUZZ_CHECK(zt_replay_traj_serialize(t, return0, again, need, &len) == ZT_OK);
    FUZZ_CHECK(len == size && memcmp(again, data, size) == 0);
    free(again);
    zt_replay *rb = buffers[which];
    if (zt_replay_add_game(rb, t, return0, NULL) == ZT_OK) {
        zt_replay_stats stats = zt_replay_get_stats(rb);
        zt_replay_position pos;
        static float policy[ZT_MAX_ACTIONS];
        int n = zt_replay_traj_length(t);
        for (int64_t i = stats.positions_seen - n; i < stats.positions_seen; i++)
            FUZZ_CHECK(zt_replay_get(rb, i, &pos, policy) == ZT_OK);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1) return 0;
    int which = data[0] % NUM_SPECS;
    read_traj(which, data + 1, size - 1);
    if (size - 1 >= 8) {
        uint8_t *fixed = malloc(size - 1);
        memcpy(fixed, data + 1, size - 1);
        fuzz_fix_checksum(fixed, size - 1, ZT_REPLAY_TRAJ_HASH_SEED);
        if (memcmp(fixed, data + 1, size - 1) != 0) read_traj(which, fixed, size - 1);
        free(fixed);
    }
    return 0;
}
