"""The library's one multilayer perceptron: :class:`StandardizedMLP`, seeded, with built-in standardisation.

Used by the default network of :class:`~sklearn_icml.finetune.DoRAClassifier` /
:class:`~sklearn_icml.finetune.DoRARegressor`, the MLP log-risk of
:class:`~sklearn_icml.survival.CoxSurvival` and the feature network of
MALIBO. Its weights are drawn from a given CPU :class:`torch.Generator` (the
global torch RNG is never used); :func:`mlp_coefs` exports them in
scikit-learn's ``coefs_`` / ``intercepts_`` layout (``(fan_in, fan_out)``
matrices) and :meth:`StandardizedMLP.set_coefs` loads them back.

torch is imported when this module is imported: import it inside functions.
"""

import math

import numpy as np
import torch
from torch import nn

__all__ = ["ACTIVATIONS", "StandardizedMLP", "mlp_coefs"]

#: Activations by name (the strings estimators accept).
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "elu": nn.ELU, "silu": nn.SiLU}


def _linear(n_in, n_out, generator, *, bias=True, dtype=None):
    """An nn.Linear initialised like torch's default, but from ``generator`` (the global RNG is not used)."""
    layer = torch.nn.utils.skip_init(nn.Linear, n_in, n_out, bias=bias, dtype=dtype)
    with torch.no_grad():
        nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
        if bias:
            bound = 1.0 / math.sqrt(n_in) if n_in > 0 else 0.0
            nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return layer


class _Residual(nn.Module):
    """``h -> act(h + linear(h))``: a hidden layer of equal width with a skip connection."""

    def __init__(self, linear, activation):
        super().__init__()
        self.linear = linear
        self.act = activation

    def forward(self, h):
        return self.act(h + self.linear(h))


class StandardizedMLP(nn.Module):
    """``y = head(body((x - x_mean) / x_scale)) * y_scale + y_mean``.

    The standardisation constants are buffers (not parameters), so the
    network is self-contained: it maps raw inputs to outputs in the units of
    the targets it was built for, and can be the ``module`` of a later
    fine-tuning. ``body`` is an ``nn.Sequential`` of Linear/activation pairs
    (``body.0``, ``body.2``, ...; with ``residual=True`` the hidden layers
    after the first are skip blocks ``body.2.linear``, ...) and ``head`` the
    output Linear.

    Parameters
    ----------
    n_in, n_out : int
        Input and output widths.
    hidden : sequence of int
        Widths of the hidden layers (empty: a linear model).
    activation : {"relu", "tanh", "gelu", "elu", "silu"}, default="relu"
        Activation of the hidden layers.
    x_mean, x_scale, y_mean, y_scale : array-like, default=None
        Standardisation constants (0 and 1 when None).
    generator : torch.Generator, default=None
        Source of the initial weights (torch's ``nn.Linear`` default
        distribution, U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
    output_bias : bool, default=True
        Whether ``head`` has a bias (a Cox log-risk has none).
    output_activation : bool, default=False
        Apply the activation after ``head`` too (a feature map rather than a
        predictor).
    residual : bool, default=False
        Hidden layers after the first, when of equal width, add their input
        (``h -> act(h + W h + b)``).
    dtype : torch.dtype, default=None
        Parameter dtype (float32 by default).

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.utils._mlp import StandardizedMLP, mlp_coefs
    >>> net = StandardizedMLP(3, [8], 1, generator=torch.Generator().manual_seed(0))
    >>> net(torch.zeros(2, 3)).shape
    torch.Size([2, 1])
    >>> [c.shape for c in mlp_coefs(net)[0]]
    [(3, 8), (8, 1)]
    """

    def __init__(self, n_in, hidden, n_out, *, activation="relu", x_mean=None, x_scale=None, y_mean=None,
                 y_scale=None, generator=None, output_bias=True, output_activation=False, residual=False,
                 dtype=None):
        super().__init__()
        dtype = dtype or torch.float32
        as_buffer = lambda v, n, fill: torch.as_tensor(  # noqa: E731
            np.full(n, fill) if v is None else np.asarray(v), dtype=dtype).clone()
        self.register_buffer("x_mean", as_buffer(x_mean, n_in, 0.0))
        self.register_buffer("x_scale", as_buffer(x_scale, n_in, 1.0))
        self.register_buffer("y_mean", as_buffer(y_mean, n_out, 0.0))
        self.register_buffer("y_scale", as_buffer(y_scale, n_out, 1.0))
        layers, width = [], n_in
        for h in hidden:
            linear = _linear(width, h, generator, dtype=dtype)
            if residual and width == h and layers:
                layers += [_Residual(linear, ACTIVATIONS[activation]()), nn.Identity()]
            else:
                layers += [linear, ACTIVATIONS[activation]()]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = _linear(width, n_out, generator, bias=output_bias, dtype=dtype)
        self.out_act = ACTIVATIONS[activation]() if output_activation else nn.Identity()

    def linears(self):
        """The Linear layers, input first (``head`` last)."""
        found = [m.linear if isinstance(m, _Residual) else m for m in self.body
                 if isinstance(m, (nn.Linear, _Residual))]
        return found + [self.head]

    def forward(self, x):
        return self.out_act(self.head(self.body((x - self.x_mean) / self.x_scale))) * self.y_scale + self.y_mean

    @torch.no_grad()
    def set_coefs(self, coefs, intercepts):
        """Load weights given in scikit-learn's layout (``coefs[k]`` of shape ``(fan_in, fan_out)``)."""
        layers = self.linears()
        if len(coefs) != len(layers):
            raise ValueError(f"StandardizedMLP.set_coefs: {len(coefs)} matrices for {len(layers)} layers.")
        for k, layer in enumerate(layers):
            layer.weight.copy_(torch.as_tensor(np.asarray(coefs[k]).T, dtype=layer.weight.dtype))
            if layer.bias is not None and k < len(intercepts):
                layer.bias.copy_(torch.as_tensor(np.asarray(intercepts[k]), dtype=layer.bias.dtype))
        return self


def mlp_coefs(module):
    """Weights of a :class:`StandardizedMLP` in scikit-learn's layout, as float64 numpy arrays.

    Parameters
    ----------
    module : StandardizedMLP
        Any device; read without gradient.

    Returns
    -------
    coefs : list of ndarray
        ``(fan_in, fan_out)`` matrices, input layer first.
    intercepts : list of ndarray
        Biases of the layers that have one, in the same order.
    """
    coefs, intercepts = [], []
    for layer in module.linears():
        coefs.append(layer.weight.detach().cpu().numpy().T.astype(np.float64))
        if layer.bias is not None:
            intercepts.append(layer.bias.detach().cpu().numpy().astype(np.float64))
    return coefs, intercepts
