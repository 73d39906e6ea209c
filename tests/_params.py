"""The two tables of the common harness, and how instances and fit data are made.

* ``INIT_PARAMS``: small, seeded constructor arguments per class name, so the
  whole common suite stays fast on 2 cores. ``random_state=0`` is added to
  every estimator that has one; ``device`` is set from the environment variable
  ``SKLEARN_ICML_TEST_DEVICE`` (default ``"cpu"``), so the same suite runs on a
  GPU machine with ``SKLEARN_ICML_TEST_DEVICE=cuda``.
* ``EXPECTED_FAILED``: class name -> {check name: reason}. Every entry needs a
  reason a reviewer would accept; the harness runs with ``xfail_strict=True``,
  so an entry whose check starts passing fails the suite until it is removed.

``FIT_DATA`` gives the few estimators whose data is not "2-D float X, 1-D y"
their own small demo data for the harness's extra tests (tensor-free fitted
state, pickles loading without a GPU).
"""

import os

from sklearn.base import is_classifier, is_regressor
from sklearn.datasets import make_blobs, make_classification, make_regression

from sklearn_icml.utils.discovery import all_estimators

from ._reference import ReferenceProjection, ReferenceTorchClassifier

DEVICE = os.environ.get("SKLEARN_ICML_TEST_DEVICE", "cpu")

#: Estimators of tests/ that go through the same harness as the library's.
REFERENCE_ESTIMATORS = [
    ("ReferenceProjection", ReferenceProjection),
    ("ReferenceTorchClassifier", ReferenceTorchClassifier),
]

INIT_PARAMS = {
    "ReferenceTorchClassifier": dict(max_iter=50),
}

EXPECTED_FAILED = {}

FIT_DATA = {}


def harness_classes():
    """(name, class) of every estimator the harness covers: the library's and the reference's."""
    return list(all_estimators()) + REFERENCE_ESTIMATORS


def make_instance(cls):
    """A small, seeded instance of ``cls`` on the test device."""
    params = dict(INIT_PARAMS.get(cls.__name__, {}))
    defaults = cls().get_params(deep=False)
    if "random_state" in defaults:
        params.setdefault("random_state", 0)
    if "device" in defaults:
        params.setdefault("device", DEVICE)
    return cls(**params)


def expected_failed_checks(estimator):
    """The callable ``parametrize_with_checks`` takes: {check name: reason}."""
    return EXPECTED_FAILED.get(type(estimator).__name__, {})


def fit_data(estimator, random_state=0):
    """Small demo data ``(X, y)`` the estimator can be fitted on (``y`` may be None)."""
    name = type(estimator).__name__
    if name in FIT_DATA:
        return FIT_DATA[name](random_state)
    if is_classifier(estimator):
        return make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0,
                                   n_classes=3, random_state=random_state)
    if is_regressor(estimator):
        return make_regression(n_samples=60, n_features=4, random_state=random_state)
    X, y = make_blobs(n_samples=60, n_features=4, centers=3, random_state=random_state)
    return X, None
