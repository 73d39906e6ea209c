"""
============================================================
Tuning a pipeline for calibration with GridSearchCV and Dask
============================================================

The collection's metrics and estimators are ordinary scikit-learn building blocks. Here a
``Pipeline`` is tuned with :class:`~sklearn.model_selection.GridSearchCV` under two scorers at
once: the log-loss and the logit-smoothed calibration error of
:func:`sklearn_icml.metrics.ls_ece` (S16), through the ready-made
:data:`sklearn_icml.metrics.ls_ece_scorer`. The same search runs unchanged on a Dask cluster:
wrap ``fit`` in ``joblib.parallel_config(backend="dask")`` with a ``distributed.Client`` open
(``tests/test_distributed.py`` checks that it gives the same ``cv_results_``).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.metrics import ls_ece_scorer

X, y = load_digits(return_X_y=True)
pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
grid = {"logisticregression__C": np.logspace(-3, 2, 8)}
search = GridSearchCV(pipe, grid, scoring={"nll": "neg_log_loss", "ls_ece": ls_ece_scorer}, refit="nll", cv=3)
search.fit(X, y)
print("best C by log-loss:", search.best_params_["logisticregression__C"])

# %%
# A strongly regularised model is under-confident, a weakly regularised one over-confident;
# the calibration error has its own optimum, near but not at the log-loss optimum.
C = search.cv_results_["param_logisticregression__C"].astype(float)
fig, ax1 = plt.subplots(figsize=(6.5, 4))
ax1.semilogx(C, -search.cv_results_["mean_test_nll"], "o-", color="C0")
ax1.set_xlabel("C (inverse regularisation)")
ax1.set_ylabel("log-loss", color="C0")
ax2 = ax1.twinx()
ax2.semilogx(C, -search.cv_results_["mean_test_ls_ece"], "s-", color="C1")
ax2.set_ylabel("LS-ECE (sigma = 0.1)", color="C1")
ax1.set_title("Cross-validated log-loss and LS-ECE along the grid")
fig.tight_layout()
plt.show()
