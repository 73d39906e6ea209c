"""Fine-tuning pre-trained torch networks: DoRA and LoRA adapters, and scikit-learn estimators around them.

Building blocks usable without scikit-learn: :class:`DoRALinear`,
:class:`LoRALinear`, :func:`apply_adapters`, :func:`merge_adapters` and the
paper's magnitude/direction diagnostic :func:`magnitude_direction_shift`.
Estimators: :class:`DoRAClassifier` and :class:`DoRARegressor`.

Importing this subpackage imports torch.
"""

from ._adapters import DoRALinear, LoRALinear, apply_adapters, magnitude_direction_shift, merge_adapters
from ._estimators import DoRAClassifier, DoRARegressor

__all__ = [
    "DoRAClassifier",
    "DoRALinear",
    "DoRARegressor",
    "LoRALinear",
    "apply_adapters",
    "magnitude_direction_shift",
    "merge_adapters",
]
