"""Calibration metrics on Dask collections: additive binning per block, the in-memory finish on the client.

Three passes over the blocks, each returning statistics whose size does not
grow with the number of samples: the distinct labels of ``y_true``; per binary
problem the range of the finite scores and the weights of the point masses at
``+-inf``; then the linear binning of ``w`` and ``w * y`` onto the Gaussian
grid (LS-ECE, the reliability curve) or the per-bin totals (binned ECE). The
grid, the FFT convolution and the integral are the in-memory code, run on the
summed grids.
"""

from functools import partial

import numpy as np
from sklearn.utils import column_or_1d

from ..utils._dask import aligned_blocks, reduce_blocks
from ._backend import get_ops
from ._binned_ece import bin_totals, ece_from_bins, reliability_from_totals
from ._calibration_input import _binary_labels, prepare_binary_problems
from ._ls_ece import bin_onto_grid, grid_layout, smooth_grid
from ._reliability import curve_from_sums, sort_curve

_NUMPY = get_ops(np.zeros(1))


def _blocks(caller, y_true, y_score, sample_weight):
    inputs = {"y_score": y_score, "y_true": y_true, "sample_weight": sample_weight}
    from ..utils._dask import is_dask_collection

    main = next(name for name, obj in inputs.items() if is_dask_collection(obj))
    others = {name: obj for name, obj in inputs.items() if name != main}
    return aligned_blocks(caller, main, inputs[main], others)


def _block_labels(block):
    y = column_or_1d(np.asarray(block["y_true"]))
    return np.unique(y)


def _merge_labels(parts):
    return np.unique(np.concatenate(parts))


def _resolve_labels(caller, blocks, y_score, labels, pos_label):
    """Global label handling, on the distinct labels: ``(labels, pos_label)`` to pass to every block."""
    classes = reduce_blocks(_block_labels, blocks, combine=_merge_labels)
    two_d = y_score.ndim == 2 and y_score.shape[1] != 1
    if not two_d:
        _binary_labels(classes, pos_label, caller)  # the in-memory checks, on the distinct labels
        return None, 1 if pos_label is None else pos_label
    if labels is None:
        n_classes = y_score.shape[1]
        if classes.size != n_classes:
            raise ValueError(f"{caller}: y_score has {n_classes} columns but y_true contains {classes.size} distinct "
                             f"labels; pass labels= (the class of each column, e.g. estimator.classes_).")
        labels = classes
    return labels, pos_label


def _block_problems(block, *, caller, response, multiclass, labels, pos_label):
    """The binary problems of one block (numpy), with the block's validated weights."""
    y = column_or_1d(np.asarray(block["y_true"]))
    score = np.asarray(block["y_score"])
    if y.shape[0] == 0:
        return []
    if labels is None:  # 1-D scores: the labels were checked on the client; 0/1 outcomes take the fast path
        y, pos_label = (y == pos_label).astype(np.int64), 1
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
    return problems


def _block_ranges(block, **kw):
    """Per problem: [min finite z, max finite z, W, finite W, w at +inf, wy at +inf, w at -inf, wy at -inf]."""
    rows = []
    for p in _block_problems(block, **kw):
        finite = np.isfinite(p.z)
        zf = p.z[finite]
        pos, neg = p.z == np.inf, p.z == -np.inf
        wy = p.w * p.y
        rows.append([zf.min() if zf.size else np.inf, zf.max() if zf.size else -np.inf, p.w.sum(),
                     p.w[finite].sum(), p.w[pos].sum(), wy[pos].sum(), p.w[neg].sum(), wy[neg].sum()])
    return np.asarray(rows, dtype=np.float64).reshape(-1, 8)


def _merge_ranges(parts):
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros((0, 8))
    stack = np.stack(parts)
    out = stack.sum(axis=0)
    out[:, 0] = stack[:, :, 0].min(axis=0)
    out[:, 1] = stack[:, :, 1].max(axis=0)
    return out


