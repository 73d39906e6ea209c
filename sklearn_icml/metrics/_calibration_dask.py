"""Calibration metrics on Dask collections: additive binning per block, the in-memory finish on the client.

One pass over the blocks computes every statistic at once, each of a size
that does not grow with the number of samples: the block's distinct labels
(checked on the client as in memory), per binary problem the range of the
finite scores and the weights of the point masses at ``+-inf``, and the linear
binning of ``w`` and ``w * y`` onto the Gaussian grid (LS-ECE, the reliability
curve) or the per-bin totals (binned ECE). The grid needs no first pass for
its range: its nodes are the multiples of the step ``sigma/64`` (see
:func:`~._calibration_kernels.grid_layout`), so each block bins onto the nodes its own
scores reach and the grids add up after aligning their first nodes.

With 2-D scores and ``labels=None`` the class of each column is the sorted
set of all labels, which no block knows alone: a first, light pass collects
the distinct labels of ``y_true`` (passing ``labels=``, e.g. the classifier's
``classes_``, saves it). The grid, the FFT convolution and the integral are
the in-memory code, run on the summed grids.
"""

from functools import partial

import numpy as np
from sklearn.utils import column_or_1d

from ..utils._dask import aligned_blocks, is_dask_collection, reduce_blocks
from ._backend import get_ops
from ._calibration_input import _binary_labels, prepare_binary_problems
from ._calibration_kernels import (
    _MAX_GRID,
    bin_onto_grid,
    bin_totals,
    curve_from_sums,
    ece_from_bins,
    grid_layout,
    reliability_from_totals,
    smooth_grid,
    sort_curve,
)

_NUMPY = get_ops(np.zeros(1))


def _blocks(caller, y_true, y_score, sample_weight):
    inputs = {"y_score": y_score, "y_true": y_true, "sample_weight": sample_weight}
    main = next(name for name, obj in inputs.items() if is_dask_collection(obj))
    others = {name: obj for name, obj in inputs.items() if name != main}
    return aligned_blocks(caller, main, inputs[main], others)


def _distinct(y):
    """Sorted distinct labels; a counting pass for small integer ranges (0/1 outcomes), else a sort."""
    if y.dtype.kind in "iub" and y.size:
        lo, hi = int(y.min()), int(y.max())
        if hi - lo < 1024:
            return (np.flatnonzero(np.bincount(y.astype(np.int64) - lo)) + lo).astype(y.dtype)
    return np.unique(y)


def _block_labels(block):
    return _distinct(column_or_1d(np.asarray(block["y_true"])))


def _merge_labels(parts):
    return np.unique(np.concatenate(parts))


def _column_labels(caller, blocks, y_score, labels):
    """2-D scores: the class of each column (``labels``, or the sorted labels of ``y_true``: one light pass)."""
    if labels is not None:
        return labels
    only_y = [{"y_true": b["y_true"]} for b in blocks]  # the scores' blocks are not read
    classes = reduce_blocks(_block_labels, only_y, combine=_merge_labels)
    n_classes = y_score.shape[1]
    if classes.size != n_classes:
        raise ValueError(f"{caller}: y_score has {n_classes} columns but y_true contains {classes.size} distinct "
                         f"labels; pass labels= (the class of each column, e.g. estimator.classes_).")
    return classes


def _block_problems(block, *, caller, response, multiclass, labels, pos_label):
    """The binary problems of one block (numpy), with the block's validated weights, and its distinct labels."""
    y = column_or_1d(np.asarray(block["y_true"]))
    score = np.asarray(block["y_score"])
    if y.shape[0] == 0:
        return [], y[:0]
    classes = None
    if labels is None:  # 1-D scores: the block's labels are checked here and (all of them) on the client
        classes = _distinct(y)
        _binary_labels(classes, None if pos_label is None else pos_label, caller)  # > 2 labels: refused here
        positive = 1 if pos_label is None else pos_label
        y, pos_label = (y == positive).astype(np.int64), 1
    _, problems = prepare_binary_problems(y, score, response=response, multiclass=multiclass, labels=labels,
                                          pos_label=pos_label, sample_weight=None, caller=caller)
    if block["sample_weight"] is not None:
        w = np.asarray(block["sample_weight"], dtype=np.float64).reshape(-1)
        if w.shape != y.shape:
            raise ValueError(f"{caller}: bad sample_weight: {w.shape[0]} weights for {y.shape[0]} samples.")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"{caller}: bad sample_weight: weights must be finite and non-negative.")
        for p in problems:
            p.w = w
    return problems, classes


