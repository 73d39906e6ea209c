"""A tiny reference estimator that follows the house design, kept inside tests/.

It exercises the common-check harness, the tensor-free and pickle checks, the
device parameter and the Dask test independently of any method of the
collection: a multinomial logistic regression fitted by full-batch gradient
descent in torch. It is not part of the library.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
)
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_icml.utils._sklearn_private import Interval, _fit_context
from sklearn_icml.utils._torch import (
    DEVICE_CONSTRAINT,
    as_numpy,
    resolve_device,
    to_numpy,
    to_tensor,
    torch_generator,
    torch_threads,
)


class ReferenceTorchClassifier(ClassifierMixin, BaseEstimator):
    """Multinomial logistic regression by gradient descent in torch (test fixture).

    Parameters
    ----------
    alpha : float, default=1e-3
        L2 penalty on the weights.
    learning_rate : float, default=0.5
        Gradient-descent step on standardised features.
    max_iter : int, default=100
        Number of full-batch gradient steps.
    device : {"cpu", "auto", "cuda"}, default="cpu"
        Where the gradient steps run.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights (drawn on the CPU).
    verbose : int, default=0
        Print the loss every 10 steps when positive.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (n_classes, n_features)
        Weights on the raw features.
    intercept_ : ndarray of shape (n_classes,)
        Intercepts.
    n_iter_ : int
        Gradient steps taken.
    device_ : str
        Where the gradient steps ran, ``"cpu"`` or ``"cuda"``.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X had string column names.
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "device": DEVICE_CONSTRAINT,
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, alpha=1e-3, learning_rate=0.5, max_iter=100, device="cpu",
                 random_state=None, verbose=0):
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        device = resolve_device(self.device)  # first: device="cuda" without a GPU raises before any work
        with torch_threads():  # the thread rule: torch's intra-op threads limited here, restored after
            self._fit(X, y, device)
        self.device_ = device.type
        return self

    def _fit(self, X, y, device):
        import torch

        X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes; got 1 class "
                f"({self.classes_[0]!r})."
            )
        generator = torch_generator(self.random_state)
        X = X.astype(np.float64)
        mean, scale = X.mean(axis=0), X.std(axis=0)
        scale[scale == 0] = 1.0
        Xt = to_tensor((X - mean) / scale, device, torch.float64)
        yt = to_tensor(y_idx.astype(np.int64), device)
        n_features, n_classes = X.shape[1], len(self.classes_)
        W = (0.01 * torch.randn(n_features, n_classes, generator=generator, dtype=torch.float64))
        W = W.to(device).requires_grad_()
        b = torch.zeros(n_classes, dtype=torch.float64, device=device, requires_grad=True)
        for it in range(self.max_iter):
            loss = torch.nn.functional.cross_entropy(Xt @ W + b, yt) + self.alpha * (W * W).sum()
            gW, gb = torch.autograd.grad(loss, (W, b))
            with torch.no_grad():
                W -= self.learning_rate * gW
                b -= self.learning_rate * gb
            if self.verbose and it % 10 == 0:
                print(f"[{type(self).__name__}] iter {it:4d} loss {loss.item():.5f}")
        coef = to_numpy(W).T / scale
        self.coef_ = coef
        self.intercept_ = to_numpy(b) - coef @ mean
        self.n_iter_ = self.max_iter

    def decision_function(self, X):
        """Class scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Logit differences for binary problems, logits otherwise.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=[np.float64, np.float32])
        logits = X.astype(np.float64) @ self.coef_.T + self.intercept_
        if len(self.classes_) == 2:
            return logits[:, 1] - logits[:, 0]
        return logits

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Softmax of the logits.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=[np.float64, np.float32])
        logits = X.astype(np.float64) @ self.coef_.T + self.intercept_
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class ReferenceProjection(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Gaussian random projection of standardised features (test fixture).

    Parameters
    ----------
    n_components : int, default=2
        Output dimension.
    random_state : int, RandomState instance or None, default=None
        Seeds the projection matrix.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Training means.
    components_ : ndarray of shape (n_components, n_features)
        Projection, divided by the training standard deviations.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X had string column names.
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components=2, *, random_state=None):
        self.n_components = n_components
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the projection.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        X = validate_data(self, as_numpy(X), dtype=[np.float64, np.float32])
        rng = check_random_state(self.random_state)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0
        self.mean_ = X.mean(axis=0)
        R = rng.standard_normal((self.n_components, X.shape[1])) / np.sqrt(self.n_components)
        self.components_ = (R / scale).astype(X.dtype)
        self._n_features_out = self.n_components
        return self

    def transform(self, X):
        """Project.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            Projected data, in X's float dtype.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=[np.float64, np.float32])
        return ((X - self.mean_) @ self.components_.T).astype(X.dtype, copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class ReferenceTextRegressor(RegressorMixin, BaseEstimator):
    """Ridge regression on two counts of each text: an estimator whose input is not a feature matrix (test fixture).

    ``X`` is a 1-D sequence of strings, declared with scikit-learn's input tags
    (``one_d_array``, ``string``, not ``two_d_array``), so the harness runs
    scikit-learn's API checks and the house contract checks on texts. A small
    seeded jitter of the coefficients makes determinism under ``random_state``
    something the checks can see.

    Parameters
    ----------
    alpha : float, default=1.0
        Ridge penalty.
    random_state : int, RandomState instance or None, default=None
        Seeds the jitter.

    Attributes
    ----------
    coef_ : ndarray of shape (2,)
        Weights of the length and of the number of spaces.
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, alpha=1.0, random_state=None):
        self.alpha = alpha
        self.random_state = random_state

    def _features(self, X):
        if isinstance(X, str):
            raise TypeError(f"{type(self).__name__}: X must be a 1-D sequence of strings, not one string.")
        X = np.asarray(X, dtype=object)
        if X.ndim != 1 or X.size == 0 or not all(isinstance(t, str) for t in X):
            raise ValueError(f"{type(self).__name__}: X must be a non-empty 1-D sequence of strings.")
        return np.array([[len(t), t.count(" ")] for t in X], dtype=np.float64)

    def _jitter(self):
        return check_random_state(self.random_state).normal(scale=1e-3, size=2)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the ridge weights on the texts' counts."""
        F, y = self._features(X), np.asarray(y, dtype=np.float64)
        self.coef_ = np.linalg.solve(F.T @ F + self.alpha * np.eye(2), F.T @ y) + self._jitter()
        return self

    def predict(self, X):
        """Predicted targets of the texts."""
        check_is_fitted(self)
        return self._features(X) @ self.coef_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.one_d_array = True
        tags.input_tags.string = True
        return tags
