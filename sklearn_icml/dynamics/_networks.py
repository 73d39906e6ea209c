"""The learned flow map of DySLIM: a network (MLP or dilated circular 1-D convolutions) inside an integrator.

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

__all__ = ["FlowMap", "PeriodicConvNet", "build_network", "dilation_levels"]

#: Integrators by name.
INTEGRATORS = ("residual", "euler", "rk4", "direct")


def _conv1d(c_in, c_out, kernel_size, generator, *, dilation=1, bias=True):
    """A circular Conv1d (dilated by ``dilation``) initialised like torch's default, from ``generator``."""
    layer = torch.nn.utils.skip_init(nn.Conv1d, c_in, c_out, kernel_size, padding=dilation * (kernel_size // 2),
                                     dilation=dilation, padding_mode="circular", bias=bias)
    with torch.no_grad():
        nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
        if bias:
            bound = 1.0 / math.sqrt(c_in * kernel_size)
            nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return layer


def dilation_levels(n_grid, n_blocks, kernel_size=5):
    """Smallest number of dilation levels ``L`` for which the receptive field of the network covers the grid.

    A block of ``L`` levels has dilations ``1, 2, ..., 2**(L-1), ..., 2, 1``;
    each convolution widens the receptive field by ``(kernel_size - 1)``
    times its dilation, and the encoder and decoder by ``kernel_size - 1``
    each: ``1 + (kernel_size - 1) * (2 + n_blocks * (3 * 2**(L-1) - 2))``
    grid points in all.
    """
    reach, levels = kernel_size - 1, 1
    while 1 + reach * (2 + n_blocks * (3 * 2 ** (levels - 1) - 2)) < n_grid:
        levels += 1
    return levels


class _DilatedBlock(nn.Module):
    """Circular convolutions with dilations ``1, 2, ..., 2**(L-1), ..., 2, 1``, each followed by the activation,
    added to the block's input (through a 1x1 convolution when the width changes)."""

    def __init__(self, c_in, c_out, levels, kernel_size, activation, generator):
        super().__init__()
        layers, width = [], c_in
        for level in list(range(levels)) + list(range(levels - 1))[::-1]:
            layers += [_conv1d(width, c_out, kernel_size, generator, dilation=2 ** level), ACTIVATIONS[activation]()]
            width = c_out
        self.body = nn.Sequential(*layers)
        self.skip = None if c_in == c_out else _conv1d(c_in, c_out, 1, generator, bias=False)

    def forward(self, h):
        return (h if self.skip is None else self.skip(h)) + self.body(h)


class PeriodicConvNet(nn.Module):
    """A field on a periodic 1-D grid to a field: the dilated PeriodicConvNet of the DySLIM code.

    ``(batch, n_grid) -> (batch, n_grid)``: a circular convolution lifts the
    field (one channel) to ``channels[0]`` channels; each entry of
    ``channels`` is then one processor block (circular convolutions with
    dilations ``1, 2, ..., 2**(L-1), ..., 2, 1`` and the activation, added
    to the block's input); a last circular convolution maps back to one
    channel. ``L`` is the smallest number of levels whose receptive field
    covers the grid (:func:`dilation_levels`), so that every output point
    sees the whole field. Circular padding makes the map equivariant to
    shifts of the grid.

    Parameters
    ----------
    channels : sequence of int
        Channels of the processor blocks.
    n_grid : int
        Grid points (to choose the dilation levels).
    kernel_size : int, default=5
        Width of every convolution (odd).
    activation : str, default="silu"
        Activation inside the blocks.
    generator : torch.Generator, default=None
        Source of the initial weights.
    """

    def __init__(self, channels, n_grid, *, kernel_size=5, activation="silu", generator=None):
        super().__init__()
        channels = list(channels)
        self.levels = dilation_levels(n_grid, len(channels), kernel_size)
        self.encoder = _conv1d(1, channels[0], kernel_size, generator)
        blocks, width = [], channels[0]
        for c in channels:
            blocks.append(_DilatedBlock(width, c, self.levels, kernel_size, activation, generator))
            width = c
        self.blocks = nn.Sequential(*blocks)
        self.decoder = _conv1d(width, 1, kernel_size, generator)

    def forward(self, x):
        return self.decoder(self.blocks(self.encoder(x[:, None, :])))[:, 0, :]


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
        return PeriodicConvNet(hidden_layer_sizes, n_in, activation=activation, generator=generator)
    return StandardizedMLP(n_in, hidden_layer_sizes, n_out, activation=activation, generator=generator)
