"""
============================================================
Recovering a teacher network's units with Expand-and-Cluster
============================================================

A tanh teacher with 2 inputs and 3 hidden units is queried on 400 Gaussian probes.
:class:`~sklearn_icml.neural_network.ExpandAndCluster` trains 6 students of width 6 on its outputs,
maps every student unit to its canonical form (sign flipped so that the first weight is positive),
clusters them and keeps the clusters that most students share.

The figure shows the dendrogram with the chosen cut, the students' canonical units coloured by the
cluster they fell in (grey: not kept) with the teacher's units marked, and the recovered incoming
weights against the teacher's.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.cluster.hierarchy import dendrogram

from sklearn_icml.neural_network import ExpandAndCluster, unit_alignment
from sklearn_icml.neural_network._symmetry import canonical_units

rng = np.random.RandomState(0)
W = np.array([[1.5, -1.0, 0.3], [0.5, 2.0, -1.2]])
b = np.array([0.3, -0.2, 0.5])
a = np.array([[1.0], [-1.0], [0.8]])
X = rng.normal(size=(400, 2))
y = (np.tanh(X @ W + b) @ a).ravel()

ec = ExpandAndCluster(n_students=6, student_width=6, student_max_iter=800, student_lr=3e-2,
                      student_polish_max_iter=300, finetune_max_iter=100, random_state=0).fit(X, y)
scores = unit_alignment([W, a], [b, np.zeros(1)], ec.coefs_, ec.intercepts_, "tanh")[0]
print(f"recovered width {ec.hidden_layer_sizes_[0]} (teacher 3); alignment per teacher unit {scores.round(4)}")
print(f"students' MSE: best {ec.student_losses_.min():.2e}; recovered network's MSE {ec.loss_:.2e}")

fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))

# the dendrogram of the students' units and the cut
dendrogram(ec.linkage_matrices_[0], ax=axes[0], no_labels=True, color_threshold=ec.cut_heights_[0])
axes[0].axhline(ec.cut_heights_[0], color="k", linestyle="--", label="cut")
axes[0].set_title("Students' units: average linkage")
axes[0].set_ylabel("L2 distance")
axes[0].legend()

# the students' canonical units in the plane of their first two principal components
V, labels = ec.student_units_[0], ec.unit_labels_[0]
teacher = canonical_units(W.T, b, a.T, "tanh")[0]
center = V.mean(axis=0)
_, _, components = np.linalg.svd(V - center, full_matrices=False)
P, T = (V - center) @ components[:2].T, (teacher - center) @ components[:2].T
axes[1].scatter(*P[labels < 0].T, c="lightgrey", s=25, label="not kept")
for k in range(labels.max() + 1):
    axes[1].scatter(*P[labels == k].T, s=25, label=f"cluster {k}")
axes[1].scatter(*T.T, marker="x", c="k", s=120, label="teacher units")
axes[1].set_title("Canonical units [w, b], 2-D projection")
axes[1].legend(fontsize=8)

# recovered weights against the teacher's (each recovered unit matched to its best teacher unit)
recovered = canonical_units(ec.coefs_[0].T, ec.intercepts_[0], ec.coefs_[1].T, "tanh")[0]
cosine = (recovered / np.linalg.norm(recovered, axis=1, keepdims=True)) @ (
    teacher / np.linalg.norm(teacher, axis=1, keepdims=True)).T
match = np.argmax(np.abs(cosine), axis=0)
axes[2].scatter(teacher.ravel(), recovered[match].ravel())
lim = np.abs(teacher).max() * 1.1
axes[2].plot([-lim, lim], [-lim, lim], "k--", linewidth=1)
axes[2].set_xlabel("teacher [w, b]")
axes[2].set_ylabel("recovered [w, b]")
axes[2].set_title(f"Recovered width {ec.hidden_layer_sizes_[0]}, min |cos| {scores.min():.4f}")
fig.tight_layout()
plt.show()
