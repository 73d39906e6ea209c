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
        for check_name, (reason, raises) in checks.items():
            assert check_name in known_checks, f"{name}: unknown check {check_name}"
            assert isinstance(reason, str) and len(reason.split()) >= 5, f"{name}.{check_name}: give a reason"
            assert isinstance(raises, type) and issubclass(raises, Exception), f"{name}.{check_name}: raises="


def test_at_most_thirty_expected_failures():
    """Estimators whose input is not a feature matrix declare it with input tags instead of expected failures."""
    assert sum(len(checks) for checks in EXPECTED_FAILED.values()) <= 30


def test_estimators_of_other_inputs_run_the_contract_on_their_own_input():
    """Each estimator tagged as not taking a feature matrix gets scikit-learn's API checks and the house contract
    checks, and none of scikit-learn's data checks (which feed random real matrices)."""
    from sklearn.utils import get_tags

    own_input = [est for est in ESTIMATORS if not get_tags(est).input_tags.two_d_array]
    names = {type(est).__name__ for est in own_input}
    assert {"GumbelScheduler", "GreedyStageScheduler", "CPSATScheduler", "InContextNGram", "NGramTransformerLM",
            "PrivateEvolutionText", "AdaptiveShapeScheduler", "BradleyTerryRanker", "EloRater"} <= names
    for est in own_input:
        checks = {estimator_checks._check_name(c) for _, c in estimator_checks._all_checks(est, fit_data=fit_data)}
        assert {"check_param_validation", "check_estimator_repr", "check_fit_returns_self_on_own_input",
                "check_unfitted_raises_on_own_input", "check_fit_is_deterministic_on_own_input",
                "check_pickle_loads_without_gpu", "check_no_input_mutation"} <= checks, type(est).__name__
        assert not checks & {"check_fit2d_1sample", "check_estimators_dtypes", "check_fit_idempotent"}
