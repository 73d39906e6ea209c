"""g_optimal_design: Kiefer-Wolfowitz G-optimal designs over finite sets of vectors."""

import numpy as np
import pytest

from sklearn_icml.bandits import GLMDuelingEnv, g_optimal_design
from sklearn_icml.bandits._action_set import ActionSet
from sklearn_icml.bandits._design import leverages


@pytest.mark.parametrize("n, d, seed", [(50, 3, 0), (2000, 5, 1), (500, 8, 2)])
def test_max_leverage_is_at_most_d_times_1_01(n, d, seed):
    # the bar: the design's largest leverage phi^T A(pi)^{-1} phi is at most d (1 + 1e-2)
    features = np.random.RandomState(seed).standard_normal((n, d)) * np.linspace(0.2, 3.0, d)
    weights, max_lev = g_optimal_design(features, tol=1e-2)
    assert weights.min() >= 0 and np.isclose(weights.sum(), 1.0)
    assert max_lev <= d * (1 + 1e-2)
    np.testing.assert_allclose(leverages(features, weights).max(), max_lev)
    # Kiefer-Wolfowitz: no design does better than d, and the uniform design is worse here
    assert max_lev >= d - 1e-9
    assert leverages(features, np.full(n, 1 / n)).max() > max_lev


def test_pair_features_of_the_hard_instance():
    env = GLMDuelingEnv.hard_instance(d=4, random_state=0)
    features, pairs, group = ActionSet(env.pair_features).distinct_pairs()
    # the 2^d good-versus-bad feature vectors (v, 1), each carried by the 2^d bad items
    assert features.shape == (16, 5) and len(pairs) == 16 * 16
    assert np.bincount(group).tolist() == [16] * 16
    weights, max_lev = g_optimal_design(features, tol=1e-3)
    assert max_lev <= 5 * (1 + 1e-3)
    # by symmetry the uniform design over the hypercube is optimal: leverage exactly d + 1 everywhere
    np.testing.assert_allclose(leverages(features, np.full(16, 1 / 16)), 5.0)


def test_rank_deficient_features_use_their_span():
    rng = np.random.RandomState(0)
    features = rng.standard_normal((300, 2)) @ rng.standard_normal((2, 4))  # rank 2 in R^4
    features[:10] = 0.0
    weights, max_lev = g_optimal_design(features, tol=1e-2)
    assert max_lev <= 2 * (1 + 1e-2)
    assert np.all(weights[:10] == 0)


def test_errors():
    with pytest.raises(ValueError, match="zero"):
        g_optimal_design(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="2-D"):
        g_optimal_design(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        g_optimal_design(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="tol"):
        g_optimal_design(np.eye(2), tol=0)
