"""PrivateKMeans on Dask collections: exact totals reduced per block, the noise drawn once on the client.

Every release of the fit is a noisy version of a sum over the records: the
number of records, the counts of the candidate cells of each quadtree level,
the per-cluster counts and sums (and, for boosting, the runs' k-means costs).
Each block computes its exact part where it lives; the parts are added up a
tree on the workers; the client adds the noise, once, to the totals, drawing
from the estimator's ``random_state`` in the same order as the in-memory fit.
The projection is data-independent, so every block applies the same one.

Trust model: the workers see raw records, as the curator of the central model
does (the cluster *is* the curator); only noisy releases leave the fit. The
local model, where no one may see raw records, is refused.

Passes over the data (each pass computes every statistic it can at once):

* the size, with the per-feature range when ``bounds="data"``: none for a Dask
  array with known chunks and public ``bounds`` (the size is its shape); one
  otherwise (a DataFrame's partition lengths are unknown until read);
* with ``bounds=None``, two for the counts of the private box's two grids
  (additive over blocks; the noise is drawn once, on the client);
* one per quadtree level: inherent, since the candidate cells of a level are
  the children of the cells whose *noisy* counts of the level above passed the
  threshold, and that noise is drawn on the client between the passes
  (counting every non-empty cell of every level in one pass instead would
  send tables that grow with the data, not with the model);
* one for the cluster totals (one per round for DP-Lloyd): the clusters are
  those of the centres found on the released tree (or the previous round);
* one for ``inertia_``, the cost of the final centres; with ``n_repeats > 1``
  it is fused with the pass that computes every run's cost for the
  exponential mechanism (the inertia of each run is computed alongside).

A greedy fit with public bounds on a Dask array thus reads each block
``n_levels_ + 2`` times (``n_repeats * (n_levels_ + 1) + 1`` with boosting).
"""

import math
from functools import partial

import numpy as np
from sklearn.utils import check_array

from ..privacy import QuadtreeHistogram, grid_histogram
from ..privacy._quadtree import grow_tree, noisy_tree_counts, tree_count_ledger
from ..privacy._sums import release_group_totals
from ..utils._cells import check_geometry, merge_step_tables, pack_keys, to_unit, unit_cells
from ..utils._dask import aligned_blocks, n_columns, reduce_blocks, sum_combine
from ..utils._validation import check_box
from ._exact_sums import group_pieces, pieces_to_sums, scale_exponents, step_pieces
from ._mettu_plaxton import nearest
from ._private_kmeans import assign


def _matrix(block, n_features, name):
    X = check_array(block["X"], dtype=[np.float64, np.float32], ensure_min_samples=0, input_name="X")
    if X.shape[1] != n_features:
        raise ValueError(f"{name}: a block of X has {X.shape[1]} columns; expected {n_features}.")
    return np.asarray(X, dtype=np.float64)


def _summary(block, **kw):
    X = _matrix(block, **kw)
    if not len(X):
        return np.zeros(1), np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)
    return np.array([float(len(X))]), X.min(axis=0), X.max(axis=0)


def _histogram(block, radius, **kw):
    return grid_histogram(_matrix(block, **kw), radius)


def _merge_summary(parts):
    return (sum_combine([p[0] for p in parts]), np.min([p[1] for p in parts], axis=0),
            np.max([p[2] for p in parts], axis=0))


def _clipped(block, bounds, **kw):
    return np.clip(_matrix(block, **kw), *bounds)


#: Rows processed at a time inside a block: the temporaries of a slice stay in cache, and the exact statistics
#: (integer counts and pieces) add up over the slices without rounding.
_SLICE_ROWS = 1 << 15


def _clipped_slices(block, bounds, **kw):
    """The block's records clipped to the box, slice by slice (views of one reused buffer)."""
    X = _matrix(block, **kw)
    buf = np.empty((min(_SLICE_ROWS, len(X)), X.shape[1]))
    for start in range(0, len(X), _SLICE_ROWS):
        part = X[start:start + _SLICE_ROWS]
        yield np.clip(part, *bounds, out=buf[:len(part)])


