"""
====================================================================
The meta-learned acquisition function after 0, 2 and 4 observations
====================================================================

MALIBO (:class:`~sklearn_icml.optimize.MetaBayesianOptimizer`) never fits a surrogate of the
objective. Its acquisition function is a classifier, :class:`~sklearn_icml.optimize.MetaLFBOClassifier`,
that predicts the probability that a point lies below the ``gamma``-quantile of the values seen so
far. The classifier's features are meta-learned on earlier tasks of the same kind, and a Bayesian
task head (a Laplace posterior) adapts them to the new task.

Here the tasks are *shifted* Forrester functions: the optimum moves from task to task, so simply
re-evaluating the earlier tasks' optima does not work. We meta-train on 64 earlier tasks, then
watch the acquisition on a new task:

* with **0 observations** it is the meta-learned prior, and its Thompson draws show which
  optima the earlier tasks make plausible;
* after **2 and 4 observations** the task head has moved towards the new task: the curve is the
  acquisition under one draw from its Laplace posterior (Thompson sampling), and once two points
  lie on each side of the threshold a gradient-boosting residual corrects it.

:class:`~sklearn_icml.optimize.LikelihoodFreeOptimizer`, the same method without meta-learning,
has no model at all before it has seen two points on each side of the threshold: its first
suggestions are random.
"""

# %%
# Meta-training on earlier tasks
# ------------------------------
import matplotlib.pyplot as plt
import numpy as np

import sklearn_icml
from sklearn_icml.datasets import make_forrester_tasks
from sklearn_icml.optimize import LikelihoodFreeOptimizer, MetaBayesianOptimizer

# Networks this small train fastest on one CPU thread: the library's thread setting, applied inside
# each fit and restored after it.
sklearn_icml.set_config(n_threads=1)

earlier = make_forrester_tasks(64, 32, family="shifted", random_state=0)
target = make_forrester_tasks(1, 0, family="shifted", random_state=3).functions[0]

# the default classifier: 16 features, 32 hidden units, 3 layers, at most 300 epochs
optimizer = MetaBayesianOptimizer(bounds=[(0.0, 1.0)], n_candidates=2048, random_state=0)
optimizer.fit(earlier.tasks)
print(f"meta-trained on {optimizer.classifier_.n_meta_tasks_} tasks in {optimizer.classifier_.n_meta_iter_} "
      "epochs")

# %%
# The acquisition function as observations come in
# ------------------------------------------------
grid = np.linspace(0, 1, 400)[:, None]
fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)

ax = axes[0]
for f in earlier.functions[:12]:
    ax.plot(grid[:, 0], f(grid), color="0.8", lw=0.8)
ax.plot(grid[:, 0], target(grid), color="C3", lw=2, label="new task")
ax.axvline(target.argmin, color="C3", ls=":", lw=1)
ax.set_ylabel("objective")
ax.set_title("12 of the 64 earlier tasks (grey) and the new task")
ax.legend(loc="upper left")

for ax, n in zip(axes[1:], (0, 2, 4)):
    # n = 0: the state fit leaves, before any observation of the new task (the zero-shot prior)
    result = optimizer.minimize(target, n) if n else None
    acquisition = optimizer.score_samples(grid)
    label = "acquisition: prior mean (zero-shot)" if n == 0 else "acquisition: one posterior (Thompson) draw"
    ax.plot(grid[:, 0], acquisition, color="C0", lw=2, label=label)
    if n == 0:
        draws = optimizer.classifier_.sample_proba(grid, n_samples=5, random_state=0)
        ax.plot(grid[:, 0], draws.T, color="C0", lw=0.7, alpha=0.5)
        ax.plot([], [], color="C0", lw=0.7, alpha=0.5, label="Thompson draws of the prior")
    for x in ([] if result is None else result.x_iters[:, 0]):
        ax.axvline(x, color="k", lw=1)
    x_next = optimizer.suggest(1)[0, 0]
    ax.axvline(x_next, color="C2", lw=2, ls="--", label="next suggestion")
    ax.axvline(target.argmin, color="C3", ls=":", lw=1)
    regret = "" if n == 0 else f", best regret so far {result.fun - target.minimum:.3g}"
    ax.set_title(f"after {n} observations (black lines){regret}")
    ax.set_ylabel("P(below threshold)")
    ax.legend(loc="upper left", fontsize=8)
axes[-1].set_xlabel("x")
fig.tight_layout()

# %%
# Against LFBO without meta-learning
# ----------------------------------
# Over 8 evaluations on this task, the meta-learned optimiser against plain LFBO:
lfbo = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)], n_candidates=2048, random_state=0)
for name, opt in (("MetaBayesianOptimizer", optimizer), ("LikelihoodFreeOptimizer", lfbo)):
    res = opt.minimize(target, 8)
    regret = np.minimum.accumulate(res.func_vals) - target.minimum
    print(f"{name:>24}: regret after 1, 4, 8 evaluations: {regret[0]:.3g}, {regret[3]:.3g}, {regret[7]:.3g}")
plt.show()
