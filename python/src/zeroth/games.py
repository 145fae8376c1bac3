"""Games: `Game`, the rules of one game over state arrays the caller holds,
and `Games`, a batch of games stepped together in the shape of pgx's
vectorised environments (with auto-reset).

States are bytes: an (n, state_size) uint8 array, one row per position, as
libzeroth's batched calls take them (no copy crosses the boundary).
"""
import ctypes

import numpy as np

from . import _arrays
from ._lib import CHANCE, TERMINAL, InvalidError, check, lib, string, text

_TEXT_CAP = 1024
_RENDER_CAP = 4096


def list_games():
    """The registered game names ('tictactoe', 'connect4', ...)."""
    names, i = [], 0
    while True:
        n = lib.zeroth_game_list(i)
        if n is None:
            return names
        names.append(n.decode())
        i += 1


class Game:
    """The rules and sizes of one game with its settings, e.g.
    Game("connect4") or Game("sim vertices=6 k=3"). Its methods are batched
    over state arrays: (n, state_size) uint8, made by `new_states` or
    `from_text`. A state array must hold states of this game: the library
    checks moves, not arbitrary bytes."""

    def __init__(self, spec):
        h = ctypes.c_void_p()
        check(lib.zeroth_game_new(text(spec, "game spec"), ctypes.byref(h)))
        self._h = h
        shape = (ctypes.c_int * 3)()
        self.obs_size = lib.zeroth_game_obs_shape(h, shape)
        #: (H, W, C) of one observation, float32, channels last
        self.obs_shape = tuple(shape)
        #: the full spec with every setting, which Game() accepts back
        self.spec = string(lib.zeroth_game_spec(h))
        self.name = string(lib.zeroth_game_name(h))
        self.num_actions = lib.zeroth_game_num_actions(h)
        self.state_size = lib.zeroth_game_state_size(h)
        self.max_chance_outcomes = lib.zeroth_game_max_chance_outcomes(h)
        self.max_length = lib.zeroth_game_max_length(h)
        self.max_return = lib.zeroth_game_max_return(h)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            lib.zeroth_game_free(h)
            self._h = None

    def __repr__(self):
        return f"zeroth.Game({self.spec!r})"

    @property
    def has_chance(self):
        return self.max_chance_outcomes > 0

    def _states(self, states, writable=False):
        return _arrays.states(states, self.state_size, writable=writable)

    # ---- batched calls ----

    def new_states(self, n):
        """n start positions (at a chance node where the game opens with one)."""
        if not isinstance(n, (int, np.integer)) or not 0 <= n <= 2**31 - 1:
            raise InvalidError(f"n = {n!r}, must be an int in [0, 2^31)")
        s = np.empty((int(n), self.state_size), np.uint8)
        check(lib.zeroth_game_reset(self._h, s.shape[0], _arrays.ptr(s)))
        return s

    def players(self, states):
        """int32 (n,): 0 or 1 to move, CHANCE (-1) or TERMINAL (-2)."""
        s = self._states(states)
        out = np.empty(s.shape[0], np.int32)
        check(lib.zeroth_game_players(self._h, s.shape[0], _arrays.ptr(s), _arrays.ptr(out)))
        return out

    def legal_mask(self, states):
        """bool (n, num_actions): the legal actions (none at chance and
        terminal states)."""
        s = self._states(states)
        mask = np.empty((s.shape[0], self.num_actions), np.uint8)
        check(lib.zeroth_game_legal(self._h, s.shape[0], _arrays.ptr(s), _arrays.ptr(mask), None))
        return mask.view(np.bool_)

    def step(self, states, actions):
        """Applies actions[i] to states[i] in place: a legal action at a
        decision, an outcome id at a chance node. An illegal action or a
        terminal state raises InvalidError naming it, and changes no state."""
        s = self._states(states, writable=True)
        a = _arrays.ints(actions, (s.shape[0],), "actions")
        check(lib.zeroth_game_step(self._h, s.shape[0], _arrays.ptr(s), _arrays.ptr(a)))

    def observe(self, states, out=None):
        """float32 (n, H, W, C): each position from the view of the player
        to move. out: an array of that shape and dtype to write into."""
        s = self._states(states)
        shape = (s.shape[0],) + self.obs_shape
        if out is None:
            out = np.empty(shape, np.float32)
        else:
            if not isinstance(out, np.ndarray) or out.dtype != np.float32:
                raise TypeError("out must be a float32 numpy array")
            _arrays.check_shape(out, shape, "out")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise InvalidError("out must be C-contiguous and writeable")
        check(lib.zeroth_game_observe(self._h, s.shape[0], _arrays.ptr(s), _arrays.ptr(out)))
        return out

    def returns(self, states):
        """float32 (n, 2): each player's points at terminal states, 0 elsewhere."""
        s = self._states(states)
        out = np.empty((s.shape[0], 2), np.float32)
        check(lib.zeroth_game_returns(self._h, s.shape[0], _arrays.ptr(s), _arrays.ptr(out)))
        return out

    def chance_outcomes(self, states):
        """(counts int32 (n,), outcomes int32 (n, M), probs float32 (n, M))
        with M = max_chance_outcomes: the outcomes of chance states (count 0
        elsewhere; rows past the count are unspecified)."""
        s = self._states(states)
        n, m = s.shape[0], self.max_chance_outcomes
        counts = np.empty(n, np.int32)
        outcomes = np.zeros((n, m), np.int32)
        probs = np.zeros((n, m), np.float32)
        check(lib.zeroth_game_chance_outcomes(self._h, n, _arrays.ptr(s), _arrays.ptr(counts),
                                              _arrays.ptr(outcomes), _arrays.ptr(probs)))
        return counts, outcomes, probs

    def sample_chance(self, states, seed=0):
        """Draws chance outcomes in place until no state is at a chance node;
        the draws of row i depend only on (seed, i, the state)."""
        s = self._states(states, writable=True)
        check(lib.zeroth_game_sample_chance(self._h, s.shape[0], _arrays.ptr(s),
                                            int(seed) & (2**64 - 1)))

    # ---- one state at a time, in the game's notation ----

    def _one(self, state):
        s = _arrays.states(np.asarray(state).reshape(1, -1) if isinstance(state, np.ndarray)
                           else state, self.state_size, "state")
        if s.shape[0] != 1:
            raise InvalidError(f"state has {s.shape[0]} rows, expected one")
        return s

    def to_text(self, state):
        """The game's one-line position notation (README "Position notation")."""
        s = self._one(state)
        buf = ctypes.create_string_buffer(_TEXT_CAP)
        check(lib.zeroth_game_to_text(self._h, _arrays.ptr(s), buf, _TEXT_CAP))
        return buf.value.decode()

    def from_text(self, notation):
        """A state (state_size,) uint8 from the game's notation."""
        s = np.zeros((1, self.state_size), np.uint8)
        check(lib.zeroth_game_from_text(self._h, text(notation, "position"), _arrays.ptr(s)))
        return s[0]

    def render(self, state):
        """A multi-line board for people."""
        s = self._one(state)
        buf = ctypes.create_string_buffer(_RENDER_CAP)
        check(lib.zeroth_game_render(self._h, _arrays.ptr(s), buf, _RENDER_CAP))
        return buf.value.decode()

    def action_to_text(self, state, action):
        s = self._one(state)
        buf = ctypes.create_string_buffer(_TEXT_CAP)
        a = _arrays.ints(action, (), "action")
        check(lib.zeroth_game_action_to_text(self._h, _arrays.ptr(s), int(a), buf, _TEXT_CAP))
        return buf.value.decode()

    def action_from_text(self, state, notation):
        s = self._one(state)
        a = ctypes.c_int()
        check(lib.zeroth_game_action_from_text(self._h, _arrays.ptr(s), text(notation, "move"),
                                               ctypes.byref(a)))
        return a.value


