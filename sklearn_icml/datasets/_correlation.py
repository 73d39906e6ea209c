"""Signed graphs with a planted partition, and vertex streams, for correlation clustering (S7)."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_planted_partition", "make_vertex_stream"]


def _sample_pair_indices(rng, n_pairs, p):
    """Distinct indices in ``[0, n_pairs)``, each kept independently with probability ``p``."""
    if n_pairs <= 0 or p <= 0:
        return np.zeros(0, dtype=np.int64)
    if p >= 1:
        return np.arange(n_pairs, dtype=np.int64)
    k = rng.binomial(n_pairs, p)
    if n_pairs <= 4 * k or n_pairs <= 1 << 20:
        return np.flatnonzero(rng.random_sample(n_pairs) < p).astype(np.int64)
    chosen = np.zeros(0, dtype=np.int64)
    while len(chosen) < k:  # k is far below n_pairs here: a few rounds of draws with replacement
        draw = rng.randint(0, n_pairs, size=int(1.1 * (k - len(chosen))) + 16, dtype=np.int64)
        chosen = np.unique(np.r_[chosen, draw])
    return rng.permutation(chosen)[:k]


def _triangle_pair(idx, size):
    """Pair ``(i, j)``, ``i < j < size``, of each index in the row-major upper-triangle order."""
    idx = np.asarray(idx, dtype=np.int64)
    starts = np.arange(size, dtype=np.int64)
    starts = starts * size - starts * (starts + 1) // 2  # first index of row i
    i = np.searchsorted(starts, idx, side="right") - 1
    return i, idx - starts[i] + i + 1


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "p_in": [Interval(Real, 0, 1, closed="both")],
        "p_out": [Interval(Real, 0, 1, closed="both")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_planted_partition(n_samples=2000, n_clusters=40, *, p_in=0.8, p_out=0.005, shuffle=True,
                           random_state=None):
    """Generate a signed graph with a planted partition, as a sparse '+' adjacency.

    The vertices are split into ``n_clusters`` groups of (nearly) equal size;
    each pair inside a group is a '+' edge with probability ``p_in``, each pair
    across groups with probability ``p_out``, and every other pair is a '−'
    edge. Only the '+' edges are stored, in ``O(n + m)`` time and memory, so
    graphs with 10^5 and more vertices are cheap.

    Parameters
    ----------
    n_samples : int, default=2000
        Number of vertices.
    n_clusters : int, default=40
        Number of planted groups.
    p_in : float, default=0.8
        Probability of a '+' edge inside a group.
    p_out : float, default=0.005
        Probability of a '+' edge across groups.
    shuffle : bool, default=True
        Permute the vertex ids (otherwise the groups are contiguous).
    random_state : int, RandomState instance or None, default=None
        Seeds the graph.

    Returns
    -------
    adjacency : scipy.sparse.csr_array of shape (n_samples, n_samples)
        Symmetric boolean '+' adjacency without diagonal; pass it to
        :class:`~sklearn_icml.cluster.CorrelationClustering` with
        ``affinity="precomputed"``.
    labels : ndarray of shape (n_samples,)
        The planted group of every vertex.

    See Also
    --------
    make_vertex_stream : An order of insertions and random deletions of the vertices.
    sklearn_icml.cluster.correlation_cost : The disagreements of a clustering.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_planted_partition
    >>> A, labels = make_planted_partition(100, 5, p_in=0.9, p_out=0.01, random_state=0)
    >>> A.shape, labels.shape
    ((100, 100), (100,))
    """
    rng = check_random_state(random_state)
    n, k = n_samples, min(n_clusters, n_samples)
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[: n % k] += 1
    offsets = np.r_[0, np.cumsum(sizes)]
    labels = np.repeat(np.arange(k), sizes)
    rows, cols = [], []
    for g in range(k):
        size = int(sizes[g])
        idx = _sample_pair_indices(rng, size * (size - 1) // 2, p_in)
        i, j = _triangle_pair(idx, size)
        rows.append(i + offsets[g])
        cols.append(j + offsets[g])
    n_cross = n * (n - 1) // 2 - int(np.sum(sizes * (sizes - 1) // 2))
    if n_cross > 0 and p_out > 0:
        target = rng.binomial(n_cross, p_out)
        if n <= 2048:  # small graphs: one Bernoulli per pair
            i, j = np.triu_indices(n, 1)
            cross = labels[i] != labels[j]
            hit = rng.random_sample(int(cross.sum())) < p_out
            rows.append(i[cross][hit])
            cols.append(j[cross][hit])
        else:  # draw uniform pairs, keep the cross-group ones, until `target` distinct ones
            found = np.zeros(0, dtype=np.int64)
            while len(found) < target:
                m = int(1.2 * (target - len(found))) + 64
                a, b = rng.randint(0, n, size=m), rng.randint(0, n, size=m)
                ok = labels[a] != labels[b]
                lo, hi = np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])
                found = np.unique(np.r_[found, lo * n + hi])
            found = rng.permutation(found)[:target]
            rows.append(found // n)
            cols.append(found % n)
    rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    if shuffle:
        perm = rng.permutation(n)  # old id -> new id
        rows, cols = perm[rows], perm[cols]
        new_labels = np.empty(n, dtype=np.int64)
        new_labels[perm] = labels
        labels = new_labels
    data = np.ones(2 * len(rows), dtype=bool)
    A = sp.csr_array((data, (np.r_[rows, cols], np.r_[cols, rows])), shape=(n, n))
    A.sum_duplicates()
    A.sort_indices()
    return A, labels


@validate_params(
    {
        "n_nodes": [Interval(Integral, 1, None, closed="left")],
        "delete_every": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_vertex_stream(n_nodes, *, delete_every=4, random_state=None):
    """Generate a vertex stream: random-order insertions, a uniformly random deletion every few steps.

    This is the update model of Cohen-Addad et al. (ICML 2024): vertices arrive
    in an order fixed in advance (here a random permutation), and after every
    ``delete_every``-th insertion a vertex drawn uniformly among the alive ones
    is deleted.

    Parameters
    ----------
    n_nodes : int
        Number of vertices to insert (ids ``0 .. n_nodes-1`` of the graph).
    delete_every : int or None, default=4
        Delete a random alive vertex after every ``delete_every`` insertions;
        None for insertions only.
    random_state : int, RandomState instance or None, default=None
        Seeds the order and the deletions.

    Returns
    -------
    events : ndarray of shape (n_events, 2)
        One row per update: ``(0, v)`` inserts vertex ``v``, ``(1, v)`` deletes it.

    See Also
    --------
    make_planted_partition : A signed graph with planted groups.
    sklearn_icml.cluster.DynamicCorrelationClustering : Clusters such a stream.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_vertex_stream
    >>> events = make_vertex_stream(8, delete_every=4, random_state=0)
    >>> events.shape, int((events[:, 0] == 1).sum())
    ((10, 2), 2)
    """
    rng = check_random_state(random_state)
    order = rng.permutation(n_nodes)
    events = []
    alive, pos = [], {}
    for step, v in enumerate(order, 1):
        events.append((0, int(v)))
        pos[int(v)] = len(alive)
        alive.append(int(v))
        if delete_every is not None and step % delete_every == 0:
            i = int(rng.randint(len(alive)))
            u = alive[i]
            last = alive.pop()
            if last != u:
                alive[i] = last
                pos[last] = i
            del pos[u]
            events.append((1, u))
    return np.asarray(events, dtype=np.int64).reshape(-1, 2)
