"""Generative models: differentially private synthetic data by Private Evolution; a Wasserstein GAN that
does not copy its training data.

Seed papers: S9, Hou et al., "PrE-Text: Training Language Models on Private Federated Data in the Age of
LLMs", ICML 2024; S2, Vardanyan et al., "Statistically Optimal Generative Modeling with Maximum Deviation
from the Empirical Distribution", ICML 2024.
"""

from ._pe_text import PrivateEvolutionText
from ._private_evolution import PrivateEvolution
from ._synthetic_classifier import SyntheticDataClassifier
from ._wgan import LeftInvertibleWGAN

__all__ = ["LeftInvertibleWGAN", "PrivateEvolution", "PrivateEvolutionText", "SyntheticDataClassifier"]
