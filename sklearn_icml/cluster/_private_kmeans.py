"""Differentially private k-means: the private Mettu-Plaxton greedy (S3).

Dupré la Tour, Henzinger and Saulpic, "Making Old Things New: A Unified
Algorithm for Differentially Private Clustering", ICML 2024. The greedy and
the reduction to k centres (post-processing of the released tree) live in
``_mettu_plaxton.py``; the private releases come from :mod:`sklearn_icml.privacy`.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from ..privacy import (
    ContinualQuadtreeHistogram,
    PrivacyLeakWarning,
    add_noise,
    exponential_choice,
    gaussian_noise_scale,
    grid_histogram,
    grid_laplace,
    ledger_entry,
    noise_random_state,
    noisy_group_sums,
    olh_count_std,
    private_bounds,
    private_quadtree_histogram,
    release_group_totals,
    secret_seed,
    split_budget,
)
from ..utils._dask import is_dask_collection
from ..utils._random import SEED_MAX
from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import ESTIMATOR_EPSILON, check_test_data
from ._exact_sums import group_sums as exact_group_sums
from ._exact_sums import scale_exponents, step_pieces, step_sums
from ._mettu_plaxton import bicriteria_to_k, nearest
from ._private_kmeans_kernels import assign, scaled_sq_distances

__all__ = ["PrivateKMeans"]

#: Share of the tree budget spent on the noisy dataset size that sets the
#: depth and the threshold (central model only; the local model sees n).
_SIZE_SHARE = 0.05
#: Su et al.'s constant for the DP-Lloyd count/sum split.
_RHO = 0.225
#: Share of epsilon spent by the exponential mechanism choosing among ``n_repeats`` runs.
_SELECT_SHARE = 0.1
#: Largest absolute coordinate of a box (squared distances stay finite).
_MAX_ABS_BOUND = 1e150
#: Parameters that define a partial_fit stream's privacy; changing them mid-stream is refused.
_STREAM_PARAMS = ("epsilon", "delta", "bounds", "bounds_share", "budget_split", "max_steps", "n_components", "n_levels",
                  "privacy", "algorithm", "n_repeats")


# ----------------------------------------------------------------------------------------------
# geometry


def _signal_bits(n_estimate, epsilon):
    """``log2(n * max(1, epsilon / 10))``: how finely the budget lets the tree resolve ``n`` records.

    A tree count carries Laplace noise of scale ``n_levels / (tree share of
    epsilon)``, about ``10 / epsilon`` for the default depth and split: up to
    ``epsilon = 10`` a cell must hold a few records to stand out of the noise
    (the depth follows ``log2 n``); beyond, the noise shrinks like
    ``1 / epsilon`` and ``epsilon / 10`` times finer cells can be resolved.
    """
    return math.log2(max(n_estimate, 2.0) * max(1.0, epsilon / 10.0))


def _auto_components(n_features, n_estimate, epsilon):
    """All features up to 3; beyond, 4 or more as ``n * epsilon`` allows at least ~3 levels per dimension."""
    if n_features <= 3:
        return n_features
    return int(min(n_features, max(4, _signal_bits(n_estimate, epsilon) // 3)))


def _auto_levels(n_estimate, n_dims, epsilon):
    """Depth at which a cell of uniformly spread records holds about as many records as its noise."""
    return int(np.clip(round(_signal_bits(n_estimate, epsilon) / n_dims) + 1, 2, 62 // n_dims))


class _Geometry:
    """Box, centring, projection and the cube of the quadtree (all data-independent)."""

    def __init__(self, lower, upper, n_components, rng):
        self.lower, self.upper = lower, upper
        self.center = (lower + upper) / 2.0
        self.half = (upper - lower) / 2.0
        d = len(lower)
        self.radius = float(np.linalg.norm(self.half)) or 1.0
        if n_components >= d:
            self.projection = np.eye(d)
        else:
            self.projection = rng.standard_normal((d, n_components)) / math.sqrt(n_components)
        # largest |y_j| over the box: both bounds hold, keep the smaller
        by_box = np.abs(self.projection).T @ (self.half / self.radius)
        by_ball = np.linalg.norm(self.projection, axis=0)
        self.cube = float(max(np.max(np.minimum(by_box, by_ball)), 1e-12))

    def project(self, X):
        return ((X - self.center) / self.radius) @ self.projection

    def to_unit(self, Y):
        return np.clip((Y + self.cube) / (2.0 * self.cube), 0.0, 1.0)

    def lift_fallback(self, M):
        """Data-independent map of projected centres back to the box (for empty clusters)."""
        back = M @ np.linalg.pinv(self.projection)
        return np.clip(self.center + back * self.radius, self.lower, self.upper)


class _Records:
    """The fit's data in memory: every step that reads records goes through here (Dask: ``_DaskRecords``)."""

    def __init__(self, X, bounds, model, device, device_param):
        self.X = X
        self.Xc = np.clip(X, *bounds)
        self.n, self.d = X.shape
        self.model, self.device, self.device_param = model, device, device_param
        self._projected = None

    def _project(self, geometry):
        if self._projected is None or self._projected[0] is not geometry:
            self._projected = (geometry, geometry.project(self.Xc))
        return self._projected[1]

    def histogram(self, geometry, n_levels, epsilon, threshold, rng):
        return private_quadtree_histogram(self._project(geometry), bounds=(-geometry.cube, geometry.cube),
                                          n_levels=n_levels, epsilon=epsilon, threshold=threshold, model=self.model,
                                          random_state=rng, device=self.device_param)

    def group_sums(self, geometry, centers, n_groups, bounds, rng, **budget):
        """Noisy sizes and sums of the groups of the nearest ``centers`` (projected space when ``geometry``)."""
        groups = nearest(self.Xc if geometry is None else self._project(geometry), centers, self.device)
        if self.model != "central":
            return noisy_group_sums(self.Xc, groups, n_groups, bounds=tuple(bounds), model=self.model,
                                    random_state=rng, **budget)
        # the curator's exact totals, summed independently of the records' order (as on a Dask collection),
        # then noisy_group_sums's mechanism
        lower, upper = bounds
        center, half = (lower + upper) / 2.0, (upper - lower) / 2.0
        groups = np.asarray(groups, dtype=np.int64)
        counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
        sums = exact_group_sums(self.Xc - center, groups, n_groups, half)
        counts, sums, ledger = release_group_totals(counts, sums, self.n, half, model="central",
                                                    rng=check_random_state(rng), **budget)
        return counts, sums, center, ledger

    def costs(self, candidates):
        return np.array([float(((self.Xc - C[nearest(self.Xc, C)]) ** 2).sum()) for C in candidates])

    def labels_and_inertia(self, centers):
        return assign(self.X, centers)


