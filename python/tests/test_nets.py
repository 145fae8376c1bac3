"""zeroth.Net: loading by every path form, the forward pass, the tensors
(which must be the weights the net runs with), to_torch, and refusals."""
import os

import numpy as np
import pytest

import zeroth


def latest_checkpoint(run):
    with open(os.path.join(run, "ckpt", "latest")) as f:
        return os.path.join(run, "ckpt", f.read().strip())


@pytest.fixture(scope="module")
def net(trained_run):
    with zeroth.Net.load(trained_run, backend="ref", threads=1) as n:
        yield n


@pytest.fixture(scope="module")
def positions():
    g = zeroth.Game("tictactoe")
    states = np.stack([g.from_text(t) for t in ("......... X", "X...O.... X", "XX.OO.... X")])
    return g, states, g.observe(states)


def test_metadata(net):
    assert net.game_spec == "tictactoe" and net.num_actions == 9
    assert net.architecture.startswith("mlp ") and net.obs_shape == (3, 3, 3)
    assert (net.backend, net.precision) == ("ref", "fp32")
    assert zeroth.parse_architecture(net.architecture)["width"] == 32


def test_forward(net, positions):
    _, _, obs = positions
    logits, value = net.forward(obs)
    assert logits.shape == (3, 9) and logits.dtype == np.float32 and np.isfinite(logits).all()
    assert value.shape == (3,) and np.all(np.abs(value) <= 1)
    for i in range(3):  # a row of a batch equals the position alone, in either input shape
        one_logits, one_value = net(obs[i])
        np.testing.assert_allclose(one_logits[0], logits[i], rtol=1e-5, atol=1e-6)
        flat_logits, _ = net(obs[i].reshape(1, -1))
        np.testing.assert_allclose(flat_logits[0], logits[i], rtol=1e-5, atol=1e-6)
    # float64 observations are converted
    l64, _ = net.forward(obs.astype(np.float64))
    np.testing.assert_allclose(l64, logits, rtol=1e-6)


def test_every_path_form_loads_the_same_weights(trained_run, net, positions):
    _, _, obs = positions
    ckpt = latest_checkpoint(trained_run)
    want = net.forward(obs)[1]
    for path in (ckpt, os.path.join(ckpt, "weights.safetensors")):
        with zeroth.Net.load(path, backend="ref", threads=1) as other:
            assert np.array_equal(other.forward(obs)[1], want)


def mlp_forward(t, obs):
    """The tiny MLP (docs/networks.md "mlp") in numpy, from the tensors."""
    x = obs.reshape(obs.shape[0], -1).astype(np.float64)
    h = x @ t["mlp.0.fc.weight"].T
    mu, var = h.mean(1, keepdims=True), h.var(1, keepdims=True)
    h = np.maximum((h - mu) / np.sqrt(var + 1e-5) * t["mlp.0.norm.weight"] + t["mlp.0.norm.bias"],
                   0)
    logits = h @ t["policy.fc.weight"].T + t["policy.fc.bias"]
    v = np.maximum(h @ t["value.fc1.weight"].T + t["value.fc1.bias"], 0)
    v = np.tanh(v @ t["value.fc2.weight"].T + t["value.fc2.bias"])
    return logits, v.reshape(-1)


def test_tensors_are_the_weights_the_net_runs_with(net, positions):
    _, _, obs = positions
    t = net.tensors()
    assert list(t) == net.tensor_names()
    assert t["mlp.0.fc.weight"].shape == (32, 27) and t["policy.fc.bias"].shape == (9,)
    assert all(a.dtype == np.float32 for a in t.values())
    logits, value = net.forward(obs)
    hand_logits, hand_value = mlp_forward(t, obs)
    np.testing.assert_allclose(hand_logits, logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hand_value, value, rtol=1e-4, atol=1e-5)


def test_to_torch_computes_the_same(net, positions):
    torch = pytest.importorskip("torch")
    _, _, obs = positions
    module = net.to_torch()
    assert isinstance(module, torch.nn.Module) and not module.training
    with torch.no_grad():
        p, v = module(torch.from_numpy(obs))
    logits, value = net.forward(obs)
    np.testing.assert_allclose(p.numpy(), logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(v.numpy(), value, rtol=1e-4, atol=1e-5)


def test_refusals(trained_run, net, tmp_path):
    obs = np.zeros((2, 3, 3, 3), np.float32)
    with pytest.raises(zeroth.InvalidError, match="shape"):
        net.forward(np.zeros((2, 3, 3, 2), np.float32))
    with pytest.raises(zeroth.InvalidError, match="shape"):
        net.forward(np.zeros((0, 27), np.float32))
    with pytest.raises(TypeError, match="float"):
        net.forward(obs.astype(np.int32))
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_text("this is not a weights file, only some text pretending to be one")
    with pytest.raises(zeroth.CorruptError) as e:
        zeroth.Net.load(garbage)
    assert "garbage.safetensors" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(zeroth.NotFoundError, match="no/such/model"):
        zeroth.Net.load("/no/such/model")
    with pytest.raises(zeroth.NotFoundError, match="tpu"):
        zeroth.Net.load(trained_run, backend="tpu")
    with pytest.raises(zeroth.InvalidError, match="threads"):
        zeroth.Net.load(trained_run, threads=0)
    closed = zeroth.Net.load(trained_run, backend="ref", threads=1)
    closed.close()
    with pytest.raises(zeroth.InvalidError, match="closed"):
        closed.forward(obs)


def test_to_torch_resnet_with_wdl(tmp_path):
    # The resnet tower (convs, batch norms, HWC-flattened heads) and a
    # win/draw/loss value, after a few steps of training moved the norms.
    torch = pytest.importorskip("torch")
    config = {"game": "connect4", "mode": "deterministic", "games_per_actor": 4,
              "net": {"kind": "resnet", "channels": 8, "blocks": 1, "value": "wdl",
                      "value_hidden": 8},
              "search": {"sims": 4, "gumbel_m": 4},
              "learner": {"batch": 16, "min_positions": 32},
              "arena": {"games": 0, "positions": False}}
    with zeroth.Run.new(config, tmp_path / "resnet") as run:
        run.step(steps=3)
    net = zeroth.Net.load(tmp_path / "resnet", backend="ref", threads=1, precision="fp32")
    games = zeroth.Games("connect4", batch=16, seed=2)
    rng = np.random.default_rng(2)
    for _ in range(5):
        games.step(zeroth.random_actions(games.legal_mask(), rng))
    obs = games.observation()
    logits, value = net.forward(obs)
    with torch.no_grad():
        p, v = net.to_torch()(torch.from_numpy(obs))
    np.testing.assert_allclose(p.numpy(), logits, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(v.numpy(), value, rtol=1e-4, atol=1e-4)
