"""Scaling laws and adaptive model shapes: fit loss-against-compute laws per shape, schedule shape changes.

Seed paper S19: Anagnostidis, Bachmann, Schlag, Hofmann, "Navigating Scaling Laws: Compute Optimality in
Adaptive Model Training", ICML 2024.

:class:`ScalingLawRegressor` fits one law per model shape; :class:`AdaptiveShapeScheduler` follows the lower
envelope of their marginal compute and returns a schedule of :class:`Segment`. The torch pieces,
:func:`train_adaptive` and the function-preserving resize operators :func:`widen_mlp` and
:func:`resize_input_resolution`, import torch only when called: importing this subpackage does not.
"""

from ._adaptive import AdaptiveTrainingResult, train_adaptive
from ._law import ScalingLawBoundWarning, ScalingLawRegressor
from ._resize import resize_input_resolution, widen_mlp
from ._scheduler import AdaptiveShapeScheduler, Segment

__all__ = [
    "AdaptiveShapeScheduler",
    "AdaptiveTrainingResult",
    "ScalingLawBoundWarning",
    "ScalingLawRegressor",
    "Segment",
    "resize_input_resolution",
    "train_adaptive",
    "widen_mlp",
]
