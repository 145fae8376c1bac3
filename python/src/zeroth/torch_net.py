"""Zeroth's networks as torch.nn.Modules (PyTorch is optional: this module
imports it, the rest of the package never does).

The modules mirror src/nn/net.c block for block and keep Zeroth's tensor
names, so `module.state_dict()` has the weight file's names. They take
observations as Zeroth gives them, NHWC float32 (n, H, W, C), and return
(policy logits (n, A), value (n,)) with the value as Net.forward gives it: the
tanh'ed scalar, or P(win) - P(loss) from a win/draw/loss head. Convolutions
run NCHW inside; the dense layers after them read the features flattened in
HWC order, as Zeroth's dense weights expect, so only conv weights change
layout on the way in (OHWI to PyTorch's OIHW).
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .nets import parse_architecture

BN_EPS = 1e-5  # src/nn/backend.h: batch and layer norm


def _hwc(x):
    """NCHW features flattened in HWC order (Zeroth's dense input layout)."""
    return x.permute(0, 2, 3, 1).flatten(1)


class ConvBN(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=BN_EPS)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c, eps=BN_EPS)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c, eps=BN_EPS)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class Head(nn.Module):
    """A head's dense layers (policy: fc; value: fc1, fc2), after an
    optional ConvBN (resnet heads)."""


def _value(v, kind):
    if kind == "wdl":
        p = torch.softmax(v, dim=1)
        return p[:, 0] - p[:, 2]
    if kind == "equity":
        # src/nn/equity.c: sigmoids capped as gnubg does, cubeless equity / 3
        p = torch.sigmoid(v)
        w = p[:, 0]
        wg = torch.minimum(p[:, 1], w)
        wbg = torch.minimum(p[:, 2], wg)
        lg = torch.minimum(p[:, 3], 1 - w)
        lbg = torch.minimum(p[:, 4], lg)
        return (2 * w - 1 + wg - lg + wbg - lbg) / 3
    return torch.tanh(v).reshape(-1)


def _value_outputs(kind):
    return {"wdl": 3, "equity": 5}.get(kind, 1)


class ResNet(nn.Module):
    """The AlphaZero tower (docs/networks.md "resnet")."""

    def __init__(self, a):
        super().__init__()
        self.arch = a
        ch, hw = a["ch"], a["h"] * a["w"]
        self.stem = ConvBN(a["c"], ch, 3)
        self.blocks = nn.ModuleList([Residual(ch) for _ in range(a["blocks"])])
        self.policy = Head()
        self.policy.conv = nn.Conv2d(ch, a["pol"], 1, bias=False)
        self.policy.bn = nn.BatchNorm2d(a["pol"], eps=BN_EPS)
        self.policy.fc = nn.Linear(a["pol"] * hw, a["actions"])
        self.value = Head()
        self.value.conv = nn.Conv2d(ch, a["valc"], 1, bias=False)
        self.value.bn = nn.BatchNorm2d(a["valc"], eps=BN_EPS)
        self.value.fc1 = nn.Linear(a["valc"] * hw, a["value_hidden"])
        self.value.fc2 = nn.Linear(a["value_hidden"], _value_outputs(a["value_kind"]))

    def forward(self, obs):
        x = self.stem(obs.permute(0, 3, 1, 2))
        for b in self.blocks:
            x = b(x)
        p = self.policy.fc(_hwc(F.relu(self.policy.bn(self.policy.conv(x)))))
        v = _hwc(F.relu(self.value.bn(self.value.conv(x))))
        v = self.value.fc2(F.relu(self.value.fc1(v)))
        return p, _value(v, self.arch["value_kind"])


class DenseNorm(nn.Module):
    def __init__(self, cin, width, norm):
        super().__init__()
        self.fc = nn.Linear(cin, width, bias=False)
        self.norm = nn.BatchNorm1d(width, eps=BN_EPS) if norm == "batch" \
            else nn.LayerNorm(width, eps=BN_EPS)

    def forward(self, x):
        return F.relu(self.norm(self.fc(x)))


class MLP(nn.Module):
    """The dense tower (docs/networks.md "mlp")."""

    def __init__(self, a):
        super().__init__()
        self.arch = a
        width = a["width"]
        cin = a["h"] * a["w"] * a["c"]
        self.mlp = nn.ModuleList([DenseNorm(cin if i == 0 else width, width, a["norm"])
                                  for i in range(a["layers"])])
        self.policy = Head()
        self.policy.fc = nn.Linear(width, a["actions"])
        self.value = Head()
        self.value.fc1 = nn.Linear(width, a["value_hidden"])
        self.value.fc2 = nn.Linear(a["value_hidden"], _value_outputs(a["value_kind"]))

    def forward(self, obs):
        x = obs.flatten(1)
        for b in self.mlp:
            x = b(x)
        v = self.value.fc2(F.relu(self.value.fc1(x)))
        return self.policy.fc(x), _value(v, self.arch["value_kind"])


def build(architecture, tensors):
    """The module for an architecture string, loaded with Zeroth's tensors
    ({name: array}, e.g. Net.tensors() or safetensors.numpy.load_file of a
    weights file), in eval mode."""
    a = parse_architecture(architecture)
    if a["kind"] == "resnet":
        model = ResNet(a)
    elif a["kind"] == "mlp":
        model = MLP(a)
    else:
        raise ValueError(f"architecture '{architecture}' is not one torch_net knows")
    state = model.state_dict()
    for name, value in tensors.items():
        if name not in state:
            raise ValueError(f"tensor {name} has no counterpart in the torch module")
        t = torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32))
        if t.dim() == 4:  # conv OHWI -> OIHW
            t = t.permute(0, 3, 1, 2)
        if tuple(t.shape) != tuple(state[name].shape):
            raise ValueError(f"tensor {name} has shape {tuple(t.shape)}, the module "
                             f"{tuple(state[name].shape)}")
        state[name] = t.contiguous()
    missing = [k for k in state if k not in tensors and not k.endswith("num_batches_tracked")]
    if missing:
        raise ValueError(f"the tensors lack {', '.join(missing)}")
    model.load_state_dict(state)
    return model.eval()
