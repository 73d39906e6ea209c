"""Estimators that each break one rule of the house contract, on purpose.

``test_harness.py`` runs the harness's checks on them and asserts the breach
is caught, so a harness that silently stopped checking would fail.
"""

import numpy as np
from sklearn.base import clone

from sklearn_icml.utils._torch import resolve_device

from ._reference import ReferenceTextRegressor, ReferenceTorchClassifier


class OverwritesParams(ReferenceTorchClassifier):
    """Changes a constructor parameter during fit."""

    def fit(self, X, y):
        super().fit(X, y)
        self.max_iter = self.max_iter + 1
        return self


class UnfittedAttributeAccess(ReferenceTorchClassifier):
    """Reads fitted state before ``check_is_fitted`` in predict."""

    def predict(self, X):
        labels = self.classes_
        return labels[np.argmax(self.predict_proba(X), axis=1)]


class ValidatesInInit(ReferenceTorchClassifier):
    """Converts a parameter in ``__init__``."""

    def __init__(self, *, alpha=1e-3, learning_rate=0.5, max_iter=100, device="cpu",
                 random_state=None, verbose=0):
        super().__init__(alpha=float(alpha), learning_rate=learning_rate, max_iter=max_iter,
                         device=device, random_state=random_state, verbose=verbose)


class MissingConstraint(ReferenceTorchClassifier):
    """Leaves ``max_iter`` without a parameter constraint."""

    _parameter_constraints = {
        k: v for k, v in ReferenceTorchClassifier._parameter_constraints.items() if k != "max_iter"
    }


class KeepsTensor(ReferenceTorchClassifier):
    """Keeps a torch tensor as fitted state."""

    def fit(self, X, y):
        import torch

        super().fit(X, y)
        self.weights_ = {"coef": torch.as_tensor(self.coef_)}
        return self


class MutatesInput(ReferenceTorchClassifier):
    """Standardises the caller's array in place."""

    def fit(self, X, y):
        X -= X.mean(axis=0)
        return super().fit(X, y)


#: Process-wide cache of KeepsStateOutsideThePickle: what lives here does not travel with a pickle.
_TEMPERATURES = {}


class KeepsStateOutsideThePickle(ReferenceTorchClassifier):
    """Keeps a fitted temperature in a module-level cache instead of on the estimator.

    A pickle reloaded in the same process still finds it (scikit-learn's pickle
    check passes); one reloaded in a fresh process does not.
    """

    def fit(self, X, y):
        super().fit(X, y)
        self._cache_key = id(self)
        _TEMPERATURES[self._cache_key] = 3.0
        return self

    def decision_function(self, X):
        return super().decision_function(X) / _TEMPERATURES.get(self._cache_key, 1.0)

    def predict_proba(self, X):
        logits = super().decision_function(X) / _TEMPERATURES.get(self._cache_key, 1.0)
        if logits.ndim == 1:
            logits = np.c_[-logits / 2, logits / 2]
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(axis=1, keepdims=True)


class WorksBeforeRefusingCuda(ReferenceTorchClassifier):
    """Standardises the data before it resolves ``device``, so a missing GPU is found after the work."""

    def fit(self, X, y):
        self.scale_ = np.asarray(X, dtype=float).std(axis=0)
        return super().fit(X, y)


class SilentCpuFallback(ReferenceTorchClassifier):
    """Runs on the CPU without a word when ``device="cuda"`` finds no GPU."""

    def fit(self, X, y):
        try:
            return super().fit(X, y)
        except ValueError:
            fallback = clone(self).set_params(device="cpu").fit(X, y)
            vars(self).update({k: v for k, v in vars(fallback).items() if k.endswith("_")})
            return self


class NoDeviceAttribute(ReferenceTorchClassifier):
    """Leaves no ``device_`` saying where the work ran."""

    def fit(self, X, y):
        super().fit(X, y)
        del self.device_
        return self


class ChangesTorchThreads(ReferenceTorchClassifier):
    """Sets torch to one thread for speed, as a benchmark script would, and never restores it."""

    def fit(self, X, y):
        import torch

        torch.set_num_threads(1)
        return super().fit(X, y)


class IgnoresThreadRule(ReferenceTorchClassifier):
    """Runs its torch work outside ``torch_threads``: torch's threads are never limited to the configured number."""

    def fit(self, X, y):
        device = resolve_device(self.device)
        self._fit(X, y, device)
        self.device_ = device.type
        return self


class DropsFeatureNames(ReferenceTorchClassifier):
    """Converts a DataFrame to an array before validation, losing its column names."""

    def fit(self, X, y):
        return super().fit(np.asarray(X), y)


class FitReturnsNothing(ReferenceTextRegressor):
    """Texts in: ``fit`` forgets to return ``self``."""

    def fit(self, X, y):
        super().fit(X, y)


class PredictsBeforeFit(ReferenceTextRegressor):
    """Texts in: ``predict`` runs before ``fit`` with default weights."""

    def predict(self, X):
        return self._features(X) @ getattr(self, "coef_", np.zeros(2))


class UnseededFit(ReferenceTextRegressor):
    """Texts in: the jitter ignores ``random_state``."""

    def _jitter(self):
        return np.random.default_rng().normal(scale=1e-3, size=2)
