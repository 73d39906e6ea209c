"""Clustering: correlation clustering of signed graphs, static and over vertex streams (S7);
differentially private k-means by the private Mettu-Plaxton greedy (S3)."""

from ._correlation import CorrelationClustering, correlation_cost
from ._dynamic_correlation import DynamicCorrelationClustering
from ._private_kmeans import PrivateKMeans

__all__ = [
    "CorrelationClustering",
    "DynamicCorrelationClustering",
    "PrivateKMeans",
    "correlation_cost",
]
