"""The privacy toolkit: noise scales, histograms, sums, bookkeeping, and an empirical audit."""

import math

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.privacy import (
    Accountant,
    ContinualQuadtreeHistogram,
    gaussian_delta,
    gaussian_mechanism,
    gaussian_noise_scale,
    geometric_mechanism,
    laplace_mechanism,
    ledger_entry,
    noisy_group_sums,
    olh_parameters,
    private_quadtree_histogram,
)
from sklearn_icml.utils._cells import pack_keys as _keys
from sklearn_icml.utils._cells import unit_cells

# ------------------------------------------------------------------------------------------------
# mechanisms

def test_laplace_noise_has_scale_sensitivity_over_epsilon():
    noise = laplace_mechanism(np.zeros(40000), sensitivity=2.0, epsilon=0.5, random_state=0)
    assert stats.kstest(noise, stats.laplace(scale=4.0).cdf).pvalue > 1e-3
    assert np.mean(np.abs(noise)) == pytest.approx(4.0, rel=0.03)
    assert isinstance(laplace_mechanism(3.0, sensitivity=1.0, epsilon=1.0, random_state=0), float)


def test_geometric_noise_is_two_sided_geometric():
    eps, sens = 0.7, 2
    out = geometric_mechanism(np.full(50000, 10), sensitivity=sens, epsilon=eps, random_state=1) - 10
    assert out.dtype == np.int64
    alpha = math.exp(-eps / sens)
    assert np.mean(out == 0) == pytest.approx((1 - alpha) / (1 + alpha), abs=0.01)
    assert np.var(out) == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.05)
    with pytest.raises(ValueError, match="integer"):
        geometric_mechanism([0.5], epsilon=1.0)


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-5), (4.0, 1e-9)])
def test_gaussian_scale_is_the_tight_analytic_one(epsilon, delta):
    sigma = gaussian_noise_scale(epsilon, delta)
    assert gaussian_delta(sigma, epsilon) <= delta
    assert gaussian_delta(sigma * 0.999, epsilon) > delta  # any smaller sigma breaks (epsilon, delta)
    assert gaussian_noise_scale(epsilon, delta, 7.0) == pytest.approx(7.0 * sigma)
    if epsilon < 1:  # valid range of the classic bound, which is looser
        assert sigma < math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def test_gaussian_mechanism_noise_std():
    noise = gaussian_mechanism(np.zeros(40000), sensitivity=3.0, epsilon=1.0, delta=1e-6, random_state=2)
    assert np.std(noise) == pytest.approx(gaussian_noise_scale(1.0, 1e-6, 3.0), rel=0.02)


@pytest.mark.parametrize("bad", [dict(epsilon=0.0), dict(epsilon=-1.0), dict(sensitivity=0.0)])
def test_mechanisms_reject_bad_budgets(bad):
    kwargs = dict(sensitivity=1.0, epsilon=1.0) | bad
    with pytest.raises(ValueError, match="epsilon|sensitivity"):
        laplace_mechanism([1.0], **kwargs)


# ------------------------------------------------------------------------------------------------
# hierarchical histogram

def _true_counts(X, bounds, n_levels, hist):
    lower, upper = bounds
    U = np.clip((X - lower) / (upper - lower), 0, 1)
    Q = unit_cells(U, n_levels)
    out = np.zeros(len(hist.levels))
    for level in np.unique(hist.levels):
        sel = hist.levels == level
        point_keys = _keys(Q >> (n_levels - level), level)
        out[sel] = [np.sum(point_keys == k) for k in _keys(hist.cells[sel], level)]
    return out


def test_central_tree_noise_is_laplace_with_scale_levels_over_epsilon():
    X = np.random.RandomState(0).normal(0.3, 0.1, size=(400, 2))
    n_levels, eps = 3, 0.6
    residuals = []
    for seed in range(150):
        hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=n_levels, epsilon=eps, threshold=25.0,
                                          random_state=seed)
        residuals.append(hist.counts - _true_counts(X, (0.0, 1.0), n_levels, hist))
    residuals = np.concatenate(residuals)
    scale = n_levels / eps
    assert stats.kstest(residuals, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert hist.noise_std == pytest.approx(math.sqrt(2) * scale)


def test_tree_is_pruned_top_down_at_the_threshold():
    X = np.random.RandomState(1).normal(0.25, 0.05, size=(3000, 2))
    hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=5, epsilon=1.0, threshold=50.0, random_state=0)
    np.testing.assert_array_equal(hist.heavy, hist.counts >= 50.0)
    for level in range(2, 6):
        child = hist.levels == level
        parents = hist.heavy & (hist.levels == level - 1)
        released_parent_keys = set(_keys(hist.cells[parents], level - 1))
        assert set(_keys(hist.cells[child] >> 1, level - 1)) <= released_parent_keys
        # every child of a heavy parent is released (empty cells included)
        assert child.sum() == 4 * parents.sum()
    # the far corner is never examined below level 1
    assert not np.any((hist.levels > 1) & (hist.cells[:, 0] >= 2 ** (hist.levels - 1)))
    frontier = hist.frontier()
    assert frontier.any() and np.all(hist.heavy[frontier])


