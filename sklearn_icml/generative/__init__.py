"""Generative models: differentially private synthetic data by Private Evolution.

Seed paper S9: Hou et al., "PrE-Text: Training Language Models on Private Federated Data in the Age of
LLMs", ICML 2024.
"""

from ._pe_text import PrivateEvolutionText
from ._private_evolution import PrivateEvolution
from ._synthetic_classifier import SyntheticDataClassifier

__all__ = ["PrivateEvolution", "PrivateEvolutionText", "SyntheticDataClassifier"]
