"""zeroth.Search over a net and over a Python model: the search finds what a
search must, a Python model evaluating a net gives the net's own search, and
a misbehaving model surfaces as a Python exception, never a crash."""
import numpy as np
import pytest

import zeroth


def uniform(num_actions, calls=None):
    def model(obs):
        if calls is not None:
            calls.append(obs.shape[0])
        n = obs.shape[0]
        return np.zeros((n, num_actions), np.float32), np.zeros(n, np.float32)
    return model


def test_python_model_search_finds_the_win():
    g = zeroth.Game("tictactoe")
    # X to move wins at once with cell 2 (the top row); O threatens the middle row.
    states = np.stack([g.from_text("XX.OO.... X")] * 4)
    calls = []
    s = zeroth.Search(g, uniform(9, calls), trees=4, algorithm="puct", sims=200)
    out = s(states)
    assert list(out.action) == [2] * 4
    visits = out.visits
    assert visits.dtype == np.int32 and (visits.sum(axis=1) >= 199).all()
    assert np.all(visits[:, [0, 1, 3, 4]] == 0)  # occupied cells
    np.testing.assert_allclose(out.action_weights.sum(axis=1), 1, atol=1e-5)
    assert np.all(out.value > 0.5)
    # one batched call per round for all trees, never more than the trees
    assert calls and max(calls) <= 4 and len(calls) < 220


def test_python_model_equals_the_net_search(trained_run):
    net = zeroth.Net.load(trained_run, backend="ref", threads=1)
    g = zeroth.Game(net.game_spec)
    games = zeroth.Games(g, batch=8, seed=1)
    rng = np.random.default_rng(0)
    for _ in range(3):
        games.step(zeroth.random_actions(games.legal_mask(), rng))
    settings = dict(algorithm="gumbel", sims=16, gumbel_m=4, seed=9)
    by_net = zeroth.Search(g, net, trees=8, **settings)(games.states)
    by_python = zeroth.Search(g, net.forward, trees=8, **settings)(games.states)
    assert np.array_equal(by_net.action, by_python.action)
    np.testing.assert_allclose(by_net.action_weights, by_python.action_weights, atol=1e-6)
    np.testing.assert_allclose(by_net.value, by_python.value, atol=1e-6)


def test_tree_lists_and_reuse():
    g = zeroth.Game("connect4")
    s = zeroth.Search(g, uniform(7), trees=3, algorithm="puct", sims=50)
    start = g.new_states(2)
    s.begin(start, trees=[2, 0])
    s.run()
    assert s.visits([0, 2]).sum() >= 98
    with pytest.raises(zeroth.InvalidError, match="tree 1"):
        s.policy([1])
    a = s.choose([2])
    s.played(a, trees=[2])
    after = start[:1].copy()
    g.step(after, a)
    s.begin(after, trees=[2])
    s.run()
    assert s.visits([2]).sum() >= 49
    s.forget()
    with pytest.raises(zeroth.InvalidError, match="tree 5 does not exist"):
        s.begin(start, trees=[5, 0])
    with pytest.raises(zeroth.InvalidError, match="2 states for 1 trees"):
        s.begin(start, trees=[0])
    with pytest.raises(zeroth.InvalidError, match="terminal"):
        s.begin(np.stack([g.from_text("1212121")]))


class Boom(RuntimeError):
    pass


def test_model_exceptions_reach_the_caller():
    g = zeroth.Game("tictactoe")
    states = g.new_states(2)

    def raising(obs):
        raise Boom("the model broke")

    s = zeroth.Search(g, raising, trees=2, sims=8)
    with pytest.raises(Boom, match="the model broke"):
        s(states)
    # the search is usable again afterwards
    s.model = uniform(9)
    assert s(states).action.shape == (2,)


@pytest.mark.parametrize("answer, error, match", [
    (lambda n: (np.zeros((n, 8)), np.zeros(n)), zeroth.InvalidError, "shape"),
    (lambda n: (np.zeros((n, 9)), np.zeros(n + 1)), zeroth.InvalidError, "values of shape"),
    (lambda n: (np.zeros((n, 9)),), zeroth.InvalidError, "logits, value"),
    (lambda n: (np.zeros((n, 9), np.int32), np.zeros(n)), TypeError, "not floats"),
    (lambda n: (np.full((n, 9), np.nan), np.zeros(n)), zeroth.InvalidError, "finite"),
    (lambda n: (np.zeros((n, 9)), np.full(n, 2.0)), zeroth.InvalidError, r"\[-1, 1\]"),
])
def test_bad_model_answers_are_refused(answer, error, match):
    g = zeroth.Game("tictactoe")
    s = zeroth.Search(g, lambda obs: answer(obs.shape[0]), trees=2, sims=8)
    with pytest.raises(error, match=match):
        s(g.new_states(2))


def test_search_refusals(trained_run):
    g = zeroth.Game("connect4")
    with pytest.raises(TypeError, match="callable"):
        zeroth.Search(g, 42, trees=1)
    with pytest.raises(zeroth.InvalidError, match="trees"):
        zeroth.Search(g, uniform(7), trees=0)
    with pytest.raises(zeroth.InvalidError, match="colour"):
        zeroth.Search(g, uniform(7), trees=1, colour="red")
    with pytest.raises(zeroth.InvalidError, match="the net plays 'tictactoe'"):
        zeroth.Search(g, zeroth.Net.load(trained_run, backend="ref", threads=1), trees=1)
    s = zeroth.Search(g, uniform(7), trees=1, sims=8)
    with pytest.raises(TypeError, match="uint8"):
        s.begin(np.zeros((1, g.state_size), np.float32))


