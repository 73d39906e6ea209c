"""Cross-domain translation: self-supervised encoders per domain joined by linear latent maps.

Seed paper S5: Feng, Chen, Jin, Feng and Lin, "Auto-Linear Phenomenon in Subsurface Imaging",
ICML 2024. Each domain (say seismic data and velocity maps) gets its own masked autoencoder,
trained on unpaired data of that domain; paired rows only fit two linear maps between the frozen
latent codes, one for inverse and one for forward modelling.
"""

from ._auto_linear import AutoLinear
from ._mae import MaskedAutoencoder

__all__ = ["AutoLinear", "MaskedAutoencoder"]
