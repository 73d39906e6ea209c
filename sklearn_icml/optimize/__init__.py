"""Bayesian optimisation without a surrogate (MALIBO) and differentiable stage scheduling of DAGs.

* :func:`likelihood_free_training_set`: the weighted classification set of
  likelihood-free BO.
* :class:`MetaLFBOClassifier`: MALIBO's meta-learned classifier with a
  Bayesian (Laplace) task head.
* :class:`MetaBayesianOptimizer` and :class:`LikelihoodFreeOptimizer`: ask/tell
  optimisers over a box, with and without meta-learning.
* :class:`MetaBayesSearchCV`: hyper-parameter search for any scikit-learn
  estimator that learns from earlier searches.

Stage scheduling of DAGs (S14):

* :class:`StageSchedulingProblem`: a DAG with node memory and data edges,
  the exact objective and a lower bound.
* :class:`GumbelScheduler`: differentiable scheduling with the constrained
  Gumbel trick; :class:`GreedyStageScheduler` and :class:`CPSATScheduler`
  (OR-tools) as baselines; :func:`tune_scheduler` over several graphs.

Seed paper S14: Liu, Li, Yin, Zhang and Yu, "Differentiable Combinatorial
Scheduling at Scale", ICML 2024.

Seed paper S13: Pan, Falkner, Berkenkamp and Vanschoren, "MALIBO: Meta-learning
for Likelihood-free Bayesian Optimization", ICML 2024. Importing this
subpackage does not import torch; meta-training does.
"""

from ._cpsat_scheduler import CPSATScheduler
from ._gumbel_scheduler import GumbelScheduler
from ._lfbo import likelihood_free_training_set
from ._meta_lfbo import MetaLFBOClassifier
from ._optimizer import LikelihoodFreeOptimizer, MetaBayesianOptimizer
from ._scheduling_greedy import GreedyStageScheduler
from ._scheduling_problem import StageSchedulingProblem
from ._scheduling_tuning import tune_scheduler
from ._search import MetaBayesSearchCV

__all__ = [
    "CPSATScheduler",
    "GreedyStageScheduler",
    "GumbelScheduler",
    "LikelihoodFreeOptimizer",
    "MetaBayesSearchCV",
    "MetaBayesianOptimizer",
    "MetaLFBOClassifier",
    "StageSchedulingProblem",
    "likelihood_free_training_set",
    "tune_scheduler",
]
