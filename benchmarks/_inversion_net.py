"""The paired-only rival of the Auto-Linear benchmark: an InversionNet-style convolutional encoder-decoder.

The encoder of the gathers and the decoder of the maps have the layout of ``AutoLinear``'s convolutional masked
autoencoders (strided 3 x 3 convolutions halving the grid, a linear latent, 4 x 4 transposed convolutions back,
GELU between layers, torch's default initialisation drawn in the autoencoders' order), so the rival has the same
size and, seed for seed, the same starting weights as the two halves Auto-Linear uses; unlike them it is trained end
to end on the pairs. The rival owns its network: plain torch, nothing of the library's internals.
"""

import math

import torch
from torch import nn

__all__ = ["InversionNet"]


def _init_(module, generator):
    """torch's default initialisation of the convolutions and linear layers, drawn from ``generator``."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d, nn.ConvTranspose2d)):
            with torch.no_grad():
                nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
                if layer.bias is not None:
                    fan_in = nn.init._calculate_fan_in_and_fan_out(layer.weight)[0]
                    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                    nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


def _encoder(shape, channels, n_components):
    """Strided convolutions halving the grid, then a linear latent head; and the padded grid they read."""
    factor = 2 ** len(channels)
    padded = tuple(factor * math.ceil(s / factor) for s in shape)
    layers, c_in = [], 1
    for c in channels:
        layers += [nn.Conv2d(c_in, c, kernel_size=3, stride=2, padding=1), nn.GELU()]
        c_in = c
    head = nn.Linear(c_in * math.prod(s // factor for s in padded), n_components)
    return nn.Sequential(*layers, nn.Flatten(), head), padded


def _decoder(shape, channels, n_components):
    """A linear head to the coarsest grid, then transposed convolutions doubling it; and that coarsest grid."""
    grid = tuple(math.ceil(s / 2 ** len(channels)) for s in shape)
    head = nn.Linear(n_components, channels[-1] * math.prod(grid))
    layers, rev = [], list(reversed(channels))
    for a, b in zip(rev, [*rev[1:], None]):
        layers.append(nn.ConvTranspose2d(a, b or 1, kernel_size=4, stride=2, padding=1))
        if b is not None:
            layers.append(nn.GELU())
    return head, nn.Sequential(*layers), grid


class InversionNet(nn.Module):
    """Flat gathers ``(n, prod(shape_x))`` to flat maps ``(n, prod(shape_y))`` through a latent of ``n_components``.

    ``channels`` are the channels of the successive strided convolutions (each halves the grid); grids are
    zero-padded to a multiple of ``2 ** len(channels)`` and the output is cropped back to ``shape_y``. The
    weights are drawn as for two autoencoders, the gathers' then the maps' (encoder before decoder), of which
    the network keeps the gathers' encoder and the maps' decoder.
    """

    def __init__(self, shape_x, shape_y, channels, n_components, generator):
        super().__init__()
        self.shape_x, self.shape_y = tuple(shape_x), tuple(shape_y)
        encoder, self.padded_x = _encoder(self.shape_x, channels, n_components)
        unused = _decoder(self.shape_x, channels, n_components)[:2] + (_encoder(self.shape_y, channels,
                                                                                 n_components)[0],)
        head, decoder, self.latent_grid_y = _decoder(self.shape_y, channels, n_components)
        for part in (encoder, *unused, head, decoder):
            _init_(part, generator)
        self.encoder, self.decoder_head, self.decoder = encoder, head, decoder
        self.last_channels = channels[-1]

    def forward(self, x):
        grid = x.reshape(x.shape[0], 1, *self.shape_x)
        pads = [0, self.padded_x[1] - self.shape_x[1], 0, self.padded_x[0] - self.shape_x[0]]
        z = self.encoder(nn.functional.pad(grid, pads) if any(pads) else grid)
        h = self.decoder_head(z).reshape(z.shape[0], self.last_channels, *self.latent_grid_y)
        out = self.decoder(nn.functional.gelu(h))
        return out[:, 0, :self.shape_y[0], :self.shape_y[1]].reshape(z.shape[0], -1)
