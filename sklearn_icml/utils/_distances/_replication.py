"""Does a generator copy its training data? Distance-to-closest-record ratio and the share of near copies.

Both compare synthetic points with the training points by exact Euclidean
nearest neighbours (:class:`sklearn.neighbors.NearestNeighbors`); the
vocabulary is that of synthetic-data audits (SDMetrics' DCR, mostly.ai's
novelty report).
"""

from numbers import Real

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_array

from .._sklearn_private import Interval, validate_params
from .._torch import as_numpy

__all__ = ["dcr_ratio", "replication_score"]


def _check(X, name, n_features=None, min_samples=1):
    X = check_array(as_numpy(X), dtype=np.float64, input_name=name, ensure_min_samples=min_samples)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features but X_train has {n_features}.")
    return X


@validate_params(
    {"X_synthetic": ["array-like"], "X_train": ["array-like"], "X_holdout": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def dcr_ratio(X_synthetic, X_train, X_holdout):
    """Median distance to the closest training record of synthetic points over that of held-out points.

    A fresh sample of the training distribution (the held-out points
    themselves) sits as far from the training points as the held-out data:
    a ratio near 1. A generator that copies training points, even with
    small jitter, gets a ratio near 0. Above 1, the synthetic points keep
    more distance than real data would.

    Parameters
    ----------
    X_synthetic : array-like of shape (n_synthetic, n_features)
        Generated points.
    X_train : array-like of shape (n_train, n_features)
        The generator's training points.
    X_holdout : array-like of shape (n_holdout, n_features)
        Points of the same distribution the generator never saw.

    Returns
    -------
    float
        ``median_i d(X_synthetic[i], X_train) / median_j d(X_holdout[j], X_train)``;
        ``inf`` when the held-out median is 0 and the synthetic one is not,
        ``nan`` when both are 0.

    See Also
    --------
    replication_score : Share of synthetic points that are near copies.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import dcr_ratio
    >>> rng = np.random.RandomState(0)
    >>> train, holdout = rng.normal(size=(500, 2)), rng.normal(size=(500, 2))
    >>> bool(dcr_ratio(train + 1e-3, train, holdout) < 0.1)
    True
    """
    X_train = _check(X_train, "X_train")
    X_synthetic = _check(X_synthetic, "X_synthetic", X_train.shape[1])
    X_holdout = _check(X_holdout, "X_holdout", X_train.shape[1])
    nn = NearestNeighbors(n_neighbors=1).fit(X_train)
    synthetic = float(np.median(nn.kneighbors(X_synthetic)[0][:, 0]))
    holdout = float(np.median(nn.kneighbors(X_holdout)[0][:, 0]))
    if holdout == 0.0:
        return np.nan if synthetic == 0.0 else np.inf
    return synthetic / holdout


@validate_params(
    {"X_synthetic": ["array-like"], "X_train": ["array-like"],
     "ratio": [Interval(Real, 0, 1, closed="neither")]},
    prefer_skip_nested_validation=True,
)
def replication_score(X_synthetic, X_train, *, ratio=1 / 3):
    """Share of synthetic points that are near copies of a training point.

    A synthetic point is a near copy when its nearest training point is
    ``ratio`` times closer than the second nearest, ``d_1 < ratio * d_2``:
    it sits in the immediate neighbourhood of one training point rather than
    between several (a criterion, with ratio 1/3, of memorisation studies of
    generative models).

    Parameters
    ----------
    X_synthetic : array-like of shape (n_synthetic, n_features)
        Generated points.
    X_train : array-like of shape (n_train, n_features)
        The generator's training points (at least 2).
    ratio : float in (0, 1), default=1/3
        How much closer the nearest training point must be than the second.

    Returns
    -------
    float
        The share of near copies, in [0, 1].

    See Also
    --------
    dcr_ratio : Distance to the closest record against a holdout.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import replication_score
    >>> train = np.random.RandomState(0).normal(size=(200, 2))
    >>> replication_score(train[:50] + 1e-4, train)
    1.0
    """
    X_train = _check(X_train, "X_train", min_samples=2)
    X_synthetic = _check(X_synthetic, "X_synthetic", X_train.shape[1])
    dist = NearestNeighbors(n_neighbors=2).fit(X_train).kneighbors(X_synthetic)[0]
    return float(np.mean(dist[:, 0] < ratio * dist[:, 1]))
