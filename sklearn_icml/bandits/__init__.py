"""Dueling bandits with Borda regret: generalized linear preference models, agents and a simulator.

Seed paper S11: Wu, Jin, Di, Lou, Farnoud and Gu, "Borda Regret Minimization for Generalized Linear
Dueling Bandits", ICML 2024.

* :class:`GLMDuelingEnv`: simulated environments (pair or item features, the paper's hard instance,
  random instances, logistic/probit/linear links, adversarial drift), with true Borda scores and regret.
* :class:`PairwiseGLMClassifier`: the GLM estimate of ``P(i beats j)`` as an ordinary binary classifier.
* Agents, an online face on item indices (``select``, ``update``) and an offline one on duel rows
  (``fit``, ``predict_proba``, ``score``; ``duel_rows`` links them): :class:`BordaETC` and
  :class:`BordaEXP3` (the paper's), and the feature-free baselines :class:`UniformDueling`,
  :class:`ETCBorda` and :class:`DEXP3`.
* :func:`simulate` and :func:`simulation_scorer`; :func:`g_optimal_design`.
"""

from ._baselines import DEXP3, ETCBorda, UniformDueling
from ._borda_etc import BordaETC
from ._borda_exp3 import BordaEXP3
from ._design import g_optimal_design
from ._env import GLMDuelingEnv
from ._glm import PairwiseGLMClassifier
from ._simulate import simulate, simulation_scorer

__all__ = [
    "BordaETC",
    "BordaEXP3",
    "DEXP3",
    "ETCBorda",
    "GLMDuelingEnv",
    "PairwiseGLMClassifier",
    "UniformDueling",
    "g_optimal_design",
    "simulate",
    "simulation_scorer",
]
