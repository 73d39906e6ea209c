"""Cox proportional-hazards head: linear or MLP log-risk, exact Breslow partial likelihood, in torch."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import DEVICE_CONSTRAINT, as_numpy, resolve_device, to_numpy, to_tensor, torch_generator
from ._base import (
    SurvivalMixin,
    breslow_baseline,
    check_times,
    cox_negative_log_likelihood,
    cox_sort_keys,
    survival_from_baseline,
)
from ._target import check_survival_target

__all__ = ["CoxSurvival"]

_ACTIVATIONS = {"relu": lambda z: np.maximum(z, 0.0), "tanh": np.tanh,
                "elu": lambda z: np.where(z > 0, z, np.expm1(np.minimum(z, 0.0)))}


def _torch_activation(name):
    import torch

    return {"relu": torch.relu, "tanh": torch.tanh, "elu": torch.nn.functional.elu}[name]


class CoxSurvival(SurvivalMixin, BaseEstimator):
    """Cox proportional-hazards model with a linear or MLP log-risk, fitted in torch.

    The log-risk ``eta(x)`` is linear (``hidden_layer_sizes=()``, the classic
    Cox model) or a multilayer perceptron (DeepSurv-style). It maximises the
    exact Cox partial likelihood on the raw event times, with Breslow's
    handling of tied times: an event at time t is compared with every sample
    whose time is at least t, censored samples at t included. After fitting,
    Breslow's estimator gives the cumulative baseline hazard, hence survival
    functions ``S(t | x) = exp(-H0(t) exp(eta(x)))``.

    It is the survival head of the MMP pipeline (Song et al., 2024): put
    :class:`PrototypeEncoder` and :class:`PathwayEncoder` in front of it. The
    linear model with ``alpha=0`` reproduces scikit-survival's
    ``CoxPHSurvivalAnalysis(ties="breslow")``.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=()
        Widths of the hidden layers; ``()`` is the linear Cox model.
    activation : {"relu", "tanh", "elu"}, default="relu"
        Activation of the hidden layers.
    alpha : float, default=0.0
        L2 penalty. The objective is ``(-log partial likelihood + alpha/2 *
        ||w||^2) / n_samples``, with ``w`` the coefficients on the raw
        features for the linear model (scikit-survival's definition) and the
        weight matrices of the network (on standardised inputs) otherwise.
        At most 1e100 (a larger penalty overflows and every coefficient is
        already zero).
    solver : {"lbfgs", "adam"}, default="lbfgs"
        Full-batch L-BFGS with a strong-Wolfe line search, or Adam on
        mini-batches of ``batch_size`` samples.
    learning_rate : float, default=1e-3
        Adam's step size (L-BFGS uses its line search).
    max_iter : int, default=200
        L-BFGS iterations, or Adam epochs.
    batch_size : int, default=None
        Adam's mini-batch size (None: the full batch). Within a mini-batch the
        partial likelihood compares the batch's samples only.
    tol : float, default=1e-9
        L-BFGS stops when the largest gradient entry falls below ``tol``.
    device : {"cpu", "auto", "cuda"}, default="cpu"
        Where the optimisation runs. Prediction is numpy.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights of the MLP (the linear model starts at zero)
        and Adam's batch order.
    verbose : int, default=0
        Print the loss during fitting when positive.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients on the raw features (linear model only).
    coefs_ : list of ndarray
        Weight matrices of the network on standardised inputs, first layer first
        (``[w[:, None]]`` for the linear model).
    intercepts_ : list of ndarray
        Biases of the hidden layers (the output has none: the partial
        likelihood cannot identify it).
    mean_ : ndarray of shape (n_features,)
        Training means, removed before the network.
    scale_ : ndarray of shape (n_features,)
        Training standard deviations (1 for constant features).
    event_times_ : ndarray of shape (n_event_times,)
        Distinct training times with at least one event.
    cum_baseline_hazard_ : ndarray of shape (n_event_times,)
        Breslow cumulative baseline hazard at ``event_times_``, for the
        log-risk returned by :meth:`predict`.
    loss_ : float
        Final objective value.
    n_iter_ : int
        L-BFGS iterations or Adam epochs run.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features,)
        Feature names, when X had string column names.

    See Also
    --------
    PrototypeSurvival : The MMP fusion network on prototype and pathway tokens.
    PrototypeEncoder : Bags of instances to prototype weights, means and variances.

    Notes
    -----
    The partial likelihood is computed exactly on the raw times (the official
    MMP code feeds four quantile bins as times to its Cox loss, which loses the
    ordering inside a bin; we do not). Tied times follow Breslow: each event of a
    tied group has the whole group in its risk set. The linear model starts at
    zero, like scikit-survival's Newton solver, and the objective is convex, so
    L-BFGS reaches the same optimum; without a penalty, data a linear score
    separates perfectly have no finite optimum, and a ``ConvergenceWarning`` is
    raised when ``max_iter`` is reached. ``predict`` returns the log-risk
    ``eta(x)``; ``exp(eta)`` (what MMP reports) ranks the samples the same way.

    References
    ----------
    .. [1] Song, A. H., Chen, R. J., Jaume, G., Vaidya, A. J., Baras, A. S. and
       Mahmood, F. "Multimodal Prototyping for cancer survival prediction",
       Proceedings of the 41st International Conference on Machine Learning
       (ICML), PMLR 235, 2024.
    .. [2] Cox, D. R. "Regression models and life-tables", Journal of the Royal
       Statistical Society B 34(2), 1972; Breslow, N. "Covariance analysis of
       censored survival data", Biometrics 30(1), 1974.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import CoxSurvival, Surv
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(200, 2))
    >>> time = rng.exponential(np.exp(-(1.0 * X[:, 0] - 0.5 * X[:, 1])))
    >>> y = Surv.from_arrays(event=np.ones(200, dtype=bool), time=time)
    >>> cox = CoxSurvival().fit(X, y)
    >>> np.round(cox.coef_, 2)
    array([ 1.01, -0.39])
    >>> round(cox.score(X, y), 2)
    0.75
    >>> cox.predict_survival_function(X[:2], times=[0.5, 1.0]).round(2)
    array([[0.07, 0.01],
           [0.55, 0.33]])
    """

    _parameter_constraints = {
        "hidden_layer_sizes": [tuple, list],
        "activation": [StrOptions({"relu", "tanh", "elu"})],
        # beyond 1e100 the penalty overflows float64 while every coefficient is already numerically zero
        "alpha": [Interval(Real, 0, 1e100, closed="both")],
        "solver": [StrOptions({"lbfgs", "adam"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "device": DEVICE_CONSTRAINT,
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, hidden_layer_sizes=(), *, activation="relu", alpha=0.0, solver="lbfgs",
                 learning_rate=1e-3, max_iter=200, batch_size=None, tol=1e-9, device="cpu",
                 random_state=None, verbose=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.alpha = alpha
        self.solver = solver
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _check_layers(self):
        sizes = tuple(self.hidden_layer_sizes)
        if not all(isinstance(h, Integral) and not isinstance(h, bool) and h >= 1 for h in sizes):
            raise ValueError(f"{type(self).__name__}: hidden_layer_sizes must hold positive integers; "
                             f"got {self.hidden_layer_sizes!r}.")
        return sizes

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the log-risk by maximising the Cox partial likelihood, then the Breslow baseline.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like
            Survival target: a structured (event, time) array (:class:`Surv`,
            scikit-survival), an ``(n_samples, 2)`` array of ``[time, event]``,
            or 1-D times (every event observed).

        Returns
        -------
        self : object
            Fitted estimator.

        Notes
        -----
        There is no ``sample_weight``: the likelihood is unweighted. To weight
        samples, repeat rows (integer weights) or resample.
        """
        import torch

        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        sizes = self._check_layers()
        X = validate_data(self, as_numpy(X), dtype=[np.float64, np.float32], ensure_min_samples=2)
        event, time = check_survival_target(y, estimator=self)
        check_consistent_length(X, time)
        device = resolve_device(self.device)
        generator = torch_generator(self.random_state)

        X = X.astype(np.float64)
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0
        self.scale_ = scale
        n, p = X.shape
        dtype = torch.float64

        weights, biases = [], []
        fan_in = p
        for width in sizes:
            bound = 1.0 / np.sqrt(fan_in)
            weights.append((torch.rand(fan_in, width, generator=generator, dtype=dtype) * 2 - 1) * bound)
            biases.append((torch.rand(width, generator=generator, dtype=dtype) * 2 - 1) * bound)
            fan_in = width
        if sizes:
            bound = 1.0 / np.sqrt(fan_in)
            weights.append((torch.rand(fan_in, 1, generator=generator, dtype=dtype) * 2 - 1) * bound)
        else:
            weights.append(torch.zeros(p, 1, dtype=dtype))
        params = [w.to(device).requires_grad_() for w in weights] + [b.to(device).requires_grad_() for b in biases]
        n_layers = len(weights)
        act = _torch_activation(self.activation)
        scale_t = to_tensor(scale, device, dtype)

        def forward(Xt):
            h = Xt
            for k in range(n_layers - 1):
                h = act(h @ params[k] + params[n_layers + k])
            return (h @ params[n_layers - 1])[:, 0]

        def penalty():
            if not self.alpha:
                return 0.0
            if not sizes:
                return 0.5 * self.alpha * ((params[0][:, 0] / scale_t) ** 2).sum()
            return 0.5 * self.alpha * sum((w ** 2).sum() for w in params[:n_layers])

        Xs = (X - self.mean_) / scale
        if self.solver == "lbfgs" or self.batch_size is None or self.batch_size >= n:
            batches = None
        else:
            batches = self.batch_size
        if self.solver == "lbfgs":
            order, last = cox_sort_keys(time)
            Xt = to_tensor(Xs[order], device, dtype)
            et = to_tensor(event[order].astype(np.float64), device, dtype)
            lt = to_tensor(last, device)
            optimizer = torch.optim.LBFGS(params, lr=1.0, max_iter=self.max_iter, tolerance_grad=self.tol,
                                          tolerance_change=0.0, history_size=20, line_search_fn="strong_wolfe")

            def closure():
                optimizer.zero_grad()
                loss = (cox_negative_log_likelihood(forward(Xt), et, lt, n) + penalty() / n)
                loss.backward()
                return loss

            optimizer.step(closure)
            state = optimizer.state[optimizer._params[0]]
            self.n_iter_ = int(state.get("n_iter", 0))
            final = closure()
            grad_max = max(float(p_.grad.abs().max()) for p_ in params)
            self.loss_ = float(final.detach())
            if self.verbose:
                print(f"[{name}] L-BFGS: {self.n_iter_} iterations, loss {self.loss_:.6g}, max |grad| {grad_max:.2e}")
            if self.n_iter_ >= self.max_iter and grad_max > max(self.tol, 1e-6):
                warnings.warn(f"{name}: L-BFGS reached max_iter={self.max_iter} with a gradient of {grad_max:.2e}; "
                              "increase max_iter, or add a penalty (alpha > 0) if the data are separable.",
                              ConvergenceWarning)
        else:
            self._fit_adam(forward, penalty, params, Xs, event, time, n, batches, device, dtype, generator)

        with torch.no_grad():
            self.coefs_ = [to_numpy(w) for w in params[:n_layers]]
            self.intercepts_ = [to_numpy(b) for b in params[n_layers:]]
        if not sizes:
            self.coef_ = self.coefs_[0][:, 0] / scale
        log_risk = self._log_risk(X)
        self.event_times_, self.cum_baseline_hazard_ = breslow_baseline(log_risk, time, event)
        return self

    def _fit_adam(self, forward, penalty, params, Xs, event, time, n, batch_size, device, dtype, generator):
        import torch

        optimizer = torch.optim.Adam(params, lr=self.learning_rate)
        batch_size = n if batch_size is None else batch_size
        loss_value = np.nan
        for epoch in range(self.max_iter):
            perm = torch.randperm(n, generator=generator).numpy()
            total = 0.0
            for start in range(0, n, batch_size):
                idx = perm[start:start + batch_size]
                if not event[idx].any():
                    continue
                order, last = cox_sort_keys(time[idx])
                idx = idx[order]
                Xt = to_tensor(Xs[idx], device, dtype)
                et = to_tensor(event[idx].astype(np.float64), device, dtype)
                optimizer.zero_grad()
                loss = (cox_negative_log_likelihood(forward(Xt), et, to_tensor(last, device), len(idx))
                        + penalty() / n)
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(idx)
            loss_value = total / n
            if self.verbose and (epoch % 10 == 0 or epoch == self.max_iter - 1):
                print(f"[{type(self).__name__}] epoch {epoch:4d} loss {loss_value:.6g}")
        self.n_iter_ = self.max_iter
        self.loss_ = float(loss_value)

    def _log_risk(self, X):
        h = (np.asarray(X, dtype=np.float64) - self.mean_) / self.scale_
        act = _ACTIVATIONS[self.activation]
        for w, b in zip(self.coefs_[:-1], self.intercepts_):
            h = act(h @ w + b)
        return (h @ self.coefs_[-1])[:, 0]

    def predict(self, X):
        """Predicted risk: the log-risk ``eta(x)``; higher means an earlier event.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        risk : ndarray of shape (n_samples,)
            Log-risk scores.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=[np.float64, np.float32])
        return self._log_risk(X)

    def predict_survival_function(self, X, times=None):
        """Survival probabilities ``S(t | x) = exp(-H0(t) exp(eta(x)))`` with Breslow's baseline.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.
        times : array-like of shape (n_times,), default=None
            Where to evaluate; the training event times ``event_times_`` when None.

        Returns
        -------
        survival : ndarray of shape (n_samples, n_times)
            Probability of being event-free after each time.
        """
        check_is_fitted(self)
        times = check_times(times, self.event_times_, type(self).__name__)
        return survival_from_baseline(self.event_times_, self.cum_baseline_hazard_, self.predict(X), times)
