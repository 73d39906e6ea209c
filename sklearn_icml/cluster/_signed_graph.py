"""Signed graphs for correlation clustering: building them, the Agreement and Pivot algorithms, the cost.

Shared by :class:`~sklearn_icml.cluster.CorrelationClustering` (static) and
:class:`~sklearn_icml.cluster.DynamicCorrelationClustering` (vertex streams).

A signed graph on ``n`` vertices is held as its '+' adjacency only: a
symmetric boolean ``scipy.sparse.csr_array`` without diagonal. Every pair that
is not a '+' edge is a '−' edge (the complete-information model of
correlation clustering), so an ``n x n`` dense matrix is never built.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..utils._random import draw_seed

__all__ = []

#: Upper bound on the entries of one block of the sparse product A @ A
#: (about 0.2 GB of int32 indices and int64 values).
_BLOCK_NNZ = 1 << 24


# ----------------------------------------------------------------------------------------------
# Building the '+' adjacency
# ----------------------------------------------------------------------------------------------
def plus_adjacency_from_matrix(M, threshold, *, name):
    """'+' adjacency of a square signed matrix: a pair is '+' when either entry exceeds ``threshold``.

    The diagonal is ignored, implicit zeros of a sparse matrix are '−' (for
    ``threshold >= 0``), and the result is symmetric boolean CSR.
    """
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(
            f"{name} with affinity='precomputed' needs a square signed matrix (n_samples, n_samples); "
            f"got shape {M.shape}."
        )
    return plus_rows(M, threshold, symmetric=True)


def plus_rows(M, threshold, *, symmetric=False):
    """Boolean CSR of ``M > threshold`` (dense or sparse ``M``), optionally made symmetric without diagonal."""
    if sp.issparse(M):
        M = sp.csr_array(M)
        if threshold >= 0:
            keep = M.data > threshold
            if keep.all() and M.has_sorted_indices:
                # shares M's index arrays: nothing below changes them in place (sorted, no zeros to drop)
                P = sp.csr_array((keep, M.indices, M.indptr), shape=M.shape)
            else:
                P = sp.csr_array((keep, M.indices.copy(), M.indptr.copy()), shape=M.shape)
                P.eliminate_zeros()
        else:  # implicit zeros are '+' too: densify row blocks (the user asked for a dense sign pattern)
            P = sp.csr_array(M.toarray() > threshold)
    else:
        P = sp.csr_array(np.asarray(M) > threshold)
    if symmetric:
        P = _without_diagonal(_symmetrized(sp.csr_array(P)))
    P.sort_indices()
    return P.astype(bool, copy=False)


def _symmetrized(P):
    """``P + P.T`` of a square CSR; ``P`` itself when its pattern is already symmetric (one transpose, no sum)."""
    T = sp.csr_array(P.T)  # a counting transpose: sorted indices
    P.sort_indices()
    T.sort_indices()
    if np.array_equal(P.indptr, T.indptr) and np.array_equal(P.indices, T.indices):
        return P
    return sp.csr_array(P + T)


def _without_diagonal(P):
    """``P`` (square CSR) with its diagonal entries dropped, by one mask over the stored entries.

    (``setdiag(False)`` followed by ``eliminate_zeros`` gives the same matrix in
    several times the time: scipy rebuilds the structure to store the zeros.)
    """
    n = P.shape[0]
    rows = np.repeat(np.arange(n, dtype=P.indices.dtype), np.diff(P.indptr))
    keep = P.indices != rows
    if keep.all():
        return P
    indptr = np.zeros(n + 1, dtype=P.indptr.dtype)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    return sp.csr_array((P.data[keep], P.indices[keep], indptr), shape=P.shape)


def feature_graph(nn, X, affinity, threshold, n_neighbors, kth_distance=None, *, self_graph):
    """'+' rows of the points ``X`` against the points indexed by the fitted ``nn`` (NearestNeighbors).

    rbf: ``exp(-gamma d^2) > threshold`` is a radius query (``nn`` was built with
    that radius); cosine: ``cos > threshold`` is a radius query under the cosine
    distance; knn: mutual k nearest neighbours, where ``kth_distance`` holds each
    indexed point's distance to its k-th neighbour. ``self_graph=True`` when X is
    the indexed set itself (the symmetric adjacency of the fit data is returned).
    """
    n_fit = nn.n_samples_fit_
    if affinity == "knn":
        k = min(n_neighbors, n_fit - 1 if self_graph else n_fit)
        if k < 1:
            return sp.csr_array((X.shape[0], n_fit), dtype=bool)
        if self_graph:
            G = nn.kneighbors_graph(None, n_neighbors=k, mode="connectivity")
            G = sp.csr_array(G).astype(bool)
            A = sp.csr_array(G.multiply(G.T)).astype(bool)
            A.setdiag(False)
            A.eliminate_zeros()
            A.sort_indices()
            return A
        dist, ind = nn.kneighbors(X, n_neighbors=k)
        # x is among the k nearest of y iff d(x, y) does not exceed y's k-th distance
        mutual = dist <= kth_distance[ind]
        rows = np.repeat(np.arange(X.shape[0]), k)[mutual.ravel()]
        P = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, ind.ravel()[mutual.ravel()])),
                         shape=(X.shape[0], n_fit))
        P.sort_indices()
        return P
    G = nn.radius_neighbors_graph(None if self_graph else X, mode="connectivity")
    G = sp.csr_array(G).astype(bool)
    if self_graph:
        G = sp.csr_array(G + G.T).astype(bool)
        G.setdiag(False)
        G.eliminate_zeros()
    G.sort_indices()
    return G


def radius_for(affinity, gamma, threshold):
    """Distance radius equivalent to 'similarity > threshold' (None when no pair can be '+')."""
    if affinity == "rbf":
        if threshold >= 1:
            return None
        if threshold <= 0:
            return np.inf
        return float(np.sqrt(-np.log(threshold) / gamma))
    # cosine distance = 1 - cosine similarity
    if threshold >= 1:
        return None
    return float(1.0 - threshold)


# ----------------------------------------------------------------------------------------------
# Agreement (Cohen-Addad et al., ICML 2021), the static base of the paper's dynamic algorithm
# ----------------------------------------------------------------------------------------------
def upper_edges(A):
    """Undirected edges ``(u, v)`` with ``u < v`` of a symmetric CSR adjacency."""
    A = sp.csr_array(A)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    cols = A.indices
    keep = rows < cols
    return rows[keep].astype(np.int64), cols[keep].astype(np.int64)


def common_neighbors(A):
    """``|N(u) ∩ N(v)|`` (open neighbourhoods) for every stored entry ``(u, v)`` of ``A``, in CSR order.

    ``A`` must be symmetric CSR with sorted indices. The masked product
    ``(A @ A) ∘ A`` is formed in row blocks holding at most about 16M entries of
    ``A @ A`` each, which keeps 10^5-vertex graphs in memory.
    """
    A = sp.csr_array(A, dtype=np.int32)
    A.sort_indices()
    n = A.shape[0]
    out = np.zeros(A.nnz, dtype=np.int64)
    if A.nnz == 0:
        return out
    deg = np.diff(A.indptr).astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(A @ deg)])  # upper bounds on the entries of A @ A per row
    lo = 0
    while lo < n:
        hi = int(np.searchsorted(csum, csum[lo] + _BLOCK_NNZ, side="right")) - 1
        hi = min(max(hi, lo + 1), n)
        block = A[lo:hi]
        if block.nnz:
            # (A_blk @ A) ∘ A_blk has the sparsity of A_blk minus the zero counts; adding A_blk
            # restores every entry (value count + 1), so the data lines up with A's CSR order
            R = sp.csr_array(sp.csr_array(block @ A).multiply(block)) + block
            R.sort_indices()
            out[A.indptr[lo]:A.indptr[hi]] = R.data - 1
        lo = hi
    return out


def agreement_state(A, beta, lam):
    """The Agreement algorithm's sparsified graph on a '+' adjacency.

    Closed neighbourhoods ``N[u] = {u} ∪ N(u)``; the edge ``(u, v)`` is in
    ``beta``-agreement iff ``|N[u] Δ N[v]| <= beta * max(|N[u]|, |N[v]|)``; ``u``
    is light iff ``|N[u]| - (#agreeing neighbours + 1) > lam * |N[u]|``; the kept
    edges are the agreeing edges whose endpoints are not both light.

    Returns
    -------
    rows, cols : ndarray of int
        The undirected edges (u < v).
    agree : ndarray of bool
        Agreement of each edge.
    light : ndarray of bool of shape (n,)
        Light vertices.
    keep : ndarray of bool
        Edges of the sparsified graph.
    """
    n = A.shape[0]
    A = sp.csr_array(A)
    A.sort_indices()
    all_rows = np.repeat(np.arange(n), np.diff(A.indptr))
    upper = all_rows < A.indices
    rows, cols = all_rows[upper].astype(np.int64), A.indices[upper].astype(np.int64)
    size = np.diff(A.indptr).astype(np.int64) + 1
    common = common_neighbors(A)[upper] + 2  # u and v are in both closed neighbourhoods
    sym_diff = size[rows] + size[cols] - 2 * common
    agree = sym_diff <= beta * np.maximum(size[rows], size[cols])
    n_agree = np.bincount(rows[agree], minlength=n) + np.bincount(cols[agree], minlength=n)
    light = (size - (n_agree + 1)) > lam * size
    keep = agree & ~(light[rows] & light[cols])
    return rows, cols, agree, light, keep


def components(n, rows, cols):
    """Connected-component labels (0..k-1, ordered by first vertex) of an undirected edge list on n vertices."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    G = sp.csr_array((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
    _, labels = connected_components(G, directed=False)
    return canonical_labels(labels)


def canonical_labels(labels):
    """Relabel clusters 0..k-1 in order of their first vertex (equal partitions get equal arrays)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


def agreement_labels(A, beta, lam):
    """Cluster labels and light mask of the static Agreement algorithm."""
    rows, cols, _, light, keep = agreement_state(A, beta, lam)
    return components(A.shape[0], rows[keep], cols[keep]), light


def _closed_rows(A):
    """Index arrays of the closed neighbourhoods: row ``a`` holds ``N(a)`` (sorted) and then ``a`` itself."""
    n = A.shape[0]
    indptr = A.indptr.astype(np.int64) + np.arange(n + 1)
    own = indptr[1:] - 1
    members = np.empty(A.nnz + n, dtype=A.indices.dtype)
    neighbour = np.ones(A.nnz + n, dtype=bool)
    neighbour[own] = False
    members[neighbour] = A.indices
    members[own] = np.arange(n, dtype=A.indices.dtype)
    return indptr, members


def _order_by(keys, n_keys):
    """Stable order of ``keys`` (ints in ``[0, n_keys)``): a counting sort in O(len + n_keys).

    Done by scipy's compressed-format conversion (each item is one entry of
    column ``key``; the CSC-to-CSR pass groups them by key, keeping their order).
    """
    m = len(keys)
    items = sp.csc_array((np.arange(m, dtype=np.int64), np.asarray(keys, dtype=np.int64), np.arange(m + 1)),
                         shape=(n_keys, m))
    return items.tocsr().data


def _chunks(order, length, step):
    """Index sets of ``length`` items in blocks of ``step``: slices, or blocks of ``order`` when given."""
    for lo in range(0, length, step):
        yield slice(lo, min(lo + step, length)) if order is None else order[lo:lo + step]


def _missing_share(A, closed, a, b, s, rng, *, a_order, b_order, chunk):
    """Estimated share of ``N[a]`` outside ``N[b]`` for adjacent pairs ``(a, b)``, from s uniform members of N[a].

    The members are drawn uniformly from the closed neighbourhood (with
    replacement), visiting the pairs in ``a_order`` (None: as given), and each
    is looked up in the sorted row of ``b`` (a binary search in compiled code),
    visiting the pairs in ``b_order``. When the visiting order makes its rows
    non-decreasing, both passes run through memory row after row; only the
    ``s`` drawn members of a pair move between the two orders.
    """
    indptr, members = closed
    size = np.diff(indptr)
    step = max(1, chunk // s)
    x = np.empty((len(a), s), dtype=members.dtype)
    for at in _chunks(a_order, len(a), step):
        ac = a[at]
        r = rng.random((len(ac), s))
        r *= size[ac][:, None]
        x[at] = members[indptr[ac][:, None] + r.astype(np.int64)]
    out = np.empty(len(a), dtype=np.float64)
    for at in _chunks(b_order, len(a), step):
        xc = x[at].ravel()
        rows = np.repeat(b[at].astype(members.dtype), s)
        # a drawn a itself is found in N(b) (a and b are adjacent); a drawn b is in N[b] but not in N(b)
        missing = ~A[rows, xc] & (xc != rows)
        out[at] = np.count_nonzero(missing.reshape(-1, s), axis=1) / s
    return out


def estimated_sym_diff(A, u, v, sample_size, rng, *, chunk=1 << 22):
    """Estimate of ``|N[u] Δ N[v]|`` for the adjacent pairs ``(u, v)`` of the sorted symmetric CSR ``A``.

    ``|N[u]| m_u + |N[v]| m_v``, where ``m_u`` is the share of ``sample_size``
    uniform members of the closed neighbourhood ``N[u]`` (with replacement)
    missing from ``N[v]``: the estimator of the dynamic algorithm's
    ProbabilisticAgreement, unbiased; ``rng`` is a numpy ``Generator``. Fastest when ``u`` is non-decreasing:
    the pairs are sorted once by ``v``, not the ``len(u) * sample_size`` lookups.
    """
    A = sp.csr_array(A)
    A.sort_indices()
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    closed = _closed_rows(A)
    size = np.diff(closed[0])
    s = int(sample_size)
    n = A.shape[0]
    by_u = None if np.all(u[1:] >= u[:-1]) else _order_by(u, n)
    by_v = _order_by(v, n)
    miss_u = _missing_share(A, closed, u, v, s, rng, a_order=by_u, b_order=by_v, chunk=chunk)
    miss_v = _missing_share(A, closed, v, u, s, rng, a_order=by_v, b_order=by_u, chunk=chunk)
    return size[u] * miss_u + size[v] * miss_v


def sampled_agreement_labels(A, beta, lam, sample_size, rng, *, chunk=1 << 22):
    """The Agreement algorithm with a random-neighbour sample per vertex: near-linear time.

    Every vertex ``u`` tests ``sample_size`` random neighbours ``v`` (with
    replacement). ``|N[u] Δ N[v]|`` is estimated from ``sample_size`` uniform
    members of each closed neighbourhood, checked against the other side
    (:func:`estimated_sym_diff`, the dynamic algorithm's ProbabilisticAgreement);
    ``u`` is light when the estimated disagreeing share of its neighbourhood,
    ``deg(u) * (#disagreeing tested) / sample_size``, exceeds ``lam |N[u]|``;
    the tested edges in agreement whose endpoints are not both light are
    kept, and the clusters are the connected components of the kept sample.
    ``O(n sample_size^2 log(max degree))`` time instead of ``O(sum_v deg(v)^2)``,
    without a Python loop over vertices.

    Returns
    -------
    labels : ndarray of shape (n,)
    light : ndarray of bool of shape (n,)
    """
    A = sp.csr_array(A)
    A.sort_indices()
    n = A.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    # PCG64 draws: numpy's Generator, cheaper per draw than RandomState's MT19937
    gen = np.random.default_rng(draw_seed(rng))
    deg = np.diff(A.indptr).astype(np.int64)
    s = int(sample_size)
    u = np.repeat(np.flatnonzero(deg > 0), s)  # non-decreasing
    v = A.indices[A.indptr[u] + (gen.random(len(u)) * deg[u]).astype(np.int64)].astype(np.int64)
    size = deg + 1
    agree = estimated_sym_diff(A, u, v, s, gen, chunk=chunk) <= beta * np.maximum(size[u], size[v])
    disagree = np.bincount(u[~agree], minlength=n)
    light = deg * disagree / s > lam * size
    keep = agree & ~(light[u] & light[v])
    return components(n, u[keep], v[keep]), light


# ----------------------------------------------------------------------------------------------
# Pivot / KwikCluster (Ailon, Charikar, Newman 2008)
# ----------------------------------------------------------------------------------------------
def pivot_labels(A, rng, rank=None):
    """One run of Pivot with a uniformly random order (or the order ``rank``), vectorised.

    Sequential Pivot with order ``pi`` makes ``v`` a pivot iff no neighbour
    ranked before ``v`` is a pivot (a greedy maximal independent set), and puts
    every other vertex with its earliest-ranked pivot neighbour. Both are found
    here in rounds over the edge arrays; the result is exactly the sequential one.
    """
    A = sp.csr_array(A)
    n = A.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    rank = rng.permutation(n) if rank is None else np.asarray(rank, dtype=np.int64)
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    cols = A.indices.astype(np.int64)
    lower = rank[cols] < rank[rows]
    r, c = rows[lower], cols[lower]  # c is an earlier-ranked neighbour of r
    state = np.zeros(n, dtype=np.int8)  # 0 undecided, 1 pivot, 2 not a pivot
    while True:
        undecided = state == 0
        if not undecided.any():
            break
        live = undecided[r]
        r, c = r[live], c[live]
        has_pivot = np.bincount(r[state[c] == 1], minlength=n) > 0
        has_open = np.bincount(r[state[c] == 0], minlength=n) > 0
        state[undecided & has_pivot] = 2
        state[undecided & ~has_pivot & ~has_open] = 1
    labels = np.arange(n)
    pivot = state == 1
    mask = pivot[cols] & ~pivot[rows]
    if mask.any():
        best = np.full(n, n, dtype=np.int64)
        np.minimum.at(best, rows[mask], rank[cols[mask]])
        by_rank = np.empty(n, dtype=np.int64)
        by_rank[rank] = np.arange(n)
        nonpivot = ~pivot
        labels[nonpivot] = by_rank[best[nonpivot]]
    return canonical_labels(labels)


# ----------------------------------------------------------------------------------------------
# Cost and assignment of new vertices
# ----------------------------------------------------------------------------------------------
def disagreements(A, labels):
    """Number of disagreements of ``labels`` on the complete signed graph whose '+' edges are ``A``.

    '+' edges across clusters plus '−' pairs (every non-edge) inside clusters:
    ``m + sum_C |C|(|C|-1)/2 - 2 m_in``, computed in O(n + m).
    """
    labels = np.asarray(labels)
    rows, cols = upper_edges(A)
    m = len(rows)
    m_in = int(np.count_nonzero(labels[rows] == labels[cols]))
    _, sizes = np.unique(labels, return_counts=True)
    pairs_in = int(np.sum(sizes.astype(np.int64) * (sizes - 1) // 2))
    return m + pairs_in - 2 * m_in


def unique_negatives(labels):
    """Give every ``-1`` label (a new singleton) its own label, above the others."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    neg = labels < 0
    if neg.any():
        start = labels.max() + 1 if (~neg).any() else 0
        labels[neg] = start + np.arange(np.count_nonzero(neg))
    return labels


def assign_to_clusters(P, fit_labels):
    """Cluster of each new vertex from its '+' rows ``P`` (n_new, n_fit) against labelled vertices.

    The vertex joins the cluster ``C`` maximizing ``2 |N+(x) ∩ C| - |C|`` (the
    decrease in disagreements when joining ``C`` instead of staying alone) when
    that gain is positive, and is a new singleton (label ``-1``) otherwise.
    Vertices whose label is ``-1`` in ``fit_labels`` are ignored.
    """
    P = sp.csr_array(P)
    n_new = P.shape[0]
    fit_labels = np.asarray(fit_labels)
    valid = fit_labels >= 0
    out = np.full(n_new, -1, dtype=np.int64)
    if n_new == 0 or not valid.any():
        return out
    n_clusters = int(fit_labels[valid].max()) + 1
    sizes = np.bincount(fit_labels[valid], minlength=n_clusters)
    rows = np.repeat(np.arange(n_new), np.diff(P.indptr))
    cols = P.indices
    ok = valid[cols]
    rows, labs = rows[ok], fit_labels[cols[ok]]
    if len(rows) == 0:
        return out
    key = rows * n_clusters + labs
    uniq, counts = np.unique(key, return_counts=True)
    r, lab = uniq // n_clusters, uniq % n_clusters
    gain = 2 * counts - sizes[lab]
    # best cluster per row: sort by (row, -gain, label) and take the first of each row
    order = np.lexsort((lab, -gain, r))
    r, lab, gain = r[order], lab[order], gain[order]
    first = np.r_[True, r[1:] != r[:-1]]
    r, lab, gain = r[first], lab[first], gain[first]
    win = gain > 0
    out[r[win]] = lab[win]
    return out


def cross_disagreements(P, new_labels, fit_labels):
    """Disagreements between new vertices and labelled vertices, over the pairs (new, fit).

    ``P`` holds the '+' pairs (n_new, n_fit); every other pair is '−'. A new
    vertex labelled ``-1`` is alone; fit vertices labelled ``-1`` are ignored.
    """
    P = sp.csr_array(P)
    new_labels = np.asarray(new_labels)
    fit_labels = np.asarray(fit_labels)
    valid = fit_labels >= 0
    rows = np.repeat(np.arange(P.shape[0]), np.diff(P.indptr))
    cols = P.indices
    ok = valid[cols]
    rows, cols = rows[ok], cols[ok]
    n_plus = len(rows)
    plus_same = int(np.count_nonzero((new_labels[rows] >= 0) & (new_labels[rows] == fit_labels[cols])))
    sizes = np.bincount(fit_labels[valid], minlength=max(int(new_labels.max(initial=-1)) + 1, 1))
    joined = new_labels >= 0
    pairs_same = int(sizes[new_labels[joined]].sum()) if joined.any() else 0
    # '+' pairs split apart, plus '−' pairs put together
    return (n_plus - plus_same) + (pairs_same - plus_same)
