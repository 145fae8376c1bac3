#!/usr/bin/env python3
"""Zeroth's MuZero networks against PyTorch on the CPU, on the very same weights.

  1. `zeroth bench muzero GAME --export DIR` writes a MuZero net of the game's
     training settings (random weights) and a reference batch: observations,
     actions, and the fp32 reference backend's initial (h then f) and
     recurrent (g then f) outputs;
  2. this script builds the same three networks in PyTorch (src/nn/muzero.c:
     conv, layer norm over each sample's H x W x C, ReLU, residual blocks;
     heads opening with a 1x1 conv and a layer norm, or with "heads=plain"
     a 1x1 conv with bias (none on a one-cell board), then ReLU;
     hidden states min-max scaled per sample; actions as input planes),
     loads the weights and checks that its outputs equal Zeroth's (fp32,
     1e-4 relative);
  3. times PyTorch's recurrent inference on one thread (what an actor runs)
     -- fp32 eager, bf16 autocast, and torch.compile of both unless
     --no-compile -- keeping the fastest at each batch size, and its
     unrolled train step (K steps, the same loss terms and weights, SGD with
     Nesterov momentum) in fp32 and bf16 autocast on the learner's threads;
  4. runs `zeroth bench muzero GAME --json` with the same settings and prints
     Zeroth / PyTorch ratios (medians of repeated runs).

Usage: bench/torch_muzero.py [--zeroth build/zeroth] [--game connect4]
         [--batches 1,8,64,256] [--seconds 1] [--repeats 3] [--no-compile]
         [--set key=value ...]
Set up with `make torch-compare` (a virtual environment with torch and numpy).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zt_weights import nchw_layout, parse_arch, read_safetensors  # noqa: E402

LN_EPS = 1e-5  # ZT_NN_LN_EPS
MIN_RANGE = 1e-5  # ZT_MZ_MIN_RANGE


class ConvNorm(nn.Module):
    """conv (no bias) then layer norm over C x H x W (muzero.c's conv_norm_relu)."""

    def __init__(self, cin, cout, k, h, w):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.norm = nn.LayerNorm([cout, h, w], eps=LN_EPS)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class Residual(nn.Module):
    def __init__(self, c, h, w):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm1 = nn.LayerNorm([c, h, w], eps=LN_EPS)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm2 = nn.LayerNorm([c, h, w], eps=LN_EPS)

    def forward(self, x):
        y = F.relu(self.norm1(self.conv1(x)))
        return F.relu(x + self.norm2(self.conv2(y)))


class Head(nn.Module):
    """The head's planes (muzero.c's head_planes: a 1x1 conv, layer norm and
    ReLU; with plain, "heads=plain" in the architecture, a 1x1 conv with bias
    and ReLU, and none on a one-cell board), then dense layers: the policy
    (fc) or a scalar value/reward (fc1, ReLU, fc2, tanh)."""

    def __init__(self, c, planes, h, w, out, hidden=None, plain=False):
        super().__init__()
        if not plain:
            self.conv = nn.Conv2d(c, planes, 1, bias=False)
            self.norm = nn.LayerNorm([planes, h, w], eps=LN_EPS)
        elif h * w > 1:
            self.conv = nn.Conv2d(c, planes, 1, bias=True)
        else:
            planes = c
        if hidden is None:
            self.fc = nn.Linear(planes * h * w, out)
        else:
            self.fc1 = nn.Linear(planes * h * w, hidden)
            self.fc2 = nn.Linear(hidden, out)

    def forward(self, x):
        if hasattr(self, "norm"):
            x = F.relu(self.norm(self.conv(x)))
        elif hasattr(self, "conv"):
            x = F.relu(self.conv(x))
        x = x.flatten(1)
        if hasattr(self, "fc"):
            return self.fc(x)
        return torch.tanh(self.fc2(F.relu(self.fc1(x))))


class Trunk(nn.Module):
    def __init__(self, cin, ch, blocks, h, w, stem=True):
        super().__init__()
        if stem:
            self.stem = ConvNorm(cin, ch, 3, h, w)
        self.blocks = nn.ModuleList([Residual(ch, h, w) for _ in range(blocks)])

    def forward(self, x):
        if hasattr(self, "stem"):
            x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        return x


class MuZero(nn.Module):
    def __init__(self, a):
        super().__init__()
        h, w, ch, A = a["h"], a["w"], int(a["ch"]), a["actions"]
        self.a, self.ch, self.A = a, ch, A
        self.columns = "columns" in a  # a move as the board column it names
        self.planes = 1 if self.columns or A == h * w else A
        pol, valc, vh = int(a["pol"]), int(a["valc"]), a["value_hidden"]
        plain = a.get("heads") == "plain"
        self.repr = Trunk(a["c"], ch, int(a["blocks"]), h, w)
        self.dyn = Trunk(ch + self.planes, ch, int(a["dyn"]), h, w)
        self.dyn.reward = Head(ch, valc, h, w, 1, vh, plain)
        self.pred = Trunk(ch, ch, int(a["pred"]), h, w, stem=False)
        self.pred.policy = Head(ch, pol, h, w, A, plain=plain)
        self.pred.value = Head(ch, valc, h, w, 1, vh, plain)

    @staticmethod
    def minmax(x):
        flat = x.flatten(1)
        lo = flat.min(1, keepdim=True).values
        r = (flat.max(1, keepdim=True).values - lo).clamp_min(MIN_RANGE)
        return ((flat - lo) / r).view_as(x)

    def action_planes(self, actions, like):
        B, _, h, w = like.shape
        if self.columns:
            p = F.one_hot(actions, w).to(like.dtype).view(B, 1, 1, w).expand(B, 1, h, w)
        elif self.planes == 1:
            p = F.one_hot(actions, h * w).to(like.dtype).view(B, 1, h, w)
        else:
            p = F.one_hot(actions, self.A).to(like.dtype).view(B, self.A, 1, 1).expand(B, self.A, h, w)
        return p

    def predict(self, s):
        x = self.pred(s)
        return self.pred.policy(x), self.pred.value(x).squeeze(1)

    def initial(self, obs):
        s = self.minmax(self.repr(obs))
        return (s, *self.predict(s))

    def recurrent(self, s, actions, grad_scale=1.0):
        if grad_scale != 1.0:  # appendix G: the gradient into the dynamics
            s = grad_scale * s + (1 - grad_scale) * s.detach()
        x = self.dyn(torch.cat([s, self.action_planes(actions, s)], 1))
        reward = self.dyn.reward(x).squeeze(1)
        s2 = self.minmax(x)
        return (s2, reward, *self.predict(s2))


def load_zeroth(path):
    tensors, meta = read_safetensors(path)
    arch = parse_arch(meta["architecture"])
    if arch["kind"] != "muzero" or "codes" in arch or "support" in arch or "turns" in arch:
        sys.exit(f"torch_muzero: {path} holds {meta['architecture']}, not a plain MuZero net")
    model = MuZero(arch)
    state = model.state_dict()
    h, w = arch["h"], arch["w"]
    for name, value in tensors.items():
        if name not in state:
            sys.exit(f"torch_muzero: {path}: tensor {name} has no PyTorch counterpart")
        if ".norm" in name:  # layer norm over HWC -> CHW
            value = value.reshape(h, w, -1).transpose(2, 0, 1)
        hwc = name.endswith(("policy.fc.weight", ".fc1.weight"))
        t = torch.from_numpy(nchw_layout(value, h, w, hwc).copy())
        if tuple(t.shape) != tuple(state[name].shape):
            sys.exit(f"torch_muzero: {name}: shape {tuple(t.shape)} vs {tuple(state[name].shape)}")
        state[name] = t
    missing = set(state) - set(tensors)
    if missing:
        sys.exit(f"torch_muzero: {path}: missing tensors {sorted(missing)}")
    model.load_state_dict(state)
    return arch, model.eval()


def nchw(x):
    return torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()


def check_outputs(model, io_path):
    io = read_safetensors(io_path)[0]
    obs, actions = nchw(io["input"]), torch.from_numpy(io["actions"]).long()
    with torch.no_grad():
        s, p, v = model.initial(obs)
        s2, r, p2, v2 = model.recurrent(nchw(io["hidden"]), actions)
    pairs = [(s, nchw(io["hidden"])), (p, io["policy"]), (v, io["value"]),
             (s2, nchw(io["next_hidden"])), (r, io["reward"]), (p2, io["next_policy"]),
             (v2, io["next_value"])]
    err = scale = 0.0
    for got, want in pairs:
        want = torch.as_tensor(want)
        err = max(err, (got - want).abs().max().item())
        scale = max(scale, want.abs().max().item())
    ok = err <= 1e-4 * max(scale, 1e-6)
    print(f"PyTorch vs Zeroth fp32 (initial and recurrent): max abs error {err:.2e} "
          f"(scale {scale:.2f}) {'agree' if ok else 'DISAGREE'}")
    return ok


def time_call(fn, min_time, repeats):
    """Median over `repeats` runs of the mean seconds per call."""
    fn()
    fn()
    runs = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        runs.append(dt / n)
    return statistics.median(runs)


def recurrent_variants(model, compile_too):
    def eager(s, a):
        with torch.no_grad():
            return model.recurrent(s, a)

    def bf16(s, a):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model.recurrent(s, a)

    out = {"fp32 eager": eager, "bf16 autocast": bf16}
    if compile_too:
        compiled = torch.compile(model.recurrent)

        def c32(s, a):
            with torch.no_grad():
                return compiled(s, a)

        def c16(s, a):
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                return compiled(s, a)

        out["fp32 compile"], out["bf16 compile"] = c32, c16
    return out


def train_rate(model, arch, batch, K, bf16, min_time, repeats):
    """Unrolled train steps per second: Zeroth's loss (muzero.c): policy
    cross-entropy over all actions, value and reward squared errors, step 0
    weighted 1 and steps 1..K 1/K, the gradient into the dynamics halved; SGD
    with Nesterov momentum 0.9, lr 0.02, weight decay 1e-4."""
    m = MuZero(arch)
    m.load_state_dict(model.state_dict())
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4)
    g = torch.Generator().manual_seed(1)
    h, w, c, A = arch["h"], arch["w"], arch["c"], arch["actions"]
    obs = (torch.rand(batch, c, h, w, generator=g) < 0.3).float()
    actions = torch.randint(0, A, (batch, K), generator=g)
    pol = torch.randint(0, A, (batch, K + 1), generator=g)
    val = torch.rand(batch, K + 1, generator=g) * 2 - 1
    rew = torch.zeros(batch, K)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            s, p, v = m.initial(obs)
            loss = F.cross_entropy(p.float(), pol[:, 0]) + ((v.float() - val[:, 0]) ** 2).mean()
            for k in range(1, K + 1):
                s, r, p, v = m.recurrent(s, actions[:, k - 1], grad_scale=0.5)
                loss = loss + (F.cross_entropy(p.float(), pol[:, k])
                               + ((v.float() - val[:, k]) ** 2).mean()
                               + ((r.float() - rew[:, k - 1]) ** 2).mean()) / K
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return 1.0 / time_call(step, min_time, repeats)


