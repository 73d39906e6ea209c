"""Pieces shared by the survival heads: the fit preamble, the c-index ``score``, the Breslow baseline, the Cox loss."""

from numbers import Real

import numpy as np
from sklearn.utils.validation import check_array, check_consistent_length, validate_data

from ..utils._torch import as_numpy
from ._metrics import concordance_index
from ._target import check_survival_target


class SurvivalMixin:
    """Mixin for survival heads: ``score`` is Harrell's c-index of ``predict`` (a risk score).

    The target is required, and is not a classification or regression
    target: ``estimator_type`` stays None, as for scikit-survival's
    estimators, so cross-validation splits with ``KFold``.
    """

    def score(self, X, y):
        """Harrell's concordance index of the predicted risks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.
        y : array-like
            Survival target (structured (event, time) array, (n, 2) [time,
            event] array, or 1-D times).

        Returns
        -------
        score : float
            The concordance index (0.5 is chance, 1 is a perfect ordering).
        """
        return concordance_index(y, self.predict(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.positive_only = True  # times are non-negative (and a 0/1 mix is refused as labels)
        return tags

    def _validate_survival_fit(self, X, y):
        """The fit preamble of every survival head.

        Called inside the torch fit context (which has resolved ``device``
        and set ``device_``): checks that ``y`` is given, validates ``X`` (at
        least two rows) and the survival target and their lengths.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        event : ndarray of bool, shape (n_samples,)
        time : ndarray of float, shape (n_samples,)
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        X = validate_data(self, as_numpy(X), dtype=[np.float64, np.float32], ensure_min_samples=2)
        event, time = check_survival_target(y, estimator=self)
        check_consistent_length(X, time)
        return X, event, time


def breslow_baseline(log_risk, time, event):
    """Breslow's estimate of the cumulative baseline hazard at the distinct event times.

    Returns ``(event_times, cumulative_hazard)``; ``H0(t) = sum over event
    times t_k <= t of d_k / sum_{j: time_j >= t_k} exp(log_risk_j)``.
    """
    order = np.argsort(time, kind="mergesort")
    t_sorted, e_sorted = time[order], event[order]
    # log of the sum of risks of samples with time >= t (in log space: no overflow for large log-risks)
    log_tail = np.logaddexp.accumulate(log_risk[order][::-1])[::-1]
    uniq, first = np.unique(t_sorted, return_index=True)
    d = np.add.reduceat(e_sorted.astype(np.float64), first)
    has_event = d > 0
    with np.errstate(over="ignore"):
        hazard = d[has_event] * np.exp(-log_tail[first][has_event])
    return uniq[has_event], np.cumsum(hazard)


def survival_from_baseline(event_times, cum_hazard, log_risk, times):
    """``S(t | x) = exp(-H0(t) exp(log_risk))`` on ``times``, H0 a right-continuous step function."""
    idx = np.searchsorted(event_times, times, side="right") - 1
    h0 = np.where(idx >= 0, cum_hazard[np.clip(idx, 0, None)], 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        cum = np.exp(np.asarray(log_risk, dtype=np.float64)[:, None] + np.log(h0)[None, :])
    return np.exp(-np.nan_to_num(cum, nan=0.0))


def check_times(times, default, name):
    """Evaluation times for ``predict_survival_function``: ``default`` when None, else 1-D finite floats."""
    if times is None:
        return default.copy()
    times = check_array(as_numpy(times), ensure_2d=False, dtype=np.float64, input_name="times")
    if times.ndim != 1:
        raise ValueError(f"{name}.predict_survival_function: times must be 1-D; got shape {times.shape}.")
    return times


def cox_sort_keys(time):
    """Descending-time order and, per sorted position, the last index of its tied-time group.

    With these, ``logcumsumexp`` over the sorted log-risks taken at the group
    end gives the log of each sample's risk set ``{j : time_j >= time_i}``
    (Breslow's handling of ties).
    """
    order = _descending_order(time)
    return order, _tie_group_ends(time[order])


def _descending_order(time):
    """Stable descending-time order (numpy)."""
    return np.argsort(-time, kind="mergesort")


def _tie_group_ends(t_sorted):
    """Per position of times in descending order, the last position q with ``t_sorted[q] == t_sorted[p]``."""
    return np.searchsorted(-t_sorted, -t_sorted, side="right") - 1


def cox_negative_log_likelihood(log_risk, event, last, normalizer):
    """Breslow negative log partial likelihood on samples already sorted by descending time (torch).

    ``last`` (int64) holds each position's tie-group end; None when no two times are tied (every
    group ends where it starts, and the risk sets are read without a gather).
    """
    import torch

    log_risk_set = torch.logcumsumexp(log_risk, dim=0)
    if last is not None:
        log_risk_set = log_risk_set.index_select(0, last)
    return -((log_risk - log_risk_set) * event).sum() / normalizer


def _cox_keys(time, presorted):
    """The descending-time order (None when ``presorted``) and each position's tie-group end (None without ties)."""
    import torch

    if time.device.type == "cpu" and time.dtype in (torch.float64, torch.float32, torch.int64, torch.int32):
        # the keys need no gradient: on the CPU numpy computes them with less dispatch than torch
        try:
            t = time.detach().numpy()
        except RuntimeError:  # no storage to read (a tensor inside a torch.func transform): torch's path below
            t = None
        if t is not None:
            order = None if presorted else _descending_order(t)
            if order is not None:
                t, order = t[order], torch.from_numpy(order)
            return order, None if (t[1:] != t[:-1]).all() else torch.from_numpy(_tie_group_ends(t))
    order = None if presorted else torch.argsort(time, descending=True, stable=True)
    if order is not None:
        time = time.index_select(0, order)
    return order, torch.searchsorted(-time, -time, right=True) - 1


def cox_batch_loss(log_risk, time, event, normalizer=None, *, presorted=False):
    """:func:`cox_partial_likelihood_loss` without its input checks: the survival heads' per-batch kernel."""
    order, last = _cox_keys(time, presorted)
    if order is not None:
        log_risk, event = log_risk.index_select(0, order), event.index_select(0, order)
    event = event.to(log_risk.dtype)
    if normalizer is None:
        normalizer = event.sum().clamp_min(1.0)
    return cox_negative_log_likelihood(log_risk, event, last, normalizer)


def cox_partial_likelihood_loss(log_risk, time, event, *, normalizer=None, presorted=False):
    """Compute Cox's negative log partial likelihood of a batch, with Breslow's ties, as a torch loss.

    The objective :class:`CoxSurvival` and :class:`PrototypeSurvival` train
    on, for a network of one's own trained with
    :class:`~sklearn_icml.utils.Trainer` (as its ``train_step``) or any torch
    loop. Each event at time ``t_i`` is compared with the batch's samples
    whose time is at least ``t_i`` (tied times in each other's risk sets): the
    loss of a mini-batch compares the batch's samples only. It runs on the
    tensors' device and is differentiable in ``log_risk``.

    Parameters
    ----------
    log_risk : torch.Tensor of shape (n_samples,)
        Log-risks (a higher value means an earlier event), in any order.
    time : torch.Tensor of shape (n_samples,)
        Observed times.
    event : torch.Tensor of shape (n_samples,)
        Event indicators (1: event observed, 0: censored), of any dtype.
    normalizer : float, default=None
        Divides the summed loss. None: the number of events in the batch (at
        least 1, so that a batch without events costs 0).
    presorted : bool, default=False
        The samples are already in descending time order (a full batch sorted
        once before training): skip the sort. The order is not checked.

    Returns
    -------
    loss : torch.Tensor
        A scalar, in the dtype of ``log_risk``.

    See Also
    --------
    CoxSurvival : Cox model with a linear or MLP log-risk trained on this loss.
    concordance_index : Harrell's c-index of predicted risks.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.survival import cox_partial_likelihood_loss
    >>> log_risk = torch.tensor([0.5, -0.2, 0.1], requires_grad=True)
    >>> time, event = torch.tensor([1.0, 3.0, 2.0]), torch.tensor([1.0, 0.0, 1.0])
    >>> loss = cox_partial_likelihood_loss(log_risk, time, event)
    >>> round(loss.item(), 4)
    0.6638
    >>> loss.backward()
    >>> log_risk.grad
    tensor([-0.2693,  0.3274, -0.0581])
    """
    import torch

    name = "cox_partial_likelihood_loss"
    for arg, value in (("log_risk", log_risk), ("time", time), ("event", event)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name}: {arg} must be a torch.Tensor; got {type(value).__name__}.")
        if value.ndim != 1:
            raise ValueError(f"{name}: {arg} must be 1-D; got shape {tuple(value.shape)}.")
    if not log_risk.shape[0] == time.shape[0] == event.shape[0]:
        raise ValueError(f"{name}: log_risk, time and event must have the same length; got {log_risk.shape[0]}, "
                         f"{time.shape[0]} and {event.shape[0]}.")
    if normalizer is not None and not (isinstance(normalizer, Real) and normalizer > 0):
        raise ValueError(f"{name}: normalizer must be a positive number or None; got {normalizer!r}.")
    return cox_batch_loss(log_risk, time, event, normalizer, presorted=presorted)
