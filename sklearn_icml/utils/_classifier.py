"""The prediction methods shared by binary classifiers whose ``decision_function`` scores ``classes_[1]``."""

import numpy as np
from scipy.special import expit
from sklearn.utils.validation import check_is_fitted

__all__ = ["BinaryDecisionMixin"]


class BinaryDecisionMixin:
    """``predict_proba`` and ``predict`` of a binary classifier from its ``decision_function``.

    The subclass defines ``decision_function(X)``, a score of ``classes_[1]``
    (positive where ``classes_[1]`` is the more likely class), and
    ``classes_``. ``predict_proba`` maps the score through
    :meth:`_decision_to_proba`: the logistic function (the score is a logit)
    unless the subclass's model has another link. Put the mixin before
    ``ClassifierMixin`` in the bases; its tags say the classifier is binary.
    """

    def _decision_to_proba(self, decision):
        """Probability of ``classes_[1]`` given the decision function (logistic; overridable)."""
        return expit(decision)

    def predict_proba(self, X):
        """Probability of each class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input rows, in the form :meth:`fit` takes.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            Columns follow ``classes_``: column 1 is the model's probability of
            ``classes_[1]``.
        """
        check_is_fitted(self)
        p = self._decision_to_proba(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """The more likely class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input rows, in the form :meth:`fit` takes.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``classes_[1]`` where the decision function is positive, else
            ``classes_[0]``.
        """
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
