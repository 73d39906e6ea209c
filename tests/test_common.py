"""The common harness: scikit-learn's checks and the house checks over every estimator.

Everything runs through :mod:`sklearn_icml.utils.estimator_checks`, the public
module a third-party estimator uses too. Tables (small init params, demo data
for the house checks, expected failures with reasons) live in ``tests/_params.py``.
"""

import inspect

from sklearn_icml.utils import estimator_checks
from sklearn_icml.utils.discovery import all_estimators
from sklearn_icml.utils.estimator_checks import parametrize_with_checks

from ._params import (
    EXPECTED_FAILED,
    FIT_DATA,
    INIT_PARAMS,
    expected_failed_checks,
    fit_data,
    harness_classes,
    make_instance,
)

ESTIMATORS = [make_instance(cls) for _, cls in harness_classes()]


@parametrize_with_checks(ESTIMATORS, fit_data=fit_data, expected_failed_checks=expected_failed_checks,
                         xfail_strict=True)
def test_estimator(estimator, check):
    check(estimator)


def test_harness_covers_every_public_estimator():
    tested = {name for name, _ in harness_classes()}
    assert {name for name, _ in all_estimators()} <= tested
    # the tables never name a class the harness does not test (stale entries)
    for table in (INIT_PARAMS, EXPECTED_FAILED, FIT_DATA):
        assert set(table) <= tested, set(table) - tested


def test_expected_failures_have_reasons():
    import sklearn.utils.estimator_checks as ec

    known_checks = {name for name, _ in inspect.getmembers(ec, inspect.isfunction)}
    known_checks |= {name for name in estimator_checks.__all__ if name.startswith("check_")}
    for name, checks in EXPECTED_FAILED.items():
        for check_name, reason in checks.items():
            assert check_name in known_checks, f"{name}: unknown check {check_name}"
            assert isinstance(reason, str) and len(reason.split()) >= 5, f"{name}.{check_name}: give a reason"
