"""Distances between two samples that can be differentiated: MMD with a multiscale kernel, Sinkhorn divergence.

Both accept numpy arrays (float64 results) or torch tensors (a differentiable
torch scalar on the tensors' device, in their dtype), so a training loss and
the evaluation metric are one implementation. Pairwise squared distances are
``|x|^2 + |y|^2 - 2 x.y`` clamped at zero, by one matrix product: no
``torch.cdist``, whose CPU backward pass is slow, and memory O(n_x n_y).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from .._sklearn_private import Interval, StrOptions, validate_params
from .._torch import is_torch_tensor

__all__ = ["mmd2", "sinkhorn_divergence"]

#: Default scales of the inverse multiquadric kernel (those of the DySLIM code for Lorenz-63).
DEFAULT_BANDWIDTHS = (0.2, 0.5, 0.9, 1.3)


def _as_pair(X, Y, name):
    """Two 2-D samples of one backend with the same number of features (1-D inputs are one feature)."""
    if is_torch_tensor(X) and is_torch_tensor(Y):
        X = X.reshape(len(X), -1) if X.ndim != 1 else X[:, None]
        Y = Y.reshape(len(Y), -1) if Y.ndim != 1 else Y[:, None]
        if X.dtype != Y.dtype:
            Y = Y.to(X.dtype)
    elif is_torch_tensor(X) or is_torch_tensor(Y):
        raise TypeError(f"{name}: X and Y must both be numpy arrays or both torch tensors; got "
                        f"{type(X).__name__} and {type(Y).__name__}.")
    else:
        X = np.asarray(X)
        Y = np.asarray(Y)
        X = check_array(X.reshape(-1, 1) if X.ndim == 1 else X, dtype=np.float64, input_name="X")
        Y = check_array(Y.reshape(-1, 1) if Y.ndim == 1 else Y, dtype=np.float64, input_name="Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"{name}: X has {X.shape[1]} features and Y has {Y.shape[1]}.")
    if len(X) < 1 or len(Y) < 1:
        raise ValueError(f"{name}: both samples need at least one row; got {len(X)} and {len(Y)}.")
    return X, Y


def squared_distances(X, Y):
    """Pairwise squared Euclidean distances by one matrix product, clamped at 0 (numpy or torch)."""
    xx = (X * X).sum(1)[:, None]
    yy = (Y * Y).sum(1)[None, :]
    d = xx + yy - 2.0 * (X @ Y.T)
    if is_torch_tensor(d):
        return d.clamp(min=0.0)
    return np.maximum(d, 0.0)


def _imq_mean(X, Y, bandwidths):
    """Mean over all pairs of the multiscale inverse multiquadric kernel ``sum_a a^2 / (a^2 + |x - y|^2)``."""
    d = squared_distances(X, Y)
    total = 0.0
    for a in bandwidths:
        a2 = float(a) ** 2
        total = total + (a2 / (a2 + d)).mean()
    return total


def _check_bandwidths(bandwidths):
    values = np.asarray(bandwidths, dtype=np.float64).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"mmd2: bandwidths must be positive finite numbers; got {bandwidths!r}.")
    return tuple(float(v) for v in values)


def mmd2(X, Y, *, kernel="imq", bandwidths=DEFAULT_BANDWIDTHS):
    """Squared maximum mean discrepancy between two samples (biased V-statistic).

    ``MMD^2 = mean k(x, x') + mean k(y, y') - 2 mean k(x, y)``, every pair
    counted, diagonals included, with the multiscale inverse multiquadric
    kernel ``k(x, y) = sum_a a^2 / (a^2 + |x - y|^2)`` of DySLIM [1]_. It is
    zero for identical samples, never negative (the kernel is positive
    definite) and bounded by ``2 * len(bandwidths)``.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_x, n_features)
        First sample (further axes are flattened; 1-D is one feature).
    Y : array-like or torch.Tensor of shape (n_y, n_features)
        Second sample, of the same kind as ``X``.
    kernel : {"imq"}, default="imq"
        The kernel; only the inverse multiquadric is offered.
    bandwidths : sequence of float, default=(0.2, 0.5, 0.9, 1.3)
        The scales ``a`` (in the units of the features).

    Returns
    -------
    float or torch.Tensor
        A float for numpy inputs; a differentiable 0-d tensor for tensors.

    See Also
    --------
    sinkhorn_divergence : An optimal-transport distance between samples.
    sklearn_icml.dynamics.DySLIMRegressor : Trains with it.

    Notes
    -----
    Memory grows with ``n_x * n_y``: subsample large samples first.

    References
    ----------
    .. [1] Schiff, Y., Wan, Z. Y., Parker, J. B., Hoyer, S., Kuleshov, V.,
       Sha, F. and Zepeda-Nunez, L. "DySLIM: Dynamics Stable Learning by
       Invariant Measure for Chaotic Systems", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import mmd2
    >>> X = np.array([[0.0], [1.0]])
    >>> mmd2(X, X)
    0.0
    >>> round(mmd2(X, X + 10.0), 4)
    5.2583
    """
    if kernel != "imq":
        raise ValueError(f"mmd2: kernel must be 'imq'; got {kernel!r}.")
    bandwidths = _check_bandwidths(bandwidths)
    X, Y = _as_pair(X, Y, "mmd2")
    value = _imq_mean(X, X, bandwidths) + _imq_mean(Y, Y, bandwidths) - 2.0 * _imq_mean(X, Y, bandwidths)
    if is_torch_tensor(value):
        return value
    return max(float(value), 0.0)


def _sinkhorn_cost(X, Y, reg):
    import ot

    if is_torch_tensor(X):
        import torch

        a = torch.full((len(X),), 1.0 / len(X), dtype=X.dtype, device=X.device)
        b = torch.full((len(Y),), 1.0 / len(Y), dtype=X.dtype, device=X.device)
    else:
        a = np.full(len(X), 1.0 / len(X))
        b = np.full(len(Y), 1.0 / len(Y))
    return ot.sinkhorn2(a, b, squared_distances(X, Y), reg, method="sinkhorn_log", numItermax=1000, stopThr=1e-6)


@validate_params(
    {
        "X": "no_validation",
        "Y": "no_validation",
        "reg": [Interval(Real, 0, None, closed="neither"), None],
        "max_samples": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "debias": ["boolean"],
        "cost": [StrOptions({"sqeuclidean"})],
    },
    prefer_skip_nested_validation=True,
)
def sinkhorn_divergence(X, Y, *, reg=None, cost="sqeuclidean", debias=True, max_samples=2000, random_state=None):
    """Sinkhorn divergence between two samples (entropic optimal transport, POT).

    ``S(X, Y) = OT_reg(X, Y) - (OT_reg(X, X) + OT_reg(Y, Y)) / 2``, where
    ``OT_reg`` is the transport cost ``<P, C>`` of the entropic plan ``P``
    (POT's ``ot.sinkhorn2``, log-domain) between uniform weights, with the
    squared Euclidean cost ``C``. The debiasing makes ``S(X, X) = 0``.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_x, n_features)
        First sample.
    Y : array-like or torch.Tensor of shape (n_y, n_features)
        Second sample, of the same kind as ``X``.
    reg : float or None, default=None
        Entropic regularisation; None takes 5% of the mean cost between
        ``X`` and ``Y`` (the relative default of the ``ott`` library the
        DySLIM code uses).
    cost : {"sqeuclidean"}, default="sqeuclidean"
        The ground cost.
    debias : bool, default=True
        Subtract the self-transport terms; False returns ``OT_reg(X, Y)``.
    max_samples : int or None, default=2000
        Numpy inputs only: rows kept from each sample (subsampled without
        replacement); tensors are used whole.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsampling.

    Returns
    -------
    float or torch.Tensor
        A float for numpy inputs; a differentiable 0-d tensor for tensors.

    See Also
    --------
    mmd2 : A kernel distance between samples, cheaper for large batches.
    wasserstein1 : The exact (unregularised) transport distance.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import sinkhorn_divergence
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> round(sinkhorn_divergence(X, X), 6)
    0.0
    >>> sinkhorn_divergence(X, X + 3.0) > 8.0
    True
    """
    X, Y = _as_pair(X, Y, "sinkhorn_divergence")
    if not is_torch_tensor(X) and max_samples is not None:
        rng = check_random_state(random_state)
        if len(X) > max_samples:
            X = X[rng.choice(len(X), max_samples, replace=False)]
        if len(Y) > max_samples:
            Y = Y[rng.choice(len(Y), max_samples, replace=False)]
    if reg is None:
        mean_cost = squared_distances(X, Y).mean()
        mean_cost = float(mean_cost.detach()) if is_torch_tensor(mean_cost) else float(mean_cost)
        reg = 0.05 * mean_cost if mean_cost > 0 else 1e-3
    value = _sinkhorn_cost(X, Y, reg)
    if debias:
        value = value - 0.5 * (_sinkhorn_cost(X, X, reg) + _sinkhorn_cost(Y, Y, reg))
    if is_torch_tensor(value):
        return value
    return float(value)
