"""The likelihood-free training set of LFBO/MALIBO: labels at the gamma-quantile and EI-type weights."""

from numbers import Real

import numpy as np
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy

__all__ = ["likelihood_free_training_set"]


def _lfbo_rows(y, gamma, weight_type):
    """Source rows, labels, weights and threshold of the LFBO training set of objective values ``y``.

    Row ``i`` of the training set is observation ``index[i]``: every
    observation once with label 0, then the observations below the threshold
    once more with label 1.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    tau = float(np.quantile(np.unique(y), gamma))
    positive = np.flatnonzero(y < tau)
    index = np.concatenate([np.arange(n), positive])
    labels = np.concatenate([np.zeros(n, dtype=np.int64), np.ones(positive.size, dtype=np.int64)])
    if weight_type == "pi" or positive.size == 0:
        return index, labels, np.ones(index.size), tau
    utility = tau - y[positive]
    weights = np.concatenate([np.ones(n), utility / utility.mean()])
    # balance the two classes (each totals n + n_pos), then mean 1
    counts = np.array([n, positive.size], dtype=np.float64)
    weights = weights * (counts.sum() / counts)[labels]
    return index, labels, weights / weights.mean(), tau


@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like"],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        "weight_type": [StrOptions({"ei", "pi"})],
        "return_threshold": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def likelihood_free_training_set(X, y, *, gamma=1 / 3, weight_type="ei", return_threshold=False):
    """Turn observations of an objective into the weighted classification set of likelihood-free BO.

    Likelihood-free Bayesian optimisation (LFBO) replaces the surrogate model
    by a classifier whose predicted probability is the acquisition function.
    For observations ``(x_n, y_n)`` of an objective to be **minimised**, the
    threshold ``tau`` is the ``gamma``-quantile of the distinct observed
    values. The training set holds every observation with label 0 and weight
    1, and a second copy of every observation with ``y_n < tau`` with label 1
    and the EI-type weight ``(tau - y_n) / mean(tau - y)``. Each class is then
    rescaled so that both have the same total weight, and all weights are
    normalised to mean 1. A classifier trained on this set has odds
    proportional to the expected improvement ``E[max(tau - y, 0) | x]``, so
    its argmax is the argmax of EI.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Evaluated points.
    y : array-like of shape (n_samples,)
        Their objective values (lower is better).
    gamma : float, default=1/3
        Quantile of the distinct observed values used as threshold.
    weight_type : {"ei", "pi"}, default="ei"
        ``"ei"``: the EI-type weights above. ``"pi"``: plain labels with unit
        weights (the classifier then estimates the probability of
        improvement).
    return_threshold : bool, default=False
        Also return ``tau``.

    Returns
    -------
    X_train : ndarray of shape (n_samples + n_positive, n_features)
        The rows of ``X``, then the rows below the threshold again.
    labels : ndarray of shape (n_samples + n_positive,)
        0 for the first block, 1 for the copies below the threshold.
    sample_weight : ndarray of shape (n_samples + n_positive,)
        Weights with mean 1.
    threshold : float
        ``tau``; only when ``return_threshold`` is True.

    See Also
    --------
    MetaLFBOClassifier : The meta-learned classifier trained on such sets.
    LikelihoodFreeOptimizer : LFBO with a gradient-boosting classifier.

    Notes
    -----
    Observations are never deduplicated: repeated evaluations of one point
    count as separate observations; only the quantile is taken over the
    distinct values, as in the MALIBO code. When no value lies below the
    threshold (all values equal, or a single observation) the set has only
    label 0.

    References
    ----------
    .. [1] J. Song, L. Yu, W. Neiswanger and S. Ermon, "A General Recipe for
       Likelihood-free Bayesian Optimization", ICML 2022.
    .. [2] J. Pan, S. Falkner, F. Berkenkamp and J. Vanschoren, "MALIBO:
       Meta-learning for Likelihood-free Bayesian Optimization", Proceedings of
       the 41st International Conference on Machine Learning (ICML), PMLR 235,
       2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.optimize import likelihood_free_training_set
    >>> X = np.array([[0.0], [0.25], [0.5], [0.75], [1.0]])
    >>> y = np.array([4.0, 1.0, 0.0, 1.5, 3.0])
    >>> X_train, labels, weights, tau = likelihood_free_training_set(X, y, return_threshold=True)
    >>> float(tau), labels.tolist()
    (1.1666666666666665, [0, 0, 0, 0, 0, 1, 1])
    >>> weights.round(2).tolist()
    [0.7, 0.7, 0.7, 0.7, 0.7, 0.44, 3.06]
    """
    X = check_array(as_numpy(X), dtype=np.float64)
    y = column_or_1d(np.asarray(as_numpy(y)), warn=True).astype(np.float64)
    check_consistent_length(X, y)
    if not np.all(np.isfinite(y)):
        raise ValueError("likelihood_free_training_set: y holds NaN or infinite objective values.")
    index, labels, weights, tau = _lfbo_rows(y, gamma, weight_type)
    out = (X[index], labels, weights)
    return (*out, tau) if return_threshold else out
