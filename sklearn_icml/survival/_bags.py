"""Bags of instances (multiple-instance input): the accepted forms, validation, padding.

A bag is an ``(n_i, d)`` float array: the ``n_i`` instances (patch embeddings)
of one sample (patient). Three input forms are accepted everywhere:

* a list, tuple, 1-D object array or pandas Series of ``(n_i, d)`` arrays
  (the canonical form; what ``ColumnTransformer`` passes for a DataFrame
  column holding arrays);
* a 3-D float array ``(n_bags, max_len, d)`` where all-NaN rows are padding;
* a plain 2-D array ``(n_samples, d)``, read as bags of one instance each
  (so scikit-learn's common checks, which feed 2-D data, apply as they are).

Internally bags are held flat: all instances stacked ``(n_instances, d)``
with ``offsets`` (``n_bags + 1``) marking where each bag starts.
"""

from typing import NamedTuple

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_array, validate_data

from ..utils._sklearn_private import validate_params
from ..utils._torch import as_numpy

__all__ = ["as_bags", "pad_bags"]

_FLOATS = [np.float64, np.float32]


class _Bags(NamedTuple):
    flat: np.ndarray      # (n_instances, d)
    offsets: np.ndarray   # (n_bags + 1,), int64
    kind: str = "rows"    # the input form: "rows", "list" or "padded"

    @property
    def n_bags(self):
        return self.offsets.shape[0] - 1

    @property
    def lengths(self):
        return np.diff(self.offsets)

    def split(self):
        return np.split(self.flat, self.offsets[1:-1])


def _is_pandas(X):
    return type(X).__module__.partition(".")[0] == "pandas"


def _looks_like_bag(obj):
    return np.ndim(as_numpy(obj)) == 2


def _split_kind(X):
    """Classify the input: ("rows", X), ("list", sequence of bags) or ("padded", 3-D array)."""
    X = as_numpy(X)
    if sparse.issparse(X):
        return "rows", X
    if _is_pandas(X):
        if X.ndim == 1:
            return "list", list(X.to_numpy(dtype=object))
        if X.shape[1] == 1 and X.dtypes.iloc[0].kind == "O" and X.shape[0] and _looks_like_bag(X.iloc[0, 0]):
            return "list", list(X.iloc[:, 0].to_numpy(dtype=object))
        return "rows", X
    if isinstance(X, np.ndarray):
        if X.dtype == object and X.ndim == 1:
            return "list", list(X)
        if X.ndim == 3:
            return "padded", X
        return "rows", X
    if isinstance(X, (list, tuple)) and len(X) and _looks_like_bag(X[0]):
        return "list", list(X)
    return "rows", X


def _flat_from_list(bags, name):
    arrays = []
    dims = None
    for i, bag in enumerate(bags):
        bag = as_numpy(bag)
        if sparse.issparse(bag):
            raise TypeError(f"{name}: bag {i} is a sparse matrix; bags must be dense (n_i, d) arrays.")
        shape = np.shape(bag)
        if len(shape) != 2:
            raise ValueError(f"{name}: every bag must be a 2-D (n_instances, n_features) array; "
                             f"bag {i} has shape {shape}.")
        if shape[0] == 0:
            raise ValueError(f"{name}: bag {i} is empty (0 instances); every bag needs at least one instance.")
        if dims is None:
            dims = shape[1]
        elif shape[1] != dims:
            raise ValueError(f"{name}: bags must share their instance dimension; bag 0 has {dims} features per "
                             f"instance but bag {i} has {shape[1]}.")
        arrays.append(check_array(bag, dtype=_FLOATS, input_name=f"bag {i}", ensure_min_features=1))
    if not arrays:
        raise ValueError(f"{name}: got 0 bags; at least one is required.")
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    flat = np.concatenate(arrays, axis=0)
    return flat, np.concatenate([[0], np.cumsum(lengths)])


def _flat_from_padded(X, name):
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name}: a padded 3-D bag array must be numeric; got dtype {X.dtype}.")
    X = X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)
    if X.shape[0] == 0:
        raise ValueError(f"{name}: got 0 bags; at least one is required.")
    if X.shape[2] == 0:
        raise ValueError(f"{name}: got bags with 0 features per instance (shape {X.shape}).")
    nan = np.isnan(X)
    padding = nan.all(axis=2)
    if np.any(nan.any(axis=2) & ~padding):
        raise ValueError(f"{name}: in a padded 3-D bag array only whole rows may be NaN (padding); some "
                         "instances are partly NaN.")
    if np.isinf(X).any():
        raise ValueError(f"{name}: the bags contain infinite values.")
    lengths = (~padding).sum(axis=1)
    if np.any(lengths == 0):
        raise ValueError(f"{name}: bag {int(np.flatnonzero(lengths == 0)[0])} is empty (all its rows are NaN "
                         "padding); every bag needs at least one instance.")
    flat = X[~padding]
    return flat, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _to_bags(X, name="bags"):
    """Bags from any accepted form, without an estimator (no feature-name bookkeeping)."""
    kind, payload = _split_kind(X)
    if kind == "rows":
        flat = check_array(payload, dtype=_FLOATS, input_name="X")
        return _Bags(flat, np.arange(flat.shape[0] + 1, dtype=np.int64))
    if kind == "padded":
        return _Bags(*_flat_from_padded(payload, name))
    return _Bags(*_flat_from_list(payload, name))


