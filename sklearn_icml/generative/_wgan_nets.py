"""Networks of :class:`~sklearn_icml.generative.LeftInvertibleWGAN` and upper bounds on their Lipschitz constants.

Two architectures:

* ``"mlp"``: as in the authors' Swiss-roll code, the generator and the critic
  are ReLU perceptrons and the inverse a LeakyReLU(0.2) perceptron (no
  dropout, no batch norm, so every map is deterministic); the inverse is
  learned on generated points. Its Lipschitz constant is at most the product
  of the spectral norms of its weight matrices (both activations are
  1-Lipschitz).
* ``"injective_mlp"``: the generator is ``A_K phi(... phi(A_1 z + b_1) ...) + b_K``
  with full-column-rank ``A_i`` of non-decreasing widths from the latent
  dimension to the data dimension and ``phi`` a LeakyReLU of slope
  :data:`INJECTIVE_SLOPE`; its left inverse is exact,
  ``h(x) = A_1^+ (phi^{-1}(... phi^{-1}(A_K^+ (x - b_K)) - b_{K-1} ...) - b_1)``,
  and ``Lip(h) <= prod_i 1 / sigma_min(A_i) * INJECTIVE_SLOPE^{-(K-1)}``.

torch is imported when this module is imported: import it inside functions.
"""

import math

import torch
from torch import nn

from ..utils._mlp import _linear

__all__ = ["INJECTIVE_SLOPE", "MLP_SLOPE", "ExactInverse", "InjectiveGenerator", "injective_widths", "make_mlp",
           "mlp_lipschitz_upper", "singular_value_penalty"]

#: Negative slope of the LeakyReLU of the ``"mlp"`` inverse network (that of the authors' inverse network).
MLP_SLOPE = 0.2
#: Negative slope of the injective generator: ``phi^{-1}`` is ``1 / INJECTIVE_SLOPE``-Lipschitz, so a slope
#: nearer 1 gives a smaller Lipschitz bound on the inverse and a less curved generator.
INJECTIVE_SLOPE = 0.5


def make_mlp(n_in, hidden, n_out, generator, activation="leaky_relu"):
    """``Linear, act, ..., Linear``: an ``nn.Sequential`` seeded from ``generator``.

    ``activation`` is ``"leaky_relu"`` (slope :data:`MLP_SLOPE`) or ``"relu"``.
    """
    layers, width = [], n_in
    for h in hidden:
        act = nn.ReLU() if activation == "relu" else nn.LeakyReLU(MLP_SLOPE)
        layers += [_linear(width, int(h), generator), act]
        width = int(h)
    layers.append(_linear(width, n_out, generator))
    return nn.Sequential(*layers)


def _spectral_norm(weight):
    return float(torch.linalg.matrix_norm(weight.detach().double(), ord=2))


def mlp_lipschitz_upper(module):
    """Product of the spectral norms of the Linear layers of a 1-Lipschitz-activation ``nn.Sequential``."""
    return math.prod(_spectral_norm(m.weight) for m in module if isinstance(m, nn.Linear))


def injective_widths(latent_dim, hidden, n_features):
    """Widths ``[d, w_1, ..., w_{K-1}, D]`` of the injective generator.

    Each hidden width is clipped to ``[previous width, n_features]``, so the
    widths never decrease and never exceed the data dimension (a layer wider
    than its successor could not have a left inverse).
    """
    widths = [int(latent_dim)]
    for h in hidden:
        widths.append(min(max(int(h), widths[-1]), int(n_features)))
    widths.append(int(n_features))
    return widths


class InjectiveGenerator(nn.Module):
    """``g(z) = A_K phi(... phi(A_1 z + b_1) ...) + b_K`` with column-orthonormal initial ``A_i`` (injective).

    Parameters
    ----------
    widths : list of int
        Non-decreasing widths ``[d, ..., D]``.
    generator : torch.Generator
        Source of the initial weights (orthonormal columns, so every
        ``sigma_min(A_i)`` starts at 1; biases 0).
    """

    def __init__(self, widths, generator):
        super().__init__()
        if any(b < a for a, b in zip(widths, widths[1:], strict=False)):
            raise ValueError(f"InjectiveGenerator: widths must be non-decreasing; got {widths}.")
        self.layers = nn.ModuleList()
        for n_in, n_out in zip(widths, widths[1:], strict=False):
            layer = torch.nn.utils.skip_init(nn.Linear, n_in, n_out)
            with torch.no_grad():
                nn.init.orthogonal_(layer.weight, generator=generator)
                layer.bias.zero_()
            self.layers.append(layer)
        self.act = nn.LeakyReLU(INJECTIVE_SLOPE)

    def forward(self, z):
        h = z
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.act(h)
        return h

    def singular_values_min(self):
        """``sigma_min(A_i)`` of every layer, differentiable."""
        return torch.stack([torch.linalg.svdvals(layer.weight)[-1] for layer in self.layers])



def singular_value_penalty(module):
    """``sum_i max(0, log(1 / sigma_min(A_i)))``: grows as a layer nears rank deficiency (0 when all are >= 1)."""
    return torch.relu(-torch.log(module.singular_values_min())).sum()


class ExactInverse(nn.Module):
    """The exact left inverse of an :class:`InjectiveGenerator` (pseudo-inverses and inverse LeakyReLUs).

    The pseudo-inverses are computed once in float64 from the generator's
    weights and kept as buffers, in the generator's dtype.
    """

    def __init__(self, injective):
        super().__init__()
        dtype = injective.layers[0].weight.dtype
        for i, layer in enumerate(injective.layers):
            pinv = torch.linalg.pinv(layer.weight.detach().double()).to(dtype)
            self.register_buffer(f"pinv{i}", pinv)
            self.register_buffer(f"bias{i}", layer.bias.detach().clone())
        self.n_layers = len(injective.layers)

    def forward(self, x):
        h = x
        for i in reversed(range(self.n_layers)):
            if i < self.n_layers - 1:  # undo phi
                h = torch.where(h >= 0, h, h / INJECTIVE_SLOPE)
            h = (h - getattr(self, f"bias{i}")) @ getattr(self, f"pinv{i}").T
        return h

    def lipschitz_upper(self):
        """``prod_i ||A_i^+||_2 * slope^{-(K-1)}`` over the stored pseudo-inverses: this map's Lipschitz bound.

        For exact pseudo-inverses ``||A_i^+||_2 = 1 / sigma_min(A_i)``; the
        norms are taken of the stored (rounded) matrices, so the bound holds
        for the map as computed.
        """
        norms = [_spectral_norm(getattr(self, f"pinv{i}")) for i in range(self.n_layers)]
        return math.prod(norms) * INJECTIVE_SLOPE ** (-(self.n_layers - 1))
