/* The trajectory sink (DESIGN.md §3): where actors hand their finished
 * games. In one process the sink appends to the replay buffer
 * (zt_traj_sink_replay); at scale an MPI channel implements the same call and
 * sends the game's bytes (zt_replay_traj_serialize) to the learner's rank.
 *
 * A sink is a value: a context and a function. Whoever makes it owns the
 * context and keeps it alive while actors push to it. */
#ifndef ZT_SELFPLAY_SINK_H
#define ZT_SELFPLAY_SINK_H

#include "core/status.h"
#include "replay/replay.h"

typedef struct zt_traj_sink {
    void *ctx;
    /* Takes one finished game: its positions and player 0's return. The
     * trajectory stays the caller's: the sink copies what it keeps before
     * returning, since the actor reuses t for its next game. Called from
     * several actor threads at once, so an implementation is thread-safe. */
    zt_status (*push)(void *ctx, const zt_replay_traj *t, float return0);
} zt_traj_sink;

/* The in-process sink: zt_replay_add_game into rb (thread-safe already),
 * which must outlive the sink's use. */
zt_traj_sink zt_traj_sink_replay(zt_replay *rb);

#endif
