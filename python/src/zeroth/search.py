"""Search: Zeroth's batched tree search (Gumbel AlphaZero or PUCT) of many
trees in lockstep, over a loaded Net or over a Python model called with one
batch of positions per round."""
import collections
import ctypes

import numpy as np

from . import _arrays
from ._lib import (ERR_INVALID, EVAL_OBS_FN, RECURRENT_FN, ROOT_FN, InvalidError, OK, check,
                   lib, text)
from .games import Game
from .nets import Net

#: What Search.__call__ returns, in the spirit of mctx's PolicyOutput.
SearchOutput = collections.namedtuple("SearchOutput", "action action_weights visits value")
#: What a RecurrentModel's functions return: mctx's RootFnOutput and
#: RecurrentFnOutput have the same fields, and serve as well.
RootOutput = collections.namedtuple("RootOutput", "prior_logits value embedding")
RecurrentOutput = collections.namedtuple("RecurrentOutput", "reward discount prior_logits value")


class RecurrentModel:
    """A model in mctx's shape, which Search steps instead of the game below
    the root (MuZero's learned dynamics, or any simulator):

        root_fn(obs, states) -> RootOutput(prior_logits, value, embedding)
        recurrent_fn(embedding, action) -> (RecurrentOutput(reward, discount,
                                            prior_logits, value), next_embedding)

    obs: float32 (n, H, W, C) and states: uint8 (n, state_size), the root
    positions; embedding: (n,) + embedding_shape arrays of embedding_dtype,
    which the tree stores; action: int32 (n,). prior_logits (n, A): finite
    for legal actions (the game masks the root's illegal ones; below the
    root -inf marks an action that cannot be taken); value (n,) in [-1, 1]
    for the player to move; reward (n,) in [-1, 1], paid to the player who
    acted; discount (n,): -1 when the opponent moves next, +1 when the same
    player does, 0 when the game ended (mctx's two-player convention). The
    arrays handed in are read-only views, valid during the call."""

    def __init__(self, root_fn, recurrent_fn, embedding_shape, embedding_dtype=np.float32):
        if not callable(root_fn) or not callable(recurrent_fn):
            raise TypeError("root_fn and recurrent_fn must be callables")
        self.root_fn, self.recurrent_fn = root_fn, recurrent_fn
        self.embedding_shape = tuple(np.atleast_1d(embedding_shape).astype(int).tolist())
        self.embedding_dtype = np.dtype(embedding_dtype)
        if self.embedding_dtype.kind not in "biuf" or self.embedding_dtype.hasobject:
            raise TypeError(f"embedding_dtype must be numeric, not {self.embedding_dtype}")
        if not self.embedding_shape or min(self.embedding_shape) < 1:
            raise InvalidError(f"embedding_shape {self.embedding_shape} has no elements")
        self.embedding_bytes = int(np.prod(self.embedding_shape)) * self.embedding_dtype.itemsize


