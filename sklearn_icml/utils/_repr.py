"""Estimator reprs that summarise array-valued parameters instead of printing them.

scikit-learn's repr prints every changed parameter with ``repr``; a parameter
holding an array (pair features of shape (64, 64, 6), a baseline image, a
list of 1,000 ids) then floods notebooks and error messages. The estimators
that take such parameters build their repr on a shallow copy whose large
arrays are replaced by a placeholder printing their shape and dtype;
``get_params``, ``clone`` and pickling see the real values.
"""

import copy

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["ArraySummary", "summarized_repr"]

#: Arrays (and lists/tuples) with more elements than this are summarised.
MAX_ELEMENTS = 16


class ArraySummary:
    """Stands in for a large array in a repr: ``<array of shape (64, 64, 6), float64>``."""

    def __init__(self, value):
        self.kind = "array" if hasattr(value, "shape") else type(value).__name__
        self.shape = tuple(np.shape(value))
        dtype = getattr(value, "dtype", None)
        self.dtype = None if dtype is None else str(dtype).replace("torch.", "")

    def __repr__(self):
        dtype = "" if self.dtype is None else f", {self.dtype}"
        return f"<{self.kind} of shape {self.shape}{dtype}>"


def _is_large(value):
    if isinstance(value, (str, bytes)) or np.isscalar(value) or value is None:
        return False
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # numpy, torch, pandas
        return int(np.prod(np.shape(value))) > MAX_ELEMENTS
    if isinstance(value, (list, tuple)):
        return len(value) > MAX_ELEMENTS
    return False


def summarized_repr(estimator, N_CHAR_MAX=700):
    """scikit-learn's repr of ``estimator`` with its large array parameters shown by shape.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator.
    N_CHAR_MAX : int, default=700
        As in :meth:`sklearn.base.BaseEstimator.__repr__`.

    Returns
    -------
    str
        The repr, e.g. ``BordaETC(pair_features=<array of shape (64, 64, 6), float64>)``.
    """
    params = estimator.get_params(deep=False)
    large = {name: ArraySummary(value) for name, value in params.items() if _is_large(value)}
    if not large:
        return BaseEstimator.__repr__(estimator, N_CHAR_MAX=N_CHAR_MAX)
    shown = copy.copy(estimator)
    for name, summary in large.items():
        setattr(shown, name, summary)
    return BaseEstimator.__repr__(shown, N_CHAR_MAX=N_CHAR_MAX)
