"""Dask collections as inputs: the Dask result equals the in-memory one, whatever the chunking.

The methods whose statistics add up over the rows (Bradley-Terry pair counts,
private k-means cell counts and sums, the calibration grids) reduce each block
on a two-worker ``LocalCluster`` bound to 127.0.0.1 (threads in one process, so
the module starts fast) and finish in memory; each test compares with the
in-memory call on the same data under three chunkings.
"""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from sklearn_icml.cluster import PrivateKMeans  # noqa: E402
from sklearn_icml.metrics import binned_ece, ls_ece, ls_reliability_curve  # noqa: E402
from sklearn_icml.ranking import BradleyTerryRanker  # noqa: E402

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(300)]

#: Three row chunkings of the same data: one block, uneven blocks, many small blocks (with a short last one).
CHUNKINGS = ["one", "uneven", "small"]


def _chunks(n, how):
    if how == "one":
        return (n,)
    if how == "uneven":
        cut = [n // 7, n // 2 - n // 7, n - n // 2]
        return tuple(cut)
    step = max(1, n // 4 - 1)
    return tuple([step] * (n // step) + ([n % step] if n % step else []))


def _to_dask(a, how):
    a = np.asarray(a)
    return da.from_array(a, chunks=(_chunks(len(a), how),) + a.shape[1:])


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                       host="127.0.0.1", dashboard_address=":0")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_no_module_imports_dask_at_import_time():
    # dask and distributed are imported inside the functions that receive a Dask collection, never at the top of
    # a module: in-memory calls (and `import sklearn_icml.<family>`) stay free of them
    import ast
    from pathlib import Path

    import sklearn_icml

    offenders = []
    for path in Path(sklearn_icml.__file__).parent.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("dask", "distributed")]
    assert not offenders


# ------------------------------------------------------------------------------------------------ passes over the data


def _counted(a, how, calls):
    """``a`` as a Dask array whose block ``i`` is produced afresh by a function that adds 1 to ``calls[i]``.

    Every pass over the collection calls the function once per block (as a lazy generator or a disk read would
    be paid), so ``calls`` counts the passes.
    """
    import dask

    a = np.asarray(a)
    cuts = np.cumsum((0,) + _chunks(len(a), how))

    def make(i):
        calls[i] = calls.get(i, 0) + 1
        return a[cuts[i]:cuts[i + 1]]

    parts = [da.from_delayed(dask.delayed(make, pure=False)(i), shape=(b - t,) + a.shape[1:], dtype=a.dtype)
             for i, (t, b) in enumerate(zip(cuts[:-1], cuts[1:]))]
    return da.concatenate(parts)


def _passes(calls, n_blocks):
    assert sorted(calls) == list(range(n_blocks)), calls
    assert len(set(calls.values())) == 1, calls  # every block read as often
    return calls[0]


def test_each_reduction_reads_the_data_once_per_pass():
    # local threads (no cluster needed to count); the generators count how often each block is produced
    import dask

    y, p, w = _binary_scores(600)
    S = np.random.RandomState(0).dirichlet(np.ones(3), 600)
    labels = np.random.RandomState(1).randint(0, 3, 600)
    X, yb = _battles(n=600)
    n_blocks = len(_chunks(600, "uneven"))
    with dask.config.set(scheduler="sync"):
        for metric in (ls_ece, binned_ece, ls_reliability_curve):
            cy, cp = {}, {}
            metric(_counted(y, "uneven", cy), _counted(p, "uneven", cp), sample_weight=w)
            assert _passes(cy, n_blocks) == _passes(cp, n_blocks) == 1, metric.__name__
        ca = {}  # columns cut from one collection share its blocks: each block is still produced once
        both = _counted(np.column_stack([y, p]), "uneven", ca)
        ls_ece(both[:, 0], both[:, 1], sample_weight=w)
        assert _passes(ca, n_blocks) == 1
        cy, cs = {}, {}
        ls_ece(_counted(labels, "uneven", cy), _counted(S, "uneven", cs), labels=[0, 1, 2])
        assert _passes(cy, n_blocks) == _passes(cs, n_blocks) == 1
        cy, cs = {}, {}  # without labels=, the class of each column needs all the labels first: a pass over y
        ls_ece(_counted(labels, "uneven", cy), _counted(S, "uneven", cs))
        assert (_passes(cy, n_blocks), _passes(cs, n_blocks)) == (2, 1)
        cx, cy = {}, {}
        BradleyTerryRanker(ci_method="bootstrap", n_bootstrap=3, random_state=0).fit(
            _counted(X, "uneven", cx), _counted(yb, "uneven", cy))
        assert _passes(cx, n_blocks) == _passes(cy, n_blocks) == 1
        # private k-means with public bounds on a Dask array (size from the shape): one pass per quadtree level
        # (inherent: each level's candidates are the children of the cells whose noisy counts passed), one for
        # the cluster totals, one for inertia_; with boosting the runs' costs and inertias share one pass
        Xk = _blobs(600, d=2)
        for repeats, expected in ((1, 4 + 2), (2, 2 * (4 + 1) + 1)):
            calls = {}
            PrivateKMeans(3, bounds=(-8, 8), n_levels=4, n_repeats=repeats, random_state=0).fit(
                _counted(Xk, "uneven", calls))
            assert _passes(calls, n_blocks) == expected, repeats


# ------------------------------------------------------------------------------------------------ ranking


def _battles(n_covariates=0, n=2000):
    from sklearn_icml.datasets import make_arena_battles

    X, y = make_arena_battles(n_battles=n, n_competitors=7, n_covariates=n_covariates, random_state=0)[:2]
    return np.asarray(X, dtype=object), np.asarray(y)


@pytest.mark.parametrize("how", CHUNKINGS)
def test_bradley_terry_dask_array_equals_in_memory(client, how):
    X, y = _battles()
    ref = BradleyTerryRanker().fit(X, y)
    got = BradleyTerryRanker().fit(_to_dask(X, how), _to_dask(y, how))
    np.testing.assert_array_equal(got.items_, ref.items_)
    np.testing.assert_array_equal(got.classes_, ref.classes_)
    np.testing.assert_allclose(got.ratings_, ref.ratings_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.rating_intervals_, ref.rating_intervals_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.n_battles_, ref.n_battles_)
    assert got.n_features_in_ == 2


def test_bradley_terry_ratings_follow_the_counts(client):
    # an independent check of the reduced counts: a competitor's weighted battle count is its row count
    X, y = _battles()
    got = BradleyTerryRanker().fit(_to_dask(X, "small"), _to_dask(y, "small"))
    expected = [np.sum(X[:, 0] == item) + np.sum(X[:, 1] == item) for item in got.items_]
    np.testing.assert_array_equal(got.n_battles_, expected)


@pytest.mark.parametrize("how", CHUNKINGS)
def test_bradley_terry_dask_dataframe_with_covariates_weights_and_ipw(client, how):
    X, y = _battles(n_covariates=2)
    rng = np.random.RandomState(0)
    w = rng.randint(0, 3, len(y)).astype(float)
    proba = rng.uniform(0.2, 1.0, len(y))
    frame = pd.DataFrame({"first": X[:, 0], "second": X[:, 1], "len": X[:, 2].astype(float),
                          "md": X[:, 3].astype(float)})
    params = dict(alpha=0.1, ties="drop")
    ref = BradleyTerryRanker(**params).fit(frame, y, sample_weight=w, sampling_proba=proba)
    n_parts = len(_chunks(len(y), how))
    got = BradleyTerryRanker(**params).fit(
        dd.from_pandas(frame, npartitions=n_parts, sort=False), dd.from_pandas(pd.Series(y), npartitions=n_parts,
                                                                               sort=False),
        sample_weight=w, sampling_proba=proba)
    np.testing.assert_allclose(got.ratings_, ref.ratings_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.covariate_coef_, ref.covariate_coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.covariance_, ref.covariance_, rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(got.feature_names_in_, ref.feature_names_in_)


def test_bradley_terry_bootstrap_runs_on_the_workers(client):
    X, y = _battles()
    params = dict(ci_method="bootstrap", n_bootstrap=8, random_state=0)
    ref = BradleyTerryRanker(**params).fit(X, y)
    with distributed.get_task_stream(client) as stream:
        got = BradleyTerryRanker(**params).fit(_to_dask(X, "uneven"), _to_dask(y, "uneven"))
    np.testing.assert_allclose(got.bootstrap_ratings_, ref.bootstrap_ratings_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.rating_intervals_, ref.rating_intervals_, rtol=0, atol=1e-10)
    names = {task["key"][0] if isinstance(task["key"], tuple) else task["key"] for task in stream.data}
    assert any("bootstrap_chunk" in str(name) for name in names), sorted(map(str, names))[:10]


def test_bradley_terry_bootstrap_of_the_rows_on_the_cluster(client):
    # bootstrap_resample="battles" on Dask: Poisson(1) counts per row drawn in each partition (one pass), refits on
    # the workers. Checked against independent derivations: the same seed and partitioning give the same
    # resamples; the spread of the ratings matches the sandwich standard errors and the in-memory bootstrap of
    # the rows (multinomial), to Monte Carlo error
    X, y = _battles()
    params = dict(ci_method="bootstrap", n_bootstrap=100, bootstrap_resample="battles", alpha=1e-3, tol=1e-6,
                  random_state=0)
    ref = BradleyTerryRanker(**params).fit(X, y)
    sandwich_se = np.sqrt(np.diag(BradleyTerryRanker(alpha=1e-3).fit(X, y).covariance_)) * 400 / np.log(10)
    got = BradleyTerryRanker(**params).fit(_to_dask(X, "uneven"), _to_dask(y, "uneven"))
    np.testing.assert_allclose(got.ratings_, ref.ratings_, rtol=0, atol=1e-10)  # the point estimate: full fit
    lower, upper = got.rating_intervals_.T
    assert np.all((lower < got.ratings_) & (got.ratings_ < upper))
    sd, sd_ref = got.bootstrap_ratings_.std(axis=0), ref.bootstrap_ratings_.std(axis=0)
    assert np.all((sd / sandwich_se > 0.7) & (sd / sandwich_se < 1.43)), sd / sandwich_se
    assert np.all((sd / sd_ref > 0.7) & (sd / sd_ref < 1.43)), sd / sd_ref
    small = dict(params, n_bootstrap=4)
    first, again, other = (BradleyTerryRanker(**dict(small, random_state=seed)).fit(
        _to_dask(X, "uneven"), _to_dask(y, "uneven")) for seed in (0, 0, 1))
    np.testing.assert_array_equal(again.bootstrap_ratings_, first.bootstrap_ratings_)
    np.testing.assert_array_equal(again.rating_intervals_, first.rating_intervals_)
    assert not np.allclose(other.bootstrap_ratings_, first.bootstrap_ratings_)


def test_bradley_terry_bootstrap_of_weighted_rows():
    # a log whose every row has weight 2: resampling the counts sees 2n battles, resampling the rows sees n rows
    # of weight 2, so the spread of the ratings is sqrt(2) times larger (in memory and, Poisson, on Dask)
    import dask

    X, y = _battles(n=1000)
    w = np.full(len(y), 2.0)
    params = dict(ci_method="bootstrap", n_bootstrap=100, alpha=1e-3, tol=1e-6, random_state=0)
    counts = BradleyTerryRanker(**params).fit(X, y, sample_weight=w).bootstrap_ratings_.std(axis=0)
    rows = BradleyTerryRanker(bootstrap_resample="battles", **params).fit(X, y, sample_weight=w)
    with dask.config.set(scheduler="sync"):
        w[:3] = 1.0  # mixed weights: the Poisson draws per (distinct battle, weight) group
        on_dask = BradleyTerryRanker(bootstrap_resample="battles", **params).fit(
            _to_dask(X, "small"), _to_dask(y, "small"), sample_weight=_to_dask(w, "small"))
    for sd in (rows.bootstrap_ratings_.std(axis=0), on_dask.bootstrap_ratings_.std(axis=0)):
        ratio = sd / counts / np.sqrt(2.0)
        assert np.all((ratio > 0.7) & (ratio < 1.43)), ratio


def test_bradley_terry_refuses_other_inputs(client):
    import dask.bag as db

    X, y = _battles()
    with pytest.raises(TypeError, match="dask.array.Array, dask.dataframe.DataFrame"):
        BradleyTerryRanker().fit(db.from_sequence(X.tolist(), npartitions=2), _to_dask(y, "one"))
    with pytest.raises(TypeError, match="X as a dask.array.Array"):
        BradleyTerryRanker().fit(X, _to_dask(y, "one"))


# ------------------------------------------------------------------------------------------------ private k-means


def _blobs(n=1500, d=3):
    rng = np.random.RandomState(0)
    centres = rng.uniform(-5, 5, size=(3, d))
    return centres[rng.randint(0, 3, n)] + rng.normal(0, 0.6, size=(n, d))


def _assert_same_private_fit(got, ref):
    # every release is a noisy total: identical noise draws, identical integer counts. The per-cluster sums of
    # fit and the per-cell sums of the partial_fit stream are summed exactly (fixed-point pieces, one rounding at
    # the end), so the centres are identical bit for bit whatever the chunking
    assert got.privacy_ledger_ == ref.privacy_ledger_
    np.testing.assert_array_equal(got.cluster_sizes_, ref.cluster_sizes_)
    np.testing.assert_array_equal(got.cluster_centers_, ref.cluster_centers_)
    np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
    assert got.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
    assert got.epsilon_spent_ == ref.epsilon_spent_ and got.delta_spent_ == ref.delta_spent_


@pytest.mark.parametrize("how", CHUNKINGS)
def test_private_kmeans_dask_equals_in_memory(client, how, monkeypatch):
    from sklearn_icml.cluster import _private_kmeans_dask

    monkeypatch.setattr(_private_kmeans_dask, "_SLICE_ROWS", 97)  # blocks are read in slices: many, uneven
    X = _blobs()
    params = dict(n_clusters=3, epsilon=2.0, bounds=(-8, 8), random_state=0)
    ref = PrivateKMeans(**params).fit(X)
    got = PrivateKMeans(**params).fit(_to_dask(X, how))
    _assert_same_private_fit(got, ref)
    np.testing.assert_array_equal(got.histogram_.counts, ref.histogram_.counts)  # the released tree itself
    np.testing.assert_array_equal(got.mp_centers_, ref.mp_centers_)


@pytest.mark.parametrize("how", ["uneven", "small"])
def test_private_kmeans_dask_private_box_equals_in_memory(client, how):
    # bounds=None: the private box's two grids are counted per block, the noise drawn once on the client
    X = _blobs()
    params = dict(n_clusters=3, epsilon=4.0, random_state=0)
    ref = PrivateKMeans(**params).fit(X)
    got = PrivateKMeans(**params).fit(_to_dask(X, how))
    np.testing.assert_array_equal(got.bounds_, ref.bounds_)
    assert got.privacy_ledger_[0]["label"].startswith("private box")
    _assert_same_private_fit(got, ref)


def test_private_kmeans_dask_dataframe_lloyd_and_boosting(client):
    X = _blobs(d=2)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["u", "v"]), npartitions=3)
    # DP-Lloyd rounds and the exponential mechanism's choice among two runs (costs reduced per block)
    params = dict(n_clusters=3, bounds=(-8, 8), algorithm="lloyd", max_iter=2, n_repeats=2, random_state=1)
    ref = PrivateKMeans(**params).fit(pd.DataFrame(X, columns=["u", "v"]))
    got = PrivateKMeans(**params).fit(frame)
    _assert_same_private_fit(got, ref)
    np.testing.assert_array_equal(got.feature_names_in_, ["u", "v"])
    assert len(got.privacy_ledger_) == 2 * 2 * 2 + 1  # 2 runs x 2 rounds x (counts, sums) + the choice


def test_private_kmeans_partial_fit_streams_dask_chunks(client):
    # one step per chunking: the stream's per-cell sums are exact, so every step's centres are bit-identical
    X = _blobs(1200)
    params = dict(n_clusters=3, bounds=(-8, 8), max_steps=4, random_state=0)
    ref, got = PrivateKMeans(**params), PrivateKMeans(**params)
    for step, how in enumerate(CHUNKINGS):
        batch = X[400 * step:400 * (step + 1)]
        ref.partial_fit(batch)
        got.partial_fit(_to_dask(batch, how))
        _assert_same_private_fit(got, ref)
    assert got.n_steps_ == 3


def test_private_kmeans_dask_refusals(client):
    X = _to_dask(_blobs(200), "uneven")
    with pytest.raises(ValueError, match="central model"):
        PrivateKMeans(3, bounds=(-8, 8), privacy="local").fit(X)
    with pytest.raises(TypeError, match="dask.array.Array, dask.dataframe.DataFrame"):
        import dask.bag as db

        PrivateKMeans(3, bounds=(-8, 8)).fit(db.from_sequence([[0.0, 1.0]] * 4, npartitions=2))


# ------------------------------------------------------------------------------------------------ metrics


def _binary_scores(n=6000):
    rng = np.random.RandomState(0)
    p = rng.uniform(0.02, 0.98, n)
    p[:4], p[4:7] = 1.0, 0.0  # saturated scores: the point masses at +-inf
    y = (rng.uniform(size=n) < p).astype(int)
    w = rng.uniform(0.0, 2.0, n)
    return y, p, w


@pytest.mark.parametrize("how", CHUNKINGS)
def test_calibration_metrics_dask_equal_in_memory(client, how):
    y, p, w = _binary_scores()
    Y, P, W = _to_dask(y, how), _to_dask(p, how), _to_dask(w, how)
    assert ls_ece(Y, P, sample_weight=W) == pytest.approx(ls_ece(y, p, sample_weight=w), rel=0, abs=1e-12)
    assert binned_ece(Y, P, sample_weight=W) == pytest.approx(binned_ece(y, p, sample_weight=w), rel=0, abs=1e-12)
    curve, ref = ls_reliability_curve(Y, P, sample_weight=W), ls_reliability_curve(y, p, sample_weight=w)
    assert curve[0].shape == ref[0].shape == (102,)  # 100 points and the two point masses
    np.testing.assert_allclose(curve[0], ref[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve[1], ref[1], rtol=0, atol=1e-12)


def test_calibration_metrics_dask_dataframe_multiclass(client):
    rng = np.random.RandomState(1)
    S = rng.dirichlet(np.ones(4), 3000)
    labels = np.array(["ant", "bee", "cat", "dog"])[rng.randint(0, 4, 3000)]
    frame, series = dd.from_pandas(pd.DataFrame(S), npartitions=5), dd.from_pandas(pd.Series(labels), npartitions=5)
    assert ls_ece(series, frame) == pytest.approx(ls_ece(labels, S), rel=0, abs=1e-12)
    assert binned_ece(series, frame, multiclass="classwise") == pytest.approx(
        binned_ece(labels, S, multiclass="classwise"), rel=0, abs=1e-12)


def test_calibration_metrics_dask_refusals(client):
    y, p, _ = _binary_scores(500)
    Y, P = _to_dask(y, "uneven"), _to_dask(p, "uneven")
    with pytest.raises(ValueError, match="noise='gaussian' with estimator='grid'"):
        ls_ece(Y, P, noise="uniform")
    with pytest.raises(ValueError, match="strategy='uniform'"):
        binned_ece(Y, P, strategy="quantile")
    with pytest.raises(ValueError, match="sample_weight sums to 0"):
        ls_ece(Y, P, sample_weight=np.zeros(len(y)))
