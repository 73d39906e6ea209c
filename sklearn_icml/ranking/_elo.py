"""Online Elo ratings over a stream of battles (the leaderboard Chatbot Arena started with)."""

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._classifier import BinaryDecisionMixin
from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ._battles import (
    DEFAULT_TIE_LABELS,
    BattleInputMixin,
    as_battle_array,
    check_distinct,
    check_ids,
    encode_ids,
    factorize,
    lookup_ids,
    parse_outcomes,
    split_battles,
)


def _elo_pass(ratings, a, b, score, k, scale, base):
    """Sequential Elo updates in row order (inherently sequential: one Python loop).

    The expected score ``1 / (1 + base ** ((r_j - r_i) / scale))`` is computed
    as a logistic function of ``(r_i - r_j) ln(base) / scale`` that never
    overflows, whatever the rating gap.
    """
    r = ratings.tolist()
    rate = math.log(base) / scale
    exp = math.exp
    for i, j, s in zip(a.tolist(), b.tolist(), score.tolist()):
        x = (r[i] - r[j]) * rate
        if x >= 0:
            expected = 1.0 / (1.0 + exp(-x))
        else:
            e = exp(x)
            expected = e / (1.0 + e)
        delta = k * (s - expected)
        r[i] += delta
        r[j] -= delta
    return np.asarray(r, dtype=np.float64)


