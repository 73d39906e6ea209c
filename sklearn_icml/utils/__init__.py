"""Shared utilities: estimator discovery, torch helpers.

Public here: :func:`all_estimators` (in :mod:`sklearn_icml.utils.discovery`), and
:mod:`sklearn_icml.utils.estimator_checks`, the house checks any estimator can run
(imported on its own: it needs scikit-learn's check machinery and, for the
pytest decorator, pytest).
The torch helpers in ``sklearn_icml.utils._torch`` and the scikit-learn
internals shim ``sklearn_icml.utils._sklearn_private`` are for the library's
own estimators.
"""

from .discovery import all_displays, all_estimators, all_functions

__all__ = ["all_displays", "all_estimators", "all_functions"]
