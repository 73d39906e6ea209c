"""The kernels of the calibration metrics: what the in-memory and the Dask paths share.

Binning onto the fixed lattice of the LS-ECE grid and its Gaussian smoothing,
the per-bin totals of the binned ECE, and the LS reliability curve from the
smoothed sums. Every kernel is additive over the samples (or works on such
sums), so the totals of blocks add up to those of the whole data. The public
functions (:func:`~sklearn_icml.metrics.ls_ece`,
:func:`~sklearn_icml.metrics.binned_ece`,
:func:`~sklearn_icml.metrics.ls_reliability_curve`) sit above this module and
the Dask paths (``_calibration_dask.py``), and dispatch to one or the other.
"""

import math

import numpy as np
from scipy.special import expit

# grid step of the deterministic estimator, in units of sigma, and the Gaussian
# kernel's truncation (mass beyond 8 sigma: 1e-15)
_STEPS_PER_SIGMA = 64
_GAUSS_RADIUS = 8.0
_MAX_GRID = 1 << 25


def _split_infinite(ops, problem):
    """Finite part and the exact contribution of the point masses at +-inf."""
    z, y, w = problem.z, problem.y, problem.w
    finite = ops.isfinite(z)
    if bool(finite.all()):
        return z, y, w, 0.0
    pos_inf, neg_inf = z == math.inf, z == -math.inf
    atoms = (w * (1 - y) * pos_inf).sum() + (w * y * neg_inf).sum()
    return z[finite], y[finite], w[finite], atoms


def grid_layout(z_min, z_max, sigma):
    """Step ``h``, kernel radius (in steps), first node ``k0`` and size of the grid covering ``[z_min, z_max]``.

    The nodes are the multiples ``k * h`` of the step (node ``i`` sits at
    ``(k0 + i) * h``), a lattice fixed by ``sigma`` alone: a score is binned
    onto the same two nodes with the same fractions whatever the other
    scores, so grids binned separately (per block of a Dask collection) add up
    to the grid of the whole data.
    """
    h = sigma / _STEPS_PER_SIGMA
    radius = int(math.ceil(_GAUSS_RADIUS * _STEPS_PER_SIGMA))
    inv_h = 1.0 / h
    k0 = int(math.floor(z_min * inv_h)) - radius
    n_grid = int(math.floor(z_max * inv_h)) - k0 + radius + 2
    if n_grid > _MAX_GRID:
        raise ValueError(f"ls_ece: the scores span {z_max - z_min:.4g} logit units, which at sigma={sigma:g} needs a "
                         f"grid of {n_grid} points (at most {_MAX_GRID}); use a larger sigma or estimator='mc'.")
    return h, radius, k0, n_grid


def bin_onto_grid(ops, z, y, w, k0, h, n_grid):
    """Linear binning of the weights ``w`` (``B``) and ``w * y`` (``A``): additive over the samples."""
    u = z * (1.0 / h) - k0
    lower = ops.floor_int(u)
    frac = u - lower
    wy = w * y
    b_hi, a_hi = w * frac, wy * frac
    B = ops.scatter_add(n_grid, lower, w - b_hi) + ops.shift_right(ops.scatter_add(n_grid, lower, b_hi))
    A = ops.scatter_add(n_grid, lower, wy - a_hi) + ops.shift_right(ops.scatter_add(n_grid, lower, a_hi))
    return A, B


def smooth_grid(ops, A, B, k0, h, radius, n_grid, sigma):
    """FFT convolution of the binned sums with the sampled Gaussian density; returns ``(t, A, B)``."""
    offsets = (ops.arange(2 * radius + 1) - radius) * h
    kernel = ops.exp(-0.5 * (offsets / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    A = ops.fft_convolve(A, kernel)[radius:radius + n_grid]
    B = ops.fft_convolve(B, kernel)[radius:radius + n_grid]
    t = (ops.arange(n_grid) + k0) * h
    return t, A, B


def _gaussian_grid_sums(ops, z, y, w, sigma):
    """Kernel sums A(t) = sum w y p(t - z), B(t) = sum w p(t - z) on a regular grid.

    Linear binning of the scores onto a grid of step sigma/64
    (``_STEPS_PER_SIGMA``), then an FFT convolution with the sampled Gaussian
    density. Returns ``(t, A, B, h)``.
    """
    z_min, z_max = ops.item(z.min()), ops.item(z.max())
    h, radius, k0, n_grid = grid_layout(z_min, z_max, sigma)
    A, B = bin_onto_grid(ops, z, y, w, k0, h, n_grid)
    t, A, B = smooth_grid(ops, A, B, k0, h, radius, n_grid, sigma)
    return t, A, B, h


def bin_edges(prob, w, n_bins, strategy):
    """Bin edges on [0, 1]: equal width, or equal (weighted) mass for ``strategy="quantile"``."""
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    order = np.argsort(prob, kind="stable")
    cdf = np.cumsum(w[order])
    cdf /= cdf[-1]
    inner = np.interp(np.arange(1, n_bins) / n_bins, cdf, prob[order])
    return np.concatenate([[0.0], inner, [1.0]])


def bin_totals(prob, y, w, edges):
    """Per-bin weight, weighted confidence and weighted outcome: additive over the samples."""
    n_bins = len(edges) - 1
    ids = np.clip(np.searchsorted(edges, prob, side="right") - 1, 0, n_bins - 1)
    weight = np.bincount(ids, weights=w, minlength=n_bins)
    conf = np.bincount(ids, weights=w * prob, minlength=n_bins)
    hits = np.bincount(ids, weights=w * y, minlength=n_bins)
    return weight, conf, hits


def reliability_from_totals(weight, conf, hits):
    """Mean confidence, mean outcome and weight of the non-empty bins."""
    keep = weight > 0
    return conf[keep] / weight[keep], hits[keep] / weight[keep], weight[keep]


def ece_from_bins(conf, acc, weight):
    """The binned ECE of one problem from its bins."""
    return float(np.sum(weight * np.abs(acc - conf)) / np.sum(weight))


def curve_from_sums(t, A, B, n_points):
    """The curve at ``n_points`` quantiles of the smoothed density ``B`` on the grid ``t``."""
    cdf = np.cumsum(np.maximum(B, 0))
    cdf /= cdf[-1]
    levels = (np.arange(n_points) + 0.5) / n_points
    tq = np.interp(levels, cdf, t)
    Aq, Bq = np.interp(tq, t, A), np.interp(tq, t, B)
    return np.clip(Aq / np.maximum(Bq, 1e-300), 0, 1), expit(tq)


def sort_curve(prob_true, prob_pred):
    """Concatenate the pieces of the curve and sort them by predicted probability."""
    prob_true, prob_pred = np.concatenate(prob_true), np.concatenate(prob_pred)
    order = np.argsort(prob_pred, kind="stable")
    return prob_true[order], prob_pred[order]
