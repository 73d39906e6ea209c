"""Private hierarchical histograms over a quadtree of a bounded box (central and local models).

The box is cut into ``2**d`` equal children, each child again, down to
``n_levels`` levels; a record lies in exactly one cell per level. The tree is
grown top-down: at each level, every child of a *heavy* parent (noisy count at
least ``threshold``) gets a noisy count, and the heavy ones among them are
expanded in turn. The root is always heavy.

* ``"central"``: the curator adds discrete Laplace noise of scale
  ``n_levels / epsilon`` (exact, on a power-of-two grid finer than 1: module
  ``_discrete``) to every count it releases. A record changes one count per level
  by one (records added or removed; :func:`~._sensitivity.tree_level_sensitivity`),
  so each level's release is ``epsilon / n_levels``-DP and the tree is
  ``epsilon``-DP (pure). Cells not released reveal nothing beyond their
  parents' noisy counts, so the pruning costs nothing.
* ``"local"``: every record reports one random level's cell through
  optimised local hashing (module ``_local_hashing``); each report is
  ``epsilon``-LDP and the server estimates the counts from the reports.

The continual-observation version is :class:`ContinualQuadtreeHistogram`
(module ``_continual``).
"""

import math
from numbers import Integral, Real

import numpy as np

from ..utils._cells import (
    MAX_CANDIDATES,
    check_geometry,
    children_offsets,
    level_counts,
    lookup,
    pack_keys,
    to_unit,
    unit_cells,
)
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import DEVICE_CONSTRAINT
from ._accounting import ledger_entry
from ._discrete import add_noise, grid_laplace, noise_random_state
from ._local_hashing import local_count_fn
from ._sensitivity import tree_level_sensitivity
from ._validation import EPSILON, check_box, check_finite

__all__ = ["QuadtreeHistogram", "central_count_fn", "grow_tree", "noisy_tree_counts", "private_quadtree_histogram",
           "tree_count_ledger", "tree_count_noise"]


