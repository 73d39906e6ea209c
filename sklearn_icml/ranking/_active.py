"""Active pair sampling for pairwise evaluation (Chatbot Arena, Eq. 9)."""

from numbers import Real

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy
from ._battles import (
    DEFAULT_TIE_LABELS,
    as_battle_array,
    check_distinct,
    check_ids,
    encode_ids,
    factorize,
    lookup_ids,
    parse_outcomes,
)


def _sampler_params(rule, items, prior, uniform_mix, tie_labels, win_labels, random_state):
    """Signature whose validation reports bad ActivePairSampler parameters."""


_sampler_params.__qualname__ = "ActivePairSampler"
_check_sampler_params = validate_params(
    {
        "rule": [StrOptions({"ci_reduction", "uniform"})],
        "items": ["array-like", None],
        # more pseudo-votes than 1e12 leaves no room for the votes in float64's 16 digits
        "prior": [Interval(Real, 0, 1e12, closed="right")],
        "uniform_mix": [Interval(Real, 0, 1, closed="both")],
        "tie_labels": ["array-like"],
        "win_labels": [StrOptions({"auto"}), tuple, list],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)(_sampler_params)


def _battle_arrays(name, X, y=None):
    X = as_battle_array(as_numpy(X))
    if hasattr(X, "iloc"):
        X = X.to_numpy()
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] < 2:
        raise ValueError(f"{name}: X must be 2-D with the two competitor ids in columns 0 and 1; got shape "
                         f"{X.shape}.")
    if y is not None:
        y = np.asarray(as_numpy(y))
        if y.shape != (X.shape[0],):
            raise ValueError(f"{name}: y must hold one outcome per battle; got shape {y.shape} for "
                             f"{X.shape[0]} battles.")
    return np.ascontiguousarray(X[:, :2]), y


