"""Input checks shared by the estimators beyond scikit-learn's ``validate_data``."""

import numpy as np

__all__ = ["FLOAT32_SAFE_MAX", "check_float32_range", "standardization"]

#: Largest magnitude accepted by estimators that compute in float32: float32's maximum with three orders of
#: magnitude to spare for the sums, squares and products a network or a norm forms on the way.
FLOAT32_SAFE_MAX = float(np.finfo(np.float32).max) / 1e3


def check_float32_range(*arrays, name, labels=("X",), reason="it computes in float32"):
    """Raise a ValueError naming the estimator when an array holds a value beyond :data:`FLOAT32_SAFE_MAX`.

    NaN entries are ignored (estimators that allow NaN check them themselves).

    Parameters
    ----------
    *arrays : ndarray
        The arrays to check (numeric).
    name : str
        The estimator's name, for the message.
    labels : sequence of str, default=("X",)
        One label per array, for the message.
    reason : str, default="it computes in float32"
        Why the limit applies.
    """
    for label, a in zip(labels, arrays, strict=True):
        a = np.asarray(a)
        if a.size and np.nanmax(np.abs(a), initial=0.0) > FLOAT32_SAFE_MAX:
            raise ValueError(f"{name}: {label} holds values up to {np.nanmax(np.abs(a)):.3g}, beyond "
                             f"{FLOAT32_SAFE_MAX:.3g} in magnitude ({reason}); rescale it.")


def standardization(X):
    """Column means and scales of ``X`` for z-scores; a constant column gets scale 1.

    Values near the float64 limit do not overflow: when the plain moments are
    not finite they are computed on ``X`` divided by its column peaks. A column
    counts as constant when its standard deviation is 0 or rounding noise
    (at most 1e-12 times its mean's magnitude).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite float data.

    Returns
    -------
    mean, scale : ndarray of shape (n_features,)
        ``(X - mean) / scale`` has unit variance in every non-constant column.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = X.mean(axis=0), X.std(axis=0)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std))):
        peak = np.abs(X).max(axis=0)
        peak = np.where(peak > 0, peak, 1.0)
        unit = X / peak
        mean, std = peak * unit.mean(axis=0), peak * unit.std(axis=0)
    scale = np.where(std > 1e-12 * np.abs(mean), std, 1.0)
    return mean, scale