class QuadtreeHistogram:
    """The released part of a private quadtree histogram.

    Read more in the :ref:`User Guide <privacy>`.

    Every released cell has a level (1 = the ``2**d`` children of the root),
    integer coordinates at that level, a noisy count and a flag saying whether
    it was heavy (noisy count at least the threshold, hence expanded). All of
    it is differentially private; nothing else about the data is kept.

    Parameters
    ----------
    levels : ndarray of shape (n_cells,)
        Level of each released cell.
    cells : ndarray of shape (n_cells, n_dims)
        Integer coordinates of each cell at its level.
    counts : ndarray of shape (n_cells,)
        Noisy counts.
    heavy : ndarray of shape (n_cells,)
        Whether each cell's noisy count reached ``threshold``.
    n_levels : int
        Depth of the tree.
    threshold : float
        Expansion threshold used.
    lower : ndarray of shape (n_dims,)
        Lower corner of the box.
    upper : ndarray of shape (n_dims,)
        Upper corner of the box.
    noise_std : float
        Standard deviation of the noise of one count.
    ledger : list of dict, default=None
        What the release spent (see :func:`ledger_entry`).

    Attributes
    ----------
    n_dims : int
        Number of dimensions of the box.

    See Also
    --------
    private_quadtree_histogram : Builds one in the central or the local model.
    ContinualQuadtreeHistogram : Builds one after every step of a stream.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import private_quadtree_histogram
    >>> X = np.random.RandomState(0).uniform(0, 1, size=(1000, 2))
    >>> hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=3, epsilon=1.0,
    ...                                   threshold=20.0, random_state=0)
    >>> hist.cells.shape[1], int(hist.levels.max())
    (2, 3)
    """

    def __init__(self, levels, cells, counts, heavy, n_levels, threshold, lower, upper, noise_std, *,
                 ledger=None):
        caller = type(self).__name__
        self.levels = np.asarray(levels, dtype=np.int64)
        self.cells = np.asarray(cells, dtype=np.int64)
        self.counts = check_finite(counts, "counts", caller=caller, ndim=1)
        self.heavy = np.asarray(heavy, dtype=bool)
        if self.cells.ndim != 2 or not (len(self.levels) == len(self.cells) == len(self.counts) == len(self.heavy)):
            raise ValueError(f"{caller}: levels, cells, counts and heavy must describe the same cells; got shapes "
                             f"{self.levels.shape}, {self.cells.shape}, {self.counts.shape}, {self.heavy.shape}.")
        self.n_levels = int(n_levels)
        if self.n_levels < 1 or (len(self.levels) and (self.levels.min() < 1 or self.levels.max() > self.n_levels)):
            raise ValueError(f"{caller}: n_levels must be >= 1 and cover every cell's level; got {n_levels!r}.")
        self.threshold = float(threshold)
        if np.isnan(self.threshold):
            raise ValueError(f"{caller}: threshold must not be NaN.")
        self.lower, self.upper = check_box((lower, upper), self.cells.shape[1], caller=caller, name="lower/upper")
        self.noise_std = float(noise_std)
        if not (np.isfinite(self.noise_std) and self.noise_std >= 0):
            raise ValueError(f"{caller}: noise_std must be finite and non-negative; got {noise_std!r}.")
        self.n_dims = self.cells.shape[1]
        self.ledger = [] if ledger is None else list(ledger)

    def cell_keys(self):
        """Pack each released cell's coordinates into one int64 key (unique within a level).

        Returns
        -------
        keys : ndarray of shape (n_cells,)
            Keys, as read by :meth:`ContinualQuadtreeHistogram.counts`.
        """
        keys = np.empty(len(self.levels), dtype=np.int64)
        for level in np.unique(self.levels):
            sel = self.levels == level
            keys[sel] = pack_keys(self.cells[sel], level)
        return keys

    def parent_index(self):
        """Find each released cell's parent among the released cells.

        Returns
        -------
        parent : ndarray of shape (n_cells,)
            Index of the parent cell, -1 for level-1 cells (children of the
            root) and for cells whose parent was not released.
        """
        keys = self.cell_keys()
        parent = np.full(len(self.levels), -1, dtype=np.int64)
        for level in np.unique(self.levels):
            child = np.flatnonzero(self.levels == level + 1)
            sel = np.flatnonzero(self.levels == level)
            if len(child) == 0 or len(sel) == 0:
                continue
            order = np.argsort(keys[sel])
            parent_keys = pack_keys(self.cells[child] >> 1, level)
            pos = np.clip(np.searchsorted(keys[sel][order], parent_keys), 0, len(sel) - 1)
            found = keys[sel][order][pos] == parent_keys
            parent[child[found]] = sel[order][pos[found]]
        return parent

    def cell_centers(self):
        """Compute the centres of the released cells, in the box's coordinates.

        Returns
        -------
        centers : ndarray of shape (n_cells, n_dims)
            Cell centres.
        """
        side = (self.upper - self.lower) / (2.0 ** self.levels)[:, None]
        return self.lower + (self.cells + 0.5) * side

    def cell_radii(self):
        """Compute the half diagonals of the released cells.

        Returns
        -------
        radii : ndarray of shape (n_cells,)
            Distance from each cell's centre to its corners.
        """
        return 0.5 * np.linalg.norm(self.upper - self.lower) / 2.0 ** self.levels

    def mass_centers(self):
        """Estimate the centres of mass of the released cells, in the box's coordinates.

        Bottom-up: a cell with released children sits at the mean of their
        centres of mass weighted by their (non-negative) noisy counts; a cell
        without released children, or whose children's noisy counts are all
        non-positive, at its geometric centre. Post-processing of the noisy
        counts only.

        Returns
        -------
        centers : ndarray of shape (n_cells, n_dims)
            Estimated centre of mass of each cell's records.
        """
        loc = self.cell_centers()
        parent = self.parent_index()
        for level in sorted(np.unique(self.levels))[::-1]:
            child = np.flatnonzero((self.levels == level + 1) & (parent >= 0))
            if len(child) == 0:
                continue
            w = np.maximum(self.counts[child], 0.0)
            mass = np.zeros(len(self.levels))
            acc = np.zeros_like(loc)
            np.add.at(mass, parent[child], w)
            np.add.at(acc, parent[child], w[:, None] * loc[child])
            ok = mass > 0
            loc[ok] = acc[ok] / mass[ok, None]
        return loc

    def frontier(self):
        """Find the heavy cells none of whose children is heavy: the finest heavy partition.

        Returns
        -------
        mask : ndarray of shape (n_cells,)
            True for the heavy cells without a heavy child.
        """
        parent = self.parent_index()
        has_heavy_child = np.zeros(len(self.levels), dtype=bool)
        has_heavy_child[parent[self.heavy & (parent >= 0)]] = True
        return self.heavy & ~has_heavy_child


def grow_tree(count_fn, n_levels, n_dims, threshold):
    """Top-down growth; ``count_fn(level, cells, keys)`` returns the noisy counts of the candidates."""
    offsets = children_offsets(n_dims)
    parents = np.zeros((1, n_dims), dtype=np.int64)
    out_levels, out_cells, out_counts, out_heavy = [], [], [], []
    for level in range(1, n_levels + 1):
        cand = (2 * parents[:, None, :] + offsets[None, :, :]).reshape(-1, n_dims)
        keys = pack_keys(cand, level)
        order = np.argsort(keys, kind="stable")
        cand, keys = cand[order], keys[order]
        noisy = np.asarray(count_fn(level, cand, keys), dtype=np.float64)
        threshold_level = threshold(level) if callable(threshold) else threshold
        heavy = noisy >= threshold_level
        out_levels.append(np.full(len(cand), level, dtype=np.int64))
        out_cells.append(cand)
        out_counts.append(noisy)
        out_heavy.append(heavy)
        parents = cand[heavy]
        if len(parents) == 0 or len(parents) * len(offsets) > MAX_CANDIDATES:
            break
    return (np.concatenate(out_levels), np.concatenate(out_cells), np.concatenate(out_counts),
            np.concatenate(out_heavy))


