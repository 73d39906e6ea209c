"""MetaBayesSearchCV: hyper-parameter search with MALIBO that learns from earlier searches' cv_results_."""

import itertools
import math
import warnings
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import check_array, check_random_state, get_tags

from ..utils._sklearn_private import BaseSearchCV, HasMethods, Interval
from ..utils._torch_base import TorchEstimatorMixin
from ._optimizer import MetaBayesianOptimizer

__all__ = ["MetaBayesSearchCV"]

_PRIORS = ("uniform", "log-uniform")


def _is_number(v):
    return isinstance(v, (Real, np.number)) and not isinstance(v, (bool, np.bool_))


class _Dimension:
    """One hyper-parameter and its encoding into ``n_columns`` unit-interval columns."""

    def __init__(self, name, spec, owner):
        self.name = name
        if isinstance(spec, tuple) and len(spec) in (2, 3) and all(_is_number(v) for v in spec[:2]) and (
                len(spec) == 2 or spec[2] in _PRIORS):
            low, high = spec[0], spec[1]
            self.prior = spec[2] if len(spec) == 3 else "uniform"
            if not low < high:
                raise ValueError(f"{owner}: search space {name!r}: low must be below high; got {spec!r}.")
            if self.prior == "log-uniform" and low <= 0:
                raise ValueError(f"{owner}: search space {name!r}: a log-uniform range needs low > 0; got {spec!r}.")
            self.kind = "integer" if all(isinstance(v, (Integral, np.integer)) for v in spec[:2]) else "real"
            self.low, self.high = float(low), float(high)
            self.n_columns = 1
        elif isinstance(spec, (list, np.ndarray)) and len(spec) > 0:
            values = list(spec)
            if all(_is_number(v) for v in values):
                self.kind = "ordinal"
                self.values = sorted(set(values), key=float)
                self.n_columns = 1
            else:
                self.kind = "categorical"
                self.values = values
                self.n_columns = len(values) if len(values) > 1 else 1
        else:
            raise ValueError(
                f"{owner}: search space {name!r} must be a list of values, (low, high) or (low, high, prior) "
                f"with prior in {_PRIORS}; got {spec!r}.")

    @property
    def size(self):
        return len(self.values) if self.kind in ("ordinal", "categorical") else math.inf

    def _scale(self, v):
        if self.prior == "log-uniform":
            return (math.log(v) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (v - self.low) / (self.high - self.low)

    def _index(self, value):
        for i, v in enumerate(self.values):
            if v is value:
                return i
        for i, v in enumerate(self.values):
            try:
                if bool(v == value):
                    return i
            except (TypeError, ValueError):
                continue
        return None

    def encode(self, value):
        """Unit-interval columns of ``value``, or None when it is outside the space."""
        if self.kind in ("real", "integer"):
            if not _is_number(value) or not self.low <= float(value) <= self.high:
                return None
            return [self._scale(float(value))]
        if self.kind == "ordinal":
            if not _is_number(value):
                return None
            hits = [i for i, v in enumerate(self.values) if float(v) == float(value)]
            if not hits:
                return None
            return [hits[0] / (len(self.values) - 1) if len(self.values) > 1 else 0.5]
        i = self._index(value)
        if i is None:
            return None
        if self.n_columns == 1:
            return [0.5]
        column = [0.0] * self.n_columns
        column[i] = 1.0
        return column

    def sample(self, rng, n):
        if self.kind in ("ordinal", "categorical"):
            return [self.values[i] for i in rng.randint(len(self.values), size=n)]
        u = rng.uniform(size=n)
        if self.prior == "log-uniform":
            v = np.exp(np.log(self.low) + u * (np.log(self.high) - np.log(self.low)))
        else:
            v = self.low + u * (self.high - self.low)
        if self.kind == "integer":
            return [int(x) for x in np.clip(np.round(v), self.low, self.high)]
        return [float(x) for x in v]


class _SearchSpace:
    def __init__(self, spaces, owner):
        if not isinstance(spaces, Mapping) or not spaces:
            raise ValueError(f"{owner}: search_spaces must be a non-empty dict of parameter name -> space; "
                             f"got {spaces!r}.")
        self.dims = [_Dimension(name, spec, owner) for name, spec in spaces.items()]
        self.n_columns = sum(d.n_columns for d in self.dims)

    @property
    def size(self):
        size = 1
        for d in self.dims:
            size *= d.size
        return size

    def encode(self, params):
        row = []
        for d in self.dims:
            if d.name not in params:
                return None
            cols = d.encode(params[d.name])
            if cols is None:
                return None
            row.extend(cols)
        return row

    def key(self, params):
        return tuple(self.encode(params) or ())

    def candidates(self, rng, n_candidates, exclude):
        """Configurations and their encodings: the whole grid when it is small enough, else a random sample."""
        if self.size <= n_candidates:
            combos = itertools.product(*[range(len(d.values)) for d in self.dims])
            configs = [{d.name: d.values[i] for d, i in zip(self.dims, combo)} for combo in combos]
        else:
            columns = [d.sample(rng, n_candidates) for d in self.dims]
            configs = [{d.name: col[j] for d, col in zip(self.dims, columns)} for j in range(n_candidates)]
        configs = [c for c in configs if self.key(c) not in exclude]
        U = np.array([self.encode(c) for c in configs], dtype=np.float64).reshape(len(configs), self.n_columns)
        return configs, U


def _results_of(item, owner, i):
    results = getattr(item, "cv_results_", item)
    if hasattr(results, "to_dict") and hasattr(results, "columns"):  # a DataFrame of cv_results_
        results = results.to_dict("list")
    if not isinstance(results, Mapping) or "params" not in results:
        raise ValueError(f"{owner}: meta_results[{i}] must be a fitted search, a cv_results_ dict or its "
                         f"DataFrame (with a 'params' entry); got {type(item).__name__}.")
    return results


class MetaBayesSearchCV(TorchEstimatorMixin, BaseSearchCV):
    """Hyper-parameter search by meta-learned likelihood-free Bayesian optimisation (MALIBO).

    A drop-in beside :class:`~sklearn.model_selection.GridSearchCV` and
    :class:`~sklearn.model_selection.RandomizedSearchCV` (the same
    ``cv_results_``, ``best_params_``, ``best_estimator_``, ``refit``,
    ``scoring``, ``n_jobs``) that chooses each next setting with a
    :class:`MetaBayesianOptimizer`. It learns from earlier searches: pass
    their results (``cv_results_`` of a grid, random or meta search of the
    same estimator on other datasets) as ``meta_results`` and the first
    settings it tries are the ones that were good before, adapted to the new
    data as scores come in.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    estimator : estimator object, default=None
        The estimator to tune (required: :meth:`fit` raises a ``ValueError``
        when it is None).
    search_spaces : dict, default=None
        Parameter name -> space (required, as ``estimator``). A space is a
        list of values (numbers are searched as an ordered scale, anything
        else as categories), ``(low, high)`` (integers if both are ints,
        reals otherwise) or ``(low, high, "log-uniform")``.
    n_iter : int, default=32
        Number of settings evaluated (fewer when a finite space runs out).
    n_points : int, default=1
        Settings evaluated together per round (their cross-validation fits
        run in parallel).
    meta_results : list, default=None
        Earlier searches: fitted search objects, ``cv_results_`` dicts or
        their DataFrames. Each becomes one earlier task; its settings outside
        ``search_spaces`` are ignored. Its scores must be of the same metric
        as the refit metric here.
    optimizer : MetaBayesianOptimizer or LikelihoodFreeOptimizer, default=None
        Template of the optimiser (cloned; its bounds are set to the unit
        cube of the encoded space). Default: ``MetaBayesianOptimizer()``.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`; the refit
        metric is the one optimised.
    n_jobs : int, default=None
        Parallel cross-validation fits (``n_points`` settings x folds per
        round); any joblib backend, Dask included.
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`. Use a
        deterministic splitter so all rounds use the same folds.
    verbose : int, default=0
        Progress on standard output: when positive, each round's counter
        and the best mean test score so far, and scikit-learn's
        cross-validation messages as in
        :class:`~sklearn.model_selection.GridSearchCV`; from 2 on, the
        optimiser's meta-training epochs too.
    pre_dispatch : int or str, default="2*n_jobs"
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the optimiser's meta-training runs; forwarded to an optimiser
        with a ``device`` parameter (and by it to its classifier). ``"cuda"``
        without a GPU raises in :meth:`fit` before any work.
    random_state : int, RandomState instance or None, default=None
        Seeds the random candidates, and the optimiser (a seed drawn from it
        is forwarded, and by the optimiser to its classifier, unless the
        optimiser has a ``random_state`` of its own).
    error_score : "raise" or float, default=np.nan
        Score of failed fits; the optimiser sees them as the worst values.
    return_train_score : bool, default=False
        Include training scores in ``cv_results_``.

    Attributes
    ----------
    cv_results_ : dict of ndarray
        As in :class:`~sklearn.model_selection.GridSearchCV`, one entry per
        evaluated setting, in evaluation order.
    best_estimator_ : estimator
        Refitted on the whole data with the best setting (when ``refit``).
    best_score_ : float
        Mean cross-validated score of the best setting.
    best_params_ : dict
        The best setting.
    best_index_ : int
        Its index in ``cv_results_``.
    scorer_ : function or dict
        Scorer(s) used.
    n_splits_ : int
        Number of cross-validation splits.
    refit_time_ : float
        Seconds of the refit.
    multimetric_ : bool
        Whether several metrics were evaluated.
    optimizer_ : MetaBayesianOptimizer or LikelihoodFreeOptimizer
        The fitted optimiser, holding the encoded settings and their values
        (minus the scores).
    n_meta_tasks_ : int
        Earlier searches used.
    device_ : str
        The resolved ``device`` (``"cpu"`` or ``"cuda"``).
    classes_ : ndarray of shape (n_classes,)
        Class labels (classifiers with ``refit``).
    n_features_in_ : int
        Number of features seen in fit (when ``refit``).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names seen in fit (when ``refit`` and X had string columns).

    See Also
    --------
    MetaBayesianOptimizer : The optimiser behind the search.
    sklearn.model_selection.GridSearchCV : Exhaustive search.
    sklearn.model_selection.RandomizedSearchCV : Random search.

    Notes
    -----
    * Settings are encoded into a unit cube: numeric ranges linearly (or in
      log scale), numeric lists by their rank, categories one-hot. When the
      space is finite and no larger than the optimiser's ``n_candidates``,
      every not yet evaluated setting is scored by the acquisition function
      (MALIBO's pool mode); otherwise ``n_candidates`` random settings are.
    * No setting is evaluated twice.
    * The objective is minus the mean test score of the refit metric; failed
      fits count as the worst value seen plus the range of values.

    References
    ----------
    .. [1] J. Pan, S. Falkner, F. Berkenkamp and J. Vanschoren, "MALIBO:
       Meta-learning for Likelihood-free Bayesian Optimization", Proceedings of
       the 41st International Conference on Machine Learning (ICML), PMLR 235,
       pp. 39102-39134, 2024.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_icml.optimize import LikelihoodFreeOptimizer, MetaBayesSearchCV
    >>> X, y = load_iris(return_X_y=True)
    >>> search = MetaBayesSearchCV(
    ...     LogisticRegression(max_iter=500), {"C": (1e-3, 1e2, "log-uniform")}, n_iter=6,
    ...     optimizer=LikelihoodFreeOptimizer(n_candidates=128), random_state=0).fit(X, y)
    >>> len(search.cv_results_["params"])
    6
    >>> bool(search.best_score_ > 0.9)
    True
    """

    _parameter_constraints = {
        **BaseSearchCV._parameter_constraints,
        "estimator": [HasMethods(["fit"]), None],  # None: the default, refused in fit as a missing argument
        "search_spaces": [dict, None],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "n_points": [Interval(Integral, 1, None, closed="left")],
        "meta_results": [list, tuple, None],
        "optimizer": [HasMethods(["fit", "observe", "suggest"]), None],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, search_spaces=None, *, n_iter=32, n_points=1, meta_results=None,
                 optimizer=None, scoring=None, n_jobs=None, refit=True, cv=None, verbose=0,
                 pre_dispatch="2*n_jobs", device="cpu", random_state=None, error_score=np.nan,
                 return_train_score=False):
        super().__init__(estimator=estimator, scoring=scoring, n_jobs=n_jobs, refit=refit, cv=cv,
                         verbose=verbose, pre_dispatch=pre_dispatch, error_score=error_score,
                         return_train_score=return_train_score)
        self.search_spaces = search_spaces
        self.n_iter = n_iter
        self.n_points = n_points
        self.meta_results = meta_results
        self.optimizer = optimizer
        self.device = device
        self.random_state = random_state

    def __sklearn_tags__(self):
        if not hasattr(self.estimator, "__sklearn_tags__"):  # None or invalid: fit reports it
            return BaseEstimator.__sklearn_tags__(self)
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = get_tags(self.estimator).input_tags.allow_nan
        return tags

    def fit(self, X, y=None, **params):
        """Search: evaluate ``n_iter`` settings chosen one round at a time, then refit the best.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Target, for supervised estimators.
        **params : dict of str -> object
            Parameters of the estimator's ``fit``, the scorer and the splitter,
            as in :meth:`sklearn.model_selection.GridSearchCV.fit`.

        Returns
        -------
        self : object
            The fitted search.
        """
        self._validate_params()
        missing = [name for name in ("estimator", "search_spaces") if getattr(self, name) is None]
        if missing:
            raise ValueError(f"{type(self).__name__}: {' and '.join(missing)} must be given (the estimator to tune "
                             f"and the space of its parameters to search); got None.")
        with self._torch_fit_context():  # device resolved first and recorded, torch's threads scoped
            if hasattr(self.estimator, "__sklearn_tags__"):  # else the parameter validation reports it
                target_tags = get_tags(self.estimator).target_tags
                if y is None and target_tags.required:
                    raise ValueError(f"This {type(self).__name__} estimator requires y to be passed, but the target y "
                                     f"is None ({type(self.estimator).__name__} is supervised).")
                shape = getattr(y, "shape", None) if y is None or hasattr(y, "shape") else np.asarray(y).shape
                if shape is not None and not target_tags.multi_output and len(shape) == 2 and shape[1] == 1:
                    warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape "
                                  "of y to (n_samples,), for example using ravel().", DataConversionWarning,
                                  stacklevel=2)
                    y = np.ravel(np.asarray(y))
                if y is not None and target_tags.required:
                    # NaN or infinite targets: a clear error before the splitter casts them
                    check_array(y, ensure_2d=False, dtype=None, input_name="y", ensure_min_samples=0)
            return super().fit(X, y, **params)

    def _refit_key(self, results):
        if "mean_test_score" in results:
            return "mean_test_score"
        if isinstance(self.refit, str) and f"mean_test_{self.refit}" in results:
            return f"mean_test_{self.refit}"
        raise ValueError(f"{type(self).__name__}: with several metrics, refit must name the metric to optimise; "
                         f"got refit={self.refit!r}.")

    def _meta_tasks(self, space):
        name = type(self).__name__
        tasks = []
        for i, item in enumerate(self.meta_results or ()):
            results = _results_of(item, name, i)
            key = "mean_test_score" if "mean_test_score" in results else (
                f"mean_test_{self.refit}" if isinstance(self.refit, str) else None)
            if key is None or key not in results:
                raise ValueError(f"{name}: meta_results[{i}] has no {key or 'mean_test_score'!r} entry.")
            rows, values = [], []
            for p, score in zip(results["params"], results[key]):
                row = space.encode(p)
                if row is not None and score is not None and np.isfinite(score):
                    rows.append(row)
                    values.append(-float(score))
            if rows:
                tasks.append((np.array(rows, dtype=np.float64), np.array(values)))
        return tasks

    def _run_search(self, evaluate_candidates):
        name = type(self).__name__
        space = _SearchSpace(self.search_spaces, name)
        rng = check_random_state(self.random_state)
        template = MetaBayesianOptimizer() if self.optimizer is None else self.optimizer
        optimizer = clone(template).set_params(bounds=[(0.0, 1.0)] * space.n_columns)
        own = optimizer.get_params()
        if own.get("random_state") is None:
            optimizer.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
        if "device" in own:
            optimizer.set_params(device=self.device)
        if self.verbose > 1 and "verbose" in own and not own["verbose"]:
            optimizer.set_params(verbose=self.verbose)
        tasks = self._meta_tasks(space)
        self.n_meta_tasks_ = len(tasks)
        optimizer.fit(tasks or None)
        n_candidates = optimizer.get_params()["n_candidates"]
        evaluated = set()
        done = n_rounds = 0
        best = -np.inf
        while done < self.n_iter:
            configs, U = space.candidates(rng, n_candidates, evaluated)
            if not configs:
                break
            k = min(self.n_points, self.n_iter - done, len(configs))
            index = optimizer._suggest_unit(k, U)[1]
            chosen = [configs[i] for i in index]
            results = evaluate_candidates(chosen)
            scores = np.asarray(results[self._refit_key(results)][-k:], dtype=np.float64)
            values = -scores
            if not np.all(np.isfinite(values)):
                seen = np.concatenate([optimizer.y_obs_, values[np.isfinite(values)]])
                worst = seen.max() + max(np.ptp(seen), 1.0) if seen.size else 0.0
                values = np.where(np.isfinite(values), values, worst)
            optimizer.observe(U[index], values)
            evaluated.update(space.key(c) for c in chosen)
            done += k
            n_rounds += 1
            if np.any(np.isfinite(scores)):
                best = max(best, float(np.nanmax(scores)))
            if self.verbose > 0:
                print(f"[{name}] round {n_rounds}: {done}/{self.n_iter} settings evaluated, "
                      f"best mean test score so far {best:.6g}", flush=True)
        self.optimizer_ = optimizer
