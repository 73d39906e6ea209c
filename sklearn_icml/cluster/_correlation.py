"""Static correlation clustering: the Agreement algorithm and Pivot (KwikCluster), and the cost."""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..utils._random import draw_seeds
from ..utils._sklearn_private import Interval, StrOptions, _fit_context, validate_params
from ..utils._torch import as_numpy
from ._signed_graph import (
    agreement_labels,
    assign_to_clusters,
    cross_disagreements,
    disagreements,
    feature_graph,
    pivot_labels,
    plus_adjacency_from_matrix,
    plus_rows,
    radius_for,
    sampled_agreement_labels,
    unique_negatives,
)

__all__ = ["CorrelationClustering", "correlation_cost"]

_AFFINITY_CONSTRAINTS = {
    "affinity": [StrOptions({"rbf", "cosine", "knn", "precomputed"})],
    "gamma": [Interval(Real, 0, None, closed="neither")],
    "threshold": [Interval(Real, None, None, closed="neither")],
    "n_neighbors": [Interval(Integral, 1, None, closed="left")],
}


class _SignedGraphMixin:
    """Turning X into the '+' adjacency, and '+' rows of new points against the fitted ones.

    Used by both correlation clusterers; the host class has the parameters
    ``affinity``, ``gamma``, ``threshold``, ``n_neighbors``.
    """

    def _validate_X(self, X, *, reset):
        return validate_data(self, as_numpy(X), reset=reset, accept_sparse="csr",
                             dtype=[np.float64, np.float32])

    def _fit_graph(self, X):
        """'+' adjacency of the validated fit data; remembers what predict needs."""
        name = type(self).__name__
        if self.affinity == "precomputed":
            return plus_adjacency_from_matrix(X, self.threshold, name=name)
        n = X.shape[0]
        if self.affinity == "knn":
            k = min(self.n_neighbors, max(n - 1, 1))
            nn = NearestNeighbors(n_neighbors=k).fit(X)
            self._nn = nn
            self._kth_distance = (nn.kneighbors(None, n_neighbors=k)[0][:, -1] if n > 1
                                  else np.full(n, np.inf))
            return feature_graph(nn, X, "knn", self.threshold, k, self._kth_distance, self_graph=True)
        radius = radius_for(self.affinity, self.gamma, self.threshold)
        if radius is None:  # no pair can pass the threshold
            self._nn = None
            return sp.csr_array((n, n), dtype=bool)
        metric = "cosine" if self.affinity == "cosine" else "euclidean"
        self._nn = NearestNeighbors(radius=radius, metric=metric).fit(X)
        return feature_graph(self._nn, X, self.affinity, self.threshold, None, self_graph=True)

    def _plus_rows(self, X):
        """'+' rows (n_new, n_fit) of validated new points against the fit points."""
        if self.affinity == "precomputed":
            return plus_rows(X, self.threshold)
        if self._nn is None:
            return sp.csr_array((X.shape[0], self._n_fit), dtype=bool)
        k = min(self.n_neighbors, self._n_fit)
        return feature_graph(self._nn, X, self.affinity, self.threshold, k,
                             getattr(self, "_kth_distance", None), self_graph=False)

    def _tags_pairwise(self, tags):
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.affinity == "precomputed"
        return tags


def _warn_if_sparse_graph(est):
    """The score's known trap: over graph settings it prefers sparse graphs cut into tiny clusters.

    Only for graphs built from features (their settings are what a search would tune); the message
    has no numbers, so Python's default filter shows it once per place rather than once per fit.
    """
    if est.affinity == "precomputed":
        return
    n = int(np.count_nonzero(est.labels_ >= 0))  # alive vertices (a stream's deleted ids are -1)
    if n < 8:
        return
    if 2.0 * est.n_edges_ / n < 4 and est.n_clusters_ > n / 4:
        warnings.warn(
            f"{type(est).__name__}.score: the fitted graph is sparse (mean '+' degree below 4) and cut into "
            "clusters of fewer than 4 vertices on average. score counts disagreements on this estimator's own "
            "graph, so it compares clusterings of one graph only and favours sparser graphs: do not use it to "
            "choose affinity, gamma, threshold or n_neighbors; compare labels_ with known labels on a subset "
            "(adjusted_rand_score) instead.",
            UserWarning, stacklevel=3,
        )


def _pivot_run(A, seed):
    labels = pivot_labels(A, np.random.RandomState(seed))
    return disagreements(A, labels), labels


