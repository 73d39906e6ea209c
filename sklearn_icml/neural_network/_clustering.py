"""The clustering step of Expand-and-Cluster: tree cut, filtering of unaligned clusters, collapse.

The students' canonical unit vectors of one layer are clustered by
hierarchical clustering (scipy). The tree is cut at the height that maximises
the number of clusters present in at least ``gamma * N`` students (or, with
``count="units"``, holding at least ``gamma * N`` units, the official rule)
whose median pairwise angle is at most ``beta``; among ties the last height
of the first run of maxima. At that cut, clusters over the count threshold
whose median angle exceeds ``beta`` are dropped (the official code cuts on
the count alone, then drops the unaligned clusters: the last height of the
run of maxima then often merges a few stray units into a teacher unit's
cluster, which the angle filter drops whole). Each surviving cluster becomes
one unit: the canonical vectors of the best-loss student present in it
(averaged over that student's duplicates near the cluster's median), in the orientation of that
student's first member; the outgoing weights of each student's members are
mapped onto it and summed.
"""

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from ._symmetry import twin_relation

__all__ = ["LayerClusters", "cluster_units", "collapse_clusters", "cut_tree", "median_angle"]


@dataclass
class LayerClusters:
    """The clusters of one layer.

    Attributes
    ----------
    members : list of ndarray
        Row indices (into the stacked units) of each surviving cluster.
    sizes : ndarray of int
        Each surviving cluster's count (students or units).
    median_angles : ndarray of float
        Each surviving cluster's median pairwise angle (radians).
    n_dropped : int
        Clusters over the count threshold dropped as unaligned.
    labels : ndarray of int
        Label of each row: its surviving cluster's index, or -1.
    linkage : ndarray
        The scipy linkage matrix.
    cut_height : float
        Height of the chosen cut.
    """

    members: list
    sizes: np.ndarray
    median_angles: np.ndarray
    n_dropped: int
    labels: np.ndarray
    linkage: np.ndarray
    cut_height: float


def _counts(labels, student_ids, count):
    if count == "units":
        return np.bincount(labels)
    pairs = np.unique(np.column_stack([labels, student_ids]), axis=0)
    return np.bincount(pairs[:, 0], minlength=labels.max() + 1)


def _angles(V):
    unit = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), np.finfo(float).tiny)
    return np.arccos(np.clip(unit @ unit.T, -1.0, 1.0))


def _median_angle(angles, rows):
    if len(rows) < 2:
        return 0.0
    sub = angles[np.ix_(rows, rows)]
    return float(np.median(sub[np.triu_indices(len(rows), 1)]))


def median_angle(V):
    """Median pairwise angle (radians) between the rows of ``V`` (0 for a single row)."""
    return _median_angle(_angles(V), np.arange(len(V)))


def _assess(labels, student_ids, count, threshold, angles, beta):
    """(qualifying labels, their counts, their median angles, aligned mask) of one cut."""
    counts = _counts(labels, student_ids, count)
    qualifying = np.flatnonzero(counts >= threshold)
    med = np.array([_median_angle(angles, np.flatnonzero(labels == q)) for q in qualifying])
    return qualifying, counts[qualifying], med, med <= beta


def cut_tree(Z, student_ids, threshold, count="students", angles=None, beta=np.pi):
    """The cut of ``Z`` maximising the number of aligned clusters whose count reaches ``threshold``.

    A cluster is aligned when its median pairwise angle (from the matrix
    ``angles``; every cluster when None) is at most ``beta``. Candidate heights
    are 0 (every unit alone) and each merge height; among the heights reaching
    the maximum, the last one of the first run is kept. Returns
    ``(height, labels, n_kept)``; labels start at 0.
    """
    heights = np.concatenate([[0.0], np.unique(Z[:, 2])])
    n_kept = np.empty(len(heights), dtype=int)
    for i, height in enumerate(heights):
        labels = fcluster(Z, height, criterion="distance") - 1
        if angles is None:
            n_kept[i] = int((_counts(labels, student_ids, count) >= threshold).sum())
        else:
            n_kept[i] = int(_assess(labels, student_ids, count, threshold, angles, beta)[3].sum())
    best = n_kept.max()
    i = int(np.argmax(n_kept == best))
    while i + 1 < len(heights) and n_kept[i + 1] == best:
        i += 1
    return heights[i], fcluster(Z, heights[i], criterion="distance") - 1, int(best)