@fill_doc
class ActivePairSampler:
    """Choose which pair of competitors to compare next (Chatbot Arena, Eq. 9).

    Read more in the :ref:`User Guide <ranking>`.

    Each unordered pair ``a`` is sampled with probability proportional to the
    reduction in its confidence-interval width that one more vote brings,
    ``sqrt(var_a / n_a) - sqrt(var_a / (n_a + 1))``, where ``n_a`` counts the
    votes on the pair and ``var_a`` is the variance of their outcomes. Pairs
    that are uncertain and rarely compared get more votes. The sampler also
    returns the probability of every pair it draws, which
    :class:`BradleyTerryRanker` takes as ``sampling_proba`` to reweight the
    votes (paper Eq. 7), so that the ratings still estimate the
    uniform-sampling Bradley-Terry scores.

    Parameters
    ----------
    rule : {"ci_reduction", "uniform"}, default="ci_reduction"
        The paper's rule, or uniform sampling over pairs (the baseline).
    items : array-like of shape (n_items,), default=None
        The roster of competitors. Competitors that appear in the battles
        passed to :meth:`fit` / :meth:`partial_fit` are added to it.
    prior : float, default=1.0
        Pseudo-votes per pair (half wins, half losses) added to the counts: a
        pair never compared has ``n_a = prior`` and variance 1/4, so it has a
        finite, high priority. At most 1e12 (beyond, the votes vanish in
        float64 rounding).
    uniform_mix : float, default=0.1
        Fraction of uniform sampling mixed into the rule, keeping every
        probability at least ``uniform_mix / n_pairs``. The paper's central
        limit theorem for the reweighted estimates (the win matrix of
        :class:`WinMatrixEstimator` and the ``sampling_proba`` fit of
        :class:`BradleyTerryRanker`) needs every pair's probability bounded
        away from 0, ``P_t(a) > epsilon``: the pure rule (``0``) can drive a
        settled pair's probability towards 0, and its inverse-probability
        weight, and the variance of the estimate, without bound. The default
        0.1 bounds every weight by ``10 * n_pairs`` while leaving most of the
        probability to the rule (its cost in votes is on :doc:`the benchmark
        page </benchmarks/arena>`). ``0`` is the paper's
        pure rule, ``1`` uniform sampling.
    tie_labels : array-like, default=("tie", "tie (bothbad)")
        Labels of ``y`` that mean a tie (outcome 1/2).
    win_labels : "auto" or tuple of two labels, default="auto"
        As in :class:`BradleyTerryRanker`.
    random_state : int, RandomState instance or None, default=None
        Seeds :meth:`sample`.

    Attributes
    ----------
    items_ : ndarray of shape (n_items,)
        Competitors.
    counts_ : ndarray of shape (n_items, n_items)
        Votes per unordered pair (upper triangle, ``i < j`` in ``items_`` order).
    outcome_sum_ : ndarray of shape (n_items, n_items)
        Sum of the outcomes for the first competitor of each pair (upper triangle).
    outcome_sq_sum_ : ndarray of shape (n_items, n_items)
        Sum of the squared outcomes (upper triangle).
    random_state_ : numpy.random.RandomState
        Generator used by :meth:`sample`.

    See Also
    --------
    BradleyTerryRanker : Fits the ratings; takes ``sampling_proba``.
    WinMatrixEstimator : The win matrix with CLT intervals; takes ``sampling_proba``.

    Notes
    -----
    Assumption: the paper's ``Sigma_aa`` is the variance of the
    inverse-probability-weighted win-matrix estimate; here ``var_a`` is the
    outcome variance of the votes on pair ``a`` with ``prior`` pseudo-votes
    (``(Q + prior/2) / (n + prior) - ((S + prior/2) / (n + prior))^2`` with
    ``S``, ``Q`` the sums of outcomes and squared outcomes), and ``n_a``
    includes the prior. Probabilities are per unordered pair; :meth:`sample`
    puts each drawn pair in random order. The rule targets the win-matrix
    intervals; the Bradley-Terry score intervals can need more votes than
    under uniform sampling, as the inverse-probability weights inflate the
    variance (votes needed for both, against uniform sampling, on
    :doc:`the benchmark page </benchmarks/arena>`).

    References
    ----------
    {{chatbot_arena_reference}}

    Examples
    --------
    >>> from sklearn_icml.ranking import ActivePairSampler
    >>> sampler = ActivePairSampler(items=["a", "b", "c"], random_state=0).fit(
    ...     [["a", "b"], ["a", "b"], ["b", "c"]], ["model_a", "model_a", "model_b"])
    >>> pairs, proba = sampler.pair_proba()
    >>> pairs.tolist(), proba.round(3).tolist()
    ([['a', 'b'], ['a', 'c'], ['b', 'c']], [0.145, 0.603, 0.252])
    >>> X_next, p_next = sampler.sample(2)
    >>> X_next.shape
    (2, 2)
    """

    def __init__(self, rule="ci_reduction", *, items=None, prior=1.0, uniform_mix=0.1,
                 tie_labels=DEFAULT_TIE_LABELS, win_labels="auto", random_state=None):
        self.rule = rule
        self.items = items
        self.prior = prior
        self.uniform_mix = uniform_mix
        self.tie_labels = tie_labels
        self.win_labels = win_labels
        self.random_state = random_state

    def __repr__(self):
        return f"{type(self).__name__}(rule={self.rule!r}, prior={self.prior!r}, uniform_mix={self.uniform_mix!r})"

    def fit(self, X=None, y=None):
        """Start from the roster and (optionally) logged battles.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates), default=None
            Logged battles: columns 0 and 1 hold the competitor ids.
        y : array-like of shape (n_battles,), default=None
            Their outcome labels (required with ``X``).

        Returns
        -------
        self : object
            The sampler.
        """
        _check_sampler_params(self.rule, self.items, self.prior, self.uniform_mix, self.tie_labels,
                              self.win_labels, self.random_state)
        roster = np.empty((0, 2), dtype=object)
        if self.items is not None:
            ids = np.asarray(as_numpy(self.items)).reshape(-1)
            roster = np.column_stack([ids, ids])
        if roster.shape[0] == 0 and X is None:
            raise ValueError("ActivePairSampler: give the roster (items=...) or logged battles (X, y).")
        if X is not None:
            X_ids, _ = _battle_arrays(type(self).__name__, X, y)
            if roster.shape[0] and roster.dtype != X_ids.dtype:
                roster, X_ids = roster.astype(object), X_ids.astype(object)
            all_ids = np.concatenate([roster, X_ids]) if roster.shape[0] else X_ids
        else:
            all_ids = roster
        items, _ = encode_ids(all_ids)
        check_ids(type(self).__name__, items, what="X" if self.items is None else "items or X")
        self.items_ = items
        M = len(self.items_)
        if M < 2:
            raise ValueError(f"ActivePairSampler needs at least 2 competitors; got {M}.")
        self.counts_ = np.zeros((M, M))
        self.outcome_sum_ = np.zeros((M, M))
        self.outcome_sq_sum_ = np.zeros((M, M))
        self.random_state_ = check_random_state(self.random_state)
        self._classes = None
        if X is not None:
            self._observe(X, y)
        return self

    def partial_fit(self, X, y):
        """Record new votes (new competitors join the roster).

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles: columns 0 and 1 hold the competitor ids.
        y : array-like of shape (n_battles,)
            Their outcome labels.

        Returns
        -------
        self : object
            The sampler.
        """
        if not hasattr(self, "items_"):
            return self.fit(X, y)
        self._observe(X, y)
        return self

    def _observe(self, X, y):
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name}: the outcomes y of the battles are required.")
        ids, y = _battle_arrays(name, X, y)
        if ids.shape[0] == 0:  # as scikit-learn's partial_fit: no sample is an error, not a silent no-op
            raise ValueError(f"{name}: X holds no battle.")
        classes, _, score = parse_outcomes(name, y, tie_labels=tuple(self.tie_labels), win_labels=self.win_labels,
                                           classes=self._classes)
        self._classes = classes
        codes = lookup_ids(self.items_, ids)
        new = codes < 0
        fresh = np.empty(0, dtype=object)
        if new.any():
            fresh, fresh_codes = factorize(ids[new])
            check_ids(name, fresh)
            codes[new] = len(self.items_) + fresh_codes
        # checked before the state grows: a refused batch leaves the sampler as it was
        check_distinct(name, np.concatenate([self.items_.astype(object), fresh.astype(object)]), codes)
        if len(fresh):
            self.items_ = np.concatenate([self.items_.astype(object), fresh.astype(object)])
            grow = len(fresh)
            for attr in ("counts_", "outcome_sum_", "outcome_sq_sum_"):
                setattr(self, attr, np.pad(getattr(self, attr), ((0, grow), (0, grow))))
        a, b = codes[:, 0], codes[:, 1]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        h = np.where(a < b, score, 1.0 - score)  # outcome for the first competitor of the sorted pair
        M = len(self.items_)
        flat = lo * M + hi
        self.counts_ += np.bincount(flat, minlength=M * M).reshape(M, M)
        self.outcome_sum_ += np.bincount(flat, weights=h, minlength=M * M).reshape(M, M)
        self.outcome_sq_sum_ += np.bincount(flat, weights=h * h, minlength=M * M).reshape(M, M)

    def _proba_matrix(self):
        if not hasattr(self, "items_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first.")
        M = len(self.items_)
        iu = np.triu_indices(M, k=1)
        K = len(iu[0])
        if self.rule == "uniform":
            proba = np.full(K, 1.0 / K)
        else:
            n = self.counts_[iu] + self.prior
            mean = (self.outcome_sum_[iu] + self.prior / 2) / n
            second = (self.outcome_sq_sum_[iu] + self.prior / 2) / n
            var = np.clip(second - mean * mean, 1e-12, None)
            gain = np.sqrt(var / n) - np.sqrt(var / (n + 1))
            proba = gain / gain.sum()
            proba = (1 - self.uniform_mix) * proba + self.uniform_mix / K
        return iu, proba

    def pair_proba(self):
        """Current sampling probability of every unordered pair.

        Returns
        -------
        pairs : ndarray of shape (n_pairs, 2)
            Competitor ids of each pair, in ``items_`` order.
        proba : ndarray of shape (n_pairs,)
            Their sampling probabilities (summing to 1).
        """
        (i, j), proba = self._proba_matrix()
        return np.column_stack([self.items_[i], self.items_[j]]), proba

    def sampling_proba(self, X):
        """Current probability of the pair of each battle, for ``BradleyTerryRanker.fit(sampling_proba=...)``.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles: columns 0 and 1 hold the competitor ids (either order).

        Returns
        -------
        proba : ndarray of shape (n_battles,)
            Probability with which the sampler draws each battle's pair now.
        """
        (iu, ju), proba = self._proba_matrix()
        ids, _ = _battle_arrays(type(self).__name__, X)
        codes = lookup_ids(self.items_, ids)
        if (codes < 0).any() or np.any(codes[:, 0] == codes[:, 1]):
            raise ValueError(f"{type(self).__name__}: X has battles whose pair is not among the sampler's pairs.")
        M = len(self.items_)
        P = np.zeros((M, M))
        P[iu, ju] = proba
        lo, hi = codes.min(axis=1), codes.max(axis=1)
        return P[lo, hi]

    def sample(self, n_samples=1):
        """Draw pairs to compare next (independently, from the current probabilities).

        Parameters
        ----------
        n_samples : int, default=1
            Number of battles to draw.

        Returns
        -------
        X : ndarray of shape (n_samples, 2)
            Competitor ids, each pair in random order.
        proba : ndarray of shape (n_samples,)
            Sampling probability of each drawn pair (for ``sampling_proba``).
        """
        (iu, ju), proba = self._proba_matrix()
        rng = self.random_state_
        k = rng.choice(len(proba), size=int(n_samples), p=proba)
        flip = rng.rand(len(k)) < 0.5
        first = np.where(flip, ju[k], iu[k])
        second = np.where(flip, iu[k], ju[k])
        return np.column_stack([self.items_[first], self.items_[second]]), proba[k]
