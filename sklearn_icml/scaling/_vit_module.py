"""The small vision transformer of the patch-size schedules (:func:`~sklearn_icml.scaling.make_patch_vit`).

torch is imported when this module is imported: import it inside functions.
"""

import math

import torch
from torch import nn

__all__ = ["PatchViT"]


class PatchViT(nn.Module):
    """A ViT whose patch size is a shape: linear patch embedding, learned positions, mean pooling.

    ``forward`` takes images ``(n, channels, image_size, image_size)`` or the
    same flattened ``(n, channels * image_size**2)``. Patches are flattened
    row-major (channel, row, column) and embedded by ``patch_embed`` (an
    ``nn.Linear``); ``pos_embed`` holds one embedding per patch of the
    ``grid x grid`` grid (no class token); ``depth`` pre-norm
    ``nn.TransformerEncoderLayer`` blocks (GELU, no dropout) follow, then a
    final ``LayerNorm``, the mean over tokens and a linear ``head``.
    ``shape`` is the patch size (the shape id of a schedule).
    """

    def __init__(self, image_size, patch_size, channels, width, depth, n_heads, mlp_ratio, n_outputs, generator,
                 dtype=None):
        super().__init__()
        self.image_size, self.patch_size, self.channels = int(image_size), int(patch_size), int(channels)
        self.width, self.depth, self.n_heads, self.mlp_ratio = int(width), int(depth), int(n_heads), mlp_ratio
        grid = self.image_size // self.patch_size
        with torch.random.fork_rng(devices=[]):  # torch's default init draws globally; restored, then redrawn
            self.patch_embed = nn.Linear(self.channels * self.patch_size ** 2, self.width, dtype=dtype)
            self.pos_embed = nn.Parameter(torch.empty(1, grid * grid, self.width, dtype=dtype))
            self.blocks = nn.ModuleList([
                nn.TransformerEncoderLayer(self.width, self.n_heads, dim_feedforward=int(round(mlp_ratio * self.width)),
                                           dropout=0.0, activation="gelu", batch_first=True, norm_first=True,
                                           dtype=dtype)
                for _ in range(self.depth)])
            self.norm = nn.LayerNorm(self.width, dtype=dtype)
            self.head = nn.Linear(self.width, int(n_outputs), dtype=dtype)
        self._init(generator)

    @property
    def shape(self):
        return self.patch_size

    @property
    def grid(self):
        return self.image_size // self.patch_size

    def _init(self, generator):
        """All parameters from ``generator``: matrices Xavier-uniform, biases 0, norms 1, positions N(0, 0.02)."""
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name == "pos_embed":
                    p.normal_(0.0, 0.02, generator=generator)
                elif name.endswith("bias"):
                    p.zero_()
                elif "norm" in name:
                    p.fill_(1.0)
                else:
                    fan_out, fan_in = p.shape[0], p.shape[1]
                    if name.endswith("in_proj_weight"):  # three stacked d x d projections
                        fan_out //= 3
                    bound = math.sqrt(6.0 / (fan_in + fan_out))
                    p.uniform_(-bound, bound, generator=generator)

    def patches(self, x):
        """``(n, grid * grid, channels * patch_size**2)`` flattened patches of images or flattened images."""
        n, s, p, c = x.shape[0], self.image_size, self.patch_size, self.channels
        img = x.reshape(n, c, s // p, p, s // p, p)
        return img.permute(0, 2, 4, 1, 3, 5).reshape(n, (s // p) ** 2, c * p * p)

    def forward(self, x):
        h = self.patch_embed(self.patches(x)) + self.pos_embed
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h).mean(dim=1))

    def extra_repr(self):
        return f"image_size={self.image_size}, patch_size={self.patch_size}, channels={self.channels}"
