"""Trajectories to training pairs: each state with the states that follow it."""

from numbers import Integral

import numpy as np

from ..utils._sklearn_private import Interval, validate_params
from ..utils._torch import as_numpy

__all__ = ["make_rollout_dataset"]


@validate_params(
    {
        "trajectories": ["array-like"],
        "n_rollout_steps": [Interval(Integral, 1, None, closed="left")],
        "stride": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def make_rollout_dataset(trajectories, n_rollout_steps=1, stride=1):
    """Cut trajectories into (state, following states) pairs for :class:`DySLIMRegressor`.

    Every ``stride``-th state ``x_t`` of each trajectory that has
    ``n_rollout_steps`` successors becomes a row of ``X``; the row of ``y``
    holds ``x_{t+1}, ..., x_{t+K}`` one after the other (``K =
    n_rollout_steps``).

    Parameters
    ----------
    trajectories : array-like of shape (n_trajectories, n_steps, n_features)
        Trajectories, time along axis 1 (a 2-D array is one trajectory).
    n_rollout_steps : int, default=1
        Future states per row (K).
    stride : int, default=1
        Steps between consecutive starting states; ``stride=n_rollout_steps+1``
        cuts non-overlapping segments as the DySLIM code does.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Starting states.
    y : ndarray of shape (n_samples, n_rollout_steps * n_features)
        The ``K`` following states, flattened state by state.

    See Also
    --------
    DySLIMRegressor : Learns the flow map from these pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.dynamics import make_rollout_dataset
    >>> traj = np.arange(10.0).reshape(1, 5, 2)
    >>> X, y = make_rollout_dataset(traj, n_rollout_steps=2)
    >>> X.tolist()
    [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    >>> y[0].tolist()
    [2.0, 3.0, 4.0, 5.0]
    """
    traj = np.asarray(as_numpy(trajectories), dtype=np.float64)
    if traj.ndim == 2:
        traj = traj[None]
    if traj.ndim != 3:
        raise ValueError(f"make_rollout_dataset: trajectories must be 3-D (n_trajectories, n_steps, n_features); "
                         f"got shape {traj.shape}.")
    n_traj, n_steps, d = traj.shape
    K = int(n_rollout_steps)
    if n_steps <= K:
        raise ValueError(f"make_rollout_dataset: trajectories of {n_steps} steps are too short for "
                         f"n_rollout_steps={K} (need at least {K + 1}).")
    starts = np.arange(0, n_steps - K, stride)
    X = traj[:, starts].reshape(-1, d)
    windows = np.stack([traj[:, starts + k] for k in range(1, K + 1)], axis=2)  # (n_traj, n_starts, K, d)
    y = windows.reshape(-1, K * d)
    return X.copy(), y.copy()
