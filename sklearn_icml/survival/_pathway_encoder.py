"""Genes to pathway features: standardise on the training split, then summarise each pathway."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._validation import check_test_data, standardization
from ._bags import input_feature_names

__all__ = ["PathwayEncoder"]


class PathwayEncoder(TransformerMixin, BaseEstimator):
    """Encode gene expression per biological pathway: z-score on train, then one summary per pathway.

    Read more in the :ref:`User Guide <survival>`.

    MMP (Song et al., 2024) tokenises transcriptomics by pathway: genes are
    standardised with statistics of the training split, and each pathway's
    genes (for example the 50 MSigDB Hallmarks) become one token. This
    transformer does the standardisation and the grouping; it outputs either
    one number per pathway (the mean of its z-scores, or its first principal
    component), or the z-scored genes grouped pathway after pathway, which
    :class:`PrototypeSurvival` embeds per pathway with its own small network.

    Parameters
    ----------
    pathways : dict of str to list, default=None
        Pathway name to its genes, as column indices (int) or column names
        (str, when X is a DataFrame). A gene may belong to several pathways.
        None means one pathway, ``"all"``, holding every column.
    summary : {"mean", "pca1", "none"}, default="mean"
        "mean": mean z-score of the pathway's genes; "pca1": score on the first
        principal component of the pathway's training genes (sign chosen so it
        grows with the mean); "none": the z-scored genes themselves, pathway
        after pathway (``pathway_sizes_`` columns each).
    standardize : bool, default=True
        Z-score the genes with the training means and standard deviations.
    missing_genes : {"error", "ignore"}, default="error"
        What to do with pathway genes absent from X (by name, or an index out of
        range): raise, or drop them (a pathway left empty still raises).

    Attributes
    ----------
    pathway_names_ : ndarray of shape (n_pathways,)
        Pathway names, in output order.
    pathway_indices_ : list of ndarray
        Column indices of each pathway's genes.
    pathway_sizes_ : ndarray of shape (n_pathways,)
        Number of genes of each pathway (the ``pathway_sizes`` of
        :class:`PrototypeSurvival` for ``summary="none"``).
    mean_ : ndarray of shape (n_features,)
        Training means of the genes.
    scale_ : ndarray of shape (n_features,)
        Training standard deviations (1 for constant genes, whose spread is
        rounding noise, or all ones when ``standardize=False``).
    components_ : list of ndarray
        First principal direction of each pathway (``summary="pca1"`` only).
    n_features_in_ : int
        Number of genes seen in fit.
    feature_names_in_ : ndarray of shape (n_features,)
        Gene names, when X had string column names.

    See Also
    --------
    PrototypeEncoder : The histology side of MMP.
    PrototypeSurvival : Fusion network taking both sides.

    Notes
    -----
    The official MMP code fits scikit-learn's ``StandardScaler`` on the
    training genes and feeds each Hallmark pathway's gene block to its own
    self-normalising network; ``summary="none"`` gives exactly that block
    layout. The "mean" and "pca1" summaries are our low-dimensional
    alternatives for linear heads on small cohorts. With
    ``standardize=False`` the "pca1" summary still centres the genes.
    Expression values up to the float64 limit (1e300, say) are standardised
    without overflow: when the plain moments overflow they are taken on the
    genes divided by their peaks.

    References
    ----------
    .. [1] Song, A. H., Chen, R. J., Jaume, G., Vaidya, A. J., Baras, A. S. and
       Mahmood, F. "Multimodal Prototyping for cancer survival prediction",
       Proceedings of the 41st International Conference on Machine Learning
       (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import PathwayEncoder
    >>> X = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 1.0], [5.0, 6.0, 2.0]])
    >>> enc = PathwayEncoder(pathways={"p1": [0, 1], "p2": [2]}).fit(X)
    >>> enc.transform(X).round(3)
    array([[-1.225, -1.225],
           [ 0.   ,  0.   ],
           [ 1.225,  1.225]])
    >>> enc.get_feature_names_out()
    array(['p1', 'p2'], dtype=object)
    """

    _parameter_constraints = {
        "pathways": [dict, None],
        "summary": [StrOptions({"mean", "pca1", "none"})],
        "standardize": ["boolean"],
        "missing_genes": [StrOptions({"error", "ignore"})],
    }

    def __init__(self, pathways=None, *, summary="mean", standardize=True, missing_genes="error"):
        self.pathways = pathways
        self.summary = summary
        self.standardize = standardize
        self.missing_genes = missing_genes

    def _resolve(self, n_features):
        name = type(self).__name__
        if self.pathways is None:
            return np.array(["all"], dtype=object), [np.arange(n_features)]
        if not self.pathways:
            raise ValueError(f"{name}: pathways is an empty dict; give at least one pathway, or None for all genes.")
        columns = getattr(self, "feature_names_in_", None)
        lookup = None if columns is None else {str(c): i for i, c in enumerate(columns)}
        names, indices = [], []
        for pname, genes in self.pathways.items():
            genes = list(np.atleast_1d(np.asarray(genes, dtype=object))) if not isinstance(genes, str) else [genes]
            idx, missing = [], []
            for g in genes:
                if isinstance(g, (int, np.integer)) and not isinstance(g, (bool, np.bool_)):
                    (idx if 0 <= g < n_features else missing).append(int(g))
                elif isinstance(g, str):
                    if lookup is None:
                        raise ValueError(f"{name}: pathway {pname!r} names genes ({g!r}, ...) but X has no column "
                                         "names; pass a DataFrame, or give column indices.")
                    (idx.append(lookup[g]) if g in lookup else missing.append(g))
                else:
                    raise TypeError(f"{name}: pathway {pname!r} holds {g!r} of type {type(g).__name__}; genes are "
                                    "column indices (int) or column names (str).")
            if missing and self.missing_genes == "error":
                raise ValueError(f"{name}: pathway {pname!r} has {len(missing)} gene(s) not in X, e.g. "
                                 f"{missing[:5]}; set missing_genes='ignore' to drop them.")
            if not idx:
                raise ValueError(f"{name}: pathway {pname!r} has no gene present in X.")
            names.append(str(pname))
            indices.append(np.asarray(idx, dtype=np.int64))
        return np.array(names, dtype=object), indices

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the gene standardisation and resolve the pathways.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_genes)
            Gene expression (a DataFrame when pathways name genes).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        X = validate_data(self, as_numpy(X), dtype=[np.float64, np.float32])
        self.pathway_names_, self.pathway_indices_ = self._resolve(X.shape[1])
        self.pathway_sizes_ = np.array([len(i) for i in self.pathway_indices_], dtype=np.int64)
        X = X.astype(np.float64)
        self.mean_, scale = standardization(X)
        if not self.standardize:
            scale = np.ones(X.shape[1])
        self.scale_ = scale
        if self.summary == "pca1":
            Z = (X - self.mean_) / scale
            self.components_ = []
            for idx in self.pathway_indices_:
                block = Z[:, idx]
                _, _, vt = np.linalg.svd(block - block.mean(axis=0), full_matrices=False)
                v = vt[0]
                if v.sum() < 0 or (v.sum() == 0 and v[np.argmax(np.abs(v))] < 0):
                    v = -v
                self.components_.append(v)
        return self

    def transform(self, X):
        """Standardise and summarise each pathway.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_genes)
            Gene expression.

        Returns
        -------
        X_pathways : ndarray of shape (n_samples, n_pathways) or (n_samples, n_grouped_genes)
            One column per pathway, or for ``summary="none"`` the grouped genes
            (``n_grouped_genes = pathway_sizes_.sum()``).
        """
        X = check_test_data(self, X)
        dtype = X.dtype
        Z = (X.astype(np.float64) - self.mean_) / self.scale_ if self.standardize else X.astype(np.float64)
        if self.summary == "none":
            return np.hstack([Z[:, idx] for idx in self.pathway_indices_]).astype(dtype, copy=False)
        if self.summary == "mean":
            cols = [Z[:, idx].mean(axis=1) for idx in self.pathway_indices_]
        else:
            centred = (X.astype(np.float64) - self.mean_) / self.scale_
            cols = [centred[:, idx] @ v for idx, v in zip(self.pathway_indices_, self.components_)]
        return np.column_stack(cols).astype(dtype, copy=False)

    def get_feature_names_out(self, input_features=None):
        """Output names: the pathway names, or ``<pathway>__<gene>`` for ``summary="none"``.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Gene names; the fitted ones (or ``x0, x1, ...``) when None.

        Returns
        -------
        feature_names_out : ndarray of str objects
            Output names.
        """
        check_is_fitted(self)
        genes = input_feature_names(self, input_features)
        if self.summary != "none":
            return self.pathway_names_.copy()
        return np.array([f"{p}__{genes[i]}" for p, idx in zip(self.pathway_names_, self.pathway_indices_)
                         for i in idx], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
