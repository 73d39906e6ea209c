"""dcr_ratio and replication_score: a copier against a fresh sample, brute-force nearest neighbours, bad input."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from sklearn_icml.datasets import make_swiss_roll_2d
from sklearn_icml.metrics import dcr_ratio, replication_score


def _split(seed, n=500):
    X, _ = make_swiss_roll_2d(3 * n, random_state=seed)
    return X[:n], X[n:2 * n], X[2 * n:]


def _copier(train, n, seed, jitter=0.005):
    rng = np.random.RandomState(seed)
    return train[rng.randint(len(train), size=n)] + rng.normal(scale=jitter, size=(n, train.shape[1]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_copier_against_a_fresh_sample(seed):
    train, holdout, fresh = _split(seed)
    copier = _copier(train, 500, seed)
    assert dcr_ratio(copier, train, holdout) <= 0.3
    assert 0.8 <= dcr_ratio(fresh, train, holdout) <= 1.25
    assert replication_score(copier, train) > 0.5
    assert replication_score(fresh, train) < replication_score(copier, train) / 2


def test_against_brute_force_distances():
    rng = np.random.RandomState(0)
    train, holdout, synthetic = rng.normal(size=(60, 3)), rng.normal(size=(40, 3)), rng.normal(size=(30, 3)) * 2
    d_syn = np.sort(cdist(synthetic, train), axis=1)
    d_ho = cdist(holdout, train).min(axis=1)
    assert dcr_ratio(synthetic, train, holdout) == pytest.approx(np.median(d_syn[:, 0]) / np.median(d_ho))
    for ratio in (0.1, 1 / 3, 0.9):
        assert replication_score(synthetic, train, ratio=ratio) == np.mean(d_syn[:, 0] < ratio * d_syn[:, 1])


def test_exact_copies_and_degenerate_holdout():
    train = np.random.RandomState(0).normal(size=(20, 2))
    assert replication_score(train, train) == 1.0
    assert dcr_ratio(train, train, train[:5]) != dcr_ratio(train, train, train[:5])  # 0 / 0: nan
    assert dcr_ratio(train + 1.0, train, train[:5]) == np.inf
    # the caller's arrays are not modified
    before = train.copy()
    dcr_ratio(train + 1.0, train, train + 0.5)
    np.testing.assert_array_equal(train, before)


def test_bad_input():
    train = np.zeros((5, 2))
    with pytest.raises(ValueError, match="X_synthetic has 3 features but X_train has 2"):
        dcr_ratio(np.zeros((4, 3)), train, train)
    with pytest.raises(ValueError, match="X_holdout has 1 features"):
        dcr_ratio(train, train, np.zeros((4, 1)))
    with pytest.raises(ValueError, match="NaN"):
        replication_score(np.full((2, 2), np.nan), train)
    with pytest.raises(ValueError, match="minimum of 2"):
        replication_score(train, train[:1])
    with pytest.raises(ValueError, match="ratio"):
        replication_score(train, train, ratio=1.5)