def test_local_model_counts_are_unbiased_with_the_stated_noise():
    rng = np.random.RandomState(2)
    X = np.vstack([np.full((2000, 2), 0.1), rng.uniform(0, 0.5, size=(2000, 2))])  # all in the cell [0, .5)^2
    full, empty = [], []
    for seed in range(40):
        hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=2, epsilon=2.0, threshold=np.inf,
                                          model="local", random_state=seed)
        level1 = np.flatnonzero(hist.levels == 1)
        corner = hist.cells[level1].sum(1) == 0
        full.append(hist.counts[level1][corner][0])
        empty.extend(hist.counts[level1][~corner])
    # unbiased where there are records and where there are none
    assert abs(np.mean(full) - 4000) < 4 * np.std(full) / math.sqrt(len(full))
    assert abs(np.mean(empty)) < 4 * hist.noise_std / math.sqrt(len(empty))
    # an empty cell's estimate has the stated standard deviation
    assert np.std(empty) == pytest.approx(hist.noise_std, rel=0.2)
    g, p = olh_parameters(2.0)
    assert g == 8 and p == pytest.approx(math.exp(2) / (math.exp(2) + 7))


def test_continual_counts_use_the_binary_tree_noise():
    rng = np.random.RandomState(3)
    stream = ContinualQuadtreeHistogram(2, n_levels=2, max_steps=8, epsilon=1.0, seed=11)
    assert stream.count_scale == pytest.approx(3 * 4 / 1.0)  # (levels 0..2) * (log2(8) + 1) / epsilon
    total = 0
    for _step in range(7):
        batch = rng.uniform(0, 1, size=(100, 2))
        total += len(batch)
        stream.add_step(batch)
    key = np.zeros(1, dtype=np.int64)
    first = stream.counts(0, key)
    np.testing.assert_array_equal(first, stream.counts(0, key))  # the same noise when read again
    assert stream.prefix_noise_std() == pytest.approx(math.sqrt(2 * 3) * stream.count_scale)  # 7 = 111b
    # noise across many cells has the stated spread
    keys = np.arange(1 << 12, dtype=np.int64) + (1 << 20)  # cells far outside the grid: true count 0
    assert np.std(stream.counts(1, keys)) == pytest.approx(stream.prefix_noise_std(), rel=0.1)
    assert abs(first[0] - total) < 6 * stream.prefix_noise_std()
    stream.add_step(rng.uniform(0, 1, size=(5, 2)))
    with pytest.raises(ValueError, match="max_steps"):
        stream.add_step(rng.uniform(0, 1, size=(5, 2)))


# ------------------------------------------------------------------------------------------------
# noisy sums

