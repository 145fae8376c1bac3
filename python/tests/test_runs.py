"""zeroth.Run: a run from a config dict, stepped, its metrics as dicts,
resumed where it stopped; one run per process; refusals name the key."""
import json

import pytest

import zeroth
from conftest import TINY_RUN


def test_config_text():
    text = zeroth.config_text({"game": "sim", "vertices": 6, "net": {"kind": "mlp"},
                               "arena.positions": False})
    assert text == "game = sim\nvertices = 6\nnet.kind = mlp\narena.positions = false\n"
    with pytest.raises(zeroth.InvalidError, match="newline"):
        zeroth.config_text({"game": "tictactoe\n[net]"})
    with pytest.raises(TypeError):
        zeroth.config_text(["game=tictactoe"])


def test_default_config_is_a_valid_run_config(tmp_path):
    cfg = zeroth.default_config("tictactoe")
    assert cfg["game"] == "tictactoe" and cfg["net"]["kind"] == "mlp"
    assert cfg["search"]["algorithm"] == "gumbel"
    cfg["arena"]["games"] = 0
    cfg["arena"]["positions"] = "false"
    with zeroth.Run.new(cfg, tmp_path / "defaults") as run:
        assert run.metric("step") == 0
    with pytest.raises(zeroth.InvalidError, match="chess"):
        zeroth.default_config("chess")


def test_train_yields_metrics_and_resume_continues(tmp_path):
    path = tmp_path / "run"
    with zeroth.Run.new(TINY_RUN, path) as run:
        assert run.dir == str(path)
        list(run.train(steps=12, progress=False))
        assert run.metric("step") == 12 and run.figures()["games"] > 0
        # records come every 0.25 s in a run's first minute
        records = list(run.train(seconds=0.8, every=0.2, progress=False))
        step = run.metric("step")
        assert step > 12
        kinds = {r["kind"] for r in records}
        assert {"train", "selfplay"} <= kinds, records
        assert all(isinstance(r["step"], int) and "t" in r for r in records)
        # a second run in the same process is refused while this one is open
        with pytest.raises(zeroth.UnsupportedError, match="another training run"):
            zeroth.Run.new(TINY_RUN, tmp_path / "second")
    lines = [json.loads(line) for line in open(path / "metrics.jsonl")]
    assert [r["kind"] for r in run.metrics()] == [r["kind"] for r in lines]

    with zeroth.Run.resume(path, {"log.seconds": 5}) as again:
        assert again.metric("step") == step
        assert again.step(steps=3) is False and again.metric("step") == step + 3
        again.stop()
        assert again.step(steps=3) is True and again.metric("step") == step + 3
    with zeroth.Net.load(path, backend="ref", threads=1) as net:
        assert net.game_spec == "tictactoe"


def test_refusals_name_the_problem(tmp_path):
    with pytest.raises(zeroth.InvalidError, match="no_such_key"):
        zeroth.Run.new(dict(TINY_RUN, no_such_key=1), tmp_path / "a")
    with pytest.raises(zeroth.InvalidError, match="game"):
        zeroth.Run.new({"mode": "alternate"}, tmp_path / "b")
    with pytest.raises(zeroth.NotFoundError, match="chess"):
        zeroth.Run.new({"game": "chess"}, tmp_path / "c")
    with pytest.raises(zeroth.NotFoundError, match="no-such-run"):
        zeroth.Run.resume(tmp_path / "no-such-run")
    with zeroth.Run.new(TINY_RUN, tmp_path / "d") as run:
        with pytest.raises(zeroth.InvalidError, match="steps"):
            run.step(steps=-1)
        with pytest.raises(zeroth.NotFoundError, match="mood"):
            run.metric("mood")
    with pytest.raises(zeroth.InvalidError, match="closed"):
        run.step(1)


def test_progress_bar(tmp_path):
    tqdm = pytest.importorskip("tqdm")
    with zeroth.Run.new(TINY_RUN, tmp_path / "bar") as run:
        list(run.train(steps=5, progress=True))
        assert run.metric("step") == 5
    assert tqdm is not None


def test_log_to_python(tmp_path, caplog):
    import logging
    zeroth.set_log_level("info")
    zeroth.log_to_python()
    try:
        with caplog.at_level(logging.INFO, logger="zeroth"):
            with zeroth.Run.new(TINY_RUN, tmp_path / "logged") as run:
                run.step(steps=2)
        assert any("checkpoint" in r.getMessage() for r in caplog.records), caplog.records
    finally:
        zeroth.log_to_python(False)
        zeroth.set_log_level("warn")
    with pytest.raises(zeroth.InvalidError, match="loud"):
        zeroth.set_log_level("loud")