def zeroth_numbers(args, batches, tmp):
    cmd = [args.zeroth, "bench", "muzero", args.game, "--json", "--seconds", str(args.seconds)]
    for b in batches:
        cmd += ["--batch", str(b)]
    for kv in args.set:
        cmd += ["--set", kv]
    runs = []
    for _ in range(args.repeats):
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        runs.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
    head = runs[0][0]
    rec = {b: statistics.median(r["per_s"] for run in runs for r in run
                                if r.get("call") == "recurrent" and r["batch"] == b)
           for b in batches}
    tr = [r for run in runs for r in run if r.get("call") == "train"]
    train = statistics.median(r["steps_per_s"] for r in tr)
    return head, rec, train, tr[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zeroth", default="build/zeroth")
    ap.add_argument("--game", default="connect4")
    ap.add_argument("--batches", default="1,8,64,256")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--set", action="append", default=[], help="key=value for zeroth's settings")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        export = [args.zeroth, "bench", "muzero", args.game, "--export", tmp]
        for kv in args.set:
            export += ["--set", kv]
        subprocess.run(export, check=True, stdout=subprocess.DEVNULL)
        arch, model = load_zeroth(os.path.join(tmp, "muzero.safetensors"))
        if not check_outputs(model, os.path.join(tmp, "muzero.io.safetensors")):
            sys.exit("torch_muzero: PyTorch does not compute Zeroth's function; no timing")
        head, zrec, ztrain, zt_train_row = zeroth_numbers(args, batches, tmp)
    print(f"net: {head['net']}; zeroth on {head['backend']}/{head['precision']}")

    torch.set_num_threads(1)
    hs = (int(arch["ch"]), arch["h"], arch["w"])
    print(f"\n{'batch':>6} {'zeroth rec/s':>13} {'torch rec/s':>12} {'torch config':<14} {'ratio':>6}")
    variants = recurrent_variants(model, not args.no_compile)
    for b in batches:
        s = torch.rand(b, *hs)
        a = torch.randint(0, arch["actions"], (b,))
        best, best_name = 0.0, ""
        for name, fn in variants.items():
            try:
                rate = b / time_call(lambda: fn(s, a), args.seconds, args.repeats)
            except Exception as e:  # a configuration this torch cannot run
                print(f"  ({name} failed at batch {b}: {type(e).__name__})")
                continue
            if rate > best:
                best, best_name = rate, name
        print(f"{b:>6} {zrec[b]:>13.0f} {best:>12.0f} {best_name:<14} {zrec[b] / best:>6.2f}")

    threads, B, K = zt_train_row["threads"], zt_train_row["batch"], zt_train_row["unroll"]
    torch.set_num_threads(threads)
    t32 = train_rate(model, arch, B, K, False, args.seconds, args.repeats)
    t16 = train_rate(model, arch, B, K, True, args.seconds, args.repeats)
    best = max(t32, t16)
    print(f"\ntrain step, batch {B}, K={K}, {threads} thread(s): zeroth {ztrain:.1f} steps/s, "
          f"torch fp32 {t32:.1f}, bf16 autocast {t16:.1f}; ratio {ztrain / best:.2f}")


if __name__ == "__main__":
    main()
