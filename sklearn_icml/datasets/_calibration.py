"""Demo data for the calibration metrics (S16)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, validate_params


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "scale": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_ece_pathology(n_samples=1000, *, scale=1e-3, random_state=None):
    """The synthetic predictor on which binned ECE jumps (Chidambaram et al., 2024).

    Labels are fair coin flips and the predictor's logit is
    ``scale * (y - 1/2)``: a perfectly accurate predictor whose probabilities
    all sit within ``scale / 4`` of 0.5. Binned ECE is close to 50% when 0.5 is
    a bin edge (an even number of equal-width bins) and small otherwise;
    LS-ECE changes smoothly with its bandwidth.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of predictions.
    scale : float, default=1e-3
        Logit separation between the two classes.
    random_state : int, RandomState instance or None, default=None
        Seeds the labels.

    Returns
    -------
    y_true : ndarray of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : ndarray of shape (n_samples,)
        Predicted probability of class 1.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_ece_pathology
    >>> y_true, y_prob = make_ece_pathology(4, random_state=0)
    >>> y_true
    array([1, 1, 1, 1])
    >>> bool(abs(y_prob - 0.5).max() < 1e-3)
    True
    """
    rng = check_random_state(random_state)
    y = rng.binomial(1, 0.5, n_samples)
    return y, 1.0 / (1.0 + np.exp(-scale * (y - 0.5)))