def _ranges(p):
    """[min finite z, max finite z, W, finite W, w at +inf, wy at +inf, w at -inf, wy at -inf]."""
    finite = np.isfinite(p.z)
    zf = p.z[finite]
    pos, neg = p.z == np.inf, p.z == -np.inf
    wy = p.w * p.y
    return [zf.min() if zf.size else np.inf, zf.max() if zf.size else -np.inf, p.w.sum(), p.w[finite].sum(),
            p.w[pos].sum(), wy[pos].sum(), p.w[neg].sum(), wy[neg].sum()]


def _lattice_grid(p, sigma):
    """``(k0, A, B)``: the problem's finite scores binned onto the nodes ``k * h`` they reach, or None."""
    finite = np.isfinite(p.z)
    if finite.all():  # the usual case: no copies
        z, y, w = p.z, p.y, p.w
    elif not finite.any():
        return None
    else:
        z, y, w = p.z[finite], p.y[finite], p.w[finite]
    h, _, k0, n_grid = grid_layout(float(z.min()), float(z.max()), sigma)
    A, B = bin_onto_grid(_NUMPY, z, y, w, k0, h, n_grid)
    return k0, A, B


def _block_stats(block, *, grid, **kw):
    """One pass over one block: ``(distinct labels, ranges per problem, grid or bin totals per problem)``."""
    problems, classes = _block_problems(block, **kw)
    rows = np.asarray([_ranges(p) for p in problems], dtype=np.float64).reshape(-1, 8)
    kind, arg = grid
    if kind == "lattice":
        parts = [_lattice_grid(p, arg) for p in problems]
    else:
        parts = [bin_totals(p.prob, p.y, p.w, arg) for p in problems]
    return classes, rows, parts


def _add_lattice(grids):
    """Sum of ``(k0, A, B)`` grids on the common lattice (aligned on their first nodes)."""
    grids = [g for g in grids if g is not None]
    if not grids:
        return None
    k0 = min(g[0] for g in grids)
    n = max(g[0] + len(g[1]) for g in grids) - k0
    A, B = np.zeros(n), np.zeros(n)
    for start, a, b in grids:
        A[start - k0:start - k0 + len(a)] += a
        B[start - k0:start - k0 + len(b)] += b
    return k0, A, B


def _merge_stats(parts, *, kind):
    parts = [p for p in parts if len(p[1])]
    if not parts:
        return None, np.zeros((0, 8)), []
    classes = [p[0] for p in parts if p[0] is not None]
    classes = np.unique(np.concatenate(classes)) if classes else None
    stack = np.stack([p[1] for p in parts])
    rows = stack.sum(axis=0)
    rows[:, 0] = stack[:, :, 0].min(axis=0)
    rows[:, 1] = stack[:, :, 1].max(axis=0)
    n_problems = len(parts[0][2])
    if kind == "lattice":
        merged = [_add_lattice([p[2][i] for p in parts]) for i in range(n_problems)]
    else:
        merged = [tuple(sum(p[2][i][j] for p in parts) for j in range(3)) for i in range(n_problems)]
    return classes, rows, merged


def _one_pass(caller, y_true, y_score, sample_weight, *, grid, response, multiclass, labels, pos_label):
    """The labels (when needed), then one pass: ``(ranges per problem, grids or bin totals per problem)``."""
    blocks = _blocks(caller, y_true, y_score, sample_weight)
    two_d = y_score.ndim == 2 and y_score.shape[1] != 1
    if two_d:
        labels = _column_labels(caller, blocks, y_score, labels)
    else:
        labels = None
    kw = dict(caller=caller, response=response, multiclass=multiclass, labels=labels, pos_label=pos_label)
    classes, rows, parts = reduce_blocks(partial(_block_stats, grid=grid, **kw), blocks,
                                         combine=partial(_merge_stats, kind=grid[0]))
    if len(rows) == 0:
        raise ValueError(f"{caller}: found 0 samples; at least 1 is required.")
    if classes is not None:
        _binary_labels(classes, pos_label, caller)  # the in-memory checks, on all the distinct labels
    if not rows[0, 2] > 0:
        raise ValueError(f"{caller}: sample_weight sums to 0.")
    return rows, parts