@fill_doc
class EloRater(BattleInputMixin, BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """Online Elo ratings from a stream of pairwise battles.

    Read more in the :ref:`User Guide <ranking>`.

    Each battle, in row order, moves the two ratings by ``k * (S - E)``, where
    ``S`` is the first competitor's result (1, 0.5 for a tie, 0) and
    ``E = 1 / (1 + base ** ((R_second - R_first) / scale))`` its expected
    result. Chatbot Arena published online Elo first and switched to
    Bradley-Terry (:class:`BradleyTerryRanker`), whose estimates do not depend
    on the order of the battles; Elo remains the streaming baseline.
    ``partial_fit`` continues the stream.

    Parameters
    ----------
    k : float, default=4.0
        Update step (FastChat's K=4).
    scale : float, default=400.0
        Elo scale.
    base : float, default=10.0
        Elo base.
    init_rating : float, default=1000.0
        Rating of a new competitor.
    ties : {"half", "drop"}, default="half"
        A tie scores 0.5 for each side, or is skipped.
    tie_labels : array-like, default=("tie", "tie (bothbad)")
        Labels of ``y`` that mean a tie.
    win_labels : "auto" or tuple of two labels, default="auto"
        As in :class:`BradleyTerryRanker`.
    handle_unknown : {"average", "warn", "error"}, default="average"
        A competitor not seen in fit, at prediction time: rated
        ``init_rating``, the same with a warning, or a ``ValueError``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two decisive outcome labels, sorted.
    first_wins_label_ : object
        The element of ``classes_`` that means the first competitor won.
    items_ : ndarray of shape (n_items,)
        Competitors, in order of first appearance per call (sorted within a call).
    ratings_ : ndarray of shape (n_items,)
        Current Elo ratings.
    n_battles_ : ndarray of shape (n_items,)
        Battles each competitor has played (ties included even when dropped).
    n_features_in_ : int
        Number of columns of ``X``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when ``X`` was a DataFrame with string column names.

    See Also
    --------
    BradleyTerryRanker : Order-free maximum-likelihood ratings with intervals.

    Notes
    -----
    Data contract as in :class:`BradleyTerryRanker`; columns of ``X`` after
    the two id columns are validated as numeric but not used (Elo has no
    covariates). Ratings depend on the order of the rows: ``fit`` processes
    them in the given order, starting every competitor at ``init_rating``.
    Ids must not be None, NaN or infinite (``ValueError``). A battle needs
    two different competitors: a row that pits a competitor against itself
    would change no rating and is refused with a ``ValueError`` naming the
    row (by ``partial_fit`` too, before any rating moves). The
    expected score is evaluated as a logistic function of the rating gap, so
    no rating gap overflows; ratings beyond float64 (an absurd ``k``) raise a
    ``ValueError``.

    References
    ----------
    {{chatbot_arena_reference}}

    Examples
    --------
    >>> from sklearn_icml.ranking import EloRater
    >>> X = [["a", "b"], ["a", "c"], ["b", "c"]]
    >>> elo = EloRater().fit(X, ["model_a", "model_a", "tie"])
    >>> elo.ratings_.round(3).tolist()
    [1003.988, 998.0, 998.011]
    """

    _parameter_constraints: dict = {
        "k": [Interval(Real, 0, np.inf, closed="neither")],
        "scale": [Interval(Real, 0, np.inf, closed="neither")],
        "base": [Interval(Real, 1, np.inf, closed="neither")],
        "init_rating": [Interval(Real, -np.inf, np.inf, closed="neither")],
        "ties": [StrOptions({"half", "drop"})],
        "tie_labels": ["array-like"],
        "win_labels": [StrOptions({"auto"}), tuple, list],
        "handle_unknown": [StrOptions({"average", "warn", "error"})],
    }

    def __init__(self, k=4.0, *, scale=400.0, base=10.0, init_rating=1000.0, ties="half",
                 tie_labels=DEFAULT_TIE_LABELS, win_labels="auto", handle_unknown="average"):
        self.k = k
        self.scale = scale
        self.base = base
        self.init_rating = init_rating
        self.ties = ties
        self.tie_labels = tie_labels
        self.win_labels = win_labels
        self.handle_unknown = handle_unknown

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Rate the competitors by one pass over the battles, in row order.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Columns 0 and 1: ids of the first and second competitor.
        y : array-like of shape (n_battles,)
            Outcome labels.

        Returns
        -------
        self : object
            Fitted rater.
        """
        for attr in ("classes_", "items_", "ratings_", "n_battles_", "first_wins_label_"):
            if hasattr(self, attr):
                delattr(self, attr)
        return self._update(X, y, classes=None, reset=True)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """Continue the stream with more battles.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Columns 0 and 1: ids of the first and second competitor.
        y : array-like of shape (n_battles,)
            Outcome labels.
        classes : array-like of shape (2,), default=None
            The two decisive outcome labels; only needed on the first call when
            its ``y`` holds one of them only (and ``win_labels`` is ``"auto"``).

        Returns
        -------
        self : object
            Updated rater.
        """
        return self._update(X, y, classes=classes, reset=not hasattr(self, "ratings_"))

    def _update(self, X, y, classes, reset):
        name = type(self).__name__
        # ids (check_ids) and covariates (split_battles) get their own NaN/inf checks, with clearer messages
        X, y = validate_data(self, as_battle_array(as_numpy(X)), as_numpy(y), dtype=None, reset=reset,
                             ensure_min_features=2 if reset else 1, ensure_all_finite=False)
        ids, _ = split_battles(name, X)
        win_labels = self.win_labels
        fixed = None if reset else self.classes_
        if reset and classes is not None:
            fixed = np.asarray(classes)
            if fixed.shape != (2,):
                raise ValueError(f"{name}: classes must hold the two decisive outcome labels; got {classes!r}.")
            fixed = np.sort(fixed)
        classes_, first, score = parse_outcomes(name, y, tie_labels=tuple(self.tie_labels), win_labels=win_labels,
                                                classes=fixed)
        if reset:
            items, codes = encode_ids(ids)
            check_ids(name, items)
            check_distinct(name, items, codes)
            self.classes_, self.first_wins_label_ = classes_, first
            self.items_ = items
            self.ratings_ = np.full(len(self.items_), float(self.init_rating))
            self.n_battles_ = np.zeros(len(self.items_))
        else:
            codes = lookup_ids(self.items_, ids)
            new = codes < 0
            fresh = np.empty(0, dtype=object)
            if new.any():
                fresh, fresh_codes = factorize(np.ascontiguousarray(ids[new]))
                check_ids(name, fresh)
                codes[new] = len(self.items_) + fresh_codes
            # checked before the state grows: a refused batch leaves the rater as it was
            check_distinct(name, np.concatenate([self.items_.astype(object), fresh.astype(object)]), codes)
            if len(fresh):
                self.items_ = np.concatenate([self.items_.astype(object), fresh.astype(object)])
                self.ratings_ = np.concatenate([self.ratings_, np.full(len(fresh), float(self.init_rating))])
                self.n_battles_ = np.concatenate([self.n_battles_, np.zeros(len(fresh))])
        self.n_battles_ += (np.bincount(codes[:, 0], minlength=len(self.items_))
                            + np.bincount(codes[:, 1], minlength=len(self.items_)))
        keep = np.ones(len(score), dtype=bool) if self.ties == "half" else score != 0.5
        ratings = _elo_pass(self.ratings_, codes[keep, 0], codes[keep, 1], score[keep], float(self.k),
                            float(self.scale), float(self.base))
        if not np.all(np.isfinite(ratings)):
            raise ValueError(f"{name}: the ratings overflowed float64 with k={self.k!r}; use a smaller k.")
        self.ratings_ = ratings
        return self

    def decision_function(self, X):
        """Logit of ``classes_[1]`` for each battle.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles.

        Returns
        -------
        decision : ndarray of shape (n_battles,)
            ``ln(base) * (R_first - R_second) / scale``, negated when
            ``classes_[1]`` means that the second competitor won.
        """
        check_is_fitted(self)
        X = validate_data(self, as_battle_array(as_numpy(X)), reset=False, dtype=None, ensure_all_finite=False)
        ids, _ = split_battles(type(self).__name__, X)
        codes = lookup_ids(self.items_, ids)
        check_ids(type(self).__name__, ids[codes < 0])
        if (codes < 0).any():
            unknown = list(dict.fromkeys(ids[codes < 0].tolist()))[:5]
            msg = f"{type(self).__name__}: competitor id(s) {unknown!r} were not seen in fit"
            if self.handle_unknown == "error":
                raise ValueError(msg + "; set handle_unknown='average' to rate them init_rating.")
            if self.handle_unknown == "warn":
                warnings.warn(msg + "; they are rated init_rating.", UserWarning, stacklevel=2)
        r = np.append(self.ratings_, float(self.init_rating))
        eta = np.log(self.base) * (r[codes[:, 0]] - r[codes[:, 1]]) / self.scale
        return eta if self.first_wins_label_ == self.classes_[1] else -eta

