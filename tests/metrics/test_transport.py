"""wasserstein1 against independent derivations: 1-D quantiles (scipy) and the assignment problem."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.stats import wasserstein_distance

from sklearn_icml.metrics import wasserstein1


def test_one_dimension_equals_scipy():
    rng = np.random.RandomState(0)
    x, y = rng.normal(size=70), rng.exponential(size=50)
    assert wasserstein1(x[:, None], y[:, None]) == pytest.approx(wasserstein_distance(x, y), rel=1e-9)


def test_equal_sizes_equal_the_optimal_assignment():
    rng = np.random.RandomState(1)
    X, Y = rng.normal(size=(40, 3)), rng.normal(1.0, size=(40, 3))
    rows, cols = linear_sum_assignment(cdist(X, Y))
    assert wasserstein1(X, Y) == pytest.approx(cdist(X, Y)[rows, cols].mean(), rel=1e-9)


def test_subsampling_and_bad_input():
    rng = np.random.RandomState(2)
    X = rng.normal(size=(300, 2))
    # two subsamples of 50 rows (X's then Y's, drawn in that order from random_state) matched exactly
    rng = np.random.RandomState(0)
    A, B = X[rng.choice(300, 50, replace=False)], X[rng.choice(300, 50, replace=False)]
    rows, cols = linear_sum_assignment(cdist(A, B))
    sub = wasserstein1(X, X, max_samples=50, random_state=0)
    assert sub == pytest.approx(cdist(A, B)[rows, cols].mean(), rel=1e-9)
    assert sub > 0.05  # two different subsamples of the same rows are not the same sample
    assert wasserstein1(X, X, max_samples=None) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="features"):
        wasserstein1(X, X[:, :1])
    with pytest.raises(ValueError):
        wasserstein1(np.array([[np.nan, 1.0]]), X)