def validate_bags(estimator, X, *, reset, ensure_min_bags=1):
    """``validate_data`` for bag input: n_features_in_ is the instance dimension.

    Plain 2-D input goes through ``validate_data`` itself (feature names,
    sparse, dtype and finiteness checks); other forms are flattened and their
    stacked instances go through it, so the instance dimension is recorded
    and checked the same way.
    """
    name = type(estimator).__name__
    kind, payload = _split_kind(X)
    if kind == "rows":
        flat = validate_data(estimator, payload, reset=reset, dtype=_FLOATS, ensure_min_samples=ensure_min_bags)
        return _Bags(flat, np.arange(flat.shape[0] + 1, dtype=np.int64))
    if kind == "padded":
        flat, offsets = _flat_from_padded(payload, name)
    else:
        flat, offsets = _flat_from_list(payload, name)
    if offsets.shape[0] - 1 < ensure_min_bags:
        raise ValueError(f"{name}: got {offsets.shape[0] - 1} bag(s); at least {ensure_min_bags} are required.")
    flat = validate_data(estimator, flat, reset=reset, dtype=_FLOATS)
    return _Bags(flat, offsets, kind)


def padded_batch(flat, offsets, index, dtype=None):
    """Pad the bags ``index`` of a flat store into ``(len(index), max_len, d)`` zeros plus a boolean mask."""
    starts = offsets[index]
    lengths = offsets[np.asarray(index) + 1] - starts
    max_len = int(lengths.max())
    total = int(lengths.sum())
    bag_ids = np.repeat(np.arange(len(index)), lengths)
    within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    src = np.repeat(starts, lengths) + within
    out = np.zeros((len(index), max_len, flat.shape[1]), dtype=dtype or flat.dtype)
    out[bag_ids, within] = flat[src]
    mask = np.zeros((len(index), max_len), dtype=bool)
    mask[bag_ids, within] = True
    return out, mask


def input_feature_names(estimator, input_features, *, bag_column=False):
    """Validated input feature names (``x0, x1, ...`` when unknown), one per instance feature.

    With ``bag_column=True`` (the estimator was fitted on bags, not on plain
    rows) a single name is accepted as the name of the column holding the bags
    (what ``ColumnTransformer`` passes), and ``x0, x1, ...`` are returned.
    """
    n = estimator.n_features_in_
    fitted_names = getattr(estimator, "feature_names_in_", None)
    if input_features is None:
        return fitted_names if fitted_names is not None else np.array([f"x{i}" for i in range(n)], dtype=object)
    input_features = np.asarray(input_features, dtype=object)
    if input_features.ndim != 1:
        raise ValueError(f"input_features must be 1-D; got shape {input_features.shape}.")
    if bag_column and len(input_features) == 1 and n != 1:
        return np.array([f"x{i}" for i in range(n)], dtype=object)
    if fitted_names is not None and not np.array_equal(fitted_names, input_features):
        raise ValueError("input_features is not equal to feature_names_in_")
    if len(input_features) != n:
        raise ValueError(f"input_features should have length equal to number of features ({n}), got "
                         f"{len(input_features)}")
    return input_features


@validate_params({"X": "no_validation"}, prefer_skip_nested_validation=True)
def as_bags(X):
    """Read bags from any accepted input form into a list of ``(n_i, d)`` arrays.

    Parameters
    ----------
    X : list of ndarray, object ndarray, pandas Series, ndarray of shape (n_bags, max_len, d) or (n_samples, d)
        A sequence of ``(n_i, d)`` arrays; a 3-D array whose all-NaN rows are
        padding; or a 2-D array read as bags of one instance each.

    Returns
    -------
    bags : list of ndarray
        One float array of shape ``(n_i, d)`` per bag (float32 kept, other
        dtypes converted to float64), padding removed.

    Raises
    ------
    ValueError
        On empty bags, bags of different instance dimension, partly-NaN
        instances or non-finite values.

    See Also
    --------
    pad_bags : The inverse: bags to a padded 3-D array and a mask.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import as_bags
    >>> padded = np.array([[[1.0, 2.0], [np.nan, np.nan]], [[3.0, 4.0], [5.0, 6.0]]])
    >>> [bag.shape for bag in as_bags(padded)]
    [(1, 2), (2, 2)]
    """
    return _to_bags(X, "as_bags").split()


@validate_params({"X": "no_validation", "fill_value": [float, int]}, prefer_skip_nested_validation=True)
def pad_bags(X, *, fill_value=np.nan):
    """Pad bags into one 3-D array, with a mask of the real instances.

    Parameters
    ----------
    X : list of ndarray, object ndarray, pandas Series, ndarray of shape (n_bags, max_len, d) or (n_samples, d)
        Bags in any form :func:`as_bags` accepts.
    fill_value : float, default=nan
        Value of the padding rows. With NaN (the default) the result is itself
        a valid padded bag input.

    Returns
    -------
    padded : ndarray of shape (n_bags, max_len, d)
        The bags, each followed by ``max_len - n_i`` padding rows.
    mask : ndarray of shape (n_bags, max_len), dtype=bool
        True where a row is a real instance.

    See Also
    --------
    as_bags : Bags as a list of arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import pad_bags
    >>> padded, mask = pad_bags([np.ones((1, 2)), np.zeros((3, 2))])
    >>> padded.shape, mask.sum(axis=1)
    ((2, 3, 2), array([1, 3]))
    """
    bags = _to_bags(X, "pad_bags")
    padded, mask = padded_batch(bags.flat, bags.offsets, np.arange(bags.n_bags))
    padded[~mask] = fill_value
    return padded, mask
