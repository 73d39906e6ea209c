"""The learned flow map of DySLIM: a network (MLP or circular 1-D convolutions) inside an integrator.

``S_theta(x)`` advances a state by one time step. The network ``f`` is wrapped
by one of the integrators of the DySLIM code: ``residual`` (``x + f(x)``),
``euler`` (``x + dt f(x)``, the explicit Euler step used for Lorenz-63),
``rk4`` (classic Runge-Kutta with ``f`` as the vector field) or ``direct``
(``f(x)``, the "one step direct" map used for Kuramoto-Sivashinsky). Weights
are drawn from a given CPU :class:`torch.Generator`, never the global RNG.

torch is imported when this module is imported: import it inside functions.
"""

import math

import torch
from torch import nn

from ..utils._mlp import ACTIVATIONS, StandardizedMLP

__all__ = ["FlowMap", "PeriodicConvNet", "build_network"]

#: Integrators by name.
INTEGRATORS = ("residual", "euler", "rk4", "direct")


def _conv1d(c_in, c_out, kernel_size, generator):
    """A circular Conv1d initialised like torch's default, from ``generator``."""
    layer = torch.nn.utils.skip_init(nn.Conv1d, c_in, c_out, kernel_size, padding=kernel_size // 2,
                                     padding_mode="circular")
    with torch.no_grad():
        nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
        bound = 1.0 / math.sqrt(c_in * kernel_size)
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return layer


class PeriodicConvNet(nn.Module):
    """A field on a periodic 1-D grid to a field: a stack of circular convolutions.

    ``(batch, n_grid) -> (batch, n_grid)``: one input channel, hidden layers
    of ``channels[i]`` channels with the activation, one output channel.
    Circular padding makes the map equivariant to shifts of the grid.

    Parameters
    ----------
    channels : sequence of int
        Channels of the hidden layers.
    kernel_size : int, default=5
        Width of every convolution (odd).
    activation : str, default="silu"
        Activation between layers.
    generator : torch.Generator, default=None
        Source of the initial weights.
    """

    def __init__(self, channels, *, kernel_size=5, activation="silu", generator=None):
        super().__init__()
        layers, width = [], 1
        for c in channels:
            layers += [_conv1d(width, c, kernel_size, generator), ACTIVATIONS[activation]()]
            width = c
        layers.append(_conv1d(width, 1, kernel_size, generator))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x[:, None, :])[:, 0, :]


class FlowMap(nn.Module):
    """One time step ``S(x)`` from a network ``f`` and an integrator.

    Parameters
    ----------
    net : torch.nn.Module
        ``f``, mapping ``(batch, d_in)`` to ``(batch, d_out)``.
    integrator : {"residual", "euler", "rk4", "direct"}
        ``x + f(x)``, ``x + dt f(x)``, an RK4 step of ``dx/dt = f(x)``, or ``f(x)``.
    dt : float
        Time step of ``euler`` and ``rk4``.
    """

    def __init__(self, net, integrator="residual", dt=1.0):
        super().__init__()
        if integrator not in INTEGRATORS:
            raise ValueError(f"FlowMap: integrator must be one of {INTEGRATORS}; got {integrator!r}.")
        self.net = net
        self.integrator = integrator
        self.dt = float(dt)

    def forward(self, x):
        if self.integrator == "direct":
            return self.net(x)
        if self.integrator == "residual":
            return x + self.net(x)
        if self.integrator == "euler":
            return x + self.dt * self.net(x)
        h = self.dt
        k1 = self.net(x)
        k2 = self.net(x + 0.5 * h * k1)
        k3 = self.net(x + 0.5 * h * k2)
        k4 = self.net(x + h * k3)
        return x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def build_network(network, n_in, n_out, hidden_layer_sizes, activation, generator):
    """The default network ``f``: an MLP, or circular convolutions when ``network="periodic_conv"``."""
    if network == "periodic_conv":
        return PeriodicConvNet(hidden_layer_sizes, activation=activation, generator=generator)
    return StandardizedMLP(n_in, hidden_layer_sizes, n_out, activation=activation, generator=generator)
