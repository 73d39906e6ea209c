"""Identifying neural networks from their input-output map: Expand-and-Cluster.

Seed paper S18: Martinelli, Şimşek, Gerstner, Brea, "Expand-and-Cluster: Parameter Recovery of Neural Networks",
ICML 2024.

:class:`ExpandAndCluster` recovers a teacher network's hidden widths and weights from probe inputs and the
teacher's outputs; :func:`unit_alignment` scores a recovered network against the teacher, unit by unit. torch is
imported only when a model is fitted: importing this subpackage does not.
"""

from ._alignment import unit_alignment
from ._expand_cluster import ExpandAndCluster

__all__ = ["ExpandAndCluster", "unit_alignment"]
