"""Training runs: start, resume, step and stop a run from a config dict, and
read its metrics as dicts.

A run trains by self-play into its run directory exactly as `zeroth train`
does. Its metrics are the records the run appends to RUN/metrics.jsonl (the
same ones `zeroth report` draws): Run.metrics() parses them, and Run.train()
steps the run and yields each new record as it is written.
"""
import configparser
import ctypes
import json
import os
import time

from ._lib import InvalidError, check, lib, string, text

FIGURES = ("step", "games", "positions", "elapsed", "loss_policy", "loss_value", "loss_total")


def _flatten(config, prefix=""):
    """{"net": {"kind": "mlp"}, "search.sims": 8} -> [("net.kind", "mlp"),
    ("search.sims", "8")]."""
    items = []
    for k, v in config.items():
        if not isinstance(k, str) or not k or any(c.isspace() or c in "=[];#" for c in k):
            raise InvalidError(f"config key {k!r} is not a plain name")
        key = prefix + k
        if isinstance(v, dict):
            items += _flatten(v, key + ".")
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        v = str(v)
        if any(c in v for c in "\n\r\0;#"):
            raise InvalidError(f"config value of {key} ({v!r}) holds a newline, ';' or '#'")
        items.append((key, v))
    return items


def config_text(config):
    """A config dict (nested dicts for sections, or dotted keys) or a string
    (INI text, or key=value pairs) as the text zeroth_run_new takes."""
    if isinstance(config, str):
        return config
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict or a str, not {type(config).__name__}")
    return "".join(f"{k} = {v}\n" for k, v in _flatten(config))


