"""Cox proportional-hazards head: linear or MLP log-risk, exact Breslow partial likelihood, in torch.

The log-risk network is the library's :class:`~sklearn_icml.utils._mlp.StandardizedMLP`
(no output bias) and it is trained by :class:`~sklearn_icml.utils.Trainer`
with the partial likelihood of each batch as a custom train step: L-BFGS as one
full-batch step (skorch's closure), Adam on seeded mini-batches.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import to_numpy, to_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import check_test_data, standardization
from ._base import SurvivalMixin, breslow_baseline, check_times, cox_batch_loss, survival_from_baseline

__all__ = ["CoxSurvival"]


def _penalty(module, alpha, linear_scale):
    """``alpha/2 * ||w||^2``: coefficients on the raw features (linear model) or all weight matrices."""
    if not alpha:
        return 0.0
    if linear_scale is not None:
        return 0.5 * alpha * ((module.head.weight[0] / linear_scale) ** 2).sum()
    return 0.5 * alpha * sum((layer.weight ** 2).sum() for layer in module.linears())


def _cox_train_step(alpha, n_total, linear_scale, presorted=False):
    """The batch objective: ``cox NLL / batch size + penalty / n_samples`` (y = [time, event] columns)."""
    scale = {}

    def step(module, xb, yb):
        if linear_scale is not None and xb.device not in scale:
            scale[xb.device] = linear_scale.to(xb.device)
        log_risk = module(xb)[:, 0]
        loss = cox_batch_loss(log_risk, yb[:, 0], yb[:, 1], normalizer=xb.shape[0], presorted=presorted)
        return loss + _penalty(module, alpha, scale.get(xb.device)) / n_total

    return step


class CoxSurvival(SurvivalMixin, TorchEstimatorMixin, BaseEstimator):
    """Cox proportional-hazards model with a linear or MLP log-risk, fitted in torch.

    Read more in the :ref:`User Guide <survival>`.

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
        At most 1e100 (a larger penalty overflows). A penalty that
        overwhelms the partial likelihood gives the null model: when the
        fitted log-risk is the same for every training sample (to float64
        precision), ``fit`` warns with a ``UserWarning`` naming ``alpha``.
    solver : {"lbfgs", "adam"}, default="lbfgs"
        Full-batch L-BFGS with a strong-Wolfe line search, or Adam on
        mini-batches of ``batch_size`` samples.
    learning_rate : float, default=1e-3
        Adam's step size (L-BFGS uses its line search).
    max_iter : int, default=200
        L-BFGS iterations, or Adam epochs at most.
    batch_size : int, default=None
        Adam's mini-batch size (None: the full batch). Within a mini-batch the
        partial likelihood compares the batch's samples only.
    tol : float, default=1e-9
        L-BFGS stops when the largest gradient entry falls below ``tol``;
        Adam when the monitored loss has not decreased by ``tol`` for more
        than ``n_iter_no_change`` epochs (scikit-learn's MLP meanings).
    early_stopping : bool, default=False
        Adam only: hold out ``validation_fraction`` of the samples and stop on
        their partial likelihood (the network of the best one is kept).
    validation_fraction : float, default=0.1
        Share of the samples held out when ``early_stopping``.
    n_iter_no_change : int, default=10
        Adam only: epochs without an improvement of ``tol`` tolerated.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the optimisation runs. Prediction is numpy.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights of the MLP (the linear model starts at zero)
        and Adam's batch order and validation split.
    verbose : int, default=0
        Print the loss during fitting when positive (a per-epoch table for
        Adam).

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
        Training standard deviations (1 for constant features, whose spread
        is rounding noise).
    event_times_ : ndarray of shape (n_event_times,)
        Distinct training times with at least one event.
    cum_baseline_hazard_ : ndarray of shape (n_event_times,)
        Breslow cumulative baseline hazard at ``event_times_``, for the
        log-risk returned by :meth:`predict`.
    module_ : torch.nn.Module
        The log-risk network on the CPU (float64), used by :meth:`predict`.
    loss_ : float
        Final objective value on the training data.
    loss_curve_ : list of float
        Adam: mean training objective of each epoch. L-BFGS: the objective
        at the start and after each iteration (``n_iter_ + 1`` values).
    validation_scores_ : list of float or None
        Adam with ``early_stopping``: the validation objective of each epoch
        (lower is better); None otherwise.
    n_iter_ : int
        L-BFGS iterations or Adam epochs run.
    device_ : str
        Where the optimisation ran.
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
    With Adam, a mini-batch without events contributes no likelihood term
    (its step carries only the penalty and Adam's momentum). The features
    are standardised without overflow up to the float64 limit (when the
    plain moments overflow they are taken on the features divided by their
    column peaks), so features of magnitude 1e300 give the model of the same
    features divided by 1e300.

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
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, hidden_layer_sizes=(), *, activation="relu", alpha=0.0, solver="lbfgs",
                 learning_rate=1e-3, max_iter=200, batch_size=None, tol=1e-9, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, device="cpu", random_state=None, verbose=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.alpha = alpha
        self.solver = solver
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
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

        from ..utils import Trainer
        from ..utils._mlp import StandardizedMLP, mlp_coefs

        with self._torch_fit_context() as ctx:
            name = type(self).__name__
            X, event, time = self._validate_survival_fit(X, y)
            sizes = self._check_layers()
            device, generator = ctx.device, ctx.generator

            X = X.astype(np.float64)
            self.mean_, scale = standardization(X)
            self.scale_ = scale
            n, p = X.shape
            module = StandardizedMLP(p, sizes, 1, activation=self.activation, x_mean=self.mean_, x_scale=scale,
                                     generator=generator, output_bias=False, dtype=torch.float64)
            if not sizes:
                with torch.no_grad():
                    module.head.weight.zero_()
            linear_scale = None if sizes else torch.as_tensor(scale, dtype=torch.float64)
            step = _cox_train_step(self.alpha, n, linear_scale)
            target = np.column_stack([time, event]).astype(np.float64)
            if self.solver == "lbfgs":
                # one full batch, sorted once by descending time (the loss then skips its per-call sort)
                order = np.argsort(-time, kind="mergesort")
                result = Trainer(
                    loop="lbfgs", train_step=_cox_train_step(self.alpha, n, linear_scale, True),
                    max_iter=self.max_iter, learning_rate=1.0, tol=self.tol,
                    optimizer_options=dict(tolerance_change=0.0, history_size=20), device=device,
                    random_state=generator, verbose=self.verbose, name=name).fit(module, X[order], target[order])
            else:
                result = Trainer(
                    train_step=step, max_iter=self.max_iter,
                    batch_size=n if self.batch_size is None else self.batch_size, learning_rate=self.learning_rate,
                    optimizer="adam", early_stopping=self.early_stopping,
                    validation_fraction=self.validation_fraction, n_iter_no_change=self.n_iter_no_change,
                    tol=self.tol, device=device, random_state=generator, verbose=self.verbose, name=name,
                ).fit(module, X, target)
            self.n_iter_ = result.n_iter
            module = result.module
            # final objective and gradient on the CPU copy (one full-batch evaluation, no step)
            final = step(module, to_tensor(X, "cpu", torch.float64), to_tensor(target, "cpu", torch.float64))
            module.zero_grad()
            final.backward()
            grad_max = max(float(q.grad.abs().max()) for q in module.parameters())
            module.zero_grad(set_to_none=True)
            self.loss_ = float(final.detach())
            coefs, intercepts = mlp_coefs(module)
        self.module_ = module
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = result.validation_scores
        if self.solver == "lbfgs":
            if self.verbose:
                print(f"[{name}] L-BFGS: {self.n_iter_} iterations, loss {self.loss_:.6g}, max |grad| {grad_max:.2e}")
            if self.n_iter_ >= self.max_iter and grad_max > max(self.tol, 1e-6):
                warnings.warn(f"{name}: L-BFGS reached max_iter={self.max_iter} with a gradient of {grad_max:.2e}; "
                              "increase max_iter, or add a penalty (alpha > 0) if the data are separable.",
                              ConvergenceWarning, stacklevel=2)
        self.coefs_, self.intercepts_ = coefs, intercepts
        if not sizes:
            self.coef_ = self.coefs_[0][:, 0] / scale
        eta = self._log_risk(X)
        # every hazard ratio between two training samples rounds to exactly 1: the penalty left the null model
        if self.alpha > 0 and np.exp(np.ptp(eta)) == 1.0:
            warnings.warn(f"{name}: alpha={self.alpha!r} shrinks every coefficient to (numerically) zero (the "
                          "log-risk is the same for every training sample to float64 precision: the null model, "
                          "which ranks no one). The penalty overwhelms the partial likelihood; use a smaller alpha.",
                          UserWarning, stacklevel=2)
        self.event_times_, self.cum_baseline_hazard_ = breslow_baseline(eta, time, event)
        return self

    def _log_risk(self, X):
        import torch

        with self._torch_context(), torch.no_grad():
            return to_numpy(self.module_(to_tensor(X, "cpu", torch.float64))[:, 0], np.float64)

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
        X = check_test_data(self, X)
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
