"""Scaling laws of loss against compute, one per model shape (Anagnostidis et al., ICML 2024)."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ._forms import FORMS, FREE_PARAMS, check_loss_level, law_compute, law_loss, law_marginal
from ._law_fit import LawProblem, fit_law, slots_at_bound

__all__ = ["ScalingLawRegressor", "ScalingLawBoundWarning"]


class ScalingLawBoundWarning(ConvergenceWarning):
    """A fitted scaling-law parameter ended on a bound of its box (see ``at_bound_``)."""


def _shape_key(value):
    value = float(value)
    return int(value) if value.is_integer() else value


class ScalingLawRegressor(RegressorMixin, BaseEstimator):
    """Loss as a function of compute, ``E = a (C + d)^-b + c``, one law per model shape.

    Read more in the :ref:`User Guide <scaling>`.

    Fits the per-shape scaling laws of Anagnostidis et al. (2024) the way
    Chinchilla fits its laws: compute rescaled by its median, a Huber loss on
    log residuals, box bounds on the exponent, the offset and the asymptote,
    and the best of several bounded trust-region fits from random starts.
    Column 0 of ``X`` holds compute (FLOPs, steps, any positive unit), and
    column ``shape_column``, when given, the shape of the model of each run
    (a patch size, a width, a context length): one law is fitted per shape,
    optionally sharing parameters between shapes.

    Parameters
    ----------
    form : {"saturating", "power_offset", "power"}, default="saturating"
        ``"saturating"``: ``E = a (C + d)^-b + c`` (Zhai et al. 2022);
        ``"power_offset"``: ``E = c + a C^-b``; ``"power"``: ``E = a C^-b``.
    shape_column : int or None, default=None
        Column of ``X`` holding shape ids (one law per distinct value). None
        fits a single law, reported under shape ``0``.
    share : tuple of str or None, default=None
        Parameters shared by all shapes, among ``"a"``, ``"b"``, ``"c"``,
        ``"d"`` (e.g. ``("b",)``: one exponent for every shape). Shared
        parameters are fitted jointly; the others per shape.
    loss : {"huber_log", "squared_log"}, default="huber_log"
        Loss on the log residuals ``log E_hat - log E``.
    huber_delta : float, default=1e-3
        Where the Huber loss turns from quadratic to linear, in log units, in
        ``[1e-100, 1e150]`` (beyond, the loss overflows float64).
    n_restarts : int, default=8
        Largest number of starts per fit (the first from a profile grid, the
        others random); the fit with the lowest loss is kept. The starts stop
        early once three of them reach the same lowest loss.
    b_bounds : tuple of two floats, default=(0.01, 3.0)
        Box of the exponent ``b``.
    random_state : int, RandomState instance or None, default=None
        Seeds the random starts.

    Attributes
    ----------
    params_ : dict
        ``{shape: {"a": float, "b": float, "c": float, "d": float}}`` in raw
        compute units (``c = d = 0`` where the form has no such parameter).
    shapes_ : ndarray of shape (n_shapes,)
        The shape ids seen in fit, sorted (``[0]`` without a shape column).
    compute_scale_ : float
        The median compute the fit rescaled by.
    fit_log_rmse_ : float
        Root mean squared log residual of the fitted laws on the training runs.
    at_bound_ : list of tuple
        ``(shape, parameter)`` pairs that ended on a limit of their box: ``b``
        at either end of ``b_bounds``, ``c`` at the smallest observed loss,
        ``d`` at 10x the median compute (``shape`` is None for a shared
        parameter). A :class:`ScalingLawBoundWarning` names them.
    n_features_in_ : int
        Number of columns of ``X`` seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the columns, when ``X`` had string column names.

    See Also
    --------
    AdaptiveShapeScheduler : Switches between the fitted shapes at the losses
        where each needs the least compute per unit of loss decrease.
    scipy.optimize.curve_fit : The unconstrained fit, which degenerates on
        saturating laws (``a``, ``d`` running off to 1e300).

    Notes
    -----
    The exact functional form of the paper's Eq. 1 could not be checked
    against the PDF; the saturating power law of Zhai et al. (2022), on which
    the paper's vision experiments build, is the default, and the two simpler
    forms are its special cases. The boxes follow the Chinchilla practice:
    ``b`` in ``b_bounds``, ``0 <= c <= min(E)`` (per shape, or over the shapes
    sharing ``c``), ``0 <= d <= 10 x`` the median compute. A bound reached by
    ``b``, or the upper bounds of ``c`` and ``d``, usually means the runs do
    not pin that parameter down (curves closer to an exponential approach
    than a power law, or too short to show the floor): read predictions far
    outside the fitted compute range with care. ``c = 0`` and ``d = 0`` are
    the limits of the law itself (no floor, no offset) and are not reported.

    Columns of ``X`` other than compute and the shape column are not used,
    so a table of runs with further columns can be passed as it is; all of
    ``X`` must be non-negative (the estimator's ``positive_only`` tag), and
    compute and loss strictly positive. :meth:`score` is the R² of the log
    loss, the quantity the fit minimises, not of the raw loss.

    References
    ----------
    .. [1] S. Anagnostidis, G. Bachmann, I. Schlag, T. Hofmann, "Navigating
       Scaling Laws: Compute Optimality in Adaptive Model Training", ICML 2024.
    .. [2] J. Hoffmann et al., "Training Compute-Optimal Large Language
       Models", NeurIPS 2022.
    .. [3] X. Zhai, A. Kolesnikov, N. Houlsby, L. Beyer, "Scaling Vision
       Transformers", CVPR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.scaling import ScalingLawRegressor
    >>> C = np.logspace(10, 14, 30)
    >>> E = 2e3 * (C + 1e11) ** -0.3 + 0.5
    >>> law = ScalingLawRegressor(random_state=0).fit(C[:, None], E)
    >>> round(law.params_[0]["b"], 3), round(law.params_[0]["c"], 3)
    (0.3, 0.5)
    >>> float(np.round(law.compute_to_reach(1.0) / 1e12, 3))
    0.916
    """

    _parameter_constraints: dict = {
        "form": [StrOptions(set(FORMS))],
        "shape_column": [Interval(Integral, 0, None, closed="left"), None],
        "share": [tuple, list, None],
        "loss": [StrOptions({"huber_log", "squared_log"})],
        # scipy's Huber loss squares residual / huber_delta (its f_scale): outside [1e-100, 1e150] float64 overflows
        "huber_delta": [Interval(Real, 1e-100, 1e150, closed="both")],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "b_bounds": [tuple, list],
        "random_state": ["random_state"],
    }

    def __init__(self, form="saturating", *, shape_column=None, share=None, loss="huber_log", huber_delta=1e-3,
                 n_restarts=8, b_bounds=(0.01, 3.0), random_state=None):
        self.form = form
        self.shape_column = shape_column
        self.share = share
        self.loss = loss
        self.huber_delta = huber_delta
        self.n_restarts = n_restarts
        self.b_bounds = b_bounds
        self.random_state = random_state

    def _check_params(self):
        name = type(self).__name__
        share = tuple(self.share or ())
        bad = [p for p in share if p not in ("a", "b", "c", "d")]
        if bad:
            raise ValueError(f"{name}: share must hold names among 'a', 'b', 'c', 'd'; got {self.share!r}.")
        share = tuple(p for p in share if p in FREE_PARAMS[self.form])
        try:
            lo, hi = (float(v) for v in self.b_bounds)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: b_bounds must be two numbers (low, high); got {self.b_bounds!r}.") from None
        if not (0 < lo < hi < np.inf):
            raise ValueError(f"{name}: b_bounds must satisfy 0 < low < high < inf; got {self.b_bounds!r}.")
        return share, (lo, hi)

    def _compute_and_shapes(self, X, *, fitting):
        name = type(self).__name__
        if self.shape_column is not None and self.shape_column >= X.shape[1]:
            raise ValueError(f"{name}: shape_column={self.shape_column} but X has {X.shape[1]} feature(s).")
        compute = X[:, 0]
        check_non_negative(compute, f"{name} (compute, column 0 of X)")
        check_non_negative(X, name)
        if np.any(compute <= 0):
            raise ValueError(f"{name}: compute (column 0 of X) must be strictly positive; got minimum "
                             f"{compute.min()!r}.")
        if self.shape_column is None:
            return compute, np.zeros(len(X))
        shapes = X[:, self.shape_column]
        if not fitting:
            known = np.isin(shapes, self.shapes_)
            if not known.all():
                raise ValueError(f"{name}: shape id(s) {np.unique(shapes[~known])[:5].tolist()} in column "
                                 f"{self.shape_column} of X were not seen in fit (known: {self.shapes_.tolist()}).")
        return compute, shapes

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit one scaling law per shape.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Column 0: compute (> 0); column ``shape_column``: shape ids.
        y : array-like of shape (n_runs,)
            Loss of each run (> 0).

        Returns
        -------
        self : ScalingLawRegressor
            The fitted law.
        """
        share, b_bounds = self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        name = type(self).__name__
        if np.any(y <= 0):
            raise ValueError(f"{name}: the loss y must be strictly positive (the fit is on log loss); got "
                             f"minimum {y.min()!r}.")
        compute, shapes = self._compute_and_shapes(X, fitting=True)
        self.shapes_ = np.unique(shapes)
        n_free = len(FREE_PARAMS[self.form])
        for s in self.shapes_:
            n_s = int(np.sum(shapes == s))
            if n_s < n_free:
                raise ValueError(f"{name}: shape {_shape_key(s)!r} has {n_s} sample{'s' if n_s != 1 else ''} (runs); "
                                 f"the {self.form!r} law needs at least {n_free}.")
        self.compute_scale_ = float(np.median(compute))
        log_scale = np.log(self.compute_scale_)
        xs = [compute[shapes == s] / self.compute_scale_ for s in self.shapes_]
        ys = [y[shapes == s] for s in self.shapes_]
        rng = check_random_state(self.random_state)
        # without shared parameters the shapes' fits are independent: one small problem each
        groups = [list(range(len(xs)))] if share else [[k] for k in range(len(xs))]
        thetas, residuals, self.at_bound_ = {}, [], []
        for group in groups:
            problem = LawProblem([xs[k] for k in group], [ys[k] for k in group], form=self.form, share=share,
                                 b_bounds=b_bounds, log_scale=log_scale)
            z, _ = fit_law(problem, loss=self.loss, huber_delta=self.huber_delta, n_restarts=self.n_restarts,
                           rng=rng)
            thetas.update(zip(group, problem.thetas(z)))
            residuals.append(problem.residuals(z))
            self.at_bound_ += [(None if k is None else _shape_key(self.shapes_[group[k]]), p)
                               for p, k in slots_at_bound(problem, z)]
        self.params_ = {}
        for k, s in enumerate(self.shapes_):
            la, b, c, d = thetas[k]
            self.params_[_shape_key(s)] = {"a": float(np.exp(la + b * log_scale)), "b": float(b),
                                           "c": float(c), "d": float(d * self.compute_scale_)}
        self.fit_log_rmse_ = float(np.sqrt(np.mean(np.concatenate(residuals) ** 2)))
        if self.at_bound_:
            warnings.warn(f"{name}: fitted parameter(s) ended on a bound of their box: {self.at_bound_} "
                          "(shape, parameter); the runs do not pin them down, see at_bound_.",
                          ScalingLawBoundWarning, stacklevel=2)
        return self

    def _params_for(self, shape):
        check_is_fitted(self)
        if shape is None:
            if len(self.shapes_) != 1:
                raise ValueError(f"{type(self).__name__}: several shapes were fitted "
                                 f"({self.shapes_.tolist()}); pass shape=.")
            shape = self.shapes_[0]
        key = _shape_key(shape)
        if key not in self.params_:
            raise ValueError(f"{type(self).__name__}: unknown shape {shape!r}; fitted shapes are "
                             f"{self.shapes_.tolist()}.")
        return self.params_[key]

    def predict(self, X):
        """Loss predicted by the law of each run's shape.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Column 0: compute (> 0); column ``shape_column``: shape ids seen in fit.

        Returns
        -------
        loss : ndarray of shape (n_runs,)
            Predicted loss.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        compute, shapes = self._compute_and_shapes(X, fitting=False)
        out = np.empty(len(X))
        for s in self.shapes_:
            mask = shapes == s
            out[mask] = law_loss(compute[mask], self.params_[_shape_key(s)])
        return out

    def score(self, X, y, sample_weight=None):
        """R² of the log loss (the quantity the fit minimises), not of the raw loss.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Runs as in :meth:`fit`.
        y : array-like of shape (n_runs,)
            Observed loss (> 0).
        sample_weight : array-like of shape (n_runs,), default=None
            Weights of the runs.

        Returns
        -------
        score : float
            ``r2_score(log y, log predict(X))``.
        """
        y = np.asarray(y, dtype=float)
        if np.any(y <= 0):
            raise ValueError(f"{type(self).__name__}: score needs strictly positive losses y.")
        return r2_score(np.log(y), np.log(self.predict(X)), sample_weight=sample_weight)

    def compute_to_reach(self, loss, shape=None):
        """Compute a run of ``shape`` needs to reach ``loss``, by inverting its law.

        Parameters
        ----------
        loss : float or array-like
            Target loss(es).
        shape : shape id or None, default=None
            Which law; may be None only when a single law was fitted.

        Returns
        -------
        compute : float or ndarray
            ``((E - c)/a)^(-1/b) - d`` in raw compute units; ``inf`` at or below
            the asymptote ``c``, 0 above the loss at zero compute.
        """
        loss = check_loss_level(loss, "loss", f"{type(self).__name__}.compute_to_reach")
        out = law_compute(loss, self._params_for(shape))
        return float(out) if np.ndim(out) == 0 else out

    def marginal_compute(self, loss, shape=None):
        """Compute per unit of loss decrease, ``-dC/dE``, of the law of ``shape`` at ``loss``.

        Parameters
        ----------
        loss : float or array-like
            Loss level(s).
        shape : shape id or None, default=None
            Which law; may be None only when a single law was fitted.

        Returns
        -------
        marginal : float or ndarray
            ``((E - c)/a)^(-1/b - 1) / (a b)``; ``inf`` at or below ``c``.
        """
        loss = check_loss_level(loss, "loss", f"{type(self).__name__}.marginal_compute")
        out = law_marginal(loss, self._params_for(shape))
        return float(out) if np.ndim(out) == 0 else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.target_tags.positive_only = True
        # one column carries the law; arbitrary data does not follow a scaling law in it
        tags.regressor_tags.poor_score = True
        return tags
