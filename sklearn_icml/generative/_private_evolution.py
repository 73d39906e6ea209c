"""PrivateEvolution: differentially private synthetic data by Private Evolution, numeric mode (S9)."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..privacy import (
    PrivacyLeakWarning,
    gaussian_rounds_epsilon,
    gaussian_rounds_noise_multiplier,
    geometric_mechanism,
    ledger_entry,
    noise_random_state,
    private_bounds,
    split_budget,
)
from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import ESTIMATOR_EPSILON, check_value_range
from ._pe_voting import NearestVoter, nearest_votes, noisy_histogram

__all__ = ["PrivateEvolution"]


def cap_users(groups, n_samples, max_per_user, rng):
    """Rows kept when every user contributes at most ``max_per_user`` rows, and the number of users.

    Each user's rows are taken in a seeded random order and the first
    ``max_per_user`` are kept. ``groups=None`` means one row per user.
    """
    if groups is None:
        return np.arange(n_samples), n_samples
    _, codes = np.unique(groups, return_inverse=True)
    order = rng.permutation(n_samples)
    by_user = order[np.argsort(codes[order], kind="stable")]
    sorted_codes = codes[by_user]
    run_start = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    first = np.repeat(run_start, np.diff(np.r_[run_start, n_samples]))
    rank = np.arange(n_samples) - first
    return np.sort(by_user[rank < max_per_user]), int(codes.max()) + 1


def release_label_set(y, epsilon, delta, max_rows_per_user, rng):
    """The labels of ``y`` whose noisy count reaches a threshold: an ``(epsilon, delta)``-DP label set.

    Stability-based histogram (Korolova et al., 2009; Bun, Nissim and
    Stemmer, 2016): the count of every label present is released with
    two-sided geometric noise ``K`` of scale ``m / epsilon`` (one user of at
    most ``m`` rows moves the counts by at most ``m`` in L1 norm), and the
    labels whose noisy count reaches ``T`` are kept. A label that only one
    user holds has a count of at most ``m`` and that user holds at most ``m``
    such labels, so it is kept with probability at most ``P(K >= T - m) =
    a**(T - m) / (1 + a)`` (``a = exp(-epsilon / m)``); ``T`` is the smallest
    integer with ``m`` times that at most ``delta``. Returns the sorted kept
    labels, the threshold and the ledger entry.
    """
    m = int(max_rows_per_user)
    labels, counts = np.unique(y, return_counts=True)
    log_a = -epsilon / m
    threshold = m + max(0, math.ceil((math.log(delta / m) + math.log1p(math.exp(log_a))) / log_a))
    noisy = geometric_mechanism(counts.astype(np.int64), sensitivity=m, epsilon=epsilon, random_state=rng)
    entry = ledger_entry(f"label set (noisy label counts kept from {threshold})", "geometric", sensitivity=float(m),
                         scale=m / epsilon, epsilon=epsilon, delta=delta)
    return labels[np.asarray(noisy) >= threshold], threshold, entry


#: Largest |X| that score takes: its squared distances are computed in float32 (max about 3.4e38).
_SCORE_MAX_ABS = 1e15

class PrivateEvolution(TorchEstimatorMixin, BaseEstimator):
    """Differentially private synthetic data by Private Evolution (PrE-Text, ICML 2024), for numeric data.

    Private Evolution never trains on private data. It keeps a population of
    synthetic points; each round, every private point votes for its nearest
    synthetic point, Gaussian noise and a threshold make the vote histogram
    differentially private, survivors are drawn in proportion to their noisy
    votes, and are varied (here: Gaussian jitter on a decreasing schedule) into
    the next population. The private data is touched only by the histograms;
    everything else is post-processing.

    Read more in the :ref:`User Guide <generative>`.

    Parameters
    ----------
    n_synthetic : int, default=512
        Size of the synthetic population (per class when ``class_conditional``).
    n_iterations : int, default=11
        Rounds T (one private histogram each).
    epsilon : float, default=1.0
        Privacy budget of the whole fit, in ``[1e-3, 1e6]`` (the range of
        every private estimator of the collection): the private box
        (``bounds_share`` of it, when ``bounds=None``), the private label set
        (``classes_share``, when ``class_conditional`` without ``classes``)
        and the rounds (the rest). With ``noise_multiplier`` given, the
        rounds cost what that noise costs and ``epsilon`` only sets the two
        shares.
    delta : float, default=1e-6
        Privacy parameter delta, in (0, 1); the private label set takes
        ``classes_share`` of it, the rounds the rest.
    noise_multiplier : float, default=None
        Noise std over the sensitivity; derived from ``(epsilon, delta,
        n_iterations)`` by ``accountant`` when None.
    accountant : {"pld", "rdp"}, default="pld"
        How the rounds compose (:func:`~sklearn_icml.privacy.gaussian_rounds_epsilon`):
        "pld" is tight, "rdp" is what the PrE-Text release reports.
    max_samples_per_user : int, default=16
        The cap m: users with more rows are subsampled (seeded) to m rows, so
        that one user moves the histogram by at most m in L2 norm (user-level
        privacy). The noise std is ``noise_inflation * sigma * m``. Without
        ``groups`` every row is its own user and m is 1.
    threshold : float, default=1.0
        ``threshold * sigma * m`` is subtracted from every noisy count before
        clipping at 0 (the release's default: one noise std).
    noise_inflation : float, default=1.0
        Extra factor on the noise std that the accounting does not use (the
        release adds ``1.541 * sqrt(2)``): more noise than accounted for.
    lookahead : int, default=4
        Each synthetic point is represented, in the vote, by the mean of
        ``lookahead`` variations of it (where its offspring would land).
    variation_degree : float, default=0.05
        Scale of the Gaussian jitter, as a fraction of each feature's range
        (``bounds``); it decreases linearly to a fifth of that over the rounds.
    initial_population : array-like of shape (n_public, n_features), default=None
        Public points to start from; uniform in ``bounds`` when None.
    bounds : tuple (lower, upper) of floats or arrays, "data" or None, default=None
        Public box the data is clipped to. None releases a private box with
        :func:`~sklearn_icml.privacy.private_bounds` (user-level: a user's
        ``max_samples_per_user`` rows) on ``bounds_share * epsilon``; records
        outside it are clipped. ``"data"`` reads the box from the private
        data and publishes it in ``bounds_``, which no privacy guarantee
        covers, and warns with
        :class:`~sklearn_icml.privacy.PrivacyLeakWarning` on every fit.
    bounds_share : float, default=0.1
        Share of ``epsilon`` spent on the private box when ``bounds=None``
        (ignored otherwise).
    embedder : callable, default=None
        ``embedder(points) -> embeddings`` for the vote (nearest neighbours
        are taken between embeddings); the identity when None.
    variation : callable, default=None
        ``variation(points, degree, random_state) -> points``; Gaussian jitter
        of std ``degree * (upper - lower)`` clipped to the bounds when None.
    class_conditional : bool, default=False
        Run one Private Evolution per class of ``y`` (disjoint data, so the
        budget holds for all classes together); :meth:`sample` returns labels.
    classes : array-like or None, default=None
        The label set, taken as **public knowledge** (it is published in
        ``classes_``), used when ``class_conditional``: rows whose label is
        not in it are left out of the fit (as records are clipped to
        ``bounds``), and a listed class without rows still gets a population.
        None releases the label set privately: the labels whose noisy count
        (two-sided geometric noise on ``classes_share * epsilon``) reaches a
        threshold set by ``classes_share * delta`` (a label that one user
        alone holds is published with probability at most that delta); the
        rows of the other labels are left out.
    classes_share : float, default=0.1
        Share of ``epsilon`` and of ``delta`` spent on the private label set
        (``class_conditional`` without ``classes``; ignored otherwise).
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the nearest-neighbour votes are computed: blocked float32
        matmuls, with numpy's BLAS on the CPU and torch on a GPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the population, the noise, the selection and the variations.
    verbose : int, default=0
        One progress line per round.

    Attributes
    ----------
    synthetic_ : ndarray of shape (n_synthetic_total, n_features)
        The final population (the last round's survivors).
    synthetic_y_ : ndarray of shape (n_synthetic_total,) or None
        Their classes when ``class_conditional``.
    seeds_ : ndarray of shape (n_seeds, n_features)
        The distinct survivors of every round.
    seed_rounds_ : ndarray of shape (n_seeds,)
        The round (0-based) each seed survived.
    classes_ : ndarray or None
        Classes when ``class_conditional``: ``classes`` (public), or the
        privately released label set.
    noise_multiplier_ : float
        The sigma used.
    epsilon_spent_ : float
        Epsilon of the fit, the sum of the ledger's (at most ``epsilon`` when
        the noise is derived from it).
    delta_spent_ : float
        Delta of the fit.
    privacy_ledger_ : list of dict
        The fit's releases (the private box, the private label set, one entry
        for all rounds), for :class:`~sklearn_icml.privacy.Accountant`.
    histograms_ : list of ndarray
        The released (noisy, thresholded) histogram of each round (per class).
    n_users_ : int
        Number of users (rows when ``groups`` is None). Computed from the
        private data for convenience and **not a private release** (like
        ``labels_`` and ``inertia_`` of
        :class:`~sklearn_icml.cluster.PrivateKMeans`): publish the synthetic
        data, not the fitted object.
    bounds_ : tuple of ndarray
        The lower and upper bounds used: ``bounds``, the private box, or
        (``bounds="data"``) the data's range.
    n_features_in_ : int
        Number of features.
    device_ : str
        Where the votes were computed.

    See Also
    --------
    PrivateEvolutionText : Private Evolution for texts.
    SyntheticDataClassifier : Train a classifier on private synthetic data.
    sklearn_icml.cluster.PrivateKMeans : Differentially private clustering.

    Notes
    -----
    Privacy: neighbouring datasets differ by one user (at most
    ``max_samples_per_user`` rows after capping). A user moves each round's
    histogram by at most m in L2 norm (all its votes in one bin), so
    Gaussian noise of std ``sigma * m`` per bin is ``sigma``-calibrated, and
    T rounds compose by ``accountant``. With ``bounds=None`` the box is a
    pure-DP release on ``bounds_share * epsilon``, and with
    ``class_conditional`` and no ``classes`` the label set an
    ``(epsilon, delta)``-DP release on ``classes_share`` of both; the
    releases add up by basic composition in ``privacy_ledger_``. Nothing of the private data is kept
    but the released histograms and what is computed from them. Each fit on
    private data spends the budget again: tuning hyper-parameters on private
    data (GridSearchCV) costs one budget per fit.

    The variation schedule (jitter decreasing linearly from
    ``variation_degree`` to a fifth of it) and the final population being
    the last round's survivors are our choices where the paper's numeric
    experiments leave them open. If every noisy count is clipped to 0 in a
    round, the population is kept unchanged for that round.

    References
    ----------
    .. [1] Hou, C., Shrivastava, A., Zhan, H., Conway, R., Le, T., Sagar, A.,
       Fanti, G. and Lazar, D. "PrE-Text: Training Language Models on Private
       Federated Data in the Age of LLMs", ICML 2024.
    .. [2] Lin, Z., Gopi, S., Kulkarni, J., Nori, H. and Yekhanin, S.
       "Differentially Private Synthetic Data via Foundation Model APIs 1:
       Images", ICLR 2024.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn_icml.generative import PrivateEvolution
    >>> X, _ = make_blobs(500, centers=2, random_state=0)
    >>> pe = PrivateEvolution(n_synthetic=64, epsilon=2.0, bounds=(-15, 15), random_state=0).fit(X)
    >>> pe.sample(10).shape
    (10, 2)
    >>> pe.epsilon_spent_ <= 2.0
    True
    """

    _parameter_constraints: dict = {
        "n_synthetic": [Interval(Integral, 1, None, closed="left")],
        "n_iterations": [Interval(Integral, 1, None, closed="left")],
        "epsilon": ESTIMATOR_EPSILON,
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        "classes": ["array-like", None],
        "classes_share": [Interval(Real, 0, 1, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "noise_multiplier": [Interval(Real, 0, 1e12, closed="neither"), None],
        "accountant": [StrOptions({"pld", "rdp"})],
        "max_samples_per_user": [Interval(Integral, 1, None, closed="left")],
        "threshold": [Interval(Real, 0, 1e6, closed="both")],
        "noise_inflation": [Interval(Real, 1, 1e6, closed="both")],
        "lookahead": [Interval(Integral, 1, None, closed="left")],
        "variation_degree": [Interval(Real, 0, 1e3, closed="both")],
        "initial_population": ["array-like", None],
        "bounds": [tuple, list, StrOptions({"data"}), None],
        "embedder": [callable, None],
        "variation": [callable, None],
        "class_conditional": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_synthetic=512, *, n_iterations=11, epsilon=1.0, delta=1e-6, noise_multiplier=None,
                 accountant="pld", max_samples_per_user=16, threshold=1.0, noise_inflation=1.0, lookahead=4,
                 variation_degree=0.05, initial_population=None, bounds=None, bounds_share=0.1, embedder=None,
                 variation=None, class_conditional=False, classes=None, classes_share=0.1, device="cpu",
                 random_state=None, verbose=0):
        self.n_synthetic = n_synthetic
        self.n_iterations = n_iterations
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.accountant = accountant
        self.max_samples_per_user = max_samples_per_user
        self.threshold = threshold
        self.noise_inflation = noise_inflation
        self.lookahead = lookahead
        self.variation_degree = variation_degree
        self.initial_population = initial_population
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.embedder = embedder
        self.variation = variation
        self.class_conditional = class_conditional
        self.classes = classes
        self.classes_share = classes_share
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # -- pieces the text subclass replaces --------------------------------------------------------

    def _validate_private(self, X, y):
        if self.class_conditional:
            if y is None:
                raise ValueError("PrivateEvolution: class_conditional=True needs the class labels y.")
            return validate_data(self, as_numpy(X), as_numpy(y), dtype=np.float64)
        return validate_data(self, as_numpy(X), dtype=np.float64), None

    #: whether the data is numeric, with a box (the text subclass has none)
    _has_box = True

    def _setup(self, X):
        """The private data clipped to ``bounds_`` (set before), and the public pool (or None)."""
        lo, hi = self.bounds_
        pool = None
        if self.initial_population is not None:
            pool = np.clip(validate_data(self, as_numpy(self.initial_population), dtype=np.float64, reset=False),
                           lo, hi)
        return np.clip(X, lo, hi), pool

    def _embed(self, points):
        if self.embedder is None:
            return points
        name = type(self).__name__
        try:
            out = np.asarray(self.embedder(points), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: the embedder must return a numeric array; it returned something that is not "
                             f"({exc}).") from exc
        if out.ndim != 2 or out.shape[0] != len(points):
            raise ValueError(f"{name}: the embedder must return one embedding row per point, shape ({len(points)}, "
                             f"n_dims); got shape {out.shape}.")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"{name}: the embedder returned NaN or infinite embeddings.")
        return out

    def _vary(self, points, degree, rng):
        if self.variation is not None:
            name = type(self).__name__
            try:
                out = np.asarray(self.variation(points, degree, rng), dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name}: the variation callable must return a numeric array of the points' "
                                 f"shape; it returned something that is not ({exc}).") from exc
            if out.shape != points.shape:
                raise ValueError(f"{name}: the variation callable must return an array of the points' shape "
                                 f"{points.shape}; got {out.shape}.")
            if not np.all(np.isfinite(out)):
                raise ValueError(f"{name}: the variation callable returned NaN or infinite points.")
            return out
        lo, hi = self.bounds_
        return np.clip(points + rng.normal(size=points.shape) * degree * (hi - lo), lo, hi)

    def _initial(self, n, rng, pool):
        if pool is not None:
            return pool[rng.randint(len(pool), size=n)]
        lo, hi = self.bounds_
        return lo + rng.uniform(size=(n, len(lo))) * (hi - lo)

    # -- fit ---------------------------------------------------------------------------------------

    def _resolve_bounds(self, X, epsilon, max_rows_per_user, rng):
        """The box and its ledger: public ``bounds``, the private box (None) or the data's range ("data")."""
        n_features = X.shape[1]
        if self.bounds is None:
            box = private_bounds(X, epsilon, max_rows_per_user=max_rows_per_user, random_state=rng)
            if not box.found:
                warnings.warn(f"{type(self).__name__}: the private box found no magnitude bin of {box.threshold[0]} "
                              "noisy records or more (too few records for bounds_share * epsilon), so its radius is "
                              "the fallback 1. Pass public bounds=(lower, upper).", UserWarning, stacklevel=4)
            return (box.lower, box.upper), box.ledger
        if isinstance(self.bounds, str):  # "data"
            warnings.warn(f"{type(self).__name__}: bounds='data' reads the box from the private data and publishes "
                          "it in bounds_, which no differential-privacy guarantee covers; pass public "
                          "bounds=(lower, upper), or bounds=None for a private box.", PrivacyLeakWarning,
                          stacklevel=4)
            lo, hi = X.min(axis=0), X.max(axis=0)
            hi = np.where(hi > lo, hi, lo + 1.0)
            return (lo, hi), []
        if len(self.bounds) != 2:
            raise ValueError(f"{type(self).__name__}: bounds must be a (lower, upper) pair; got {self.bounds!r}.")
        try:
            lo = np.broadcast_to(np.asarray(self.bounds[0], dtype=np.float64), (n_features,)).copy()
            hi = np.broadcast_to(np.asarray(self.bounds[1], dtype=np.float64), (n_features,)).copy()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{type(self).__name__}: bounds must be a (lower, upper) pair of numbers or of arrays "
                             f"of {n_features} numbers (one per feature); got {self.bounds!r} ({exc}).") from None
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
            raise ValueError(f"{type(self).__name__}: bounds must be finite with lower < upper; got {self.bounds!r}.")
        return (lo, hi), []

    def _budget(self):
        """``(epsilon of the box, epsilon and delta of the label set, epsilon and delta of the rounds)``; a part
        not spent is None."""
        box = self._has_box and self.bounds is None
        labels = bool(self.class_conditional) and self.classes is None
        shares = [share for share, used in ((getattr(self, "bounds_share", 0.0), box), (self.classes_share, labels))
                  if used]
        if sum(shares) >= 1.0:
            raise ValueError(f"{type(self).__name__}: bounds_share + classes_share must be below 1 (the rest pays "
                             f"for the rounds); got {self.bounds_share!r} + {self.classes_share!r}.")
        eps = split_budget(self.epsilon, shares + [1.0 - sum(shares)])
        eps_box = eps.pop(0) if box else None
        eps_labels = eps.pop(0) if labels else None
        delta_labels, delta_rounds = (split_budget(self.delta, [self.classes_share, 1.0 - self.classes_share])
                                      if labels else (None, float(self.delta)))
        return eps_box, eps_labels, delta_labels, eps[0], delta_rounds

    def _sigma(self, epsilon, delta):
        T = int(self.n_iterations)
        if self.noise_multiplier is not None:
            sigma = float(self.noise_multiplier)
            try:
                eps = gaussian_rounds_epsilon(sigma, T, delta, accountant=self.accountant)
            except ValueError:  # beyond the accountant's range
                eps = float("inf")
            cap = ESTIMATOR_EPSILON[0].right
            if eps > cap:
                smallest = gaussian_rounds_noise_multiplier(cap, delta, T, accountant=self.accountant)
                raise ValueError(
                    f"{type(self).__name__}: noise_multiplier={self.noise_multiplier!r} spends epsilon={eps:.3g} "
                    f"over {T} rounds at delta={delta:.3g}, beyond the private estimators' cap of {cap:g}; the "
                    f"range that works is noise_multiplier >= {smallest:.3g}.")
            return sigma, eps
        sigma = gaussian_rounds_noise_multiplier(epsilon, delta, T, accountant=self.accountant)
        return sigma, min(gaussian_rounds_epsilon(sigma, T, delta, accountant=self.accountant), epsilon)

    def _check_groups(self, groups, n_samples):
        if groups is None:
            return None
        groups = np.asarray(as_numpy(groups))
        if groups.ndim != 1 or len(groups) != n_samples:
            raise ValueError(f"{type(self).__name__}: groups must be 1-D with one user id per row of X "
                             f"({n_samples}); got shape {groups.shape}.")
        return groups

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, groups=None):
        """Run Private Evolution on the private data ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private data.
        y : array-like of shape (n_samples,), default=None
            Classes; used only when ``class_conditional``.
        groups : array-like of shape (n_samples,), default=None
            User ids; None means one row per user.

        Returns
        -------
        self : PrivateEvolution
            The fitted generator.
        """
        with self._torch_fit_context() as ctx:
            X, y = self._validate_private(X, y)
            groups = self._check_groups(groups, len(X))
            rng = noise_random_state(self.random_state)  # None: cryptographic noise
            keep, self.n_users_ = cap_users(groups, len(X), self.max_samples_per_user, rng)
            # without user ids every user holds one row (public knowledge), so one user moves a histogram by 1
            m = int(self.max_samples_per_user if groups is not None else 1)
            eps_box, eps_labels, delta_labels, eps_rounds, delta_rounds = self._budget()
            ledger = []
            if self._has_box:
                self.bounds_, entries = self._resolve_bounds(X[keep], eps_box, m, rng)
                ledger.extend(entries)
            X, pool = self._setup(X)
            X = X[keep]
            y = None if y is None else np.asarray(y)[keep]
            if self.class_conditional:
                if self.classes is None:
                    self.classes_, threshold, entry = release_label_set(y, eps_labels, delta_labels, m, rng)
                    ledger.append(entry)
                    if not len(self.classes_):
                        raise ValueError(
                            f"{type(self).__name__}: no label reached the private label set's threshold "
                            f"({threshold} records at epsilon={eps_labels:.3g}, delta={delta_labels:.3g}); pass the "
                            "label set as public knowledge (classes=...), or a larger epsilon or classes_share.")
                else:
                    self.classes_ = np.unique(np.asarray(as_numpy(self.classes)))
            sigma, eps = self._sigma(eps_rounds, delta_rounds)
            ledger.append(self._ledger(sigma, m, eps, delta_rounds))
            self.noise_multiplier_, self.privacy_ledger_ = sigma, ledger
            self.epsilon_spent_ = math.fsum(e["epsilon"] for e in ledger)
            self.delta_spent_ = math.fsum(e["delta"] for e in ledger)
            if self.class_conditional:
                parts = [(X[y == c], c) for c in self.classes_]
            else:
                self.classes_ = None
                parts = [(X, None)]
            synthetic, labels, seeds, self.histograms_ = [], [], [], []
            for part, label in parts:
                final, part_seeds, hists = self._evolve(part, pool, sigma * m, rng, ctx.device, label)
                synthetic.append(final)
                seeds.extend(part_seeds)
                self.histograms_.extend(hists)
                labels.append(np.full(len(final), label, dtype=object) if label is not None else None)
        self.synthetic_ = np.concatenate(synthetic)
        self.synthetic_y_ = None if self.classes_ is None else np.concatenate(labels).astype(self.classes_.dtype)
        self.seeds_ = np.concatenate([s for s, _ in seeds]) if seeds else self.synthetic_[:0]
        self.seed_rounds_ = np.concatenate([np.full(len(s), t) for s, t in seeds]) if seeds else np.zeros(0, int)
        return self

    def _ledger(self, sigma, m, eps, delta):
        T = int(self.n_iterations)
        return ledger_entry(f"{T} noisy nearest-neighbour histograms", "gaussian", sensitivity=float(m),
                            scale=self.noise_inflation * sigma * m, epsilon=float(eps), delta=float(delta),
                            count=T, accountant=self.accountant)

    def _evolve(self, private, pool, noise_unit, rng, device, label):
        n, T = int(self.n_synthetic), int(self.n_iterations)
        population = self._initial(n, rng, pool)
        voter = NearestVoter(self._embed(private), device)  # embedded and moved to the device once per fit
        hists, seeds = [], []
        for t in range(T):
            degree = self.variation_degree * (1.0 - 0.8 * t / max(T - 1, 1))
            ahead = np.mean([self._embed(self._vary(population, degree, rng)) for _ in range(self.lookahead)], axis=0)
            votes = voter(ahead)
            _, released = noisy_histogram(votes, n, noise_std=self.noise_inflation * noise_unit,
                                          threshold=self.threshold * noise_unit, rng=rng)
            hists.append(released)
            if released.sum() > 0:
                parents = rng.choice(n, size=n, p=released / released.sum())
                seeds.append((population[np.unique(parents)], t))
                population = population[parents]
            if self.verbose:
                tag = "" if label is None else f" class {label!r}"
                print(f"[{type(self).__name__}]{tag} round {t + 1}/{T}: {int((released > 0).sum())} of {n} "
                      f"points survive")
            if t < T - 1:
                population = self._vary(population, degree, rng)
        return population, seeds, hists

    # -- after fit ---------------------------------------------------------------------------------

    def sample(self, n_samples=None, random_state=None):
        """Draw synthetic points (post-processing: no privacy cost).

        Parameters
        ----------
        n_samples : int, default=None
            Number of points, drawn with replacement from :attr:`synthetic_`;
            None returns the whole final population.
        random_state : int, RandomState instance or None, default=None
            Seeds the draw.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            Synthetic points.
        y : ndarray of shape (n_samples,)
            Their classes; only when ``class_conditional``.
        """
        check_is_fitted(self)
        if n_samples is None:
            idx = np.arange(len(self.synthetic_))
        else:
            if not isinstance(n_samples, Integral) or n_samples < 1:
                raise ValueError(f"{type(self).__name__}.sample: n_samples must be an int >= 1; got {n_samples!r}.")
            idx = check_random_state(random_state).randint(len(self.synthetic_), size=int(n_samples))
        if self.synthetic_y_ is None:
            return self.synthetic_[idx]
        return self.synthetic_[idx], self.synthetic_y_[idx]

    def score(self, X, y=None):
        """Minus the mean distance from the rows of ``X`` to their nearest synthetic point.

        Scoring real data against the synthetic set reads that data: on
        private data it is not covered by the fit's privacy guarantee.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points to score (held-out data, typically).
        y : None
            Ignored.

        Returns
        -------
        float
            Higher is better (0: every point has a synthetic twin).
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), dtype=np.float64, reset=False)
        check_value_range(X, name=f"{type(self).__name__}.score", limit=_SCORE_MAX_ABS,
                          reason="the nearest synthetic points are found with float32 squared distances, which "
                                 "overflow")
        with self._torch_context() as ctx:
            nearest = nearest_votes(X, self.synthetic_, ctx.device)
        return -float(np.mean(np.linalg.norm(X - self.synthetic_[nearest], axis=1)))