def _view(p, shape, dtype=np.float32, writable=True):
    """A numpy view of n elements at a C pointer (no copy)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctypes.c_uint8)),
                                (count * dtype.itemsize,))
    a = raw.view(dtype).reshape(shape)
    if not writable:
        a.flags.writeable = False
    return a


def _fill(out, x, what, fn):
    """Copies a model's answer into the library's buffer, checking it."""
    a = np.asarray(x)
    if a.dtype.kind not in "fiu" or (out.dtype.kind == "f" and a.dtype.kind != "f"):
        raise TypeError(f"{fn} returned {what} of dtype {a.dtype}, not {out.dtype.kind}-kind")
    if a.shape != out.shape and not (out.ndim == 1 and a.shape == out.shape + (1,)):
        raise InvalidError(f"{fn} returned {what} of shape {a.shape}, expected {out.shape}")
    np.copyto(out, a.reshape(out.shape), casting="same_kind")


def settings_text(settings):
    """Keyword settings as the library's "key=value" string: `sims=64`
    becomes search.sims=64 (keys with a dot and `seed` are taken as they
    are); True/False become true/false."""
    parts = []
    for k, v in settings.items():
        key = k if ("." in k or k == "seed") else "search." + k
        if isinstance(v, bool):
            v = "true" if v else "false"
        v = str(v)
        if not v or any(c.isspace() for c in v) or "=" in key:
            raise InvalidError(f"search setting {k} = {v!r} is not a single word")
        parts.append(f"{key}={v}")
    return " ".join(parts)


class _Closable:
    """close() frees the library's handle (self._h, by self._free_fn) once;
    also on garbage collection and at the end of a with block."""

    _free_fn = None

    def close(self):
        h = getattr(self, "_h", None)
        if h:
            type(self)._free_fn(h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Search(_Closable):
    """`trees` search trees advanced in lockstep over one model: each round
    evaluates the leaves of every tree in one batch.

    model: a zeroth.Net of the same game, or a callable model(obs) ->
    (logits, value) in the AlphaZero shape: obs float32 (n, H, W, C), the
    positions to evaluate (from the view of the player to move; a read-only
    view, valid during the call); logits (n, num_actions) finite for every
    action (the search masks illegal ones); value (n,) in [-1, 1] for the
    player to move. numpy, jax or torch arrays all do (anything np.asarray
    takes). Or a RecurrentModel, mctx's root_fn and recurrent_fn (with
    reward and discount), which the search steps below the root instead of
    the game. An exception raised by the model ends the run and is raised
    again by run().

    settings: the search.* keys of docs/search.md without their prefix,
    algorithm="gumbel"|"puct", sims=, leaves_per_tree=, gumbel_m=,
    gumbel_noise=, c_visit=, ..., and seed=.

        s = zeroth.Search(game, net, trees=64, sims=32)
        out = s(states)          # begin + run + read: SearchOutput
        s.played(out.action)     # keep each chosen subtree
    """

    def __init__(self, game, model, trees, **settings):
        self.game = game if isinstance(game, Game) else Game(game)
        if not isinstance(trees, (int, np.integer)) or trees < 1:
            raise InvalidError(f"trees = {trees!r}, must be an int >= 1")
        self.trees = int(trees)
        self.num_actions = self.game.num_actions
        self._error = None
        h = ctypes.c_void_p()
        cfg = text(settings_text(settings), "search settings")
        if isinstance(model, RecurrentModel):
            self.model = model
            self._callbacks = (ROOT_FN(self._root), RECURRENT_FN(self._recurrent))
            check(lib.zeroth_search_new_recurrent(self.game._h, model.embedding_bytes,
                                                  self._callbacks[0], self._callbacks[1], None,
                                                  self.trees, cfg, ctypes.byref(h)))
        elif isinstance(model, Net):
            self.model = model
            check(lib.zeroth_search_new(self.game._h, model._handle(), self.trees, cfg,
                                        ctypes.byref(h)))
            model._searches.add(self)
        elif callable(model):
            self.model = model
            # Kept on the object: the library holds the function pointer.
            self._callback = EVAL_OBS_FN(self._evaluate)
            check(lib.zeroth_search_new_callbacks(self.game._h, self._callback, None, None,
                                                  self.trees, cfg, ctypes.byref(h)))
        else:
            raise TypeError(f"model must be a zeroth.Net, a RecurrentModel or a callable, not "
                            f"{type(model).__name__}")
        self._h = h

    _free_fn = staticmethod(lambda h: lib.zeroth_search_free(h))

    def _handle(self):
        if not self._h:
            raise InvalidError("the search is closed")
        return self._h

    # ---- the caller's model ----

    def _evaluate(self, user, n, obs_p, logits_p, value_p):
        """The eval_obs callback: numpy views of the library's buffers, the
        model called once, its answer copied in. Any exception is kept for
        run() and reported to the library as a failure."""
        try:
            A = self.num_actions
            obs = np.ctypeslib.as_array(ctypes.cast(obs_p, ctypes.POINTER(ctypes.c_float)),
                                        (n,) + self.game.obs_shape)
            obs.flags.writeable = False
            logits_out = np.ctypeslib.as_array(
                ctypes.cast(logits_p, ctypes.POINTER(ctypes.c_float)), (n, A))
            value_out = np.ctypeslib.as_array(
                ctypes.cast(value_p, ctypes.POINTER(ctypes.c_float)), (n,))
            result = self.model(obs)
            if not isinstance(result, tuple) or len(result) != 2:
                raise InvalidError("the model must return (logits, value)")
            logits, value = (np.asarray(x) for x in result)
            if logits.dtype.kind != "f" or value.dtype.kind != "f":
                raise TypeError(f"the model returned {logits.dtype} logits and {value.dtype} "
                                "values, not floats")
            if logits.shape != (n, A):
                raise InvalidError(f"the model returned logits of shape {logits.shape} for "
                                   f"{n} positions, expected ({n}, {A})")
            if value.shape not in ((n,), (n, 1)):
                raise InvalidError(f"the model returned values of shape {value.shape} for "
                                   f"{n} positions, expected ({n},)")
            np.copyto(logits_out, logits, casting="same_kind")
            np.copyto(value_out, value.reshape(n), casting="same_kind")
            return OK
        except BaseException as e:  # noqa: B902 -- KeyboardInterrupt too, raised by run()
            return self._failed(e)

    def _failed(self, e):
        if self._error is None:
            self._error = e
        msg = f"the Python model raised {type(e).__name__}: {e}".replace("\n", " ")
        return lib.zeroth_fail(ERR_INVALID, msg.encode("utf-8", "replace"))

    def _root(self, user, n, states_p, obs_p, emb_p, logits_p, value_p):
        try:
            m, g = self.model, self.game
            obs = _view(obs_p, (n,) + g.obs_shape, writable=False)
            states = _view(states_p, (n, g.state_size), np.uint8, writable=False)
            out = m.root_fn(obs, states)
            _fill(_view(logits_p, (n, self.num_actions)), out.prior_logits, "prior_logits",
                  "root_fn")
            _fill(_view(value_p, (n,)), out.value, "value", "root_fn")
            _fill(_view(emb_p, (n,) + m.embedding_shape, m.embedding_dtype), out.embedding,
                  "embedding", "root_fn")
            return OK
        except BaseException as e:  # noqa: B902 -- raised again by run()
            return self._failed(e)

    def _recurrent(self, user, n, emb_p, actions_p, next_p, logits_p, value_p, reward_p,
                   discount_p):
        try:
            m = self.model
            emb = _view(emb_p, (n,) + m.embedding_shape, m.embedding_dtype, writable=False)
            actions = _view(actions_p, (n,), np.int32, writable=False)
            result = m.recurrent_fn(emb, actions)
            if not isinstance(result, tuple) or len(result) != 2:
                raise InvalidError("recurrent_fn must return (RecurrentOutput, next_embedding)")
            out, nxt = result
            _fill(_view(logits_p, (n, self.num_actions)), out.prior_logits, "prior_logits",
                  "recurrent_fn")
            _fill(_view(value_p, (n,)), out.value, "value", "recurrent_fn")
            _fill(_view(reward_p, (n,)), out.reward, "reward", "recurrent_fn")
            _fill(_view(discount_p, (n,)), out.discount, "discount", "recurrent_fn")
            _fill(_view(next_p, (n,) + m.embedding_shape, m.embedding_dtype), nxt,
                  "next_embedding", "recurrent_fn")
            return OK
        except BaseException as e:  # noqa: B902 -- raised again by run()
            return self._failed(e)

    # ---- searching ----

    def _trees(self, trees, n_default=None):
        t = _arrays.tree_list(trees, self.trees)
        if t is None:
            return (self.trees if n_default is None else n_default), None
        return t.size, t

    def begin(self, states, trees=None):
        """Starts trees[k] (default: trees 0 .. n-1) at states[k], a (n,
        state_size) uint8 array of decision states (e.g. Games.states). A
        tree told the move played (played) keeps that subtree."""
        s = _arrays.states(states, self.game.state_size)
        n, t = self._trees(trees, s.shape[0])
        if n != s.shape[0]:
            raise InvalidError(f"{s.shape[0]} states for {n} trees")
        check(lib.zeroth_search_begin(self._handle(), n, _arrays.ptr(t), _arrays.ptr(s)))

    def run(self):
        """Searches every begun tree to its number of simulations. If the
        model raised, that exception is raised here (and every tree is
        forgotten)."""
        self._error = None
        status = lib.zeroth_search_run(self._handle())
        err, self._error = self._error, None
        if err is not None:
            raise err
        check(status)

    def choose(self, trees=None, temperature=0.0):
        """int32 (n,): at temperature 0 Gumbel's sequential-halving winner
        or PUCT's most visited action; at T > 0 a sample of the improved
        policy^(1/T) (Gumbel) or of visits^(1/T) (PUCT)."""
        n, t = self._trees(trees)
        out = np.empty(n, np.int32)
        check(lib.zeroth_search_choose(self._handle(), n, _arrays.ptr(t), float(temperature),
                                       _arrays.ptr(out)))
        return out

    def policy(self, trees=None):
        """float32 (n, num_actions): the improved policy (Gumbel) or visit
        fractions (PUCT), 0 on illegal actions."""
        n, t = self._trees(trees)
        out = np.empty((n, self.num_actions), np.float32)
        check(lib.zeroth_search_policy(self._handle(), n, _arrays.ptr(t), _arrays.ptr(out)))
        return out

    def visits(self, trees=None):
        """int32 (n, num_actions): root visits per action."""
        n, t = self._trees(trees)
        out = np.empty((n, self.num_actions), np.int32)
        check(lib.zeroth_search_visits(self._handle(), n, _arrays.ptr(t), _arrays.ptr(out)))
        return out

    def root_value(self, trees=None):
        """float32 (n,): each root's value for its player to move."""
        n, t = self._trees(trees)
        out = np.empty(n, np.float32)
        check(lib.zeroth_search_root_value(self._handle(), n, _arrays.ptr(t), _arrays.ptr(out)))
        return out

    def played(self, actions, trees=None):
        """actions[k] was played from the root of trees[k]: each keeps that
        subtree for its next search."""
        n, t = self._trees(trees, np.size(actions))
        a = _arrays.ints(np.atleast_1d(actions), (n,), "actions")
        check(lib.zeroth_search_played(self._handle(), n, _arrays.ptr(t), _arrays.ptr(a)))

    def forget(self, trees=None):
        """Drops trees: their next search starts from nothing."""
        n, t = self._trees(trees)
        check(lib.zeroth_search_forget(self._handle(), n, _arrays.ptr(t)))

    def __call__(self, states, trees=None, temperature=0.0):
        """begin + run, then the results of those trees as a SearchOutput
        (action, action_weights = policy, visits, value = root value)."""
        self.begin(states, trees)
        self.run()
        if trees is None:
            trees = np.arange(np.shape(states)[0], dtype=np.int32)
        return SearchOutput(self.choose(trees, temperature), self.policy(trees),
                            self.visits(trees), self.root_value(trees))