def _block_grids(block, *, layouts, **kw):
    """Per problem: the linearly binned ``(A, B)`` on its grid (finite scores only)."""
    out = []
    for p, layout in zip(_block_problems(block, **kw), layouts):
        if layout is None:
            out.append(None)
            continue
        z_min, h, radius, n_grid = layout
        finite = np.isfinite(p.z)
        out.append(bin_onto_grid(_NUMPY, p.z[finite], p.y[finite], p.w[finite], z_min, h, radius, n_grid))
    return out


def _merge_grids(parts):
    parts = [p for p in parts if p]
    if not parts:
        return []
    merged = []
    for i in range(len(parts[0])):
        pieces = [p[i] for p in parts if p[i] is not None]
        merged.append(None if not pieces else (sum(a for a, _ in pieces), sum(b for _, b in pieces)))
    return merged


def _smoothed_problems(caller, y_true, y_score, sample_weight, *, sigma, response, multiclass, labels, pos_label):
    """Per problem: ``(W, atoms sums, (t, A, B) or None)`` after the three passes."""
    blocks = _blocks(caller, y_true, y_score, sample_weight)
    labels, pos_label = _resolve_labels(caller, blocks, y_score, labels, pos_label)
    kw = dict(caller=caller, response=response, multiclass=multiclass, labels=labels, pos_label=pos_label)
    ranges = reduce_blocks(partial(_block_ranges, **kw), blocks, combine=_merge_ranges)
    if len(ranges) == 0:
        raise ValueError(f"{caller}: found 0 samples; at least 1 is required.")
    if not ranges[0, 2] > 0:
        raise ValueError(f"{caller}: sample_weight sums to 0.")
    layouts = []
    for z_min, z_max, _, w_finite, *_ in ranges:
        if not (np.isfinite(z_min) and w_finite > 0):
            layouts.append(None)
            continue
        h, radius, n_grid = grid_layout(float(z_min), float(z_max), sigma)
        layouts.append((float(z_min), h, radius, n_grid))
    grids = reduce_blocks(partial(_block_grids, layouts=layouts, **kw), blocks, combine=_merge_grids)
    out = []
    for row, layout, grid in zip(ranges, layouts, grids if grids else [None] * len(layouts)):
        smooth = None
        if layout is not None:
            z_min, h, radius, n_grid = layout
            t, A, B = smooth_grid(_NUMPY, grid[0], grid[1], z_min, h, radius, n_grid, sigma)
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


def _block_bins(block, *, edges, **kw):
    return tuple(bin_totals(p.prob, p.y, p.w, edges) for p in _block_problems(block, **kw))


def _merge_bins(parts):
    parts = [p for p in parts if p]
    if not parts:
        return ()
    return tuple(tuple(sum(p[i][j] for p in parts) for j in range(3)) for i in range(len(parts[0])))


def binned_ece_dask(y_true, y_score, *, n_bins, strategy, response, multiclass, labels, pos_label, sample_weight):
    """:func:`binned_ece` (equal-width bins) on Dask collections."""
    caller = "binned_ece"
    if strategy != "uniform":
        raise ValueError(f"{caller}: on Dask collections only strategy='uniform' is computed (equal-mass bins need "
                         f"a global sort of the scores); got strategy={strategy!r}.")
    blocks = _blocks(caller, y_true, y_score, sample_weight)
    labels, pos_label = _resolve_labels(caller, blocks, y_score, labels, pos_label)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    totals = reduce_blocks(partial(_block_bins, edges=edges, caller=caller, response=response,
                                   multiclass=multiclass, labels=labels, pos_label=pos_label),
                           blocks, combine=_merge_bins)
    if not totals:
        raise ValueError(f"{caller}: found 0 samples; at least 1 is required.")
    if not totals[0][0].sum() > 0:
        raise ValueError(f"{caller}: sample_weight sums to 0.")
    return float(np.mean([ece_from_bins(*reliability_from_totals(*t)) for t in totals]))
