#!/usr/bin/env python3
"""Zeroth's networks against PyTorch on the CPU or a GPU, on the very same weights.

For each benchmark net (`zeroth bench nn --export DIR` writes its weights and
a reference input/output pair as safetensors) this script
  1. builds the same architecture in PyTorch from the file's metadata and
     loads Zeroth's weights (OHWI convs and HWC-ordered dense inputs are
     permuted to PyTorch's NCHW conventions),
  2. checks that PyTorch's outputs equal Zeroth's (fp32, 1e-4 relative),
  3. times PyTorch's configurations -- fp32 eager, bf16 autocast, TorchScript
     frozen (fp32 and bf16), torch.compile, and on the CPU its int8 paths
     (static post-training quantisation through FX with the x86 backend,
     eager and TorchScript-frozen, calibrated on the reference input; dynamic
     quantisation of the linear layers) -- keeping the fastest at each batch
     size, and a bf16-autocast SGD training step at batch 256,
  4. runs `zeroth bench nn --json` in the same process tree, on the same
     threads, and prints Zeroth / PyTorch ratios (medians of repeated runs):
     Zeroth's fastest precision against PyTorch's fastest configuration, and
     on the CPU Zeroth's int8 against PyTorch's fastest int8 path.

With --device cuda both sides run on the first GPU: Zeroth's cuda backend
against PyTorch eager fp32, bf16 autocast and torch.compile (default and
"reduce-overhead", i.e. CUDA graphs); timings synchronise the device.

Usage: bench/torch_compare.py [--zeroth build/zeroth] [--threads N] [--device cpu|cuda]
         [--batches 1,8,32,64,256,1024,4096] [--nets c4-64x5,c4-128x10,bg-mlp] [--quick]
         [--no-int8]
Set up with `make torch-compare` (a virtual environment with torch from PyPI).
"""
import argparse
import copy
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
from zt_weights import load_file, nchw_layout, parse_arch, read_safetensors  # noqa: E402


