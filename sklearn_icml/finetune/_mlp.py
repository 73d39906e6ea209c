"""The default network of DoRAClassifier/DoRARegressor: a small MLP with built-in standardisation."""

import math

import numpy as np
import torch
from torch import nn

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


def _linear(n_in, n_out, generator):
    """An nn.Linear initialised like torch's default, but from ``generator`` (the global RNG is not used)."""
    layer = torch.nn.utils.skip_init(nn.Linear, n_in, n_out)
    with torch.no_grad():
        nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
        bound = 1.0 / math.sqrt(n_in) if n_in > 0 else 0.0
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return layer


class StandardizedMLP(nn.Module):
    """``y = head(body((x - x_mean) / x_scale)) * y_scale + y_mean``.

    The standardisation constants are buffers (not parameters), so the
    network is self-contained: it maps raw inputs to outputs in the units of
    the targets it was built for, and can be the ``module`` of a later
    fine-tuning. ``body`` is an ``nn.Sequential`` of Linear/activation pairs
    (``body.0``, ``body.2``, ...) and ``head`` the output Linear.
    """

    def __init__(self, n_in, hidden, n_out, *, activation="relu", x_mean=None, x_scale=None, y_mean=None,
                 y_scale=None, generator=None):
        super().__init__()
        as_buffer = lambda v, n, fill: torch.as_tensor(  # noqa: E731
            np.full(n, fill) if v is None else np.asarray(v), dtype=torch.float32).clone()
        self.register_buffer("x_mean", as_buffer(x_mean, n_in, 0.0))
        self.register_buffer("x_scale", as_buffer(x_scale, n_in, 1.0))
        self.register_buffer("y_mean", as_buffer(y_mean, n_out, 0.0))
        self.register_buffer("y_scale", as_buffer(y_scale, n_out, 1.0))
        layers, width = [], n_in
        for h in hidden:
            layers += [_linear(width, h, generator), _ACTIVATIONS[activation]()]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = _linear(width, n_out, generator)

    def forward(self, x):
        return self.head(self.body((x - self.x_mean) / self.x_scale)) * self.y_scale + self.y_mean
