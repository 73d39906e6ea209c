"""Every public function and class of sklearn_icml.privacy refuses bad input with a ValueError naming it.

NaN, infinite values, epsilon <= 0 and inverted or infinite bounds are refused everywhere; the
large-epsilon paths work up to epsilon = 1e12 (or refuse clearly, as the geometric mechanism does
for counts beyond int64).
"""

import math
import re

import numpy as np
import pytest

import sklearn_icml.privacy as privacy
from sklearn_icml.privacy import (
    Accountant,
    ContinualQuadtreeHistogram,
    QuadtreeHistogram,
    add_noise,
    exponential_choice,
    gaussian_delta,
    gaussian_mechanism,
    gaussian_noise_scale,
    gaussian_on_grid,
    geometric_mechanism,
    grid_laplace,
    grow_tree,
    laplace_mechanism,
    ledger_entry,
    noise_random_state,
    noisy_group_sums,
    noisy_tree_counts,
    olh_count_std,
    olh_parameters,
    private_quadtree_histogram,
    release_group_totals,
    secret_seed,
    split_budget,
    tree_count_ledger,
)

NAN, INF = float("nan"), float("inf")
X2 = np.array([[0.1, 0.2], [0.7, 0.9], [0.4, 0.4]])
BAD_EPS = [NAN, INF, 0.0, -1.0]
BAD_DELTA = [NAN, INF, -0.1, 1.0]


def _hist(**kw):
    args = dict(levels=[1, 1, 1, 1], cells=[[0, 0], [1, 0], [0, 1], [1, 1]], counts=[3.0, 0.0, 1.0, 2.0],
                heavy=[True, False, False, True], n_levels=2, threshold=1.5, lower=[0.0, 0.0], upper=[1.0, 1.0],
                noise_std=1.0)
    return QuadtreeHistogram(**(args | kw))


def _stream(**kw):
    args = dict(n_dims=2, n_levels=2, max_steps=4, epsilon=1.0, seed=0)
    return ContinualQuadtreeHistogram(**(args | kw))


def _stream_grow(lower=0.0, upper=1.0, threshold=1.0):
    return _stream().add_step(X2).grow(threshold, lower, upper)