class Greedy(_Closable):
    """Play without search over a zeroth.Net: each turn ends where the net
    values the position highest (backgammon: every complete play of the
    dice, the opponent's roll valued by the net or averaged exactly; GNU
    Backgammon's 0-ply), plies=1 one ply deeper (the best 8 ends valued
    again by the opponent's best reply to each roll, gnubg's 1-ply). `slots`
    games at once; a slot keeps the rest of its chosen turn, so a turn's
    later moves cost no network call.

        g = zeroth.Greedy(game, net, slots=64)
        actions, values = g(states)
    """

    def __init__(self, game, net, slots, plies=0):
        self.game = game if isinstance(game, Game) else Game(game)
        if not isinstance(net, Net):
            raise TypeError(f"net must be a zeroth.Net, not {type(net).__name__}")
        if not isinstance(slots, (int, np.integer)) or slots < 1:
            raise InvalidError(f"slots = {slots!r}, must be an int >= 1")
        if plies not in (0, 1):
            raise InvalidError(f"plies = {plies!r}, must be 0 or 1")
        self.slots = int(slots)
        self.net = net
        h = ctypes.c_void_p()
        check(lib.zeroth_greedy_new(self.game._h, net._handle(), self.slots, int(plies),
                                    ctypes.byref(h)))
        net._searches.add(self)
        self._h = h

    _free_fn = staticmethod(lambda h: lib.zeroth_greedy_free(h))

    def __call__(self, states, slots=None):
        """(actions int32 (n,), values float32 (n,)): the move to play at
        each of states, a (n, state_size) uint8 array of decision states, in
        slots[k] (default 0 .. n-1), and the value of the turn it begins for
        the player to move."""
        if not self._h:
            raise InvalidError("the greedy player is closed")
        s = _arrays.states(states, self.game.state_size)
        n = s.shape[0]
        t = _arrays.tree_list(slots, self.slots, "slots")
        if t is not None and t.size != n:
            raise InvalidError(f"{n} states for {t.size} slots")
        actions = np.empty(n, np.int32)
        values = np.empty(n, np.float32)
        check(lib.zeroth_greedy_choose(self._h, n, _arrays.ptr(t), _arrays.ptr(s),
                                       _arrays.ptr(actions), _arrays.ptr(values)))
        return actions, values


__all__ = ["Search", "SearchOutput", "RecurrentModel", "RootOutput", "RecurrentOutput", "Greedy"]
