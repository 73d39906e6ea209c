"""private_bounds: the stated failure probability checked empirically (and its power shown on a planted
threshold), the threshold against a brute-force tail sum, the ledger, user-level sensitivity, the grids."""

import math

import numpy as np
import pytest
from scipy import stats

import sklearn_icml.privacy._bounds as bounds_module
from sklearn_icml.privacy import grid_histogram, private_bounds
from sklearn_icml.privacy._bounds import MAGNITUDE_EDGES, N_LINEAR


def _data(n=4000, seed=0):
    """Two features of different scales and signs, with sparse tails and a gap around zero."""
    rng = np.random.RandomState(seed)
    return np.column_stack([rng.normal(3.0, 1.0, n), rng.standard_t(3, n) * 20.0 - 5.0])


def _good_event(X, box):
    """Whether the release is consistent with the event the guarantee holds on (no empty bin passed, every bin
    of at least 2 t records passed, in both stages), checked from the data by plain numpy.

    Stage 1 (the records' largest magnitude over [2**j, 2**(j + 1))): the common radius M is the upper edge of a
    non-empty bin and every bin of at least 2 t_1 records lies below it (when no bin passed: no bin holds 2 t_1
    records). Stage 2 (32 equal bins of [-M, M] per feature): every bin of at least 2 t_2 records lies inside
    the box, and an edge inside (-M, M) is the edge of a non-empty bin.
    """
    t1, t2 = box.threshold
    M = box.radius
    peak = np.abs(X).max(axis=1)
    exps, counts = np.unique(np.floor(np.log2(peak)), return_counts=True)
    heavy_tops = 2.0 ** (exps[counts >= 2 * t1] + 1)
    if box.found:
        if not np.any((peak >= M / 2) & (peak < M)) or np.any(heavy_tops > M):
            return False
    elif len(heavy_tops):
        return False
    width = 2 * M / N_LINEAR
    for f in range(X.shape[1]):
        idx = np.clip(np.floor((np.clip(X[:, f], -M, M) + M) / width), 0, N_LINEAR - 1).astype(int)
        per_bin = np.bincount(idx, minlength=N_LINEAR)
        lo_bin = int(round((box.lower[f] + M) / width))
        hi_bin = int(round((box.upper[f] + M) / width)) - 1
        heavy = np.flatnonzero(per_bin >= 2 * t2)
        if len(heavy) and (heavy[0] < lo_bin or heavy[-1] > hi_bin):
            return False
        # an edge inside (-M, M) is the edge of a bin that passed, which must hold a record (an edge at +-M is
        # the radius: no bin passed, or the side widened over thinly spread records)
        if (box.lower[f] > -M and per_bin[lo_bin] == 0) or (box.upper[f] < M and per_bin[hi_bin] == 0):
            return False
    return True


def _failure_rate(X, beta, n_runs):
    return np.mean([not _good_event(X, private_bounds(X, 1.0, failure_probability=beta, random_state=seed))
                    for seed in range(n_runs)])


