"""Dynamic Agreement (Cohen-Addad, Lattanzi, Maggiori, Parotsidis, ICML 2024): correlation clustering
of a vertex stream with sublinear amortized update time."""

import math
import random
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.metrics.pairwise import cosine_similarity, euclidean_distances
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ._signed_graph import (
    agreement_state,
    assign_to_clusters,
    components,
    cross_disagreements,
    plus_adjacency_from_matrix,
    plus_rows,
)

__all__ = ["DynamicCorrelationClustering"]

_ROW_CHUNK = 1024


class DynamicCorrelationClustering(ClusterMixin, BaseEstimator):
    """Correlation clustering of a vertex stream: the Dynamic Agreement algorithm.

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

    Parameters
    ----------
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
    affinity : {"rbf", "cosine", "precomputed"}, default="rbf"
        How rows of ``X`` become '+' edges. "rbf" and "cosine": '+' iff the
        similarity of two feature vectors exceeds ``threshold``.
        "precomputed": ``fit`` takes a square signed matrix, ``partial_fit``
        takes rows of shape ``(n_new, n_seen + n_new)``, the signs of the new
        vertices against every vertex id so far (deleted ones are ignored)
        and against each other; an entry above ``threshold`` is '+'.
    gamma : float, default=1.0
        Kernel coefficient of the rbf affinity.
    threshold : float, default=0.5
        Similarity above which a pair is '+'.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling, the anchors and ``delete_random``.

    Attributes
    ----------
    labels_ : ndarray of shape (n_seen,)
        Cluster of every vertex id inserted so far, ``-1`` for deleted ones;
        computed from ``H`` on access, O(n polylog n).
    node_ids_ : ndarray of shape (n_alive,)
        Ids of the alive vertices, increasing.
    n_clusters_ : int
        Number of clusters of the alive vertices.
    anchors_ : ndarray of shape (n_seen,) of bool
        Which vertices are anchors now.
    n_queries_ : int
        Graph queries (degree, random neighbour, adjacency, one per neighbour
        listed) made by the updates since ``fit`` (the initial bulk
        evaluation of ``fit`` is not counted).
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

    ``fit`` is the initial load: the whole graph is evaluated exactly at once
    (vectorised, like the static algorithm), anchors are drawn, and the links
    are made; updates then follow with ``partial_fit`` and ``delete``.
    ``partial_fit`` on an unfitted estimator starts from the empty graph.

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
        "beta": [Interval(Real, 0, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "anchor_rate": [Interval(Real, 0, None, closed="neither")],
        "drift": [Interval(Real, 0, None, closed="neither")],
        "notify_hops": [Interval(Integral, 1, 2, closed="both")],
        "exact": ["boolean"],
        "affinity": [StrOptions({"rbf", "cosine", "precomputed"})],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "threshold": [Interval(Real, None, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, beta=0.8, lam=0.4, n_samples="auto", anchor_rate=2.0, drift=0.5, notify_hops=2,
                 exact=False, affinity="rbf", gamma=1.0, threshold=0.5, random_state=None):
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
        n = X.shape[0]
        if self.affinity == "precomputed":
            A = plus_adjacency_from_matrix(X, self.threshold, name=type(self).__name__)
        else:
            A = self._feature_rows(X, X, symmetric=True)
        self._reset(None)
        if self.affinity != "precomputed":
            self._features = sp.csr_array(X, copy=True) if sp.issparse(X) else np.array(X, dtype=np.float64)
        self._bulk_load(A, n)
        self._labels_cache = self._compute_labels()
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
        first = not hasattr(self, "_nbrs")
        if self.affinity == "precomputed":
            X = self._validate_X(X, reset=True)
            n_seen = 0 if first else len(self._nbrs)
            n_new = X.shape[0]
            if X.shape[1] != n_seen + n_new:
                raise ValueError(
                    f"{type(self).__name__}.partial_fit with affinity='precomputed' takes rows of shape "
                    f"(n_new, n_seen + n_new) = ({n_new}, {n_seen + n_new}); got {X.shape}."
                )
            if first:
                self._reset(None)
            P = plus_rows(X, self.threshold)
        else:
            X = self._validate_X(X, reset=first)
            if first:
                self._reset(X.shape[1])
            n_seen, n_new = len(self._nbrs), X.shape[0]
            self._append_features(X)
            P = self._feature_rows(X, self._features[: n_seen + n_new], symmetric=False)
        P = sp.csr_array(P)
        # pairs inside the batch: '+' if either of the two rows says so
        inner = None
        if n_new > 1:
            inner = sp.csr_array(P[:, n_seen:])
            inner = sp.csr_array(inner + inner.T)
        for i in range(n_new):
            v = n_seen + i
            row = P.indices[P.indptr[i]:P.indptr[i + 1]]
            nbrs = [u for u in row[row < n_seen].tolist() if self._nbrs[u] is not None]
            if inner is not None:
                batch = inner.indices[inner.indptr[i]:inner.indptr[i + 1]]
                nbrs += (batch[batch < i] + n_seen).tolist()
            self._insert(v, nbrs)
        self._labels_cache = None
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
        for v in ids.tolist():
            if not (0 <= v < len(self._nbrs)) or self._nbrs[v] is None:
                raise ValueError(f"{name}.delete: vertex {v} is not alive (deleted or never inserted).")
        for v in ids.tolist():
            self._delete(v)
        self._labels_cache = None
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
        if n_delete > len(self._alive):
            raise ValueError(
                f"{name}.delete_random: cannot delete {n_delete} vertices, only {len(self._alive)} are alive."
            )
        out = []
        for _ in range(n_delete):
            v = self._alive[int(self._rng.random() * len(self._alive))]
            self._delete(v)
            out.append(v)
        self._labels_cache = None
        return np.asarray(out, dtype=np.int64)

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
        P = self._rows_against_seen(X)
        labels = self.labels_
        return -float(cross_disagreements(P, assign_to_clusters(P, labels), labels))

    @property
    def labels_(self):
        """Cluster of every vertex id so far (``-1`` for deleted ones)."""
        if not hasattr(self, "_nbrs"):
            raise AttributeError("labels_")
        if self._labels_cache is None:
            self._labels_cache = self._compute_labels()
        return self._labels_cache

    @property
    def n_clusters_(self):
        """Number of clusters of the alive vertices."""
        labels = self.labels_
        return int(labels.max()) + 1 if (labels >= 0).any() else 0

    @property
    def node_ids_(self):
        """Ids of the alive vertices, increasing."""
        if not hasattr(self, "_nbrs"):
            raise AttributeError("node_ids_")
        return np.asarray(sorted(self._alive), dtype=np.int64)

    @property
    def anchors_(self):
        """Which vertex ids are anchors now."""
        if not hasattr(self, "_nbrs"):
            raise AttributeError("anchors_")
        return np.asarray(self._anchor, dtype=bool)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.affinity == "precomputed"
        return tags

    # ------------------------------------------------------------------------------------------
    # input
    # ------------------------------------------------------------------------------------------
    def _validate_X(self, X, *, reset):
        return validate_data(self, as_numpy(X), reset=reset, accept_sparse="csr", dtype=[np.float64, np.float32])

    def _feature_rows(self, X, F, *, symmetric):
        """'+' rows of X against the stored feature vectors F (chunks of rows, sparse output)."""
        blocks = []
        for start in range(0, X.shape[0], _ROW_CHUNK):
            Xc = X[start:start + _ROW_CHUNK]
            if self.affinity == "rbf":
                S = np.exp(-self.gamma * euclidean_distances(Xc, F, squared=True))
            else:
                S = cosine_similarity(Xc, F)
            blocks.append(sp.csr_array(S > self.threshold))
        P = sp.csr_array(sp.vstack(blocks)) if blocks else sp.csr_array((0, F.shape[0]), dtype=bool)
        if symmetric:
            P = sp.csr_array(P + P.T)
            P.setdiag(False)
            P.eliminate_zeros()
        P.sort_indices()
        return P.astype(bool)

    def _append_features(self, X):
        n_seen = len(self._nbrs)
        if sp.issparse(self._features) or sp.issparse(X):
            self._features = sp.csr_array(sp.vstack([sp.csr_array(self._features[:n_seen]), sp.csr_array(X)]))
            return
        need = n_seen + X.shape[0]
        if self._features.shape[0] < need:
            grown = np.zeros((max(need, 2 * self._features.shape[0], 16), X.shape[1]))
            grown[:n_seen] = self._features[:n_seen]
            self._features = grown
        self._features[n_seen:need] = X

    def _rows_against_seen(self, X):
        n_seen = len(self._nbrs)
        if self.affinity == "precomputed":
            return plus_rows(X, self.threshold)
        return self._feature_rows(X, self._features[:n_seen], symmetric=False)

    # ------------------------------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------------------------------
    def _reset(self, n_features):
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        self._rng = random.Random(seed)
        self._nbrs = []          # adjacency list per vertex id (None once deleted)
        self._pos = []           # neighbour -> index in the adjacency list
        self._alive = []         # alive ids (uniform deletion and O(1) removal)
        self._alive_pos = {}
        self._heavy = []
        self._anchor = []
        self._coin = []
        self._d0 = []            # degree at the last evaluation
        self._links = []         # anchors this vertex is linked to in H
        self._anchor_nbrs = []   # anchors known to be adjacent
        self.n_queries_ = 0
        self.n_updates_ = 0
        self._labels_cache = None
        if n_features is not None:
            self._features = np.zeros((0, n_features))

    def _samples(self):
        if self.n_samples == "auto":
            return max(8, math.ceil(math.log2(len(self._alive) + 1)))
        return int(self.n_samples)

    def _anchor_prob(self, degree):
        if self.exact:
            return 1.0
        return min(1.0, self.anchor_rate * math.log2(len(self._alive) + 1) / (degree + 1))

    def _bulk_load(self, A, n):
        """Initial state of a whole graph, evaluated exactly and vectorised."""
        A = sp.csr_array(A)
        A.sort_indices()
        indptr, indices = A.indptr, A.indices
        nbrs = [indices[indptr[v]:indptr[v + 1]].tolist() for v in range(n)]
        self._nbrs = nbrs
        self._pos = [{u: i for i, u in enumerate(lst)} for lst in nbrs]
        self._alive = list(range(n))
        self._alive_pos = {v: v for v in range(n)}
        rows, cols, agree, light, _ = agreement_state(A, self.beta, self.lam)
        deg = np.diff(indptr)
        heavy = ~light
        rng = np.random.RandomState(self._rng.randrange(2**31 - 1))
        coin = rng.random_sample(n)
        if self.exact:
            anchor = heavy.copy()
        else:
            prob = np.minimum(1.0, self.anchor_rate * math.log2(n + 1) / (deg + 1))
            anchor = heavy & (coin < prob)
        self._heavy = heavy.tolist()
        self._anchor = anchor.tolist()
        self._coin = coin.tolist()
        self._d0 = deg.tolist()
        # directed view of the agreeing edges towards anchors: source -> anchor target
        src = np.r_[rows, cols]
        dst = np.r_[cols, rows]
        ag = np.r_[agree, agree]
        to_anchor = anchor[dst]
        self._anchor_nbrs = _group_sets(n, src[to_anchor], dst[to_anchor]) if not self.exact \
            else [set() for _ in range(n)]
        link = to_anchor & ag
        s, d = src[link], dst[link]
        if not self.exact:  # at most n_samples links per vertex, a random subset
            cap = max(8, math.ceil(math.log2(n + 1))) if self.n_samples == "auto" else int(self.n_samples)
            perm = rng.permutation(len(s))
            s, d = s[perm], d[perm]
            order = np.argsort(s, kind="stable")
            s, d = s[order], d[order]
            first = np.searchsorted(s, s, side="left")
            keep = (np.arange(len(s)) - first) < cap
            s, d = s[keep], d[keep]
        self._links = _group_sets(n, s, d)

    # ------------------------------------------------------------------------------------------
    # the graph oracle (every call is one query)
    # ------------------------------------------------------------------------------------------
    def _random_neighbor(self, v):
        self.n_queries_ += 1
        lst = self._nbrs[v]
        return lst[int(self._rng.random() * len(lst))]

    def _degree(self, v):
        self.n_queries_ += 1
        return len(self._nbrs[v])

    # ------------------------------------------------------------------------------------------
    # ProbabilisticAgreement, Heavy, Anchor, Connect, Notify
    # ------------------------------------------------------------------------------------------
    def _missing_fraction(self, u, v, du, s):
        """Fraction of N[u] outside N[v] (u, v adjacent), exact or from s samples."""
        pos_v = self._pos[v]
        if self.exact or s >= du + 1:
            self.n_queries_ += 2 * du  # list N(u), one adjacency query each
            miss = sum(1 for x in self._nbrs[u] if x != v and x not in pos_v)
            return miss / (du + 1)
        # s uniform members of N[u] = {u} ∪ N(u): index du stands for u itself (no query needed);
        # a neighbour costs a random-neighbour query, and an adjacency query unless it is v
        lst, rnd = self._nbrs[u], self._rng.random
        miss = queries = 0
        for _ in range(s):
            j = int(rnd() * (du + 1))
            if j < du:
                x = lst[j]
                if x == v:
                    queries += 1
                else:
                    queries += 2
                    if x not in pos_v:
                        miss += 1
        self.n_queries_ += queries
        return miss / s

    def _agree(self, u, v, du=None, dv=None):
        memo = getattr(self, "_memo", None)
        if memo is not None:  # exact refresh: each edge is computed once per update
            key = (u, v) if u < v else (v, u)
            if key not in memo:
                memo[key] = self._agree_now(u, v, du, dv)
            return memo[key]
        return self._agree_now(u, v, du, dv)

    def _agree_now(self, u, v, du, dv):
        s = self._samples()
        du = self._degree(u) if du is None else du
        dv = self._degree(v) if dv is None else dv
        sym = (du + 1) * self._missing_fraction(u, v, du, s) + (dv + 1) * self._missing_fraction(v, u, dv, s)
        return sym <= self.beta * max(du + 1, dv + 1)

    def _heavy_test(self, v, d):
        """Heavy(v); also returns the tested neighbours with their agreement."""
        if d == 0:
            return True, []
        s = self._samples()
        if self.exact or s >= d:
            self.n_queries_ += d
            tested = list(self._nbrs[v])
        else:
            tested = [self._random_neighbor(v) for _ in range(s)]
        results = [(u, self._agree(v, u, d)) for u in tested]
        disagree = sum(1 for _, a in results if not a)
        return d * disagree / len(results) <= self.lam * (d + 1), results

    def _set_anchor(self, v, d):
        want = self._heavy[v] and self._coin[v] < self._anchor_prob(d)
        if want and not self._anchor[v] and not self.exact:
            self.n_queries_ += d  # the new anchor lists itself at its neighbours
            for u in self._nbrs[v]:
                self._anchor_nbrs[u].add(v)
        self._anchor[v] = want

    def _connect(self, v, d, tested):
        """Connect(v): link v to agreeing anchors among at most n_samples candidates."""
        if self.exact:
            self.n_queries_ += d
            self._links[v] = {u for u in self._nbrs[v] if self._anchor[u] and self._agree(v, u, d)}
            return
        s = self._samples()
        links = set()
        known = self._anchor_nbrs[v]
        # Clean: drop anchors that are gone or demoted
        stale = [a for a in known if self._nbrs[a] is None or not self._anchor[a]]
        known.difference_update(stale)
        done = set()
        for u, agrees in tested:
            if self._anchor[u]:
                known.add(u)
                done.add(u)
                if agrees:
                    links.add(u)
        if len(known) < s:  # discover anchors two hops away, through the tested neighbours' links
            pos_v = self._pos[v]
            for u, agrees in tested:
                if not agrees:
                    continue
                for a in sorted(self._links[u]):
                    if a != v and a not in known and self._nbrs[a] is not None and self._anchor[a]:
                        self.n_queries_ += 1
                        if a in pos_v:
                            known.add(a)
                if len(known) >= s:
                    break
        candidates = sorted(a for a in known if a not in done)  # sorted: runs do not depend on set layout
        budget = s - len(links)
        if len(candidates) > budget:
            candidates = self._rng.sample(candidates, max(budget, 0))
        for a in candidates:
            if self._agree(v, a, d):
                links.add(a)
        self._links[v] = links

    def _evaluate(self, v):
        """Heavy, Anchor and Connect for one vertex (sampled mode)."""
        d = self._degree(v)
        self._d0[v] = d
        heavy, tested = self._heavy_test(v, d)
        self._heavy[v] = heavy
        self._set_anchor(v, d)
        self._connect(v, d, tested)

    def _notify(self, around):
        """Notify: re-evaluate a random few vertices near an update; ``around`` lists the touched neighbours."""
        if not around:
            return
        k = math.ceil(1.0 / self.drift)
        hop1 = []
        for _ in range(k):
            self.n_queries_ += 1
            u = around[int(self._rng.random() * len(around))]
            if self._nbrs[u] is None:
                continue
            p = len(around) / (k * self.drift * max(self._d0[u], 1))
            if self._rng.random() < p:
                hop1.append(u)
        for u in hop1:
            self._evaluate(u)
        if self.notify_hops >= 2:
            for u in hop1:
                if self._nbrs[u] and self._rng.random() < self.drift:
                    self._evaluate(self._random_neighbor(u))

    def _exact_refresh(self, around):
        """Exact mode: re-evaluate every vertex whose state can have changed."""
        self._memo = {}
        try:
            self._exact_refresh_ball(around)
        finally:
            del self._memo

    def _exact_refresh_ball(self, around):
        ball2 = set(around)
        for u in around:
            ball2.update(self._nbrs[u])
        ball2 = [u for u in ball2 if self._nbrs[u] is not None]
        for u in ball2:
            d = self._degree(u)
            self._d0[u] = d
            self._heavy[u] = self._heavy_test(u, d)[0]
            self._set_anchor(u, d)
        ball3 = set(ball2)
        for u in ball2:
            ball3.update(self._nbrs[u])
        for u in ball3:
            self._connect(u, self._degree(u), None)

    # ------------------------------------------------------------------------------------------
    # updates
    # ------------------------------------------------------------------------------------------
    def _insert(self, v, nbrs):
        """Insert vertex ``v`` with its alive '+' neighbours (storing the edges is not a query)."""
        self._nbrs.append(list(nbrs))
        self._pos.append({u: i for i, u in enumerate(nbrs)})
        for u in nbrs:
            self._pos[u][v] = len(self._nbrs[u])
            self._nbrs[u].append(v)
        self._alive_pos[v] = len(self._alive)
        self._alive.append(v)
        self._heavy.append(True)
        self._anchor.append(False)
        self._coin.append(self._rng.random())
        self._d0.append(len(nbrs))
        self._links.append(set())
        self._anchor_nbrs.append(set())
        self.n_updates_ += 1
        if self.exact:
            self._exact_refresh([v] + list(nbrs))
            return
        self._evaluate(v)
        self._notify(nbrs)

    def _delete(self, v):
        nbrs = self._nbrs[v]
        for u in nbrs:  # storage: O(1) removal by swapping with the last entry
            lst, pos = self._nbrs[u], self._pos[u]
            i = pos.pop(v)
            last = lst.pop()
            if last != v:
                lst[i] = last
                pos[last] = i
        i = self._alive_pos.pop(v)
        last = self._alive.pop()
        if last != v:
            self._alive[i] = last
            self._alive_pos[last] = i
        self._nbrs[v] = None
        self._pos[v] = None
        self._links[v] = set()
        self._anchor_nbrs[v] = set()
        self._anchor[v] = False
        self._heavy[v] = False
        self.n_updates_ += 1
        if self.exact:
            self._exact_refresh(nbrs)
            return
        self._notify(nbrs)

    # ------------------------------------------------------------------------------------------
    # output
    # ------------------------------------------------------------------------------------------
    def _compute_labels(self):
        """Connected components of H over the alive vertices; -1 for deleted ids."""
        n_seen = len(self._nbrs)
        labels = np.full(n_seen, -1, dtype=np.int64)
        alive = np.asarray(sorted(self._alive), dtype=np.int64)
        if alive.size == 0:
            return labels
        anchor, nbrs = self._anchor, self._nbrs
        src, dst = [], []
        for v in alive.tolist():
            for a in self._links[v]:
                if nbrs[a] is not None and anchor[a]:
                    src.append(v)
                    dst.append(a)
        index = np.full(n_seen, -1, dtype=np.int64)
        index[alive] = np.arange(alive.size)
        comp = components(alive.size, index[np.asarray(src, dtype=np.int64)],
                          index[np.asarray(dst, dtype=np.int64)])
        labels[alive] = comp
        return labels


def _group_sets(n, src, dst):
    """List of n sets: the dst values of each src."""
    out = [set() for _ in range(n)]
    if len(src) == 0:
        return out
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    bounds = np.searchsorted(src, np.arange(n + 1))
    dl = dst.tolist()
    for v in np.flatnonzero(np.diff(bounds)).tolist():
        out[v] = set(dl[bounds[v]:bounds[v + 1]])
    return out
