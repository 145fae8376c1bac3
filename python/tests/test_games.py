"""zeroth.Game and zeroth.Games: the batched calls play the real rules,
auto-reset behaves as documented, and bad arguments are refused with
exceptions that leave the games unchanged."""
import numpy as np
import pytest

import zeroth


def perft(game, depth):
    """Action sequences of exactly `depth` plies, by breadth-first batched
    expansion with legal_mask and step (games that end earlier drop out)."""
    states = game.new_states(1)
    for _ in range(depth):
        states = states[game.players(states) >= 0]
        mask = game.legal_mask(states)
        rows, actions = np.nonzero(mask)
        states = np.ascontiguousarray(states[rows])
        game.step(states, actions)
    return states.shape[0]


def test_metadata():
    assert zeroth.list_games()[:2] == ["tictactoe", "connect4"]
    g = zeroth.Game("connect4")
    assert (g.name, g.spec, g.num_actions, g.obs_shape) == ("connect4", "connect4", 7, (6, 7, 3))
    assert g.obs_size == 126 and g.max_return == 1 and not g.has_chance
    sim = zeroth.Game("sim vertices=6 k=3")
    assert sim.spec == "sim vertices=6 k=3 variant=avoid" and sim.num_actions == 15
    assert zeroth.Game("backgammon").has_chance


def test_perft_matches_the_rules():
    # The counts `zeroth perft` prints (README): the binding plays the same games.
    assert perft(zeroth.Game("tictactoe"), 9) == 127872
    assert perft(zeroth.Game("connect4"), 7) == 823536


def test_unknown_game_is_one_line_not_found():
    with pytest.raises(zeroth.NotFoundError) as e:
        zeroth.Game("chess")
    assert "chess" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(zeroth.InvalidError, match="vertices"):
        zeroth.Game("sim vertices=99")


def test_states_are_changed_in_place_without_copies():
    g = zeroth.Game("tictactoe")
    s = g.new_states(3)
    before = s.ctypes.data
    g.step(s, [4, 0, 8])
    assert s.ctypes.data == before
    assert [g.to_text(row) for row in s] == ["....X.... O", "X........ O", "........X O"]
    with pytest.raises(zeroth.InvalidError, match="C-contiguous"):
        g.step(np.zeros((3, 2 * g.state_size), np.uint8)[:, ::2], [1, 1, 1])


def test_illegal_action_is_refused_and_changes_nothing():
    g = zeroth.Game("tictactoe")
    s = g.new_states(2)
    g.step(s, [4, 4])
    copy = s.copy()
    with pytest.raises(zeroth.InvalidError) as e:
        g.step(s, [0, 4])
    assert "action 4 is not legal in state 1" in str(e.value)
    assert np.array_equal(s, copy)


def test_bad_arguments_are_refused():
    g = zeroth.Game("connect4")
    s = g.new_states(2)
    with pytest.raises(TypeError, match="integer"):
        g.step(s, np.array([1.0, 2.0]))
    with pytest.raises(zeroth.InvalidError, match="shape"):
        g.step(s, [1, 2, 3])
    with pytest.raises(zeroth.InvalidError, match="int32"):
        g.step(s, np.array([1, 2**40], np.int64))
    with pytest.raises(TypeError, match="uint8"):
        g.players(s.astype(np.int16))
    with pytest.raises(zeroth.InvalidError, match="shape"):
        g.players(s[:, :-1])
    with pytest.raises(TypeError):
        g.players([[0] * g.state_size])
    with pytest.raises(zeroth.InvalidError, match="n ="):
        g.new_states(-1)
    with pytest.raises(zeroth.InvalidError, match="column"):
        g.from_text("48x")
    g.step(s, np.array([3, 3], np.int64))  # other integer dtypes are fine
    assert list(g.players(s)) == [1, 1]


def test_text_and_observation():
    g = zeroth.Game("connect4")
    s = g.from_text("4453")
    assert np.array_equal(g.from_text(g.to_text(s)), s)
    assert "to move" in g.render(s)
    assert g.action_from_text(s, "2") == 1 and g.action_to_text(s, 1) == "2"
    obs = g.observe(s[None])
    assert obs.shape == (1, 6, 7, 3) and obs.dtype == np.float32
    assert obs[..., :2].sum() == 4  # four discs, each in its player's plane
    out = np.empty((1, 6, 7, 3), np.float32)
    assert g.observe(s[None], out=out) is out and np.array_equal(out, obs)
    with pytest.raises(zeroth.InvalidError, match="shape"):
        g.observe(s[None], out=np.empty((2, 6, 7, 3), np.float32))


def test_chance_outcomes_and_sampling():
    g = zeroth.Game("backgammon")
    s = g.new_states(4)
    assert list(g.players(s)) == [zeroth.CHANCE] * 4
    counts, outcomes, probs = g.chance_outcomes(s)
    assert (counts > 0).all()
    for i in range(4):
        assert probs[i, : counts[i]].sum() == pytest.approx(1, abs=1e-5)
    g.sample_chance(s, seed=7)
    assert set(g.players(s)) <= {0, 1}