class ConvBN(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class ResNet(nn.Module):
    """The AlphaZero tower as Zeroth builds it (src/nn/net.c)."""

    def __init__(self, a):
        super().__init__()
        ch, hw = int(a["ch"]), a["h"] * a["w"]
        self.a = a
        self.stem = ConvBN(a["c"], ch, 3)
        self.blocks = nn.ModuleList([Residual(ch) for _ in range(int(a["blocks"]))])
        pol, valc = int(a["pol"]), int(a["valc"])
        self.policy = ConvBN(ch, pol, 1)
        self.policy.fc = nn.Linear(pol * hw, a["actions"])
        self.value = ConvBN(ch, valc, 1)
        self.value.fc1 = nn.Linear(valc * hw, a["value_hidden"])
        self.value.fc2 = nn.Linear(a["value_hidden"], 3 if a["value_kind"] == "wdl" else 1)

    def forward(self, x):  # x: NCHW
        x = F.relu(self.stem.bn(self.stem.conv(x)))
        for b in self.blocks:
            x = b(x)
        p = F.relu(self.policy.bn(self.policy.conv(x)))
        p = self.policy.fc(p.flatten(1))
        v = F.relu(self.value.bn(self.value.conv(x)))
        v = self.value.fc2(F.relu(self.value.fc1(v.flatten(1))))
        if self.a["value_kind"] != "wdl":
            v = torch.tanh(v)
        return p, v


class MLPBlock(nn.Module):
    def __init__(self, cin, width, norm):
        super().__init__()
        self.fc = nn.Linear(cin, width, bias=False)
        self.norm = nn.BatchNorm1d(width) if norm == "batch" else nn.LayerNorm(width)

    def forward(self, x):
        return F.relu(self.norm(self.fc(x)))


class MLP(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        width, n = int(a["width"]), int(a["layers"])
        cin = a["h"] * a["w"] * a["c"]
        self.mlp = nn.ModuleList([MLPBlock(cin if i == 0 else width, width, a["norm"])
                                  for i in range(n)])
        self.policy = nn.Module()
        self.policy.fc = nn.Linear(width, a["actions"])
        self.value = nn.Module()
        self.value.fc1 = nn.Linear(width, a["value_hidden"])
        self.value.fc2 = nn.Linear(a["value_hidden"], 3 if a["value_kind"] == "wdl" else 1)

    def forward(self, x):
        x = x.flatten(1)
        for b in self.mlp:
            x = b(x)
        v = self.value.fc2(F.relu(self.value.fc1(x)))
        if self.a["value_kind"] != "wdl":
            v = torch.tanh(v)
        return self.policy.fc(x), v


def load_zeroth(path):
    meta = read_safetensors(path)[1]
    arch = parse_arch(meta["architecture"])
    model = ResNet(arch) if arch["kind"] == "resnet" else MLP(arch)
    tensors = load_file(path)
    state = model.state_dict()
    for name, value in tensors.items():
        if name not in state:
            sys.exit(f"torch_compare: {path}: tensor {name} has no PyTorch counterpart")
        hwc = arch["kind"] == "resnet" and name.endswith(("policy.fc.weight", "value.fc1.weight"))
        t = torch.from_numpy(nchw_layout(value, arch["h"], arch["w"], hwc).copy())
        if tuple(t.shape) != tuple(state[name].shape):
            sys.exit(f"torch_compare: {name}: shape {tuple(t.shape)} vs {tuple(state[name].shape)}")
        state[name] = t
    missing = set(state) - set(tensors) - {k for k in state if k.endswith("num_batches_tracked")}
    if missing:
        sys.exit(f"torch_compare: {path}: missing tensors {sorted(missing)}")
    model.load_state_dict(state)
    model.eval()
    return arch, model


def to_nchw(x, arch):
    return x.reshape(-1, arch["h"], arch["w"], arch["c"]).permute(0, 3, 1, 2).contiguous()


def check_outputs(name, arch, model, io_path):
    io = load_file(io_path)
    x = to_nchw(torch.from_numpy(io["input"]), arch)
    with torch.no_grad():
        p, v = model(x)
    ref_p, ref_v = torch.from_numpy(io["policy"]), torch.from_numpy(io["value"])
    scale = max(ref_p.abs().max().item(), ref_v.abs().max().item(), 1e-6)
    err = max((p - ref_p).abs().max().item(), (v.reshape(ref_v.shape) - ref_v).abs().max().item())
    ok = err <= 1e-4 * scale
    print(f"{name}: PyTorch vs Zeroth fp32 outputs: max abs error {err:.2e} "
          f"(scale {scale:.2f}) {'agree' if ok else 'DISAGREE'}")
    return ok


DEVICE = "cpu"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def time_call(fn, x, min_time, repeats):
    """Median over `repeats` runs of the mean seconds per call."""
    fn(x)
    fn(x)
    sync()
    runs = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            fn(x)
            n += 1
            sync()
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        runs.append(dt / n)
    return statistics.median(runs)


def torch_variants(model, arch, example):
    """name -> callable(x) for every configuration worth trying."""
    variants = {}

    def eager(x):
        with torch.inference_mode():
            return model(x)

    def autocast(x):
        with torch.inference_mode(), torch.autocast(DEVICE, dtype=torch.bfloat16):
            return model(x)

    variants["fp32 eager"] = eager
    variants["bf16 autocast"] = autocast
    if DEVICE == "cuda":
        for mode in ("default", "reduce-overhead"):
            try:
                compiled = torch.compile(model, mode=mode, dynamic=False)

                def comp(x, compiled=compiled):
                    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
                        return compiled(x)
                variants[f"torch.compile bf16 {mode}"] = comp
            except Exception as e:
                print(f"  (torch.compile {mode} unavailable: {type(e).__name__}: {e})")
        return variants
    try:
        with torch.no_grad():
            ts = torch.jit.freeze(torch.jit.trace(model, example))
        variants["torchscript frozen"] = lambda x: ts(x)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
            ts16 = torch.jit.freeze(torch.jit.trace(model, example))

        def ts_bf16(x):
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
                return ts16(x)
        variants["torchscript bf16"] = ts_bf16
    except Exception as e:  # a failed variant is reported, not fatal
        print(f"  (torchscript unavailable: {type(e).__name__}: {e})")
    try:
        compiled = torch.compile(model, dynamic=False)

        def comp(x):
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                return compiled(x)
        variants["torch.compile bf16"] = comp
    except Exception as e:
        print(f"  (torch.compile unavailable: {type(e).__name__}: {e})")
    return variants


def int8_variants(model, arch, example, calib):
    """name -> callable(x) for PyTorch's int8 inference paths on the CPU.

    Static: FX graph mode post-training quantisation with the x86 backend
    (fbgemm/oneDNN kernels; conv + BN + ReLU fused, per-channel weights),
    calibrated on `calib` (the exported reference input), run eagerly and as
    a frozen TorchScript graph. Dynamic: the linear layers quantised, the
    rest fp32 (PyTorch's path for MLPs). A path that fails is reported."""
    from torch.ao.quantization import get_default_qconfig_mapping, quantize_dynamic
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    variants = {}
    try:
        torch.backends.quantized.engine = "x86"
        prepared = prepare_fx(copy.deepcopy(model).eval(), get_default_qconfig_mapping("x86"),
                              example_inputs=(calib,))
        with torch.no_grad():
            prepared(calib)
        static = convert_fx(prepared)

        def q_static(x):
            with torch.inference_mode():
                return static(x)
        variants["int8 static (fx)"] = q_static
        with torch.no_grad():
            ts = torch.jit.freeze(torch.jit.trace(static, example))
        variants["int8 static torchscript"] = lambda x: ts(x)
    except Exception as e:
        print(f"  (int8 static unavailable: {type(e).__name__}: {e})")
    try:
        dyn = quantize_dynamic(copy.deepcopy(model).eval(), {nn.Linear}, dtype=torch.qint8)

        def q_dynamic(x):
            with torch.inference_mode():
                return dyn(x)
        variants["int8 dynamic"] = q_dynamic
    except Exception as e:
        print(f"  (int8 dynamic unavailable: {type(e).__name__}: {e})")
    return variants


def int8_error(model, fn, x):
    """Max abs difference of an int8 path's outputs from fp32 (a sanity check
    that the quantised model computes the same net, not a bound)."""
    with torch.inference_mode():
        p, v = model(x)
        qp, qv = fn(x)
    return max((p - qp).abs().max().item(), (v - qv).abs().max().item())


def torch_train_step_rate(model, arch, batch, min_time, repeats, compiled=False):
    """Samples/s of an SGD step with bf16 autocast (policy CE + value MSE);
    with `compiled`, the forward through torch.compile (backward traced
    with it by AOTAutograd)."""
    model = model.train()
    fwd = torch.compile(model) if compiled else model
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, nesterov=True,
                          weight_decay=1e-4)
    x = torch.randn(batch, arch["c"], arch["h"], arch["w"]) if arch["kind"] == "resnet" \
        else torch.randn(batch, arch["h"] * arch["w"] * arch["c"])
    target = torch.softmax(torch.randn(batch, arch["actions"]), dim=1)
    vt = torch.rand(batch, 1) * 2 - 1
    x, target, vt = x.to(DEVICE), target.to(DEVICE), vt.to(DEVICE)

    def step(_):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            p, v = fwd(x)
        loss = -(target * torch.log_softmax(p.float(), 1)).sum(1).mean() + \
            F.mse_loss(v.float().reshape(-1, 1)[:, :1], vt)
        loss.backward()
        opt.step()

    sec = time_call(step, None, min_time, repeats)
    model.eval()
    return batch / sec


def zeroth_numbers(zeroth, nets, batches, threads, quick, int8, train_batch):
    # int8 rows only where PyTorch's int8 paths are timed too.
    cmd = [zeroth, "bench", "nn", "--json", "--threads", str(threads), "--precision",
           "all" if int8 else "both", "--train-batch", str(train_batch)]
    if DEVICE == "cuda":
        cmd += ["--backend", "cuda"]
    for n in nets:
        cmd += ["--net", n]
    for b in batches:
        cmd += ["--batch", str(b)]
    if quick:
        cmd += ["--seconds", "0.1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows


def main():
    warnings.filterwarnings("ignore")  # TorchScript's deprecation notices
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zeroth", default="build/zeroth")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batches", default="1,8,32,64,256,1024,4096")
    ap.add_argument("--nets", default="c4-64x5,c4-128x10,bg-mlp")
    ap.add_argument("--quick", action="store_true", help="shorter timings (smoke test)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--train-batch", type=int, default=256, help="the train step's batch")
    ap.add_argument("--train-compile", action="store_true",
                    help="also time PyTorch's train step through torch.compile")
    ap.add_argument("--no-int8", action="store_true", help="skip the int8 paths (CPU)")
    # Each batch size and variant compiles its own graph: past dynamo's
    # default limit of 8 a compiled variant silently falls back to eager.
    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 256)
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",")]
    nets = args.nets.split(",")
    min_time, repeats = (0.1, 3) if args.quick else (0.3, 5)
    if DEVICE == "cuda":
        print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    else:
        print(f"PyTorch {torch.__version__} on CPU, {args.threads} threads; "
              f"oneDNN (mkldnn) {torch.backends.mkldnn.is_available()}")

    with tempfile.TemporaryDirectory() as tmp:
        export = [args.zeroth, "bench", "nn", "--export", tmp]
        for n in nets:
            export += ["--net", n]
        subprocess.run(export, check=True, stdout=subprocess.DEVNULL)
        int8 = DEVICE == "cpu" and not args.no_int8
        zrows = zeroth_numbers(args.zeroth, nets, batches, args.threads, args.quick, int8,
                               args.train_batch)
        zbest, zint8 = {}, {}
        for r in zrows:
            if "batch" in r and (DEVICE == "cuda" or r.get("threads") == args.threads):
                key = (r["net"], r["batch"])
                if r["inf_per_s"] > zbest.get(key, (0.0, ""))[0]:
                    zbest[key] = (r["inf_per_s"], r["precision"])
                if r["precision"] == "int8":
                    zint8[key] = r["inf_per_s"]
        ztrain = {}
        for r in zrows:
            if "train_batch" in r:
                ztrain[r["net"]] = max(ztrain.get(r["net"], 0.0), r["samples_per_s"])

        ok = True
        head = (f"\n{'net':<10} {'batch':>6} {'zeroth inf/s':>13} {'(precision)':<11} "
                f"{'torch inf/s':>12} {'torch best config':<24} {'ratio':>6}")
        if int8:
            head += f" {'zeroth int8':>12} {'torch int8':>11} {'torch int8 config':<24} {'ratio':>6}"
        print(head)
        for name in nets:
            arch, model = load_zeroth(os.path.join(tmp, name + ".safetensors"))
            io_path = os.path.join(tmp, name + ".io.safetensors")
            ok &= check_outputs(name, arch, model, io_path)
            calib = to_nchw(torch.from_numpy(load_file(io_path)["input"]), arch)
            model = model.to(DEVICE)
            for b in batches:
                shape = (b, arch["c"], arch["h"], arch["w"]) if arch["kind"] == "resnet" \
                    else (b, arch["h"] * arch["w"] * arch["c"])
                # Board planes are 0/1 (random ones: the int8 calibration's range).
                x = torch.randint(0, 2, shape).float().to(DEVICE)
                variants = torch_variants(model, arch, x)
                if int8:
                    q = int8_variants(model, arch, x, calib)
                    if b == batches[0]:
                        for vname, fn in q.items():
                            print(f"  {name} {vname}: max abs difference from fp32 "
                                  f"{int8_error(model, fn, calib):.3f}")
                    variants.update(q)
                best, best8 = (0.0, ""), (0.0, "")
                for vname, fn in variants.items():
                    try:
                        rate = b / time_call(fn, x, min_time, repeats)
                    except Exception as e:
                        print(f"  ({vname} failed at batch {b}: {type(e).__name__})")
                        continue
                    if rate > best[0]:
                        best = (rate, vname)
                    if vname.startswith("int8") and rate > best8[0]:
                        best8 = (rate, vname)
                z = zbest.get((name, b), (float("nan"), ""))
                line = (f"{name:<10} {b:>6} {z[0]:>13.0f} {z[1]:<11} {best[0]:>12.0f} "
                        f"{best[1]:<24} {z[0] / best[0]:>6.2f}")
                if int8:
                    z8 = zint8.get((name, b), float("nan"))
                    line += (f" {z8:>12.0f} {best8[0]:>11.0f} {best8[1]:<24} "
                             f"{z8 / best8[0] if best8[0] else float('nan'):>6.2f}")
                print(line, flush=True)
            tb = args.train_batch
            t_rate = torch_train_step_rate(model, arch, tb, min_time, repeats)
            how = "bf16 autocast"
            if args.train_compile:
                try:
                    c_rate = torch_train_step_rate(model, arch, tb, min_time, repeats, True)
                    print(f"  {name} train step batch {tb}: PyTorch eager {t_rate:.0f}, "
                          f"compiled {c_rate:.0f} samples/s")
                    if c_rate > t_rate:
                        t_rate, how = c_rate, "bf16 autocast + torch.compile"
                except Exception as e:
                    print(f"  (compiled train step failed: {type(e).__name__})")
            model = model.cpu()
            z_rate = ztrain.get(name, float("nan"))
            print(f"{name:<10} train step batch {tb}: zeroth {z_rate:.0f} samples/s, "
                  f"PyTorch {how} {t_rate:.0f} samples/s, ratio {z_rate / t_rate:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
