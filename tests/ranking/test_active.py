"""ActivePairSampler: the Eq. 9 rule, uniform sampling, the probabilities handed to the ranker."""

import numpy as np
import pytest

from sklearn_icml.ranking import ActivePairSampler, BradleyTerryRanker


def _eq9(n, s, q, prior=1.0):
    nt = n + prior
    mean, second = (s + prior / 2) / nt, (q + prior / 2) / nt
    var = second - mean ** 2
    return np.sqrt(var / nt) - np.sqrt(var / (nt + 1))


def test_eq9_probabilities_by_hand():
    X = np.array([["a", "b"]] * 6 + [["c", "a"]] * 2 + [["b", "c"]])
    y = np.array(["model_a"] * 3 + ["model_b"] * 3 + ["tie", "model_a", "model_a"])
    sampler = ActivePairSampler(items=["a", "b", "c", "d"], uniform_mix=0.0).fit(X, y)
    pairs, proba = sampler.pair_proba()
    assert pairs.tolist() == [["a", "b"], ["a", "c"], ["a", "d"], ["b", "c"], ["b", "d"], ["c", "d"]]
    # (a, b): 3 wins of a of 6; (a, c): c-a tie and c beat a -> for a: 0.5, 0; (b, c): b won
    gains = np.array([_eq9(6, 3, 3), _eq9(2, 0.5, 0.25), _eq9(0, 0, 0), _eq9(1, 1, 1), _eq9(0, 0, 0),
                      _eq9(0, 0, 0)])
    np.testing.assert_allclose(proba, gains / gains.sum())
    assert proba[2] == proba.max()  # never-compared pairs come first
    assert sampler.counts_[0, 1] == 6 and sampler.counts_[1, 0] == 0


def test_uniform_rule_and_uniform_mix():
    X = np.array([["a", "b"]] * 50)
    y = np.array(["model_a"] * 50)
    uniform = ActivePairSampler("uniform", items=["a", "b", "c"]).fit(X, y)
    np.testing.assert_allclose(uniform.pair_proba()[1], np.full(3, 1 / 3))
    pure = ActivePairSampler(items=["a", "b", "c"], uniform_mix=0.0).fit(X, y).pair_proba()[1]
    mixed = ActivePairSampler(items=["a", "b", "c"], uniform_mix=0.3).fit(X, y).pair_proba()[1]
    np.testing.assert_allclose(mixed, 0.7 * pure + 0.1)
    assert mixed.min() >= 0.1 and pure.min() < 0.1


def test_sample_is_reproducible_and_returns_its_probabilities():
    sampler = ActivePairSampler(items=list("abcde"), random_state=0).fit()
    X1, p1 = sampler.sample(500)
    X2, p2 = ActivePairSampler(items=list("abcde"), random_state=0).fit().sample(500)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_allclose(p1, sampler.sampling_proba(X1))
    assert np.all(X1[:, 0] != X1[:, 1])
    assert 0.4 < np.mean(X1[:, 0] < X1[:, 1]) < 0.6  # random order within the pair
    np.testing.assert_allclose(p1, 0.1)  # no votes yet: every pair alike


def test_partial_fit_adds_competitors_and_votes():
    sampler = ActivePairSampler().fit(np.array([[0, 1], [1, 0]]), np.array([1, 0]))
    sampler.partial_fit(np.array([[2, 0], [1, 2]]), np.array([1, 1]))
    assert sampler.items_.tolist() == [0, 1, 2]
    assert sampler.counts_[0, 1] == 2 and sampler.counts_[0, 2] == 1 and sampler.counts_[1, 2] == 1
    assert sampler.pair_proba()[1].shape == (3,)
    with pytest.raises(ValueError, match="itself"):
        sampler.partial_fit(np.array([[1, 1]]), np.array([1]))
    with pytest.raises(ValueError, match="not among the sampler's pairs"):
        sampler.sampling_proba(np.array([[0, 7]]))
    with pytest.raises(ValueError, match="roster"):
        ActivePairSampler().fit()
    with pytest.raises(ValueError, match="rule"):
        ActivePairSampler(rule="thompson").fit(np.array([[0, 1]]), np.array([1]))
    with pytest.raises(AttributeError, match="not fitted"):
        ActivePairSampler().pair_proba()


def _votes_to_width(rule, seed, M=6, target=0.25, batch=50):
    rng = np.random.RandomState(seed)
    xi = np.linspace(-1.5, 1.5, M)
    xi[:3] = [0.0, 0.05, 0.1]  # three close competitors: high-variance pairs
    sampler = ActivePairSampler(rule, items=np.arange(M), random_state=seed).fit()
    iu = np.triu_indices(M, 1)
    for step in range(1, 400):
        X, _ = sampler.sample(batch)
        X = X.astype(int)
        y = (rng.rand(batch) < 1 / (1 + np.exp(-(xi[X[:, 0]] - xi[X[:, 1]])))).astype(int)
        sampler.partial_fit(X, y)
        n, s = sampler.counts_[iu], sampler.outcome_sum_[iu]
        if n.min() > 1:
            theta = s / n
            if np.max(2 * 1.96 * np.sqrt(np.clip(theta * (1 - theta), 0.01, None) / n)) <= target:
                return step * batch
    return np.inf


def test_active_sampling_needs_fewer_votes_for_the_win_matrix_width():
    active = np.mean([_votes_to_width("ci_reduction", s) for s in range(4)])
    uniform = np.mean([_votes_to_width("uniform", s) for s in range(4)])
    assert active < uniform


def test_reweighted_fit_with_the_sampler_probabilities():
    rng = np.random.RandomState(0)
    xi = np.array([0.0, 0.2, 1.0, -1.0])
    sampler = ActivePairSampler(items=np.arange(4), uniform_mix=0.2, random_state=0).fit()
    Xs, ys, ps = [], [], []
    for _ in range(60):
        X, p = sampler.sample(100)
        X = X.astype(int)
        y = (rng.rand(100) < 1 / (1 + np.exp(-(xi[X[:, 0]] - xi[X[:, 1]])))).astype(int)
        sampler.partial_fit(X, y)
        Xs.append(X), ys.append(y), ps.append(p)
    X, y, p = np.vstack(Xs), np.concatenate(ys), np.concatenate(ps)
    r = BradleyTerryRanker().fit(X, y, sampling_proba=p)
    se = np.sqrt(np.diag(r.covariance_))
    assert np.all(np.abs(r.scores_ - (xi - xi.mean())) < 4 * se)


def test_default_mix_bounds_every_pair_probability_away_from_zero():
    # a settled pair (10^4 one-sided votes) gets almost no probability under the pure rule; the default
    # uniform_mix keeps it at 0.1 / n_pairs at least, which bounds the inverse-probability weights
    X = np.array([["a", "b"]] * 10000 + [["b", "c"]])
    y = np.array(["model_a"] * 10001)
    pure = ActivePairSampler(items=["a", "b", "c"], uniform_mix=0.0).fit(X, y).pair_proba()[1]
    default = ActivePairSampler(items=["a", "b", "c"]).fit(X, y).pair_proba()[1]
    assert ActivePairSampler().uniform_mix == 0.1
    assert pure[0] < 0.01
    assert default.min() >= 0.1 / 3 - 1e-12
