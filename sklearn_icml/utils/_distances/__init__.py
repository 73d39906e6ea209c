"""Distances between samples shared by the families: the ground's metrics.

Differentiable distances between samples of states (:func:`mmd2`,
:func:`sinkhorn_divergence`, numpy or torch), the exact W1 distance by optimal
transport (:func:`wasserstein1`), replication checks (:func:`dcr_ratio`,
:func:`replication_score`), cross-modal retrieval (:func:`recall_at_k`) and the
structural similarity of signals and images (:func:`ssim_1d`,
:func:`ssim_2d`). They belong to the ground: they import nothing but
``utils``, and any family may import them from here. Their public home is
:mod:`sklearn_icml.metrics`, which re-exports them beside the calibration
metrics.
"""

from ._kernel import mmd2, sinkhorn_divergence
from ._replication import dcr_ratio, replication_score
from ._retrieval import recall_at_k
from ._ssim import ssim_1d, ssim_2d
from ._transport import wasserstein1

__all__ = [
    "dcr_ratio",
    "mmd2",
    "recall_at_k",
    "replication_score",
    "sinkhorn_divergence",
    "ssim_1d",
    "ssim_2d",
    "wasserstein1",
]
