"""Anomalous-rater detection: per-vote p-values combined by Fisher's method at random looks (Chatbot Arena 5.1)."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import stats
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ._active import _battle_arrays
from ._battles import DEFAULT_TIE_LABELS, check_distinct, check_ids, encode_ids, factorize, lookup_ids, parse_outcomes


def _detector_params(alpha, n_looks, max_votes, pvalue, tie_labels, win_labels, random_state):
    """Signature whose validation reports bad RaterAnomalyDetector parameters."""


_detector_params.__qualname__ = "RaterAnomalyDetector"
_check_detector_params = validate_params(
    {
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "n_looks": [Interval(Integral, 1, None, closed="left")],
        "max_votes": [Interval(Integral, 1, None, closed="left")],
        "pvalue": [StrOptions({"paper", "randomized"})],
        "tie_labels": ["array-like"],
        "win_labels": [StrOptions({"auto"}), tuple, list],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)(_detector_params)

_VALUES = np.array([0.0, 0.5, 1.0])


@fill_doc
class RaterAnomalyDetector:
    """Flag voters whose votes are unlikely under the vote history (Chatbot Arena, Section 5.1).

    Read more in the :ref:`User Guide <ranking>`.

    Fitted on the history of votes, the detector gives every new vote on a
    pair a p-value against the historical votes on the same pair, and tests
    each voter (group) by combining the p-values of its first ``j`` votes
    with Fisher's method, ``M_j = -2 sum_{i<=j} log p_i``, flagging the voter
    when ``M_j`` exceeds the ``1 - alpha / n_looks`` quantile of
    ``chi2(2 j)`` at any of ``n_looks`` look positions ``j`` drawn at random
    from ``1..max_votes`` for each voter (random so that a voter cannot time
    its anomalous votes; the Bonferroni split keeps the level at ``alpha``).

    Parameters
    ----------
    alpha : float, default=0.1
        Level of the test for each voter.
    n_looks : int, default=5
        Number of random look positions (the paper's 5).
    max_votes : int, default=100
        Looks are drawn from ``1..max_votes`` (the paper's 100).
    pvalue : {"paper", "randomized"}, default="paper"
        ``"paper"``: Eq. 10, ``p = (1 + #{history h >= H}) / (N + 1)``, one
        sided (small only when the vote favours the second competitor of the
        sorted pair more than the history does) and conservative for discrete
        votes. ``"randomized"``: a randomized two-sided conformal p-value with
        score ``|h - mean|`` (mean over the history and the new vote), exactly
        uniform under exchangeability. See Notes.
    tie_labels : array-like, default=("tie", "tie (bothbad)")
        Labels of ``y`` that mean a tie (outcome 1/2).
    win_labels : "auto" or tuple of two labels, default="auto"
        As in :class:`BradleyTerryRanker`.
    random_state : int, RandomState instance or None, default=None
        Seeds the look positions and the randomized p-values.

    Attributes
    ----------
    items_ : ndarray of shape (n_items,)
        Competitors of the history.
    history_counts_ : ndarray of shape (n_items, n_items, 3)
        Historical votes per sorted pair ``(i < j)`` with outcome 0 (first of
        the pair won), 1/2 (tie) and 1 (second won).
    random_state_ : numpy.random.RandomState
        Generator of the looks and randomized p-values.

    See Also
    --------
    BradleyTerryRanker : Ratings from the votes that pass.

    Notes
    -----
    Orientation (the paper's): a pair is ``(m, m')`` with ``m`` before ``m'``
    in the sorted competitors, and the outcome ``H = 1`` when ``m'`` wins.

    The paper's one-sided p-value combined by Fisher has little power on
    binary votes, because a vote for ``m`` gets ``p = 1`` and a vote for
    ``m'`` at best the historical frequency of ``m'`` winning; it is
    conservative. The randomized two-sided p-value is exactly uniform under
    the null, so its false-positive rate is ``alpha``, and it flags voters
    who back either side too often (detection rates of both on :doc:`the
    benchmark page </benchmarks/arena>`). Votes on pairs without history get ``p = 1`` (paper) or a
    uniform draw (randomized). A vote of a competitor against itself has no
    pair: it is refused with a ``ValueError`` naming its row, in the history
    and in new votes, as are ids that are None, NaN or infinite. FastChat's
    code uses an e-value test instead of the paper's Fisher test; it is not
    implemented here.

    References
    ----------
    {{chatbot_arena_reference}}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.ranking import RaterAnomalyDetector
    >>> X_hist = np.array([["a", "b"]] * 50)
    >>> y_hist = np.array(["model_a"] * 45 + ["model_b"] * 5)
    >>> det = RaterAnomalyDetector(pvalue="randomized", random_state=0).fit(X_hist, y_hist)
    >>> X_new = np.array([["a", "b"]] * 40)
    >>> y_new = np.array(["model_b"] * 20 + ["model_a"] * 20)  # user 0 always backs the weaker side
    >>> report = det.test(X_new, y_new, groups=np.repeat([0, 1], 20))
    >>> report["flagged"].tolist()
    [True, False]
    """

    def __init__(self, alpha=0.1, *, n_looks=5, max_votes=100, pvalue="paper", tie_labels=DEFAULT_TIE_LABELS,
                 win_labels="auto", random_state=None):
        self.alpha = alpha
        self.n_looks = n_looks
        self.max_votes = max_votes
        self.pvalue = pvalue
        self.tie_labels = tie_labels
        self.win_labels = win_labels
        self.random_state = random_state

    def __repr__(self):
        return f"{type(self).__name__}(alpha={self.alpha!r}, n_looks={self.n_looks!r}, pvalue={self.pvalue!r})"

    def fit(self, X, y):
        """Store the vote history per pair.

        Parameters
        ----------
        X : array-like of shape (n_votes, 2 + n_covariates)
            Historical battles: columns 0 and 1 hold the competitor ids.
        y : array-like of shape (n_votes,)
            Their outcome labels.

        Returns
        -------
        self : object
            The fitted detector.
        """
        _check_detector_params(self.alpha, self.n_looks, self.max_votes, self.pvalue, self.tie_labels,
                               self.win_labels, self.random_state)
        name = type(self).__name__
        ids, y = _battle_arrays(name, X, y)
        self._classes, _, score = parse_outcomes(name, y, tie_labels=tuple(self.tie_labels),
                                                 win_labels=self.win_labels)
        items, codes = encode_ids(ids)
        check_ids(name, items)
        check_distinct(name, items, codes)
        self.items_ = items
        M = len(self.items_)
        lo, hi, h = self._oriented(codes, score)
        counts = np.zeros((M * M, 3))
        for k, v in enumerate(_VALUES):
            counts[:, k] = np.bincount((lo * M + hi)[h == v], minlength=M * M)
        self.history_counts_ = counts.reshape(M, M, 3)
        self.random_state_ = check_random_state(self.random_state)
        return self

    @staticmethod
    def _oriented(codes, score):
        a, b = codes[:, 0], codes[:, 1]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        # H = 1 when the second competitor of the sorted pair wins
        h = np.where(a < b, 1.0 - score, score)
        return lo, hi, h

    def vote_pvalues(self, X, y):
        """Per-vote p-values of new votes against the history of their pairs.

        Parameters
        ----------
        X : array-like of shape (n_votes, 2 + n_covariates)
            New battles: columns 0 and 1 hold the competitor ids.
        y : array-like of shape (n_votes,)
            Their outcome labels.

        Returns
        -------
        pvalues : ndarray of shape (n_votes,)
            Per-vote p-values (random with ``pvalue="randomized"``).
        """
        if not hasattr(self, "history_counts_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first.")
        name = type(self).__name__
        ids, y = _battle_arrays(name, X, y)
        _, _, score = parse_outcomes(name, y, tie_labels=tuple(self.tie_labels), win_labels=self.win_labels,
                                     classes=self._classes)
        codes = lookup_ids(self.items_, ids)
        check_ids(name, ids[codes < 0])
        if len(ids):
            check_distinct(name, *encode_ids(ids))
        known = (codes >= 0).all(axis=1)
        lo, hi, h = self._oriented(np.where(codes < 0, 0, codes), score)
        counts = np.where(known[:, None], self.history_counts_[lo, hi], 0.0)
        N = counts.sum(axis=1)
        if self.pvalue == "paper":
            at_least = (counts * (_VALUES[None, :] >= h[:, None])).sum(axis=1)
            return np.where(N > 0, (1.0 + at_least) / (N + 1.0), 1.0)
        u = self.random_state_.uniform(size=len(h))
        mean = (counts @ _VALUES + h) / (N + 1.0)
        s_hist = np.abs(_VALUES[None, :] - mean[:, None])
        s_new = np.abs(h - mean)[:, None]
        greater = (counts * (s_hist > s_new + 1e-12)).sum(axis=1)
        equal = (counts * (np.abs(s_hist - s_new) <= 1e-12)).sum(axis=1)
        return (greater + u * (equal + 1.0)) / (N + 1.0)

    def test(self, X, y, groups):
        """Test each voter (group of votes, in row order) for anomalous voting.

        Parameters
        ----------
        X : array-like of shape (n_votes, 2 + n_covariates)
            New battles: columns 0 and 1 hold the competitor ids.
        y : array-like of shape (n_votes,)
            Their outcome labels.
        groups : array-like of shape (n_votes,)
            Voter id of each vote.

        Returns
        -------
        report : numpy.recarray of shape (n_groups,)
            Fields ``group``, ``n_votes``, ``n_looks`` (looks at or before the
            voter's last vote), ``flagged``, ``look`` (vote count at the first
            look that flagged, 0 if none), ``statistic`` (Fisher ``M_j`` at that
            look, or at the last look used) and ``threshold`` (its critical value).
            Empty (no rows), with a warning, when there are no votes.
        """
        p = self.vote_pvalues(X, y)
        groups = np.asarray(groups).reshape(-1)
        if groups.shape != p.shape:
            raise ValueError(f"{type(self).__name__}: groups must hold one voter id per vote; got shape "
                             f"{groups.shape} for {len(p)} votes.")
        names, g = factorize(groups)
        G = len(names)
        if G == 0:  # no votes: an empty report, said
            warnings.warn(f"{type(self).__name__}.test: no votes to test; the report is empty.", UserWarning,
                          stacklevel=2)
            return np.rec.fromarrays(
                [names, np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=bool),
                 np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0)],
                names=["group", "n_votes", "n_looks", "flagged", "look", "statistic", "threshold"])
        order = np.argsort(g, kind="stable")
        fisher = np.cumsum(-2.0 * np.log(np.clip(p[order], 1e-300, None)))
        n_votes = np.bincount(g, minlength=G)
        start = np.concatenate([[0], np.cumsum(n_votes)[:-1]])
        before = np.where(start > 0, fisher[np.maximum(start - 1, 0)], 0.0)
        rng = self.random_state_
        n_looks = min(self.n_looks, self.max_votes)
        looks = np.sort(np.stack([rng.choice(np.arange(1, self.max_votes + 1), n_looks, replace=False)
                                  for _ in range(G)]), axis=1)
        used = looks <= n_votes[:, None]
        pos = np.clip(start[:, None] + looks - 1, 0, len(fisher) - 1)
        stat = fisher[pos] - before[:, None]
        threshold = stats.chi2.ppf(1 - self.alpha / self.n_looks, 2 * looks)
        hit = used & (stat >= threshold)
        flagged = hit.any(axis=1)
        first = np.argmax(hit, axis=1)
        last = np.maximum(used.sum(axis=1) - 1, 0)
        at = np.where(flagged, first, last)
        rows = np.arange(G)
        any_used = used.any(axis=1)
        return np.rec.fromarrays(
            [names, n_votes, used.sum(axis=1), flagged, np.where(flagged, looks[rows, first], 0),
             np.where(any_used, stat[rows, at], np.nan), np.where(any_used, threshold[rows, at], np.nan)],
            names=["group", "n_votes", "n_looks", "flagged", "look", "statistic", "threshold"])
