"""Demo data of :class:`sklearn_icml.cluster.PrivateKMeans`: blobs inside a public box."""

from numbers import Integral, Real

from sklearn.datasets import make_blobs

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_bounded_blobs"]


@validate_params(
    {"n_samples": [Interval(Integral, 1, None, closed="left")],
     "n_features": [Interval(Integral, 1, None, closed="left")],
     "centers": [Interval(Integral, 1, None, closed="left")],
     "cluster_std": [Interval(Real, 0, None, closed="left")],
     "center_box": [tuple], "margin": [Interval(Real, 0, None, closed="left")],
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
def make_bounded_blobs(n_samples=10000, *, n_features=2, centers=5, cluster_std=1.0, center_box=(-8.0, 8.0),
                       margin=4.0, random_state=None):
    """Isotropic Gaussian blobs with a public bounding box, for private clustering.

    The box is ``center_box`` widened by ``margin`` on each side, a choice
    that does not look at the data (as differential privacy requires of
    ``PrivateKMeans(bounds=...)``); the few records a tail pushes outside are
    clipped by the estimator.

    Parameters
    ----------
    n_samples : int, default=10000
        Number of records.
    n_features : int, default=2
        Dimension.
    centers : int, default=5
        Number of blobs.
    cluster_std : float, default=1.0
        Standard deviation of each blob.
    center_box : tuple of float, default=(-8.0, 8.0)
        Box the blob centres are drawn in.
    margin : float, default=4.0
        Widening of ``center_box`` that gives the public bounds.
    random_state : int, RandomState instance or None, default=None
        Seeds the centres and the records.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Records.
    y : ndarray of shape (n_samples,)
        Blob of each record.
    bounds : tuple of float
        Public ``(lower, upper)`` bounds for ``PrivateKMeans``.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_bounded_blobs
    >>> X, y, bounds = make_bounded_blobs(100, random_state=0)
    >>> X.shape, bounds
    ((100, 2), (-12.0, 12.0))
    """
    X, y = make_blobs(n_samples=n_samples, n_features=n_features, centers=centers, cluster_std=cluster_std,
                      center_box=center_box, random_state=random_state)
    return X, y, (float(center_box[0] - margin), float(center_box[1] + margin))
