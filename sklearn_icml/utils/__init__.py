"""Shared utilities: estimator discovery, torch helpers.

Public here: :func:`all_estimators` (in :mod:`sklearn_icml.utils.discovery`).
The torch helpers in ``sklearn_icml.utils._torch`` and the scikit-learn
internals shim ``sklearn_icml.utils._sklearn_private`` are for the library's
own estimators.
"""

from .discovery import all_displays, all_estimators, all_functions

__all__ = ["all_displays", "all_estimators", "all_functions"]
