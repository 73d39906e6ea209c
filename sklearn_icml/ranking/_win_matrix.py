"""Win-matrix estimate with CLT intervals under known (possibly adaptive) sampling probabilities (Chatbot Arena 4.1)."""

from numbers import Real

import numpy as np
from scipy import stats
from sklearn.exceptions import NotFittedError

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy
from ._active import _battle_arrays
from ._battles import DEFAULT_TIE_LABELS, check_distinct, check_ids, encode_ids, parse_outcomes


def _win_matrix_params(confidence_level, items, tie_labels, win_labels):
    """Signature whose validation reports bad WinMatrixEstimator parameters."""


_win_matrix_params.__qualname__ = "WinMatrixEstimator"
_check_win_matrix_params = validate_params(
    {
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "items": ["array-like", None],
        "tie_labels": ["array-like"],
        "win_labels": [StrOptions({"auto"}), tuple, list],
    },
    prefer_skip_nested_validation=True,
)(_win_matrix_params)


def _check_sampling_proba(name, sampling_proba, n):
    prob = np.asarray(as_numpy(sampling_proba), dtype=np.float64).reshape(-1)
    if prob.shape != (n,) or not np.all((prob > 0) & (prob <= 1)):
        raise ValueError(f"{name}: sampling_proba must hold one probability in (0, 1] per battle; got shape "
                         f"{prob.shape}, range [{prob.min() if prob.size else np.nan}, "
                         f"{prob.max() if prob.size else np.nan}].")
    return prob


def _pair_moments(flat, values, size):
    """Per-cell sums of ``values`` and of their squares."""
    return (np.bincount(flat, weights=values, minlength=size), np.bincount(flat, weights=values * values,
                                                                             minlength=size))


