"""Distances between samples by optimal transport (POT), shared by the collection's generators."""

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from .._sklearn_private import Interval, validate_params
from .._torch import as_numpy

__all__ = ["wasserstein1"]


@validate_params(
    {
        "X": ["array-like"],
        "Y": ["array-like"],
        "max_samples": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def wasserstein1(X, Y, *, max_samples=2000, random_state=None):
    """Exact Wasserstein-1 distance between two samples (uniform weights, Euclidean cost).

    Solved as an exact transport problem by POT's network simplex
    (``ot.emd2`` on ``ot.dist(X, Y, metric="euclidean")``). The cost is cubic
    in the sample size, so each sample is subsampled without replacement to
    ``max_samples`` rows first.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
        First sample.
    Y : array-like of shape (n_y, n_features)
        Second sample.
    max_samples : int or None, default=2000
        Rows kept from each sample (None keeps all).
    random_state : int, RandomState instance or None, default=None
        Seeds the subsampling.

    Returns
    -------
    float
        The distance, in the units of the features.

    See Also
    --------
    sklearn_icml.generative.PrivateEvolution : A generator it measures.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import wasserstein1
    >>> X = np.zeros((3, 2))
    >>> round(wasserstein1(X, X + [3.0, 4.0]), 6)
    5.0
    """
    import ot

    X = check_array(as_numpy(X), dtype=np.float64, input_name="X")
    Y = check_array(as_numpy(Y), dtype=np.float64, input_name="Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"wasserstein1: X has {X.shape[1]} features and Y has {Y.shape[1]}.")
    rng = check_random_state(random_state)
    if max_samples is not None:
        if len(X) > max_samples:
            X = X[rng.choice(len(X), max_samples, replace=False)]
        if len(Y) > max_samples:
            Y = Y[rng.choice(len(Y), max_samples, replace=False)]
    a = np.full(len(X), 1.0 / len(X))
    b = np.full(len(Y), 1.0 / len(Y))
    return float(ot.emd2(a, b, ot.dist(X, Y, metric="euclidean")))