# name -> (call(**overrides), [(parameter, bad value), ...]); the call with no overrides must succeed
CASES = {
    "laplace_mechanism": (
        lambda **kw: laplace_mechanism(**(dict(value=[1.0, 2.0], sensitivity=1.0, epsilon=1.0) | kw)),
        [("value", [1.0, NAN]), ("value", [INF])] + [("epsilon", e) for e in BAD_EPS]
        + [("sensitivity", s) for s in (NAN, INF, 0.0, -1.0)]),
    "geometric_mechanism": (
        lambda **kw: geometric_mechanism(**(dict(value=[1, 2], epsilon=1.0) | kw)),
        [("value", [1.0, NAN]), ("value", [INF]), ("value", [1e300])] + [("epsilon", e) for e in BAD_EPS]
        + [("sensitivity", s) for s in (NAN, INF, 0.5)]),
    "gaussian_mechanism": (
        lambda **kw: gaussian_mechanism(**(dict(value=[1.0], sensitivity=1.0, epsilon=1.0, delta=1e-6) | kw)),
        [("value", [NAN]), ("value", [-INF])] + [("epsilon", e) for e in BAD_EPS]
        + [("delta", d) for d in BAD_DELTA + [0.0]] + [("sensitivity", s) for s in (NAN, INF, 0.0)]),
    "gaussian_noise_scale": (
        lambda **kw: gaussian_noise_scale(**(dict(epsilon=1.0, delta=1e-6, sensitivity=1.0) | kw)),
        [("epsilon", e) for e in BAD_EPS] + [("delta", d) for d in BAD_DELTA + [0.0]]
        + [("sensitivity", s) for s in (NAN, INF, 0.0)]),
    # epsilon = 0 is meaningful here (the total variation distance): only NaN, inf and negatives are refused
    "gaussian_delta": (
        lambda **kw: gaussian_delta(**(dict(sigma=1.0, epsilon=1.0, sensitivity=1.0) | kw)),
        [("epsilon", e) for e in (NAN, INF, -1.0)] + [("sigma", s) for s in (NAN, INF, 0.0)]
        + [("sensitivity", s) for s in (NAN, INF, 0.0)]),
    "olh_parameters": (lambda **kw: olh_parameters(**(dict(epsilon=1.0) | kw)), [("epsilon", e) for e in BAD_EPS]),
    "olh_count_std": (
        lambda **kw: olh_count_std(**(dict(n_reports=100, n_levels=3, epsilon=1.0) | kw)),
        [("epsilon", e) for e in BAD_EPS] + [("n_reports", -1), ("n_levels", 0)]),
    "private_quadtree_histogram": (
        lambda **kw: private_quadtree_histogram(**(dict(X=X2, bounds=(0, 1), n_levels=2, epsilon=1.0,
                                                        threshold=1.0) | kw)),
        [("X", np.array([[NAN, 0.1]])), ("X", np.array([[INF, 0.1]])), ("bounds", (1, 0)), ("bounds", (0, INF)),
         ("bounds", (NAN, 1)), ("bounds", (0, 0)), ("threshold", NAN)] + [("epsilon", e) for e in BAD_EPS]),
    "noisy_group_sums": (
        lambda **kw: noisy_group_sums(**(dict(X=X2, groups=[0, 1, 1], n_groups=2, bounds=(0, 1), epsilon_count=1.0,
                                              epsilon_sum=1.0, delta=1e-6) | kw)),
        [("X", np.array([[NAN, 0.1]] * 3)), ("X", np.array([[INF, 0.1]] * 3)), ("groups", [0, 1, NAN]),
         ("groups", [0, 1, 0.5]), ("groups", [0, 1, 2]), ("bounds", (1, 0)), ("bounds", (-INF, 1)),
         ("bounds", (0, NAN))] + [("epsilon_count", e) for e in BAD_EPS] + [("epsilon_sum", e) for e in BAD_EPS]
        + [("delta", d) for d in BAD_DELTA]),
    "QuadtreeHistogram": (
        _hist, [("counts", [NAN, 0, 1, 2]), ("counts", [INF, 0, 1, 2]), ("threshold", NAN),
                ("noise_std", NAN), ("noise_std", INF), ("lower/upper", "inverted"), ("lower/upper", "infinite")]),
    "ContinualQuadtreeHistogram": (
        _stream, [("epsilon", e) for e in BAD_EPS]
        + [("sum_epsilon", e) for e in BAD_EPS] + [("sum_delta", d) for d in BAD_DELTA]
        + [("sum_sensitivity", s) for s in (NAN, INF, 0.0)] + [("U", "nan"), ("lower/upper", "inverted")]),
    "Accountant": (
        lambda **kw: Accountant(**kw).spend(**({"epsilon": 0.5} | kw.pop("spend", {}))),
        [("epsilon", e) for e in BAD_EPS] + [("delta", d) for d in (NAN, INF, -0.1)]),
    "ledger_entry": (
        lambda **kw: ledger_entry(**(dict(label="x", mechanism="laplace", epsilon=1.0, sensitivity=1.0,
                                          scale=1.0) | kw)),
        [("epsilon", e) for e in (NAN, INF, -1.0)] + [("sensitivity", s) for s in (NAN, INF, 0.0)]
        + [("scale", s) for s in (NAN, INF, 0.0)] + [("delta", d) for d in BAD_DELTA] + [("count", 0)]),
    # accounting of repeated Gaussian rounds (Private Evolution): NaN, zero and negative budgets refused
    "gaussian_rounds_epsilon": (
        lambda **kw: privacy.gaussian_rounds_epsilon(**(dict(noise_multiplier=2.0, n_rounds=3, delta=1e-6) | kw)),
        [("noise_multiplier", m) for m in (NAN, INF, 0.0, -1.0)] + [("delta", d) for d in (NAN, INF, 0.0, 1.0)]
        + [("n_rounds", 0)]),
    "gaussian_rounds_noise_multiplier": (
        lambda **kw: privacy.gaussian_rounds_noise_multiplier(**(dict(epsilon=1.0, delta=1e-6, n_rounds=3) | kw)),
        [("epsilon", e) for e in (NAN, INF, 0.0, -1.0)] + [("delta", d) for d in (NAN, INF, 0.0, 1.0)]
        + [("n_rounds", 0)]),
    "grid_histogram": (
        lambda **kw: privacy.grid_histogram(**(dict(X=X2) | kw)),
        [("X", np.array([[NAN, 0.1]])), ("X", np.array([[INF, 0.1]])), ("X", [0.1, 0.2])]
        + [("radius", r) for r in (NAN, INF, 0.0, -1.0)]),
    "private_bounds": (
        lambda **kw: privacy.private_bounds(**(dict(X=X2, epsilon=1.0) | kw)),
        [("X", np.array([[NAN, 0.1]])), ("X", np.array([[INF, 0.1]])), ("max_rows_per_user", 0)]
        + [("epsilon", e) for e in BAD_EPS] + [("failure_probability", b) for b in (NAN, 0.0, 1.0)]),
    "grid_laplace": (
        lambda **kw: grid_laplace(**(dict(sensitivity=1.0, epsilon=1.0, n_rounded=1) | kw)),
        [("epsilon", e) for e in BAD_EPS] + [("sensitivity", s) for s in (NAN, INF, 0.0, -1.0)]
        + [("n_rounded", 0)]),
    "gaussian_on_grid": (lambda **kw: gaussian_on_grid(**(dict(sigma=2.0) | kw)),
                         [("sigma", s) for s in (NAN, INF, 0.0, -1.0)]),
    "add_noise": (
        lambda **kw: add_noise(**(dict(value=[1.0, 2.0], noise=grid_laplace(1.0, 1.0, n_rounded=1),
                                       source=noise_random_state(0)) | kw)),
        [("value", [1.0, NAN]), ("value", [INF]), ("noise", 1.0)]),
    "exponential_choice": (
        lambda **kw: exponential_choice(**(dict(costs=[1.0, 0.0], sensitivity=1.0, epsilon=1.0,
                                                rng=noise_random_state(0)) | kw)),
        [("costs", [1.0, NAN]), ("costs", [INF]), ("costs", [])] + [("epsilon", e) for e in BAD_EPS]
        + [("sensitivity", s) for s in (NAN, INF, 0.0)] + [("rng", 0)]),
    "noise_random_state": (lambda **kw: noise_random_state(**(dict(random_state=0) | kw)),
                           [("random_state", "seed"), ("random_state", 1.5)]),
    "secret_seed": (lambda **kw: secret_seed(**(dict(rng=noise_random_state(0)) | kw)), [("rng", 0)]),
    "release_group_totals": (
        lambda **kw: release_group_totals(**(dict(counts=[3.0, 4.0], sums=[[0.5, -0.5], [1.0, 0.0]], n=7, half=1.0,
                                                  epsilon_count=1.0, epsilon_sum=1.0, delta=0.0, model="central",
                                                  rng=noise_random_state(0)) | kw)),
        [("counts", [NAN, 1.0]), ("sums", [[INF, 0.0], [0.0, 0.0]]), ("sums", [[0.0, 0.0]]), ("n", -1),
         ("half", 0.0), ("model", "shuffle")] + [("epsilon_count", e) for e in BAD_EPS]
        + [("epsilon_sum", e) for e in BAD_EPS] + [("delta", d) for d in BAD_DELTA]),
    "grow_tree": (
        lambda **kw: grow_tree(**(dict(count_fn=lambda level, cells, keys: np.ones(len(cells)), n_levels=2,
                                       n_dims=2, threshold=0.5) | kw)),
        [("count_fn", None), ("n_levels", 0), ("n_levels", 63), ("n_dims", 0)]),
    "noisy_tree_counts": (
        lambda **kw: noisy_tree_counts(**(dict(exact=[5.0, 0.0], n_levels=3, epsilon=1.0,
                                               rng=noise_random_state(0)) | kw)),
        [("exact", [NAN]), ("exact", [INF, 1.0]), ("n_levels", 0)] + [("epsilon", e) for e in BAD_EPS]),
    "tree_count_ledger": (
        lambda **kw: tree_count_ledger(**(dict(n_levels=3, epsilon=1.0) | kw)),
        [("n_levels", 0)] + [("epsilon", e) for e in BAD_EPS]),
    "split_budget": (
        lambda **kw: split_budget(**(dict(total=1.0, shares=[1, 2]) | kw)),
        [("total", t) for t in (NAN, INF, -1.0)] + [("shares", [1.0, NAN]), ("shares", [1.0, 0.0])]),
}


