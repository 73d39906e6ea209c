"""CorrelationClustering (static Agreement and Pivot) and correlation_cost."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.cluster import CorrelationClustering, correlation_cost
from sklearn_icml.cluster._signed_graph import canonical_labels, estimated_sym_diff, pivot_labels
from sklearn_icml.datasets import make_planted_partition


def _random_graph(n, p, seed):
    rng = np.random.RandomState(seed)
    D = np.triu(rng.rand(n, n) < p, 1)
    return D | D.T


def _brute_agreement(D, beta, lam):
    """The Agreement algorithm written from its definition with Python sets, and DFS components."""
    n = len(D)
    N = [set(np.flatnonzero(D[i]).tolist()) | {i} for i in range(n)]
    agree = {(u, v): len(N[u] ^ N[v]) <= beta * max(len(N[u]), len(N[v]))
             for u in range(n) for v in range(u + 1, n) if D[u, v]}
    n_agree = np.zeros(n, dtype=int)
    for (u, v), a in agree.items():
        n_agree[u] += a
        n_agree[v] += a
    light = [len(N[u]) - (n_agree[u] + 1) > lam * len(N[u]) for u in range(n)]
    adj = [[] for _ in range(n)]
    for (u, v), a in agree.items():
        if a and not (light[u] and light[v]):
            adj[u].append(v)
            adj[v].append(u)
    labels = -np.ones(n, dtype=int)
    k = 0
    for s in range(n):
        if labels[s] < 0:
            stack = [s]
            labels[s] = k
            while stack:
                x = stack.pop()
                for y in adj[x]:
                    if labels[y] < 0:
                        labels[y] = k
                        stack.append(y)
            k += 1
    return labels, np.array(light)


def _brute_cost(D, labels):
    same = labels[:, None] == labels[None, :]
    return int(np.triu(D & ~same, 1).sum() + np.triu(~D & same, 1).sum())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("beta,lam", [(0.4, 0.2), (0.8, 0.4), (1.2, 0.1)])
def test_agreement_equals_its_definition(seed, beta, lam):
    D = _random_graph(70, 0.15, seed)
    est = CorrelationClustering(affinity="precomputed", beta=beta, lam=lam).fit(D.astype(float))
    ref, light = _brute_agreement(D, beta, lam)
    np.testing.assert_array_equal(est.labels_, canonical_labels(ref))
    np.testing.assert_array_equal(est.light_mask_, light)
    assert est.cost_ == _brute_cost(D, est.labels_)


def _sequential_pivot(D, rank):
    labels = -np.ones(len(D), dtype=int)
    for v in np.argsort(rank):
        if labels[v] < 0:
            labels[v] = v
            for u in np.flatnonzero(D[v]):
                if labels[u] < 0:
                    labels[u] = v
    return canonical_labels(labels)


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_pivot_is_the_sequential_pivot(seed):
    D = _random_graph(80, 0.1, seed)
    labels = pivot_labels(sp.csr_array(D), np.random.RandomState(seed))
    rank = np.random.RandomState(seed).permutation(80)
    np.testing.assert_array_equal(labels, _sequential_pivot(D, rank))


def test_pivot_keeps_the_best_of_its_runs_and_follows_random_state():
    D = _random_graph(90, 0.08, 3)
    best = CorrelationClustering(affinity="precomputed", method="pivot", n_runs=8, random_state=0).fit(D)
    single = [CorrelationClustering(affinity="precomputed", method="pivot", n_runs=1, random_state=s).fit(D).cost_
              for s in range(8)]
    assert best.cost_ <= np.median(single)
    again = CorrelationClustering(affinity="precomputed", method="pivot", n_runs=8, random_state=0).fit(D)
    np.testing.assert_array_equal(best.labels_, again.labels_)
    assert not best.light_mask_.any()


def test_cost_matches_brute_force_dense_sparse_and_singletons():
    rng = np.random.RandomState(0)
    S = rng.choice([-1.0, 1.0], size=(40, 40))
    S = np.triu(S, 1)
    S = S + S.T
    labels = rng.randint(0, 5, size=40)
    D = S > 0
    assert correlation_cost(S, labels) == _brute_cost(D, labels)
    assert correlation_cost(sp.csr_array(np.where(D, 1.0, 0.0)), labels) == _brute_cost(D, labels)
    # -1 labels are singletons of their own, string labels work
    lab = labels.copy()
    lab[:10] = -1
    sing = lab.copy()
    sing[:10] = 100 + np.arange(10)
    assert correlation_cost(S, lab) == _brute_cost(D, sing)
    assert correlation_cost(S, np.array([f"c{x}" for x in labels])) == _brute_cost(D, labels)
    with pytest.raises(ValueError, match="labels must have shape"):
        correlation_cost(S, labels[:-1])
    with pytest.raises(ValueError, match="square"):
        correlation_cost(S[:, :30], labels)


def test_planted_partition_agreement_beats_pivot_and_nears_the_truth():
    A, truth = make_planted_partition(600, 12, p_in=0.8, p_out=0.01, random_state=0)
    agree = CorrelationClustering(affinity="precomputed").fit(A)
    pivots = [CorrelationClustering(affinity="precomputed", method="pivot", n_runs=1, random_state=s).fit(A).cost_
              for s in range(5)]
    truth_cost = correlation_cost(A, truth)
    assert agree.cost_ <= 1.1 * truth_cost
    assert agree.cost_ <= 0.6 * np.mean(pivots)
    assert adjusted_rand_score(truth, agree.labels_) > 0.9


def test_precomputed_dense_sparse_signs_and_union_rule():
    A, _ = make_planted_partition(150, 5, p_in=0.7, p_out=0.02, random_state=1)
    dense01 = A.toarray().astype(float)
    signs = np.where(dense01 > 0, 1.0, -1.0)
    ref = CorrelationClustering(affinity="precomputed").fit(A).labels_
    np.testing.assert_array_equal(CorrelationClustering(affinity="precomputed").fit(dense01).labels_, ref)
    np.testing.assert_array_equal(CorrelationClustering(affinity="precomputed").fit(signs).labels_, ref)
    # the upper triangle alone gives the same graph: a pair is '+' when either entry is
    upper = sp.csr_array(sp.triu(A, 1))
    np.testing.assert_array_equal(CorrelationClustering(affinity="precomputed").fit(upper).labels_, ref)


def test_bad_input_errors():
    est = CorrelationClustering(affinity="precomputed")
    with pytest.raises(ValueError, match="CorrelationClustering with affinity='precomputed' needs a square"):
        est.fit(np.ones((5, 4)))
    X = np.ones((5, 5))
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X)
    with pytest.raises(ValueError, match="method"):
        CorrelationClustering(method="kwik").fit(np.ones((4, 2)))


def test_feature_affinities_build_the_right_graph():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    rbf = np.exp(-0.7 * d2) > 0.4
    np.fill_diagonal(rbf, False)
    got = CorrelationClustering(gamma=0.7, threshold=0.4).fit(X)
    assert got.n_edges_ == rbf.sum() // 2
    assert got.cost_ == _brute_cost(rbf, got.labels_)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = Xn @ Xn.T > 0.6
    np.fill_diagonal(cos, False)
    got = CorrelationClustering(affinity="cosine", threshold=0.6).fit(X)
    assert got.n_edges_ == cos.sum() // 2
    order = np.argsort(d2, axis=1)[:, 1:6]
    knn = np.zeros_like(rbf)
    knn[np.repeat(np.arange(60), 5), order.ravel()] = True
    got = CorrelationClustering(affinity="knn", n_neighbors=5).fit(X)
    assert got.n_edges_ == (knn & knn.T).sum() // 2


def test_predict_joins_the_best_cluster_or_stays_alone():
    X = np.r_[np.zeros((5, 2)), np.full((5, 2), 5.0)] + 0.01 * np.arange(10)[:, None]
    est = CorrelationClustering(random_state=0).fit(X)
    pred = est.predict([[0.05, 0.0], [5.02, 5.0], [50.0, 50.0]])
    np.testing.assert_array_equal(pred, [est.labels_[0], est.labels_[5], -1])
    # precomputed: rows against the fitted vertices
    A, _ = make_planted_partition(100, 4, p_in=0.9, p_out=0.0, shuffle=False, random_state=0)
    est = CorrelationClustering(affinity="precomputed").fit(A)
    rows = np.zeros((2, 100))
    rows[0, :20] = 1  # all '+' to the first group
    np.testing.assert_array_equal(est.predict(rows), [est.labels_[0], -1])
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((2, 99)))


def test_score_tunes_beta_with_grid_search():
    A, truth = make_planted_partition(300, 6, p_in=0.8, p_out=0.01, random_state=2)
    search = GridSearchCV(CorrelationClustering(affinity="precomputed"),
                          {"beta": [0.2, 0.4, 0.8], "lam": [0.2, 0.4]},
                          cv=KFold(3, shuffle=True, random_state=0)).fit(A)
    assert search.best_params_["beta"] == 0.8
    scores = dict(zip(map(str, search.cv_results_["params"]), search.cv_results_["mean_test_score"]))
    assert scores[str({"beta": 0.8, "lam": 0.4})] > scores[str({"beta": 0.2, "lam": 0.4})]
    assert adjusted_rand_score(truth, search.best_estimator_.labels_) > 0.9


def test_in_a_pipeline():
    rng = np.random.RandomState(0)
    X = np.r_[rng.randn(30, 2) * 0.1, rng.randn(30, 2) * 0.1 + 4.0] * 10
    y = np.repeat([0, 1], 30)
    labels = make_pipeline(StandardScaler(), CorrelationClustering(gamma=2.0)).fit_predict(X)
    assert adjusted_rand_score(y, labels) == 1.0


def test_sparse_graph_with_1e5_vertices():
    A, truth = make_planted_partition(100_000, 20_000, p_in=0.9, p_out=2e-5, random_state=0)
    start = time.perf_counter()
    agree = CorrelationClustering(affinity="precomputed").fit(A)
    pivot = CorrelationClustering(affinity="precomputed", method="pivot", n_runs=1, random_state=0).fit(A)
    assert time.perf_counter() - start < 60
    assert agree.labels_.shape == (100_000,)
    assert agree.cost_ <= 1.1 * correlation_cost(A, truth) < pivot.cost_


@pytest.mark.peers
def test_agreement_is_close_to_clumppy_on_a_complete_signed_graph():
    clumppy = pytest.importorskip("clumppy")
    A, truth = make_planted_partition(200, 5, p_in=0.85, p_out=0.02, random_state=3)
    D = A.toarray()
    i, j = np.triu_indices(200, 1)
    edges = [(int(a), int(b), 1.0 if D[a, b] else -1.0) for a, b in zip(i, j)]
    peer = np.asarray(clumppy.correlation_clustering(edges, 200, seed=0))
    ours = CorrelationClustering(affinity="precomputed").fit(A)
    peer_cost = correlation_cost(A, peer)
    assert peer_cost <= correlation_cost(A, truth) * 1.05  # the peer is a strong reference here
    assert ours.cost_ <= 1.1 * peer_cost


def test_tuning_the_graph_on_a_labelled_subset_picks_the_planted_setting_not_singletons():
    """The user guide's recipe: the graph is chosen against 60 labels, not by score (which drifts to singletons)."""
    import warnings

    from sklearn.datasets import make_blobs
    from sklearn.model_selection import ParameterGrid

    X, y = make_blobs(600, centers=6, cluster_std=0.6, random_state=0)
    labelled = np.random.RandomState(0).choice(len(X), 60, replace=False)
    grid = {"gamma": [0.125, 0.5, 2.0, 8.0], "threshold": [0.2, 0.5, 0.8]}
    fits = [CorrelationClustering(**p).fit(X) for p in ParameterGrid(grid)]
    chosen = max(fits, key=lambda cc: adjusted_rand_score(y[labelled], cc.labels_[labelled]))
    # the choice recovers the planted groups on all 600 points, and is the best setting of the grid there
    assert adjusted_rand_score(y, chosen.labels_) > 0.9
    assert adjusted_rand_score(y, chosen.labels_) >= max(adjusted_rand_score(y, cc.labels_) for cc in fits) - 0.02
    singletons = np.count_nonzero(np.bincount(chosen.labels_) == 1)
    assert singletons < 0.05 * len(X)
    # the trap the docs warn about: the search on score picks the sparsest graph, mostly singletons
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = GridSearchCV(CorrelationClustering(), grid, cv=KFold(3, shuffle=True, random_state=0)).fit(X)
    trap = search.best_estimator_
    assert trap.n_clusters_ > 200 and adjusted_rand_score(y, trap.labels_) < 0.2
    assert any("compares clusterings of one graph only" in str(w.message) for w in caught)


