"""Bradley-Terry ranking from pairwise votes (Chatbot Arena, Chiang et al., ICML 2024)."""

import contextlib
import math
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs, parallel_config
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._classifier import BinaryDecisionMixin
from ..utils._dask import any_dask, dask_client
from ..utils._docstrings import fill_doc
from ..utils._random import draw_seeds
from ..utils._sklearn_private import Interval, StrOptions, _check_sample_weight, _fit_context
from ..utils._torch import as_numpy
from . import _bt_solver
from ._battles import (
    DEFAULT_TIE_LABELS,
    BattleInputMixin,
    _is_in,
    _sort_keys,
    as_battle_array,
    check_distinct,
    check_ids,
    encode_ids,
    factorize,
    lookup_ids,
    parse_outcomes,
    split_battles,
)
from ._ties import davidson_log_proba, fit_davidson_tie

#: Penalty-held ratings further than this from the mean (Elo points) trigger a warning.
_EXTREME_ELO = 1000.0


def _bootstrap_backend(dask_input):
    """joblib's Dask backend for the bootstrap fits when the battles came as Dask collections on a cluster."""
    if dask_input and dask_client() is not None:
        return parallel_config(backend="dask")
    return contextlib.nullcontext()


def _check_unknown(name, codes, ids, handle_unknown):
    unknown = codes < 0
    if not unknown.any():
        return
    sample = list(dict.fromkeys(ids[unknown].tolist()))[:5]
    msg = (f"{name}: {int(unknown.sum())} competitor id(s) in X were not seen in fit (e.g. {sample!r}); "
           "they are scored as an average competitor.")
    if handle_unknown == "error":
        raise ValueError(msg.replace("they are scored as an average competitor.",
                                     "set handle_unknown='average' to score them as an average competitor."))
    if handle_unknown == "warn":
        warnings.warn(msg, UserWarning, stacklevel=3)