CASES = {name: case for name, case in CASES.items() if name in privacy.__all__}


def test_the_table_covers_every_public_name():
    # a warning category, the grids' constants and the release's named tuple: they take no validated input
    not_callable_with_input = {"PrivacyLeakWarning", "PrivateBounds"}
    assert set(CASES) | not_callable_with_input == set(privacy.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_call_succeeds(name):
    CASES[name][0]()


def _call_bad(name, param, value):
    call = CASES[name][0]
    if name == "QuadtreeHistogram" and param == "lower/upper":
        return _hist(lower=[1.0, 0.0], upper=[0.0, 1.0]) if value == "inverted" else _hist(upper=[INF, 1.0])
    if name == "ContinualQuadtreeHistogram" and param == "U":
        return _stream().add_step(np.array([[NAN, 0.5]]))
    if name == "ContinualQuadtreeHistogram" and param == "lower/upper":
        return _stream_grow(lower=1.0, upper=0.0)
    if name == "ContinualQuadtreeHistogram" and param.startswith("sum_"):
        kw = dict(sums=True, sum_epsilon=1.0, sum_delta=1e-6, sum_sensitivity=1.0, sum_l1_sensitivity=1.0)
        return call(**(kw | {param: value}))
    return call(**{param: value})


@pytest.mark.parametrize("name, param, value", [(n, p, v) for n, (_, bad) in sorted(CASES.items()) for p, v in bad])
def test_bad_input_raises_value_error_naming_the_parameter(name, param, value):
    with pytest.raises(ValueError, match=re.escape(param)):
        _call_bad(name, param, value)


def test_accountant_caps_are_enforced_and_spends_checked():
    with pytest.raises(ValueError, match="epsilon"):
        Accountant(epsilon=1.0).spend(NAN)
    with pytest.raises(ValueError, match="over the cap"):
        Accountant(epsilon=1.0).spend(0.6).spend(0.6)


def test_ledger_entry_refuses_an_entry_that_understates_its_cost():
    with pytest.raises(ValueError, match="more than epsilon"):
        ledger_entry("counts", "laplace", epsilon=1.0, sensitivity=2.0, scale=1.0)  # spends 2
    sigma = gaussian_noise_scale(1.0, 1e-6, 3.0)
    ledger_entry("sums", "gaussian", epsilon=1.0, delta=1e-6, sensitivity=3.0, scale=sigma)
    with pytest.raises(ValueError, match="not"):
        ledger_entry("sums", "gaussian", epsilon=1.0, delta=1e-6, sensitivity=3.0, scale=0.9 * sigma)
    ledger_entry("levels", "laplace", epsilon=1.0, sensitivity=1.0, scale=4.0, count=4)
    with pytest.raises(ValueError, match="more than epsilon"):
        ledger_entry("levels", "laplace", epsilon=1.0, sensitivity=1.0, scale=1.0, count=4)


# ------------------------------------------------------------------------------------------------
# large budgets

@pytest.mark.parametrize("epsilon", [1e3, 1e6, 1e9, 1e12])
def test_gaussian_calibration_works_for_huge_epsilon(epsilon):
    sigma = gaussian_noise_scale(epsilon, 1e-6, 2.0)
    assert 0 < sigma < 2.0 and math.isfinite(sigma)
    assert gaussian_delta(sigma, epsilon, 2.0) <= 1e-6
    assert gaussian_delta(sigma * 0.9, epsilon, 2.0) > 1e-6  # and it is the smallest such sigma (to 10%)


@pytest.mark.parametrize("epsilon", [20.0, 90.0, 1e3, 1e12])
def test_local_hashing_works_for_huge_epsilon(epsilon):
    g, p = olh_parameters(epsilon)
    assert 2 <= g <= 2 ** 24 and 0.5 < p <= 1.0
    # each report is epsilon-LDP whatever g: keep probability over the probability of any other bucket
    assert math.log(p * (g - 1) / (1 - p)) <= epsilon * (1 + 1e-9) if p < 1 else True
    X = np.vstack([np.full((300, 2), 0.1), np.full((100, 2), 0.9)])
    hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=2, epsilon=epsilon, threshold=50.0,
                                      model="local", random_state=0)
    level1 = hist.levels == 1
    np.testing.assert_allclose(np.sort(hist.counts[level1])[-2:], [100, 300], atol=60)


def test_private_kmeans_local_model_at_large_epsilon():
    from sklearn_icml.cluster import PrivateKMeans

    X = np.vstack([np.full((200, 2), -0.5), np.full((200, 2), 0.5)])
    for epsilon in (100.0, 1e6):  # 1e6: the largest epsilon a private estimator takes
        km = PrivateKMeans(2, epsilon=epsilon, bounds=(-1, 1), privacy="local", random_state=0).fit(X)
        assert np.all(np.isfinite(km.cluster_centers_))
        assert km.epsilon_spent_ <= epsilon


def test_geometric_mechanism_refuses_counts_beyond_int64():
    with pytest.raises(ValueError, match="value"):
        geometric_mechanism([1e300], epsilon=1.0)
    assert geometric_mechanism([2 ** 40], epsilon=1e12, random_state=0)[0] == 2 ** 40