def simulator(game):
    """A RecurrentModel whose embedding is the game state itself (uint8
    bytes), stepped with zeroth.Game, with uniform evaluations: the
    AlphaZero model with a uniform evaluator in mctx's shape."""
    A = game.num_actions

    def masked(states):
        return np.where(game.legal_mask(states), 0.0, -np.inf).astype(np.float32)

    def root_fn(obs, states):
        return zeroth.RootOutput(np.zeros((len(states), A), np.float32),
                                 np.zeros(len(states), np.float32), states)

    def recurrent_fn(embedding, action):
        states = embedding.copy()
        mover = game.players(states)
        game.step(states, action)
        player = game.players(states)
        over = player == zeroth.TERMINAL
        reward = game.returns(states)[np.arange(len(states)), mover]
        discount = np.where(over, 0.0, np.where(player == mover, 1.0, -1.0))
        logits = masked(states)
        logits[over] = 0  # ignored at the end of a game
        return zeroth.RecurrentOutput(reward, discount, logits,
                                      np.zeros(len(states), np.float32)), states

    return zeroth.RecurrentModel(root_fn, recurrent_fn, (game.state_size,), np.uint8)


def test_recurrent_model_equals_the_alphazero_shape():
    g = zeroth.Game("tictactoe")
    roots = np.stack([g.from_text(t) for t in ("XX.OO.... X", "......... X", "X...O.... X")])
    settings = dict(algorithm="puct", sims=120)
    rec = zeroth.Search(g, simulator(g), trees=3, **settings)(roots)
    az = zeroth.Search(g, uniform(9), trees=3, **settings)(roots)
    assert np.array_equal(rec.visits, az.visits) and rec.visits.sum() >= 3 * 119
    assert rec.action[0] == 2


def test_recurrent_model_errors_reach_the_caller():
    g = zeroth.Game("tictactoe")
    roots = g.new_states(2)
    good = simulator(g)

    def bad_discount(embedding, action):
        out, nxt = good.recurrent_fn(embedding, action)
        return out._replace(discount=np.full(len(action), 0.5)), nxt

    def raising(embedding, action):
        raise Boom("dynamics broke")

    def short_embedding(embedding, action):
        out, nxt = good.recurrent_fn(embedding, action)
        return out, nxt[:, :-1]

    for fn, error, match in ((bad_discount, zeroth.InvalidError, "discount 0.5"),
                             (raising, Boom, "dynamics broke"),
                             (short_embedding, zeroth.InvalidError, "next_embedding of shape")):
        model = zeroth.RecurrentModel(good.root_fn, fn, (g.state_size,), np.uint8)
        with pytest.raises(error, match=match):
            zeroth.Search(g, model, trees=2, sims=8)(roots)


def test_a_net_outlives_its_searches(trained_run):
    net = zeroth.Net.load(trained_run, backend="ref", threads=1)
    g = zeroth.Game(net.game_spec)
    s = zeroth.Search(g, net, trees=2, sims=8)
    with pytest.raises(zeroth.InvalidError, match="open search"):
        net.close()
    s.close()
    net.close()
    with pytest.raises(zeroth.InvalidError, match="closed"):
        s(g.new_states(2))


def test_recurrent_model_refusals():
    good = simulator(zeroth.Game("tictactoe"))
    with pytest.raises(TypeError, match="numeric"):
        zeroth.RecurrentModel(good.root_fn, good.recurrent_fn, (4,), object)
    with pytest.raises(zeroth.InvalidError, match="no elements"):
        zeroth.RecurrentModel(good.root_fn, good.recurrent_fn, (0,))
    with pytest.raises(TypeError, match="callables"):
        zeroth.RecurrentModel(good.root_fn, None, (4,))
    big = zeroth.RecurrentModel(good.root_fn, good.recurrent_fn, (70000,), np.uint8)
    with pytest.raises(zeroth.InvalidError, match="embedding_size = 70000"):
        zeroth.Search("tictactoe", big, trees=1)


def test_greedy_plays_the_best_valued_move(trained_run):
    """zeroth.Greedy: each move is one after which the net values the
    position worst for the opponent (a win counts as +1), its value that
    position's; one ply deeper still plays legal moves; bad arguments are
    refused, and the net stays open while a greedy player uses it."""
    net = zeroth.Net.load(trained_run, backend="ref", threads=1)
    g = zeroth.Game(net.game_spec)
    texts = ["......... X", "X...O.... X", "XX.OO.... X"]
    states = np.stack([g.from_text(t) for t in texts])
    actions, values = zeroth.Greedy(g, net, slots=3)(states)
    assert actions.dtype == np.int32 and values.dtype == np.float32
    assert actions[2] == 2 and values[2] == 1  # X wins at once in the top row
    mask = g.legal_mask(states)
    for i in range(3):
        best = -2.0
        for a in np.flatnonzero(mask[i]):
            child = states[i:i + 1].copy()
            g.step(child, np.array([a], np.int32))
            if g.players(child)[0] == zeroth.TERMINAL:
                v = float(g.returns(child)[0, g.players(states[i:i + 1])[0]])
            else:
                v = -float(net.forward(g.observe(child))[1][0])
            best = max(best, v)
        assert abs(values[i] - best) < 1e-5
    deeper, v1 = zeroth.Greedy(g, net, slots=3, plies=1)(states)
    assert all(mask[i, a] for i, a in enumerate(deeper)) and np.all(np.abs(v1) <= 1)
    assert deeper[2] == 2
    with pytest.raises(zeroth.InvalidError, match="plies"):
        zeroth.Greedy(g, net, slots=1, plies=2)
    gr = zeroth.Greedy(g, net, slots=2)
    with pytest.raises(zeroth.InvalidError, match="slot 2 does not exist"):
        gr(states[:1], slots=[2])
    with pytest.raises(zeroth.InvalidError, match="open search"):
        net.close()
    gr.close()
