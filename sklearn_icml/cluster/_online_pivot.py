"""Online Pivot (KwikCluster on insertions): the natural dynamic peer of Dynamic Agreement.

Vertices are ranked by arrival, which the vertex-stream model makes a uniformly
random order. A new vertex lists its neighbours (``O(deg)`` queries) and joins
the cluster of its earliest-arrived alive neighbour that is a pivot, or becomes
a pivot itself: on insertions alone this is exactly Pivot with the arrival order
(Ailon, Charikar and Newman), the online baseline of the experiments of
Cohen-Addad et al. (ICML 2024). When a pivot is deleted, the members of its
cluster are placed again one after the other in arrival order, by the same
rule; members of other clusters are not revisited, so after deletions the
partition can differ from Pivot recomputed on the current graph (a deleted
pivot's ``O(cluster)`` repair is the cost the online peer pays).
"""

import numpy as np
import scipy.sparse as sp

from ._signed_graph import canonical_labels, pivot_labels
from ._vertex_stream import StreamState

__all__ = ["OnlinePivot"]


class OnlinePivot(StreamState):
    """State of online Pivot on a vertex stream (same interface as ``DynamicAgreement``).

    Parameters
    ----------
    seed : int
        Seeds the random deletions (see ``StreamState``).
    """

    exact = False

    def __init__(self, *, seed):
        super().__init__(seed)
        self.pivot_of = []  # pivot of each vertex (itself for a pivot), -1 once deleted
        self.members = {}  # pivot -> set of its cluster's vertices

    @property
    def anchor(self):
        """Pivots play the part of anchors."""
        return [p == v for v, p in enumerate(self.pivot_of)]

    def load(self, A):
        """Pivot of the whole graph in id order (vectorised); every vertex lists its neighbourhood once."""
        A = sp.csr_array(A)
        A.sort_indices()
        self.graph.load(A)
        n = A.shape[0]
        labels = pivot_labels(A, None, rank=np.arange(n))
        first = np.full(labels.max() + 1 if n else 0, n, dtype=np.int64)
        np.minimum.at(first, labels, np.arange(n))
        self.pivot_of = first[labels].tolist()
        self.members = {}
        for v, p in enumerate(self.pivot_of):
            self.members.setdefault(p, set()).add(v)
        self.n_load_queries = int(A.nnz + n)
        self._labels = None

    def _place(self, v):
        """Join the earliest alive pivot among the neighbours, or become a pivot (deg + 1 queries)."""
        g = self.graph
        d = g.degree(v)
        g.n_queries += d  # list the neighbours
        best = -1
        for u in g.nbrs[v]:
            if self.pivot_of[u] == u and (best < 0 or u < best):
                best = u
        if best < 0 or best > v:  # no earlier pivot among the neighbours: v is a pivot
            best = v
        self.pivot_of[v] = best
        self.members.setdefault(best, set()).add(v)

    def insert(self, nbrs):
        v = self.graph.add(nbrs)
        self.pivot_of.append(-1)
        self.n_updates += 1
        self._labels = None
        self._place(v)
        return v

    def delete(self, v):
        self.graph.remove(v)
        p = self.pivot_of[v]
        self.pivot_of[v] = -1
        self.n_updates += 1
        self._labels = None
        if p != v:
            self.members[p].discard(v)
            return
        orphans = sorted(self.members.pop(v) - {v})
        for u in orphans:
            self.pivot_of[u] = -1
        for u in orphans:
            self._place(u)

    def _compute_labels(self):
        labels = np.full(self.graph.n_seen, -1, dtype=np.int64)
        alive = self.graph.alive_ids()
        if alive.size:
            labels[alive] = canonical_labels(np.asarray(self.pivot_of, dtype=np.int64)[alive])
        return labels
