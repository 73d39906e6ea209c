"""Survival targets: the structured (event, time) array of scikit-survival, and its other accepted forms."""

import numpy as np
from sklearn.utils.validation import check_consistent_length

from ..utils._torch import as_numpy

__all__ = ["Surv", "check_survival_target"]


def _event_as_bool(event, what="event indicator"):
    event = np.asarray(as_numpy(event))
    if event.ndim != 1:
        raise ValueError(f"The {what} must be 1-D; got shape {event.shape}.")
    if event.dtype == bool:
        return event.copy()
    if event.dtype.kind not in "iuf":
        raise TypeError(f"The {what} must be boolean or 0/1 numbers; got dtype {event.dtype}.")
    values = np.unique(event)
    if not np.all(np.isin(values, (0, 1))):
        raise ValueError(f"The {what} must hold only 0 and 1 (or booleans); got the values {values[:10]}.")
    return event.astype(bool)


class Surv:
    """Build survival targets: structured arrays of (event, time), as scikit-survival makes them.

    Read more in the :ref:`User Guide <survival>`.

    The array has two fields, a boolean event indicator (``True``: the event
    was observed; ``False``: right-censored) and a float time, with the dtype
    ``[('event', '?'), ('time', '<f8')]``, the one of scikit-survival's
    ``Surv.from_arrays``. Every estimator of :mod:`sklearn_icml.survival`
    takes it as ``y``; they also take an ``(n_samples, 2)`` array of
    ``[time, event]`` columns, and a 1-D array of times (all events).

    See Also
    --------
    concordance_index : Harrell's concordance index of a risk score.

    Examples
    --------
    >>> from sklearn_icml.survival import Surv
    >>> y = Surv.from_arrays(event=[True, False, True], time=[10, 25, 15])
    >>> y["time"]
    array([10., 25., 15.])
    >>> y.dtype.names
    ('event', 'time')
    """

    @staticmethod
    def from_arrays(event, time, name_event="event", name_time="time"):
        """Make a structured survival array from an event indicator and times.

        Parameters
        ----------
        event : array-like of shape (n_samples,)
            Booleans, or 0/1 numbers; true or 1 means the event was observed.
        time : array-like of shape (n_samples,)
            Time of the event, or of censoring.
        name_event : str, default="event"
            Name of the event field.
        name_time : str, default="time"
            Name of the time field.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Structured array with fields ``(name_event, bool)`` and
            ``(name_time, float64)``.
        """
        if name_event == name_time:
            raise ValueError(f"name_event and name_time must differ; both are {name_event!r}.")
        time = np.asarray(as_numpy(time), dtype=np.float64)
        if time.ndim != 1:
            raise ValueError(f"time must be 1-D; got shape {time.shape}.")
        event = _event_as_bool(event)
        check_consistent_length(event, time)
        y = np.empty(time.shape[0], dtype=[(name_event, bool), (name_time, np.float64)])
        y[name_event] = event
        y[name_time] = time
        return y

    @staticmethod
    def from_dataframe(event, time, data):
        """Make a structured survival array from two columns of a DataFrame.

        Parameters
        ----------
        event : str
            Column holding the event indicator (booleans or 0/1).
        time : str
            Column holding the times.
        data : pandas.DataFrame
            The table.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Structured array whose field names are the column names.
        """
        return Surv.from_arrays(np.asarray(data[event]), np.asarray(data[time]),
                                name_event=str(event), name_time=str(time))


def _structured_fields(y, name):
    fields = y.dtype.names
    if len(fields) != 2:
        raise ValueError(f"{name}: a structured survival target needs exactly two fields (event, time); "
                         f"got {fields}.")
    kinds = [y.dtype[f].kind for f in fields]
    if kinds.count("b") != 1:
        raise TypeError(f"{name}: a structured survival target needs one boolean field (the event indicator) "
                        f"and one numeric field (the time); got the dtype {y.dtype}.")
    event_field = fields[kinds.index("b")]
    time_field = fields[1 - kinds.index("b")]
    if y.dtype[time_field].kind not in "iuf":
        raise TypeError(f"{name}: the time field {time_field!r} must be numeric; got {y.dtype[time_field]}.")
    return np.asarray(y[event_field], dtype=bool), np.asarray(y[time_field], dtype=np.float64)


