"""The '+' graph of a vertex stream, as the dynamic algorithms query it.

Vertices get ids ``0, 1, ...`` in insertion order and keep them after deletion.
:class:`VertexStream` stores the adjacency lists of the alive vertices with O(1)
removal (swap with the last entry) and the alive ids in a list, so that a
uniformly random alive vertex or neighbour costs O(1). It is also the graph
*oracle* of the sublinear algorithms: :meth:`VertexStream.degree`,
:meth:`VertexStream.random_neighbor` and :meth:`VertexStream.adjacent` are the
paper's degree, random-neighbour and adjacency queries and each adds one to
``n_queries``; storing a new vertex's edges or removing a deleted one's is the
update itself and is not a query.
"""

import random

import numpy as np
import scipy.sparse as sp

__all__ = ["StreamState", "VertexStream"]


class VertexStream:
    """Adjacency lists of a vertex stream, with counted graph queries.

    Parameters
    ----------
    rng : random.Random
        Source of the random neighbours and random alive vertices.
    """

    def __init__(self, rng):
        self.rng = rng
        self.nbrs = []  # adjacency list per vertex id (None once deleted)
        self.pos = []  # neighbour -> index in the adjacency list (None once deleted)
        self.alive = []  # alive ids, in no particular order
        self.alive_pos = {}  # alive id -> index in ``alive``
        self.n_queries = 0

    # -- sizes -----------------------------------------------------------------------------------
    @property
    def n_seen(self):
        """Vertex ids handed out so far (alive or deleted)."""
        return len(self.nbrs)

    @property
    def n_alive(self):
        return len(self.alive)

    def is_alive(self, v):
        return self.nbrs[v] is not None

    def alive_ids(self):
        """Alive ids, increasing."""
        return np.asarray(sorted(self.alive), dtype=np.int64)

    # -- updates ---------------------------------------------------------------------------------
    def load(self, A):
        """Replace the graph by the symmetric CSR '+' adjacency ``A`` (every vertex alive)."""
        A = sp.csr_array(A)
        A.sort_indices()
        n = A.shape[0]
        indptr, indices = A.indptr, A.indices
        self.nbrs = [indices[indptr[v]:indptr[v + 1]].tolist() for v in range(n)]
        self.pos = [{u: i for i, u in enumerate(lst)} for lst in self.nbrs]
        self.alive = list(range(n))
        self.alive_pos = {v: v for v in range(n)}

    def add(self, nbrs):
        """Insert a vertex with its alive neighbours ``nbrs``; returns its id."""
        v = len(self.nbrs)
        self.nbrs.append(list(nbrs))
        self.pos.append({u: i for i, u in enumerate(nbrs)})
        for u in nbrs:
            self.pos[u][v] = len(self.nbrs[u])
            self.nbrs[u].append(v)
        self.alive_pos[v] = len(self.alive)
        self.alive.append(v)
        return v

    def remove(self, v):
        """Delete the alive vertex ``v``; returns its former neighbours."""
        nbrs = self.nbrs[v]
        for u in nbrs:
            lst, pos = self.nbrs[u], self.pos[u]
            i = pos.pop(v)
            last = lst.pop()
            if last != v:
                lst[i] = last
                pos[last] = i
        i = self.alive_pos.pop(v)
        last = self.alive.pop()
        if last != v:
            self.alive[i] = last
            self.alive_pos[last] = i
        self.nbrs[v] = None
        self.pos[v] = None
        return nbrs

    def random_alive(self):
        """A uniformly random alive vertex (the deletion model's draw, not a query)."""
        return self.alive[int(self.rng.random() * len(self.alive))]

    # -- the oracle: each call is one query ------------------------------------------------------
    def degree(self, v):
        self.n_queries += 1
        return len(self.nbrs[v])

    def random_neighbor(self, v):
        self.n_queries += 1
        lst = self.nbrs[v]
        return lst[int(self.rng.random() * len(lst))]

    def adjacent(self, u, v):
        self.n_queries += 1
        return v in self.pos[u]


class StreamState:
    """What the dynamic states share: the seeded stream, the random deletion and the cached labels.

    Subclasses implement ``delete(v)`` and ``_compute_labels()`` and reset
    ``_labels`` to None on every update.

    Parameters
    ----------
    seed : int
        Seeds every random choice (drawn by the estimator with
        ``utils._random.draw_seed``). The per-query draws come from one
        :class:`random.Random`: a scalar draw there costs a small fraction of a
        scalar :class:`numpy.random.RandomState` draw, and the update path
        makes one per random-neighbour query.
    """

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.graph = VertexStream(self.rng)
        self.n_updates = 0
        self.n_load_queries = 0
        self._labels = None

    def delete_random(self):
        """Delete a uniformly random alive vertex; returns its id."""
        v = self.graph.random_alive()
        self.delete(v)
        return v

    def labels(self):
        """Cluster label of every vertex id seen, -1 for deleted ids (cached until an update)."""
        if self._labels is None:
            self._labels = self._compute_labels()
        return self._labels