def test_the_failure_probability_holds_empirically_and_a_halved_threshold_is_caught(monkeypatch):
    X = _data()
    beta, n_runs = 0.5, 300
    rate = _failure_rate(X, beta, n_runs)
    # the bound is a union bound, so the rate is below beta; a one-sided binomial test at the 1e-3 level
    assert stats.binomtest(int(round(rate * n_runs)), n_runs, beta, alternative="greater").pvalue > 1e-3, rate
    # planted bug: the threshold halved (the noise tail not accounted for); the same check must fail
    real = bounds_module._threshold
    monkeypatch.setattr(bounds_module, "_threshold", lambda *args: max(1, real(*args) // 2))
    planted = _failure_rate(X, beta, 100)
    assert planted > beta, planted


def test_coverage_at_the_default_failure_probability():
    X = _data(20000)
    for seed in range(20):
        box = private_bounds(X, 1.0, random_state=seed)
        assert _good_event(X, box)
        assert box.found and np.all(box.lower < box.upper)
        inside = np.mean(np.all((X >= box.lower) & (X <= box.upper), axis=1))
        assert inside > 0.97, inside  # the t-distributed feature's sparse tails are clipped, the bulk is kept


def test_threshold_is_the_smallest_with_the_stated_tail_by_brute_force():
    for epsilon, sensitivity, n_tests, beta in [(0.5, 1, 599, 5e-4), (0.05, 2, 64, 5e-4), (2.0, 10, 320, 0.1)]:
        t = bounds_module._threshold(epsilon, sensitivity, n_tests, beta)
        a = math.exp(-epsilon / sensitivity)
        k = np.arange(0, 200000)
        pmf = (1 - a) / (1 + a) * a ** k  # P(K = k) for k >= 0; symmetric
        tail = 2 * pmf[::-1].cumsum()[::-1]  # tail[s] = P(|K| >= s) for s >= 1
        assert tail[t] <= beta / n_tests * (1 + 1e-9)
        assert t == 1 or tail[t - 1] > beta / n_tests


def test_ledger_adds_up_to_epsilon_with_user_level_sensitivity():
    X = _data(500)
    for m in (1, 16):
        box = private_bounds(X, 0.7, max_rows_per_user=m, random_state=0)
        assert math.fsum(e["epsilon"] for e in box.ledger) <= 0.7
        assert math.fsum(e["epsilon"] for e in box.ledger) == pytest.approx(0.7, rel=1e-12)
        # stage 1: a user's <= m records fall in <= m bins; stage 2: <= m bins per feature
        assert [e["sensitivity"] for e in box.ledger] == [m, m * X.shape[1]]
        assert all(e["scale"] == pytest.approx(e["sensitivity"] / e["epsilon"]) for e in box.ledger)
        assert all(e["mechanism"] == "geometric" and e["delta"] == 0.0 for e in box.ledger)


def test_the_noise_drawn_is_the_noise_in_the_ledger(monkeypatch):
    drawn = []
    real = bounds_module.geometric_mechanism

    def spy(value, **kw):
        drawn.append((np.shape(value), kw["sensitivity"], kw["epsilon"]))
        return real(value, **kw)

    monkeypatch.setattr(bounds_module, "geometric_mechanism", spy)
    X = _data(500)
    box = private_bounds(X, 0.6, max_rows_per_user=3, random_state=0)
    # stage 1: one histogram of 599 bins, sensitivity m; stage 2: one of 32 bins per feature, sensitivity m * d
    assert drawn == [((599,), 3, 0.3), ((2, N_LINEAR), 6, 0.3)]
    assert [(e["sensitivity"], e["epsilon"]) for e in box.ledger] == [(3.0, 0.3), (6.0, 0.3)]


def test_grids_are_public_and_additive():
    X = _data(1000)
    parts = grid_histogram(X[:300]) + grid_histogram(X[300:])
    np.testing.assert_array_equal(parts, grid_histogram(X))
    assert grid_histogram(X).sum() == len(X)
    assert len(MAGNITUDE_EDGES) == 600 and MAGNITUDE_EDGES[-1] == 2.0 ** 498 < 1e150
    counts = grid_histogram(X, radius=8.0)
    assert counts.shape == (2, N_LINEAR) and np.all(counts.sum(axis=1) == len(X))
    # values beyond the radius count in the outermost bins, values on an edge in the bin above it
    np.testing.assert_array_equal(grid_histogram([[-1e300], [1e300], [0.0]], radius=1.0)[0].nonzero()[0],
                                  [0, N_LINEAR // 2, N_LINEAR - 1])


def test_callable_counts_give_the_same_release():
    X = _data(3000)
    box = private_bounds(X, 1.0, random_state=3)
    via = private_bounds(lambda radius: grid_histogram(X, radius), 1.0, random_state=3)
    np.testing.assert_array_equal(box.lower, via.lower)
    np.testing.assert_array_equal(box.upper, via.upper)
    with pytest.raises(ValueError, match="first stage's counts must have shape"):
        private_bounds(lambda radius: np.zeros(3), 1.0)


def test_edges_are_grid_points_not_data_values():
    X = _data(3000)
    X[0] = [1234.5678, -987.654321]  # one person's unusual values
    for seed in range(5):
        box = private_bounds(X, 1.0, random_state=seed)
        M = box.radius
        assert M == 2.0 ** round(math.log2(M))
        edges = np.concatenate([box.lower, box.upper])
        np.testing.assert_array_equal(edges / (2 * M / N_LINEAR), np.round(edges / (2 * M / N_LINEAR)))
        assert not np.isin(edges, X).any()


def test_too_few_records_fall_back_to_radius_one():
    box = private_bounds(np.full((5, 2), 300.0), 0.1, random_state=0)
    assert not box.found and box.radius == 1.0
    assert np.all(box.lower >= -1.0) and np.all(box.upper <= 1.0)

