"""Demo data of :class:`sklearn_icml.generative.LeftInvertibleWGAN`: the 2-D Swiss roll of the LIPERM paper."""

from numbers import Integral, Real

from sklearn.datasets import make_swiss_roll

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_swiss_roll_2d"]


@validate_params(
    {"n_samples": [Interval(Integral, 1, None, closed="left")],
     "noise": [Interval(Real, 0, None, closed="left")],
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
def make_swiss_roll_2d(n_samples=2000, *, noise=1.5, random_state=None):
    """A planar Swiss roll: columns 0 and 2 of scikit-learn's Swiss roll, divided by 7.5.

    The data of the Swiss-roll experiment of Vardanyan et al. (ICML 2024):
    a spiral with noise in the plane, spanning about [-1.7, 2] in each
    coordinate.

    Parameters
    ----------
    n_samples : int, default=2000
        Number of points.
    noise : float, default=1.5
        Standard deviation of the Gaussian noise added by
        :func:`sklearn.datasets.make_swiss_roll` (before the division by 7.5).
    random_state : int, RandomState instance or None, default=None
        Seeds the points.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
        The points.
    t : ndarray of shape (n_samples,)
        Position of each point along the spiral.

    See Also
    --------
    sklearn.datasets.make_swiss_roll : The 3-D roll it is cut from.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_swiss_roll_2d
    >>> X, t = make_swiss_roll_2d(100, random_state=0)
    >>> X.shape, t.shape
    ((100, 2), (100,))
    """
    X, t = make_swiss_roll(n_samples, noise=noise, random_state=random_state)
    return X[:, [0, 2]] / 7.5, t
