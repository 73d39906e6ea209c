"""Survival analysis on bags of instances and omics: the MMP pipeline (Song et al., ICML 2024).

Targets follow scikit-survival: a structured ``(event, time)`` array made by
:class:`Surv` (also an ``(n, 2)`` ``[time, event]`` array). Bags of instances
(patch embeddings of a slide) come as lists of ``(n_i, d)`` arrays, NaN-padded
3-D arrays, or 2-D arrays read as bags of one (:func:`as_bags`).
"""

from ._bag_pooler import BagPooler
from ._bags import as_bags, pad_bags
from ._base import cox_partial_likelihood_loss
from ._cox import CoxSurvival
from ._metrics import brier_score, concordance_index, integrated_brier_score, kaplan_meier
from ._pathway_encoder import PathwayEncoder
from ._prototype_encoder import PrototypeEncoder
from ._prototype_survival import PrototypeSurvival
from ._target import Surv

__all__ = [
    "BagPooler",
    "CoxSurvival",
    "PathwayEncoder",
    "PrototypeEncoder",
    "PrototypeSurvival",
    "Surv",
    "as_bags",
    "brier_score",
    "concordance_index",
    "cox_partial_likelihood_loss",
    "integrated_brier_score",
    "kaplan_meier",
    "pad_bags",
]
