"""A tabular classification task with interactions, for the inspection family (attributions)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_attribution_task"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 3, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "return_relevance": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_attribution_task(n_samples=400, n_features=8, *, noise=0.5, return_relevance=False, random_state=None):
    """Binary classification whose label depends on three features, one pair interacting.

    ``X ~ N(0, I)`` (``n_features`` columns, of which only the first three
    matter) and ``y = 1[1.5 x0 - x1 + x0 x2 + noise * e > 0]`` with
    ``e ~ N(0, 1)``. Features 3 and beyond are irrelevant, so an attribution
    method should give them (almost) nothing; the interaction ``x0 x2`` makes
    gradient-based and ablation-based attributions disagree.

    Parameters
    ----------
    n_samples : int, default=400
        Number of rows.
    n_features : int, default=8
        Number of columns (at least 3).
    noise : float, default=0.5
        Standard deviation of the label noise in the score.
    return_relevance : bool, default=False
        Also return the boolean mask of the relevant features.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Labels in {0, 1}.
    relevance : ndarray of shape (n_features,)
        True for the three features the label depends on. Only when
        ``return_relevance`` is True.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_attribution_task
    >>> X, y = make_attribution_task(n_samples=5, random_state=0)
    >>> X.shape, y.shape
    ((5, 8), (5,))
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    score = 1.5 * X[:, 0] - X[:, 1] + X[:, 0] * X[:, 2] + noise * rng.standard_normal(n_samples)
    y = (score > 0).astype(np.int64)
    if return_relevance:
        relevance = np.zeros(n_features, dtype=bool)
        relevance[:3] = True
        return X, y, relevance
    return X, y