def check_survival_target(y, *, estimator=None, allow_all_censored=False):
    """Read a survival target into ``(event, time)`` arrays, with clear errors.

    Accepted forms: a structured array with one boolean field (the event
    indicator) and one numeric field (the time), in any order, as made by
    :meth:`Surv.from_arrays` or scikit-survival; a DataFrame with such
    columns; an ``(n_samples, 2)`` numeric array of ``[time, event]``
    columns (event 0/1); a 1-D array of times, read as "every event
    observed" (the form scikit-learn's common checks feed). A 1-D ``y`` of
    only zeros and ones (both present) is refused: those are class labels or
    event indicators, not times.

    Parameters
    ----------
    y : array-like
        The target.
    estimator : estimator instance or str, default=None
        Named in the error messages.
    allow_all_censored : bool, default=False
        Whether a target without any observed event is accepted.

    Returns
    -------
    event : ndarray of shape (n_samples,), dtype=bool
        Event indicator.
    time : ndarray of shape (n_samples,), dtype=float64
        Observed times (new arrays; ``y`` is never modified).
    """
    if estimator is None:
        name = "survival target"
    else:
        name = estimator if isinstance(estimator, str) else type(estimator).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    y = as_numpy(y)
    if type(y).__module__.partition(".")[0] == "pandas":
        if y.ndim == 2:
            y = y.to_records(index=False)
        else:
            y = y.to_numpy()
    y = np.asarray(y)
    if y.dtype.names is not None:
        if y.ndim != 1:
            raise ValueError(f"{name}: a structured survival target must be 1-D; got shape {y.shape}.")
        event, time = _structured_fields(y, name)
    else:
        if y.dtype.kind == "b" and y.ndim == 1:
            raise TypeError(f"{name}: got a boolean 1-D y; pass the times too, e.g. "
                            "Surv.from_arrays(event, time).")
        if y.dtype.kind == "O":
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name}: the survival target must be numeric; got objects ({exc}).") from None
        if y.dtype.kind not in "iufb":
            raise TypeError(f"{name}: the survival target must be a structured (event, time) array, an "
                            f"(n_samples, 2) array of [time, event] or 1-D times; got dtype {y.dtype}.")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim == 1:
            time = y.astype(np.float64)
            if time.size and np.isin(time, (0.0, 1.0)).all() and (time == 0).any() and (time == 1).any():
                raise ValueError(f"{name}: y holds only 0 and 1, which read as class labels or event indicators, "
                                 "not survival times; pass the times and the events together, "
                                 "Surv.from_arrays(event, time) or an (n_samples, 2) array of [time, event].")
            event = np.ones(time.shape[0], dtype=bool)
        elif y.ndim == 2 and y.shape[1] == 2:
            time = y[:, 0].astype(np.float64)
            event = _event_as_bool(y[:, 1], what=f"{name}: event column (column 1 of an (n, 2) [time, event] y)")
        else:
            raise ValueError(f"{name}: the survival target must be a structured (event, time) array, an "
                             f"(n_samples, 2) array of [time, event] or 1-D times; got shape {y.shape}.")
    if not np.all(np.isfinite(time)):
        raise ValueError(f"{name}: survival times must be finite; got {int(np.sum(~np.isfinite(time)))} "
                         "NaN or infinite time(s).")
    if np.any(time < 0):
        raise ValueError(f"{name}: survival times must be non-negative; got the minimum {time.min()!r}.")
    if time.shape[0] and not allow_all_censored and not event.any():
        raise ValueError(f"{name}: every sample is censored (no event observed); the survival model cannot be "
                         "estimated without at least one event.")
    return event, time
