"""Parsing the "earlier tasks" argument shared by the meta-learning estimators of the family."""

from collections.abc import Mapping

import numpy as np
from sklearn.utils.validation import check_array, column_or_1d

from ..utils._torch import as_numpy


def is_task_list(X, y):
    """Whether ``X`` is a sequence (or mapping) of ``(X_t, y_t)`` pairs rather than a 2-D array."""
    if y is not None:
        return False
    if isinstance(X, Mapping):
        return True
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        return False
    return all(isinstance(t, (list, tuple)) and len(t) == 2 and np.ndim(as_numpy(t[0])) == 2 for t in X)


def check_task_list(X, name):
    """Validate a sequence or mapping of ``(X_t, y_t)`` pairs into a list of float64 arrays.

    Returns the list of tasks and the shared number of features.
    """
    items = list(X.values()) if isinstance(X, Mapping) else list(X)
    tasks = []
    n_features = None
    for i, pair in enumerate(items):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            raise ValueError(f"{name}: task {i} must be a pair (X_t, y_t); got {type(pair).__name__}.")
        X_t = check_array(as_numpy(pair[0]), dtype=np.float64, input_name=f"X of task {i}")
        y_t = column_or_1d(np.asarray(as_numpy(pair[1])), warn=True)
        y_t = check_array(y_t, ensure_2d=False, dtype=np.float64, input_name=f"y of task {i}")
        if X_t.shape[0] != y_t.shape[0]:
            raise ValueError(f"{name}: task {i} has {X_t.shape[0]} points but {y_t.shape[0]} objective values.")
        if n_features is None:
            n_features = X_t.shape[1]
        elif X_t.shape[1] != n_features:
            raise ValueError(f"{name}: every task must have the same number of dimensions; task 0 has "
                             f"{n_features} and task {i} has {X_t.shape[1]}.")
        tasks.append((X_t, y_t))
    if not tasks:
        raise ValueError(f"{name}: the list of earlier tasks is empty.")
    return tasks, n_features


def split_by_groups(X, y, groups, name):
    """Split validated stacked observations into tasks by ``groups`` (one task when ``groups`` is None)."""
    if groups is None:
        return [(X, y)]
    groups = column_or_1d(np.asarray(as_numpy(groups)))
    if groups.shape[0] != X.shape[0]:
        raise ValueError(f"{name}: groups has {groups.shape[0]} entries for {X.shape[0]} observations.")
    _, inverse = np.unique(groups, return_inverse=True)
    return [(X[inverse == g], y[inverse == g]) for g in range(inverse.max() + 1)]
