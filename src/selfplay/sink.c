/* The in-process trajectory sink: the replay buffer. */
#include "selfplay/sink.h"

static zt_status push_to_replay(void *ctx, const zt_replay_traj *t, float return0)
{
    return zt_replay_add_game(ctx, t, return0, NULL);
}

zt_traj_sink zt_traj_sink_replay(zt_replay *rb)
{
    return (zt_traj_sink){.ctx = rb, .push = push_to_replay};
}
