"""Fixtures of the Python suite: a tiny trained run (tic-tac-toe, a small
MLP, a few learner steps) made once per session in a temporary directory."""
import pytest

import zeroth

TINY_RUN = {
    "game": "tictactoe",
    "mode": "deterministic",
    "seed": 5,
    "games_per_actor": 8,
    "replay_ratio": 4,
    "net": {"kind": "mlp", "mlp_hidden": 32, "mlp_layers": 1, "value_hidden": 16},
    "search": {"sims": 8},
    "selfplay": {"root_cache_sims": 16},
    "learner": {"batch": 32, "min_positions": 64},
    "arena": {"games": 0, "positions": False},
    "checkpoint": {"keep": 0},
}


@pytest.fixture(scope="session", autouse=True)
def quiet_library():
    zeroth.set_log_level("warn")


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """The directory of a run trained for 10 learner steps (closed)."""
    path = tmp_path_factory.mktemp("zeroth") / "run"
    with zeroth.Run.new(TINY_RUN, path) as run:
        run.step(steps=10)
    return path
