"""Noise that survives floating point: exact discrete samplers, the grid, extremes, the counter-based uniforms."""

import math

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.privacy import (
    gaussian_mechanism,
    gaussian_noise_scale,
    geometric_mechanism,
    laplace_mechanism,
    noisy_group_sums,
    private_quadtree_histogram,
)
from sklearn_icml.privacy._discrete import (
    CounterDraws,
    SecureRandomState,
    _bernoulli_exp_parts,
    _RandomStateDraws,
    discrete_gaussian,
    discrete_laplace,
    exponential_choice,
    noise_random_state,
)
from sklearn_icml.privacy._hashing import _bits_to_open_unit, _uniform01, hashed_bits

# ------------------------------------------------------------------------------------------------
# extremes: a noise scale float64 cannot carry is refused, never released as inf


@pytest.mark.parametrize("kwargs", [dict(sensitivity=1.0, epsilon=5e-324), dict(sensitivity=1e308, epsilon=1e-10),
                                    dict(sensitivity=5e-324, epsilon=1e300)])
def test_laplace_refuses_a_noise_scale_float64_cannot_carry(kwargs):
    with pytest.raises(ValueError, match=r"noise scale sensitivity / epsilon .* epsilon="):
        laplace_mechanism([1.0], random_state=0, **kwargs)


def test_gaussian_refuses_a_noise_scale_float64_cannot_carry():
    with pytest.raises(ValueError, match=r"noise scale .*sensitivity=1e\+308"):
        gaussian_mechanism([1.0], sensitivity=1e308, epsilon=1.0, delta=1e-5, random_state=0)
    with pytest.raises(ValueError, match="noise scale"):
        gaussian_noise_scale(1.0, 1e-5, 1e308)


@pytest.mark.parametrize("mechanism, extra", [(laplace_mechanism, dict(sensitivity=1.0)),
                                              (geometric_mechanism, dict()),
                                              (gaussian_mechanism, dict(sensitivity=1.0, delta=1e-6))])
@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_booleans_are_not_epsilons(mechanism, extra, flag):
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        mechanism([1.0], epsilon=flag, random_state=0, **extra)


def test_booleans_are_not_sensitivities():
    with pytest.raises(ValueError, match="'sensitivity' parameter"):
        laplace_mechanism([1.0], sensitivity=True, epsilon=1.0)


# ------------------------------------------------------------------------------------------------
# counter-based uniforms: the open interval (0, 1) at the extreme counter values


