"""The smooth reliability curve behind LS-ECE."""

from numbers import Integral, Real

import numpy as np

from ..utils._dask import any_dask
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy
from ._calibration_input import SCORE_INPUT_CONSTRAINTS, prepare_binary_problems
from ._calibration_kernels import _gaussian_grid_sums, _split_infinite, curve_from_sums, sort_curve


def _uniform_sums(z, y, w, sigma, n_grid):
    """Exact kernel sums A, B (uniform noise) at ``n_grid`` points spanning the support."""
    half = sigma / 2
    t = np.linspace(z.min() - half, z.max() + half, n_grid)
    order = np.argsort(z, kind="stable")
    zs, cw, cwy = z[order], np.concatenate([[0], np.cumsum(w[order])]), np.concatenate([[0], np.cumsum((w * y)[order])])
    lo, hi = np.searchsorted(zs, t - half, side="left"), np.searchsorted(zs, t + half, side="right")
    return t, (cwy[hi] - cwy[lo]) / sigma, (cw[hi] - cw[lo]) / sigma


@validate_params(
    {
        **SCORE_INPUT_CONSTRAINTS,
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "noise": [StrOptions({"gaussian", "uniform"})],
        "n_points": [Interval(Integral, 2, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def ls_reliability_curve(y_true, y_score, *, sigma=0.1, noise="gaussian", response="proba", labels=None,
                         pos_label=None, sample_weight=None, n_points=100):
    """Smooth reliability curve of the logit-smoothed predictor.

    The regression ``E[Y | T = t]`` of the outcome on the noisy logit
    ``T = z + xi`` (the curve whose distance to the diagonal LS-ECE averages),
    evaluated at ``n_points`` quantiles of ``T``, so the points sit where the
    predictions are. Binary scores give the positive-class curve, 2-D scores
    the top-label (confidence) curve.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_score : array-like of shape (n_samples,) or (n_samples, n_classes)
        Probabilities or logits, read as in :func:`ls_ece`. Torch tensors are
        brought to numpy.
    sigma : float, default=0.1
        Noise scale in logit units.
    noise : {"gaussian", "uniform"}, default="gaussian"
        Noise distribution.
    response : {"proba", "logits"}, default="proba"
        Whether ``y_score`` holds probabilities or logits.
    labels : array-like of shape (n_classes,), default=None
        The class of each column of a 2-D ``y_score``.
    pos_label : int, float, bool or str, default=None
        For 1-D scores, the label whose probability ``y_score`` is.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    n_points : int, default=100
        Number of points on the curve.

    Returns
    -------
    prob_true : ndarray of shape (n_points,)
        Smoothed frequency of the outcome at each point, ``E[Y | T = t]``.
    prob_pred : ndarray of shape (n_points,)
        The smoothed predictor's probability at each point, ``sigmoid(t)``.

    See Also
    --------
    ls_ece : The scalar summary of this curve.
    LSReliabilityDisplay : Plot it beside the binned diagram.

    Notes
    -----
    Saturated scores (probability exactly 0 or 1) are point masses the noise
    does not move; when present they add one point at ``prob_pred`` 0 or 1
    with their observed frequency, so the curve then has ``n_points + 1`` or
    ``n_points + 2`` points.

    Dask collections are computed with ``noise="gaussian"``: the blocks' grids
    add up and the curve is read from the summed grid on the client. See
    :ref:`scaling_out`.

    References
    ----------
    .. [1] M. Chidambaram, H. Lee, C. McSwiggen, S. Rezchikov, "How Flawed Is
       ECE? An Analysis via Logit Smoothing", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import ls_reliability_curve
    >>> rng = np.random.RandomState(0)
    >>> p = rng.uniform(0.05, 0.95, 500)
    >>> y = rng.uniform(size=500) < p
    >>> prob_true, prob_pred = ls_reliability_curve(y, p, n_points=5)
    >>> np.round(prob_pred, 2)
    array([0.14, 0.31, 0.49, 0.67, 0.88])
    """
    if any_dask(y_true, y_score, sample_weight):
        from ._calibration_dask import ls_reliability_curve_dask

        return ls_reliability_curve_dask(y_true, y_score, sigma=sigma, noise=noise, response=response, labels=labels,
                                         pos_label=pos_label, sample_weight=sample_weight, n_points=n_points)
    ops, (problem,) = prepare_binary_problems(as_numpy(y_true), as_numpy(y_score), response=response,
                                              multiclass="top_label", labels=labels, pos_label=pos_label,
                                              sample_weight=sample_weight, caller="ls_reliability_curve")
    z, y, w, _ = _split_infinite(ops, problem)
    prob_true, prob_pred = [], []
    if z.size and w.sum() > 0:
        if noise == "gaussian":
            t, A, B, _ = _gaussian_grid_sums(ops, z, y, w, sigma)
        else:
            t, A, B = _uniform_sums(z, y, w, sigma, n_grid=max(4096, 16 * n_points))
        prob_true_s, prob_pred_s = curve_from_sums(t, A, B, n_points)
        prob_true.append(prob_true_s)
        prob_pred.append(prob_pred_s)
    for side, value in ((-np.inf, 0.0), (np.inf, 1.0)):
        mask = problem.z == side
        if mask.any() and problem.w[mask].sum() > 0:
            prob_true.append([np.average(problem.y[mask], weights=problem.w[mask])])
            prob_pred.append([value])
    return sort_curve(prob_true, prob_pred)