class CorrelationClustering(_SignedGraphMixin, ClusterMixin, BaseEstimator):
    """Correlation clustering of a signed graph: the Agreement algorithm or Pivot (KwikCluster).

    Read more in the :ref:`User Guide <correlation_clustering>`.

    Correlation clustering partitions the vertices of a complete signed graph
    so as to minimise the disagreements: '+' edges between clusters plus '−'
    edges inside clusters. The number of clusters is not given; it follows from
    the graph. The graph is built from ``X``: feature vectors give a '+' edge
    where the similarity exceeds ``threshold`` (rbf, cosine) or between mutual
    nearest neighbours (knn), and ``affinity="precomputed"`` takes a square
    signed matrix, dense or sparse, whose entries above ``threshold`` are '+'.
    Every other pair is '−', and only the '+' edges are stored (sparse).

    ``method="agreement"`` runs the Agreement algorithm, the static base of the
    dynamic algorithm of Cohen-Addad, Lattanzi, Maggiori and Parotsidis (ICML
    2024): keep the edges whose endpoints have similar closed neighbourhoods,
    drop the edges between two "light" vertices, and return the connected
    components. ``method="pivot"`` runs the classic 3-approximation Pivot
    ``n_runs`` times and keeps the run with the fewest disagreements.

    Parameters
    ----------
    method : {"agreement", "pivot"}, default="agreement"
        The algorithm.
    beta : float, default=0.8
        Agreement threshold: the '+' edge ``(u, v)`` is in agreement when
        ``|N[u] Δ N[v]| <= beta * max(|N[u]|, |N[v]|)``, ``N[u]`` being the
        closed '+' neighbourhood. Only for ``method="agreement"``.
    lam : float, default=0.4
        Lightness threshold: a vertex is light when more than a ``lam`` fraction
        of its closed neighbourhood is not in agreement with it. Only for
        ``method="agreement"``.
    sample_size : int or None, default=None
        ``None``: the exact Agreement algorithm, ``O(sum of squared
        degrees)``. An int ``s``: the sampled Agreement, near-linear: every
        vertex tests ``s`` random neighbours, each agreement is estimated
        from ``s`` random members of the two neighbourhoods, and the clusters
        are the components of the kept tested edges (see Notes). Only for
        ``method="agreement"``; draws from ``random_state``.
    n_runs : int, default=10
        Runs of Pivot (random orders); the best is kept. Only for ``method="pivot"``.
    affinity : {"rbf", "cosine", "knn", "precomputed"}, default="rbf"
        How ``X`` becomes a signed graph. "rbf": '+' iff
        ``exp(-gamma * ||x - y||^2) > threshold``; "cosine": '+' iff the cosine
        similarity exceeds ``threshold``; "knn": '+' between mutual
        ``n_neighbors``-nearest neighbours; "precomputed": ``X`` is a square
        signed matrix and a pair is '+' when either of its two entries exceeds
        ``threshold`` (the diagonal is ignored, missing sparse entries are '−').
    gamma : float, default=1.0
        Kernel coefficient of the rbf affinity.
    threshold : float, default=0.5
        Similarity above which a pair is '+' (rbf, cosine, precomputed). The
        default suits 0/1 and -1/+1 precomputed sign matrices.
    n_neighbors : int, default=10
        Neighbours of the knn affinity.
    random_state : int, RandomState instance or None, default=None
        Seeds the orders of Pivot. Agreement is deterministic.
    n_jobs : int, default=None
        Parallel Pivot runs (joblib); None means 1 unless in a joblib context.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of every vertex, numbered 0.. in order of first vertex.
    n_clusters_ : int
        Number of clusters.
    cost_ : int
        Disagreements of ``labels_`` on the fitted signed graph.
    light_mask_ : ndarray of shape (n_samples,) of bool
        Light vertices of the Agreement algorithm (all False for Pivot).
    n_edges_ : int
        Number of '+' edges of the fitted graph.
    n_features_in_ : int
        Number of features seen in fit (the number of vertices for
        ``affinity="precomputed"``).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X had string column names.

    See Also
    --------
    DynamicCorrelationClustering : The paper's dynamic Agreement, for vertex streams.
    correlation_cost : Disagreements of any labelling on a signed graph.
    sklearn.cluster.SpectralClustering : Clustering of an affinity graph with a given number of clusters.

    Notes
    -----
    The Agreement algorithm is the one of Cohen-Addad, Lattanzi, Mitrović,
    Norouzi-Fard, Parotsidis and Tarnawski (ICML 2021), with the semantics of
    the same group's public C++ code: closed neighbourhoods; a vertex is light
    iff ``|N[u]| - (#agreeing neighbours + 1) > lam |N[u]|``; an edge is kept iff
    it is in agreement and not both endpoints are light; clusters are the
    connected components. Theory asks for small constants; on noisy planted
    partitions ``beta = lam = 0.2`` leaves every vertex light (all singletons),
    so the defaults are ``beta=0.8, lam=0.4``, large enough that a vertex of
    a noisy planted cluster stays heavy (see :doc:`the benchmark page
    </benchmarks/correlation>`). Tune them with :class:`~sklearn.model_selection.GridSearchCV`:
    ``score`` is minus the disagreements of held-out vertices against the
    fitted clustering, on the estimator's own graph, so it compares
    clusterings of one graph only (``beta``, ``lam``, ``method``). No
    label-free score compares graph settings soundly: the graph defines the
    objective. Tune ``gamma``, ``threshold`` or ``n_neighbors`` against a
    labelled subset with :func:`~sklearn.metrics.adjusted_rand_score` on
    ``labels_`` (user guide).

    With ``sample_size=s`` the Agreement algorithm samples, in the spirit
    of the paper's query model: each vertex tests ``s`` random neighbours
    (with replacement); ``|N[u] Δ N[v]|`` is estimated as
    ``|N[u]| m_u + |N[v]| m_v``, ``m_u`` being the share of ``s`` uniform
    members of ``N[u]`` missing from ``N[v]`` (the dynamic algorithm's
    ProbabilisticAgreement), without slack; a vertex is light when
    ``deg * (#disagreeing tested) / s > lam |N[u]|``; the kept edges are
    the tested agreeing edges without two light endpoints, and the clusters
    their connected components (a random ``s``-out sample of a dense cluster
    is connected with high probability). ``O(n s^2 log(max degree))``
    time: ``2 n s^2`` adjacency tests, each a binary search in one sorted
    row, visited row after row; its cost does not grow with the degree, as
    the exact algorithm's does (timings on :doc:`the benchmark page
    </benchmarks/correlation>`). [verify] The paper's exact
    sampling probabilities could not be read; these (uniform neighbours
    and uniform members of the closed neighbourhoods, with replacement)
    are this library's.

    The common neighbours of all '+' edges come from a sparse product
    ``(A @ A) ∘ A`` in row blocks, O(sum of squared degrees) time and bounded
    memory; Pivot is vectorised in rounds (it returns exactly the sequential
    Pivot of a random order). Both handle graphs with 10^5 vertices.

    ``predict`` puts a new point in the cluster ``C`` that maximises
    ``2 |N+(x) ∩ C| - |C|`` (the disagreements saved by joining ``C``) when this is
    positive, and labels it ``-1`` (a new singleton) otherwise.

    References
    ----------
    V. Cohen-Addad, S. Lattanzi, A. Maggiori, N. Parotsidis. "Dynamic Correlation
    Clustering in Sublinear Update Time". ICML 2024, PMLR 235:9230-9274.

    V. Cohen-Addad, S. Lattanzi, S. Mitrović, A. Norouzi-Fard, N. Parotsidis,
    J. Tarnawski. "Correlation Clustering in Constant Many Parallel Rounds".
    ICML 2021.

    N. Ailon, M. Charikar, A. Newman. "Aggregating inconsistent information:
    ranking and clustering". JACM 55(5), 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.cluster import CorrelationClustering
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [3.0, 3.0], [3.1, 3.0], [3.0, 3.1]])
    >>> cc = CorrelationClustering().fit(X)
    >>> cc.labels_, cc.cost_
    (array([0, 0, 0, 1, 1, 1]), 0)
    """

    _parameter_constraints = {
        "method": [StrOptions({"agreement", "pivot"})],
        "beta": [Interval(Real, 0, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "sample_size": [Interval(Integral, 1, None, closed="left"), None],
        "n_runs": [Interval(Integral, 1, None, closed="left")],
        **_AFFINITY_CONSTRAINTS,
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
    }

    def __init__(self, *, method="agreement", beta=0.8, lam=0.4, sample_size=None, n_runs=10, affinity="rbf",
                 gamma=1.0, threshold=0.5, n_neighbors=10, random_state=None, n_jobs=None):
        self.method = method
        self.beta = beta
        self.lam = lam
        self.sample_size = sample_size
        self.n_runs = n_runs
        self.affinity = affinity
        self.gamma = gamma
        self.threshold = threshold
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Cluster the signed graph built from X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
            Feature vectors, or a square signed matrix when ``affinity="precomputed"``.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X = self._validate_X(X, reset=True)
        A = self._fit_graph(X)
        self._n_fit = A.shape[0]
        if self.method == "agreement" and self.sample_size is not None:
            labels, light = sampled_agreement_labels(A, self.beta, self.lam, self.sample_size,
                                                     check_random_state(self.random_state))
        elif self.method == "agreement":
            labels, light = agreement_labels(A, self.beta, self.lam)
        else:
            seeds = draw_seeds(self.random_state, self.n_runs)
            runs = Parallel(n_jobs=self.n_jobs)(delayed(_pivot_run)(A, s) for s in seeds)
            labels = min(runs, key=lambda r: r[0])[1]
            light = np.zeros(A.shape[0], dtype=bool)
        self.labels_ = labels
        self.n_clusters_ = int(labels.max()) + 1 if labels.size else 0
        self.cost_ = int(disagreements(A, labels))
        self.light_mask_ = light
        self.n_edges_ = int(A.nnz // 2)
        return self

    def predict(self, X):
        """Cluster of new points, from their '+' edges to the fitted vertices.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, n_features) or (n_new, n_samples_fit)
            New feature vectors, or their signed rows against the fitted
            vertices when ``affinity="precomputed"``.

        Returns
        -------
        labels : ndarray of shape (n_new,)
            A fitted cluster, or ``-1`` for a point best left alone.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        return assign_to_clusters(self._plus_rows(X), self.labels_)

    def score(self, X, y=None):
        """Minus the disagreements between new points, clustered by ``predict``, and the fitted vertices.

        Counts the '+' pairs (new point, fitted vertex) split between clusters
        and the '−' pairs put together, on the signed graph of this
        estimator's own affinity settings; a new point labelled ``-1`` is
        alone. Higher is better.

        The count compares clusterings of **one graph only**: use it to tune
        ``method``, ``beta``, ``lam`` or ``n_runs`` with
        :class:`~sklearn.model_selection.GridSearchCV`, never ``affinity``,
        ``gamma``, ``threshold`` or ``n_neighbors``. A sparser graph has fewer
        '+' pairs to disagree with, so a search over graph settings drifts
        towards all singletons. Tune the graph against labels instead: fit on
        all the data and compare ``labels_`` on a labelled subset with
        :func:`~sklearn.metrics.adjusted_rand_score` (see the user guide and
        the gallery). For a graph built from features, a ``UserWarning`` says
        so when the fitted graph is sparse (mean '+' degree below 4) and cut
        into clusters of fewer than four vertices on average, the mark of that
        drift.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, n_features) or (n_new, n_samples_fit)
            As for ``predict``.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Minus the number of disagreements.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        _warn_if_sparse_graph(self)
        P = self._plus_rows(X)
        return -float(cross_disagreements(P, assign_to_clusters(P, self.labels_), self.labels_))

    def __sklearn_tags__(self):
        return self._tags_pairwise(super().__sklearn_tags__())


@validate_params(
    {
        "adjacency": ["array-like", "sparse matrix"],
        "labels": ["array-like"],
        "threshold": [Interval(Real, None, None, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def correlation_cost(adjacency, labels, *, threshold=0.0):
    """Count the disagreements of a clustering on a complete signed graph.

    The pairs whose entry of ``adjacency`` (either of the two) exceeds
    ``threshold`` are '+' edges, every other pair is a '−' edge. The cost is the
    number of '+' edges between clusters plus the number of '−' pairs inside
    clusters, computed in ``O(n + m)`` from the '+' edges alone.

    Parameters
    ----------
    adjacency : {array-like, sparse matrix} of shape (n_samples, n_samples)
        Square signed matrix (dense or sparse; missing sparse entries are '−').
        The diagonal is ignored.
    labels : array-like of shape (n_samples,)
        Cluster labels; each ``-1`` counts as a singleton of its own. NaN,
        infinite or None labels raise a ``ValueError``.
    threshold : float, default=0.0
        Entries above it are '+'.

    Returns
    -------
    cost : int
        Number of disagreements.

    See Also
    --------
    CorrelationClustering : Minimises this cost.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.cluster import correlation_cost
    >>> A = np.array([[0, 1, -1], [1, 0, 1], [-1, 1, 0]])
    >>> correlation_cost(A, [0, 0, 0]), correlation_cost(A, [0, 0, 1])
    (1, 1)
    """
    A = check_array(as_numpy(adjacency), accept_sparse="csr", dtype=[np.float64, np.float32])
    A = plus_adjacency_from_matrix(A, threshold, name="correlation_cost")
    raw = np.asarray(as_numpy(labels))
    if raw.ndim != 1 or raw.shape[0] != A.shape[0]:
        raise ValueError(
            f"correlation_cost: labels must have shape ({A.shape[0]},) to match the adjacency; "
            f"got {raw.shape}."
        )
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw)):
        bad = np.flatnonzero(~np.isfinite(raw))
        raise ValueError(f"correlation_cost: labels must be finite; got {float(raw[bad[0]])!r} at position "
                         f"{int(bad[0])} ({len(bad)} non-finite labels). Use -1 for a vertex left alone.")
    if raw.dtype.kind == "O" and any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in raw):
        raise ValueError("correlation_cost: labels must not hold None or NaN; use -1 for a vertex left alone.")
    codes = np.unique(raw, return_inverse=True)[1].ravel().astype(np.int64)
    if raw.dtype.kind in "iuf":
        codes[raw == -1] = -1
        codes = unique_negatives(codes)
    return int(disagreements(A, codes))
