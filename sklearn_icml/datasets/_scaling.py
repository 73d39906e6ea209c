"""Synthetic training runs of several model shapes that follow known scaling laws (S19)."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_scaling_runs"]

# E = a (C + d)^-b + c per shape: each later shape costs more early on and reaches lower losses; consecutive
# shapes' marginal computes cross at E - c of about 0.1, 0.01, 0.003 and 0.001.
_LAWS = (
    {"a": 1.0, "b": 0.5, "c": 0.10, "d": 0.5},
    {"a": 3.179, "b": 0.7, "c": 0.05, "d": 2.0},
    {"a": 20.68, "b": 0.9, "c": 0.02, "d": 6.0},
    {"a": 183.8, "b": 1.1, "c": 0.01, "d": 15.0},
    {"a": 2069.0, "b": 1.3, "c": 0.005, "d": 40.0},
)


def make_scaling_runs(n_shapes=3, n_runs=30, *, noise=0.01, compute_range=(1.0, 1e4), random_state=None,
                      return_params=False):
    """Generate runs of ``n_shapes`` model shapes whose loss follows known saturating power laws.

    Shape ``k`` (ids ``1..n_shapes``) follows ``E = a_k (C + d_k)^-b_k + c_k``:
    later shapes cost more at first and reach lower losses, so an adaptive
    schedule moves through them in order.

    Parameters
    ----------
    n_shapes : int, default=3
        Number of shapes, 1 to 5.
    n_runs : int, default=30
        Runs per shape, at log-spaced compute.
    noise : float, default=0.01
        Standard deviation of the multiplicative log-normal noise on the loss.
    compute_range : tuple of two floats, default=(1.0, 1e4)
        Smallest and largest compute.
    random_state : int, RandomState instance or None, default=None
        Seeds the noise.
    return_params : bool, default=False
        Also return the true laws.

    Returns
    -------
    X : ndarray of shape (n_shapes * n_runs, 2)
        Compute in column 0, shape id in column 1.
    y : ndarray of shape (n_shapes * n_runs,)
        Loss.
    params : dict
        ``{shape: {"a", "b", "c", "d"}}``, only when ``return_params``.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scaling_runs
    >>> X, y = make_scaling_runs(n_shapes=2, n_runs=10, random_state=0)
    >>> X.shape, bool((y > 0).all())
    ((20, 2), True)
    """
    if not 1 <= int(n_shapes) <= len(_LAWS):
        raise ValueError(f"make_scaling_runs: n_shapes must be between 1 and {len(_LAWS)}; got {n_shapes!r}.")
    if int(n_runs) < 1 or noise < 0 or not (0 < compute_range[0] < compute_range[1]):
        raise ValueError("make_scaling_runs: need n_runs >= 1, noise >= 0 and 0 < compute_range[0] < "
                         f"compute_range[1]; got {n_runs!r}, {noise!r}, {compute_range!r}.")
    rng = check_random_state(random_state)
    C = np.geomspace(compute_range[0], compute_range[1], int(n_runs))
    params = {k + 1: dict(_LAWS[k]) for k in range(int(n_shapes))}
    X = np.vstack([np.column_stack([C, np.full(len(C), float(s))]) for s in params])
    y = np.concatenate([p["a"] * (C + p["d"]) ** -p["b"] + p["c"] for p in params.values()])
    y = y * np.exp(noise * rng.standard_normal(len(y)))
    return (X, y, params) if return_params else (X, y)
