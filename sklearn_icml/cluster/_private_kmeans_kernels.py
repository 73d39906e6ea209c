"""The in-memory kernels that PrivateKMeans' fit and its Dask path both run: nearest centres and the cost.

Below both (the in-memory module dispatches to the Dask one, which reuses these
kernels on every block), so that no two modules import each other.
"""

import numpy as np

from ..utils._validation import square_safe_max
from ._mettu_plaxton import nearest


def scaled_sq_distances(X, centers):
    """Squared distances of the records to the centres, each row divided by its record's scale squared.

    The differences ``x - c`` are finite (the centres lie in the box, within
    +-1e150); those of a record whose squares would overflow (beyond
    :func:`~sklearn_icml.utils._validation.square_safe_max`, 1e300 say) are
    divided by the power of two just below its peak (exact) before squaring;
    other records have scale 1. Returns the scales ``s`` of shape (n,) and the
    (n, k) squared distances over ``s**2``.
    """
    peak = np.abs(X).max(axis=1, initial=0.0)
    s = np.where(peak > square_safe_max(), np.ldexp(1.0, np.frexp(peak)[1] - 1), 1.0)
    diff = X[:, None, :] - centers[None, :, :]
    diff /= s[:, None, None]
    return s, (diff ** 2).sum(axis=2)


def assign(X, centers):
    """Nearest centre of every record and the k-means cost, for records of any finite magnitude.

    Records far outside the box go through :func:`scaled_sq_distances`, so
    the assignment does not overflow; the cost is ``inf`` when it exceeds
    float64's range.
    """
    huge = np.abs(X).max(axis=1, initial=0.0) > square_safe_max()
    if huge.any():
        labels = np.empty(len(X), dtype=np.int64)
        labels[~huge] = nearest(X[~huge], centers)
        labels[huge] = scaled_sq_distances(X[huge], centers)[1].argmin(axis=1)
    else:
        labels = nearest(X, centers)
    with np.errstate(over="ignore"):
        return labels, float(((X - centers[labels]) ** 2).sum())
