#!/usr/bin/env python3
"""Connect Four self-play with mctx + pgx (JAX) on Zeroth's own net: the
baseline of the CUDA issue's self-play target (Zeroth >= 3x mctx + pgx on
the same GPU at equal net, simulations and games in flight).

The net is the very same one: a Zeroth weights file (a trained model, or by
default the benchmark net `zeroth bench nn --export` writes, He-initialised)
is rebuilt in JAX -- 3x3 convs, batch norm folded into them, the residual
tower, the policy and value heads, HWC flattening as Zeroth does -- and
checked against Zeroth's own outputs on the exported reference input. The
observation is Zeroth's (own stones, the opponent's, a plane of ones) made
from pgx's two planes.

Each move of every game in flight is one `mctx.gumbel_muzero_policy` search
(Gumbel MuZero's root, Danihelka et al. 2022; m = 16 considered actions, so
all 7 columns) of `--sims` simulations in which the real game is stepped
(pgx's `connect_four`, as pgx's AlphaZero example does) and the net
evaluates each new position; then the move is played and finished games
start again. The whole move is one jitted function; compile time is left
out (a warm-up move first). Positions/s = games x moves / seconds, median
of `--repeats` timed windows. Zeroth's side of the comparison is
`zeroth bench selfplay connect4` with the same net, sims and games in
flight (on a GPU: --set device=cuda --set selfplay.evaluator=shared).

Run:  bench/mctx_selfplay.py [--games 256] [--sims 32] [--seconds 5]
        [--dtype bf16|f32] [--weights FILE] [--zeroth build/zeroth]
(JAX, mctx and pgx: `make python-bench` makes bench/.venv-jax on a CPU
machine; on the GPU machine they come as wheels, docs/cuda.md.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zt_weights import load_file, parse_arch, read_safetensors  # noqa: E402

BN_EPS = 1e-5


def fold(t, conv, bn):
    """A conv's weight (Zeroth OHWI -> JAX HWIO) with the batch norm after it
    folded in, and the bias the fold leaves."""
    import numpy as np
    w = t[conv + ".weight"].astype(np.float32)
    g, b = t[bn + ".weight"], t[bn + ".bias"]
    m, v = t[bn + ".running_mean"], t[bn + ".running_var"]
    s = g / np.sqrt(v + BN_EPS)
    return (w * s[:, None, None, None]).transpose(1, 2, 3, 0), b - m * s


def build_params(t, arch):
    stem = fold(t, "stem.conv", "stem.bn")
    blocks = [(fold(t, f"blocks.{i}.conv1", f"blocks.{i}.bn1"),
               fold(t, f"blocks.{i}.conv2", f"blocks.{i}.bn2")) for i in range(int(arch["blocks"]))]
    policy = (fold(t, "policy.conv", "policy.bn"), t["policy.fc.weight"].T, t["policy.fc.bias"])
    value = (fold(t, "value.conv", "value.bn"), t["value.fc1.weight"].T, t["value.fc1.bias"],
             t["value.fc2.weight"].T, t["value.fc2.bias"])
    return {"stem": stem, "blocks": blocks, "policy": policy, "value": value}


def make_forward(arch, dtype):
    import jax
    import jax.numpy as jnp

    def conv(x, wb, relu=True, res=None):
        w, b = wb
        y = jax.lax.conv_general_dilated(x, w.astype(dtype), (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         preferred_element_type=jnp.float32)
        y = y + b
        if res is not None:
            y = y + res
        return jax.nn.relu(y) if relu else y

    def forward(params, obs):  # obs: B x H x W x C (Zeroth's planes)
        x = conv(obs.astype(dtype), params["stem"]).astype(dtype)
        for c1, c2 in params["blocks"]:
            y = conv(x, c1).astype(dtype)
            x = conv(y, c2, res=x.astype(jnp.float32)).astype(dtype)
        pc, pw, pb = params["policy"]
        p = conv(x, pc).reshape(x.shape[0], -1)  # HWC order, as Zeroth flattens
        logits = p @ pw + pb
        vc, w1, b1, w2, b2 = params["value"]
        v = conv(x, vc).reshape(x.shape[0], -1)
        v = jax.nn.relu(v @ w1 + b1) @ w2 + b2
        if arch["value_kind"] == "wdl":
            e = jax.nn.softmax(v, axis=-1)
            value = e[:, 0] - e[:, 2]
        else:
            value = jnp.tanh(v[:, 0])
        return logits, value

    return forward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zeroth", default="build/zeroth")
    ap.add_argument("--weights", help="a Zeroth weights file (default: the exported c4-64x5)")
    ap.add_argument("--games", type=int, default=256, help="games in flight")
    ap.add_argument("--sims", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=5.0, help="per timed window")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--json", action="store_true", help="one JSON line at the end")
    args = ap.parse_args()
    if args.games < 1 or args.sims < 1 or args.seconds <= 0 or args.repeats < 1:
        sys.exit("mctx_selfplay: --games, --sims, --repeats >= 1 and --seconds > 0")

    import jax
    import jax.numpy as jnp
    import mctx
    import numpy as np
    import pgx

    io = None
    with tempfile.TemporaryDirectory() as tmp:
        path = args.weights
        if not path:
            subprocess.run([args.zeroth, "bench", "nn", "--export", tmp, "--net", "c4-64x5"],
                           check=True, stdout=subprocess.DEVNULL)
            path = os.path.join(tmp, "c4-64x5.safetensors")
            io = load_file(os.path.join(tmp, "c4-64x5.io.safetensors"))
        tensors, meta = read_safetensors(path)
    arch = parse_arch(meta["architecture"])
    if arch["kind"] != "resnet" or (arch["h"], arch["w"], arch["c"], arch["actions"]) != (6, 7, 3, 7):
        sys.exit(f"mctx_selfplay: {path} is not a Connect Four resnet ({meta['architecture']})")
    params = jax.tree_util.tree_map(jnp.asarray, build_params(tensors, arch))
    dtype = jnp.bfloat16 if args.dtype == "bf16" else jnp.float32

    # The same net: fp32 JAX against Zeroth's fp32 outputs on its reference input.
    if io is not None:
        f32 = jax.jit(make_forward(arch, jnp.float32))
        lg, v = f32(params, jnp.asarray(io["input"]))
        err = max(float(jnp.max(jnp.abs(lg - io["policy"]))),
                  float(jnp.max(jnp.abs(v - io["value"][:, 0]))))
        scale = max(float(np.max(np.abs(io["policy"]))), 1e-6)
        ok = err <= 1e-3 * scale
        print(f"JAX vs Zeroth fp32 outputs: max abs error {err:.2e} (scale {scale:.2f}) "
              f"{'agree' if ok else 'DISAGREE'}", flush=True)
        if not ok:
            return 1

    forward = make_forward(arch, dtype)
    env = pgx.make("connect_four")
    B = args.games

    def observe(state):
        o = state.observation.astype(jnp.float32)  # B x 6 x 7 x 2: own, opponent's
        return jnp.concatenate([o, jnp.ones(o.shape[:-1] + (1,), jnp.float32)], axis=-1)

    def recurrent_fn(params, rng, action, state):
        mover = state.current_player
        state = jax.vmap(env.step)(state, action)
        logits, value = forward(params, observe(state))
        logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(jnp.float32).min)
        reward = state.rewards[jnp.arange(B), mover]
        value = jnp.where(state.terminated, 0.0, value)
        discount = jnp.where(state.terminated, 0.0, -1.0) * jnp.ones_like(value)
        return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                      value=value), state

    fresh = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(1), B))

    @jax.jit
    def move(params, key, state):
        logits, value = forward(params, observe(state))
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
        out = mctx.gumbel_muzero_policy(params, key, root, recurrent_fn,
                                        num_simulations=args.sims,
                                        invalid_actions=~state.legal_action_mask,
                                        max_num_considered_actions=16)
        state = jax.vmap(env.step)(state, out.action)
        done = state.terminated | state.truncated
        # finished games start again (pgx's initial state)
        state = jax.tree_util.tree_map(
            lambda a, b: jnp.where(done.reshape((B,) + (1,) * (a.ndim - 1)), b, a), state, fresh)
        return state, jnp.sum(done)

    key = jax.random.PRNGKey(7)
    state = fresh
    t0 = time.perf_counter()
    key, k = jax.random.split(key)
    state, _ = move(params, k, state)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t0
    rates, games_done = [], 0
    for _ in range(args.repeats):
        moves, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            key, k = jax.random.split(key)
            state, done = move(params, k, state)
            moves += 1
            games_done += int(done)  # syncs, once per move, as a real loop would
        rates.append(moves * B / (time.perf_counter() - t0))
    rate = statistics.median(rates)
    dev = jax.devices()[0]
    print(f"mctx {mctx.__version__} + pgx {pgx.__version__} on {dev.platform} "
          f"({getattr(dev, 'device_kind', '')}): {B} games in flight, {args.sims} sims, "
          f"{args.dtype} net {meta['architecture']}: {rate:.0f} positions/s (median of "
          f"{args.repeats} x {args.seconds:g} s; compile {compile_s:.1f} s; {games_done} games "
          f"finished)", flush=True)
    if args.json:
        print(json.dumps({"positions_per_s": rate, "games": B, "sims": args.sims,
                          "dtype": args.dtype, "platform": dev.platform,
                          "device": getattr(dev, "device_kind", ""), "compile_s": compile_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