def _smoothed_problems(caller, y_true, y_score, sample_weight, *, sigma, **kw):
    """Per problem: ``(ranges row, (t, A, B, h) or None)`` after one pass."""
    rows, grids = _one_pass(caller, y_true, y_score, sample_weight, grid=("lattice", sigma), **kw)
    out = []
    for row, grid in zip(rows, grids):
        smooth = None
        if grid is not None and row[3] > 0:
            k0, A, B = grid
            h, radius, k0_all, n_grid = grid_layout(float(row[0]), float(row[1]), sigma)  # the in-memory grid
            if (k0, len(A)) != (k0_all, n_grid) or n_grid > _MAX_GRID:  # pragma: no cover - lattice invariant
                raise RuntimeError(f"{caller}: the blocks' grids do not tile the grid of the whole data.")
            t, A, B = smooth_grid(_NUMPY, A, B, k0, h, radius, n_grid, sigma)
            smooth = (t, A, B, h)
        out.append((row, smooth))
    return out


def ls_ece_dask(y_true, y_score, *, sigma, noise, estimator, response, multiclass, labels, pos_label,
                sample_weight):
    """:func:`ls_ece` (Gaussian noise, grid estimator) on Dask collections."""
    caller = "ls_ece"
    if noise != "gaussian" or estimator != "grid":
        raise ValueError(f"{caller}: on Dask collections only noise='gaussian' with estimator='grid' is computed "
                         f"(the grid is additive over blocks); got noise={noise!r}, estimator={estimator!r}. "
                         "Compute the others on an in-memory sample.")
    values = []
    for row, smooth in _smoothed_problems(caller, y_true, y_score, sample_weight, sigma=sigma, response=response,
                                          multiclass=multiclass, labels=labels, pos_label=pos_label):
        W, w_pos, wy_pos, wy_neg = row[2], row[4], row[5], row[7]
        atoms = (w_pos - wy_pos) + wy_neg
        total = atoms
        if smooth is not None:
            t, A, B, h = smooth
            total = np.abs(A - _NUMPY.sigmoid(t) * B).sum() * h + atoms
        values.append(total / W)
    return float(sum(values) / len(values))


def ls_reliability_curve_dask(y_true, y_score, *, sigma, noise, response, labels, pos_label, sample_weight,
                              n_points):
    """:func:`ls_reliability_curve` (Gaussian noise) on Dask collections."""
    caller = "ls_reliability_curve"
    if noise != "gaussian":
        raise ValueError(f"{caller}: on Dask collections only noise='gaussian' is computed (its grid is additive "
                         f"over blocks); got noise={noise!r}.")
    ((row, smooth),) = _smoothed_problems(caller, y_true, y_score, sample_weight, sigma=sigma, response=response,
                                          multiclass="top_label", labels=labels, pos_label=pos_label)
    prob_true, prob_pred = [], []
    if smooth is not None:
        t, A, B, _ = smooth
        curve_true, curve_pred = curve_from_sums(t, A, B, n_points)
        prob_true.append(curve_true)
        prob_pred.append(curve_pred)
    for w_side, wy_side, value in ((row[6], row[7], 0.0), (row[4], row[5], 1.0)):
        if w_side > 0:
            prob_true.append([wy_side / w_side])
            prob_pred.append([value])
    return sort_curve(prob_true, prob_pred)


def binned_ece_dask(y_true, y_score, *, n_bins, strategy, response, multiclass, labels, pos_label, sample_weight):
    """:func:`binned_ece` (equal-width bins) on Dask collections."""
    caller = "binned_ece"
    if strategy != "uniform":
        raise ValueError(f"{caller}: on Dask collections only strategy='uniform' is computed (equal-mass bins need "
                         f"a global sort of the scores); got strategy={strategy!r}.")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    _, totals = _one_pass(caller, y_true, y_score, sample_weight, grid=("bins", edges), response=response,
                          multiclass=multiclass, labels=labels, pos_label=pos_label)
    return float(np.mean([ece_from_bins(*reliability_from_totals(*t)) for t in totals]))