def test_score_warns_only_on_a_sparse_graph_cut_into_tiny_clusters():
    import warnings

    rng = np.random.RandomState(0)
    X = np.r_[rng.randn(30, 2) * 0.1, rng.randn(30, 2) * 0.1 + 4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CorrelationClustering(gamma=2.0).fit(X).score(X[:5])
        # all singletons on a dense graph (every vertex light) is a clustering of one graph: no warning
        A, _ = make_planted_partition(100, 2, p_in=0.8, p_out=0.01, random_state=0)
        CorrelationClustering(affinity="precomputed", beta=0.05).fit(A).score(A[:5])
    with pytest.warns(UserWarning, match=r"mean '\+' degree below 4\) and cut into clusters of fewer than 4"):
        CorrelationClustering(gamma=1e6).fit(X).score(X[:5])
    with warnings.catch_warnings():  # a precomputed graph has no graph settings to drift over
        warnings.simplefilter("error")
        CorrelationClustering(affinity="precomputed").fit(np.zeros((20, 20))).score(np.zeros((3, 20)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_correlation_cost_refuses_non_finite_labels(bad):
    A = np.ones((3, 3))
    with pytest.raises(ValueError, match="correlation_cost: labels must be finite; got (nan|inf) at position 1"):
        correlation_cost(A, [0.0, bad, 1.0])
    with pytest.raises(ValueError, match="labels must not hold None or NaN"):
        correlation_cost(A, np.array(["a", None, "b"], dtype=object))
    assert correlation_cost(A, [0.0, -1.0, 0.0]) == 2  # -1 is a documented singleton


def test_sampled_agreement_matches_exact_cost_and_follows_random_state():
    A, truth = make_planted_partition(2000, 40, p_in=0.8, p_out=0.005, random_state=1)
    exact = CorrelationClustering(affinity="precomputed").fit(A)
    for s in (8, 16):
        sampled = CorrelationClustering(affinity="precomputed", sample_size=s, random_state=0).fit(A)
        assert sampled.cost_ <= 1.05 * exact.cost_
        assert adjusted_rand_score(truth, sampled.labels_) > 0.95
        again = CorrelationClustering(affinity="precomputed", sample_size=s, random_state=0).fit(A)
        np.testing.assert_array_equal(again.labels_, sampled.labels_)
    # the estimators are the definitions': on a graph of disjoint cliques every tested edge agrees exactly
    cliques = sp.block_diag([np.ones((5, 5)) - np.eye(5)] * 6, format="csr")
    labels = CorrelationClustering(affinity="precomputed", sample_size=3, random_state=0).fit(cliques).labels_
    np.testing.assert_array_equal(labels, np.repeat(np.arange(6), 5))
    # an isolated vertex is its own cluster
    assert CorrelationClustering(affinity="precomputed", sample_size=4).fit(sp.csr_array((3, 3))).n_clusters_ == 3


def test_sampled_symmetric_difference_averages_to_the_definition():
    """The sampled Agreement's estimate of |N[u] Δ N[v]| is unbiased: with many members it is the set count."""
    D = _random_graph(40, 0.25, 3)
    N = [set(np.flatnonzero(D[i]).tolist()) | {i} for i in range(len(D))]
    u, v = np.nonzero(np.triu(D, 1))
    exact = np.array([len(N[a] ^ N[b]) for a, b in zip(u, v)])
    s = 4000  # standard error of one estimate below max |N| / sqrt(s) / sqrt(2), about 0.25 here
    for a, b in [(u, v), (v, u), (u[::-1], v[::-1])]:  # grouped by the first vertex, by the second, by neither
        est = estimated_sym_diff(sp.csr_array(D), a, b, s, np.random.default_rng(0))
        ref = exact if a is u else np.array([len(N[x] ^ N[y]) for x, y in zip(a, b)])
        assert np.abs(est - ref).max() < 1.0
        assert abs(np.mean(est - ref)) < 0.05
    # two 5-cliques sharing vertex 4: inside a clique off the shared vertex nothing can be missed
    C = np.zeros((9, 9), dtype=bool)
    C[:5, :5] = C[4:, 4:] = True
    np.fill_diagonal(C, False)
    est = estimated_sym_diff(sp.csr_array(C), np.array([0, 3, 4]), np.array([1, 4, 5]), 200, np.random.default_rng(1))
    assert est[0] == 0 and est[1] > 0 and est[2] > 0
