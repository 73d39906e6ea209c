"""The one module of sklearn-icml that imports scikit-learn's private names.

scikit-learn keeps its parameter-validation machinery, ``_fit_context`` and a
few validation helpers private, yet every scikit-learn-contrib project uses
them. Importing them here, once, means a scikit-learn release that moves them
breaks one file, covered by ``tests/utils/test_sklearn_private.py``, and the
``scikit-learn>=1.9,<1.10`` pin is widened only after CI has run on the next
minor release.
"""

from sklearn.base import _fit_context
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import _check_sample_weight, _num_samples

__all__ = [
    "_fit_context",
    "BaseSearchCV",
    "HasMethods",
    "Hidden",
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "validate_params",
    "_check_sample_weight",
    "_num_samples",
]
