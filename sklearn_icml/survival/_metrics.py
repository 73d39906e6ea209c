"""Survival metrics: Harrell's concordance index, Kaplan-Meier, Brier score and its integral."""

from numbers import Real

import numpy as np
from sklearn.utils.validation import check_array, check_consistent_length

from ..utils._sklearn_private import Interval, validate_params
from ..utils._torch import as_numpy
from ._target import check_survival_target

__all__ = ["brier_score", "concordance_index", "integrated_brier_score", "kaplan_meier"]

#: Pairs compared per block in the concordance index (bounds the memory to ~16 MB).
_BLOCK = 1 << 21


def _check_target(y, name, what="y"):
    """``check_survival_target`` plus a clear error for an empty target."""
    event, time = check_survival_target(y, estimator=name, allow_all_censored=True)
    if time.shape[0] == 0:
        raise ValueError(f"{name}: {what} is empty; it needs at least one sample.")
    return event, time


@validate_params(
    {"y_true": ["array-like"], "y_pred": ["array-like"], "tied_tol": [Interval(Real, 0, None, closed="left")]},
    prefer_skip_nested_validation=True,
)
def concordance_index(y_true, y_pred, *, tied_tol=1e-8):
    """Compute Harrell's concordance index of a risk score against censored survival times.

    A pair (i, j) is comparable when the sample with the shorter time had an
    event: ``time_i < time_j`` and ``event_i``, or ``time_i == time_j`` with
    ``event_i`` and not ``event_j`` (an event at the time another sample is
    censored). A comparable pair is concordant when the earlier event has the
    higher risk; pairs whose risks differ by at most ``tied_tol`` count one
    half. The value equals scikit-survival's
    ``concordance_index_censored(event, time, risk, tied_tol)[0]``, ties
    included.

    Parameters
    ----------
    y_true : array-like
        Survival target: a structured (event, time) array (see :class:`Surv`),
        an ``(n_samples, 2)`` array of ``[time, event]``, or 1-D times (all events).
    y_pred : array-like of shape (n_samples,)
        Risk scores: higher means an earlier event (what the survival
        estimators' ``predict`` returns).
    tied_tol : float, default=1e-8
        Risks closer than this count as tied.

    Returns
    -------
    cindex : float
        Fraction of comparable pairs ordered correctly, in [0, 1]; 0.5 is chance.

    Raises
    ------
    ValueError
        When no pair is comparable (for example every sample censored, or every
        event at the same last time), the index is undefined.

    See Also
    --------
    integrated_brier_score : Error of predicted survival functions over time.

    Examples
    --------
    >>> from sklearn_icml.survival import Surv, concordance_index
    >>> y = Surv.from_arrays(event=[True, True, False, True], time=[1.0, 3.0, 4.0, 5.0])
    >>> concordance_index(y, [2.0, 1.0, 1.5, 0.0])
    0.8
    """
    event, time = _check_target(y_true, "concordance_index", "y_true")
    risk = check_array(as_numpy(y_pred), ensure_2d=False, dtype=np.float64, input_name="y_pred")
    if risk.ndim != 1:
        raise ValueError(f"concordance_index: y_pred must be 1-D risk scores; got shape {risk.shape}.")
    check_consistent_length(time, risk)
    numerator, denominator = 0.0, 0
    event_idx = np.flatnonzero(event)
    step = max(1, _BLOCK // max(1, time.shape[0]))
    for start in range(0, event_idx.shape[0], step):
        rows = event_idx[start:start + step]
        t_i, r_i = time[rows, None], risk[rows, None]
        comparable = (time[None, :] > t_i) | ((time[None, :] == t_i) & ~event[None, :])
        ties = np.abs(risk[None, :] - r_i) <= tied_tol
        concordant = (risk[None, :] < r_i) & ~ties
        numerator += np.count_nonzero(comparable & concordant) + 0.5 * np.count_nonzero(comparable & ties)
        denominator += np.count_nonzero(comparable)
    if denominator == 0:
        raise ValueError("concordance_index: the data hold no comparable pair (a pair is comparable when the "
                         "shorter time is an observed event), so the concordance index is undefined; "
                         f"got {event.sum()} event(s) among {event.shape[0]} samples.")
    return float(numerator / denominator)


@validate_params(
    {"y": ["array-like"], "reverse": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def kaplan_meier(y, *, reverse=False):
    """Kaplan-Meier estimate of the survival function (or, reversed, of the censoring distribution).

    Parameters
    ----------
    y : array-like
        Survival target (see :func:`concordance_index` for the accepted forms).
    reverse : bool, default=False
        Estimate the distribution of the censoring times instead: censorings
        play the events, and an event at time t leaves the risk set just
        after the censorings of t.

    Returns
    -------
    times : ndarray of shape (n_times,)
        The distinct observed times, increasing.
    survival : ndarray of shape (n_times,)
        Probability of surviving past each time: a right-continuous step function.

    Examples
    --------
    >>> from sklearn_icml.survival import Surv, kaplan_meier
    >>> times, survival = kaplan_meier(Surv.from_arrays([True, False, True, True], [1, 2, 3, 3]))
    >>> times
    array([1., 2., 3.])
    >>> survival
    array([0.75, 0.75, 0.  ])
    """
    event, time = _check_target(y, "kaplan_meier")
    times, inverse = np.unique(time, return_inverse=True)
    n_events = np.bincount(inverse, weights=event, minlength=times.shape[0])
    n_total = np.bincount(inverse, minlength=times.shape[0]).astype(np.float64)
    at_risk = n_total[::-1].cumsum()[::-1]
    if reverse:
        n_events, at_risk = n_total - n_events, at_risk - n_events
    ratio = np.divide(n_events, at_risk, out=np.zeros_like(n_events), where=n_events != 0)
    return times, np.cumprod(1.0 - ratio)


def _step_at(times, values, query, before=1.0):
    """Right-continuous step function through (times, values), ``before`` left of times[0]."""
    idx = np.searchsorted(times, query, side="right") - 1
    out = np.where(idx >= 0, values[np.clip(idx, 0, None)], before)
    return out


def _censoring_survival(y_train, query):
    event, time = _check_target(y_train, "brier_score", "y_train")
    if event.all():
        return np.ones(np.shape(query))
    times, surv = kaplan_meier(y_train, reverse=True)
    query = np.asarray(query, dtype=np.float64)
    if surv[-1] > 0 and np.any(query > times[-1]):
        raise ValueError("brier_score: the censoring distribution is unknown after the last training time "
                         f"{times[-1]!r}; test times and evaluation times must not exceed it.")
    return _step_at(times, surv, query)


@validate_params(
    {"y_train": ["array-like"], "y_test": ["array-like"], "survival": ["array-like"], "times": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def brier_score(y_train, y_test, survival, times):
    """Time-dependent Brier score of predicted survival probabilities, with censoring weights.

    At time t, each test sample contributes ``S(t|x)^2 / G(T_i)`` if its event
    happened by t, ``(1 - S(t|x))^2 / G(t)`` if it is still at risk after t, and
    nothing if it was censored before t; ``G`` is the Kaplan-Meier estimate of
    the censoring survival function on ``y_train`` (Graf et al., 1999). Equal to
    scikit-survival's ``brier_score``.

    Parameters
    ----------
    y_train : array-like
        Training survival target, for the censoring distribution.
    y_test : array-like
        Test survival target.
    survival : array-like of shape (n_samples, n_times)
        Predicted survival probabilities (in [0, 1]) of the test samples at
        ``times`` (``predict_survival_function(X, times)``).
    times : array-like of shape (n_times,)
        Increasing evaluation times, within ``[min test time, max test time)``.

    Returns
    -------
    scores : ndarray of shape (n_times,)
        Brier score at each time; lower is better.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import Surv, brier_score
    >>> y = Surv.from_arrays([True, True, False, True], [1.0, 2.0, 3.0, 4.0])
    >>> brier_score(y, y, np.full((4, 2), 0.5), [1.5, 2.5])
    array([0.25, 0.25])
    """
    event, time = _check_target(y_test, "brier_score", "y_test")
    times = check_array(as_numpy(times), ensure_2d=False, dtype=np.float64, input_name="times")
    if times.ndim != 1 or times.shape[0] == 0:
        raise ValueError(f"brier_score: times must be a non-empty 1-D array; got shape {times.shape}.")
    if np.any(np.diff(times) <= 0):
        raise ValueError("brier_score: times must be strictly increasing.")
    if times[0] < time.min() or times[-1] >= time.max():
        raise ValueError(f"brier_score: all times must lie within the follow-up of the test data "
                         f"[{time.min()!r}, {time.max()!r}); got [{times[0]!r}, {times[-1]!r}].")
    survival = check_array(as_numpy(survival), ensure_2d=False, dtype=np.float64, input_name="survival")
    if survival.ndim == 1:
        survival = survival.reshape(-1, 1)
    check_consistent_length(time, survival)
    if survival.size and (survival.min() < 0 or survival.max() > 1):
        raise ValueError("brier_score: survival holds probabilities and must lie in [0, 1]; got values in "
                         f"[{float(survival.min())!r}, {float(survival.max())!r}].")
    if survival.shape[1] != times.shape[0]:
        raise ValueError(f"brier_score: survival has {survival.shape[1]} columns but {times.shape[0]} times "
                         "were given.")
    g_t = _censoring_survival(y_train, times)
    g_y = _censoring_survival(y_train, time)
    with np.errstate(divide="ignore"):
        inv_g_t = np.where(g_t > 0, 1.0 / np.where(g_t > 0, g_t, 1.0), 0.0)
        inv_g_y = np.where(g_y > 0, 1.0 / np.where(g_y > 0, g_y, 1.0), 0.0)
    case = (time[:, None] <= times[None, :]) & event[:, None]
    control = time[:, None] > times[None, :]
    terms = survival ** 2 * case * inv_g_y[:, None] + (1.0 - survival) ** 2 * control * inv_g_t[None, :]
    return terms.mean(axis=0)


@validate_params(
    {"y_train": ["array-like"], "y_test": ["array-like"], "survival": ["array-like"], "times": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def integrated_brier_score(y_train, y_test, survival, times):
    """Integrated Brier score: the Brier score averaged over an interval of times.

    The trapezoidal integral of :func:`brier_score` over ``times`` divided by
    ``times[-1] - times[0]``, as in scikit-survival's ``integrated_brier_score``.

    Parameters
    ----------
    y_train : array-like
        Training survival target, for the censoring distribution.
    y_test : array-like
        Test survival target.
    survival : array-like of shape (n_samples, n_times)
        Predicted survival probabilities of the test samples at ``times``.
    times : array-like of shape (n_times,)
        At least two increasing times within ``[min test time, max test time)``.

    Returns
    -------
    ibs : float
        Integrated Brier score; lower is better (0.25 for a constant 0.5).

    See Also
    --------
    brier_score : The score at each time.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import Surv, integrated_brier_score
    >>> y = Surv.from_arrays([True, True, False, True], [1.0, 2.0, 3.0, 4.0])
    >>> float(integrated_brier_score(y, y, np.full((4, 3), 0.5), [1.0, 2.0, 3.0]))
    0.25
    """
    times_arr = np.asarray(as_numpy(times), dtype=np.float64)
    if times_arr.ndim != 1 or times_arr.shape[0] < 2:
        raise ValueError("integrated_brier_score needs at least two times to integrate over; "
                         f"got {times_arr.shape[0] if times_arr.ndim == 1 else times_arr.shape}.")
    scores = brier_score(y_train, y_test, survival, times_arr)
    return float(np.trapezoid(scores, times_arr) / (times_arr[-1] - times_arr[0]))