@fill_doc
class BradleyTerryRanker(BattleInputMixin, BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """Bradley-Terry ratings from pairwise battles, with sandwich or bootstrap intervals.

    Read more in the :ref:`User Guide <ranking>`.

    The statistical core of Chatbot Arena: each battle between a first and a
    second competitor is a logistic-regression observation,
    ``P(first wins) = 1 / (1 + exp(-(xi_first - xi_second + z . gamma)))``, where
    ``xi`` are the competitors' scores and ``z`` optional battle covariates
    (the paper's style control). The scores are fitted by maximum likelihood on
    the counts of distinct battles, so a million battles cost what their
    distinct rows cost; they are reported on the Elo scale, with robust
    (sandwich) or bootstrap confidence intervals, optional simultaneous
    intervals, and the paper's approximate ranks.

    It is a classifier over battles: ``predict_proba`` gives the probability
    of each outcome class, so it scores with ``neg_log_loss``,
    ``roc_auc_ovr`` or ``accuracy`` and tunes with ``GridSearchCV`` like any
    scikit-learn classifier. Without ties in ``y`` the classes are the two
    decisive outcomes; with ties (``ties="half"``) every tie label of ``y`` is
    a class too, its probability given by Davidson's tie model [2]_ on the
    fitted ratings (see Notes).

    Parameters
    ----------
    alpha : float, default=0.0
        L2 penalty ``alpha * ||theta||^2`` added to the summed negative
        log-likelihood (the convention of ``choix.opt_pairwise``), on the scores
        and the covariate coefficients. ``0`` is the paper's (and FastChat's)
        maximum-likelihood estimate, which raises a ``ValueError`` when it does
        not exist (disconnected comparison graph, a competitor that never loses
        or never wins); any ``alpha > 0`` gives finite ratings.
    ties : {"half", "drop"}, default="half"
        A tie counts as half a win for each side (FastChat, evalica), or is
        left out.
    tie_labels : array-like, default=("tie", "tie (bothbad)")
        Labels of ``y`` that mean a tie.
    win_labels : "auto" or tuple of two labels, default="auto"
        ``(label meaning the first competitor won, label meaning the second
        won)``. ``"auto"``: FastChat's ``("model_a", "model_b")`` when ``y`` uses
        them, otherwise the larger of the two decisive labels of ``y`` (the
        positive class ``classes_[1]``, e.g. ``1`` of ``{0, 1}``) means the
        first competitor won. Give it explicitly for data where ``y`` has a
        single class, e.g. ``(winner, loser)`` rows.
    scale : float, default=400.0
        Elo scale: a rating gap of ``scale`` means odds of ``base`` to one.
    base : float, default=10.0
        Elo base.
    init_rating : float, default=1000.0
        Mean rating (the rating of an average competitor) when ``anchor`` is None.
    anchor : tuple (competitor id, rating) or None, default=None
        Shift the ratings so that this competitor has this rating (FastChat pins
        ``mixtral-8x7b-instruct-v0.1`` at 1114). Intervals then describe the
        gap to the anchor, which has a zero-width interval.
    ci_method : {"sandwich", "bootstrap", "bootstrap_pivot"} or None, default="sandwich"
        Confidence intervals: the Huber-White sandwich covariance the paper
        deploys, the percentile bootstrap (FastChat's leaderboard), the pivot
        bootstrap, or none. The bootstrap draws multinomial counts over the
        distinct battles (equivalent to resampling battles with replacement);
        see ``bootstrap_resample``.
    confidence_level : float, default=0.95
        Level of the intervals.
    simultaneous : bool, default=False
        If True, intervals hold for all competitors at once: the projection of
        the chi-square confidence ellipsoid, ``+- sqrt(chi2_{level, M-1}) * se``
        (paper Section 5), with the sandwich covariance or the bootstrap
        covariance. The approximate ranks are then uniformly valid.
    n_bootstrap : int, default=100
        Bootstrap resamples (FastChat's default).
    bootstrap_resample : {"counts", "battles"}, default="counts"
        What the bootstrap resamples. ``"counts"``: multinomial draws over the
        aggregated counts of the distinct battles, a battle of weight ``k``
        counting as ``k`` battles. ``"battles"``: the rows of the battle log,
        drawn uniformly with replacement, each keeping its weight (a row of
        weight ``k`` is drawn as a unit; the same as ``"counts"`` in
        distribution when every weight is 1). On a Dask collection the rows
        are resampled where they live, by independent Poisson(1) counts per
        row drawn in each partition (see Notes).
    handle_unknown : {"average", "warn", "error"}, default="average"
        A competitor id not seen in fit, at prediction time: scored as an
        average competitor (score equal to the mean score), the same with a
        warning, or a ``ValueError``.
    tol : float, default=1e-10
        Newton stops when no parameter moves more than ``tol``.
    max_iter : int, default=100
        Maximum Newton iterations.
    n_jobs : int or None, default=None
        Parallel bootstrap fits through :class:`sklearn.utils.parallel.Parallel`
        (an outer joblib backend, e.g. Dask, takes them over).
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap.
    verbose : int, default=0
        Print the Newton iterations when positive.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The outcome labels, sorted: the two decisive ones, and with
        ``ties="half"`` the tie labels that occur in ``y``; the columns of
        ``predict_proba`` follow them.
    tie_classes_ : ndarray of shape (n_tie_classes,)
        The tie labels among ``classes_`` (empty without ties in the fit).
    tie_shares_ : ndarray of shape (n_tie_classes,)
        Share of the (weighted) ties carried by each tie label.
    tie_log_nu_ : float or None
        ``log(nu)`` of Davidson's tie model, by maximum likelihood at the
        fitted ratings; None without ties.
    first_wins_label_ : object
        The element of ``classes_`` that means the first competitor won.
    items_ : ndarray of shape (n_items,)
        The competitors (ids from columns 0 and 1 of ``X``, rows with positive
        weight), sorted.
    scores_ : ndarray of shape (n_items,)
        Scores on the natural (logit) scale: centred to mean 0, or 0 for the
        anchor competitor.
    ratings_ : ndarray of shape (n_items,)
        ``scale / ln(base) * scores_ + init_rating`` (or + the anchor's rating).
    covariate_coef_ : ndarray of shape (n_covariates,)
        Coefficients of the battle covariates (logit scale).
    covariance_ : ndarray of shape (n_items + n_covariates, n_items + n_covariates)
        Sandwich covariance of ``(scores_, covariate_coef_)`` (logit scale).
    rating_intervals_ : ndarray of shape (n_items, 2)
        Lower and upper confidence bounds of ``ratings_`` (NaN when
        ``ci_method=None``).
    ranks_ : ndarray of shape (n_items,)
        Approximate ranks, ``1 + #{other competitors whose lower bound exceeds
        this one's upper bound}`` (1 = best).
    bootstrap_ratings_ : ndarray of shape (n_bootstrap, n_items) or None
        Ratings of the bootstrap fits (NaN rows where the resample had no
        finite maximum-likelihood estimate); None without bootstrap.
    n_battles_ : ndarray of shape (n_items,)
        Weighted number of battles each competitor took part in.
    mle_exists_ : bool
        Whether the comparison graph of the fitted battles lets the unpenalized
        maximum-likelihood ratings exist (strongly connected; covariates may
        still separate the outcomes). With ``alpha > 0`` they may not exist,
        and the penalty holds the ratings finite.
    n_iter_ : int
        Newton iterations of the full-data fit.
    n_features_in_ : int
        Number of columns of ``X`` (2 + number of covariates).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when ``X`` was a DataFrame with string column names.

    See Also
    --------
    EloRater : Online Elo ratings, the leaderboard the paper replaced.
    ActivePairSampler : Chooses the next pairs to compare (paper Eq. 9) and
        gives the sampling probabilities for ``sampling_proba``.
    RaterAnomalyDetector : Flags voters whose votes are unlikely under the history.

    Notes
    -----
    Data contract: ``X`` has shape ``(n_battles, 2 + p)``; columns 0 and 1 are
    competitor ids of any hashable type (ints, floats, strings; an object
    column of mixed types works, unhashable ids are matched by their repr),
    compared for equality only, and the columns after them are numeric battle
    covariates entering the logit linearly (e.g. differences in answer length
    for style control; oriented first minus second). Ids must not be None,
    NaN or infinite (``ValueError``). A battle needs two different
    competitors: a row that pits a competitor against itself is no
    comparison (its logit does not depend on the scores) and is refused with
    a ``ValueError`` naming the row.
    ``y`` holds outcome
    labels, see ``win_labels`` and ``tie_labels``.

    Estimation: damped Newton on the distinct battles; the shift of the scores
    is fixed by ``sum(scores) = 0`` (the paper fixes ``xi_1 = 0``; only
    differences matter). The Newton system is dense, so memory grows as the
    square of the number of competitors (fine up to a few thousand). The
    paper's inverse-sampling-probability reweighting (Eq. 7) is
    ``fit(..., sampling_proba=P)``: battle ``t`` gets weight
    ``1 / P_t`` (normalised to mean 1), which makes the estimand the
    Bradley-Terry projection under uniform pair sampling even when pairs were
    sampled actively and the model is misspecified. ``sample_weight`` is a
    frequency weight (weight k is k identical battles); the sandwich meat uses
    ``frequency * (1/P)^2``.

    Assumptions written here because the paper leaves them open: ties count as
    half a win in the likelihood of the ratings and in the sandwich meat
    (FastChat's convention; arena-rank does the same). A tie is nonetheless an
    outcome of its own for prediction: with ties in ``y`` (``ties="half"``),
    :meth:`predict_proba` follows Davidson's model [2]_, ``P(first wins) :
    P(second wins) : P(tie) = exp(d / 2) : exp(-d / 2) : nu`` with ``d`` the
    Bradley-Terry logit of the ratings (so that without ties it is the
    logistic function of ``d``), ``nu`` fitted by maximum likelihood given the
    ratings, and ``P(tie)`` split among several tie labels in proportion to
    their weighted counts; :meth:`predict` is the most probable class. The sandwich uses the uncentred
    score outer products; the bootstrap keeps the point estimate of the full
    fit as the rating (never the bootstrap median) and bootstrap resamples
    whose MLE does not exist (``alpha=0``) are left out with a warning; the
    simultaneous bootstrap interval uses the bootstrap covariance in the
    chi-square projection. With ``bootstrap_resample="battles"``, the rows
    dropped before the fit (zero weight, ties with ``ties="drop"``) are not
    resampled. With ``alpha > 0`` and no finite MLE, a warning is
    raised when a penalty-held rating lies more than 1000 Elo points from the
    mean.

    Dask collections: ``fit`` takes ``X`` (and ``y``, ``sample_weight``,
    ``sampling_proba``) as ``dask.array.Array`` or ``dask.dataframe.DataFrame``
    / ``Series`` (the ``distributed`` extra). Each block is reduced where it
    lives to its distinct battles with summed weights, the blocks' tables are
    merged up a tree, and the Newton fit, the sandwich and the intervals run on
    the merged table on the client: the ratings equal the in-memory ones.
    Without covariates the table has at most ``3 * n_items**2`` rows whatever
    the number of battles; continuous covariates or sampling probabilities
    make most battles distinct, and the table then grows with the data. With
    an active ``distributed.Client``, the bootstrap resamples (multinomial
    draws over that table, the same as resampling battles) run on the workers
    through joblib's Dask backend. With ``bootstrap_resample="battles"`` the
    resamples of the rows are drawn in the one pass over the partitions: every
    row of every partition gets an independent Poisson(1) count per resample
    (the Poisson bootstrap, the standard distributed form of the multinomial
    resample: the resample size is Poisson(n) instead of exactly n, which
    changes the intervals by O(1/n); an assumption, as the paper's bootstrap
    resamples in memory). The rows of a partition that share a distinct battle
    and a weight are drawn at once as one Poisson(count) draw, the same
    distribution as the sum of their Poisson(1) counts. The draws of a
    partition are seeded by ``random_state`` and the partition's position, so
    the same seed and the same partitioning give the same intervals. Each
    partition then sends ``n_bootstrap`` weights per distinct battle, and the
    refits run on the workers as above. See :ref:`scaling_out`.

    References
    ----------
    {{chatbot_arena_reference}}
    .. [2] R. R. Davidson, "On extending the Bradley-Terry model to
       accommodate ties in paired comparison experiments", Journal of the
       American Statistical Association 65(329), 317-328, 1970.

    Examples
    --------
    >>> from sklearn_icml.ranking import BradleyTerryRanker
    >>> X = [["a", "b"], ["b", "c"], ["c", "a"], ["a", "c"], ["b", "a"], ["c", "b"]]
    >>> y = ["model_a", "model_a", "model_b", "model_a", "tie", "model_a"]
    >>> ranker = BradleyTerryRanker().fit(X, y)
    >>> [str(row["item"]) for row in ranker.leaderboard()]
    ['a', 'b', 'c']
    >>> ranker.predict([["a", "c"]])
    array(['model_a'], dtype='<U7')
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "ties": [StrOptions({"half", "drop"})],
        "tie_labels": ["array-like"],
        "win_labels": [StrOptions({"auto"}), tuple, list],
        "scale": [Interval(Real, 0, None, closed="neither")],
        "base": [Interval(Real, 1, None, closed="neither")],
        "init_rating": [Real],
        "anchor": [tuple, None],
        "ci_method": [StrOptions({"sandwich", "bootstrap", "bootstrap_pivot"}), None],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "simultaneous": ["boolean"],
        "n_bootstrap": [Interval(Integral, 2, None, closed="left")],
        "bootstrap_resample": [StrOptions({"counts", "battles"})],
        "handle_unknown": [StrOptions({"average", "warn", "error"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, alpha=0.0, *, ties="half", tie_labels=DEFAULT_TIE_LABELS, win_labels="auto", scale=400.0,
                 base=10.0, init_rating=1000.0, anchor=None, ci_method="sandwich", confidence_level=0.95,
                 simultaneous=False, n_bootstrap=100, bootstrap_resample="counts", handle_unknown="average",
                 tol=1e-10, max_iter=100, n_jobs=None, random_state=None, verbose=0):
        self.alpha = alpha
        self.ties = ties
        self.tie_labels = tie_labels
        self.win_labels = win_labels
        self.scale = scale
        self.base = base
        self.init_rating = init_rating
        self.anchor = anchor
        self.ci_method = ci_method
        self.confidence_level = confidence_level
        self.simultaneous = simultaneous
        self.n_bootstrap = n_bootstrap
        self.bootstrap_resample = bootstrap_resample
        self.handle_unknown = handle_unknown
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, sampling_proba=None):
        """Fit the ratings (and their intervals) on battles.

        Parameters
        ----------
        X : array-like or Dask collection of shape (n_battles, 2 + n_covariates)
            Columns 0 and 1: ids of the first and second competitor; further
            columns: numeric battle covariates. A ``dask.array.Array`` or
            ``dask.dataframe.DataFrame`` is reduced block by block (see Notes).
        y : array-like or Dask collection of shape (n_battles,)
            Outcome labels (see ``win_labels`` and ``tie_labels``).
        sample_weight : array-like or Dask collection of shape (n_battles,), default=None
            Frequency weights (weight k is the same as k identical battles).
        sampling_proba : array-like or Dask collection of shape (n_battles,), default=None
            Probability with which each battle's pair was sampled (e.g. from
            :meth:`ActivePairSampler.sampling_proba`); the battles are then
            weighted by ``1 / sampling_proba`` (paper Eq. 7).

        Returns
        -------
        self : object
            Fitted ranker.
        """
        name = type(self).__name__
        dask_input = any_dask(X, y, sample_weight, sampling_proba)
        bootstrap = self.ci_method in ("bootstrap", "bootstrap_pivot")
        seeds = draw_seeds(self.random_state, self.n_bootstrap) if bootstrap else None
        rows = bootstrap and self.bootstrap_resample == "battles"
        if dask_input:
            self.items_, buckets, self.n_battles_, resamples = self._reduce_dask(
                X, y, sample_weight, sampling_proba, seeds if rows else None)
        else:
            self.items_, buckets, self.n_battles_, resamples = self._reduce(X, y, sample_weight, sampling_proba,
                                                                            rows)
        M = len(self.items_)
        problem = _bt_solver.mle_problem(buckets, M, self.items_)
        self.mle_exists_ = problem is None
        if problem is not None and self.alpha == 0:
            raise ValueError(f"{name} with alpha=0: {problem}. The maximum-likelihood ratings do not exist; set "
                             "alpha > 0 for finite penalized ratings, or remove these battles.")
        theta, self.n_iter_, converged = _bt_solver.newton(
            buckets.a, buckets.b, buckets.y, buckets.loss_weight(), buckets.Z, M, self.alpha, tol=self.tol,
            max_iter=self.max_iter, verbose=self.verbose, name=name)
        if not converged:
            warnings.warn(f"{name}: Newton did not converge in max_iter={self.max_iter} iterations; increase "
                          "max_iter or alpha (the covariates may separate the outcomes).", ConvergenceWarning,
                          stacklevel=2)
        factor = self.scale / math.log(self.base)
        if problem is not None:
            extreme = np.abs(theta[:M]) * factor > _EXTREME_ELO
            if extreme.any():
                warnings.warn(
                    f"{name}: {problem}; with alpha={self.alpha} the penalty alone holds the ratings of "
                    f"{self.items_[extreme][:5].tolist()!r} finite, more than {_EXTREME_ELO:g} Elo points from the "
                    "mean. Increase alpha or collect more battles.", UserWarning, stacklevel=2)
        V = _bt_solver.sandwich(theta, buckets, M, self.alpha)
        shift, origin = self._anchor_shift(theta[:M])
        A = np.eye(len(theta))
        if self.anchor is not None:
            A[:M, origin] -= 1.0
        self.covariance_ = A @ V @ A.T
        self.scores_ = theta[:M] - shift
        self.covariate_coef_ = theta[M:].copy()
        base_rating = self.init_rating if self.anchor is None else float(self.anchor[1])
        self.ratings_ = factor * self.scores_ + base_rating
        self._fit_ties(buckets, theta, M)
        self.bootstrap_ratings_ = None
        if bootstrap:
            with _bootstrap_backend(dask_input):
                self.bootstrap_ratings_ = self._bootstrap(seeds, resamples, buckets, theta, M, origin, factor,
                                                          base_rating)
        self.rating_intervals_ = self._intervals(M, factor)
        lower, upper = self.rating_intervals_[:, 0], self.rating_intervals_[:, 1]
        self.ranks_ = 1 + (lower[None, :] > upper[:, None]).sum(axis=1)
        return self

    def _reduce(self, X, y, sample_weight, sampling_proba, rows=False):
        """In-memory battles to (competitors, buckets, per-competitor battle weights, row groups); sets the classes.

        With ``rows``, the kept rows grouped by (bucket, weight) with their counts, for the bootstrap of rows.
        """
        name = type(self).__name__
        # ids (check_ids) and covariates (split_battles) get their own NaN/inf checks, with clearer messages
        X, y = validate_data(self, as_battle_array(as_numpy(X)), as_numpy(y), dtype=None, ensure_min_features=2,
                             ensure_all_finite=False)
        ids, Z = split_battles(name, X)
        self.classes_, self.first_wins_label_, score = parse_outcomes(
            name, y, tie_labels=tuple(self.tie_labels), win_labels=self.win_labels)
        freq = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        y_labels = np.asarray(y).reshape(-1)
        ipw = None
        if sampling_proba is not None:
            prob = np.asarray(as_numpy(sampling_proba), dtype=np.float64).reshape(-1)
            if prob.shape != (X.shape[0],) or not np.all((prob > 0) & (prob <= 1)):
                raise ValueError(f"{name}: sampling_proba must hold one probability in (0, 1] per battle; got "
                                 f"shape {prob.shape}, range [{prob.min() if prob.size else np.nan}, "
                                 f"{prob.max() if prob.size else np.nan}].")
            ipw = 1.0 / prob
        keep = freq > 0
        if self.ties == "drop":
            keep &= score != 0.5
        if not keep.any():
            raise ValueError(f"{name}: no battle is left to fit (all weights are zero or all battles are ties "
                             "with ties='drop').")
        if not keep.all():
            ids, Z, score, freq = ids[keep], Z[keep], score[keep], freq[keep]
            ipw = None if ipw is None else ipw[keep]
        if ipw is not None:
            ipw = ipw / (np.dot(freq, ipw) / freq.sum())
        tied = score == 0.5
        w_tied = (freq if ipw is None else freq * ipw)[tied]
        labels_tied = y_labels[keep][tied] if not keep.all() else y_labels[tied]
        tie_labels, tie_inv = factorize(labels_tied)
        tie_w = np.bincount(tie_inv, weights=w_tied, minlength=len(tie_labels))
        self._tie_weights = {lab: float(w) for lab, w in zip(tie_labels.tolist(), tie_w) if w > 0}
        items, codes = encode_ids(ids)
        check_ids(name, items)
        check_distinct(name, items, codes, rows=None if keep.all() else np.flatnonzero(keep))
        M = len(items)
        buckets, inv = _bt_solver.aggregate(codes, score, Z, freq, ipw, M, return_inverse=True)
        n_battles = (np.bincount(codes[:, 0], weights=freq, minlength=M)
                     + np.bincount(codes[:, 1], weights=freq, minlength=M))
        groups = None
        if rows:
            if np.all(freq == freq[0]):  # unweighted logs: one group per bucket
                count = np.bincount(inv, minlength=len(buckets)).astype(np.float64)
                groups = (np.arange(len(buckets)), np.full(len(buckets), freq[0]), count)
            else:
                pairs, count = np.unique(np.column_stack([inv.astype(np.float64), freq]), axis=0,
                                         return_counts=True)
                groups = (pairs[:, 0].astype(np.intp), pairs[:, 1], count.astype(np.float64))
        return items, buckets, n_battles, groups

    def _reduce_dask(self, X, y, sample_weight, sampling_proba, seeds=None):
        """The same reduction for Dask collections, block by block (see ``_bt_dask``).

        With ``seeds``, the same pass draws the Poisson bootstrap of the rows: the fourth value returned is
        then the bucket frequencies of every resample, shape ``(n_bootstrap, n_buckets)``.
        """
        from . import _bt_dask

        items, self.classes_, self.first_wins_label_, buckets, n_battles, freqs = _bt_dask.prepare_dask(
            self, X, y, sample_weight, sampling_proba, seeds=seeds)
        self.n_features_in_ = len(X.columns) if hasattr(X, "columns") else int(X.shape[1])
        names = _bt_dask.feature_names(X)
        if names is None:
            self.__dict__.pop("feature_names_in_", None)
        else:
            self.feature_names_in_ = names
        return items, buckets, n_battles, freqs

    def _fit_ties(self, buckets, theta, M):
        """Davidson's tie parameter at the fitted ratings, and the classes with the tie labels of ``y``."""
        self._decisive_classes = self.classes_
        tied = buckets.y == 0.5
        weights = getattr(self, "_tie_weights", {})
        if not tied.any() or not weights:
            self.tie_classes_, self.tie_shares_, self.tie_log_nu_ = self.classes_[:0], np.zeros(0), None
            return
        self.tie_log_nu_ = fit_davidson_tie(_bt_solver._eta(theta, buckets.a, buckets.b, buckets.Z, M), tied,
                                            buckets.loss_weight())
        labels = list(weights)
        total = sum(weights.values())
        self.tie_shares_ = np.array([weights[lab] / total for lab in labels])
        every = _sort_keys(list(self._decisive_classes.tolist()) + labels)
        if all(isinstance(v, str) for v in every) or all(isinstance(v, (int, float, np.number)) for v in every):
            self.classes_ = np.asarray(every)
            self.tie_classes_ = np.asarray(labels)
        else:
            self.classes_, self.tie_classes_ = np.empty(len(every), dtype=object), np.empty(len(labels), dtype=object)
            self.classes_[:], self.tie_classes_[:] = every, labels

    def _anchor_shift(self, xi):
        if self.anchor is None:
            return 0.0, None
        if len(self.anchor) != 2:
            raise ValueError(f"{type(self).__name__}: anchor must be a pair (competitor id, rating); "
                             f"got {self.anchor!r}.")
        ids = np.empty((1, 2), dtype=object)
        ids[0, :] = [self.anchor[0], self.anchor[0]]
        code = lookup_ids(self.items_, ids)[0, 0]
        if code < 0:
            raise ValueError(f"{type(self).__name__}: the anchor competitor {self.anchor[0]!r} is not among the "
                             "competitors of the fitted battles.")
        return xi[code], code

    def _bootstrap(self, seeds, resamples, buckets, theta, M, origin, factor, base_rating):
        """Refits on the resamples: drawn per chunk of seeds (multinomial over the buckets, or over the row
        groups ``resamples`` as a tuple), or given as bucket frequencies (``resamples`` an array: Dask rows)."""
        n_chunks = min(self.n_bootstrap, max(1, effective_n_jobs(self.n_jobs)))
        check = self.alpha == 0
        if isinstance(resamples, np.ndarray):
            tasks = (delayed(_bt_solver.refit_chunk)(part, buckets, M, self.alpha, theta, self.tol, self.max_iter,
                                                     check) for part in np.array_split(resamples, n_chunks))
        else:
            n_draws = (max(1, int(round(buckets.freq.sum()))) if resamples is None
                       else int(round(resamples[2].sum())))
            tasks = (delayed(_bt_solver.bootstrap_chunk)(chunk, buckets, M, n_draws, self.alpha, theta, self.tol,
                                                         self.max_iter, check, rows=resamples)
                     for chunk in np.array_split(seeds, n_chunks))
        parts = Parallel(n_jobs=self.n_jobs)(tasks)
        boot = np.vstack(parts)[:, :M]
        if origin is not None:
            boot = boot - boot[:, [origin]]
        n_bad = int(np.isnan(boot[:, 0]).sum())
        if n_bad:
            warnings.warn(f"{type(self).__name__}: {n_bad} of {self.n_bootstrap} bootstrap resamples had no finite "
                          "maximum-likelihood ratings (a competitor without a win or a loss in the resample) and "
                          "were left out of the intervals; consider alpha > 0.", UserWarning, stacklevel=2)
        return factor * boot + base_rating

    def _intervals(self, M, factor):
        level = self.confidence_level
        out = np.full((M, 2), np.nan)
        if self.ci_method is None:
            return out
        if self.simultaneous:
            q = math.sqrt(stats.chi2.ppf(level, max(M - 1, 1)))
        else:
            q = stats.norm.ppf(0.5 + level / 2)
        if self.ci_method == "sandwich":
            half = q * factor * np.sqrt(np.clip(np.diag(self.covariance_)[:M], 0, None))
            return np.column_stack([self.ratings_ - half, self.ratings_ + half])
        boot = self.bootstrap_ratings_
        ok = ~np.isnan(boot[:, 0])
        if ok.sum() < 2:
            return out
        boot = boot[ok]
        if self.simultaneous:
            half = q * boot.std(axis=0, ddof=1)
            return np.column_stack([self.ratings_ - half, self.ratings_ + half])
        lo, hi = np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2], axis=0)
        if self.ci_method == "bootstrap_pivot":
            lo, hi = 2 * self.ratings_ - hi, 2 * self.ratings_ - lo
        return np.column_stack([lo, hi])

    # -------------------------------------------------------------- predict
    def decision_function(self, X):
        """Bradley-Terry logit of the larger decisive class for each battle.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles, as in :meth:`fit`.

        Returns
        -------
        decision : ndarray of shape (n_battles,)
            ``scores[first] - scores[second] + covariates . covariate_coef_``,
            negated when the larger of the two decisive labels (``classes_[1]``
            without ties) means that the second competitor won.
        """
        check_is_fitted(self)
        X = validate_data(self, as_battle_array(as_numpy(X)), reset=False, dtype=None, ensure_all_finite=False)
        ids, Z = split_battles(type(self).__name__, X)
        codes = lookup_ids(self.items_, ids)
        check_ids(type(self).__name__, ids[codes < 0])
        _check_unknown(type(self).__name__, codes, ids, self.handle_unknown)
        xi = np.append(self.scores_, self.scores_.mean())
        eta = xi[codes[:, 0]] - xi[codes[:, 1]]
        if Z.shape[1]:
            eta = eta + Z @ self.covariate_coef_
        return eta if _is_in(self.first_wins_label_, [self._decisive[1]]) else -eta

    @property
    def _decisive(self):
        return getattr(self, "_decisive_classes", self.classes_)

    def predict_proba(self, X):
        """Probability of each outcome class.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles, as in :meth:`fit`.

        Returns
        -------
        proba : ndarray of shape (n_battles, n_classes)
            Columns follow ``classes_``. Without ties in the fit, column 1 is
            the logistic function of :meth:`decision_function`; with ties,
            Davidson's probabilities (see Notes), the tie probability split
            among the tie classes by ``tie_shares_``.
        """
        check_is_fitted(self)
        decision = self.decision_function(X)
        if self.tie_log_nu_ is None:
            return self._binary_proba(decision)
        first = self.first_wins_label_
        d_first = decision if _is_in(first, [self._decisive[1]]) else -decision
        p = np.exp(davidson_log_proba(d_first, self.tie_log_nu_))
        second = self._decisive[0] if _is_in(first, [self._decisive[1]]) else self._decisive[1]
        out = np.zeros((len(decision), len(self.classes_)))
        column = {i: lab for i, lab in enumerate(self.classes_.tolist())}
        for i, lab in column.items():
            if _is_in(lab, [first]):
                out[:, i] = p[:, 0]
            elif _is_in(lab, [second]):
                out[:, i] = p[:, 1]
            else:
                share = self.tie_shares_[[_is_in(lab, [t]) for t in self.tie_classes_.tolist()]].sum()
                out[:, i] = p[:, 2] * share
        return out

    def _binary_proba(self, decision):
        p = self._decision_to_proba(decision)
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """The most probable outcome of each battle.

        Parameters
        ----------
        X : array-like of shape (n_battles, 2 + n_covariates)
            Battles, as in :meth:`fit`.

        Returns
        -------
        y_pred : ndarray of shape (n_battles,)
            The column of ``classes_`` with the largest :meth:`predict_proba`
            (without ties: the sign of :meth:`decision_function`).
        """
        check_is_fitted(self)
        if self.tie_log_nu_ is None:
            return self._decisive[(self.decision_function(X) > 0).astype(int)]
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def leaderboard(self, as_frame=False):
        """The ratings table, best first.

        Parameters
        ----------
        as_frame : bool, default=False
            Return a pandas DataFrame instead of a numpy record array.

        Returns
        -------
        table : numpy.recarray or pandas.DataFrame
            Fields ``item``, ``rating`` (the full-data point estimate, never a
            bootstrap median), ``lower``, ``upper``, ``rank`` (approximate
            rank) and ``n_battles``, sorted by rating, highest first.
        """
        check_is_fitted(self)
        order = np.argsort(-self.ratings_, kind="stable")
        columns = {
            "item": self.items_[order],
            "rating": self.ratings_[order],
            "lower": self.rating_intervals_[order, 0],
            "upper": self.rating_intervals_[order, 1],
            "rank": self.ranks_[order],
            "n_battles": self.n_battles_[order],
        }
        if as_frame:
            import pandas as pd

            return pd.DataFrame(columns)
        return np.rec.fromarrays(list(columns.values()), names=list(columns))

