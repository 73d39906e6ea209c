"""Seeds derived from a scikit-learn ``random_state``: the one helper for "draw an int seed".

Estimators that hand a seed to another library (scikit-learn's KMeans, torch,
OR-Tools, a joblib task) draw it here, so every site uses the same range and
the same draw from the estimator's ``RandomState``.
"""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["SEED_MAX", "draw_seed", "draw_seeds"]

#: Exclusive upper bound of the seeds (``2**31 - 1``): valid for numpy, torch, OR-Tools and scikit-learn.
SEED_MAX = int(np.iinfo(np.int32).max)


def draw_seed(random_state):
    """One integer seed in ``[0, 2**31 - 1)`` drawn from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        As everywhere in scikit-learn. A RandomState advances by one draw.

    Returns
    -------
    int
        The seed.

    Examples
    --------
    >>> from sklearn_icml.utils._random import draw_seed
    >>> draw_seed(0) == draw_seed(0)
    True
    """
    return int(check_random_state(random_state).randint(SEED_MAX))


def draw_seeds(random_state, n):
    """``n`` integer seeds in ``[0, 2**31 - 1)`` drawn at once from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        As everywhere in scikit-learn.
    n : int
        How many seeds.

    Returns
    -------
    ndarray of shape (n,)
        The seeds (``int64``).

    Examples
    --------
    >>> from sklearn_icml.utils._random import draw_seeds
    >>> draw_seeds(0, 3).shape
    (3,)
    """
    return check_random_state(random_state).randint(SEED_MAX, size=n).astype(np.int64)