def _cell_counts(block, *, bounds, geometry, unit_box, n_levels, level, keys, **kw):
    """Exact counts of the block's projected records in the candidate cells ``keys`` (sorted) at ``level``."""
    counts = np.zeros(len(keys), dtype=np.int64)
    if not len(keys):
        return counts.astype(np.float64)
    for Xc in _clipped_slices(block, bounds, **kw):
        Q = unit_cells(to_unit(geometry.project(Xc), *unit_box), n_levels)
        own = pack_keys(Q >> (n_levels - level), level)
        pos = np.minimum(np.searchsorted(keys, own), len(keys) - 1)
        counts += np.bincount(pos[keys[pos] == own], minlength=len(keys))
    return counts.astype(np.float64)


def _group_totals(block, *, bounds, geometry, centers, n_groups, exponents, **kw):
    """Exact sizes of the groups of the nearest ``centers`` and the int64 pieces of their sums of ``x - c``
    (exact in any order: the centres equal the in-memory ones bit for bit, see ``_exact_sums``)."""
    counts = np.zeros(n_groups, dtype=np.int64)
    pieces = group_pieces(np.zeros((0, len(exponents))), np.zeros(0, dtype=np.int64), n_groups, exponents)
    middle = (bounds[0] + bounds[1]) / 2.0
    for Xc in _clipped_slices(block, bounds, **kw):
        groups = nearest(Xc if geometry is None else geometry.project(Xc), centers)
        pieces += group_pieces(Xc - middle, groups, n_groups, exponents)
        counts += np.bincount(groups, minlength=n_groups)
    return counts.astype(np.float64), pieces


def _costs_and_inertias(block, *, bounds, candidates, stored, **kw):
    """The k-means cost of each candidate on the clipped records, then the inertia of each (raw records)."""
    X = _matrix(block, **kw)
    Xc = np.clip(X, *bounds)
    costs = [float(((Xc - C[nearest(Xc, C)]) ** 2).sum()) for C in candidates]
    return np.array(costs + [assign(X, C)[1] for C in stored])


def _inertia(block, *, centers, **kw):
    return np.array([assign(_matrix(block, **kw), centers)[1]])


def _step_tables(block, *, bounds, geometry, n_levels, exponents, **kw):
    Xc = _clipped(block, bounds, **kw)
    return step_pieces(geometry.to_unit(geometry.project(Xc)), n_levels, Xc - geometry.center, exponents)


def _block_labels(block, centers):
    return assign(np.asarray(block, dtype=np.float64), centers)[0]


