"""Calibration metrics: LS-ECE (S16), binned ECE, their scorers and the smooth reliability diagram;
distances between samples for generative models (:func:`wasserstein1`, by optimal transport) and
replication checks (:func:`dcr_ratio`, :func:`replication_score`);
structural similarity of signals and images (:func:`ssim_1d`, :func:`ssim_2d`, OpenFWI's convention);
cross-modal retrieval (:func:`recall_at_k`); differentiable distances between samples of states
(:func:`mmd2`, :func:`sinkhorn_divergence`, numpy or torch). The distances are implemented in the
ground (``sklearn_icml.utils._distances``, which imports no family) and re-exported here.

The calibration methods are those of Chidambaram, Lee, McSwiggen and Rezchikov, "How Flawed Is
ECE? An Analysis via Logit Smoothing" (ICML 2024).
"""

# the distances between samples live in the ground (they serve several families); this is their public home
from ..utils._distances import (
    dcr_ratio,
    mmd2,
    recall_at_k,
    replication_score,
    sinkhorn_divergence,
    ssim_1d,
    ssim_2d,
    wasserstein1,
)
from ._binned_ece import binned_ece
from ._display import LSReliabilityDisplay
from ._ls_ece import ls_ece
from ._reliability import ls_reliability_curve
from ._scorer import binned_ece_scorer, ls_ece_logit_scorer, ls_ece_scorer, make_calibration_scorer

__all__ = [
    "LSReliabilityDisplay",
    "binned_ece",
    "binned_ece_scorer",
    "dcr_ratio",
    "ls_ece",
    "ls_ece_logit_scorer",
    "ls_ece_scorer",
    "ls_reliability_curve",
    "make_calibration_scorer",
    "mmd2",
    "recall_at_k",
    "replication_score",
    "sinkhorn_divergence",
    "ssim_1d",
    "ssim_2d",
    "wasserstein1",
]
