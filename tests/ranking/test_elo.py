"""EloRater: the online update, streaming, order dependence and the shared data contract."""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.datasets import make_arena_battles
from sklearn_icml.ranking import BradleyTerryRanker, EloRater


def test_update_rule_by_hand():
    X = [["a", "b"], ["b", "c"], ["c", "a"]]
    y = ["model_a", "tie", "model_a"]
    elo = EloRater(k=32).fit(X, y)
    r = {"a": 1000.0, "b": 1000.0, "c": 1000.0}
    for (i, j), s in zip(X, [1.0, 0.5, 1.0]):
        e = 1 / (1 + 10 ** ((r[j] - r[i]) / 400))
        r[i] += 32 * (s - e)
        r[j] -= 32 * (s - e)
    np.testing.assert_allclose(elo.ratings_, [r["a"], r["b"], r["c"]])
    assert elo.items_.tolist() == ["a", "b", "c"] and elo.n_battles_.tolist() == [2, 2, 2]
    p = elo.predict_proba([["a", "b"]])[0, 0]  # classes_ = [model_a, model_b]
    assert p == pytest.approx(1 / (1 + 10 ** ((r["b"] - r["a"]) / 400)))


def test_partial_fit_continues_the_stream_and_order_matters():
    X, y = make_arena_battles(n_battles=3000, n_competitors=6, random_state=0)
    full = EloRater().fit(X, y)
    stream = EloRater()
    for chunk in np.array_split(np.arange(len(y)), 7):
        stream.partial_fit(X[chunk], y[chunk])
    order = np.argsort([stream.items_.tolist().index(v) for v in full.items_])
    np.testing.assert_allclose(stream.ratings_[order], full.ratings_, atol=1e-9)
    reversed_ = EloRater().fit(X[::-1], y[::-1])
    assert np.max(np.abs(reversed_.ratings_ - full.ratings_)) > 0.1
    # the Bradley-Terry fit does not depend on the order
    bt = BradleyTerryRanker()
    np.testing.assert_allclose(bt.fit(X[::-1], y[::-1]).ratings_, bt.fit(X, y).ratings_, atol=1e-9)


def test_partial_fit_with_new_competitors_and_classes():
    elo = EloRater().partial_fit(np.array([["a", "b"]]), np.array([1]), classes=[0, 1])
    assert elo.classes_.tolist() == [0, 1] and elo.first_wins_label_ == 1
    elo.partial_fit(np.array([["c", "a"], ["b", "c"]]), np.array([0, 1]))
    assert elo.items_.tolist() == ["a", "b", "c"] and len(elo.ratings_) == 3
    with pytest.raises(ValueError, match="neither classes_"):
        elo.partial_fit(np.array([["a", "b"]]), np.array([5]))
    with pytest.raises(ValueError, match="1 class"):
        EloRater().partial_fit(np.array([["a", "b"]]), np.array([1]))
    with pytest.raises(ValueError, match="X has 3 features"):
        elo.partial_fit(np.array([["a", "b", 0.0]], dtype=object), np.array([1]))


def test_ties_drop_skips_them_and_ratings_converge_to_the_same_order_as_bt():
    X, y = make_arena_battles(n_battles=20000, n_competitors=6, tie_proba=0.2, random_state=1)
    half, drop = EloRater().fit(X, y), EloRater(ties="drop").fit(X, y)
    decisive = y != "tie"
    np.testing.assert_allclose(drop.ratings_, EloRater().fit(X[decisive], y[decisive]).ratings_)
    assert not np.allclose(half.ratings_, drop.ratings_)
    bt = BradleyTerryRanker().fit(X, y)
    # online Elo with K=4 is noisy but agrees with the Bradley-Terry ranking (paper Section 4)
    assert stats.spearmanr(half.ratings_, bt.ratings_).statistic >= 0.9
    assert np.max(np.abs(half.ratings_ - bt.ratings_)) < 60


def test_unknown_competitors():
    elo = EloRater().fit([["a", "b"], ["b", "a"]], ["model_a", "model_a"])
    np.testing.assert_allclose(elo.predict_proba([["zz", "yy"]]), [[0.5, 0.5]])
    with pytest.warns(UserWarning, match="not seen in fit"):
        elo.set_params(handle_unknown="warn").predict([["zz", "a"]])
    with pytest.raises(ValueError, match="zz"):
        elo.set_params(handle_unknown="error").predict([["zz", "a"]])


def test_covariate_columns_are_accepted_but_unused():
    X, y = make_arena_battles(n_battles=500, n_competitors=4, n_covariates=2, random_state=0)
    np.testing.assert_allclose(EloRater().fit(X, y).ratings_, EloRater().fit(X[:, :2], y).ratings_)


def test_self_battles_are_refused_and_a_refused_batch_changes_nothing():
    with pytest.raises(ValueError, match=r"EloRater: .*1 row\(s\) of X pit a competitor against itself \(row\(s\) 1"):
        EloRater().fit([["a", "b"], ["b", "b"]], ["model_a", "model_b"])
    elo = EloRater().fit([["a", "b"], ["b", "c"]], ["model_a", "model_b"])
    before = (elo.items_.tolist(), elo.ratings_.copy(), elo.n_battles_.copy())
    # a new competitor against itself, after a valid battle of the same batch: nothing of the batch is applied
    with pytest.raises(ValueError, match=r"row\(s\) 1: e\.g\. 'd' against 'd'"):
        elo.partial_fit([["a", "c"], ["d", "d"]], ["model_a", "model_a"])
    assert elo.items_.tolist() == before[0]
    np.testing.assert_array_equal(elo.ratings_, before[1])
    np.testing.assert_array_equal(elo.n_battles_, before[2])
