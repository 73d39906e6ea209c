"""Ranking from pairwise votes: Chatbot Arena's Bradley-Terry ratings, Elo, active sampling, win matrix, raters.

Seed paper S17: Chiang et al., "Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference",
ICML 2024.
"""

from ._active import ActivePairSampler
from ._anomaly import RaterAnomalyDetector
from ._bradley_terry import BradleyTerryRanker
from ._elo import EloRater
from ._win_matrix import WinMatrixEstimator

__all__ = ["ActivePairSampler", "BradleyTerryRanker", "EloRater", "RaterAnomalyDetector", "WinMatrixEstimator"]
