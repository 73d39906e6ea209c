"""Ask/tell Bayesian optimisers over a box: MALIBO (MetaBayesianOptimizer) and plain LFBO (LikelihoodFreeOptimizer)."""

import contextlib
from numbers import Integral, Real

import numpy as np
from scipy.optimize import OptimizeResult
from sklearn.base import BaseEstimator, clone
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data

from ..utils._sklearn_private import HasMethods, Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._torch_base import TorchEstimatorMixin
from ._lfbo import _lfbo_rows
from ._meta_lfbo import MetaLFBOClassifier
from ._tasks import check_task_list, is_task_list, split_by_groups

__all__ = ["LikelihoodFreeOptimizer", "MetaBayesianOptimizer"]

_SEED_MAX = np.iinfo(np.int32).max
_GB_DEFAULTS = dict(validation_fraction=0.3, n_iter_no_change=5)


class _LikelihoodFreeBase(BaseEstimator):
    """Shared ask/tell machinery: unit-cube scaling, likelihood-free labels, the GB model, random search."""

    _parameter_constraints = {
        "bounds": ["array-like", None],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        "weight_type": [StrOptions({"ei", "pi"})],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "gb_params": [dict, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    # -- fitting: earlier tasks and the bounds --------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None, groups=None):
        """Start an optimisation run, learning from earlier tasks' observations.

        Parameters
        ----------
        X : list of (X_t, y_t) pairs, dict of such pairs, array-like of shape (n_observations, n_dims) or None, \
                default=None
            The earlier tasks: per task, the evaluated points ``X_t`` of shape
            ``(n_t, n_dims)`` and their objective values ``y_t`` (lower is
            better). Or all observations stacked, with ``y`` and ``groups``.
            None: no earlier tasks (then ``bounds`` is required).
        y : array-like of shape (n_observations,), default=None
            Objective values, when ``X`` is a stacked array.
        groups : array-like of shape (n_observations,), default=None
            Task of each stacked observation; None means one task.

        Returns
        -------
        self : object
            The optimiser, with no observation of the new task yet.
        """
        name = type(self).__name__
        with self._fit_scope():
            if X is None:
                if y is not None:
                    raise ValueError(f"{name}.fit: y was given without X.")
                tasks = []
                n_dims = None
            elif is_task_list(X, y):
                tasks, n_dims = check_task_list(X, name)
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            else:
                X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=np.float64, y_numeric=True)
                tasks = split_by_groups(X, y, groups, name)
                n_dims = X.shape[1]
            self.bounds_ = self._check_bounds(tasks, n_dims)
            self.n_features_in_ = self.bounds_.shape[0]
            rng = check_random_state(self.random_state)
            self._seed = int(rng.randint(_SEED_MAX))
            self._fit_meta([(self._to_unit(X_t), y_t) for X_t, y_t in tasks], rng)
            self._start_run()
        return self

    def _fit_scope(self):
        """The context of ``fit``: the torch fit context for an optimiser with a ``device``, else none."""
        return self._torch_fit_context() if isinstance(self, TorchEstimatorMixin) else contextlib.nullcontext()

    def _check_bounds(self, tasks, n_dims):
        name = type(self).__name__
        if self.bounds is None:
            if not tasks:
                raise ValueError(f"{name}: give bounds=[(low, high), ...] or earlier tasks to infer them from.")
            X_all = np.concatenate([X_t for X_t, _ in tasks])
            low, high = X_all.min(axis=0), X_all.max(axis=0)
            high = np.where(high > low, high, low + 1.0)
            return np.column_stack([low, high])
        bounds = check_array(as_numpy(self.bounds), dtype=np.float64, input_name="bounds")
        if bounds.shape[1] != 2 or not np.all(bounds[:, 0] < bounds[:, 1]):
            raise ValueError(f"{name}: bounds must be a list of (low, high) pairs with low < high; "
                             f"got {self.bounds!r}.")
        if n_dims is not None and bounds.shape[0] != n_dims:
            raise ValueError(f"{name}: bounds has {bounds.shape[0]} dimensions but the earlier tasks have "
                             f"{n_dims}.")
        return bounds

    def _to_unit(self, X):
        return (X - self.bounds_[:, 0]) / (self.bounds_[:, 1] - self.bounds_[:, 0])

    def _from_unit(self, U):
        return self.bounds_[:, 0] + U * (self.bounds_[:, 1] - self.bounds_[:, 0])

    def _start_run(self):
        self._rng = np.random.RandomState(self._seed)
        d = self.n_features_in_
        self.X_obs_ = np.empty((0, d))
        self.y_obs_ = np.empty(0)
        self.x_best_ = None
        self.y_best_ = np.inf
        self._update()

    # -- the acquisition model ----------------------------------------------------------------------
    def _gb_params(self):
        params = dict(_GB_DEFAULTS)
        params.update(self.gb_params or {})
        return params

    def _fit_gb(self, make_init, X, labels, weights, seed):
        """MALIBO's residual: GB with early stopping picks the number of trees, then a refit on all data."""
        params = self._gb_params()
        probe = GradientBoostingClassifier(init=make_init(), random_state=seed, **params)
        probe.fit(X, labels, sample_weight=weights)
        params.pop("n_iter_no_change", None)
        params.pop("validation_fraction", None)
        params["n_estimators"] = max(int(probe.n_estimators_), 1)
        model = GradientBoostingClassifier(init=make_init(), random_state=seed, **params)
        return model.fit(X, labels, sample_weight=weights)

    def _update(self):
        """Refit the acquisition model on the observations so far."""
        U = self._to_unit(self.X_obs_)
        y = self.y_obs_
        self.threshold_ = np.nan
        self.n_estimators_ = 0
        seed = int(self._rng.randint(_SEED_MAX))
        if np.unique(y).size < 2:
            self.model_ = self._prior_model(y.size, seed)
            return
        index, labels, weights, tau = _lfbo_rows(y, self.gamma, self.weight_type)
        self.threshold_ = tau
        n_pos = int(labels.sum())
        self.model_ = self._adapted_model(U[index], labels, weights, n_pos, y.size - n_pos, seed)
        if isinstance(self.model_, GradientBoostingClassifier):
            self.n_estimators_ = int(self.model_.n_estimators_)

    def _acquisition(self, U):
        if self.model_ is None:
            return np.full(U.shape[0], 0.5)
        return self.model_.predict_proba(U)[:, 1]

    def score_samples(self, X):
        """The acquisition function at ``X``: the classifier's probability of "below the threshold".

        Parameters
        ----------
        X : array-like of shape (n_points, n_dims)
            Points in the original coordinates.

        Returns
        -------
        acquisition : ndarray of shape (n_points,)
            Acquisition values given the observations so far (constant 0.5
            where the acquisition is uniform random search). :meth:`suggest`
            maximises it.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=np.float64)
        return self._acquisition(self._to_unit(X))

    # -- ask / tell ------------------------------------------------------------------------------------
    def suggest(self, n_suggestions=1, candidates=None):
        """Propose the next point(s) to evaluate (ask).

        Parameters
        ----------
        n_suggestions : int, default=1
            Number of points; the best distinct candidates of the current
            acquisition function.
        candidates : array-like of shape (n_candidates, n_dims), default=None
            Points to choose from (a pool of configurations, as in a discrete
            search space). By default ``n_candidates`` points drawn uniformly
            in the bounds (random-search acquisition optimisation).

        Returns
        -------
        X_next : ndarray of shape (n_suggestions, n_dims)
            Points in the original coordinates.
        """
        check_is_fitted(self)
        if candidates is None:
            return self._from_unit(self._suggest_unit(n_suggestions, None)[0])
        C = validate_data(self, as_numpy(candidates), reset=False, dtype=np.float64)
        return C[self._suggest_unit(n_suggestions, self._to_unit(C))[1]]

    def _suggest_unit(self, n_suggestions, pool):
        """Chosen unit-cube points and, in pool mode, their row indices in ``pool``."""
        name = type(self).__name__
        if not isinstance(n_suggestions, Integral) or n_suggestions < 1:
            raise ValueError(f"{name}.suggest: n_suggestions must be a positive integer; got {n_suggestions!r}.")
        rng = self._rng
        d = self.n_features_in_
        pool_mode = pool is not None
        C = pool if pool_mode else rng.uniform(size=(max(self.n_candidates, n_suggestions), d))
        scores = self._acquisition(C)
        perm = rng.permutation(C.shape[0])  # random tie-breaking
        order = perm[np.argsort(-scores[perm], kind="stable")]
        observed = self._to_unit(self.X_obs_)
        chosen, index = [], []
        for i in order:
            if len(chosen) == n_suggestions:
                break
            taken = np.vstack([observed] + [c[None] for c in chosen]) if chosen else observed
            duplicate = taken.shape[0] > 0 and np.min(np.abs(taken - C[i]).max(axis=1)) < 1e-12
            if duplicate:
                if pool_mode:
                    continue
                # MALIBO's duplicate guard: a random point instead
                chosen.append(rng.uniform(size=d))
                index.append(-1)
                continue
            chosen.append(C[i])
            index.append(i)
        if pool_mode and len(chosen) < n_suggestions:
            raise ValueError(f"{name}.suggest: only {len(chosen)} of the {C.shape[0]} candidates are new; "
                             f"{n_suggestions} were asked for.")
        return np.array(chosen), np.array(index, dtype=int)

    def observe(self, X, y):
        """Record evaluations of the objective (tell) and update the acquisition function.

        Parameters
        ----------
        X : array-like of shape (n_points, n_dims)
            Evaluated points, in the original coordinates.
        y : array-like of shape (n_points,)
            Their objective values (lower is better).

        Returns
        -------
        self : object
            The optimiser.
        """
        check_is_fitted(self)
        X, y = validate_data(self, as_numpy(X), as_numpy(y), reset=False, dtype=np.float64, y_numeric=True)
        self.X_obs_ = np.vstack([self.X_obs_, X])
        self.y_obs_ = np.concatenate([self.y_obs_, y])
        best = int(np.argmin(self.y_obs_))
        self.x_best_, self.y_best_ = self.X_obs_[best].copy(), float(self.y_obs_[best])
        self._update()
        return self

    def minimize(self, func, n_iter=16, *, x0=None, y0=None, callback=None):
        """Minimise ``func`` with ``n_iter`` sequential evaluations, like :func:`scipy.optimize.minimize`.

        Each call is an independent run from the meta-learned prior: the
        observations of earlier :meth:`observe` calls and runs are replaced by
        this run's (the earlier tasks stay learned). The optimiser is fitted
        without earlier tasks first if :meth:`fit` has not been called.

        Parameters
        ----------
        func : callable
            ``func(x) -> float`` for one point ``x`` of shape ``(n_dims,)``.
        n_iter : int, default=16
            Number of suggested evaluations; 0 (only with ``x0``) evaluates
            the initial points alone.
        x0 : array-like of shape (n_initial, n_dims), default=None
            Initial points, evaluated first (not counted in ``n_iter``).
        y0 : array-like of shape (n_initial,), default=None
            Their objective values, if already known (then ``func`` is not
            called on them).
        callback : callable, default=None
            ``callback(result)`` after each evaluation, with the
            :class:`~scipy.optimize.OptimizeResult` so far; returning True
            stops the run.

        Returns
        -------
        result : scipy.optimize.OptimizeResult
            ``x`` and ``fun`` (best point and value), ``x_iters`` and
            ``func_vals`` (all evaluations in order), ``nfev``, ``nit``,
            ``success`` and ``message``.

        Raises
        ------
        ValueError
            If ``n_iter`` is negative, or 0 without ``x0`` (nothing would be
            evaluated), or if ``func`` returns a non-finite value.
        """
        name = type(self).__name__
        if not callable(func):
            raise TypeError(f"{name}.minimize: func must be callable; got {type(func).__name__}.")
        if not isinstance(n_iter, Integral) or n_iter < 0:
            raise ValueError(f"{name}.minimize: n_iter must be a non-negative integer; got {n_iter!r}.")
        if n_iter == 0 and x0 is None:
            raise ValueError(f"{name}.minimize: n_iter=0 without x0 evaluates nothing, so there is no minimum to "
                             "return; give n_iter >= 1 or initial points x0.")
        if not hasattr(self, "bounds_"):
            self.fit()
        self._start_run()
        nfev = 0

        def evaluate(x):
            value = func(x)
            value = float(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else float(value)
            if not np.isfinite(value):
                raise ValueError(f"{name}.minimize: func returned {value!r} at x={x!r}.")
            return value

        if x0 is not None:
            x0 = check_array(as_numpy(x0), dtype=np.float64, ensure_2d=False)
            x0 = x0.reshape(-1, self.n_features_in_)
            if y0 is None:
                y0 = [evaluate(x) for x in x0]
                nfev += len(x0)
            self.observe(x0, column_or_1d(np.asarray(as_numpy(y0), dtype=np.float64)))
        stopped = False
        for it in range(n_iter):
            x = self.suggest(1)[0]
            self.observe(x[None, :], [evaluate(x)])
            nfev += 1
            if self.verbose:
                print(f"[{name}] evaluation {it + 1:3d}: f = {self.y_obs_[-1]:.6g}, best {self.y_best_:.6g}",
                      flush=True)
            if callback is not None and callback(self._result(nfev, it + 1, "running")):
                stopped = True
                break
        message = "stopped by the callback" if stopped else f"{n_iter} evaluations done"
        return self._result(nfev, len(self.y_obs_), message)

    def _result(self, nfev, nit, message):
        return OptimizeResult(x=None if self.x_best_ is None else self.x_best_.copy(), fun=self.y_best_,
                              x_iters=self.X_obs_.copy(), func_vals=self.y_obs_.copy(), nfev=nfev, nit=nit,
                              success=self.x_best_ is not None, message=message)


class _PriorDraw:
    """Acquisition of one fixed posterior draw of a meta-learned classifier's task head."""

    def __init__(self, classifier, seed):
        self.classifier = classifier
        self.seed = seed

    def predict_proba(self, X):
        p = self.classifier.sample_proba(X, 1, random_state=self.seed)[0]
        return np.column_stack([1.0 - p, p])


class MetaBayesianOptimizer(TorchEstimatorMixin, _LikelihoodFreeBase):
    """Meta-learned likelihood-free Bayesian optimisation (MALIBO), with an ask/tell interface.

    MALIBO [1]_ minimises an expensive black-box function over a box by
    maximising a classifier instead of a surrogate-based acquisition:

    1. :meth:`fit` meta-trains a :class:`MetaLFBOClassifier` on earlier tasks'
       observations (the same kind of function, other instances).
    2. The first query is zero-shot: the maximiser of the meta-learned prior
       acquisition.
    3. After each :meth:`observe`, the observations become a likelihood-free
       training set (threshold at the ``gamma``-quantile, EI-type weights) and
       the classifier's task head is adapted by Bayesian logistic regression
       with a Laplace posterior; with ``thompson=True`` the acquisition uses
       one posterior draw (Thompson sampling).
    4. Once two observations lie on each side of the threshold, a
       :class:`~sklearn.ensemble.GradientBoostingClassifier` whose ``init``
       is the adapted classifier corrects it (the residual that makes the
       method robust when the earlier tasks mislead): early stopping on 30 %
       of the data picks the number of trees, then a refit on all data.
    5. :meth:`suggest` maximises the acquisition by random search over
       ``n_candidates`` uniform points (or a given pool), with a duplicate
       guard.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    bounds : array-like of shape (n_dims, 2), default=None
        ``(low, high)`` of each dimension. None: the box of the earlier
        tasks' points.
    gamma : float, default=1/3
        Quantile of the distinct observed values that separates the classes.
    weight_type : {"ei", "pi"}, default="ei"
        Weights of the likelihood-free labels.
    n_candidates : int, default=5120
        Random candidates scored per suggestion.
    thompson : bool, default=True
        Use one posterior draw of the task head per update (Thompson
        sampling) instead of the posterior mean.
    residual : bool, default=True
        Fit the gradient-boosting residual once both classes hold two
        observations.
    gb_params : dict, default=None
        Parameters of the :class:`~sklearn.ensemble.GradientBoostingClassifier`
        (default: scikit-learn's, with ``validation_fraction=0.3`` and
        ``n_iter_no_change=5``).
    classifier : MetaLFBOClassifier, default=None
        Template of the meta-learned classifier (network size, training
        budget); default ``MetaLFBOClassifier()``, a network with about a
        tenth of the paper's arithmetic per observation. It is
        cloned; its ``gamma``, ``weight_type`` and ``device`` are set to the
        optimiser's. A classifier already meta-trained (by
        :meth:`MetaLFBOClassifier.meta_fit` on tasks scaled to the unit cube)
        is reused as it is when :meth:`fit` gets no earlier tasks.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where meta-training runs; forwarded to the classifier. ``"cuda"``
        without a GPU raises in :meth:`fit` (and :meth:`minimize`) before any
        work.
    random_state : int, RandomState instance or None, default=None
        Seeds the candidates, the posterior draws and the trees, and
        meta-training: a seed drawn from it is forwarded to the classifier
        unless the classifier has a ``random_state`` of its own.
    verbose : int, default=0
        Progress on standard output: each evaluation of :meth:`minimize`
        with the best value so far when positive; meta-training's epochs too
        (forwarded to a classifier whose own ``verbose`` is 0).

    Attributes
    ----------
    bounds_ : ndarray of shape (n_dims, 2)
        The box searched.
    classifier_ : MetaLFBOClassifier
        The meta-trained classifier (unfitted template when there were no
        earlier tasks).
    device_ : str
        The resolved ``device`` (``"cpu"`` or ``"cuda"``).
    model_ : estimator or None
        Current acquisition model: the adapted classifier, the gradient
        boosting on top of it, or the meta-learned prior before two distinct
        values are observed (None without earlier tasks: uniform).
    X_obs_ : ndarray of shape (n_observations, n_dims)
        Points evaluated on the current task.
    y_obs_ : ndarray of shape (n_observations,)
        Their values.
    x_best_ : ndarray of shape (n_dims,) or None
        Best point so far.
    y_best_ : float
        Best value so far (inf before any observation).
    threshold_ : float
        Current threshold ``tau`` (NaN before two distinct values).
    n_estimators_ : int
        Trees of the current gradient-boosting residual (0 without one).
    n_features_in_ : int
        Number of dimensions.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Dimension names, when the earlier tasks came as a DataFrame.

    See Also
    --------
    LikelihoodFreeOptimizer : The same without meta-learning (LFBO).
    MetaBayesSearchCV : Hyper-parameter search of scikit-learn estimators with it.
    MetaLFBOClassifier : The meta-learned classifier.

    Notes
    -----
    * The optimiser minimises. All inputs are mapped to the unit cube by
      ``bounds_`` before they reach the classifier.
    * The first query maximises the meta-learned prior predictive
      (probit-approximated, task head ``z ~ N(0, I)``): the zero-shot
      query. Until two distinct values have been observed the observations
      carry no information for the classifier, so with ``thompson=True`` the
      next queries maximise a Thompson draw from that prior (the paper's
      duplicate guard would otherwise replace the repeated prior maximiser
      by a uniform random point).
    * The gradient-boosting ``init`` is an adapted classifier with its own
      Thompson draw; each update starts from one posterior sample, as in
      MALIBO.
    * With ``n_suggestions > 1``, :meth:`suggest` returns the best distinct
      candidates of one acquisition function (the paper is sequential).
    * :meth:`minimize` restarts the random generator from the seed drawn in
      :meth:`fit`, so two runs on the same function are identical.

    References
    ----------
    .. [1] J. Pan, S. Falkner, F. Berkenkamp and J. Vanschoren, "MALIBO:
       Meta-learning for Likelihood-free Bayesian Optimization", Proceedings of
       the 41st International Conference on Machine Learning (ICML), PMLR 235,
       pp. 39102-39134, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.optimize import MetaBayesianOptimizer, MetaLFBOClassifier
    >>> rng = np.random.RandomState(0)
    >>> def task(shift):
    ...     return lambda x: float(np.sum((np.asarray(x) - shift) ** 2))
    >>> earlier = []
    >>> for shift in rng.uniform(0.5, 0.7, size=8):
    ...     X_t = rng.uniform(size=(16, 1))
    ...     earlier.append((X_t, np.array([task(shift)(x) for x in X_t])))
    >>> opt = MetaBayesianOptimizer(
    ...     bounds=[(0.0, 1.0)], n_candidates=256, random_state=0,
    ...     classifier=MetaLFBOClassifier(n_features=8, n_hidden=16, n_layers=3, max_iter=300))
    >>> result = opt.fit(earlier).minimize(task(0.6), n_iter=6)
    >>> result.x_iters.shape
    (6, 1)
    >>> bool(result.fun < 0.01)
    True
    """

    _parameter_constraints = {
        **_LikelihoodFreeBase._parameter_constraints,
        "thompson": ["boolean"],
        "residual": ["boolean"],
        "classifier": [HasMethods(["meta_fit", "fit", "predict_proba"]), None],
    }

    def __init__(self, bounds=None, *, gamma=1 / 3, weight_type="ei", n_candidates=5120, thompson=True,
                 residual=True, gb_params=None, classifier=None, device="cpu", random_state=None, verbose=0):
        self.bounds = bounds
        self.gamma = gamma
        self.weight_type = weight_type
        self.n_candidates = n_candidates
        self.thompson = thompson
        self.residual = residual
        self.gb_params = gb_params
        self.classifier = classifier
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _fit_meta(self, tasks, rng):
        template = MetaLFBOClassifier() if self.classifier is None else self.classifier
        clf = clone(template).set_params(gamma=self.gamma, weight_type=self.weight_type, prediction="mean",
                                         device=self.device)
        own = clf.get_params()
        if own["random_state"] is None:
            clf.set_params(random_state=int(rng.randint(_SEED_MAX)))
        if self.verbose and not own.get("verbose"):
            clf.set_params(verbose=self.verbose)
        if tasks:
            clf.meta_fit(tasks)
        elif hasattr(clf, "_meta_state"):  # a classifier meta-trained beforehand (clone keeps its network)
            if clf._meta_state["n_dims"] != self.n_features_in_:
                raise ValueError(f"{type(self).__name__}: the meta-trained classifier has "
                                 f"{clf._meta_state['n_dims']} input dimensions but bounds has "
                                 f"{self.n_features_in_}.")
            clf._set_prior()
        self.classifier_ = clf

    def _prior_model(self, n_observations, seed):
        if not hasattr(self.classifier_, "classes_"):
            return None  # no earlier tasks: a flat prior, uniform random search
        if n_observations == 0 or not self.thompson:
            return self.classifier_  # zero-shot: the meta-learned prior predictive (probit mean)
        # observations carry no information yet (one distinct value): Thompson draw from the prior
        return _PriorDraw(self.classifier_, seed)

    def _adapted_model(self, X, labels, weights, n_pos, n_neg, seed):
        mode = "thompson" if self.thompson else "mean"

        def make_init():
            return clone(self.classifier_).set_params(prediction=mode, random_state=seed)

        if self.residual and n_pos >= 2 and n_neg >= 2:
            return self._fit_gb(make_init, X, labels, weights, seed)
        return make_init().fit(X, labels, sample_weight=weights)


class LikelihoodFreeOptimizer(_LikelihoodFreeBase):
    """Likelihood-free Bayesian optimisation (LFBO) with a gradient-boosting classifier: MALIBO's baseline.

    The acquisition is a :class:`~sklearn.ensemble.GradientBoostingClassifier`
    trained on the likelihood-free training set of the observations
    (threshold at the ``gamma``-quantile, EI-type weights; see
    :func:`likelihood_free_training_set`), with the number of trees chosen by
    early stopping as in :class:`MetaBayesianOptimizer`. It is maximised by
    random search over ``n_candidates`` uniform points. Until both classes
    hold two observations the suggestions are uniform random points. Nothing
    is learned from earlier tasks: :meth:`fit` accepts them (so the two
    optimisers are interchangeable in code) but only uses them to infer the
    bounds when ``bounds`` is None.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    bounds : array-like of shape (n_dims, 2), default=None
        ``(low, high)`` of each dimension. None: the box of the points passed
        to :meth:`fit`.
    gamma : float, default=1/3
        Quantile of the distinct observed values that separates the classes.
    weight_type : {"ei", "pi"}, default="ei"
        Weights of the likelihood-free labels.
    n_candidates : int, default=5120
        Random candidates scored per suggestion.
    gb_params : dict, default=None
        Parameters of the gradient boosting (default: scikit-learn's, with
        ``validation_fraction=0.3`` and ``n_iter_no_change=5``).
    random_state : int, RandomState instance or None, default=None
        Seeds the candidates and the trees.
    verbose : int, default=0
        Print progress of :meth:`minimize` when positive.

    Attributes
    ----------
    bounds_ : ndarray of shape (n_dims, 2)
        The box searched.
    model_ : GradientBoostingClassifier or None
        Current acquisition model (None while suggestions are random).
    X_obs_ : ndarray of shape (n_observations, n_dims)
        Points evaluated on the current task.
    y_obs_ : ndarray of shape (n_observations,)
        Their values.
    x_best_ : ndarray of shape (n_dims,) or None
        Best point so far.
    y_best_ : float
        Best value so far (inf before any observation).
    threshold_ : float
        Current threshold (NaN before two distinct values).
    n_estimators_ : int
        Trees of the current model (0 without one).
    n_features_in_ : int
        Number of dimensions.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Dimension names, when the points came as a DataFrame.

    See Also
    --------
    MetaBayesianOptimizer : The meta-learned version (MALIBO).

    Notes
    -----
    LFBO [2]_ is a recipe for any classifier; the original experiments used
    XGBoost among others. This baseline uses scikit-learn's gradient
    boosting with MALIBO's early-stopping protocol, so the only difference to
    :class:`MetaBayesianOptimizer` is the meta-learned ``init``.

    References
    ----------
    .. [1] J. Pan, S. Falkner, F. Berkenkamp and J. Vanschoren, "MALIBO:
       Meta-learning for Likelihood-free Bayesian Optimization", Proceedings of
       the 41st International Conference on Machine Learning (ICML), PMLR 235,
       2024.
    .. [2] J. Song, L. Yu, W. Neiswanger and S. Ermon, "A General Recipe for
       Likelihood-free Bayesian Optimization", ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.optimize import LikelihoodFreeOptimizer
    >>> opt = LikelihoodFreeOptimizer(bounds=[(-2.0, 2.0), (-2.0, 2.0)], n_candidates=512, random_state=0)
    >>> result = opt.minimize(lambda x: float(np.sum(x ** 2)), n_iter=20)
    >>> result.func_vals.shape
    (20,)
    >>> bool(result.fun < result.func_vals[:5].min())
    True
    """

    def __init__(self, bounds=None, *, gamma=1 / 3, weight_type="ei", n_candidates=5120, gb_params=None,
                 random_state=None, verbose=0):
        self.bounds = bounds
        self.gamma = gamma
        self.weight_type = weight_type
        self.n_candidates = n_candidates
        self.gb_params = gb_params
        self.random_state = random_state
        self.verbose = verbose

    def _fit_meta(self, tasks, rng):
        pass

    def _prior_model(self, n_observations, seed):
        return None

    def _adapted_model(self, X, labels, weights, n_pos, n_neg, seed):
        if n_pos >= 2 and n_neg >= 2:
            return self._fit_gb(lambda: None, X, labels, weights, seed)
        return None
