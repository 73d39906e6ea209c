"""Feature attributions, their quality metrics, and their optimal combination (S10).

* :class:`AttributionCombiner`: per-input optimal convex combination of base
  attribution maps for a quality criterion (faithfulness, robustness or both),
  Decker et al., ICML 2024, and :func:`aggregate_attributions`, the paper's
  fixed-rule baselines AGG_mean and AGG_var.
* Base attribution methods for fitted scikit-learn estimators (black box),
  torch modules (autograd) and callables: :func:`saliency`,
  :func:`input_x_gradient`, :func:`integrated_gradients`, :func:`smoothgrad`,
  :func:`vargrad`, :func:`gradient_shap`, :func:`feature_ablation`,
  :func:`kernel_shap`.
* Quality metrics of any attribution: :func:`infidelity`,
  :func:`avg_sensitivity`, :func:`max_sensitivity`,
  :func:`faithfulness_correlation`.

torch is imported only when a torch module is explained.
"""

from ._aggregation import aggregate_attributions
from ._attribution_combiner import AttributionCombiner
from ._attributions import (
    feature_ablation,
    gradient_shap,
    input_x_gradient,
    integrated_gradients,
    kernel_shap,
    saliency,
    smoothgrad,
    vargrad,
)
from ._metrics import avg_sensitivity, faithfulness_correlation, infidelity, max_sensitivity

__all__ = [
    "AttributionCombiner",
    "aggregate_attributions",
    "avg_sensitivity",
    "faithfulness_correlation",
    "feature_ablation",
    "gradient_shap",
    "infidelity",
    "input_x_gradient",
    "integrated_gradients",
    "kernel_shap",
    "max_sensitivity",
    "saliency",
    "smoothgrad",
    "vargrad",
]
