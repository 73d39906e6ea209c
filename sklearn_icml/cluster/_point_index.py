"""Neighbour search over a growing, shrinking set of points: the '+' edges of a feature stream.

A vertex stream in feature space needs, for every new point, its '+' neighbours
among the alive stored points (similarity above a threshold, or mutual nearest
neighbours). Scanning every stored point costs ``O(n d)`` per insertion;
:class:`PointIndex` keeps the points in scikit-learn
:class:`~sklearn.neighbors.NearestNeighbors` trees of geometrically growing
sizes (the logarithmic method of Bentley and Saxe): new points wait in a small
buffer scanned exhaustively, a full buffer is merged with the trees below it
into one new tree, so each point is re-indexed ``O(log n)`` times and a query
visits ``O(log n)`` trees. Deleted points stay in their tree and are filtered
out of the answers, until more than half the stored points are deleted and
everything alive is re-indexed.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors

from ._signed_graph import radius_for

__all__ = ["PointIndex"]

_BUFFER = 64


class PointIndex:
    """Points with ids ``0, 1, ...`` in insertion order, and their '+' rows under an affinity.

    Parameters
    ----------
    affinity : {"rbf", "cosine", "knn"}
    gamma, threshold, n_neighbors
        As in the correlation clustering estimators.
    """

    def __init__(self, affinity, gamma, threshold, n_neighbors):
        self.affinity = affinity
        self.threshold = threshold
        self.n_neighbors = n_neighbors
        self.metric = "cosine" if affinity == "cosine" else "euclidean"
        self.radius = None if affinity == "knn" else radius_for(affinity, gamma, threshold)
        self.points = None  # (capacity, d) float64
        self.alive = np.zeros(0, dtype=bool)
        self.n_points = 0
        self.levels = []  # (ids, NearestNeighbors) or None, of sizes _BUFFER * 2**i
        self.buffer = []  # ids not yet in a tree
        self.n_dead = 0

    # -- storage ---------------------------------------------------------------------------------
    def add(self, X):
        """Store the rows of ``X`` (dense) as the next ids."""
        X = np.asarray(X, dtype=np.float64)
        need = self.n_points + X.shape[0]
        if self.points is None:
            self.points = np.zeros((max(need, 16), X.shape[1]))
            self.alive = np.zeros(max(need, 16), dtype=bool)
        elif self.points.shape[0] < need:
            cap = max(need, 2 * self.points.shape[0])
            self.points = np.concatenate([self.points, np.zeros((cap - self.points.shape[0], X.shape[1]))])
            self.alive = np.concatenate([self.alive, np.zeros(cap - self.alive.shape[0], dtype=bool)])
        ids = np.arange(self.n_points, need)
        self.points[ids] = X
        self.alive[ids] = True
        self.n_points = need
        for i in ids.tolist():
            self.buffer.append(i)
            if len(self.buffer) >= _BUFFER:
                self._flush()

    def remove(self, ids):
        self.alive[ids] = False
        self.n_dead += len(ids)
        if self.n_dead > max(_BUFFER, (self.n_points - self.n_dead)):
            self._rebuild()

    def _tree(self, ids):
        return ids, NearestNeighbors(metric=self.metric).fit(self.points[ids])

    def _flush(self):
        carry = np.asarray(self.buffer, dtype=np.int64)
        self.buffer = []
        for i, level in enumerate(self.levels):
            if level is None:
                self.levels[i] = self._tree(carry)
                return
            carry = np.concatenate([level[0], carry])
            self.levels[i] = None
        self.levels.append(self._tree(carry))

    def _rebuild(self):
        alive = np.flatnonzero(self.alive[:self.n_points])
        self.levels, self.buffer, self.n_dead = [], [], 0
        if alive.size:
            self.levels.append(self._tree(alive))

    # -- queries ---------------------------------------------------------------------------------
    def _parts(self):
        for level in self.levels:
            if level is not None:
                yield level
        if self.buffer:
            yield np.asarray(self.buffer, dtype=np.int64), None

    def _within_radius(self, X):
        """Per row of X: ids of alive points within the radius."""
        out = [[] for _ in range(X.shape[0])]
        if self.radius is None:
            return out
        for ids, nn in self._parts():
            if nn is None:
                D = pairwise_distances(X, self.points[ids], metric=self.metric)
                hits = [np.flatnonzero(row <= self.radius) for row in D]
            else:
                hits = nn.radius_neighbors(X, radius=self.radius, return_distance=False)
            for r, h in enumerate(hits):
                if len(h):
                    found = ids[h]
                    out[r].extend(found[self.alive[found]].tolist())
        return out

    def kneighbors(self, X, k):
        """Per row of X: (distances, ids) of its k nearest alive points, increasing."""
        dists = [[] for _ in range(X.shape[0])]
        found = [[] for _ in range(X.shape[0])]
        for ids, nn in self._parts():
            if nn is None:
                D = pairwise_distances(X, self.points[ids], metric=self.metric)
                for r in range(X.shape[0]):
                    dists[r].extend(D[r].tolist())
                    found[r].extend(ids.tolist())
                continue
            # ask for enough candidates to see k alive ones (the dead stay in the trees)
            n_dead_here = int(np.count_nonzero(~self.alive[ids]))
            kk = min(len(ids), k + n_dead_here)
            D, idx = nn.kneighbors(X, n_neighbors=kk)
            for r in range(X.shape[0]):
                dists[r].extend(D[r].tolist())
                found[r].extend(ids[idx[r]].tolist())
        out = []
        for r in range(X.shape[0]):
            d = np.asarray(dists[r])
            f = np.asarray(found[r], dtype=np.int64)
            keep = self.alive[f] if f.size else np.zeros(0, dtype=bool)
            d, f = d[keep], f[keep]
            order = np.lexsort((f, d))[:k]
            out.append((d[order], f[order]))
        return out

    def plus_rows(self, X, exclude=None):
        """'+' rows (n_rows, n_points) of the points X against the alive stored points.

        rbf / cosine: every alive point within the radius equivalent to the
        threshold. knn: mutual nearest neighbours judged now: ``x`` and the
        stored ``p`` are '+' when ``p`` is among the ``n_neighbors`` nearest alive
        points of ``x`` and ``x`` is closer to ``p`` than ``p``'s
        ``n_neighbors``-th nearest other alive point. ``exclude[r]`` is an id
        that row ``r`` must not be linked to (the row's own stored copy).
        """
        X = np.asarray(X, dtype=np.float64)
        n_rows = X.shape[0]
        if self.affinity != "knn":
            hits = self._within_radius(X)
        else:
            hits = self._mutual_knn(X, exclude)
        rows, cols = [], []
        for r, h in enumerate(hits):
            if exclude is not None:
                h = [u for u in h if u != exclude[r]]
            rows.extend([r] * len(h))
            cols.extend(h)
        P = sp.csr_array((np.ones(len(rows), dtype=bool), (np.asarray(rows, dtype=np.int64),
                                                           np.asarray(cols, dtype=np.int64))),
                         shape=(n_rows, self.n_points))
        P.sum_duplicates()
        P.sort_indices()
        return P

    def batch_rows(self, X):
        """'+' pairs among the rows of ``X`` themselves (radius affinities), shape (n_rows, n_rows), no diagonal."""
        X = np.asarray(X, dtype=np.float64)
        if self.radius is None:
            return sp.csr_array((X.shape[0], X.shape[0]), dtype=bool)
        P = sp.csr_array(pairwise_distances(X, metric=self.metric) <= self.radius)
        P.setdiag(False)
        P.eliminate_zeros()
        P.sort_indices()
        return P

    def _mutual_knn(self, X, exclude):
        k = self.n_neighbors
        skip = 0 if exclude is None else 1
        near = self.kneighbors(X, k + skip)
        out = []
        for r, (d, f) in enumerate(near):
            if exclude is not None:
                keep = f != exclude[r]
                d, f = d[keep], f[keep]
            d, f = d[:k], f[:k]
            if f.size == 0:
                out.append([])
                continue
            # each candidate's own k-th nearest other alive point (itself excluded)
            theirs = self.kneighbors(self.points[f], k + 1)
            mutual = []
            for (dp, fp), p, dist in zip(theirs, f.tolist(), d.tolist()):
                others = dp[fp != p]
                if exclude is not None:
                    others = others[fp[fp != p] != exclude[r]]
                kth = others[k - 1] if others.size >= k else np.inf
                if dist <= kth:
                    mutual.append(p)
            out.append(mutual)
        return out
