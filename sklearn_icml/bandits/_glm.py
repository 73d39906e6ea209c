"""The GLM estimate of ``theta`` from duels, and :class:`PairwiseGLMClassifier` built on it."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import validate_data

from ..utils._classifier import BinaryDecisionMixin
from ..utils._sklearn_private import Interval, StrOptions, _check_sample_weight, _fit_context
from ..utils._torch import as_numpy
from ..utils._validation import check_test_data
from ._links import LINKS, get_link

__all__ = ["PairwiseGLMClassifier", "fit_glm"]


def _objective(X, y, w, link, alpha, theta):
    z = X @ theta
    return float(np.dot(w, link.m(z) - y * z) + 0.5 * alpha * np.dot(theta, theta))


def fit_glm(X, y, sample_weight=None, *, link="logistic", alpha=0.0, max_iter=100, tol=1e-8, theta0=None):
    """Solve ``sum_t w_t (mu(x_t . theta) - y_t) x_t + alpha theta = 0`` by damped Newton steps.

    This is the estimating equation of the paper (the maximum-likelihood
    estimate for the logistic link, least squares for the linear link, the
    quasi-likelihood estimate of Li et al. (2017) for the probit link). It is
    the stationarity condition of the strictly convex (for ``alpha > 0``)
    objective ``sum_t w_t (m(x_t . theta) - y_t x_t . theta) + alpha/2 |theta|^2``
    with ``m' = mu``, which the Newton steps decrease with an Armijo
    backtracking line search, until the largest gradient entry is at most
    ``tol`` times the total weight. ``y`` may hold fractions (aggregated duels:
    the share of wins of a pair, weighted by its count).

    Returns
    -------
    theta : ndarray of shape (n_features,)
    n_iter : int
    converged : bool
    """
    link = get_link(link) if isinstance(link, str) else link
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    theta = np.zeros(d) if theta0 is None else np.array(theta0, dtype=np.float64)
    scale = max(float(w.sum()), 1.0)
    f = _objective(X, y, w, link, alpha, theta)
    for it in range(1, max_iter + 1):
        z = X @ theta
        grad = X.T @ (w * (link.mu(z) - y)) + alpha * theta
        if np.abs(grad).max() <= tol * scale:
            return theta, it - 1, True
        H = (X * (w * link.dmu(z))[:, None]).T @ X
        H.flat[:: d + 1] += alpha
        try:
            step = linalg.solve(H, grad, assume_a="pos")
        except (linalg.LinAlgError, ValueError):
            step = linalg.lstsq(H, grad)[0]
        decrement = float(grad @ step)
        if not np.isfinite(decrement):
            return theta, it, False
        t = 1.0
        while True:
            candidate = theta - t * step
            f_new = _objective(X, y, w, link, alpha, candidate)
            if f_new <= f - 0.25 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        theta, f = candidate, f_new
        if link.name == "linear" and t == 1.0:  # quadratic objective: one full step is exact
            return theta, it, True
    return theta, max_iter, False


class PairwiseGLMClassifier(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """Generalized linear model of ``P(i beats j)`` from pair features.

    Each sample is one duel: the row of ``X`` holds the pair feature
    ``phi_ij`` of the two items and the label says whether the first item
    won. The model is ``P(first wins) = mu(phi_ij . theta)`` with a link
    ``mu`` satisfying ``mu(x) + mu(-x) = 1`` and no intercept, so swapping the
    two items (``phi_ji = -phi_ij``) swaps the probabilities. ``theta`` is the
    GLM estimate used by the explore-then-commit agent :class:`BordaETC`,
    exposed as an ordinary binary classifier for logged duels: it works in a
    :class:`~sklearn.pipeline.Pipeline`, in
    :class:`~sklearn.model_selection.GridSearchCV` and with every
    :mod:`sklearn.metrics` scorer.

    Read more in the :ref:`User Guide <bandits>`.

    Parameters
    ----------
    link : {"logistic", "probit", "linear"}, default="logistic"
        The link ``mu``: logistic (Bradley-Terry-Luce when
        ``phi_ij = x_i - x_j``), probit (Thurstone) or linear
        ``mu(x) = 1/2 + x`` (probabilities clipped to [0, 1]).
    alpha : float, default=1e-4
        Ridge penalty ``alpha/2 |theta|^2`` added to the objective; it keeps
        the estimate finite when the duels are separable.
    max_iter : int, default=100
        Maximum number of Newton steps.
    tol : float, default=1e-8
        Stop when the largest entry of the gradient of the objective, divided
        by the total sample weight, falls below ``tol``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` means "the first item won".
    coef_ : ndarray of shape (1, n_features)
        The estimate ``theta_hat`` (as in
        :class:`~sklearn.linear_model.LogisticRegression`).
    intercept_ : ndarray of shape (1,)
        Always zero: the dueling model has no intercept.
    n_iter_ : int
        Newton steps taken.
    n_features_in_ : int
        Number of pair features seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X had string column names.

    See Also
    --------
    BordaETC : Explore-then-commit agent that fits this model on its exploration duels.
    sklearn.linear_model.LogisticRegression : The same logistic likelihood with an intercept and any features.

    Notes
    -----
    The estimate solves ``sum_t w_t (mu(phi_t . theta) - r_t) phi_t + alpha theta = 0``
    (Eq. (4.1)-style estimating equation of the paper; Li et al., 2017). For
    the logistic link this is the penalised maximum-likelihood estimate, for
    the linear link ridge least squares on ``r_t - 1/2``, and for the probit
    link the quasi-likelihood estimate (consistent, but not the probit
    maximum-likelihood estimate). It is found by damped Newton steps on the
    convex objective whose gradient is the left-hand side. Only two classes
    are supported; ``sample_weight`` acts exactly as repeating rows.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", Proceedings of the
       41st International Conference on Machine Learning (ICML), PMLR 235, 2024.
    .. [2] L. Li, Y. Lu and D. Zhou, "Provably Optimal Algorithms for Generalized
       Linear Contextual Bandits", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.bandits import PairwiseGLMClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = rng.uniform(size=2000) < 1 / (1 + np.exp(-X @ [1.0, -2.0]))
    >>> clf = PairwiseGLMClassifier().fit(X, y)
    >>> clf.coef_.round(1)
    array([[ 1. , -1.9]])
    >>> clf.predict_proba([[0.0, 0.0]])
    array([[0.5, 0.5]])
    """

    _parameter_constraints = {
        "link": [StrOptions(set(LINKS))],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, link="logistic", *, alpha=1e-4, max_iter=100, tol=1e-8):
        self.link = link
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Estimate ``theta`` from logged duels.

        Parameters
        ----------
        X : array-like of shape (n_duels, n_features)
            Pair features ``phi_ij`` of the duels (first item ``i``).
        y : array-like of shape (n_duels,)
            Two labels; the larger one (``classes_[1]``) means the first item won.
        sample_weight : array-like of shape (n_duels,), default=None
            Weights of the duels (e.g. inverse propensities of a logging policy).

        Returns
        -------
        self : object
            The fitted classifier.
        """
        X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            kind = "binary" if len(self.classes_) < 2 else type_of_target(y, input_name="y")
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} models whether the first "
                f"item of a duel wins; the target is {kind} with {len(self.classes_)} class(es): "
                f"{self.classes_.tolist()!r}."
            )
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        with np.errstate(over="ignore"):
            if not np.isfinite(np.einsum("ij,ij->", X, X)):  # the Newton system holds X^T W X
                raise ValueError(f"{type(self).__name__}: the pair features are too large to square in float64 "
                                 f"(largest |x| = {np.abs(X).max():.3g}); rescale X.")
        theta, self.n_iter_, converged = fit_glm(
            X, y_idx, sample_weight, link=self.link, alpha=self.alpha, max_iter=self.max_iter, tol=self.tol)
        if not converged:
            warnings.warn(f"{type(self).__name__}: Newton steps did not converge in max_iter={self.max_iter} "
                          "iterations; increase max_iter or alpha.", ConvergenceWarning, stacklevel=2)
        self.coef_ = theta.reshape(1, -1)
        self.intercept_ = np.zeros(1)
        return self

    def decision_function(self, X):
        """The linear predictor ``phi_ij . theta_hat`` of each duel.

        Parameters
        ----------
        X : array-like of shape (n_duels, n_features)
            Pair features.

        Returns
        -------
        scores : ndarray of shape (n_duels,)
            Positive when the first item is predicted to win.
        """
        X = check_test_data(self, X)
        return X.astype(np.float64) @ self.coef_[0]

    def _decision_to_proba(self, decision):
        """``P(first item wins) = mu(phi_ij . theta_hat)``: the link's mean function."""
        return get_link(self.link).proba(decision)
