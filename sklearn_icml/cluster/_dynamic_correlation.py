"""Dynamic Agreement (Cohen-Addad, Lattanzi, Maggiori, Parotsidis, ICML 2024): correlation clustering
of a vertex stream with sublinear amortized update time.

The estimator turns features or signed rows into '+' neighbours (the graph
building shared with :class:`~sklearn_icml.cluster.CorrelationClustering`, and a
:class:`~sklearn_icml.cluster._point_index.PointIndex` for the points of a
stream) and delegates the algorithm's state and updates to
:class:`~sklearn_icml.cluster._dynamic_agreement.DynamicAgreement`.
"""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..utils._random import draw_seed
from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ._correlation import _AFFINITY_CONSTRAINTS, _SignedGraphMixin, _warn_if_sparse_graph
from ._dynamic_agreement import DynamicAgreement
from ._online_pivot import OnlinePivot
from ._point_index import PointIndex
from ._signed_graph import assign_to_clusters, cross_disagreements, plus_rows

__all__ = ["DynamicCorrelationClustering"]


class DynamicCorrelationClustering(_SignedGraphMixin, ClusterMixin, BaseEstimator):
    """Correlation clustering of a vertex stream: the Dynamic Agreement algorithm.

    Read more in the :ref:`User Guide <correlation_clustering>`.

    Vertices arrive one at a time with their '+' edges to the vertices already
    there (``partial_fit``) and leave (``delete``, or ``delete_random``, the
    paper's model of uniformly random deletions); every other pair is '−'.
    After each update ``labels_`` is a partition of the alive vertices that
    follows the Agreement algorithm (see :class:`CorrelationClustering`), and
    an update costs a polylogarithmic number of graph queries (degree, random
    neighbour, adjacency) on average instead of the ``O(n + m)`` of
    re-clustering. ``n_queries_`` counts them.

    The algorithm keeps a sparse graph ``H``: every vertex tests its agreement
    with a few *anchors*, heavy vertices sampled with probability
    ``anchor_rate * log2(n) / degree`` (a polylogarithmic number per dense
    cluster), and links to those it agrees with; the clusters are the connected
    components of ``H``. Agreement and heaviness are estimated from
    ``n_samples`` random neighbours; after an update, a random few vertices
    within ``notify_hops`` hops are re-evaluated, so that a vertex is
    re-evaluated about once every ``drift * degree`` changes around it.

    ``method="pivot"`` runs online Pivot instead, the natural peer: a new
    vertex joins its earliest-arrived pivot neighbour or becomes a pivot, in
    ``O(deg)`` queries per insertion.

    Parameters
    ----------
    method : {"agreement", "pivot"}, default="agreement"
        Dynamic Agreement (the paper's algorithm), or online Pivot (see
        Notes); the Agreement parameters below are ignored for "pivot".
    beta : float, default=0.8
        Agreement threshold: ``(u, v)`` agree when
        ``|N[u] Δ N[v]| <= beta * max(|N[u]|, |N[v]|)`` (closed neighbourhoods).
    lam : float, default=0.4
        A vertex is light when more than a ``lam`` fraction of its closed
        neighbourhood disagrees with it; anchors are heavy vertices.
    n_samples : int or "auto", default="auto"
        Random neighbours drawn to estimate an agreement or a heaviness, and
        the most anchors a vertex tests. "auto" is ``ceil(log2(n_alive + 1))``,
        at least 8.
    anchor_rate : float, default=2.0
        A heavy vertex of degree ``d`` is an anchor with probability
        ``min(1, anchor_rate * log2(n_alive + 1) / (d + 1))``.
    drift : float, default=0.5
        Laziness: a vertex is re-evaluated after about ``drift * degree``
        updates among its neighbours (in expectation).
    notify_hops : {1, 2}, default=2
        How far the notification of an update travels.
    exact : bool, default=False
        No sampling and no laziness: exact agreements and heaviness, every
        heavy vertex is an anchor, and every vertex whose state can change
        (within three hops of the update) is re-evaluated. Then ``labels_``
        equals the static Agreement algorithm on the current graph; the update
        cost is no longer sublinear. For testing and small graphs.
    affinity : {"rbf", "cosine", "knn", "precomputed"}, default="rbf"
        How rows of ``X`` become '+' edges, as in
        :class:`CorrelationClustering`. "rbf" and "cosine": '+' iff the
        similarity of two feature vectors exceeds ``threshold``. "knn": '+'
        between mutual ``n_neighbors``-nearest neighbours; ``fit`` builds the
        mutual graph of its points, and a vertex inserted later gets '+'
        edges to the alive points that are mutual nearest neighbours with it
        at its arrival (edges are never revised afterwards: a vertex arrives
        with its edges). "precomputed": ``fit`` takes a square signed matrix,
        ``partial_fit`` takes rows of shape ``(n_new, n_seen + n_new)``, the
        signs of the new vertices against every vertex id so far (deleted
        ones are ignored) and against each other; an entry above
        ``threshold`` is '+'.
    gamma : float, default=1.0
        Kernel coefficient of the rbf affinity.
    threshold : float, default=0.5
        Similarity above which a pair is '+'.
    n_neighbors : int, default=10
        Neighbours of the knn affinity.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling, the anchors and ``delete_random``.

    Attributes
    ----------
    labels_ : ndarray of shape (n_seen,)
        Cluster of every vertex id inserted so far, ``-1`` for deleted ones.
        The components of ``H`` are kept along the stream (a change costs
        work in proportion to the links it touches); a read is one vectorised
        pass that numbers them.
    node_ids_ : ndarray of shape (n_alive,)
        Ids of the alive vertices, increasing.
    n_clusters_ : int
        Number of clusters of the alive vertices.
    anchors_ : ndarray of shape (n_seen,) of bool
        Which vertices are anchors now (pivots for ``method="pivot"``).
    n_queries_ : int
        Graph queries (degree, random neighbour, adjacency, one per neighbour
        listed) made by the updates since ``fit``.
    n_load_queries_ : int
        Queries of the initial load by ``fit``, counted apart: every vertex
        lists its neighbourhood and every edge's agreement reads both
        neighbourhoods, ``2 m + sum_v deg(v)^2`` (0 when the stream started
        with ``partial_fit``).
    n_updates_ : int
        Insertions and deletions since ``fit``.
    n_features_in_ : int
        Number of features; for ``affinity="precomputed"``, the number of
        vertex ids seen by the last ``fit`` or ``partial_fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X had string column names.

    See Also
    --------
    CorrelationClustering : The static Agreement and Pivot algorithms.
    correlation_cost : Disagreements of a labelling on a signed graph.
    sklearn_icml.datasets.make_vertex_stream : Insertions with random deletions.

    Notes
    -----
    Only the paper's abstract and a third-party summary could be read here;
    the procedure names (Notify, ProbabilisticAgreement, Heavy, Anchor, Clean,
    Connect) are the paper's, the mechanics are this library's reconstruction:

    * ProbabilisticAgreement(u, v) draws ``n_samples`` members of ``N[u]`` and of
      ``N[v]`` (random-neighbour queries) and checks them against the other
      side (adjacency queries); the estimated ``|N[u] Δ N[v]|`` is compared with
      ``beta * max(|N[u]|, |N[v]|)``, without slack. With ``n_samples`` at least
      the degree the whole neighbourhood is read (exact).
    * Heavy(v) tests ``n_samples`` random neighbours; ``v`` is light when the
      estimated number of disagreeing neighbours exceeds ``lam |N[v]|``.
    * Anchor: every vertex draws one uniform coin at insertion and is an anchor
      while it is heavy and its coin is below
      ``anchor_rate log2(n) / (deg + 1)``. A new anchor lists itself at its
      neighbours (``deg`` queries, rare since anchors are rare).
    * Connect(v) tests at most ``n_samples`` anchors adjacent to ``v`` (those
      listed at ``v``, sampled neighbours that are anchors, and the anchors of
      sampled neighbours, checked with adjacency queries) and links ``v`` to the
      agreeing ones; ``H`` is the union of these links and the clusters are its
      connected components (a vertex without link is a singleton).
    * Clean is lazy: links to deleted vertices or to vertices that are no longer
      anchors are dropped when met.
    * Notify(v), on the insertion or deletion of ``v``, draws ``ceil(1 / drift)``
      random neighbours ``u`` of ``v`` and re-evaluates each with probability
      ``deg(v) / (ceil(1 / drift) * drift * d0(u))`` (``d0`` is the degree at
      ``u``'s last evaluation), so ``u`` is re-evaluated about once every
      ``drift * d0(u)`` changes of its neighbourhood; with ``notify_hops=2`` each
      re-evaluated vertex passes the notification on to one random neighbour
      with probability ``drift``.

    Online Pivot (``method="pivot"``) ranks vertices by arrival, a uniformly
    random order in the stream model: on insertions alone it is exactly Pivot
    with that order (Ailon, Charikar and Newman), the online baseline of the
    paper's experiments. When a pivot is deleted, the members of its cluster
    are placed again in arrival order by the same rule; other clusters are not
    revisited, so after deletions the partition can differ from Pivot
    recomputed on the current graph. ``fit`` runs Pivot in id order.

    ``fit`` is the initial load: the whole graph is evaluated exactly at once
    (vectorised, like the static algorithm), anchors are drawn, and the links
    are made; updates then follow with ``partial_fit`` and ``delete``.
    ``partial_fit`` on an unfitted estimator starts from the empty graph.

    With feature vectors, the stored points live in a neighbour index of
    geometrically growing trees (scikit-learn's
    :class:`~sklearn.neighbors.NearestNeighbors`), so finding a new point's
    '+' neighbours costs ``O(log n)`` tree queries instead of a scan of all
    stored points; sparse feature vectors are stored densified. ``score``
    compares clusterings of one graph only, as for
    :class:`CorrelationClustering`.

    References
    ----------
    V. Cohen-Addad, S. Lattanzi, A. Maggiori, N. Parotsidis. "Dynamic Correlation
    Clustering in Sublinear Update Time". ICML 2024, PMLR 235:9230-9274.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.cluster import DynamicCorrelationClustering
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [3.0, 3.0], [3.1, 3.0]])
    >>> dcc = DynamicCorrelationClustering(random_state=0).partial_fit(X)
    >>> dcc.partial_fit([[0.0, 0.1], [3.0, 3.1]]).labels_
    array([0, 0, 1, 1, 0, 1])
    >>> dcc.delete([0]).labels_
    array([-1,  0,  1,  1,  0,  1])
    """

    _parameter_constraints = {
        "method": [StrOptions({"agreement", "pivot"})],
        "beta": [Interval(Real, 0, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "anchor_rate": [Interval(Real, 0, None, closed="neither")],
        "drift": [Interval(Real, 0, None, closed="neither")],
        "notify_hops": [Interval(Integral, 1, 2, closed="both")],
        "exact": ["boolean"],
        **_AFFINITY_CONSTRAINTS,
        "random_state": ["random_state"],
    }

    def __init__(self, *, method="agreement", beta=0.8, lam=0.4, n_samples="auto", anchor_rate=2.0, drift=0.5,
                 notify_hops=2, exact=False, affinity="rbf", gamma=1.0, threshold=0.5, n_neighbors=10,
                 random_state=None):
        self.method = method
        self.beta = beta
        self.lam = lam
        self.n_samples = n_samples
        self.anchor_rate = anchor_rate
        self.drift = drift
        self.notify_hops = notify_hops
        self.exact = exact
        self.affinity = affinity
        self.gamma = gamma
        self.threshold = threshold
        self.n_neighbors = n_neighbors
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    # public API
    # ------------------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Load a whole graph at once: every vertex is evaluated exactly, anchors are drawn, links made.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
            Feature vectors, or a square signed matrix for ``affinity="precomputed"``.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X = self._validate_X(X, reset=True)
        A = self._fit_graph(X)
        self._start()
        if self.affinity != "precomputed":
            self._index.add(_dense(X))
        self._state.load(A)
        self._state.labels()
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Insert new vertices, one after the other, with their '+' edges to the alive vertices.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, n_features) or (n_new, n_seen + n_new)
            Feature vectors of the new vertices, or, for
            ``affinity="precomputed"``, their signed rows against every vertex
            id so far and against each other (columns ``n_seen ..`` are the
            new vertices, in order).
        y : None
            Ignored.

        Returns
        -------
        self : object
            The estimator, updated.
        """
        first = not hasattr(self, "_state")
        if self.affinity == "precomputed":
            X = self._validate_X(X, reset=True)
            n_seen = 0 if first else self._state.graph.n_seen
            n_new = X.shape[0]
            if X.shape[1] != n_seen + n_new:
                raise ValueError(
                    f"{type(self).__name__}.partial_fit with affinity='precomputed' takes rows of shape "
                    f"(n_new, n_seen + n_new) = ({n_new}, {n_seen + n_new}); got {X.shape}."
                )
            if first:
                self._start()
            self._insert_signed_rows(sp.csr_array(plus_rows(X, self.threshold)), n_seen)
            return self
        X = self._validate_X(X, reset=first)
        if first:
            self._start()
        X = _dense(X)
        graph = self._state.graph
        if self.affinity == "knn":  # mutual neighbours are judged at each arrival, one vertex at a time
            for i in range(X.shape[0]):
                v = graph.n_seen
                self._index.add(X[i:i + 1])
                row = self._index.plus_rows(X[i:i + 1], exclude=[v])
                self._state.insert(row.indices.tolist())
            return self
        # a similarity threshold: the whole batch against the stored points, then the pairs inside the batch
        n_seen = graph.n_seen
        stored = self._index.plus_rows(X)
        inner = self._index.batch_rows(X)
        self._index.add(X)
        self._insert_signed_rows(sp.csr_array(sp.hstack([stored, inner], format="csr")), n_seen)
        return self

    def delete(self, node_ids):
        """Delete alive vertices, one after the other.

        Parameters
        ----------
        node_ids : array-like of int
            Ids of alive vertices (as in ``labels_``), without repeats.

        Returns
        -------
        self : object
            The estimator, updated.
        """
        check_is_fitted(self)
        ids = column_or_1d(np.atleast_1d(as_numpy(node_ids)))
        name = type(self).__name__
        integral = ids.dtype.kind in "iu" or (ids.dtype.kind == "f" and bool(np.all(np.mod(ids, 1) == 0)))
        if ids.size and not integral:
            raise TypeError(f"{name}.delete takes integer vertex ids; got {ids.tolist()!r}.")
        ids = ids.astype(np.int64)
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"{name}.delete: repeated vertex ids in {ids.tolist()}.")
        graph = self._state.graph
        for v in ids.tolist():
            if not (0 <= v < graph.n_seen) or not graph.is_alive(v):
                raise ValueError(f"{name}.delete: vertex {v} is not alive (deleted or never inserted).")
        for v in ids.tolist():
            self._state.delete(v)
        if self._index is not None and ids.size:
            self._index.remove(ids)
        return self

    def delete_random(self, n_delete=1):
        """Delete vertices drawn uniformly among the alive ones (the paper's deletion model).

        Parameters
        ----------
        n_delete : int, default=1
            How many vertices to delete, one after the other.

        Returns
        -------
        node_ids : ndarray of shape (n_delete,)
            The deleted ids.
        """
        check_is_fitted(self)
        name = type(self).__name__
        if not isinstance(n_delete, Integral) or isinstance(n_delete, bool) or n_delete < 0:
            raise ValueError(f"{name}.delete_random: n_delete must be a non-negative int; got {n_delete!r}.")
        n_alive = self._state.graph.n_alive
        if n_delete > n_alive:
            raise ValueError(f"{name}.delete_random: cannot delete {n_delete} vertices, only {n_alive} are alive.")
        out = np.asarray([self._state.delete_random() for _ in range(n_delete)], dtype=np.int64)
        if self._index is not None and out.size:
            self._index.remove(out)
        return out

    def predict(self, X):
        """Cluster of new points from their '+' edges to the alive vertices, without inserting them.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, n_features) or (n_new, n_seen)
            Feature vectors, or signed rows against every vertex id so far
            for ``affinity="precomputed"``.

        Returns
        -------
        labels : ndarray of shape (n_new,)
            A current cluster, or ``-1`` for a point best left alone.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        return assign_to_clusters(self._rows_against_seen(X), self.labels_)

    def score(self, X, y=None):
        """Minus the disagreements between new points, clustered by ``predict``, and the alive vertices.

        Counted on this estimator's own graph, so it compares clusterings of
        one graph only (``beta``, ``lam``, the sampling parameters), never
        graph settings; see :meth:`CorrelationClustering.score`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, n_features) or (n_new, n_seen)
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
        P = self._rows_against_seen(X)
        labels = self.labels_
        return -float(cross_disagreements(P, assign_to_clusters(P, labels), labels))

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_state")

    @property
    def labels_(self):
        """Cluster of every vertex id so far (``-1`` for deleted ones)."""
        if not hasattr(self, "_state"):
            raise AttributeError("labels_")
        return self._state.labels()

    @property
    def n_clusters_(self):
        """Number of clusters of the alive vertices."""
        labels = self.labels_
        return int(labels.max()) + 1 if (labels >= 0).any() else 0

    @property
    def node_ids_(self):
        """Ids of the alive vertices, increasing."""
        if not hasattr(self, "_state"):
            raise AttributeError("node_ids_")
        return self._state.graph.alive_ids()

    @property
    def anchors_(self):
        """Which vertex ids are anchors now."""
        if not hasattr(self, "_state"):
            raise AttributeError("anchors_")
        return np.asarray(self._state.anchor, dtype=bool)

    @property
    def n_queries_(self):
        """Graph queries made by the updates since ``fit``."""
        if not hasattr(self, "_state"):
            raise AttributeError("n_queries_")
        return self._state.graph.n_queries

    @property
    def n_load_queries_(self):
        """Queries of the initial load by ``fit``."""
        if not hasattr(self, "_state"):
            raise AttributeError("n_load_queries_")
        return self._state.n_load_queries

    @property
    def n_updates_(self):
        """Insertions and deletions since ``fit``."""
        if not hasattr(self, "_state"):
            raise AttributeError("n_updates_")
        return self._state.n_updates

    @property
    def n_edges_(self):
        """Number of '+' edges among the alive vertices."""
        if not hasattr(self, "_state"):
            raise AttributeError("n_edges_")
        graph = self._state.graph
        return sum(len(graph.nbrs[v]) for v in graph.alive) // 2

    def __sklearn_tags__(self):
        return self._tags_pairwise(super().__sklearn_tags__())

    # ------------------------------------------------------------------------------------------
    # internals
    # ------------------------------------------------------------------------------------------
    def _start(self):
        """A fresh state (and, for features, a fresh point index)."""
        seed = draw_seed(self.random_state)
        if self.method == "pivot":
            self._state = OnlinePivot(seed=seed)
        else:
            self._state = DynamicAgreement(beta=self.beta, lam=self.lam, n_samples=self.n_samples,
                                           anchor_rate=self.anchor_rate, drift=self.drift,
                                           notify_hops=self.notify_hops, exact=self.exact, seed=seed)
        self._index = None if self.affinity == "precomputed" else \
            PointIndex(self.affinity, self.gamma, self.threshold, self.n_neighbors)

    def _insert_signed_rows(self, P, n_seen):
        """Insert the vertices of precomputed rows: '+' inside the batch if either row says so."""
        graph = self._state.graph
        n_new = P.shape[0]
        inner = None
        if n_new > 1:
            inner = sp.csr_array(P[:, n_seen:])
            inner = sp.csr_array(inner + inner.T)
        for i in range(n_new):
            row = P.indices[P.indptr[i]:P.indptr[i + 1]]
            nbrs = [u for u in row[row < n_seen].tolist() if graph.is_alive(u)]
            if inner is not None:
                batch = inner.indices[inner.indptr[i]:inner.indptr[i + 1]]
                nbrs += (batch[batch < i] + n_seen).tolist()
            self._state.insert(nbrs)

    def _rows_against_seen(self, X):
        if self.affinity == "precomputed":
            return plus_rows(X, self.threshold)
        return self._index.plus_rows(_dense(X))


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