@validate_params(
    {"X": ["array-like"], "bounds": [tuple, list], "n_levels": [Interval(Integral, 1, 62, closed="both")],
     "epsilon": EPSILON, "threshold": [Interval(Real, None, None, closed="both")],
     "model": [StrOptions({"central", "local"})], "random_state": ["random_state"],
     "device": DEVICE_CONSTRAINT},
    prefer_skip_nested_validation=True,
)
def private_quadtree_histogram(X, *, bounds, n_levels, epsilon, threshold, model="central",
                               random_state=None, device="cpu"):
    """Differentially private hierarchical histogram of points in a box.

    Grows a quadtree top-down and releases noisy counts of the children of
    every heavy cell (noisy count at least ``threshold``); see the module
    notes for the central and local models.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_dims)
        Points; those outside ``bounds`` are clipped to the box (a per-record
        map, so privacy is unaffected).
    bounds : tuple (lower, upper)
        Public box: scalars or arrays of shape (n_dims,).
    n_levels : int
        Depth of the tree (``n_dims * n_levels <= 62``).
    epsilon : float
        Privacy budget of the whole tree (central model: pure
        ``epsilon``-DP; local model: every report is ``epsilon``-LDP).
    threshold : float
        Noisy count at which a cell is expanded (``inf``: only level 1 is
        released).
    model : {"central", "local"}, default="central"
        Privacy model.
    random_state : int, RandomState instance or None, default=None
        Source of the noise (central) or of the users' randomisation (local):
        None draws the central noise from the operating system's
        cryptographic generator; an int or a ``RandomState`` reproduces it
        (for testing).
    device : {"cpu", "auto", "cuda"}, default="cpu"
        Where the counting (central) or the ``O(n_samples * n_cells)``
        estimation from local reports runs; the noise is drawn on the CPU
        from ``random_state`` in any case, so results agree across devices.

    Returns
    -------
    histogram : QuadtreeHistogram
        The released cells and noisy counts; its ``ledger`` says what was
        spent (see :func:`ledger_entry`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import private_quadtree_histogram
    >>> X = np.random.RandomState(0).normal(0.25, 0.05, size=(2000, 2))
    >>> hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=4, epsilon=1.0,
    ...                                   threshold=40.0, random_state=0)
    >>> bool(hist.counts.max() > 1900)  # the level-1 cell [0, 0.5)^2 holds nearly every point
    True
    """
    from ..utils._torch import resolve_device

    X = check_finite(X, "X", caller="private_quadtree_histogram", ndim=2)
    n, d = X.shape
    check_geometry(d, n_levels)
    lower, upper = check_box(bounds, d, caller="private_quadtree_histogram")
    Q = unit_cells(to_unit(X, lower, upper), n_levels)
    rng = noise_random_state(random_state)
    dev = None if device == "cpu" else resolve_device(device)
    if dev is not None and dev.type == "cpu":
        dev = None
    if model == "central":
        counts_fn, std = central_count_fn(Q, n_levels, epsilon, rng, device=dev)
        ledger = [tree_count_ledger(n_levels, epsilon)]
    else:
        counts_fn, std = local_count_fn(Q, n_levels, epsilon, rng, device=dev)
        ledger = [ledger_entry("tree reports (optimised local hashing, per record)", "local_hashing",
                               epsilon=epsilon)]
    levels, cells, counts, heavy = grow_tree(counts_fn, n_levels, d, threshold)
    return QuadtreeHistogram(levels, cells, counts, heavy, n_levels, threshold, lower, upper, std, ledger=ledger)



def tree_count_noise(n_levels, epsilon):
    """The noise of every released tree count: discrete Laplace of scale ``n_levels / epsilon`` on a grid.

    A record changes one count per level by one (integers, on the grid while
    its step is at most 1), so the L1 sensitivity of all the levels' releases
    together is ``n_levels`` and the whole tree is ``epsilon``-DP.
    """
    return grid_laplace(tree_level_sensitivity() * n_levels, epsilon, n_rounded=n_levels, integer=True)


def tree_count_ledger(n_levels, epsilon):
    """The ledger entry of the tree counts (one level per release)."""
    noise = tree_count_noise(n_levels, epsilon)
    return ledger_entry("tree counts (one level per release)", "laplace",
                        sensitivity=noise.sensitivity / n_levels, scale=noise.scale, count=n_levels,
                        epsilon=epsilon)


def noisy_tree_counts(exact, n_levels, epsilon, rng):
    """``exact`` counts of candidate cells released with :func:`tree_count_noise` drawn from ``rng``."""
    return add_noise(exact, tree_count_noise(n_levels, epsilon), rng)


def central_count_fn(Q, n_levels, epsilon, rng, device=None):
    """Noisy counts of candidate cells (:func:`noisy_tree_counts`); returns ``(count_fn, noise_std)``."""
    per_level = level_counts(Q, n_levels, device)
    scale = tree_count_noise(n_levels, epsilon).scale

    def count_fn(level, cells, keys):
        uniq, counts = per_level[level - 1]
        return noisy_tree_counts(lookup(uniq, counts, keys), n_levels, epsilon, rng)

    return count_fn, math.sqrt(2.0) * scale
