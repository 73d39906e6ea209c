"""Tour entry of the neural_network family: a tanh teacher's width and weights recovered from its outputs."""

import warnings

import numpy as np

from ._base import TourEntry, TourResult, fit_timed


def _teacher(n_samples, random_state):
    """The 6-5-1 tanh teacher of the benchmark and Gaussian probes."""
    rng = np.random.RandomState(0)
    W, b, a = rng.normal(size=(6, 5)), 0.3 * rng.normal(size=5), rng.normal(size=(5, 1))
    X = np.random.RandomState(random_state).normal(size=(n_samples, 6))
    return X, (np.tanh(X @ W + b) @ a).ravel()


def _run_expand_cluster(device="cpu", quick=False):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor

    from ..neural_network import ExpandAndCluster

    X, y = _teacher(2000, 1)
    X_test, y_test = _teacher(5000, 2)
    # quick: 6 students, 1000 Adam steps and 500 L-BFGS iterations of the students' polish
    ec = ExpandAndCluster(n_students=6 if quick else 10, student_width=10, student_max_iter=1000 if quick else 3000,
                          student_polish_max_iter=500 if quick else 1000, finetune_max_iter=300 if quick else 1500,
                          device=device, random_state=0)
    ec, seconds = fit_timed(ec, X, y)
    mlp = MLPRegressor(hidden_layer_sizes=(5,), activation="tanh", solver="lbfgs", max_iter=2000, tol=1e-12,
                       random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y)
    return TourResult(metric=f"test MSE (recovered width {ec.hidden_layer_sizes_[0]} of 5)",
                      score=float(np.mean((ec.predict(X_test) - y_test) ** 2)),
                      baseline="MLPRegressor given width 5",
                      baseline_score=float(np.mean((mlp.predict(X_test) - y_test) ** 2)),
                      fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("ExpandAndCluster", "S18", "recover a network's widths and weights from its outputs",
              _run_expand_cluster, uses_device=True),
]
