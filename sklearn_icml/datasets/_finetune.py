"""Demo data of the ``finetune`` family: a source task and a shifted target task from two teacher networks."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, validate_params

__all__ = ["make_weight_shift_tasks"]


def _teacher(rng, sizes):
    return [rng.standard_normal((n_out, n_in)) / np.sqrt(n_in) for n_in, n_out in zip(sizes[:-1], sizes[1:])]


def _shift(W, rng, magnitude_shift, direction_shift, rank):
    """Rotate each row of W by a rank-`rank` direction change, then rescale its norm."""
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    D = rng.standard_normal((W.shape[0], rank)) @ rng.standard_normal((rank, W.shape[1]))
    D *= norms / np.maximum(np.linalg.norm(D, axis=1, keepdims=True), 1e-12)
    V = W + direction_shift * D
    V *= norms / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    return np.exp(magnitude_shift * rng.standard_normal((W.shape[0], 1))) * V


def _forward(weights, X):
    h = X
    for W in weights[:-1]:
        h = np.tanh(h @ W.T)
    return h @ weights[-1].T


@validate_params(
    {
        "n_source": [Interval(Integral, 1, None, closed="left")],
        "n_target": [Interval(Integral, 1, None, closed="left")],
        "n_test": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_hidden": [Interval(Integral, 1, None, closed="left")],
        "magnitude_shift": [Interval(Real, 0, None, closed="left")],
        "direction_shift": [Interval(Real, 0, None, closed="left")],
        "shift_rank": [Interval(Integral, 1, None, closed="left")],
        "task": [StrOptions({"regression", "classification"})],
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_weight_shift_tasks(n_source=2000, n_target=300, n_test=1000, *, n_features=16, n_hidden=32,
                            magnitude_shift=0.6, direction_shift=0.1, shift_rank=2, task="regression",
                            n_classes=3, noise=0.1, random_state=None):
    """A pre-training task and a fine-tuning task whose teacher weights differ in magnitude and direction.

    A teacher network ``n_features -> n_hidden -> n_hidden -> output`` with
    tanh units labels the source task. The target teacher is the same
    network with each hidden weight changed row by row: its direction is
    moved by ``direction_shift`` times a rank-``shift_rank`` matrix (rows
    scaled to the original row norms), then its norm is multiplied by
    ``exp(magnitude_shift * z)``, ``z ~ N(0, 1)`` per row. The output layer
    is shared. Inputs are standard normal. This is the setting of the DoRA
    paper's analysis in miniature: a pre-trained network to adapt to a task
    whose solution differs mostly in magnitude (or mostly in direction).

    Parameters
    ----------
    n_source : int, default=2000
        Samples of the source (pre-training) task.
    n_target : int, default=300
        Training samples of the target (fine-tuning) task.
    n_test : int, default=1000
        Test samples of the target task.
    n_features : int, default=16
        Input dimension.
    n_hidden : int, default=32
        Width of the teachers' two hidden layers.
    magnitude_shift : float, default=0.6
        Standard deviation of the log row-norm change of the hidden weights.
    direction_shift : float, default=0.1
        Size of the low-rank direction change relative to each row's norm.
    shift_rank : int, default=2
        Rank of the direction change.
    task : {"regression", "classification"}, default="regression"
        One target in standard units, or labels ``0 .. n_classes - 1`` from
        the argmax of noisy teacher logits.
    n_classes : int, default=3
        Number of classes for ``task="classification"``.
    noise : float, default=0.1
        Regression: Gaussian noise relative to the target's standard
        deviation. Classification: Gumbel noise on the logits, relative to
        their standard deviation.
    random_state : int, RandomState instance or None, default=None
        Seeds the teachers, the shift and the samples.

    Returns
    -------
    X_source : ndarray of shape (n_source, n_features)
        Source inputs.
    y_source : ndarray of shape (n_source,)
        Source targets (float, or int labels).
    X_target : ndarray of shape (n_target, n_features)
        Target training inputs.
    y_target : ndarray of shape (n_target,)
        Target training targets.
    X_test : ndarray of shape (n_test, n_features)
        Target test inputs.
    y_test : ndarray of shape (n_test,)
        Target test targets.

    See Also
    --------
    sklearn_icml.finetune.DoRARegressor : Fine-tunes a network pre-trained on the source task.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_weight_shift_tasks
    >>> Xs, ys, Xt, yt, Xte, yte = make_weight_shift_tasks(n_source=50, n_target=20, n_test=10,
    ...                                                    random_state=0)
    >>> Xs.shape, Xt.shape, yte.shape
    ((50, 16), (20, 16), (10,))
    """
    rng = check_random_state(random_state)
    n_out = 1 if task == "regression" else n_classes
    source = _teacher(rng, [n_features, n_hidden, n_hidden, n_out])
    target = [_shift(W, rng, magnitude_shift, direction_shift, min(shift_rank, *W.shape)) for W in source[:-1]]
    target.append(source[-1])
    X = rng.standard_normal((n_source + n_target + n_test, n_features))
    f_source = _forward(source, X[:n_source])
    f_target = _forward(target, X[n_source:])
    if task == "regression":
        # one scale for both tasks, from the source task, so that the shift is visible in the targets
        mean, std = f_source.mean(), f_source.std() or 1.0
        y_s = (f_source[:, 0] - mean) / std + noise * rng.standard_normal(n_source)
        y_t = (f_target[:, 0] - mean) / std + noise * rng.standard_normal(len(f_target))
    else:
        std = f_source.std() or 1.0
        y_s = np.argmax(f_source + noise * std * rng.gumbel(size=f_source.shape), axis=1)
        y_t = np.argmax(f_target + noise * std * rng.gumbel(size=f_target.shape), axis=1)
    Xs, Xt, Xte = X[:n_source], X[n_source:n_source + n_target], X[n_source + n_target:]
    return Xs, y_s, Xt, y_t[:n_target], Xte, y_t[n_target:]