def _default_configs_dir():
    """configs/ in the installed package, else the repository's (when the
    package is used from the source tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "configs"), os.path.join(here, "..", "..", "..", "configs")):
        if os.path.isdir(d):
            return d
    return os.path.join(here, "configs")


def default_config(game):
    """The defaults `zeroth train GAME` starts from (configs/GAME.ini of the
    repository, shipped in the package) as a nested dict of strings; a run
    made with zeroth_run_new takes the library's built-in defaults for
    every key left out instead, which for some games are slower to learn."""
    path = os.path.join(_default_configs_dir(), f"{game}.ini")
    if not os.path.exists(path):
        raise InvalidError(f"no default config for game '{game}'")
    p = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None,
                                  default_section="\0none")
    with open(path) as f:
        p.read_string("[\0top]\n" + f.read(), source=path)
    out = {"game": game}
    for section in p.sections():
        values = dict(p.items(section))
        if section == "\0top":
            out.update(values)
        else:
            out[section] = values
    return out


def _records(pairs):
    """A metrics record; a key that repeats (an arena record's own "games"
    after the run's) is kept under KIND_KEY ("arena_games")."""
    d = {}
    for k, v in pairs:
        if k in d:
            kind = d.get("kind", "record")
            k = f"{kind}_{k}"
        d[k] = v
    return d


class Run:
    """A training run in a run directory.

        run = zeroth.Run.new({"game": "tictactoe", "arena": {"stop_on_perfect": True}},
                             "runs/ttt")
        for record in run.train(seconds=60):   # dicts, as metrics.jsonl holds them
            ...
        run.close()                            # a checkpoint; Run.resume continues it

    One run may be open per process. A Run is a context manager (close on exit).
    """

    def __init__(self, handle):
        self._h = handle
        #: the run directory (Net.load takes it for the latest weights)
        self.dir = string(lib.zeroth_run_dir(handle))
        self.done = False
        self._offset = 0   # bytes of metrics.jsonl already yielded by new_metrics
        self._partial = b""

    @classmethod
    def new(cls, config, run_dir=None):
        """A new run: config a dict ({"game": "connect4", "search": {"sims":
        64}, "learner.batch": 256}) or INI text; keys left out take the
        built-in defaults (default_config(game) gives those of `zeroth train`).
        run_dir None: runs/<game>-<date-time>. An unknown key, or a run_dir
        that already holds a run, raises."""
        h = ctypes.c_void_p()
        rd = None if run_dir is None else text(os.fspath(run_dir), "run_dir")
        check(lib.zeroth_run_new(text(config_text(config), "config"), rd, ctypes.byref(h)))
        return cls(h)

    @classmethod
    def resume(cls, run_dir, overrides=None):
        """Continues the run in run_dir from its latest checkpoint, with its
        config.ini and then `overrides` (a dict or text)."""
        h = ctypes.c_void_p()
        ov = None if overrides is None else text(config_text(overrides), "overrides")
        check(lib.zeroth_run_resume(text(os.fspath(run_dir), "run_dir"), ov, ctypes.byref(h)))
        run = cls(h)
        run._offset = run._metrics_size()  # new_metrics: the records of this session
        return run

    def _handle(self):
        if not self._h:
            raise InvalidError("the run is closed")
        return self._h

    def step(self, steps=0, seconds=0.0):
        """Trains until `steps` more learner steps or `seconds` of wall time
        (0: no such bound; both 0: until stopped). Returns True when the
        run is over (stopped, or perfect with arena.stop_on_perfect)."""
        if not isinstance(steps, int) or steps < 0:
            raise InvalidError(f"steps = {steps!r}, must be an int >= 0")
        done = ctypes.c_int()
        check(lib.zeroth_run_step(self._handle(), steps, float(seconds), ctypes.byref(done)))
        self.done = bool(done.value)
        return self.done

    def stop(self):
        """Asks a step under way (on another thread) or the next one to end
        the run; safe from any thread."""
        if self._h:
            lib.zeroth_run_request_stop(self._h)

    def metric(self, name):
        """One figure of the run so far: step, games, positions, elapsed,
        loss_policy, loss_value, loss_total."""
        v = ctypes.c_double()
        check(lib.zeroth_run_metric(self._handle(), text(name, "metric"), ctypes.byref(v)))
        return v.value

    def figures(self):
        """Every figure of metric() as a dict."""
        return {name: self.metric(name) for name in FIGURES}

    # ---- metrics records ----

    @property
    def metrics_path(self):
        return os.path.join(self.dir, "metrics.jsonl")

    def _metrics_size(self):
        try:
            return os.path.getsize(self.metrics_path)
        except OSError:
            return 0

    def metrics(self):
        """Every record of the run so far (all sessions), a list of dicts
        ready for pandas.DataFrame: t (seconds), step, games, positions, kind
        (train, selfplay, arena, positions) and that kind's figures."""
        try:
            with open(self.metrics_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        return [json.loads(line, object_pairs_hook=_records) for line in lines[:-1] if line]

    def new_metrics(self):
        """The records written since the last call (for a resumed run: since
        it was resumed)."""
        try:
            with open(self.metrics_path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()  # a record not yet complete
        return [json.loads(line, object_pairs_hook=_records) for line in lines if line]

    def train(self, steps=None, seconds=None, every=0.5, progress=None):
        """Steps the run in slices of `every` seconds until `steps` more
        learner steps or `seconds` of wall time (None: no such bound; both
        None: until the run is over or stopped), yielding each new metrics
        record as a dict. progress: a tqdm bar of learner steps (tqdm.auto:
        a widget in notebooks); None shows one when tqdm is installed.
        Ctrl-C stops training between slices (the run stays open)."""
        bar = self._bar(steps, progress)
        start_step = self.metric("step")
        t0 = time.monotonic()
        try:
            while not self.done:
                slice_s = every
                if seconds is not None:
                    left = seconds - (time.monotonic() - t0)
                    if left <= 0:
                        break
                    slice_s = min(slice_s, left)
                left_steps = 0
                if steps is not None:
                    left_steps = int(steps - (self.metric("step") - start_step))
                    if left_steps <= 0:
                        break
                try:
                    self.step(left_steps, slice_s)
                except KeyboardInterrupt:
                    break
                yield from self.new_metrics()
                if bar is not None:
                    bar.n = int(self.metric("step") - start_step)
                    bar.set_postfix(games=int(self.metric("games")),
                                    loss=round(self.metric("loss_total"), 4), refresh=False)
                    bar.refresh()
            yield from self.new_metrics()
        finally:
            if bar is not None:
                bar.close()

    @staticmethod
    def _bar(steps, progress):
        if progress is False:
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if progress:
                raise ImportError("progress=True needs tqdm (pip install tqdm)") from None
            return None
        return tqdm(total=steps, unit="step", desc="training")

    def close(self):
        """Ends the run, leaving a checkpoint of where it stopped (after a
        failed step, none), and frees it."""
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            check(lib.zeroth_run_close(h))

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- nothing to raise to at collection
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"zeroth.Run({self.dir!r})"


__all__ = ["Run", "default_config", "config_text"]
