"""Bayesian optimisation without a surrogate: meta-learned likelihood-free BO (MALIBO) and a meta-learned search CV.

* :func:`likelihood_free_training_set`: the weighted classification set of
  likelihood-free BO.
* :class:`MetaLFBOClassifier`: MALIBO's meta-learned classifier with a
  Bayesian (Laplace) task head.
* :class:`MetaBayesianOptimizer` and :class:`LikelihoodFreeOptimizer`: ask/tell
  optimisers over a box, with and without meta-learning.
* :class:`MetaBayesSearchCV`: hyper-parameter search for any scikit-learn
  estimator that learns from earlier searches.

Seed paper S13: Pan, Falkner, Berkenkamp and Vanschoren, "MALIBO: Meta-learning
for Likelihood-free Bayesian Optimization", ICML 2024. Importing this
subpackage does not import torch; meta-training does.
"""

from ._lfbo import likelihood_free_training_set
from ._meta_lfbo import MetaLFBOClassifier
from ._optimizer import LikelihoodFreeOptimizer, MetaBayesianOptimizer
from ._search import MetaBayesSearchCV

__all__ = [
    "LikelihoodFreeOptimizer",
    "MetaBayesSearchCV",
    "MetaBayesianOptimizer",
    "MetaLFBOClassifier",
    "likelihood_free_training_set",
]