class _DaskRecords:
    """The fit's data as aligned blocks of a Dask collection (the counterpart of ``_Records``)."""

    def __init__(self, X, blocks, n_features, name, dtype=np.float64):
        self.X, self.blocks, self.d, self.name, self.dtype = X, blocks, n_features, name, dtype
        self.kw = dict(n_features=n_features, name=name)
        self._summary = None
        self._inertias = []  # (centres as the estimator stores them, inertia) from the boosting costs' pass
        chunks = getattr(X, "chunks", None)
        n = None if chunks is None or any(math.isnan(c) for c in chunks[0]) else int(sum(chunks[0]))
        if n is None:
            n = self._summarize()[0]
        if n == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 is "
                             f"required by {name}.")
        self.n = n
        self.bounds = None

    def _summarize(self):
        """One pass: the size and the per-feature range (only when the size is unknown or the box is needed)."""
        if self._summary is None:
            n, lo, hi = reduce_blocks(partial(_summary, **self.kw), self.blocks, combine=_merge_summary)
            self._summary = (int(n[0]), lo, hi)
        return self._summary

    def grid_histogram(self, radius):
        """One pass: the exact counts of a grid of the private box (:func:`~sklearn_icml.privacy.grid_histogram`)."""
        return reduce_blocks(partial(_histogram, radius=radius, **self.kw), self.blocks)

    def data_range(self):
        _, lo, hi = self._summarize()
        return lo.copy(), hi.copy()

    def set_bounds(self, bounds):
        self.bounds = (bounds[0].copy(), bounds[1].copy())

    def _reduce(self, func, combine=sum_combine, **kw):
        return reduce_blocks(partial(func, bounds=self.bounds, **kw, **self.kw), self.blocks, combine=combine)

    def histogram(self, geometry, n_levels, epsilon, threshold, rng):
        """The central private quadtree histogram (as ``private_quadtree_histogram``), one pass per level."""
        n_dims = geometry.projection.shape[1]
        check_geometry(n_dims, n_levels)
        lower, upper = check_box((-geometry.cube, geometry.cube), n_dims, caller=self.name)
        ledger = [tree_count_ledger(n_levels, epsilon)]

        def count_fn(level, cells, keys):
            exact = self._reduce(_cell_counts, geometry=geometry, unit_box=(lower, upper), n_levels=n_levels,
                                 level=level, keys=keys)
            return noisy_tree_counts(exact, n_levels, epsilon, rng)

        levels, cells, counts, heavy = grow_tree(count_fn, n_levels, n_dims, threshold)
        return QuadtreeHistogram(levels, cells, counts, heavy, n_levels, threshold, lower, upper,
                                 math.sqrt(2.0) * ledger[0]["scale"], ledger=ledger)

    def group_sums(self, geometry, centers, n_groups, bounds, rng, *, epsilon_count, epsilon_sum, delta):
        lower, upper = bounds
        exponents = scale_exponents((upper - lower) / 2.0)
        counts, pieces = self._reduce(_group_totals, geometry=geometry, centers=centers, n_groups=n_groups,
                                      exponents=exponents)
        sums = pieces_to_sums(pieces, exponents)
        counts, sums, ledger = release_group_totals(
            counts, sums, self.n, (upper - lower) / 2.0, epsilon_count=epsilon_count, epsilon_sum=epsilon_sum,
            delta=delta, model="central", rng=rng)
        return counts, sums, (lower + upper) / 2.0, ledger

    def costs(self, candidates):
        """The runs' costs on the clipped records; the same pass computes each run's ``inertia_`` (raw records)."""
        stored = [np.asarray(C).astype(self.dtype).astype(np.float64) for C in candidates]
        both = self._reduce(_costs_and_inertias, candidates=candidates, stored=stored)
        self._inertias = list(zip(stored, both[len(candidates):]))
        return both[:len(candidates)]

    def step_tables(self, geometry, n_levels, exponents):
        """A stream step's exact tables (:func:`~._exact_sums.step_pieces`), merged up a tree."""
        return self._reduce(_step_tables, combine=merge_step_tables, geometry=geometry, n_levels=n_levels,
                            exponents=exponents)

    def labels_and_inertia(self, centers):
        """``inertia_`` (from the boosting pass when it computed it, else one pass); ``labels_`` a lazy Dask array
        (computing it is one more pass)."""
        inertia = next((value for C, value in self._inertias if _same_rows(C, centers)), None)
        if inertia is None:
            inertia = reduce_blocks(partial(_inertia, centers=centers, **self.kw), self.blocks)[0]
        arr = self.X if hasattr(self.X, "chunks") else self.X.to_dask_array()
        labels = arr.rechunk({1: -1}).map_blocks(_block_labels, centers, drop_axis=1, dtype=np.int64)
        return labels, float(inertia)


def _same_rows(A, B):
    """Whether ``B`` holds the rows of ``A`` in some order (the fit sorts the chosen run's centres by size)."""
    if A.shape != B.shape:
        return False
    return np.array_equal(A[np.lexsort(A.T)], B[np.lexsort(B.T)])


def dask_records(est, X, *, reset):
    """Validate a Dask ``X`` for ``est`` and wrap it; returns ``(records, dtype of the centres)``."""
    name = type(est).__name__
    if est.privacy != "central":
        raise ValueError(f"{name}: Dask inputs are fitted in the central model (the cluster's workers see the raw "
                         f"records, as the curator does); privacy={est.privacy!r} needs every record to randomise "
                         "its own report before it is sent: fit it in memory.")
    d = n_columns(X, "X", name)
    columns = getattr(X, "columns", None)
    if reset:
        est.n_features_in_ = d
        if columns is not None and all(isinstance(c, str) for c in columns):
            est.feature_names_in_ = np.asarray(list(columns), dtype=object)
        else:
            est.__dict__.pop("feature_names_in_", None)
    elif d != est.n_features_in_:
        raise ValueError(f"X has {d} features, but {name} is expecting {est.n_features_in_} features as input.")
    dtypes = list(X.dtypes) if columns is not None else [X.dtype]
    dtype = np.float32 if all(np.dtype(t) == np.float32 for t in dtypes) else np.float64
    return _DaskRecords(X, aligned_blocks(name, "X", X, {}), d, name, dtype), dtype
