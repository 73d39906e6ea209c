"""DynamicCorrelationClustering (the paper's Dynamic Agreement) and the planted-partition / stream generators."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_icml.cluster import CorrelationClustering, DynamicCorrelationClustering, correlation_cost
from sklearn_icml.cluster._signed_graph import agreement_labels, canonical_labels, pivot_labels
from sklearn_icml.datasets import make_planted_partition, make_vertex_stream


def _stream_graph(n, k, p_in, p_out, seed, delete_every=4):
    """A planted graph relabelled in insertion order, and its stream with internal ids."""
    A, truth = make_planted_partition(n, k, p_in=p_in, p_out=p_out, random_state=seed)
    events = make_vertex_stream(n, delete_every=delete_every, random_state=seed)
    order = events[events[:, 0] == 0, 1]
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    Ap = sp.csr_array(A[order][:, order])
    return Ap, truth[order], np.c_[events[:, 0], new_id[events[:, 1]]]


def _apply(est, Ap, kind, v):
    if kind == 0:
        est.partial_fit(Ap[[v], : v + 1])
    else:
        est.delete([v])


def _check_partition(est, alive):
    labels = est.labels_
    assert labels.shape == (est._state.graph.n_seen,)
    dead = np.ones(len(labels), dtype=bool)
    dead[alive] = False
    assert (labels[dead] == -1).all()
    live = labels[alive]
    assert (live >= 0).all()
    np.testing.assert_array_equal(np.unique(live), np.arange(live.max() + 1))
    np.testing.assert_array_equal(est.node_ids_, np.sort(alive))
    assert est.n_clusters_ == live.max() + 1


def test_exact_mode_equals_static_agreement_along_a_stream():
    Ap, _, events = _stream_graph(120, 4, 0.7, 0.03, seed=0)
    est = DynamicCorrelationClustering(affinity="precomputed", exact=True, random_state=0)
    alive = []
    for step, (kind, v) in enumerate(events):
        _apply(est, Ap, kind, v)
        alive = alive + [v] if kind == 0 else [u for u in alive if u != v]
        if step % 10 == 0 or step == len(events) - 1:
            ids = np.sort(alive)
            ref, _ = agreement_labels(Ap[ids][:, ids], est.beta, est.lam)
            np.testing.assert_array_equal(canonical_labels(est.labels_[ids]), ref)


def test_exact_fit_equals_static_and_partial_fit():
    rng = np.random.RandomState(0)
    X = np.r_[rng.randn(25, 2) * 0.3, rng.randn(25, 2) * 0.3 + 2.0]
    static = CorrelationClustering().fit(X).labels_
    np.testing.assert_array_equal(DynamicCorrelationClustering(exact=True).fit(X).labels_, static)
    streamed = DynamicCorrelationClustering(exact=True)
    for start in range(0, 50, 7):
        streamed.partial_fit(X[start:start + 7])
    np.testing.assert_array_equal(streamed.labels_, static)


def test_labels_stay_a_valid_partition_of_the_alive_vertices():
    Ap, _, events = _stream_graph(500, 10, 0.8, 0.01, seed=1)
    est = DynamicCorrelationClustering(affinity="precomputed", random_state=0)
    alive = []
    for step, (kind, v) in enumerate(events):
        _apply(est, Ap, kind, v)
        alive = alive + [v] if kind == 0 else [u for u in alive if u != v]
        if step % 100 == 99:
            _check_partition(est, alive)
    _check_partition(est, alive)
    assert est.n_updates_ == len(events)
    est.delete_random(3)
    assert len(est.node_ids_) == len(alive) - 3


def test_stream_quality_and_sublinear_queries():
    n = 800
    Ap, truth, events = _stream_graph(n, 16, 0.8, 0.0125, seed=2)
    est = DynamicCorrelationClustering(affinity="precomputed", random_state=0)
    for kind, v in events:
        _apply(est, Ap, kind, v)
    ids = est.node_ids_
    G = Ap[ids][:, ids]
    ours = correlation_cost(G, est.labels_[ids])
    static = CorrelationClustering(affinity="precomputed").fit(G).cost_
    pivot = np.mean([correlation_cost(G, pivot_labels(G, np.random.RandomState(s))) for s in range(5)])
    assert ours <= 1.2 * static
    assert ours <= 0.7 * pivot
    assert ours <= 1.25 * correlation_cost(G, truth[ids])
    per_update = est.n_queries_ / est.n_updates_
    assert per_update <= 40 * np.log2(n) ** 2
    # recomputing from scratch reads every edge at least twice; we read far fewer
    assert per_update < 0.5 * G.nnz


def test_queries_per_update_grow_far_slower_than_the_degree():
    """Fixed number of clusters, so the mean degree grows with n: ours stays polylogarithmic, online Pivot's
    O(deg) listing per insertion grows with the degree."""
    def per_update(n, method):
        A, _ = make_planted_partition(n, 4, p_in=0.5, p_out=0.01, random_state=0)
        n0 = n - 120
        est = DynamicCorrelationClustering(method=method, affinity="precomputed", random_state=0)
        est.fit(A[:n0, :n0])
        for k, i in enumerate(range(n0, n)):
            est.partial_fit(A[[i], : i + 1])
            if k % 4 == 3:
                est.delete_random()
        assert est.n_updates_ == 150
        return est.n_queries_ / est.n_updates_, A.nnz / n

    (ours_small, deg_small), (ours_large, deg_large) = per_update(500, "agreement"), per_update(2000, "agreement")
    (piv_small, _), (piv_large, _) = per_update(500, "pivot"), per_update(2000, "pivot")
    assert deg_large > 3.5 * deg_small  # the degree grows with n (about 4x)
    slope = np.log(ours_large / ours_small) / np.log(4)
    slope_pivot = np.log(piv_large / piv_small) / np.log(4)
    assert slope < 0.5, slope  # an O(deg) or O(deg^2) algorithm would have a slope of 1 or 2
    assert slope_pivot > 0.8, slope_pivot


def test_same_random_state_same_stream_result_and_pickle_resumes():
    Ap, _, events = _stream_graph(200, 5, 0.8, 0.02, seed=3)
    runs = []
    for _ in range(2):
        est = DynamicCorrelationClustering(affinity="precomputed", random_state=7)
        for kind, v in events[:150]:
            _apply(est, Ap, kind, v)
        runs.append(est)
    np.testing.assert_array_equal(runs[0].labels_, runs[1].labels_)
    assert runs[0].n_queries_ == runs[1].n_queries_
    resumed = pickle.loads(pickle.dumps(runs[0]))
    for est in (runs[1], resumed):
        for kind, v in events[150:]:
            _apply(est, Ap, kind, v)
        est.delete_random(5)
    np.testing.assert_array_equal(runs[1].labels_, resumed.labels_)
    assert runs[1].n_queries_ == resumed.n_queries_


def test_feature_stream_predict_and_score():
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    X = centers[rng.randint(3, size=90)] + 0.2 * rng.randn(90, 2)
    est = DynamicCorrelationClustering(random_state=0)
    for start in range(0, 90, 10):
        est.partial_fit(X[start:start + 10])
    assert est.n_clusters_ == 3
    new = centers + 0.05
    pred = est.predict(new)
    assert len(set(pred.tolist())) == 3 and (pred >= 0).all()
    assert est.predict([[40.0, 40.0]])[0] == -1
    # score: minus the disagreements of the predicted points, counted pair by pair on the rbf graph
    for Z in (new, np.array([[2.0, 0.0], [0.0, 2.0], [0.2, 0.1]])):
        pz = est.predict(Z)
        plus = np.exp(-np.sum((Z[:, None, :] - X[None, :, :]) ** 2, axis=2)) > 0.5
        same = (pz[:, None] >= 0) & (pz[:, None] == est.labels_[None, :])
        assert est.score(Z) == -float(np.sum(plus & ~same) + np.sum(~plus & same))
    # the vertices of a deleted cluster no longer attract new points
    est.delete(np.flatnonzero(est.labels_ == pred[0]))
    assert est.predict(new[:1])[0] == -1


def test_bad_input_errors():
    est = DynamicCorrelationClustering(affinity="precomputed", random_state=0)
    est.partial_fit(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"rows of shape \(n_new, n_seen \+ n_new\) = \(2, 5\)"):
        est.partial_fit(np.zeros((2, 4)))
    X = np.zeros((2, 5))
    X[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.partial_fit(X)
    with pytest.raises(ValueError, match="needs a square"):
        DynamicCorrelationClustering(affinity="precomputed").fit(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="vertex 7 is not alive"):
        est.delete([7])
    est.delete([1])
    with pytest.raises(ValueError, match="vertex 1 is not alive"):
        est.delete([1])
    with pytest.raises(ValueError, match="repeated"):
        est.delete([0, 0])
    with pytest.raises(TypeError, match="integer vertex ids"):
        est.delete([0.5])
    with pytest.raises(ValueError, match="cannot delete 5 vertices, only 2 are alive"):
        est.delete_random(5)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DynamicCorrelationClustering().delete([0])
    assert not hasattr(DynamicCorrelationClustering(), "labels_")


def test_grid_search_over_beta_on_a_precomputed_graph():
    A, _ = make_planted_partition(240, 6, p_in=0.8, p_out=0.01, random_state=4)
    search = GridSearchCV(DynamicCorrelationClustering(affinity="precomputed", random_state=0),
                          {"beta": [0.3, 0.8]}, cv=KFold(3, shuffle=True, random_state=0)).fit(A)
    assert search.best_params_ == {"beta": 0.8}


def test_sparse_graph_with_1e5_vertices_updates():
    A, _ = make_planted_partition(100_000, 20_000, p_in=0.9, p_out=2e-5, random_state=0)
    n0 = 100_000 - 100
    est = DynamicCorrelationClustering(affinity="precomputed", random_state=0).fit(A[:n0, :n0])
    for i in range(n0, 100_000):
        est.partial_fit(A[[i], : i + 1])
    deleted = est.delete_random(25)
    assert len(set(deleted.tolist())) == 25
    labels = est.labels_
    assert labels.shape == (100_000,) and (labels[deleted] == -1).all()
    assert est.n_queries_ / est.n_updates_ < 40 * np.log2(1e5) ** 2


def test_generators():
    A, labels = make_planted_partition(5000, 50, p_in=0.5, p_out=0.001, random_state=0)
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    same = labels[A.tocoo().row] == labels[A.tocoo().col]
    n_in, n_out = same.sum() // 2, (~same).sum() // 2
    pairs_in = 50 * 100 * 99 // 2
    assert abs(n_in / pairs_in - 0.5) < 0.02
    assert abs(n_out / (5000 * 4999 // 2 - pairs_in) - 0.001) < 0.0002
    A2, labels2 = make_planted_partition(5000, 50, p_in=0.5, p_out=0.001, random_state=0)
    assert (A != A2).nnz == 0 and (labels == labels2).all()
    events = make_vertex_stream(101, delete_every=4, random_state=0)
    inserted = events[events[:, 0] == 0, 1]
    np.testing.assert_array_equal(np.sort(inserted), np.arange(101))
    alive = set()
    for kind, v in events:
        if kind == 0:
            alive.add(v)
        else:
            assert v in alive
            alive.remove(v)
    assert len(alive) == 101 - 25
    assert (make_vertex_stream(10, delete_every=None)[:, 0] == 0).all()


def _brute_rbf(X, gamma, threshold):
    D = np.exp(-gamma * np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)) > threshold
    np.fill_diagonal(D, False)
    return D


def test_feature_stream_exact_mode_equals_static_agreement_on_the_stream_graph():
    """Inserting feature vectors in batches (through the neighbour index) builds the rbf graph of the alive points."""
    rng = np.random.RandomState(1)
    X = rng.randint(4, size=(300, 1)) * 3.0 + 0.6 * rng.randn(300, 2)
    est = DynamicCorrelationClustering(exact=True, gamma=1.0, threshold=0.3, random_state=0).fit(X[:40])
    alive = list(range(40))
    for start in range(40, 300, 13):
        est.partial_fit(X[start:start + 13])
        alive += list(range(start, min(start + 13, 300)))
        gone = est.delete_random(3)
        alive = [v for v in alive if v not in set(gone.tolist())]
    ids = np.sort(alive)
    D = _brute_rbf(X[ids], 1.0, 0.3)
    graph = est._state.graph
    got = np.zeros_like(D)
    index = {v: i for i, v in enumerate(ids.tolist())}
    for v in ids.tolist():
        for u in graph.nbrs[v]:
            got[index[v], index[u]] = True
    np.testing.assert_array_equal(got, D)
    ref, _ = agreement_labels(sp.csr_array(D), est.beta, est.lam)
    np.testing.assert_array_equal(canonical_labels(est.labels_[ids]), ref)


def test_knn_affinity_fit_equals_static_and_stream_edges_are_mutual_neighbours_at_arrival():
    rng = np.random.RandomState(2)
    X = rng.randint(3, size=(150, 1)) * 4.0 + rng.randn(150, 2)
    k = 6
    dyn = DynamicCorrelationClustering(affinity="knn", n_neighbors=k, exact=True, random_state=0).fit(X[:100])
    static = CorrelationClustering(affinity="knn", n_neighbors=k).fit(X[:100])
    np.testing.assert_array_equal(canonical_labels(dyn.labels_), static.labels_)
    dyn.delete([3, 50])
    alive = [v for v in range(100) if v not in (3, 50)]
    for v in range(100, 150):
        dyn.partial_fit(X[[v]])
        # brute force: v's k nearest among the alive points, each having v closer than its own k-th other point
        D = np.sqrt(((X[alive][:, None] - X[alive][None]) ** 2).sum(axis=2))
        dv = np.sqrt(((X[alive] - X[v]) ** 2).sum(axis=1))
        near = np.argsort(dv, kind="stable")[:k]
        want = set()
        for i in near.tolist():
            others = np.sort(np.r_[np.delete(D[i], i), dv[i]])  # i's distances to the other alive points and v
            if dv[i] <= others[k - 1]:
                want.add(alive[i])
        assert set(dyn._state.graph.nbrs[v]) == want
        alive.append(v)
    assert dyn.n_clusters_ >= 3 and dyn.n_load_queries_ > 0


def test_load_queries_are_counted_apart_from_the_updates():
    A, _ = make_planted_partition(200, 4, p_in=0.8, p_out=0.01, random_state=0)
    est = DynamicCorrelationClustering(affinity="precomputed", random_state=0).fit(A)
    deg = np.diff(sp.csr_array(A).indptr)
    assert est.n_load_queries_ == deg.sum() + np.sum(deg ** 2)
    assert est.n_queries_ == 0 and est.n_updates_ == 0
    assert DynamicCorrelationClustering(affinity="precomputed").partial_fit(A[:1, :1]).n_load_queries_ == 0


def test_online_pivot_is_pivot_in_arrival_order_and_costs_one_listing_per_insert():
    Ap, _, events = _stream_graph(300, 6, 0.7, 0.02, seed=5, delete_every=None)
    est = DynamicCorrelationClustering(method="pivot", affinity="precomputed", random_state=0)
    for step, (kind, v) in enumerate(events):
        before = est.n_queries_ if step else 0
        _apply(est, Ap, kind, v)
        deg = Ap[[v], :v].nnz
        assert est.n_queries_ - before == deg + 1  # a degree query and one per neighbour listed
        if step % 50 == 49:
            n = v + 1
            ref = pivot_labels(Ap[:n][:, :n], None, rank=np.arange(n))
            np.testing.assert_array_equal(est.labels_, ref)
    # deletions keep a valid partition; a deleted pivot's members are placed again
    alive = list(range(300))
    for v in est.delete_random(120).tolist():
        alive.remove(v)
    _check_partition(est, alive)
    state = est._state
    for v in alive:  # every vertex sits with an alive pivot adjacent to it, or is a pivot
        p = state.pivot_of[v]
        assert p == v or (state.pivot_of[p] == p and p in state.graph.pos[v])
    fit = DynamicCorrelationClustering(method="pivot", affinity="precomputed").fit(Ap)
    np.testing.assert_array_equal(fit.labels_, pivot_labels(Ap, None, rank=np.arange(300)))


@pytest.mark.parametrize("exact", [False, True], ids=["sampled", "exact"])
def test_kept_components_equal_a_recomputation_along_a_stream(exact):
    """labels_ comes from components kept along the stream; recomputing them from the links is the oracle."""
    n = 80 if exact else 200
    Ap, _, events = _stream_graph(n, 4, 0.8, 0.03, seed=1, delete_every=3)
    est = DynamicCorrelationClustering(affinity="precomputed", exact=exact, random_state=1)
    for step, (kind, v) in enumerate(events):
        _apply(est, Ap, kind, v)
        if step % 4 == 0:
            np.testing.assert_array_equal(est.labels_, est._state.labels_from_scratch())
    sizes = np.bincount(est.labels_[est.labels_ >= 0])
    assert (sizes >= 5).sum() >= 2  # real clusters, not only singletons
    # a bulk load followed by updates
    n0 = n // 2
    est = DynamicCorrelationClustering(affinity="precomputed", exact=exact, random_state=1).fit(Ap[:n0, :n0])
    for v in range(n0, n):
        est.partial_fit(Ap[[v], : v + 1])
        if v % 3 == 0:
            est.delete_random()
            np.testing.assert_array_equal(est.labels_, est._state.labels_from_scratch())
