"""Input checks shared by the estimators beyond scikit-learn's ``validate_data``."""

from numbers import Real

import numpy as np

from ._sklearn_private import Interval

__all__ = ["ESTIMATOR_EPSILON", "FLOAT32_SAFE_MAX", "MAX_ABS_BOUND", "RealNotBool", "check_box", "check_float32_range",
           "check_test_data", "check_value_range", "square_safe_max",
           "standardization"]

#: Largest magnitude accepted by estimators that compute in float32: float32's maximum with three orders of
#: magnitude to spare for the sums, squares and products a network or a norm forms on the way.
FLOAT32_SAFE_MAX = float(np.finfo(np.float32).max) / 1e3


class RealNotBool(Interval):
    """An :class:`Interval` of reals that refuses booleans (``True`` is not an epsilon of 1)."""

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


#: epsilon of a private estimator's fit, one policy for every private estimator: in [1e-3, 1e6], never a
#: boolean (below 1e-3 every release is noise and the accountants lose their resolution; above 1e6 nothing is
#: private)
ESTIMATOR_EPSILON = [RealNotBool(Real, 1e-3, 1e6, closed="both")]


#: largest absolute box coordinate: squared distances and noise scales stay finite in float64
MAX_ABS_BOUND = 1e150


def check_box(bounds, n_dims, *, caller, name="bounds"):
    """``(lower, upper)`` arrays of shape ``(n_dims,)``: finite, within +-1e150, ``lower < upper``."""
    try:
        if len(bounds) != 2:
            raise ValueError
        lower, upper = (np.broadcast_to(np.asarray(b, dtype=np.float64), (n_dims,)).copy() for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"{caller}: {name} must be (lower, upper) with scalars or arrays of shape ({n_dims},); got {bounds!r}."
        ) from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"{caller}: {name} must be finite; got {bounds!r}.")
    if np.any(np.abs(lower) > MAX_ABS_BOUND) or np.any(np.abs(upper) > MAX_ABS_BOUND):
        raise ValueError(
            f"{caller}: {name} must lie within +-{MAX_ABS_BOUND:g} (squared distances and noise scales must stay "
            f"finite); got {bounds!r}."
        )
    if np.any(upper <= lower):
        raise ValueError(f"{caller}: {name} must satisfy lower < upper in every dimension; got {bounds!r}.")
    return lower, upper


def check_test_data(estimator, X):
    """Check that ``estimator`` is fitted and return ``X`` validated against its fit.

    The test-time counterpart of the ``validate_data(..., reset=True)`` call of
    ``fit``: ``X`` (a torch tensor is accepted) must have the fitted number of
    features (and their names, when the fit saw names); it is returned as a
    float64 or float32 numpy array.

    Parameters
    ----------
    estimator : fitted estimator
        The estimator whose ``predict``, ``transform`` or ``score_samples``
        receives ``X``.
    X : array-like of shape (n_samples, n_features)
        The test data.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The validated data, float64 or float32.
    """
    from sklearn.utils.validation import check_is_fitted, validate_data

    from ._torch import as_numpy

    check_is_fitted(estimator)
    return validate_data(estimator, as_numpy(X), reset=False, dtype=[np.float64, np.float32])


def square_safe_max(dtype=np.float64):
    """Largest magnitude whose squares stay finite in ``dtype``, with six orders of magnitude to spare.

    ``sqrt(finfo(dtype).max) / 1e3``: about 1.3e151 for float64 and 1.8e16 for
    float32. Squares of such values, and sums of a hundred thousand of them
    (second moments, squared distances), are still finite.

    Parameters
    ----------
    dtype : dtype, default=np.float64
        The floating dtype of the computation.

    Returns
    -------
    float
    """
    return float(np.sqrt(np.finfo(dtype).max)) / 1e3


def check_value_range(*arrays, name, limit, labels=("X",), reason):
    """Raise a ValueError naming the estimator when an array holds a value beyond ``limit`` in magnitude.

    NaN entries are ignored (estimators that allow NaN check them themselves).

    Parameters
    ----------
    *arrays : ndarray
        The arrays to check (numeric).
    name : str
        The estimator's name, for the message.
    limit : float
        Largest magnitude accepted.
    labels : sequence of str, default=("X",)
        One label per array, for the message.
    reason : str
        Why the limit applies.
    """
    for label, a in zip(labels, arrays, strict=True):
        a = np.asarray(a)
        if a.size and np.nanmax(np.abs(a), initial=0.0) > limit:
            raise ValueError(f"{name}: {label} holds values up to {np.nanmax(np.abs(a)):.3g}, beyond "
                             f"{limit:.3g} in magnitude ({reason}); rescale it.")


def check_float32_range(*arrays, name, labels=("X",), reason="it computes in float32"):
    """Raise a ValueError naming the estimator when an array holds a value beyond :data:`FLOAT32_SAFE_MAX`.

    :func:`check_value_range` with ``limit=FLOAT32_SAFE_MAX``.

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
    check_value_range(*arrays, name=name, limit=FLOAT32_SAFE_MAX, labels=labels, reason=reason)


def check_decoupled_weight_decay(name, learning_rate, weight_decay):
    """Raise a ValueError naming the estimator when AdamW's decay would erase the weights at every step.

    AdamW multiplies every weight by ``1 - learning_rate * weight_decay`` at
    each step (before the gradient step): from ``learning_rate *
    weight_decay >= 1`` on, each step zeroes the weights or flips their sign
    (and from 2 on, grows them until the loss is NaN).

    Parameters
    ----------
    name : str
        The estimator's name, for the message.
    learning_rate : float
        The largest step size of the schedule.
    weight_decay : float
        AdamW's decoupled weight decay.
    """
    shrink = float(learning_rate) * float(weight_decay)
    if shrink >= 1.0:
        raise ValueError(f"{name}: weight_decay={weight_decay!r} with learning_rate={learning_rate!r}: AdamW "
                         f"multiplies every weight by 1 - learning_rate * weight_decay = {1.0 - shrink:.3g} at each "
                         f"step, which erases the weights; give weight_decay < 1 / learning_rate = "
                         f"{1.0 / float(learning_rate):.3g}.")


def standardization(X, sample_weight=None):
    """Column means and scales of ``X`` for z-scores; a constant column gets scale 1.

    Values near the float64 limit do not overflow: when the plain moments are
    not finite they are computed on ``X`` divided by its column peaks. A column
    counts as constant when its standard deviation is 0 or rounding noise
    (at most 1e-12 times its mean's magnitude).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite float data.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative weights (not all zero) of the rows in the mean and the
        variance; None weighs every row alike.

    Returns
    -------
    mean, scale : ndarray of shape (n_features,)
        ``(X - mean) / scale`` has unit (weighted) variance in every
        non-constant column.
    """
    def moments(A):
        if sample_weight is None:
            return A.mean(axis=0), A.std(axis=0)
        m = np.average(A, axis=0, weights=sample_weight)
        return m, np.sqrt(np.average((A - m) ** 2, axis=0, weights=sample_weight))

    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = moments(X)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std))):
        peak = np.abs(X).max(axis=0)
        peak = np.where(peak > 0, peak, 1.0)
        mean, std = (peak * m for m in moments(X / peak))
    scale = np.where(std > 1e-12 * np.abs(mean), std, 1.0)
    return mean, scale