def _mix(seed, counter):
    """A 64-bit seed per step, so each step's chance draws differ."""
    x = (int(seed) * 0x9E3779B97F4A7C15 + counter * 0xBF58476D1CE4E5B9 + 1) & (2**64 - 1)
    x ^= x >> 31
    return x


class Games:
    """`batch` games of one kind stepped together, the shape of pgx's
    vectorised environments at C speed:

        g = zeroth.Games("connect4", batch=4096)
        g.reset()
        while ...:
            obs, mask = g.observation(), g.legal_mask()
            g.step(actions)            # int array (batch,)
            g.rewards, g.done          # (batch, 2) float32, (batch,) bool

    Chance nodes (backgammon's dice) are drawn inside reset and step (from
    `seed`), so every game always waits for a player's decision.

    Auto-reset (the default, as pgx's auto_reset wrapper): a game that ends
    in a step starts again at once. After that step `done[i]` is True and
    `rewards[i]` holds the final points of both players (reward[i, p] for
    player p), while the state, observation, legal mask and current player
    are the new game's. With auto_reset=False a finished game stays over
    (done stays True, its rewards are 0 after the step that ended it, its
    legal mask is empty), step ignores its action, and reset() starts it again.

    rewards, done, current_player and the legal mask are new arrays after
    each step (keep them freely; the step computes the mask in the same pass); `states` is the live (batch, state_size) array of state
    bytes, which Search.begin and Game's methods take.
    """

    def __init__(self, game, batch, seed=0, auto_reset=True):
        self.game = game if isinstance(game, Game) else Game(game)
        if not isinstance(batch, (int, np.integer)) or not 1 <= batch <= 2**31 - 1:
            raise InvalidError(f"batch = {batch!r}, must be an int in [1, 2^31)")
        self.batch = int(batch)
        self.auto_reset = bool(auto_reset)
        self.seed = int(seed)
        self.num_actions = self.game.num_actions
        self.obs_shape = self.game.obs_shape
        self._steps = 0
        self._s = np.empty((self.batch, self.game.state_size), np.uint8)
        self._sp = self._s.ctypes.data
        self._h = self.game._h
        # The start position: reset copies it instead of asking the library
        # for each game (without chance it is the same for every game).
        self._start = self.game.new_states(1)[0]
        self.reset()

    @property
    def states(self):
        """The live (batch, state_size) uint8 array of the games' states."""
        return self._s

    def __repr__(self):
        return f"zeroth.Games({self.game.spec!r}, batch={self.batch})"

    def _next_seed(self):
        self._steps += 1
        return _mix(self.seed, self._steps)

    def _draw(self, states):
        if self.game.has_chance:
            check(lib.zeroth_game_sample_chance(self._h, states.shape[0], _arrays.ptr(states),
                                                self._next_seed()))

    def reset(self, where=None):
        """Starts every game again (where=None) or those where where[i] is True."""
        if where is None:
            self._s[:] = self._start
            self._draw(self._s)
            self.rewards = np.zeros((self.batch, 2), np.float32)
            self.done = np.zeros(self.batch, np.bool_)
        else:
            w = np.asarray(where)
            if w.dtype != np.bool_:
                raise TypeError(f"where must be a bool array, not {w.dtype}")
            _arrays.check_shape(w, (self.batch,), "where")
            idx = np.flatnonzero(w)
            if idx.size:
                fresh = np.repeat(self._start[None], idx.size, axis=0)
                self._draw(fresh)
                self._s[idx] = fresh
            self.rewards = self.rewards.copy()
            self.rewards[idx] = 0
            self.done = self.done & ~w
        players = np.empty(self.batch, np.int32)
        check(lib.zeroth_game_players(self._h, self.batch, self._sp, players.ctypes.data))
        self.current_player = players
        self._mask = None

    def step(self, actions):
        """Plays actions[i] in game i (an int array of shape (batch,)). An
        illegal action raises InvalidError naming the game and changes no
        game."""
        a = _arrays.ints(actions, (self.batch,), "actions")
        rewards = np.empty((self.batch, 2), np.float32)
        done = np.empty(self.batch, np.bool_)
        players = np.empty(self.batch, np.int32)
        mask = np.empty((self.batch, self.num_actions), np.bool_)
        if self.auto_reset or not self.done.any():
            # One pass in C: moves, chance draws, rewards, resets, players, masks.
            check(lib.zeroth_game_step_env(self._h, self.batch, self._sp, a.ctypes.data,
                                           self._next_seed(), int(self.auto_reset),
                                           rewards.ctypes.data, done.ctypes.data,
                                           players.ctypes.data, mask.ctypes.data))
        else:
            # Finished games ignore their actions (pgx's step on a terminal
            # state): done stays, no reward, an empty mask.
            live = np.flatnonzero(~self.done)
            sub = self._s[live]
            n = sub.shape[0]
            r, d = np.empty((n, 2), np.float32), np.empty(n, np.bool_)
            p, m = np.empty(n, np.int32), np.empty((n, self.num_actions), np.bool_)
            check(lib.zeroth_game_step_env(self._h, n, _arrays.ptr(sub),
                                           _arrays.ptr(np.ascontiguousarray(a[live])),
                                           self._next_seed(), 0, _arrays.ptr(r), _arrays.ptr(d),
                                           _arrays.ptr(p), _arrays.ptr(m)))
            self._s[live] = sub
            rewards[:] = 0
            rewards[live] = r
            done[:] = True
            done[live] = d
            players[:] = TERMINAL
            players[live] = p
            mask[:] = False
            mask[live] = m
        self.rewards, self.done, self.current_player = rewards, done, players
        self._mask = mask

    def step_random(self):
        """Plays a uniformly random legal move in every game, drawn in C
        (random rollouts; the random player of a benchmark), and returns the
        int32 (batch,) actions played. Otherwise as step(). Without
        auto-reset, once a game is over the moves are drawn in numpy and
        played by step()."""
        if not self.auto_reset and self.done.any():
            # finished games ignore their action (step); the others draw one
            rng = np.random.default_rng(self._next_seed())
            u = rng.random((self.batch, self.num_actions))
            u *= self.legal_mask()
            actions = np.argmax(u, axis=1).astype(np.int32)
            self.step(actions)
            return actions
        actions = np.empty(self.batch, np.int32)
        rewards = np.empty((self.batch, 2), np.float32)
        done = np.empty(self.batch, np.bool_)
        players = np.empty(self.batch, np.int32)
        mask = np.empty((self.batch, self.num_actions), np.bool_)
        check(lib.zeroth_game_step_env_random(self._h, self.batch, self._sp, self._next_seed(),
                                              int(self.auto_reset), actions.ctypes.data,
                                              rewards.ctypes.data, done.ctypes.data,
                                              players.ctypes.data, mask.ctypes.data))
        self.rewards, self.done, self.current_player = rewards, done, players
        self._mask = mask
        return actions

    def observation(self, out=None):
        """float32 (batch, H, W, C): each game from the view of its player to
        move (a new array, or `out`)."""
        return self.game.observe(self._s, out)

    def legal_mask(self):
        """bool (batch, num_actions), all False for finished games: made by
        the last step (or reset), the same array until the next one."""
        if self._mask is None:
            mask = np.empty((self.batch, self.num_actions), np.uint8)
            check(lib.zeroth_game_legal(self._h, self.batch, self._sp, mask.ctypes.data, None))
            self._mask = mask.view(np.bool_)
        return self._mask

    def to_text(self, i):
        return self.game.to_text(self._s[i])

    def render(self, i):
        return self.game.render(self._s[i])


__all__ = ["Game", "Games", "list_games", "CHANCE", "TERMINAL"]
