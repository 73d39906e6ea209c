"""
=======================================================================
Tuning an SVM with MetaBayesSearchCV, learning from earlier searches
=======================================================================

:class:`~sklearn_icml.optimize.MetaBayesSearchCV` is used like
:class:`~sklearn.model_selection.GridSearchCV` or
:class:`~sklearn.model_selection.RandomizedSearchCV`, with one more argument: ``meta_results``,
the ``cv_results_`` of earlier searches of the same model on other datasets. Its optimiser
(:class:`~sklearn_icml.optimize.MetaBayesianOptimizer`) meta-learns from them where good settings
lie, so the first settings it tries on the new dataset are already good ones.

The task family comes from :func:`~sklearn_icml.datasets.make_hpo_tasks`: an RBF support-vector
machine on subsamples of the datasets that ship with scikit-learn, tuned over a grid of ``C`` and
``gamma``. We run full grid searches on four datasets (the "earlier searches") and then tune a
fifth one three ways, counting how many settings each search needs to reach the full grid's best
cross-validated accuracy.
"""

# %%
# Earlier searches
# ----------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, StratifiedKFold

import sklearn_icml
from sklearn_icml.datasets import make_hpo_tasks
from sklearn_icml.optimize import LikelihoodFreeOptimizer, MetaBayesSearchCV

sklearn_icml.set_config(n_threads=1)  # small networks train fastest on one CPU thread

data = make_hpo_tasks(6, n_samples=120, grid_size=7, random_state=1)
cv = StratifiedKFold(3, shuffle=True, random_state=0)  # the same folds for every search
earlier = [GridSearchCV(data.estimator, data.param_grid, cv=cv).fit(X, y) for X, y in data.datasets[:5]]
X, y = data.datasets[5]
grid = GridSearchCV(data.estimator, data.param_grid, cv=cv).fit(X, y)
best = grid.best_score_
print(f"new dataset ({data.names[5]}): best CV accuracy of the full {len(grid.cv_results_['params'])}-point "
      f"grid {best:.3f}")

# %%
# Three searches of the new dataset
# ---------------------------------
n_iter = 20
meta = MetaBayesSearchCV(
    data.estimator, data.param_grid, n_iter=n_iter, meta_results=earlier, cv=cv, random_state=0)
meta.fit(X, y)
cold = MetaBayesSearchCV(data.estimator, data.param_grid, n_iter=n_iter, cv=cv, random_state=0,
                         optimizer=LikelihoodFreeOptimizer()).fit(X, y)
random_curves = [np.maximum.accumulate(RandomizedSearchCV(
    data.estimator, data.param_grid, n_iter=n_iter, cv=cv, random_state=s).fit(X, y).cv_results_["mean_test_score"])
    for s in range(10)]

fig, ax = plt.subplots(figsize=(7, 4))
steps = np.arange(1, n_iter + 1)
ax.plot(steps, np.maximum.accumulate(meta.cv_results_["mean_test_score"]), "o-",
        label="MetaBayesSearchCV, learning from 5 earlier searches")
ax.plot(steps, np.maximum.accumulate(cold.cv_results_["mean_test_score"]), "s-",
        label="MetaBayesSearchCV with LikelihoodFreeOptimizer (no earlier searches)")
ax.plot(steps, np.mean(random_curves, axis=0), "^-", label="RandomizedSearchCV (mean of 10 seeds)")
ax.axhline(best, color="k", ls=":", label="best of the full grid (GridSearchCV)")
ax.set_xlabel("settings evaluated (3 folds each)")
ax.set_ylabel("best CV accuracy so far")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()

for name, search in (("meta-learned", meta), ("no meta-learning", cold)):
    hits = np.flatnonzero(search.cv_results_["mean_test_score"] >= best - 1e-12)
    print(f"{name:>17}: reaches the grid's best after {hits[0] + 1 if hits.size else f'> {n_iter}'} settings; "
          f"best_params_ { {k: float(f'{v:.4g}') for k, v in search.best_params_.items()} }")
plt.show()
