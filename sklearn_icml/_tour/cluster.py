"""Tour entries of the cluster family."""

from ._base import TourEntry, TourResult, fit_timed


def _run_correlation(device="cpu", quick=False):
    import numpy as np

    from ..cluster import CorrelationClustering
    from ..datasets import make_planted_partition

    n, k = (1000, 20) if quick else (2000, 40)
    A, _ = make_planted_partition(n, k, p_in=0.8, p_out=0.005, random_state=0)
    ours, seconds = fit_timed(CorrelationClustering(affinity="precomputed"), A)
    pivot = [CorrelationClustering(affinity="precomputed", method="pivot", n_runs=1, random_state=s).fit(A).cost_
             for s in range(10)]
    return TourResult(metric="disagreements", score=ours.cost_, baseline="Pivot, 10 runs",
                      baseline_score=float(np.mean(pivot)), fit_seconds=seconds, higher_is_better=False)


def _run_dynamic_correlation(device="cpu", quick=False):
    import time

    import numpy as np

    from ..cluster import CorrelationClustering, DynamicCorrelationClustering, correlation_cost
    from ..datasets import make_planted_partition, make_vertex_stream

    n, k = (800, 16) if quick else (2000, 40)
    A, _ = make_planted_partition(n, k, p_in=0.8, p_out=10.0 / n, random_state=0)
    events = make_vertex_stream(n, delete_every=4, random_state=0)
    order = events[events[:, 0] == 0, 1]  # the estimator numbers vertices in insertion order
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    A = A[order][:, order]
    est = DynamicCorrelationClustering(affinity="precomputed", random_state=0)
    start = time.perf_counter()
    for kind, v in events:
        v = int(new_id[v])
        if kind == 0:
            est.partial_fit(A[[v], : v + 1])
        else:
            est.delete([v])
    seconds = time.perf_counter() - start
    alive = est.node_ids_
    G = A[alive][:, alive]
    pivot = [CorrelationClustering(affinity="precomputed", method="pivot", n_runs=1, random_state=s).fit(G).cost_
             for s in range(10)]
    return TourResult(metric="final disagreements",
                      score=correlation_cost(G, est.labels_[alive]), baseline="Pivot rerun, 10 runs",
                      baseline_score=float(np.mean(pivot)), fit_seconds=seconds, higher_is_better=False)


def _run_private_kmeans(device="cpu", quick=False):
    from sklearn.cluster import KMeans

    from ..cluster import PrivateKMeans
    from ..datasets import make_bounded_blobs

    X, _, bounds = make_bounded_blobs(5000 if quick else 20000, n_features=2 if quick else 10,
                                      centers=5 if quick else 8, random_state=1)
    k = 5 if quick else 8
    optimum = KMeans(k, n_init=10, random_state=0).fit(X).inertia_
    ours, seconds = fit_timed(PrivateKMeans(k, epsilon=1.0, bounds=bounds, device=device, random_state=0), X)
    lloyd = PrivateKMeans(k, epsilon=1.0, bounds=bounds, algorithm="lloyd", device=device, random_state=0).fit(X)
    return TourResult(metric="cost/optimum, eps=1", score=-ours.score(X) / optimum,
                      baseline="DP-Lloyd", baseline_score=-lloyd.score(X) / optimum,
                      fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("PrivateKMeans", "S3", "differentially private k-means of bounded blobs", _run_private_kmeans,
              uses_device=True),
    TourEntry("CorrelationClustering", "S7", "correlation clustering of a planted signed graph", _run_correlation),
    TourEntry("DynamicCorrelationClustering", "S7", "correlation clustering of a vertex stream",
              _run_dynamic_correlation),
]
