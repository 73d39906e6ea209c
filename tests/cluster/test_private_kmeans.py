"""PrivateKMeans: privacy bookkeeping and noise, an empirical audit, utility against the issue's bars,
the three privacy models, errors, determinism and composition with scikit-learn."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits, make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_clustering

from sklearn_icml.cluster import PrivateKMeans
from sklearn_icml.cluster._mettu_plaxton import nearest as _nearest
from sklearn_icml.datasets import make_bounded_blobs
from sklearn_icml.privacy import Accountant, PrivacyLeakWarning, gaussian_noise_scale
from sklearn_icml.privacy._local_hashing import olh_support as _olh_support
from sklearn_icml.utils._cells import level_counts as _level_counts
from sklearn_icml.utils._cells import pack_keys as _keys
from sklearn_icml.utils._cells import unit_cells

# diffprivlib 0.6.6 KMeans, median k-means cost / sklearn KMeans(n_init=10) cost at epsilon=1, measured in a
# scikit-learn 1.6.1 virtualenv (diffprivlib does not import beside scikit-learn 1.9): the smaller of two
# measurements, so the stricter bar: 10 seeds of an earlier measurement of the same peer
# (2.03, 5.12, 2.17) and 5 seeds by benchmarks/bench_private_kmeans.py (2.47, 3.77, 2.23; see
# doc/benchmarks/private_kmeans.rst)
DIFFPRIVLIB_EPS1 = {"blobs2": 2.03, "blobs10": 3.77, "digits": 2.17}

CONFIGS = {
    "central": dict(),
    "central-pure": dict(delta=0.0),
    "local": dict(privacy="local"),
    "lloyd": dict(algorithm="lloyd"),
    "lloyd-local": dict(algorithm="lloyd", privacy="local"),
    "fixed-levels": dict(n_levels=3, max_iter=3),
}


def _cost(X, centers):
    return float(((X - centers[_nearest(X, centers)]) ** 2).sum())


def _projected(km, X):
    lower, upper = km.bounds_
    return ((np.clip(X, lower, upper) - (lower + upper) / 2) / np.linalg.norm((upper - lower) / 2)) @ km.projection_


@pytest.fixture(scope="module")
def blobs():
    X, y, bounds = make_bounded_blobs(3000, n_features=3, centers=4, random_state=0)
    return X, y, bounds


# ------------------------------------------------------------------------------------------------
# privacy: noise scales, spent budget, empirical noise, audit


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_release_has_noise_sensitivity_over_its_budget_share(blobs, config):
    X, _, bounds = blobs
    params = dict(epsilon=1.3, delta=1e-6) | CONFIGS[config]
    km = PrivateKMeans(4, bounds=bounds, random_state=0, **params).fit(X)
    assert km.privacy_ledger_
    for e in km.privacy_ledger_:
        per_release_eps, per_release_delta = e["epsilon"] / e["count"], e["delta"] / e["count"]
        if e["mechanism"] in ("laplace", "geometric"):
            assert e["scale"] == pytest.approx(e["sensitivity"] / per_release_eps, rel=1e-12), e
        elif e["mechanism"] == "gaussian":
            assert e["scale"] == pytest.approx(
                gaussian_noise_scale(per_release_eps, per_release_delta, e["sensitivity"]), rel=1e-9), e
        else:
            assert e["mechanism"] == "local_hashing" and config in ("local",)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_spent_budget_equals_epsilon_and_delta(blobs, config):
    X, _, bounds = blobs
    params = dict(epsilon=0.7, delta=2e-6) | CONFIGS[config]
    km = PrivateKMeans(4, bounds=bounds, random_state=1, **params).fit(X)
    assert km.epsilon_spent_ == pytest.approx(params["epsilon"], rel=1e-12)
    assert km.epsilon_spent_ <= params["epsilon"] and km.delta_spent_ <= params["delta"]
    # delta is spent only where Gaussian sums beat Laplace sums (never in 3-D at this budget: pure DP)
    gaussian = [e for e in km.privacy_ledger_ if e["mechanism"] == "gaussian"]
    assert km.delta_spent_ == pytest.approx(math.fsum(e["delta"] for e in gaussian), rel=1e-12, abs=0)
    assert math.fsum(e["epsilon"] for e in km.privacy_ledger_) == km.epsilon_spent_
    acc = Accountant(epsilon=1.4).add(km).add(km)
    assert acc.total[0] == pytest.approx(1.4)
    with pytest.raises(ValueError, match="over the cap"):
        acc.add(km)


def test_stream_budget_is_spent_once_for_all_steps(blobs):
    X, _, bounds = blobs
    km = PrivateKMeans(4, epsilon=0.9, bounds=bounds, max_steps=4, random_state=0)
    for batch in np.array_split(X, 4):
        km.partial_fit(batch)
        assert km.epsilon_spent_ == pytest.approx(0.9) and km.delta_spent_ == pytest.approx(1e-6)
    assert km.n_steps_ == 4
    with pytest.raises(ValueError, match="max_steps=4"):
        km.partial_fit(X[:10])
    for e in km.privacy_ledger_:
        if e["mechanism"] == "laplace":
            assert e["scale"] == pytest.approx(e["sensitivity"] / e["epsilon"])
    tree = next(e for e in km.privacy_ledger_ if e["label"].startswith("tree"))
    assert tree["sensitivity"] == (km.n_levels_ + 1) * 3  # (levels 0..L) x (log2(4) + 1) intervals


def test_released_tree_counts_carry_laplace_noise_of_the_ledger_scale():
    X, _, bounds = make_bounded_blobs(2000, centers=3, random_state=2)
    residuals, scale = [], None
    for seed in range(60):
        km = PrivateKMeans(3, epsilon=1.0, bounds=bounds, n_levels=4, n_init=1, random_state=seed).fit(X)
        hist = km.histogram_
        Q = unit_cells((_projected(km, X) - hist.lower) / (hist.upper - hist.lower), hist.n_levels)
        truth = np.zeros(len(hist.levels))
        for level in np.unique(hist.levels):
            sel = hist.levels == level
            point_keys = np.sort(_keys(Q >> (hist.n_levels - level), level))
            keys = _keys(hist.cells[sel], level)
            truth[sel] = np.searchsorted(point_keys, keys, "right") - np.searchsorted(point_keys, keys, "left")
        residuals.append(hist.counts - truth)
        scale = next(e["scale"] for e in km.privacy_ledger_ if e["label"].startswith("tree"))
    assert scale == pytest.approx(4 / (0.5 * 0.95))  # n_levels / (tree share minus the 5% size share)
    assert stats.kstest(np.concatenate(residuals), stats.laplace(scale=scale).cdf).pvalue > 1e-3


def test_released_cluster_sizes_carry_laplace_noise_of_the_ledger_scale():
    X, _, bounds = make_bounded_blobs(2000, centers=3, cluster_std=0.3, random_state=3)
    residuals = []
    for seed in range(150):
        km = PrivateKMeans(3, epsilon=2.0, bounds=bounds, n_init=1, random_state=seed).fit(X)
        groups = _nearest(_projected(km, X), km.projected_centers_)
        residuals.append(km.cluster_sizes_ - np.bincount(groups, minlength=3))
    entry = next(e for e in km.privacy_ledger_ if e["label"] == "group counts")
    assert entry["scale"] == pytest.approx(1 / (2.0 * 0.25))
    assert stats.kstest(np.concatenate(residuals), stats.laplace(scale=entry["scale"]).cdf).pvalue > 1e-3


def _clopper_pearson_epsilon(hits_d, hits_d1, n, alpha=0.05):
    lo = stats.beta.ppf(alpha / 2, hits_d1, n - hits_d1 + 1) if hits_d1 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, hits_d + 1, n - hits_d) if hits_d < n else 1.0
    return math.log(lo / hi) if lo > 0 else 0.0


@pytest.mark.slow
def test_audit_fitted_outputs_on_neighbouring_datasets():
    """End-to-end: fits on D and on D plus one far record; the best event we know must not beat epsilon."""
    epsilon, n_runs = 1.0, 400
    D = np.random.RandomState(0).normal(-5, 0.5, size=(60, 2))
    D1 = np.vstack([D, [[9.0, 9.0]]])

    def statistic(X, seeds):
        out = []
        for seed in seeds:
            km = PrivateKMeans(2, epsilon=epsilon, bounds=(-10, 10), n_levels=1, n_init=1, random_state=seed)
            hist = km.fit(X).histogram_
            top = (hist.levels == 1) & (hist.cells[:, 0] == 1) & (hist.cells[:, 1] == 1)  # the far quadrant
            out.append(hist.counts[top][0])
        return np.asarray(out)

    t_d, t_d1 = statistic(D, range(n_runs)), statistic(D1, range(n_runs, 2 * n_runs))
    eps_hat = _clopper_pearson_epsilon(int(np.sum(t_d >= 1)), int(np.sum(t_d1 >= 1)), n_runs)
    assert eps_hat <= epsilon
    # and the two output distributions do differ in the direction a leak would show (sanity of the statistic)
    assert np.mean(t_d1) > np.mean(t_d) - 3 * np.std(t_d) / math.sqrt(n_runs)


# ------------------------------------------------------------------------------------------------
# utility: the bars at epsilon=1 (medians over 5 seeds, cost relative to sklearn KMeans n_init=10)


def _median_ratio(X, k, bounds, seeds=range(5), **params):
    base = KMeans(k, n_init=10, random_state=0).fit(X).inertia_
    return float(np.median([_cost(X, PrivateKMeans(k, epsilon=1.0, bounds=bounds, random_state=s, **params)
                                  .fit(X).cluster_centers_) / base for s in seeds]))


def test_utility_blobs_2d():
    X, _ = make_blobs(n_samples=10000, n_features=2, centers=5, cluster_std=1.0, center_box=(-8, 8), random_state=0)
    ratio = _median_ratio(X, 5, (-12, 12))
    assert ratio <= 1.3 and ratio <= 0.7 * DIFFPRIVLIB_EPS1["blobs2"]


def test_utility_blobs_10d():
    X, _ = make_blobs(n_samples=20000, n_features=10, centers=8, cluster_std=1.0, center_box=(-8, 8), random_state=1)
    ratio = _median_ratio(X, 8, (-12, 12))
    assert ratio <= 2.0 and ratio <= 0.5 * DIFFPRIVLIB_EPS1["blobs10"]
    # the classic DP-Lloyd baseline on the same data does much worse
    assert _median_ratio(X, 8, (-12, 12), seeds=range(3), algorithm="lloyd") > 1.5 * ratio


def test_utility_digits_no_worse_than_diffprivlib():
    X = load_digits().data
    assert _median_ratio(X, 10, (0, 16)) <= 1.25 * DIFFPRIVLIB_EPS1["digits"]


def test_check_clustering_data_at_large_epsilon():
    # the common check_clustering (ARI > 0.4 on 50 points) is a coin toss at epsilon=1; with budget the same data is
    # clustered correctly, whatever the seed
    for seed in range(3):
        check_clustering("PrivateKMeans", PrivateKMeans(3, epsilon=10.0, bounds=(-10, 10), random_state=seed))


def test_utility_improves_with_epsilon():
    X, _, bounds = make_bounded_blobs(5000, centers=4, random_state=4)
    base = KMeans(4, n_init=10, random_state=0).fit(X).inertia_
    costs = {eps: np.median([_cost(X, PrivateKMeans(4, epsilon=eps, bounds=bounds, random_state=s).fit(X)
                                   .cluster_centers_) / base for s in range(3)]) for eps in (0.1, 8.0)}
    assert costs[8.0] < costs[0.1] and costs[8.0] < 1.1


# ------------------------------------------------------------------------------------------------
# the other privacy models


def test_local_model_needs_more_data_but_works():
    X, _, bounds = make_bounded_blobs(80000, centers=3, random_state=5)  # local error ~ sqrt(n): needs n
    base = KMeans(3, n_init=10, random_state=0).fit(X).inertia_
    one_centre = _cost(X, X.mean(0, keepdims=True)) / base
    ratios = [_cost(X, PrivateKMeans(3, epsilon=4.0, privacy="local", bounds=bounds, random_state=s).fit(X)
                    .cluster_centers_) / base for s in range(3)]
    assert np.median(ratios) < 0.5 * one_centre
    assert PrivateKMeans(3, privacy="local", bounds=bounds).fit(X[:100]).histogram_ is not None


def test_continual_observation_tracks_a_stream():
    X, _, bounds = make_bounded_blobs(60000, centers=4, random_state=6)
    base = KMeans(4, n_init=10, random_state=0).fit(X).inertia_
    km = PrivateKMeans(4, epsilon=1.0, bounds=bounds, max_steps=8, random_state=0)
    ratios = []
    for batch in np.array_split(np.random.RandomState(0).permutation(X), 6):
        km.partial_fit(batch)
        ratios.append(_cost(X, km.cluster_centers_) / base)
        assert km.labels_.shape == (len(batch),)
    assert km.n_steps_ == 6
    assert np.median(ratios[-3:]) < 1.6
    # re-deriving from the same noisy counts is deterministic
    again = PrivateKMeans(4, epsilon=1.0, bounds=bounds, max_steps=8, random_state=0)
    for batch in np.array_split(np.random.RandomState(0).permutation(X), 6):
        again.partial_fit(batch)
    np.testing.assert_allclose(again.cluster_centers_, km.cluster_centers_)
    # fit starts over: no stream state is left behind
    km.fit(X[:500])
    assert km.n_steps_ == 0 and not hasattr(km, "_stream")


@pytest.mark.parametrize("params", [dict(privacy="local"), dict(algorithm="lloyd")])
def test_partial_fit_is_central_greedy_only(params):
    with pytest.raises(ValueError, match="PrivateKMeans.partial_fit"):
        PrivateKMeans(2, bounds=(0, 1), **params).partial_fit(np.random.rand(20, 2))


# ------------------------------------------------------------------------------------------------
# privacy hygiene, errors, API


def test_bounds_data_warns_on_every_fit_and_bounds_clip():
    X, _, _ = make_bounded_blobs(500, random_state=0)
    km = PrivateKMeans(3, bounds="data", random_state=0)
    for _ in range(2):  # the same instance warns again on every fit
        with pytest.warns(PrivacyLeakWarning, match="bounds='data'"):
            km.fit(X)
    np.testing.assert_allclose(km.bounds_, [X.min(0), X.max(0)])
    assert km.epsilon_spent_ == pytest.approx(1.0)  # the read box is not in the ledger: it is not private
    far = np.vstack([X, [[1e6, -1e6]]])
    km = PrivateKMeans(3, bounds=(-12, 12), random_state=0).fit(far)
    assert np.all(np.abs(km.cluster_centers_) <= 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PrivateKMeans(3, bounds=([-12, -13], [12, 13]), random_state=0).fit(X)


@pytest.mark.parametrize("bounds, match", [((1, 0), "lower < upper"), ((1, 1), "lower < upper"),
                                           ((-1e300, 1e300), "within"), ((0, 1, 2), "bounds must be"),
                                           (([0, 0, 0], [1, 1, 1]), "bounds must be"),
                                           ((0, np.inf), "finite")])
def test_bad_bounds_are_refused(bounds, match):
    with pytest.raises(ValueError, match=f"PrivateKMeans.*{match}|{match}"):
        PrivateKMeans(2, bounds=bounds).fit(np.random.rand(20, 2))


def test_records_far_outside_the_box_are_clipped_in_fit_and_measured_exactly_after():
    X, _ = make_blobs(300, centers=3, random_state=0)
    X *= 5e148  # the box below is the widest accepted; records beyond 1.3e151 cannot be squared in float64
    far = X.copy()
    far[:20] *= 1e3
    far[20] = [1.7e308, -5.0]
    bounds = (-1e150, 1e150)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings included
        km = PrivateKMeans(3, bounds=bounds, random_state=0).fit(far)
        distances, labels = km.transform(far), km.predict(far)
    # clipping is the mechanism: the private fit is the fit of the clipped records
    clipped = PrivateKMeans(3, bounds=bounds, random_state=0).fit(np.clip(far, *bounds))
    np.testing.assert_array_equal(km.cluster_centers_, clipped.cluster_centers_)
    exact = np.array([[math.hypot(*(x - c)) for c in km.cluster_centers_] for x in far])
    np.testing.assert_allclose(distances, exact, rtol=1e-13)
    np.testing.assert_array_equal(labels, exact.argmin(axis=1))
    np.testing.assert_array_equal(km.labels_, labels)
    assert km.inertia_ == np.inf  # (1.7e308)**2: the cost is beyond float64, documented
    with pytest.raises(ValueError, match="PrivateKMeans.score: the k-means cost of X is beyond the float64"):
        km.score(far)
    with pytest.raises(ValueError, match="PrivateKMeans.transform: distances .* beyond the float64 range"):
        km.transform(np.full((1, 2), 1.7e308))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=r"bounds='data' and the data's range reaches 1.7e\+308"):
            PrivateKMeans(3, bounds="data").fit(far)
    # the private box lies on a grid within +-2**498 < 1e150: such records are clipped to it
    km = PrivateKMeans(3, epsilon=20.0, random_state=0).fit(far)
    assert np.all(np.abs(km.bounds_) <= 2.0 ** 498) and np.all(np.abs(km.cluster_centers_) <= 2.0 ** 498)


@pytest.mark.parametrize("split", [(1, 1), (1, -1, 1), (0, 0, 0)])
def test_bad_budget_split_is_refused(split):
    with pytest.raises(ValueError, match="PrivateKMeans: budget_split"):
        PrivateKMeans(2, bounds=(0, 1), budget_split=split).fit(np.random.rand(20, 2))


def test_parameters_are_not_mutated(blobs):
    X, _, _ = blobs
    bounds, split = [-12.0, 12.0], [2, 1, 1]
    km = PrivateKMeans(4, bounds=bounds, budget_split=split, random_state=0)
    km.fit(X)
    assert bounds == [-12.0, 12.0] and split == [2, 1, 1]
    assert km.get_params()["bounds"] is bounds


def test_determinism_and_outputs(blobs):
    X, _, bounds = blobs
    a = PrivateKMeans(4, bounds=bounds, random_state=3).fit(X)
    b = PrivateKMeans(4, bounds=bounds, random_state=3).fit(X)
    c = PrivateKMeans(4, bounds=bounds, random_state=4).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert not np.allclose(a.cluster_centers_, c.cluster_centers_)
    np.testing.assert_array_equal(a.predict(X), a.labels_)
    assert a.transform(X).shape == (len(X), 4)
    np.testing.assert_allclose(a.transform(X).min(1) ** 2, ((X - a.cluster_centers_[a.labels_]) ** 2).sum(1))
    assert a.score(X) == pytest.approx(-a.inertia_)
    assert list(a.get_feature_names_out()) == [f"privatekmeans{i}" for i in range(4)]
    assert np.all(np.diff(a.cluster_sizes_) <= 0)


def test_grid_search_over_epsilon_and_pipeline(blobs):
    X, y, bounds = blobs
    search = GridSearchCV(PrivateKMeans(4, bounds=bounds, random_state=0), {"epsilon": [0.05, 5.0]}, cv=3)
    search.fit(X)
    assert search.best_params_ == {"epsilon": 5.0}
    # the distances to the centres are standardised so that L-BFGS converges far inside its iteration limit
    pipe = make_pipeline(PrivateKMeans(4, bounds=bounds, random_state=0), StandardScaler(), LogisticRegression())
    assert pipe.fit(X, y).score(X, y) > 0.9
    assert pipe[-1].n_iter_.max() < pipe[-1].max_iter / 4


def test_torch_paths_match_numpy():
    torch = pytest.importorskip("torch")
    cpu = torch.device("cpu")
    rng = np.random.RandomState(0)
    Q = unit_cells(rng.uniform(size=(3000, 3)), 5)
    for (k1, c1), (k2, c2) in zip(_level_counts(Q, 5), _level_counts(Q, 5, cpu)):
        np.testing.assert_array_equal(k1, k2)
        np.testing.assert_array_equal(c1, c2)
    seeds = rng.randint(0, 2 ** 64, size=500, dtype=np.uint64)
    buckets = rng.randint(0, 5, size=500)
    keys = rng.randint(0, 2 ** 40, size=300).astype(np.int64)
    np.testing.assert_array_equal(_olh_support(seeds, buckets, keys, 5), _olh_support(seeds, buckets, keys, 5, cpu))
    A, B = rng.normal(size=(400, 4)), rng.normal(size=(7, 4))
    np.testing.assert_array_equal(_nearest(A, B), _nearest(A, B, cpu))


@pytest.mark.parametrize("privacy", ["central", "local"])
def test_device_gives_the_same_fit(blobs, device, privacy):
    X, _, bounds = blobs
    ref = PrivateKMeans(4, bounds=bounds, privacy=privacy, random_state=0).fit(X)
    km = clone(ref).set_params(device=device).fit(X)
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-9, atol=1e-9)


def test_float32_and_single_sample():
    X = np.random.RandomState(0).uniform(-1, 1, size=(40, 2)).astype(np.float32)
    km = PrivateKMeans(2, bounds=(-1, 1), random_state=0).fit(X)
    assert km.cluster_centers_.dtype == np.float32  # float32 in, float32 centres out
    assert km.transform(X).shape == (40, 2)
    assert PrivateKMeans(2, bounds=(-1, 1), random_state=0).fit(X.astype(np.float64)).cluster_centers_.dtype == \
        np.float64
    assert PrivateKMeans(3, bounds=(-1, 1), random_state=0).fit(X[:1]).cluster_centers_.shape == (3, 2)


# ------------------------------------------------------------------------------------------------
# exact accounting, stream parameters, the leak warning


@pytest.mark.parametrize("config", sorted(CONFIGS) + ["boosted"])
def test_spent_budget_never_exceeds_epsilon_exactly(config):
    X, _, bounds = make_bounded_blobs(300, centers=3, random_state=0)
    params = dict(n_repeats=3) if config == "boosted" else CONFIGS[config]
    rng = np.random.RandomState(0)
    for epsilon in [7.77, 0.7, 1.3, 3.3, 0.1] + list(rng.uniform(0.05, 20, size=5)):
        delta = params.get("delta", float(rng.uniform(1e-9, 1e-3)))
        km = PrivateKMeans(3, epsilon=epsilon, bounds=bounds, n_init=1, random_state=0, **(params | {"delta": delta}))
        km.fit(X)
        assert km.epsilon_spent_ <= epsilon and km.delta_spent_ <= delta  # exactly, no tolerance
        assert km.epsilon_spent_ == pytest.approx(epsilon, rel=1e-12)


def test_stream_refuses_a_privacy_parameter_change_between_steps(blobs):
    X, _, bounds = blobs
    km = PrivateKMeans(4, epsilon=1.0, bounds=bounds, max_steps=4, random_state=0).partial_fit(X[:500])
    for name, value in [("epsilon", 2.0), ("delta", 1e-5), ("bounds", (-20, 20)), ("budget_split", (1, 1, 1)),
                        ("max_steps", 8)]:
        old = km.get_params()[name]
        km.set_params(**{name: value})
        with pytest.raises(ValueError, match=f"partial_fit: {name} changed"):
            km.partial_fit(X[500:1000])
        km.set_params(**{name: old})
    km.set_params(n_clusters=3, threshold_factor=2.0).partial_fit(X[500:1000])  # post-processing may change
    assert km.n_steps_ == 2 and km.cluster_centers_.shape == (3, X.shape[1])
    km.set_params(epsilon=2.0).fit(X)  # fit starts over with the new budget
    assert km.epsilon_spent_ == pytest.approx(2.0)


def test_private_box_by_default_is_in_the_ledger_and_refused_in_the_local_model():
    X, _, _ = make_bounded_blobs(4000, random_state=0)
    for repeats in (1, 3):
        km = PrivateKMeans(3, epsilon=2.0, n_repeats=repeats, random_state=0).fit(X)
        box = [e for e in km.privacy_ledger_ if e["label"].startswith("private box")]
        assert math.fsum(e["epsilon"] for e in box) == pytest.approx(0.2)  # bounds_share=0.1 of epsilon
        assert km.epsilon_spent_ <= 2.0 and km.epsilon_spent_ == pytest.approx(2.0)
    inside = np.all((X >= km.bounds_[0]) & (X <= km.bounds_[1]), axis=1)
    assert inside.mean() > 0.85  # the sparse tails of the blobs are clipped
    km = PrivateKMeans(3, epsilon=2.0, max_steps=4, random_state=0).partial_fit(X[:3000])
    assert km.privacy_ledger_[0]["label"].startswith("private box") and km.epsilon_spent_ == pytest.approx(2.0)
    with pytest.raises(ValueError, match="privacy='local' needs public bounds"):
        PrivateKMeans(3, privacy="local").fit(X)


def test_leak_warning_on_every_fit_of_the_estimator_and_its_clones():
    X, _, _ = make_bounded_blobs(300, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        km = PrivateKMeans(3, bounds="data", random_state=0)
        km.fit(X)
        km.fit(X)
        GridSearchCV(km, {"epsilon": [0.5, 1.0, 2.0]}, cv=3).fit(X)  # 9 fits on clones, then a refit
        km.partial_fit(X[:100])
        km.partial_fit(X[100:200])
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 2 + 9 + 1 + 2 and all("bounds='data'" in str(w.message) for w in leaks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default (a private box) and public bounds warn nothing
        PrivateKMeans(3, epsilon=20.0, random_state=0).fit(X)
        PrivateKMeans(3, bounds=(-12, 12), random_state=0).fit(X)


def test_n_clusters_above_n_samples_is_served_without_revealing_n():
    X = np.random.RandomState(0).uniform(-1, 1, size=(5, 2))
    km = PrivateKMeans(8, bounds=(-1, 1), random_state=0).fit(X)
    assert km.cluster_centers_.shape == (8, 2) and np.all(np.abs(km.cluster_centers_) <= 1)


# ------------------------------------------------------------------------------------------------
# the non-private limit


def _separated_blobs():
    X, _ = make_blobs(n_samples=50, random_state=1)  # scikit-learn's check_clustering data, standardised
    X = (X - X.mean(0)) / X.std(0)
    X10, _ = make_blobs(n_samples=3000, n_features=10, centers=5, cluster_std=1.0, center_box=(-8, 8),
                        random_state=1)
    return [(X, 3, (-10, 10)), (X10, 5, (-12, 12))]


@pytest.mark.parametrize("case", [0, 1])
def test_non_private_limit_recovers_the_kmeans_partition_in_every_seed(case):
    from sklearn.metrics import adjusted_rand_score

    X, k, bounds = _separated_blobs()[case]
    ref = KMeans(k, n_init=10, random_state=0).fit(X)
    ratios = []
    for seed in range(10):
        km = PrivateKMeans(k, epsilon=1e6, bounds=bounds, random_state=seed).fit(X)
        assert adjusted_rand_score(ref.labels_, km.labels_) == 1.0, seed
        ratios.append(km.inertia_ / ref.inertia_)
    assert np.median(ratios) <= 1.02


# ------------------------------------------------------------------------------------------------
# boosting: the best of n_repeats runs by the exponential mechanism


def test_boosting_ledger_and_choice(blobs):
    X, _, bounds = blobs
    km = PrivateKMeans(4, epsilon=2.0, bounds=bounds, n_repeats=3, random_state=0).fit(X)
    select = [e for e in km.privacy_ledger_ if e["mechanism"] == "exponential"]
    assert len(select) == 1 and select[0]["epsilon"] == pytest.approx(0.2)
    lower, upper = km.bounds_
    assert select[0]["sensitivity"] == pytest.approx(np.sum((upper - lower) ** 2))  # squared box diameter
    for r in (1, 2, 3):
        runs = [e for e in km.privacy_ledger_ if e["label"].startswith(f"repeat {r}:")]
        assert math.fsum(e["epsilon"] for e in runs) == pytest.approx(0.6)
    assert km.epsilon_spent_ == pytest.approx(2.0) and 0 <= km.selected_repeat_ < 3
    with pytest.raises(ValueError, match="n_repeats"):
        PrivateKMeans(2, bounds=(0, 1), n_repeats=2, privacy="local").fit(X[:50, :2])
    with pytest.raises(ValueError, match="n_repeats"):
        PrivateKMeans(2, bounds=(0, 1), n_repeats=2).partial_fit(X[:50, :2])


def test_exponential_choice_sensitivity_covers_the_brute_force_worst_case():
    """Adding one record to a dataset changes any candidate's cost by at most the ledger's sensitivity."""
    import itertools

    km = PrivateKMeans(2, epsilon=1.0, bounds=([-1, 0], [1, 3]), n_repeats=2, random_state=0)
    X = np.array([[0.0, 1.0], [0.5, 2.0], [-0.5, 0.5]])
    km.fit(X)
    sensitivity = next(e["sensitivity"] for e in km.privacy_ledger_ if e["mechanism"] == "exponential")
    grid = [np.array(p) for p in itertools.product([-1, 0, 1], [0, 1.5, 3])]
    worst = 0.0
    for centres in itertools.product(grid, repeat=2):  # candidate centre sets in the box (may coincide)
        C = np.array(centres)
        for r in grid + [np.array([5.0, -4.0])]:  # records are clipped to the box first
            rc = np.clip(r, [-1, 0], [1, 3])
            worst = max(worst, float(((C - rc) ** 2).sum(1).min()))
    assert worst <= sensitivity + 1e-12
    assert worst == pytest.approx(sensitivity)  # opposite corners: the bound is tight


def test_exponential_choice_prefers_the_cheaper_run():
    X = np.vstack([np.full((100, 2), -0.5), np.full((100, 2), 0.5)])
    km = PrivateKMeans(2, bounds=(-1, 1), n_repeats=2, random_state=0).fit(X)
    good, bad = np.array([[-0.5, -0.5], [0.5, 0.5]]), np.array([[0.0, 0.0], [0.9, -0.9]])
    picks = [km._select_run(X, [bad, good], 50.0, np.random.RandomState(s))[0] for s in range(200)]
    # cost gap 100 = 100 / 8 squared diameters: P(bad) = 1 / (1 + exp(50 * 100 / 8))
    assert np.mean(picks) == 1.0
    picks = [km._select_run(X, [bad, good], 1e-3, np.random.RandomState(s))[0] for s in range(2000)]
    assert abs(np.mean(picks) - 0.5) < 0.05  # a tiny budget chooses almost uniformly


# ------------------------------------------------------------------------------------------------
# empirical audit of the released centres (and sizes) on neighbouring datasets


def _released_sum_statistic(km):
    """From the released centre and size of a one-cluster fit: the noisy sum S + noise (or a lower bound of it)."""
    centre, size = km.cluster_centers_[0, 0], km.cluster_sizes_[0]
    return (centre - 0.0) * size if size >= 1 else -np.inf  # the box [-1, 1] is centred on 0


def _audit(model, D, D1, epsilon, n_runs, seed0=0):
    """Lower confidence bound on the epsilon the released centres show, from the event "S + noise >= h"."""
    params = dict(epsilon=epsilon, delta=0.0, bounds=(-1, 1), privacy=model, budget_split=(0.02, 0.02, 0.96),
                  n_levels=1, n_init=1)
    hits = []
    for X, offset in ((D, 0), (D1, n_runs)):
        t = [_released_sum_statistic(PrivateKMeans(1, random_state=seed0 + offset + s, **params).fit(X))
             for s in range(n_runs)]
        hits.append(int(np.sum(np.asarray(t) >= 1.0 - 1e-9)))
    return _clopper_pearson_epsilon(hits[0], hits[1], n_runs)


AUDIT_PAIRS = {
    # central: D plus one record at the box's upper corner (add/remove neighbours)
    "central": (np.zeros((200, 1)), np.vstack([np.zeros((200, 1)), [[1.0]]])),
    # local: one record's input replaced, lower corner -> upper corner (the sums' worst pair)
    "local": (np.array([[-1.0]]), np.array([[1.0]])),
}


@pytest.mark.slow
@pytest.mark.parametrize("model", ["central", "local"])
def test_audit_released_centres_and_catch_a_2x_overspend(model):
    D, D1 = AUDIT_PAIRS[model]
    epsilon = 1.0
    assert _audit(model, D, D1, epsilon, n_runs=400) <= epsilon
    # the same audit catches a mechanism that secretly spends twice the budget it reports
    assert _audit(model, D, D1, 2 * epsilon, n_runs=600, seed0=10_000) > epsilon
