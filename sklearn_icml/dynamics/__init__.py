"""Learning chaotic dynamics: DySLIM's invariant-measure objective, rollout data and long-run metrics.

Seed paper S4: Schiff, Wan, Parker, Hoyer, Kuleshov, Sha and Zepeda-Nunez, "DySLIM: Dynamics Stable
Learning by Invariant Measure for Chaotic Systems", ICML 2024.
"""

from ._dyslim import DySLIMRegressor, invariant_measure_scorer
from ._metrics import cov_rmse, energy_spectrum_log_ratio
from ._rollout_data import make_rollout_dataset

__all__ = ["DySLIMRegressor", "cov_rmse", "energy_spectrum_log_ratio", "invariant_measure_scorer",
           "make_rollout_dataset"]
