"""The Mettu-Plaxton greedy on a released private quadtree, and the reduction to exactly k centres.

Everything here reads only a released :class:`~sklearn_icml.privacy.QuadtreeHistogram`
(noisy counts), so it is post-processing: it costs no privacy. Used by
:class:`~sklearn_icml.cluster.PrivateKMeans` (Dupré la Tour, Henzinger and Saulpic, ICML 2024;
Mettu and Plaxton, Machine Learning 2004).
"""

import numpy as np
from sklearn.cluster import KMeans

from ..utils._random import draw_seed

__all__ = ["bicriteria_to_k", "mettu_plaxton", "nearest"]


def nearest(A, B, device=None):
    """Index of the nearest row of ``B`` for every row of ``A`` (the O(n * k) step)."""
    if device is None:
        out = np.empty(len(A), dtype=np.int64)
        step = max(1, (1 << 22) // max(1, len(B)))
        sq_b = (B * B).sum(1)
        for start in range(0, len(A), step):
            a = A[start:start + step]
            out[start:start + step] = np.argmin(sq_b[None, :] - 2.0 * a @ B.T, axis=1)
        return out
    import torch

    from ..utils._torch import to_tensor

    At = to_tensor(A, device, torch.float64)
    Bt = to_tensor(B, device, torch.float64)
    return torch.cdist(At, Bt).argmin(dim=1).cpu().numpy()


def _heavy_children_max(hist, value):
    """For every cell: the largest ``value`` among its heavy children (-inf if none)."""
    parent = hist.parent_index()
    best = np.full(len(hist.levels), -np.inf)
    child = np.flatnonzero(hist.heavy & (parent >= 0))
    np.maximum.at(best, parent[child], value[child])
    return best


def _greedy(points, radii):
    """Mettu-Plaxton selection (points sorted by radius): keep one unless a kept one is within 2 max(r, r')."""
    chosen = []
    for i in range(len(points)):
        if chosen:
            c = np.asarray(chosen)
            dist = np.linalg.norm(points[c] - points[i], axis=1)
            if np.any(dist <= 2.0 * np.maximum(radii[c], radii[i])):
                continue
        chosen.append(i)
    return np.asarray(chosen, dtype=np.int64)


def mettu_plaxton(hist, centers, radii, max_centers, n_thresholds=60):
    """Bicriteria centres: the greedy at the smallest threshold giving at most ``max_centers`` centres.

    The value of a cell is ``noisy count * half_diagonal**2`` (k-means). For
    a threshold ``t``, each root-to-leaf path of heavy cells contributes its
    deepest cell whose value reaches ``t``; its Mettu-Plaxton radius is the
    radius at which a ball holding the cell's noisy count pays ``t``,
    ``sqrt(t / count)``. The thresholds are scanned from large (few centres)
    to small (many); the last one with at most ``max_centers`` centres wins.

    Returns
    -------
    chosen : ndarray of int
        Indices of the chosen cells.
    n_tried : int
        Thresholds tried.
    """
    value = np.maximum(hist.counts, 0.0) * radii ** 2
    heavy = hist.heavy & (value > 0)
    if not heavy.any():
        return np.zeros(0, dtype=np.int64), 1
    child_max = _heavy_children_max(hist, np.where(heavy, value, -np.inf))
    lo, hi = value[heavy].min(), value[heavy].max()
    thresholds = np.geomspace(hi, lo, n_thresholds) if hi > lo else np.array([hi])
    best, n_tried = None, 0
    for t in thresholds:  # from large balls (few centres) to small ones (many)
        n_tried += 1
        cand = np.flatnonzero(heavy & (value >= t) & (child_max < t))
        mp_radius = np.sqrt(t / np.maximum(hist.counts[cand], 1e-12))
        order = np.argsort(mp_radius, kind="stable")
        chosen = cand[order][_greedy(centers[cand][order], mp_radius[order])]
        if len(chosen) > max_centers:
            if best is None:
                best = chosen
            break
        if best is None or len(chosen) >= len(best):
            best = chosen
    return best, n_tried


def bicriteria_to_k(hist, n_clusters, max_centers, cube, n_init, rng):
    """Greedy bicriteria centres, then weighted k-means down to exactly ``n_clusters`` (projected space).

    Each bicriteria centre is weighted by the noisy counts of the finest heavy
    cells nearest to it. With too few distinct centres (tiny data or budget),
    frontier cells and then data-independent uniform points of the cube pad
    the pool.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_dims)
        The reduced centres.
    bicriteria : ndarray of shape (n_bicriteria, n_dims)
        The greedy's centres.
    n_tried : int
        Thresholds tried by the greedy.
    """
    k = n_clusters
    centers = hist.mass_centers()
    radii = hist.cell_radii()
    chosen, n_tried = mettu_plaxton(hist, centers, radii, max_centers)
    S = centers[chosen]
    frontier = np.flatnonzero(hist.frontier())
    if len(S) and len(frontier):
        owner = nearest(centers[frontier], S)
        w = np.bincount(owner, weights=np.maximum(hist.counts[frontier], 0.0), minlength=len(S))
    else:
        w = np.ones(len(S))
    w = np.maximum(w, 1e-3)
    bicriteria = S.copy()
    if len(np.unique(S, axis=0)) < k:
        dim = hist.n_dims
        pad = rng.uniform(-cube, cube, size=(k, dim))
        pool = np.vstack([S.reshape(-1, dim), centers[frontier].reshape(-1, dim), pad])
        weights = np.concatenate([w, np.full(len(pool) - len(w), 1e-3)])
        _, first = np.unique(pool, axis=0, return_index=True)
        first = np.sort(first)
        S, w = pool[first], weights[first]
    if len(S) == k:
        return S, bicriteria, n_tried
    km = KMeans(n_clusters=k, n_init=n_init, random_state=draw_seed(rng))
    return km.fit(S, sample_weight=w).cluster_centers_, bicriteria, n_tried
