"""Binned expected calibration error: the metric LS-ECE is compared with."""

from numbers import Integral

import numpy as np

from ..utils._dask import any_dask
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy
from ._calibration_input import MULTICLASS_CONSTRAINT, SCORE_INPUT_CONSTRAINTS, prepare_binary_problems
from ._calibration_kernels import bin_edges, bin_totals, ece_from_bins, reliability_from_totals


def binned_reliability(prob, y, w, n_bins, strategy):
    """Per-bin weighted mean confidence, mean outcome and weight (empty bins dropped).

    Bins are half-open ``[a, b)``, the last one closed, as in
    :func:`numpy.histogram` (and netcal).
    """
    edges = bin_edges(prob, w, n_bins, strategy)
    return reliability_from_totals(*bin_totals(prob, y, w, edges))


@validate_params(
    {
        **SCORE_INPUT_CONSTRAINTS,
        **MULTICLASS_CONSTRAINT,
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "strategy": [StrOptions({"uniform", "quantile"})],
    },
    prefer_skip_nested_validation=True,
)
def binned_ece(y_true, y_score, *, n_bins=15, strategy="uniform", response="proba", multiclass="top_label",
               labels=None, pos_label=None, sample_weight=None):
    """Binned expected calibration error.

    The weighted mean over bins of ``|mean outcome - mean confidence|``,
    weighted by the bins' mass. Bins cover the confidence in [0, 1]: equal
    width (``strategy="uniform"``, the usual ECE; the same bins as netcal's
    ``ECE(n_bins)``) or equal mass (``"quantile"``).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_score : array-like of shape (n_samples,) or (n_samples, n_classes)
        Probabilities or logits, read as in :func:`ls_ece`. Torch tensors are
        brought to numpy.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-mass bins.
    response : {"proba", "logits"}, default="proba"
        Whether ``y_score`` holds probabilities or logits.
    multiclass : {"top_label", "classwise"}, default="top_label"
        For 2-D scores: confidence of the predicted class, or the mean of the
        one-vs-rest errors.
    labels : array-like of shape (n_classes,), default=None
        The class of each column of a 2-D ``y_score``.
    pos_label : int, float, bool or str, default=None
        For 1-D scores, the label whose probability ``y_score`` is.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    float
        The binned ECE, in [0, 1].

    See Also
    --------
    ls_ece : The logit-smoothed ECE, continuous in the predictor.

    Notes
    -----
    Bins are half-open ``[a, b)`` with the last closed, as
    :func:`numpy.histogram`; a confidence of exactly 1 falls in the last bin
    (not in an extra one). Binned ECE jumps when scores cross bin edges; see
    the gallery example on the paper's synthetic predictor.

    Dask collections are computed with ``strategy="uniform"`` (per-bin totals
    add up over blocks; equal-mass edges would need a global sort). See
    :ref:`scaling_out`.

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper, M. Hauskrecht, "Obtaining Well Calibrated
       Probabilities Using Bayesian Binning", AAAI 2015.
    .. [2] M. Chidambaram, H. Lee, C. McSwiggen, S. Rezchikov, "How Flawed Is
       ECE? An Analysis via Logit Smoothing", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import binned_ece
    >>> y_true = np.array([0, 1, 1, 0, 1, 1])
    >>> y_prob = np.array([0.1, 0.8, 0.7, 0.3, 0.9, 0.6])
    >>> round(binned_ece(y_true, y_prob, n_bins=5), 4)
    0.2333
    """
    if any_dask(y_true, y_score, sample_weight):
        from ._calibration_dask import binned_ece_dask

        return binned_ece_dask(y_true, y_score, n_bins=n_bins, strategy=strategy, response=response,
                               multiclass=multiclass, labels=labels, pos_label=pos_label, sample_weight=sample_weight)
    ops, problems = prepare_binary_problems(as_numpy(y_true), as_numpy(y_score), response=response,
                                            multiclass=multiclass, labels=labels, pos_label=pos_label,
                                            sample_weight=sample_weight, caller="binned_ece")
    values = []
    for p in problems:
        values.append(ece_from_bins(*binned_reliability(p.prob, p.y, p.w, n_bins, strategy)))
    return float(np.mean(values))