def cluster_units(V, student_ids, n_students, *, gamma, beta, count, method="average", distance="l2"):
    """Cluster the canonical unit vectors ``V`` (one row per student unit) of one layer."""
    metric = "euclidean" if distance == "l2" else "cosine"
    angles = _angles(V)
    threshold = gamma * n_students
    if len(V) == 1:
        Z = np.zeros((0, 4))
        height, labels = 0.0, np.zeros(1, dtype=int)
    else:
        dist = np.nan_to_num(pdist(V, metric=metric), nan=0.0)
        Z = linkage(dist, method=method)
        height, labels, _ = cut_tree(Z, student_ids, threshold, count, angles, beta)
    qualifying, counts, med, aligned = _assess(labels, student_ids, count, threshold, angles, beta)
    out_labels = np.full(len(V), -1)
    members = []
    for label in qualifying[aligned]:
        rows = np.flatnonzero(labels == label)
        out_labels[rows] = len(members)
        members.append(rows)
    return LayerClusters(members, counts[aligned].astype(int), med[aligned].astype(float),
                         int((~aligned).sum()), out_labels, Z, float(height))


def collapse_clusters(clusters, V, factor, student_ids, unit_ids, losses, outgoing, activation, beta=np.pi / 6):
    """One unit per cluster, and each student's outgoing weights onto the new units.

    Parameters
    ----------
    clusters : LayerClusters
    V : ndarray of shape (n_rows, fan_in + 1)
        Canonical vectors of the stacked units.
    factor : ndarray of shape (n_rows,)
        Raw vector = ``factor * V`` (see ``canonical_units``).
    student_ids, unit_ids : ndarray of shape (n_rows,)
        Student and unit index of each row.
    losses : ndarray of shape (n_students,)
        Students' current losses (the best one in a cluster gives its unit).
    outgoing : ndarray of shape (n_students, n_next, width)
        Raw outgoing weights of every student.
    activation : str
    beta : float, default=pi/6
        The best student's members within ``beta`` of the cluster's
        coordinate-wise median are averaged (the nearest one when none is).

    Returns
    -------
    W : ndarray of shape (k, fan_in)
    b : ndarray of shape (k,)
    new_outgoing : ndarray of shape (n_students, n_next, k)
        Each student's members mapped onto the new units and summed (zero
        where a student has no member).
    bias_shift : ndarray of shape (n_students, n_next)
        Constants the mapping moves into the next layer's bias (sigmoid).
    """
    n_students, n_next, _ = outgoing.shape
    k = len(clusters.members)
    rep = np.empty((k, V.shape[1]))
    new_outgoing = np.zeros((n_students, n_next, k))
    bias_shift = np.zeros((n_students, n_next))
    for c, rows in enumerate(clusters.members):
        present = student_ids[rows]
        best = present[np.argmin(losses[present])]
        own = rows[present == best]
        # the best student's members near the cluster's median (a cut may have merged strays in)
        center = np.median(V[rows], axis=0)
        near = own[[median_angle(np.vstack([center, V[r]])) <= beta for r in own]]
        if len(near) == 0:
            near = own[[np.argmin(np.linalg.norm(V[own] - center, axis=1))]]
        ref_factor = factor[near[0]]
        canonical = V[near].mean(axis=0)
        rep[c] = ref_factor * canonical
        # each member's activation as a function of the representative's (h = coef * h_rep + const)
        ratio = np.abs(factor[rows]) / abs(ref_factor)
        sign = np.sign(factor[rows]) * np.sign(ref_factor)
        coef, const = twin_relation(activation, sign, ratio)
        for row, cf, ct in zip(rows, coef, const):
            a = outgoing[student_ids[row], :, unit_ids[row]]
            new_outgoing[student_ids[row], :, c] += cf * a
            bias_shift[student_ids[row]] += ct * a
    return rep[:, :-1], rep[:, -1], new_outgoing, bias_shift
