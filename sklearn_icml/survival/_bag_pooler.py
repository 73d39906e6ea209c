"""Mean / max pooling of bags: the multiple-instance baseline."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._sklearn_private import StrOptions, _fit_context
from ._bags import input_feature_names, validate_bags

__all__ = ["BagPooler"]


class BagPooler(TransformerMixin, BaseEstimator):
    """Pool each bag of instances into one vector: mean, max, or mean and standard deviation.

    Read more in the :ref:`User Guide <survival>`.

    The baseline of multiple-instance learning: a bag's instances are averaged
    (or max-pooled) into a single feature vector, which any scikit-learn
    estimator then takes. It cannot tell apart bags whose means agree, which
    is what :class:`PrototypeEncoder` is for.

    Parameters
    ----------
    stat : {"mean", "max", "meanstd"}, default="mean"
        Statistic over each bag's instances; "meanstd" concatenates the mean
        and the (population) standard deviation.

    Attributes
    ----------
    n_features_in_ : int
        Instance dimension ``d`` seen in fit.
    feature_names_in_ : ndarray of shape (n_features,)
        Feature names, when fitted on a DataFrame of plain rows (bags of one).

    See Also
    --------
    PrototypeEncoder : Prototype-based bag summary (MMP / PANTHER).
    as_bags : The accepted bag forms.

    Notes
    -----
    Bags come as a list (or object array, or pandas Series) of ``(n_i, d)``
    arrays, a 3-D array padded with all-NaN rows, or a 2-D array read as bags
    of one instance each (then pooling is the identity). Fitting only records
    the instance dimension.

    References
    ----------
    .. [1] Song, A. H., Chen, R. J., Jaume, G., Vaidya, A. J., Baras, A. S. and
       Mahmood, F. "Multimodal Prototyping for cancer survival prediction",
       Proceedings of the 41st International Conference on Machine Learning
       (ICML), PMLR 235, 2024 (mean pooling is its simplest baseline).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import BagPooler
    >>> bags = [np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([[4.0, 4.0]])]
    >>> BagPooler().fit_transform(bags)
    array([[1., 2.],
           [4., 4.]])
    """

    _parameter_constraints = {"stat": [StrOptions({"mean", "max", "meanstd"})]}

    def __init__(self, stat="mean"):
        self.stat = stat

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Record the instance dimension.

        Parameters
        ----------
        X : list of ndarray, ndarray of shape (n_bags, max_len, d) or (n_samples, d)
            Bags (see :func:`as_bags`).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        self._bag_input = validate_bags(self, X, reset=True).kind != "rows"
        return self

    def transform(self, X):
        """Pool every bag.

        Parameters
        ----------
        X : list of ndarray, ndarray of shape (n_bags, max_len, d) or (n_samples, d)
            Bags (see :func:`as_bags`).

        Returns
        -------
        X_pooled : ndarray of shape (n_bags, d) or (n_bags, 2 * d)
            One row per bag, in the bags' float dtype.
        """
        check_is_fitted(self)
        bags = validate_bags(self, X, reset=False)
        flat, starts, lengths = bags.flat, bags.offsets[:-1], bags.lengths
        if self.stat == "max":
            return np.maximum.reduceat(flat, starts, axis=0)
        mean = (np.add.reduceat(flat, starts, axis=0) / lengths[:, None]).astype(flat.dtype, copy=False)
        if self.stat == "mean":
            return mean
        dev = flat - np.repeat(mean, lengths, axis=0)
        std = np.sqrt(np.add.reduceat(dev * dev, starts, axis=0) / lengths[:, None]).astype(flat.dtype, copy=False)
        return np.hstack([mean, std])

    def get_feature_names_out(self, input_features=None):
        """Output feature names: ``mean_<feature>``, ``max_<feature>``, ``std_<feature>``.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Instance feature names; one name (a bag column) is also accepted.

        Returns
        -------
        feature_names_out : ndarray of str objects
            Output names.
        """
        check_is_fitted(self)
        names = input_feature_names(self, input_features, bag_column=self._bag_input)
        stats = ["mean", "std"] if self.stat == "meanstd" else [self.stat]
        return np.array([f"{s}_{f}" for s in stats for f in names], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.requires_fit = True
        return tags
