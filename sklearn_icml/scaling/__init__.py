"""Scaling laws and adaptive model shapes: fit loss-against-compute laws per shape, schedule shape changes.

Seed paper S19: Anagnostidis, Bachmann, Schlag, Hofmann, "Navigating Scaling Laws: Compute Optimality in
Adaptive Model Training", ICML 2024.

:class:`ScalingLawRegressor` fits one law per model shape; :class:`AdaptiveShapeScheduler` follows the lower
envelope of their marginal compute and returns a schedule of :class:`Segment`. The torch pieces,
:func:`train_adaptive`, the function-preserving resize operators :func:`widen_mlp`,
:func:`resize_input_resolution`, :func:`resize_patch_embedding` and :func:`resize_position_embedding`, and the
patch-size-scheduled vision transformer (:func:`make_patch_vit`, :func:`resize_patch_vit`,
:func:`patch_vit_flops`), import torch only when called: importing this subpackage does not.
"""

from ._adaptive import AdaptiveTrainingResult, train_adaptive
from ._law import ScalingLawBoundWarning, ScalingLawRegressor
from ._resize import resize_input_resolution, resize_patch_embedding, resize_position_embedding, widen_mlp
from ._scheduler import AdaptiveShapeScheduler, Segment
from ._vit import make_patch_vit, patch_vit_flops, resize_patch_vit

__all__ = [
    "AdaptiveShapeScheduler",
    "AdaptiveTrainingResult",
    "ScalingLawBoundWarning",
    "ScalingLawRegressor",
    "Segment",
    "make_patch_vit",
    "patch_vit_flops",
    "resize_input_resolution",
    "resize_patch_embedding",
    "resize_patch_vit",
    "resize_position_embedding",
    "train_adaptive",
    "widen_mlp",
]