WIN = [0, 1, 0, 1, 0, 1, 0]  # X fills column 1: a win on ply 7


def test_games_auto_reset():
    g = zeroth.Games("connect4", batch=5)
    start = g.to_text(0)
    for ply, col in enumerate(WIN):
        assert not g.done.any()
        g.step(np.full(5, col))
    assert g.done.all()
    assert np.array_equal(g.rewards, np.tile([1.0, -1.0], (5, 1)))
    # the finished games started again at once
    assert all(g.to_text(i) == start for i in range(5))
    assert list(g.current_player) == [0] * 5 and g.legal_mask().all()
    g.step(np.zeros(5, np.int32))
    assert not g.done.any() and not g.rewards.any()


def test_games_without_auto_reset():
    g = zeroth.Games("connect4", batch=2, auto_reset=False)
    for col in WIN[:-1]:
        g.step([col, col])
    g.step([0, 6])  # game 0 wins, game 1 goes on
    assert list(g.done) == [True, False]
    assert list(g.rewards[0]) == [1.0, -1.0] and not g.legal_mask()[0].any()
    kept = g.states[0].copy()
    g.step([5, 5])  # game 0's action is ignored
    assert np.array_equal(g.states[0], kept) and g.done[0] and not g.rewards[0].any()
    g.reset(np.array([True, False]))
    assert list(g.done) == [False, False] and g.to_text(0) == ""


def test_games_refuse_illegal_actions_and_keep_their_state():
    g = zeroth.Games("tictactoe", batch=3)
    g.step([0, 1, 2])
    before = g.states.copy()
    with pytest.raises(zeroth.InvalidError, match="state 2"):
        g.step([3, 3, 2])
    assert np.array_equal(g.states, before)
    with pytest.raises(TypeError):
        g.step(np.array([0.5, 1, 2]))


def test_games_random_play_is_consistent():
    # Many random games: every game waits for a decision, returns are
    # zero-sum, and the number of finished games adds up.
    for spec, batch in (("connect4", 256), ("backgammon", 16), ("sim vertices=6 k=3", 64)):
        g = zeroth.Games(spec, batch=batch, seed=3)
        rng = np.random.default_rng(1)
        finished = 0
        for _ in range(300):
            assert set(g.current_player) <= {0, 1}
            mask = g.legal_mask()
            assert mask.any(axis=1).all()
            g.step(zeroth.random_actions(mask, rng))
            finished += int(g.done.sum())
            assert np.all(g.rewards.sum(axis=1) == 0)
            assert np.all(g.rewards[~g.done] == 0)
            assert np.all(np.abs(g.rewards) <= g.game.max_return)
        assert finished > 0, spec
        obs = g.observation()
        assert obs.shape == (batch,) + g.obs_shape and obs.dtype == np.float32


def test_step_random_plays_legal_moves_drawn_uniformly():
    # The moves drawn in C were legal where they were played, the games
    # behave as with step(), and the draw is uniform over the legal moves.
    for spec, batch in (("connect4", 256), ("backgammon", 16), ("tictactoe", 64)):
        g = zeroth.Games(spec, batch=batch, seed=4)
        finished = 0
        for _ in range(200):
            mask = g.legal_mask().copy()
            a = g.step_random()
            assert a.dtype == np.int32 and a.shape == (batch,)
            assert mask[np.arange(batch), a].all(), spec
            finished += int(g.done.sum())
            assert np.all(g.rewards.sum(axis=1) == 0)
            assert set(g.current_player) <= {0, 1}
        assert finished > 0, spec
    g = zeroth.Games("connect4", batch=7000, seed=2)
    counts = np.bincount(g.step_random(), minlength=7)
    assert counts.min() > 1000 * 0.8, counts
    # the same seed, the same games
    a, b = zeroth.Games("connect4", batch=64, seed=9), zeroth.Games("connect4", batch=64, seed=9)
    for _ in range(30):
        assert np.array_equal(a.step_random(), b.step_random())
    assert np.array_equal(a.states, b.states)
    # without auto-reset a finished game stays finished
    g = zeroth.Games("tictactoe", batch=8, auto_reset=False, seed=1)
    for _ in range(12):
        g.step_random()
    assert g.done.all()


def test_random_actions_are_legal_and_uniform():
    rng = np.random.default_rng(5)
    for A in (3, 7, 8, 9, 15):  # the byte-table path (A <= 8) and the general one
        mask = rng.random((4000, A)) < 0.5
        mask[np.arange(4000), rng.integers(0, A, 4000)] = True
        mask[0] = False
        mask[1] = True
        a = zeroth.random_actions(mask, rng)
        assert a.dtype == np.int32 and a[0] == 0
        assert mask[np.arange(1, 4000), a[1:]].all()
        counts = np.bincount(zeroth.random_actions(np.ones((7000, A), bool), rng), minlength=A)
        assert counts.min() > 7000 / A * 0.8, counts