# ----------------------------------------------------------------------------------------------
# the estimator


class PrivateKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, TorchEstimatorMixin,
                    BaseEstimator):
    """Differentially private k-means by the private Mettu-Plaxton greedy.

    The unified algorithm of Dupré la Tour, Henzinger and Saulpic (ICML
    2024): project the data to a few dimensions with a data-independent random
    map, release a private hierarchical histogram (noisy counts over a
    quadtree of the bounded space, pruned top-down), run the greedy algorithm
    of Mettu and Plaxton on the noisy ball values to get a bicriteria
    solution, reduce it to exactly ``n_clusters`` centres by a non-private
    weighted k-means on that released summary (post-processing), and lift the
    centres back to the full dimension with noisy per-cluster counts and sums.
    The same greedy runs in the central model, in the local model (each
    record randomises its own cell ids) and under continual observation
    (:meth:`partial_fit`); ``algorithm="lloyd"`` gives the classic DP-Lloyd
    baseline (Su et al., as in diffprivlib) instead.

    Read more in the :ref:`User Guide <private_kmeans>`.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of centres.
    epsilon : float, default=1.0
        Privacy budget of one fit (or of one whole :meth:`partial_fit`
        stream), in ``[1e-3, 1e6]`` (the range of every private estimator
        of the collection). ``epsilon_spent_`` never exceeds it.
    delta : float, default=1e-6
        Delta allowed for Gaussian noise on the lifted cluster sums. A fit
        uses Gaussian noise only where it is more accurate than Laplace noise
        for the budget and dimension (high dimension, small epsilon) and
        Laplace noise otherwise, so ``delta_spent_`` may be 0 (pure DP);
        ``0`` forces Laplace noise everywhere.
    bounds : tuple (lower, upper), "data" or None, default=None
        Box containing the data: records outside it are clipped, and the
        noise is calibrated to it. A tuple is a **public** box (scalars or
        arrays of shape (n_features,)), the best utility when it is known.
        ``None`` releases a private box
        (:func:`~sklearn_icml.privacy.private_bounds`, on ``bounds_share *
        epsilon``; central model only). ``"data"`` reads the data's range,
        which no privacy guarantee covers, and warns with
        :class:`~sklearn_icml.privacy.PrivacyLeakWarning`.
    bounds_share : float, default=0.1
        Share of ``epsilon`` spent on the private box when ``bounds=None``
        (ignored otherwise); the fit spends the rest.
    privacy : {"central", "local"}, default="central"
        ``"central"``: a trusted curator adds the noise. ``"local"``: every
        record randomises its own report (cell ids through a frequency
        oracle, then its noisy cluster contribution), so no one sees raw data;
        the error grows like ``sqrt(n_samples)``.
    algorithm : {"greedy", "lloyd"}, default="greedy"
        ``"greedy"``: the paper's private Mettu-Plaxton pipeline.
        ``"lloyd"``: DP-Lloyd (random start in the box, then ``max_iter``
        rounds of noisy counts and sums).
    n_components : int or "auto", default="auto"
        Dimension of the random projection; ``"auto"`` keeps up to 3
        features and beyond projects to 4 or more dimensions as ``n *
        epsilon`` allows (the rule is in the User Guide).
    n_levels : int or "auto", default="auto"
        Depth of the quadtree; ``"auto"``: the depth at which a cell of
        uniformly spread records holds about as many records as its noise.
    threshold_factor : float, default=1.5
        A cell is expanded when its noisy count exceeds
        ``threshold_factor * (noise scale) * ln(n)`` (central model; in noise
        standard deviations in the local model).
    max_centers_factor : float, default=4.0
        The greedy's threshold is the smallest giving at most
        ``max_centers_factor * n_clusters`` bicriteria centres.
    budget_split : tuple of 3 floats, default=(0.5, 0.25, 0.25)
        Shares of ``epsilon`` for the tree, the lifted cluster counts and the
        lifted cluster sums (normalised to sum to one). Under continual
        observation the tree takes the first two shares; DP-Lloyd ignores it.
    max_iter : int or "auto", default="auto"
        DP-Lloyd rounds; ``"auto"`` is Su et al.'s rule (between 2 and 7,
        from the noisy dataset size). Ignored by the greedy.
    max_steps : int, default=32
        Number of :meth:`partial_fit` steps the stream's budget covers.
    n_repeats : int, default=1
        The paper's boosting step: run the pipeline ``n_repeats`` times on
        ``0.9 * epsilon / n_repeats`` each and choose one run by the
        exponential mechanism on ``0.1 * epsilon`` (central :meth:`fit`).
    n_init : int, default=10
        Restarts of the non-private weighted k-means that reduces the
        bicriteria centres to ``n_clusters`` (post-processing).
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the counting and assignment steps of :meth:`fit` run. The
        noise is drawn on the CPU, so fits agree across devices.
    random_state : int, RandomState instance or None, default=None
        Seeds the projection, the noise and the clean-up k-means.
    verbose : int, default=0
        Print the steps of the fit when positive.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Private centres, sorted by decreasing noisy cluster size.
    labels_ : ndarray of shape (n_samples,)
        Nearest centre of each training record (of the last batch for
        :meth:`partial_fit`); not private.
    inertia_ : float
        k-means cost of the training records on the centres; not private
        (``inf`` beyond the float64 range).
    cluster_sizes_ : ndarray of shape (n_clusters,)
        Noisy cluster sizes (private).
    n_iter_ : int
        DP-Lloyd rounds run, or the number of greedy thresholds tried.
    bounds_ : ndarray of shape (2, n_features)
        The box used (lower, upper): ``bounds``, the private box
        (``bounds=None``) or the data's range (``bounds="data"``, not
        private).
    n_components_ : int
        Dimension of the projected space.
    projection_ : ndarray of shape (n_features, `n_components_`)
        The random projection (identity when not projecting), applied to
        records centred on the box and scaled by its half-diagonal.
    n_levels_ : int
        Depth of the quadtree (0 for DP-Lloyd).
    histogram_ : QuadtreeHistogram or None
        The released tree (private), in the projected space. None for
        DP-Lloyd.
    mp_centers_ : ndarray of shape (n_mp_centers, `n_components_`)
        The greedy's bicriteria centres in the projected space.
    projected_centers_ : ndarray of shape (n_clusters, `n_components_`)
        The ``n_clusters`` centres in the projected space, before the lift, in
        the order of ``cluster_centers_``.
    epsilon_spent_ : float
        Epsilon spent by the fit (the whole stream for :meth:`partial_fit`).
    delta_spent_ : float
        Delta spent.
    privacy_ledger_ : list of dict
        Every release: mechanism, sensitivity, noise scale, epsilon, delta
        (see :func:`~sklearn_icml.privacy.ledger_entry`).
    n_steps_ : int
        Steps seen by :meth:`partial_fit` (0 after :meth:`fit`).
    selected_repeat_ : int
        Index of the run chosen by the exponential mechanism when
        ``n_repeats > 1`` (0 otherwise).
    device_ : str
        Where the fit ran (``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``;
        :meth:`partial_fit` and Dask inputs always run on the CPU).
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X had string column names.

    See Also
    --------
    sklearn.cluster.KMeans : Non-private k-means.
    sklearn_icml.privacy.private_quadtree_histogram : The private histogram.
    sklearn_icml.privacy.Accountant : Adds up the budget of several fits.

    Notes
    -----
    Neighbouring datasets differ by one record added or removed. The central
    fit is ``(epsilon, delta)``-DP by basic composition of its releases (the
    private box, the noisy size, the tree, the cluster counts and sums), so
    ``epsilon_spent_ <= epsilon`` exactly. ``labels_`` and ``inertia_`` are
    computed from the raw data and are not private: publish
    ``cluster_centers_``. Tuning on private data (``GridSearchCV``) spends
    ``epsilon`` on every fit: tune on public data, or account for every fit
    with :class:`~sklearn_icml.privacy.Accountant`.

    Clipping to the box is part of the mechanism: records of any finite
    magnitude are accepted (refusing far-out records would be a release
    outside the budget). Declared bounds beyond +-1e150 are refused;
    :meth:`transform`, :meth:`predict` and :meth:`score` stay exact for
    records whose squares overflow, and raise a ``ValueError`` when a
    distance or cost leaves the float64 range.

    On a Dask collection (central model) the blocks compute exact totals and
    the noise is drawn once on the client, so the fit is the in-memory fit,
    bit for bit, whatever the chunking. The paper leaves its constants free:
    the choices made here, the error of each privacy model and the Dask
    passes are described in the :ref:`User Guide <private_kmeans>`.

    References
    ----------
    .. [1] M. Dupré la Tour, M. Henzinger and D. Saulpic, "Making Old Things
       New: A Unified Algorithm for Differentially Private Clustering",
       ICML 2024, PMLR 235:12046-12086.
    .. [2] R. Mettu and C. Plaxton, "Optimal time bounds for approximate
       clustering", Machine Learning 56, 2004.
    .. [3] D. Su, J. Cao, N. Li, E. Bertino and H. Jin, "Differentially private
       k-means clustering", CODASPY 2016.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn_icml.cluster import PrivateKMeans
    >>> X, _ = make_blobs(n_samples=4000, centers=3, cluster_std=0.5, center_box=(-6, 6),
    ...                   random_state=0)
    >>> km = PrivateKMeans(n_clusters=3, epsilon=1.0, bounds=(-10, 10), random_state=0).fit(X)
    >>> km.cluster_centers_.shape, km.epsilon_spent_
    ((3, 2), 1.0)
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": ESTIMATOR_EPSILON,
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [tuple, list, np.ndarray, StrOptions({"data"}), None],
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        "privacy": [StrOptions({"central", "local"})],
        "algorithm": [StrOptions({"greedy", "lloyd"})],
        "n_components": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_levels": [Interval(Integral, 1, 31, closed="both"), StrOptions({"auto"})],
        "threshold_factor": [Interval(Real, 0, np.inf, closed="left")],
        "max_centers_factor": [Interval(Real, 1, np.inf, closed="left")],
        "budget_split": [tuple, list, np.ndarray],
        "max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "max_steps": [Interval(Integral, 1, 1 << 40, closed="both")],
        "n_repeats": [Interval(Integral, 1, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }  # device and verbose: merged by TorchEstimatorMixin

    def __init__(self, n_clusters=8, *, epsilon=1.0, delta=1e-6, bounds=None, bounds_share=0.1, privacy="central",
                 algorithm="greedy", n_components="auto", n_levels="auto", threshold_factor=1.5,
                 max_centers_factor=4.0, budget_split=(0.5, 0.25, 0.25), max_iter="auto", max_steps=32,
                 n_repeats=1, n_init=10, device="cpu", random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.privacy = privacy
        self.algorithm = algorithm
        self.n_components = n_components
        self.n_levels = n_levels
        self.threshold_factor = threshold_factor
        self.max_centers_factor = max_centers_factor
        self.budget_split = budget_split
        self.max_iter = max_iter
        self.max_steps = max_steps
        self.n_repeats = n_repeats
        self.n_init = n_init
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------
    # validation helpers

    def _log(self, message):
        if self.verbose:
            print(f"[{type(self).__name__}] {message}")

    def _split(self):
        split = np.asarray(self.budget_split, dtype=np.float64).ravel()
        if split.shape != (3,) or not np.all(np.isfinite(split)) or np.any(split <= 0):
            raise ValueError(
                f"{type(self).__name__}: budget_split must be 3 positive shares (tree, cluster counts, "
                f"cluster sums); got {self.budget_split!r}."
            )
        return split / split.sum()

    def _resolve_bounds(self, d, histogram, data_range, rng):
        """The box and its ledger: public ``bounds``; ``None``: a private box (:func:`private_bounds`) from the
        counts ``histogram(radius)`` on ``bounds_share * epsilon``; ``"data"``: ``data_range()``, the data's
        per-feature min and max (not private; warns on every call)."""
        name = type(self).__name__
        ledger = []
        if self.bounds is None:
            if self.privacy != "central":
                raise ValueError(
                    f"{name}: privacy={self.privacy!r} needs public bounds=(lower, upper): the private box "
                    f"(bounds=None) is a release of a curator who sees the records, which the local model has not."
                )
            eps_box = split_budget(self.epsilon, [self.bounds_share, 1.0 - self.bounds_share])[0]
            box = private_bounds(histogram, eps_box, random_state=rng)
            if not box.found:
                warnings.warn(f"{type(self).__name__}: the private box found no magnitude bin of {box.threshold[0]} "
                              "noisy records or more (too few records for bounds_share * epsilon), so its radius is "
                              "the fallback 1. Pass public bounds=(lower, upper).", UserWarning, stacklevel=4)
            lower, upper, ledger = box.lower, box.upper, box.ledger
        elif isinstance(self.bounds, str):  # "data"
            warnings.warn(
                f"{name}: bounds='data' reads the box from the private data and publishes it in bounds_, which "
                "no differential-privacy guarantee covers; pass public bounds=(lower, upper), or bounds=None for "
                "a private box.", PrivacyLeakWarning, stacklevel=4)
            lower, upper = data_range()
            flat = upper <= lower  # a constant feature: any box around it will do
            lower, upper = np.where(flat, lower - 0.5, lower), np.where(flat, upper + 0.5, upper)
        else:
            try:
                parts = [np.asarray(b, dtype=np.float64) for b in self.bounds]
                if len(parts) != 2:
                    raise ValueError
                lower, upper = (np.broadcast_to(p, (d,)).astype(np.float64) for p in parts)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{name}: bounds must be (lower, upper) with scalars or arrays of shape ({d},); "
                    f"got {self.bounds!r}."
                ) from None
            if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
                raise ValueError(f"{name}: bounds must be finite; got {self.bounds!r}.")
            if np.any(upper <= lower):
                raise ValueError(f"{name}: bounds must satisfy lower < upper; got {self.bounds!r}.")
        if np.any(np.abs(lower) > _MAX_ABS_BOUND) or np.any(np.abs(upper) > _MAX_ABS_BOUND):
            got = (f"bounds='data' and the data's range reaches {max(np.abs(lower).max(), np.abs(upper).max()):.3g}, "
                   "so pass public bounds or rescale X" if isinstance(self.bounds, str) else f"got {self.bounds!r}")
            raise ValueError(f"{name}: bounds must lie within +-{_MAX_ABS_BOUND:g} (squared distances and noise "
                             f"scales must stay finite in float64); {got}.")
        return np.stack([lower, upper]).astype(np.float64), ledger

    def _check_repeats(self, stream=False):
        if self.n_repeats > 1 and (stream or self.privacy != "central"):
            what = "partial_fit (continual observation)" if stream else "privacy='local'"
            raise ValueError(
                f"{type(self).__name__}: n_repeats={self.n_repeats} (boosting by the exponential mechanism on the "
                f"runs' costs) needs a curator that sees the data; it is not available with {what}."
            )

    def _n_components(self, d, n_hat, epsilon):
        if self.n_components == "auto":
            return _auto_components(d, n_hat, epsilon)
        return min(int(self.n_components), d)

    def _levels(self, n_hat, n_dims, epsilon):
        L = _auto_levels(n_hat, n_dims, epsilon) if self.n_levels == "auto" else int(self.n_levels)
        return min(L, 62 // n_dims)

    # ------------------------------------------------------------------------------------------
    # fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the private centres.

        Parameters
        ----------
        X : array-like or Dask collection of shape (n_samples, n_features)
            Training data; a ``dask.array.Array`` or ``dask.dataframe.DataFrame``
            is reduced block by block, with the noise drawn once on the client
            (see Notes).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        with self._torch_fit_context() as ctx:  # device resolved (cuda without a GPU raises), threads scoped
            return self._fit(X, None if ctx.device.type == "cpu" else ctx.device)

    def _fit(self, X, device):
        if is_dask_collection(X):
            from ._private_kmeans_dask import dask_records

            records, dtype = dask_records(self, X, reset=True)
            self.device_ = "cpu"  # the blocks are reduced on the workers' CPUs
        else:
            X = validate_data(self, as_numpy(X), dtype=[np.float64, np.float32])
            dtype = X.dtype
            X = np.asarray(X, dtype=np.float64)
        split = self._split()
        rng = noise_random_state(self.random_state)  # None: cryptographic noise
        self._check_repeats()
        if is_dask_collection(X):
            self.bounds_, box_ledger = self._resolve_bounds(records.d, records.grid_histogram,
                                                            records.data_range, rng)
            records.set_bounds(self.bounds_)
        else:
            self.bounds_, box_ledger = self._resolve_bounds(X.shape[1], lambda radius: grid_histogram(X, radius),
                                                            lambda: (X.min(axis=0), X.max(axis=0)), rng)
            records = _Records(X, self.bounds_, self.privacy, device, self.device)
        box_spent = [e["epsilon"] for e in box_ledger]
        for name in ("_stream", "_geometry", "_stream_params"):
            self.__dict__.pop(name, None)
        self.n_steps_ = 0
        R = self.n_repeats
        if R == 1:
            eps_runs, delta_runs = split_budget(self.epsilon, [1.0], spent=box_spent), [float(self.delta)]
        else:
            eps_runs = split_budget(self.epsilon, [(1.0 - _SELECT_SHARE) / R] * R + [_SELECT_SHARE], spent=box_spent)
            delta_runs = split_budget(self.delta, [1.0] * R) if self.delta > 0 else [0.0] * R
        runs = []
        for r in range(R):
            if self.algorithm == "lloyd":
                runs.append(self._fit_lloyd(records, eps_runs[r], delta_runs[r], rng))
            else:
                runs.append(self._fit_greedy(records, eps_runs[r], delta_runs[r], split, rng))
        if R == 1:
            state = runs[0]
        else:
            ledger = [dict(e, label=f"repeat {r + 1}: {e['label']}") for r, run in enumerate(runs)
                      for e in run["privacy_ledger_"]]
            # the choice spends the remainder, so that the ledger adds up to at most epsilon exactly
            eps_select = split_budget(self.epsilon, [1.0], spent=box_spent + [e["epsilon"] for e in ledger])[0]
            chosen, entry = self._select_run(records, [run["cluster_centers_"] for run in runs], eps_select, rng)
            state = dict(runs[chosen], privacy_ledger_=ledger + [entry])
            self._log(f"boosting: the exponential mechanism chose run {chosen + 1} of {R}")
        self.selected_repeat_ = 0 if R == 1 else chosen
        state["privacy_ledger_"] = box_ledger + state["privacy_ledger_"]
        for key, value in state.items():
            setattr(self, key, value)
        self._finish(records, dtype)
        return self

    def _select_run(self, records, candidates, epsilon, rng):
        """The exponential mechanism on the runs' k-means costs (lower is better).

        A record's squared distance to its nearest centre is at most the
        squared diameter of the box ``Delta = (2 ||h||)^2`` (records and
        centres both lie in the box), so adding or removing one record moves
        every candidate's cost by at most ``Delta``, all in the same direction:
        the utility ``-cost`` is monotone and choosing run ``i`` with
        probability proportional to ``exp(-epsilon * cost_i / Delta)`` is
        ``epsilon``-DP (McSherry and Talwar, 2007; Dwork and Roth, 2014,
        Section 3.4). The choice is sampled exactly, on costs floored to a
        grid of ``2**-30 Delta`` (which adds one grid step to ``Delta``):
        ``privacy.exponential_choice``.
        """
        lower, upper = self.bounds_
        diam2 = float(np.sum((upper - lower) ** 2))
        if isinstance(records, np.ndarray):  # clipped records in memory
            records = _Records(records, self.bounds_, self.privacy, None, "cpu")
        costs = records.costs(candidates)
        chosen, sensitivity = exponential_choice(costs, diam2, epsilon, rng)
        entry = ledger_entry(f"choice among {len(candidates)} repeats (exponential mechanism on the k-means cost)",
                             "exponential", sensitivity=sensitivity, scale=sensitivity / epsilon, epsilon=epsilon)
        return chosen, entry

    def _finish(self, records, dtype=np.float64):
        order = np.argsort(-self.cluster_sizes_, kind="stable")  # by noisy size: post-processing
        self.cluster_centers_ = self.cluster_centers_[order].astype(dtype)
        self.projected_centers_ = self.projected_centers_[order]
        self.cluster_sizes_ = self.cluster_sizes_[order]
        self._n_features_out = self.n_clusters
        centers = self.cluster_centers_.astype(np.float64)
        self.labels_, self.inertia_ = records.labels_and_inertia(centers)
        self.epsilon_spent_ = math.fsum(e["epsilon"] for e in self.privacy_ledger_)
        self.delta_spent_ = math.fsum(e["delta"] for e in self.privacy_ledger_)

    def _sum_delta(self, epsilon, delta):
        """``delta`` when Gaussian sums are more accurate than Laplace sums at this budget, else 0.

        Per coordinate, Laplace noise on the L1 sensitivity ``||h||_1`` has
        variance ``2 (||h||_1 / epsilon)^2``; Gaussian noise on the L2
        sensitivity ``||h||_2`` has ``sigma(epsilon, delta)^2``. Gaussian wins
        in high dimension at small epsilon, Laplace in low dimension or at
        large epsilon (its noise falls like ``1 / epsilon``, the Gaussian's
        like ``1 / sqrt(epsilon)``). The choice reads public parameters only.
        """
        if delta <= 0:
            return 0.0
        half = (self.bounds_[1] - self.bounds_[0]) / 2.0
        factor = 1.0 if self.privacy == "central" else 2.0  # both sensitivities double in the local model
        laplace_var = 2.0 * (factor * float(half.sum()) / epsilon) ** 2
        gauss_var = gaussian_noise_scale(epsilon, delta, factor * float(np.linalg.norm(half))) ** 2
        return float(delta) if gauss_var < laplace_var else 0.0

    def _noisy_size(self, n, epsilon, rng):
        noise = grid_laplace(1.0, epsilon, n_rounded=1, integer=True)
        entry = ledger_entry("dataset size", "laplace", sensitivity=noise.sensitivity, scale=noise.scale,
                             epsilon=epsilon)
        return max(1.0, float(add_noise(float(n), noise, rng))), entry

    def _fit_greedy(self, records, epsilon, delta, split, rng):
        n, d = records.n, records.d
        ledger = []
        if self.privacy == "central":
            t = split[0]
            eps_size, eps_levels, eps_count, eps_sum = split_budget(
                epsilon, [t * _SIZE_SHARE, t * (1 - _SIZE_SHARE), split[1], split[2]])
            n_hat, entry = self._noisy_size(n, eps_size, rng)
            ledger.append(entry)
        else:
            eps_levels, eps_count, eps_sum = split_budget(epsilon, split)
            n_hat = float(n)  # the server sees the number of reports
        n_components = self._n_components(d, n_hat, epsilon)
        geometry = _Geometry(*self.bounds_, n_components, rng)
        L = self._levels(n_hat, n_components, epsilon)
        log_n = math.log(max(n_hat, math.e))
        if self.privacy == "central":
            threshold = self.threshold_factor * (L / eps_levels) * log_n
        else:
            threshold = olh_count_std(n, L, eps_levels) * math.sqrt(2.0 * self.threshold_factor * log_n)
        hist = records.histogram(geometry, L, eps_levels, threshold, rng)
        ledger.extend(hist.ledger)
        self._log(f"tree: {L} levels, {len(hist.levels)} released cells, {int(hist.heavy.sum())} heavy, "
                  f"threshold {threshold:.3g}")
        M, bicriteria, n_tried = bicriteria_to_k(hist, self.n_clusters, self.max_centers_factor * self.n_clusters,
                                                 geometry.cube, self.n_init, rng)
        self._log(f"greedy: {len(bicriteria)} bicriteria centres -> {len(M)}")
        counts, sums, center, entries = records.group_sums(
            geometry, M, self.n_clusters, self.bounds_, rng, epsilon_count=eps_count, epsilon_sum=eps_sum,
            delta=self._sum_delta(eps_sum, delta))
        ledger.extend(entries)
        return {"cluster_centers_": self._centres(counts, sums, center, geometry.lift_fallback(M)),
                "projected_centers_": M, "cluster_sizes_": counts, "privacy_ledger_": ledger,
                "n_iter_": n_tried, "n_levels_": L, "n_components_": n_components,
                "projection_": geometry.projection, "histogram_": hist, "mp_centers_": bicriteria}

    def _centres(self, counts, sums, center, fallback):
        lower, upper = self.bounds_
        means = center + sums / np.maximum(counts, 1.0)[:, None]
        means = np.where((counts >= 1.0)[:, None], means, fallback)
        return np.clip(means, lower, upper)

    def _fit_lloyd(self, records, epsilon, delta, rng):
        n, d = records.n, records.d
        lower, upper = self.bounds_
        ledger, spent = [], []
        if self.max_iter == "auto":
            if self.privacy == "central":
                eps_size = split_budget(epsilon, [_SIZE_SHARE, 1 - _SIZE_SHARE])[0]
                n_hat, entry = self._noisy_size(n, eps_size, rng)
                ledger.append(entry)
                spent.append(eps_size)
            else:
                n_hat = float(n)
            k = self.n_clusters
            eps_m = math.sqrt(500 * k ** 3 / n_hat ** 2 * (d + (4 * d * _RHO ** 2) ** (1 / 3)) ** 3)
            n_iter = int(max(min((epsilon - math.fsum(spent)) / eps_m, 7), 2))
        else:
            n_iter = int(self.max_iter)
        ratio = (4 * d * _RHO ** 2) ** (1 / 3)  # Su et al.: eps_count : eps_sum = 1 : ratio
        eps_parts = split_budget(epsilon, [1.0, ratio] * n_iter, spent=spent)
        delta_parts = split_budget(delta, [1.0] * n_iter) if delta > 0 else [0.0] * n_iter
        centers = rng.uniform(lower, upper, size=(self.n_clusters, d))
        counts = np.zeros(self.n_clusters)
        for it in range(n_iter):
            counts, sums, center, entries = records.group_sums(
                None, centers, self.n_clusters, self.bounds_, rng, epsilon_count=eps_parts[2 * it],
                epsilon_sum=eps_parts[2 * it + 1], delta=self._sum_delta(eps_parts[2 * it + 1], delta_parts[it]))
            ledger.extend(dict(e, label=f"round {it + 1}: {e['label']}") for e in entries)
            centers = self._centres(counts, sums, center, centers)
            self._log(f"DP-Lloyd round {it + 1}/{n_iter}")
        return {"cluster_centers_": centers, "projected_centers_": centers.copy(), "cluster_sizes_": counts,
                "privacy_ledger_": ledger, "n_iter_": n_iter, "n_levels_": 0, "n_components_": d,
                "projection_": np.eye(d), "histogram_": None, "mp_centers_": np.zeros((0, d))}

    # ------------------------------------------------------------------------------------------
    # continual observation

    def _stream_signature(self):
        def norm(v):
            return repr(np.asarray(v, dtype=object).tolist()) if isinstance(v, (tuple, list, np.ndarray)) else repr(v)

        return {name: norm(getattr(self, name)) for name in _STREAM_PARAMS}

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Add one batch of records (one time step) and re-derive the centres.

        The counts of every quadtree cell are kept by the binary-tree
        mechanism over at most ``max_steps`` steps, so the whole stream of
        releases (the centres after every step) is ``(epsilon, delta)``-DP.
        Each step runs the same greedy on the current noisy counts and lifts
        the centres with noisy per-cell sums kept the same way. To continue
        the stream, the estimator keeps the exact per-cell counts and sums of
        every step in private state: publish ``cluster_centers_``, not the
        fitted object. Runs on the CPU whatever ``device`` says.

        The parameters that define the stream's privacy (``epsilon``,
        ``delta``, ``bounds``, ``budget_split``, ``max_steps``,
        ``n_components``, ``n_levels``, ``privacy``, ``algorithm``,
        ``n_repeats``) cannot change between calls: a change raises
        ``ValueError`` (the budget was committed when the stream started);
        call :meth:`fit` or start a new estimator. Post-processing parameters
        (``n_clusters``, ``threshold_factor``, ``max_centers_factor``,
        ``n_init``) may change.

        Parameters
        ----------
        X : array-like or Dask collection of shape (n_samples, n_features)
            The batch of new records (a Dask collection is one batch, reduced
            block by block).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Updated estimator.
        """
        first = not hasattr(self, "_stream")
        if not first:
            before = self.__dict__["_stream_params"]
            changed = sorted(k for k, v in self._stream_signature().items() if before[k] != v)
            if changed:
                raise ValueError(
                    f"{type(self).__name__}.partial_fit: {', '.join(changed)} changed since the stream started; "
                    f"they fix the stream's privacy budget, so they cannot change mid-stream. Call fit, or start "
                    f"a new estimator, to begin a new stream."
                )
        with self._torch_fit_context():  # the device rule (cuda without a GPU raises)
            self.device_ = "cpu"  # the stream itself runs on the CPU
            return self._partial_fit(X, first)

    def _partial_fit(self, X, first):
        dask_input = is_dask_collection(X)
        if dask_input:
            from ._private_kmeans_dask import dask_records

            records, dtype = dask_records(self, X, reset=first)
        else:
            X = validate_data(self, as_numpy(X), dtype=[np.float64, np.float32], reset=first)
            dtype = X.dtype
            X = np.asarray(X, dtype=np.float64)
        if self.privacy != "central" or self.algorithm != "greedy":
            raise ValueError(
                f"{type(self).__name__}.partial_fit (continual observation) runs the greedy in the central "
                f"model; got privacy={self.privacy!r}, algorithm={self.algorithm!r}."
            )
        self._check_repeats(stream=True)
        if first:
            if dask_input:
                self._start_stream(records.n, records.d, records.grid_histogram, records.data_range)
            else:
                self._start_stream(len(X), X.shape[1], lambda radius: grid_histogram(X, radius),
                                   lambda: (X.min(axis=0), X.max(axis=0)))
        elif isinstance(self.bounds, str):
            warnings.warn(f"{type(self).__name__}: bounds='data' read the stream's box from its first batch and "
                          "publishes it in bounds_, which no differential-privacy guarantee covers.",
                          PrivacyLeakWarning, stacklevel=3)
        elif self.n_steps_ >= self.max_steps:
            raise ValueError(
                f"{type(self).__name__}.partial_fit: the budget covers max_steps={self.max_steps} steps and "
                f"all were used; call fit, or start a new stream with a larger max_steps."
            )
        geometry, stream = self._geometry, self._stream
        lower, upper = self.bounds_
        # the step's exact cell counts and sums (fixed-point pieces, rounded once: the same in memory and for
        # every chunking of a Dask collection), then the stream's mechanism
        exponents = scale_exponents(geometry.half)
        if dask_input:
            records.set_bounds(self.bounds_)
            tables = records.step_tables(geometry, stream.n_levels, exponents)
        else:
            records = _Records(X, self.bounds_, self.privacy, None, "cpu")
            Xc = records.Xc
            tables = step_pieces(geometry.to_unit(geometry.project(Xc)), stream.n_levels, Xc - geometry.center,
                                 exponents)
        stream.add_step_tables(*step_sums(tables, exponents))
        self.n_steps_ = stream.n_steps
        rng = check_random_state(self._step_seed + self.n_steps_)
        n_hat = max(float(stream.counts(0, np.zeros(1, dtype=np.int64))[0]), 1.0)
        threshold = self.threshold_factor * stream.prefix_noise_std() / math.sqrt(2.0) * math.log(
            max(n_hat, math.e))
        hist = stream.grow(threshold, -geometry.cube, geometry.cube)
        self.histogram_ = hist
        M, self.mp_centers_, self.n_iter_ = bicriteria_to_k(
            hist, self.n_clusters, self.max_centers_factor * self.n_clusters, geometry.cube, self.n_init, rng)
        # lift: the finest heavy cells (noisy counts and sums), each to its nearest projected centre
        sel = np.flatnonzero(hist.frontier())
        keys = hist.cell_keys()
        cell_sums = np.zeros((len(sel), len(lower)))
        for level in np.unique(hist.levels[sel]):
            at = hist.levels[sel] == level
            cell_sums[at] = stream.sums(level, keys[sel][at])
        owner = nearest(hist.mass_centers()[sel], M) if len(sel) else np.zeros(0, int)
        counts = np.bincount(owner, weights=hist.counts[sel], minlength=self.n_clusters)
        sums = np.zeros((self.n_clusters, len(lower)))
        np.add.at(sums, owner, cell_sums)
        self.cluster_centers_ = self._centres(counts, sums, geometry.center, geometry.lift_fallback(M))
        self.projected_centers_ = M
        self.cluster_sizes_ = counts
        self.selected_repeat_ = 0
        self._finish(records, dtype)
        return self

    def _start_stream(self, n, d, histogram, data_range):
        split = self._split()
        rng = noise_random_state(self.random_state)  # None: cryptographic noise
        self.bounds_, ledger = self._resolve_bounds(d, histogram, data_range, rng)
        box_spent = [e["epsilon"] for e in ledger]
        tree_share = split[0] + split[1]
        if self.n_levels == "auto" or self.n_components == "auto":
            eps_size, eps_tree, eps_sum = split_budget(
                self.epsilon, [tree_share * _SIZE_SHARE, tree_share * (1 - _SIZE_SHARE), split[2]], spent=box_spent)
            n_hat, entry = self._noisy_size(n, eps_size, rng)
            ledger.append(entry)
        else:
            eps_tree, eps_sum = split_budget(self.epsilon, [tree_share, split[2]], spent=box_spent)
            n_hat = float(n)
        self.n_components_ = self._n_components(d, n_hat, self.epsilon)
        geometry = _Geometry(*self.bounds_, self.n_components_, rng)
        self.projection_ = geometry.projection
        L = self._levels(n_hat, self.n_components_, self.epsilon)
        self.n_levels_ = L
        seed = secret_seed(rng)  # the secret of the stream's counter-based noise
        self._step_seed = int(rng.randint(SEED_MAX // 2))  # room to add the step count
        stream = ContinualQuadtreeHistogram(
            self.n_components_, L, self.max_steps, eps_tree, seed, sums=True, sum_epsilon=eps_sum,
            sum_delta=self.delta, sum_sensitivity=geometry.radius, sum_l1_sensitivity=float(geometry.half.sum()),
            n_values=len(geometry.half))
        self.privacy_ledger_ = ledger + stream.ledger
        self._geometry = geometry
        self._stream = stream
        self._stream_params = self._stream_signature()

    # ------------------------------------------------------------------------------------------
    # post-fit methods (post-processing of the private centres)

    def predict(self, X):
        """Index of the nearest centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Nearest centre of each record.
        """
        X = check_test_data(self, X)
        return assign(np.asarray(X, dtype=np.float64), self.cluster_centers_)[0]

    def transform(self, X):
        """Euclidean distances to the centres.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
            Distance of each record to each centre.
        """
        X = check_test_data(self, X)
        X = np.asarray(X, dtype=np.float64)
        scale, sq = scaled_sq_distances(X, self.cluster_centers_)
        with np.errstate(over="ignore"):
            distances = np.sqrt(sq) * scale[:, None]
        if not np.all(np.isfinite(distances)):
            raise ValueError(f"{type(self).__name__}.transform: distances to the centres reach beyond the float64 "
                             f"range (X holds values up to {np.abs(X).max():.3g}); rescale X.")
        return distances

    def score(self, X, y=None):
        """Opposite of the k-means cost of ``X`` on the centres (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Minus the sum of squared distances to the nearest centre.
        """
        X = check_test_data(self, X)
        X = np.asarray(X, dtype=np.float64)
        cost = assign(X, self.cluster_centers_)[1]
        if not math.isfinite(cost):
            raise ValueError(f"{type(self).__name__}.score: the k-means cost of X is beyond the float64 range (X "
                             f"holds values up to {np.abs(X).max():.3g}); rescale X.")
        return -cost
