"""Estimators that each break one rule of the house contract, on purpose.

``test_harness.py`` runs the harness's checks on them and asserts the breach
is caught, so a harness that silently stopped checking would fail.
"""

import numpy as np

from ._reference import ReferenceTorchClassifier


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
