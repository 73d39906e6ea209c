"""
================================================================
Differentially private k-means: centres and cost against epsilon
================================================================

:class:`~sklearn_icml.cluster.PrivateKMeans` releases k-means centres under
differential privacy with the unified algorithm of Dupré la Tour, Henzinger and
Saulpic (ICML 2024): a private hierarchical histogram of the bounded space, the
greedy of Mettu and Plaxton on its noisy counts, and a private lift of the
centres. We look at the centres it releases at three privacy budgets, next to
the non-private optimum, and at how the k-means cost falls as epsilon grows,
against the classic DP-Lloyd baseline (``algorithm="lloyd"``, the algorithm of
diffprivlib's ``KMeans``).
"""

# %%
# Data inside a public box
# ------------------------
# The privacy contract is the box ``bounds``: the noise is calibrated to it and
# records outside it are clipped. It must not be read from the data (that
# leaks); :func:`~sklearn_icml.datasets.make_bounded_blobs` returns blobs and a
# box chosen without looking at them.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans

from sklearn_icml.cluster import PrivateKMeans
from sklearn_icml.datasets import make_bounded_blobs

X, y, bounds = make_bounded_blobs(8000, centers=5, random_state=0)
optimum = KMeans(5, n_init=10, random_state=0).fit(X)
print("public bounds:", bounds, " non-private cost:", round(optimum.inertia_))

# %%
# Released centres at three budgets
# ---------------------------------
# Each fit spends its ``epsilon`` and never more (and at most ``delta=1e-6``,
# used only where Gaussian noise on the lifted sums beats Laplace noise; in 2-D
# Laplace wins, so these fits are pure epsilon-DP): ``epsilon_spent_`` says so,
# and ``privacy_ledger_`` lists every release with its noise scale.
fig, axes = plt.subplots(1, 3, figsize=(12, 4), sharex=True, sharey=True)
for ax, eps in zip(axes, [0.1, 0.5, 2.0]):
    km = PrivateKMeans(5, epsilon=eps, bounds=bounds, random_state=0).fit(X)
    ax.scatter(X[:, 0], X[:, 1], s=2, c=y, cmap="tab10", alpha=0.3)
    ax.scatter(*optimum.cluster_centers_.T, marker="x", s=120, c="k", label="non-private KMeans")
    ax.scatter(*km.cluster_centers_.T, marker="o", s=90, facecolors="none", edgecolors="crimson", linewidths=2,
               label="PrivateKMeans")
    ratio = -km.score(X) / optimum.inertia_
    ax.set_title(f"epsilon={eps}: cost {ratio:.2f}x optimum\nspent epsilon={km.epsilon_spent_:g}, "
                 f"delta={km.delta_spent_:g}", fontsize=10)
axes[0].legend(loc="lower left", fontsize=8)
fig.tight_layout()

for entry in km.privacy_ledger_:
    print(f"{entry['label']:<40} {entry['mechanism']:<9} scale={entry['scale']:.3g} epsilon={entry['epsilon']:.3g}")

# %%
# Cost against epsilon
# --------------------
# Median over three seeds of the k-means cost divided by the non-private
# optimum (1 is the best possible). The greedy needs far less budget than
# DP-Lloyd, whose noise enters every one of its rounds.
epsilons = [0.1, 0.2, 0.5, 1.0, 2.0, 4.0]
curves = {"PrivateKMeans (private Mettu-Plaxton greedy)": {}, "DP-Lloyd (algorithm='lloyd')": {"algorithm": "lloyd"}}
fig, ax = plt.subplots(figsize=(6, 4))
for label, params in curves.items():
    medians = [np.median([-PrivateKMeans(5, epsilon=eps, bounds=bounds, random_state=s, **params).fit(X).score(X)
                          / optimum.inertia_ for s in range(3)]) for eps in epsilons]
    ax.plot(epsilons, medians, marker="o", label=label)
ax.axhline(1.0, color="k", linestyle="--", label="non-private optimum")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("k-means cost / non-private optimum")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