@pytest.mark.parametrize("model", ["central", "local"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_group_sums_sensitivity_and_noise(model, delta):
    X = np.random.RandomState(4).uniform(-3, 5, size=(200, 3))
    groups = (X[:, 0] > 1).astype(int)
    half = np.array([4.0, 4.0, 4.0])
    counts, sums, center, ledger = noisy_group_sums(X, groups, 2, bounds=(-3, 5), epsilon_count=0.4,
                                                    epsilon_sum=0.6, delta=delta, model=model, random_state=0)
    np.testing.assert_allclose(center, 1.0)
    factor = 1.0 if model == "central" else 2.0
    count_entry, sum_entry = ledger
    assert count_entry["sensitivity"] == factor and count_entry["scale"] == pytest.approx(factor / 0.4)
    if delta:
        l2 = np.linalg.norm(half) * factor  # local: same-group records at opposite corners differ by 2h
        # the sensitivity on the noise's grid: the rounding adds far less than 1e-5 of it
        assert l2 <= sum_entry["sensitivity"] == pytest.approx(l2, rel=1e-5)
        assert sum_entry["scale"] >= gaussian_noise_scale(0.6, delta, sum_entry["sensitivity"])
        assert sum_entry["scale"] == pytest.approx(gaussian_noise_scale(0.6, delta, l2), rel=1e-3)
    else:
        assert sum_entry["sensitivity"] == pytest.approx(half.sum() * factor)
        assert sum_entry["scale"] == pytest.approx(half.sum() * factor / 0.6)
    assert sum(e["epsilon"] for e in ledger) == pytest.approx(1.0)
    # the released noise has that spread (central model: one draw per coordinate)
    if model == "central":
        true_sums = np.array([(X[groups == g] - center).sum(0) for g in range(2)])
        res = np.concatenate([
            (noisy_group_sums(X, groups, 2, bounds=(-3, 5), epsilon_count=0.4, epsilon_sum=0.6, delta=delta,
                              random_state=s)[1] - true_sums).ravel() for s in range(400)])
        expected = sum_entry["scale"] * (1.0 if delta else math.sqrt(2))
        assert np.std(res) == pytest.approx(expected, rel=0.08)


def test_group_sums_clip_to_bounds_and_check_groups():
    X = np.array([[100.0, -100.0]])
    _, sums, center, _ = noisy_group_sums(X, [0], 1, bounds=(-1, 1), epsilon_count=1e6, epsilon_sum=1e6,
                                          random_state=0)
    np.testing.assert_allclose(sums[0], [1.0, -1.0], atol=1e-3)
    with pytest.raises(ValueError, match="groups must lie"):
        noisy_group_sums(X, [3], 2, bounds=(-1, 1), epsilon_count=1.0, epsilon_sum=1.0)


# ------------------------------------------------------------------------------------------------
# bookkeeping

def test_accountant_composes_and_enforces_caps():
    acc = Accountant(epsilon=2.0, delta=1e-5)
    acc.spend(0.5, 1e-6, label="a").spend(1.0)
    assert acc.total == (1.5, 1e-6)
    assert acc.remaining[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="over the cap"):
        acc.spend(0.6)
    assert acc.total == (1.5, 1e-6)  # a refused spend records nothing
    with pytest.raises(ValueError, match="fitted private estimator"):
        acc.add(object())
    with pytest.raises(ValueError, match="mechanism"):
        ledger_entry("x", "bogus", epsilon=1.0, sensitivity=1.0, scale=1.0)


# ------------------------------------------------------------------------------------------------
# empirical audit of the histogram release on neighbouring datasets

def _audit_epsilon(hits_d, hits_d1, n, alpha=0.05):
    """Lower confidence bound on epsilon from an event's frequency under two neighbouring datasets.

    Clopper-Pearson bounds at level alpha/2 each (Bonferroni): with probability >= 1 - alpha, the true
    epsilon is at least the returned value (for the event and its complement, whichever is larger).
    """
    def lo(k):
        return stats.beta.ppf(alpha / 4, k, n - k + 1) if k > 0 else 0.0

    def hi(k):
        return stats.beta.ppf(1 - alpha / 4, k + 1, n - k) if k < n else 1.0

    bounds = []
    for a, b in ((hits_d1, hits_d), (n - hits_d, n - hits_d1)):
        if lo(a) > 0:
            bounds.append(math.log(lo(a) / hi(b)))
    return max(bounds + [0.0])


def _corner_statistic(X, epsilon, seeds, lie=1.0):
    # the level-1 cell at the corner (1, 1): its noisy count is the distinguishing statistic
    out = []
    for seed in seeds:
        hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=2, epsilon=epsilon * lie, threshold=1e9,
                                          random_state=seed)
        corner = (hist.levels == 1) & (hist.cells[:, 0] == 1) & (hist.cells[:, 1] == 1)
        out.append(hist.counts[corner][0])
    return np.asarray(out)


def test_audit_histogram_on_neighbouring_datasets():
    """Neighbours: one record added (the DP definition: epsilon) and one record changed (2 epsilon)."""
    epsilon, n_runs = 1.0, 1000
    D = np.random.RandomState(5).uniform(0.0, 0.4, size=(50, 2))
    added = np.vstack([D, [[0.9, 0.9]]])
    changed = D.copy()
    changed[0] = [0.9, 0.9]
    t_d = _corner_statistic(D, epsilon, range(n_runs))
    for D1, allowed in ((added, epsilon), (changed, 2 * epsilon)):
        t_d1 = _corner_statistic(D1, epsilon, range(n_runs, 2 * n_runs))
        # the most telling event for a unit shift of a Laplace count is "count >= 1"
        eps_hat = _audit_epsilon(int(np.sum(t_d >= 1.0)), int(np.sum(t_d1 >= 1.0)), n_runs)
        assert eps_hat <= allowed
    # the audit has power: a mechanism that secretly uses 20x the budget is caught by the same test
    broken_d = _corner_statistic(D, epsilon, range(n_runs), lie=20.0)
    broken_d1 = _corner_statistic(added, epsilon, range(n_runs, 2 * n_runs), lie=20.0)
    broken = _audit_epsilon(int(np.sum(broken_d >= 0.5)), int(np.sum(broken_d1 >= 0.5)), n_runs)
    assert broken > 2 * epsilon
