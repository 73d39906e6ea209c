"""The torch networks of :class:`MaskedAutoencoder`: MLP and convolutional encoder-decoders, masks, the loss.

Every network maps flat rows (standardised) to a latent vector and back, and
holds a learned mask token per input position (MAE's mask token, one value
per position here). Weights are drawn from a given CPU generator; torch is
imported when this module is imported, so import it inside functions.
"""

import math

import torch
from torch import nn

__all__ = ["ConvAutoencoder", "MLPAutoencoder", "draw_mask", "masked_reconstruction_step"]


def _init_(module, generator):
    """torch's default initialisation of Linear / Conv layers, drawn from ``generator``."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.ConvTranspose1d, nn.ConvTranspose2d)):
            with torch.no_grad():
                nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
                if layer.bias is not None:
                    fan_in = nn.init._calculate_fan_in_and_fan_out(layer.weight)[0]
                    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                    nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


class _Autoencoder(nn.Module):
    """``encode``, ``decode`` and a forward pass that fills masked positions with the mask token."""

    def __init__(self, n_features):
        super().__init__()
        self.mask_token = nn.Parameter(torch.zeros(n_features))

    def forward(self, x, mask=None):
        if mask is not None:
            x = torch.where(mask, self.mask_token.to(x.dtype), x)
        return self.decode(self.encode(x))


class MLPAutoencoder(_Autoencoder):
    """Fully connected encoder ``n_features -> hidden... -> n_components`` and its mirror as decoder (GELU)."""

    def __init__(self, n_features, hidden, n_components, generator):
        super().__init__(n_features)
        widths = [n_features, *hidden]
        enc = []
        for a, b in zip(widths[:-1], widths[1:]):
            enc += [nn.Linear(a, b), nn.GELU()]
        self.encoder = nn.Sequential(*enc, nn.Linear(widths[-1], n_components))
        dec_widths = [n_components, *reversed(hidden)]
        dec = []
        for a, b in zip(dec_widths[:-1], dec_widths[1:]):
            dec += [nn.Linear(a, b), nn.GELU()]
        self.decoder = nn.Sequential(*dec, nn.Linear(dec_widths[-1], n_features))
        _init_(self, generator)

    def encode(self, x):
        return self.encoder(x)

    def decode(self, z):
        return self.decoder(z)


class ConvAutoencoder(_Autoencoder):
    """Strided convolutions (kernel 3, stride 2) over a 1-D or 2-D grid, a linear latent, transposed convolutions back.

    ``channels`` gives the channels of the successive convolutions (each
    halves the grid); the input is zero-padded to a multiple of
    ``2 ** len(channels)`` and the output cropped back to ``input_shape``.
    """

    def __init__(self, input_shape, channels, n_components, generator):
        super().__init__(int(math.prod(input_shape)))
        self.input_shape = tuple(int(s) for s in input_shape)
        dim = len(self.input_shape)
        conv = nn.Conv1d if dim == 1 else nn.Conv2d
        deconv = nn.ConvTranspose1d if dim == 1 else nn.ConvTranspose2d
        factor = 2 ** len(channels)
        self.padded_shape = tuple(factor * math.ceil(s / factor) for s in self.input_shape)
        self.latent_grid = tuple(s // factor for s in self.padded_shape)
        enc, c_in = [], 1
        for c in channels:
            enc += [conv(c_in, c, kernel_size=3, stride=2, padding=1), nn.GELU()]
            c_in = c
        self.encoder_conv = nn.Sequential(*enc)
        flat = c_in * int(math.prod(self.latent_grid))
        self.encoder_head = nn.Linear(flat, n_components)
        self.decoder_head = nn.Linear(n_components, flat)
        dec, rev = [], list(reversed(channels))
        for a, b in zip(rev, [*rev[1:], None]):
            dec.append(deconv(a, b or 1, kernel_size=4, stride=2, padding=1))
            if b is not None:
                dec.append(nn.GELU())
        self.decoder_conv = nn.Sequential(*dec)
        self.last_channels = c_in
        _init_(self, generator)

    def _pad(self, x):
        grid = x.reshape(x.shape[0], 1, *self.input_shape)
        pads = []
        for size, padded in zip(reversed(self.input_shape), reversed(self.padded_shape)):
            pads += [0, padded - size]
        return nn.functional.pad(grid, pads) if any(pads) else grid

    def encode(self, x):
        h = self.encoder_conv(self._pad(x))
        return self.encoder_head(h.flatten(1))

    def decode(self, z):
        h = self.decoder_head(z).reshape(z.shape[0], self.last_channels, *self.latent_grid)
        out = self.decoder_conv(nn.functional.gelu(h))
        crop = (slice(None), 0, *(slice(0, s) for s in self.input_shape))
        return out[crop].reshape(z.shape[0], -1)


def draw_mask(n_rows, input_shape, patch_size, mask_ratio, generator, device):
    """Boolean masks ``(n_rows, prod(input_shape))``: ``round(mask_ratio * n_patches)`` random patches per row.

    Patches are ``patch_size`` consecutive positions (1-D) or
    ``patch_size x patch_size`` squares (2-D), the last ones cut at the
    borders. The noise is drawn on the CPU from ``generator`` (so CPU and GPU
    runs draw alike) and the mask moved to ``device``.
    """
    grid = [math.ceil(s / patch_size) for s in input_shape]
    n_patches = int(math.prod(grid))
    n_masked = min(n_patches, max(1, int(round(mask_ratio * n_patches)))) if mask_ratio > 0 else 0
    noise = torch.rand(n_rows, n_patches, generator=generator)
    patch_mask = torch.zeros(n_rows, n_patches, dtype=torch.bool)
    if n_masked:  # the n_masked patches of smallest noise: a uniform random subset of each row (top-k, no full sort)
        patch_mask.scatter_(1, noise.topk(n_masked, dim=1, largest=False, sorted=False).indices, True)
    patch_mask = patch_mask.reshape(n_rows, *grid)
    for axis in range(1, len(input_shape) + 1):
        patch_mask = patch_mask.repeat_interleave(patch_size, dim=axis)
    crop = (slice(None), *(slice(0, s) for s in input_shape))
    return patch_mask[crop].reshape(n_rows, -1).to(device)


def masked_reconstruction_step(input_shape, patch_size, mask_ratio, generator):
    """``train_step(module, X_batch, _)`` for :class:`~sklearn_icml.utils.Trainer`.

    Masks a fresh random set of patches of every row, reconstructs the row
    from what is left and returns the mean squared error over all positions
    (masked and visible).
    """

    def step(module, xb, yb):
        mask = draw_mask(xb.shape[0], input_shape, patch_size, mask_ratio, generator, xb.device)
        return nn.functional.mse_loss(module(xb, mask), xb)

    return step
