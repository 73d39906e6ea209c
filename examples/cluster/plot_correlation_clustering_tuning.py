"""
=====================================================
Tuning the graph of a correlation clustering
=====================================================

:class:`~sklearn_icml.cluster.CorrelationClustering` builds a signed graph from
the features (``affinity``, ``gamma``, ``threshold``) and minimises the
disagreements *of that graph*. Its ``score`` counts disagreements on the
estimator's own graph, so it can compare values of ``beta`` or ``lam`` on one
graph, but not two graphs: a sparser graph has fewer '+' pairs to disagree with,
and a search over ``gamma`` and ``threshold`` on ``score`` drifts to a graph
where almost every point is alone.

The sound way to choose the graph is against labels on a small subset: fit on
all the points, and compare ``labels_`` on the labelled subset with
:func:`~sklearn.metrics.adjusted_rand_score`. Here 60 labelled points out of
600 are enough to pick the graph that recovers the six planted groups.
"""

# %%
# Six groups of points and 60 labels
# ----------------------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid

from sklearn_icml.cluster import CorrelationClustering

X, y = make_blobs(600, centers=6, cluster_std=0.6, random_state=0)
labelled = np.random.RandomState(0).choice(len(X), 60, replace=False)
grid = {"gamma": [0.125, 0.5, 2.0, 8.0], "threshold": [0.2, 0.5, 0.8]}

# %%
# Choosing the graph against the labelled subset
# ----------------------------------------------
# One fit per setting on all the points; the adjusted Rand index is read on the
# labelled points only.
settings = list(ParameterGrid(grid))
ari_labelled, ari_all, n_clusters = [], [], []
for params in settings:
    cc = CorrelationClustering(**params).fit(X)
    ari_labelled.append(adjusted_rand_score(y[labelled], cc.labels_[labelled]))
    ari_all.append(adjusted_rand_score(y, cc.labels_))
    n_clusters.append(cc.n_clusters_)
best = settings[int(np.argmax(ari_labelled))]
chosen = CorrelationClustering(**best).fit(X)
print(f"chosen on 60 labels: {best}, {chosen.n_clusters_} clusters, "
      f"ARI on all 600 points {adjusted_rand_score(y, chosen.labels_):.3f}")

# %%
# What a search on ``score`` would choose
# ---------------------------------------
# The same grid searched on ``score`` (held-out disagreements): it prefers the
# sparsest graph. ``score`` warns when most fitted points are singletons.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    search = GridSearchCV(CorrelationClustering(), grid, cv=KFold(3, shuffle=True, random_state=0)).fit(X)
trap = search.best_estimator_
print(f"chosen by score: {search.best_params_}, {trap.n_clusters_} clusters, "
      f"ARI {adjusted_rand_score(y, trap.labels_):.3f}")

# %%
# The two criteria over the grid, and the two clusterings
# -------------------------------------------------------
shape = (len(grid["gamma"]), len(grid["threshold"]))
by_score = search.cv_results_["mean_test_score"]
fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
for ax, values, title in [(axes[0], np.reshape(ari_labelled, shape), "ARI on 60 labelled points"),
                          (axes[1], np.reshape(by_score, shape), "score (held-out disagreements)")]:
    im = ax.imshow(values, cmap="viridis")
    ax.set_xticks(range(shape[1]), grid["threshold"])
    ax.set_yticks(range(shape[0]), grid["gamma"])
    ax.set_xlabel("threshold")
    ax.set_ylabel("gamma")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
for ax, est, title in [(axes[2], chosen, "chosen on labels"), (axes[3], trap, "chosen by score")]:
    ax.scatter(X[:, 0], X[:, 1], c=est.labels_ % 20, cmap="tab20", s=6)
    ax.set_title(f"{title}: {est.n_clusters_} clusters", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()
