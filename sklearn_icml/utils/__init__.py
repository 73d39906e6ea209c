"""Shared utilities: estimator discovery, torch helpers.

Public here: :func:`all_estimators` (in :mod:`sklearn_icml.utils.discovery`), and
:mod:`sklearn_icml.utils.estimator_checks`, the house checks any estimator can run
(imported on its own: it needs scikit-learn's check machinery and, for the
pytest decorator, pytest).
The torch helpers behind every ``device`` parameter are public too (they import
torch only when called): :func:`resolve_device`, :func:`torch_generator`,
:func:`torch_threads`, :func:`to_tensor` and :func:`to_numpy`, for code that
computes beside the estimators under the same device, seed and thread rules.
:class:`Trainer` is the training layer every torch estimator fits through
(mini-batch epochs, step-budgeted streams, full-batch L-BFGS, multi-task
objectives, on skorch), returning a :class:`TrainingResult`; importing it does
not import torch or skorch either.
The scikit-learn internals shim ``sklearn_icml.utils._sklearn_private`` is for
the library's own estimators.
"""

from ._torch import resolve_device, to_numpy, to_tensor, torch_generator, torch_threads
from ._training import Trainer, TrainingResult
from .discovery import all_displays, all_estimators, all_functions

__all__ = ["Trainer", "TrainingResult", "all_displays", "all_estimators", "all_functions", "resolve_device",
           "to_numpy", "to_tensor", "torch_generator", "torch_threads"]
