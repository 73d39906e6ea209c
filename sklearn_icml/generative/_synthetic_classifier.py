"""SyntheticDataClassifier: fit a classifier on differentially private synthetic data (S9)."""

from numbers import Integral

from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import HasMethods, Interval, _fit_context
from ..utils._torch import as_numpy

__all__ = ["SyntheticDataClassifier"]


def _estimator_has(method):
    def check(self):
        return hasattr(self.estimator_ if hasattr(self, "estimator_") else self._estimator(), method)

    return check


class SyntheticDataClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Train a classifier on class-conditional private synthetic data.

    ``fit(X, y)`` fits a clone of ``generator`` with ``class_conditional=True``
    on the private ``(X, y)``, then a clone of ``estimator`` on the synthetic
    points and labels it releases. The classifier never sees the private data,
    so it carries the generator's privacy guarantee; ``predict``,
    ``predict_proba`` and ``decision_function`` delegate to it. As a Pipeline
    step, GridSearchCV can tune ``generator__epsilon`` (each fit spends its
    budget on the training folds).

    Read more in the :ref:`User Guide <generative>`.

    Parameters
    ----------
    generator : estimator, default=None
        A generator with ``class_conditional`` and ``sample`` (such as
        :class:`PrivateEvolution`); ``PrivateEvolution()`` when None.
    estimator : classifier, default=None
        The classifier trained on the synthetic data;
        ``LogisticRegression()`` when None.
    n_synthetic_per_class : int, default=None
        Synthetic points per class (the generator's ``n_synthetic``); the
        generator's own setting when None.

    Attributes
    ----------
    generator_ : estimator
        The fitted generator (its ``epsilon_spent_`` and ``privacy_ledger_``
        are the privacy cost).
    estimator_ : classifier
        The classifier fitted on the synthetic data.
    classes_ : ndarray
        The classes of the synthetic data: the generator's label set, public
        (``PrivateEvolution(classes=...)``) or privately released (the
        default; see ``classes`` of :class:`PrivateEvolution`), never read
        from ``y`` directly.
    n_features_in_ : int
        Number of features.
    epsilon_spent_ : float
        The generator's epsilon.
    privacy_ledger_ : list of dict
        The generator's ledger.

    See Also
    --------
    PrivateEvolution : The default generator.

    Notes
    -----
    The label set is part of what is released: without a public
    ``classes`` on the generator, Private Evolution releases it privately
    (noisy label counts with a threshold), so a class with few rows may be
    left out and is then unknown to the classifier; pass the labels as
    public knowledge (``PrivateEvolution(classes=...)``) when they are.
    Every released class keeps its synthetic population.

    References
    ----------
    .. [1] Hou, C., Shrivastava, A., Zhan, H., Conway, R., Le, T., Sagar, A.,
       Fanti, G. and Lazar, D. "PrE-Text: Training Language Models on Private
       Federated Data in the Age of LLMs", ICML 2024.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn_icml.generative import PrivateEvolution, SyntheticDataClassifier
    >>> X, y = make_blobs(600, centers=2, random_state=0)
    >>> clf = SyntheticDataClassifier(PrivateEvolution(n_synthetic=100, epsilon=4.0, bounds=(-15, 15),
    ...                                                random_state=0)).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = {
        "generator": [HasMethods(["fit", "sample"]), None],
        "estimator": [HasMethods(["fit", "predict"]), None],
        "n_synthetic_per_class": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, generator=None, estimator=None, *, n_synthetic_per_class=None):
        self.generator = generator
        self.estimator = estimator
        self.n_synthetic_per_class = n_synthetic_per_class

    def _estimator(self):
        return LogisticRegression() if self.estimator is None else self.estimator

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the generator on the private data, then the classifier on its synthetic data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private features.
        y : array-like of shape (n_samples,)
            Private classes.

        Returns
        -------
        self : SyntheticDataClassifier
            The fitted classifier.
        """
        from ._private_evolution import PrivateEvolution

        X, y = validate_data(self, as_numpy(X), as_numpy(y))
        check_classification_targets(y)
        generator = clone(PrivateEvolution() if self.generator is None else self.generator)
        params = {"class_conditional": True}
        if self.n_synthetic_per_class is not None:
            params["n_synthetic"] = self.n_synthetic_per_class
        self.generator_ = generator.set_params(**params).fit(X, y)
        X_syn, y_syn = self.generator_.sample()
        self.estimator_ = clone(self._estimator()).fit(X_syn, y_syn)
        self.classes_ = self.estimator_.classes_
        self.epsilon_spent_ = float(self.generator_.epsilon_spent_)
        self.privacy_ledger_ = list(self.generator_.privacy_ledger_)
        return self

    def _delegate(self, method, X):
        """Validate ``X`` and call the fitted classifier's ``method`` on it."""
        check_is_fitted(self)
        return getattr(self.estimator_, method)(validate_data(self, as_numpy(X), reset=False))

    def predict(self, X):
        """Predict classes with the classifier trained on synthetic data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted classes.
        """
        return self._delegate("predict", X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Predict class probabilities with the classifier trained on synthetic data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities.
        """
        return self._delegate("predict_proba", X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Compute the decision function of the classifier trained on synthetic data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray
            Scores.
        """
        return self._delegate("decision_function", X)