@fill_doc
class WinMatrixEstimator:
    """Win matrix of pairwise battles with CLT confidence intervals (Chatbot Arena, Section 4.1).

    Read more in the :ref:`User Guide <ranking>`.

    The entry ``(i, j)`` estimates ``theta(i, j)``, the probability that
    competitor ``i`` beats competitor ``j`` when the two are compared (a tie
    counting half). When the pairs were drawn with known probabilities
    ``P_t`` (uniformly, or actively by :class:`ActivePairSampler`), the
    paper's estimator is the inverse-probability average

    ``theta_hat(a) = (1/T) sum_t X_t(a)``, ``X_t(a) = H_t 1{A_t = a} / P_t(a)``,

    unbiased for every pair ``a``, with the CLT interval
    ``theta_hat(a) +- z * sqrt(Sigma_hat_aa / T)``,
    ``Sigma_hat_aa = (1/T) sum_t (X_t(a) - theta_hat(a))^2``. Without
    sampling probabilities, each entry is the mean outcome of the battles
    on that pair with the normal interval of a mean.

    Parameters
    ----------
    confidence_level : float, default=0.95
        Level of the (per-entry) intervals.
    items : array-like of shape (n_items,), default=None
        The roster of competitors; competitors in ``X`` are added to it.
        Pairs of the roster that never met get NaN entries.
    tie_labels : array-like, default=("tie", "tie (bothbad)")
        Labels of ``y`` that mean a tie (outcome 1/2).
    win_labels : "auto" or tuple of two labels, default="auto"
        As in :class:`BradleyTerryRanker`.

    Attributes
    ----------
    items_ : ndarray of shape (n_items,)
        Competitors, sorted.
    win_matrix_ : ndarray of shape (n_items, n_items)
        Estimated probability that the row competitor beats the column
        competitor; NaN on the diagonal and for pairs without a battle.
    win_matrix_se_ : ndarray of shape (n_items, n_items)
        Standard errors of the entries.
    win_matrix_intervals_ : ndarray of shape (n_items, n_items, 2)
        Lower and upper confidence bounds, clipped to [0, 1].
    n_battles_ : ndarray of shape (n_items, n_items)
        Battles per pair (symmetric).
    n_total_ : int
        Number of battles ``T``.
    weighted_ : bool
        Whether the entries are the inverse-probability estimate (fit with
        ``sampling_proba``).

    See Also
    --------
    ActivePairSampler : Draws pairs actively and returns the ``P_t`` to pass
        as ``sampling_proba``.
    BradleyTerryRanker : The paper's other estimand: Bradley-Terry scores.

    Notes
    -----
    With ``sampling_proba`` (the paper's estimator), each direction is
    estimated by its own inverse-probability average: entry ``(j, i)`` uses
    ``1 - H_t`` in place of ``H_t``, so ``W[i, j] + W[j, i]`` equals
    ``(1/T) sum_t 1{A_t = a} / P_t(a)``, which is 1 only in expectation. The
    CLT holds when every ``P_t(a)`` stays above some ``epsilon > 0`` and
    ``P_t`` converges; :class:`ActivePairSampler` guarantees the first with
    ``uniform_mix > 0`` (its default). ``P_t`` must be the probability with
    which the pair of battle ``t`` was drawn *at the time it was drawn*
    (:meth:`ActivePairSampler.sample` returns it).

    Assumptions written here because the paper leaves them open: the
    probabilities are per unordered pair (the order of the two competitors in
    a battle is irrelevant); a pair without any battle gets NaN rather than
    the estimate 0 with standard error 0 that the formula gives; without
    ``sampling_proba`` the probabilities are replaced by the pair
    frequencies ``n_a / T``, which turns the estimate into the per-pair mean
    outcome, and its interval uses the per-pair outcome variance,
    ``var_a / n_a`` (with estimated frequencies the noise of the pair counts
    drops out of the influence function). Both intervals are asymptotic
    (coverage in simulation on :doc:`the benchmark page
    </benchmarks/arena>`); with few votes per pair
    the normal approximation is poor (a pair whose votes all went one way
    gets a zero-width interval).

    References
    ----------
    {{chatbot_arena_reference}}

    Examples
    --------
    >>> from sklearn_icml.ranking import WinMatrixEstimator
    >>> X = [["a", "b"]] * 4 + [["b", "c"]] * 2 + [["c", "a"]] * 2
    >>> y = ["model_a", "model_a", "model_b", "tie", "model_a", "model_a", "model_b", "model_b"]
    >>> est = WinMatrixEstimator().fit(X, y)
    >>> est.win_matrix_.round(3).tolist()
    [[nan, 0.625, 1.0], [0.375, nan, 1.0], [0.0, 0.0, nan]]
    >>> est.n_battles_[0].tolist()
    [0, 4, 2]
    """

    def __init__(self, confidence_level=0.95, *, items=None, tie_labels=DEFAULT_TIE_LABELS, win_labels="auto"):
        self.confidence_level = confidence_level
        self.items = items
        self.tie_labels = tie_labels
        self.win_labels = win_labels

    def __repr__(self):
        return f"{type(self).__name__}(confidence_level={self.confidence_level!r})"

    def fit(self, X, y, sampling_proba=None):
        """Estimate the win matrix and its intervals.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles: columns 0 and 1 hold the competitor ids (covariates are
            ignored).
        y : array-like of shape (n_battles,)
            Outcome labels (see ``win_labels`` and ``tie_labels``).
        sampling_proba : array-like of shape (n_battles,), default=None
            Probability with which each battle's (unordered) pair was drawn,
            e.g. from :meth:`ActivePairSampler.sample`; gives the paper's
            inverse-probability estimate. None: the per-pair mean outcome.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        name = type(self).__name__
        _check_win_matrix_params(self.confidence_level, self.items, self.tie_labels, self.win_labels)
        ids, y = _battle_arrays(name, X, y)
        if y is None:
            raise ValueError(f"{name}: the outcomes y of the battles are required.")
        T = ids.shape[0]
        if T == 0:
            raise ValueError(f"{name}: X holds no battle.")
        prob = None if sampling_proba is None else _check_sampling_proba(name, sampling_proba, T)
        _, _, score = parse_outcomes(name, y, tie_labels=tuple(self.tie_labels), win_labels=self.win_labels)
        all_ids = ids
        if self.items is not None:
            roster = np.asarray(as_numpy(self.items)).reshape(-1)
            all_ids = np.concatenate([np.column_stack([roster, roster]).astype(object), ids.astype(object)])
        items, codes = encode_ids(all_ids)
        codes = codes[len(all_ids) - T:]
        check_ids(name, items, what="X" if self.items is None else "items or X")
        check_distinct(name, items, codes)
        a, b = codes[:, 0], codes[:, 1]
        M = len(items)
        size = M * M
        first = a * M + b  # cell (first, second): the first competitor's result
        second = b * M + a
        counts = np.bincount(first, minlength=size) + np.bincount(second, minlength=size)
        if prob is None:
            wins = np.bincount(first, weights=score, minlength=size) + np.bincount(second, weights=1 - score,
                                                                                   minlength=size)
            sq = (np.bincount(first, weights=score * score, minlength=size)
                  + np.bincount(second, weights=(1 - score) ** 2, minlength=size))
            with np.errstate(invalid="ignore", divide="ignore"):
                theta = wins / counts
                var = np.clip(sq / counts - theta * theta, 0.0, None)
                se = np.sqrt(var / counts)
        else:
            s1, q1 = _pair_moments(first, score / prob, size)
            s2, q2 = _pair_moments(second, (1 - score) / prob, size)
            total, square = s1 + s2, q1 + q2
            theta = total / T
            # (1/T) sum_t (X_t - theta)^2, with X_t = 0 on the T - n_a battles of other pairs
            sigma = (square - 2 * theta * total + T * theta * theta) / T
            se = np.sqrt(np.clip(sigma, 0.0, None) / T)
        unseen = counts == 0
        theta = np.where(unseen, np.nan, theta).reshape(M, M)
        se = np.where(unseen, np.nan, se).reshape(M, M)
        z = stats.norm.ppf(0.5 + self.confidence_level / 2)
        self.items_ = items
        self.win_matrix_ = theta
        self.win_matrix_se_ = se
        self.win_matrix_intervals_ = np.clip(np.stack([theta - z * se, theta + z * se], axis=-1), 0.0, 1.0)
        self.n_battles_ = counts.reshape(M, M).astype(np.int64)
        self.n_total_ = int(T)
        self.weighted_ = prob is not None
        return self

    def pair_table(self):
        """One row per ordered pair of competitors that met.

        Returns
        -------
        table : numpy.recarray
            Fields ``item``, ``opponent``, ``win_rate``, ``lower``, ``upper``,
            ``n_battles``, sorted by ``item`` then ``opponent``.
        """
        if not hasattr(self, "win_matrix_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first.")
        i, j = np.nonzero(self.n_battles_)
        return np.rec.fromarrays(
            [self.items_[i], self.items_[j], self.win_matrix_[i, j], self.win_matrix_intervals_[i, j, 0],
             self.win_matrix_intervals_[i, j, 1], self.n_battles_[i, j]],
            names=["item", "opponent", "win_rate", "lower", "upper", "n_battles"])