def test_counter_uniform_never_reaches_zero_or_one():
    extremes = np.array([0, 1, 1 << 11, (1 << 12) - 1, 1 << 12, (1 << 63), (1 << 64) - (1 << 12),
                         (1 << 64) - 1], dtype=np.uint64)
    u = _bits_to_open_unit(extremes)
    assert np.all(u > 0.0) and np.all(u < 1.0)
    assert u[0] == 2.0 ** -53 and u[-1] == 1.0 - 2.0 ** -53  # the two ends, half a step inside
    # the old mapping (top 53 bits plus one half, times 2**-53) rounds the largest word up to exactly 1.0
    assert ((np.uint64((1 << 64) - 1) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53 == 1.0
    # and the counter-based uniforms stay inside when the mixer is forced to its extreme words
    import sklearn_icml.privacy._hashing as hashing
    for word in (0, (1 << 64) - 1):
        forced = lambda x, w=word: np.full(np.shape(np.array(x, ndmin=1)), w, dtype=np.uint64)  # noqa: E731
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(hashing, "_mix64_np", forced)
            u = _uniform01(np.uint64(3), np.arange(4))
            assert np.all((u > 0) & (u < 1))


# ------------------------------------------------------------------------------------------------
# exact discrete samplers: their frequencies against the exact pmf (fixed seeds, chi-square)


def _chi2_pvalue(draws, support, pmf):
    """Chi-square p-value of integer ``draws`` against ``pmf`` on ``support``, the rest pooled in one tail bin."""
    counts = np.array([np.sum(draws == k) for k in support] + [np.sum(~np.isin(draws, support))], dtype=float)
    expected = np.append(pmf, max(1.0 - pmf.sum(), 0.0)) * len(draws)
    keep = expected > 5
    obs, exp = counts[keep], expected[keep]
    if expected[~keep].sum() > 0 or counts[~keep].sum() > 0:
        obs, exp = np.append(obs, counts[~keep].sum()), np.append(exp, expected[~keep].sum())
    exp = exp * obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize("t, s", [(3, 1), (7, 2), (1, 3)])
def test_discrete_laplace_matches_its_pmf(t, s):
    draws = discrete_laplace(t, s, 100_000, np.random.RandomState(0))
    alpha = math.exp(-s / t)
    support = np.arange(-40, 41)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(support)
    assert _chi2_pvalue(draws, support, pmf) > 1e-4


@pytest.mark.parametrize("S", [1, 5, 36])
def test_discrete_gaussian_matches_its_pmf(S):
    draws = discrete_gaussian(S, 100_000, np.random.RandomState(1))
    support = np.arange(-60, 61)
    weights = np.exp(-support.astype(float) ** 2 / (2 * S))
    assert _chi2_pvalue(draws, support, weights / weights.sum()) > 1e-4


def test_wide_discrete_gaussian_in_python_integers_has_the_normal_shape():
    sigma = (1 << 31) + 12345  # 2 S t**2 far beyond int64: the Python-integer path
    draws = discrete_gaussian(sigma * sigma, 20_000, np.random.RandomState(2))
    assert stats.kstest(draws / sigma, stats.norm.cdf).pvalue > 1e-3


@pytest.mark.parametrize("num, den", [(0, 1), (3, 10), (1, 1), (17, 10), (7, 3), (400, 100)])
def test_bernoulli_exp_is_exact(num, den):
    n = 200_000
    idx = np.arange(n)
    whole, rest = divmod(num, den)
    draw = _RandomStateDraws(np.random.RandomState(3))
    hits = _bernoulli_exp_parts(np.full(n, whole), np.full(n, rest), den, idx, draw).sum()
    p = math.exp(-num / den)
    assert stats.binomtest(int(hits), n, p).pvalue > 1e-4


def test_exponential_choice_has_the_exponential_mechanisms_probabilities():
    costs, sens, eps = np.array([0.0, 0.5, 1.0, 3.0]), 1.0, 1.3
    rng = np.random.RandomState(4)
    picks = np.array([exponential_choice(costs, sens, eps, rng)[0] for _ in range(4000)])
    grid = 2.0 ** -30
    w = np.exp(-eps * np.floor(costs / grid) * grid / (sens + grid))
    assert _chi2_pvalue(picks, np.arange(4), w / w.sum()) > 1e-4
    assert exponential_choice(costs, sens, eps, rng)[1] == sens + grid


# ------------------------------------------------------------------------------------------------
# the grid: every release lies on it, and the outputs a release can reach do not depend on its input


def _laplace_grid(scale):
    return 2.0 ** (math.floor(math.log2(scale)) - 30)  # the documented grid: 2**30 to 2**31 steps per scale


def _on_grid(values, grid):
    q = np.asarray(values) / grid
    return bool(np.all(q == np.round(q)))


@pytest.mark.parametrize("value", [0.1, 0.1 + 1e-12, 1234.56789, -7.3e-5])
def test_laplace_outputs_lie_on_the_grid_whatever_the_input(value):
    sens, eps = 1.0, 0.7
    out = laplace_mechanism(np.full(2000, value), sensitivity=sens, epsilon=eps, random_state=5)
    grid = _laplace_grid(sens / eps)
    assert _on_grid(out, grid)
    # the float mechanism this replaces fails the same check: value + float noise is off any common grid
    float_out = value + np.random.RandomState(5).laplace(0.0, sens / eps, size=2000)
    assert not _on_grid(float_out, grid)


def test_reachable_outputs_do_not_depend_on_the_input():
    """Two inputs 1e-12 apart (not a grid multiple): the released values are the same grid g Z for both, and the
    same seed gives outputs that differ by a multiple of the grid (here: not at all, the inputs round alike)."""
    sens, eps = 1.0, 1.0
    a = laplace_mechanism(np.full(500, 0.3), sensitivity=sens, epsilon=eps, random_state=6)
    b = laplace_mechanism(np.full(500, 0.3 + 1e-12), sensitivity=sens, epsilon=eps, random_state=6)
    grid = _laplace_grid(sens / eps)
    assert _on_grid(a, grid) and _on_grid(b, grid) and _on_grid(a - b, grid)
    c = laplace_mechanism(np.full(500, 0.3 + 5 * grid), sensitivity=sens, epsilon=eps, random_state=6)
    np.testing.assert_array_equal((c - a) / grid, 5.0)  # a shift by a grid multiple shifts every output by it


def test_gaussian_outputs_lie_on_a_grid_far_below_sigma():
    sens, eps, delta = 2.0, 0.8, 1e-6
    out = gaussian_mechanism(np.full(2000, 0.123456789), sensitivity=sens, epsilon=eps, delta=delta, random_state=7)
    sigma = gaussian_noise_scale(eps, delta, sens)
    grid = min(2.0 ** (math.floor(math.log2(sigma)) - 13), 2.0 ** (math.floor(math.log2(sens)) - 20))
    assert _on_grid(out, grid)
    assert np.std(out) == pytest.approx(sigma, rel=0.05)


def test_tree_counts_and_group_sums_lie_on_their_grids():
    X = np.random.RandomState(8).uniform(0, 1, size=(300, 2))
    hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=3, epsilon=1.0, threshold=10.0, random_state=0)
    assert _on_grid(hist.counts, _laplace_grid(3 / 1.0))
    counts, sums, _, ledger = noisy_group_sums(X, (X[:, 0] > 0.5).astype(int), 2, bounds=(0, 1), epsilon_count=0.5,
                                               epsilon_sum=0.5, random_state=0)
    assert _on_grid(counts, _laplace_grid(ledger[0]["scale"]))
    assert _on_grid(sums, _laplace_grid(1.0 / 0.5))  # the grid follows the scale before the rounding slack


def test_discrete_gaussian_calibration_meets_delta_exactly():
    """The hockey-stick divergence of the discrete Gaussian (pmf summed exactly in log space) at the calibrated
    sigma stays below delta for an integer query shifted by its sensitivity."""
    from sklearn_icml.privacy._mechanisms import grid_gaussian

    for eps, delta in ((1.0, 1e-6), (0.3, 1e-5), (4.0, 1e-9)):
        noise = grid_gaussian(1.0, eps, delta, n_rounded=1, integer=True)
        s = round(noise.scale / noise.grid)
        shift = round(1.0 / noise.grid)
        y = np.arange(-60 * s, 60 * s + shift + 1, dtype=float)
        log_p = -y ** 2 / (2.0 * s * s)
        log_p -= np.logaddexp.reduce(log_p)
        log_q = -(y - shift) ** 2 / (2.0 * s * s)
        log_q -= np.logaddexp.reduce(log_q)
        hockey = np.sum(np.maximum(np.exp(log_q) - np.exp(eps + log_p), 0.0))
        assert hockey <= delta, (eps, delta, hockey)


# ------------------------------------------------------------------------------------------------
# sources of the uniform integers


def test_secure_source_is_the_default_and_draws_exact_uniform_integers():
    rng = noise_random_state(None)
    assert isinstance(rng, SecureRandomState)
    draws = rng.secure_integers(6, 60_000)
    assert draws.min() == 0 and draws.max() == 5
    assert stats.chisquare(np.bincount(draws, minlength=6)).pvalue > 1e-6
    big = rng.secure_integers(np.array([3, 2 ** 62 + 1]), 2)
    assert 0 <= big[0] < 3 and 0 <= big[1] <= 2 ** 62
    # two unseeded releases differ; two seeded ones agree
    assert not np.array_equal(laplace_mechanism(np.zeros(5), sensitivity=1.0, epsilon=1.0),
                              laplace_mechanism(np.zeros(5), sensitivity=1.0, epsilon=1.0))
    np.testing.assert_array_equal(laplace_mechanism(np.zeros(5), sensitivity=1.0, epsilon=1.0, random_state=3),
                                  laplace_mechanism(np.zeros(5), sensitivity=1.0, epsilon=1.0, random_state=3))


def test_counter_draws_give_a_cell_the_same_noise_whoever_is_read_beside_it():
    keys = hashed_bits(np.uint64(9), np.arange(50))
    alone = discrete_laplace(1000, 1, 1, CounterDraws(keys[7:8]))
    together = discrete_laplace(1000, 1, 50, CounterDraws(keys))
    assert alone[0] == together[7]
