"""The common harness: scikit-learn's checks and the house contract over every estimator.

Tables (small init params, expected failures with reasons) live in ``tests/_params.py``.
"""

import inspect

import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    check_global_output_transform_pandas,
    check_param_validation,
    check_set_output_transform,
    check_set_output_transform_pandas,
    check_transformer_get_feature_names_out,
    check_transformer_get_feature_names_out_pandas,
    parametrize_with_checks,
)

from sklearn_icml.utils.discovery import all_estimators

from ._checks import assert_fit_does_not_modify_input, outputs_of, reload_without_gpu, tensors_in_fitted_state
from ._params import (
    EXPECTED_FAILED,
    FIT_DATA,
    INIT_PARAMS,
    expected_failed_checks,
    fit_data,
    make_instance,
    harness_classes,
)

ESTIMATORS = [make_instance(cls) for _, cls in harness_classes()]
TRANSFORMERS = [est for est in ESTIMATORS if hasattr(est, "transform")]


def _name(estimator):
    return type(estimator).__name__


def _xfail_if_expected(request, estimator, check_name):
    reason = expected_failed_checks(estimator).get(check_name)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks, xfail_strict=True)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_param_validation(estimator, request):
    _xfail_if_expected(request, estimator, "check_param_validation")
    check_param_validation(_name(estimator), estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_dataframe_column_names_consistency(estimator, request):
    _xfail_if_expected(request, estimator, "check_dataframe_column_names_consistency")
    check_dataframe_column_names_consistency(_name(estimator), estimator)


TRANSFORMER_CHECKS = [
    check_transformer_get_feature_names_out,
    check_transformer_get_feature_names_out_pandas,
    check_set_output_transform,
    check_set_output_transform_pandas,
    check_global_output_transform_pandas,
]


# The set_output checks fit on a DataFrame and transform an array on purpose
# (scikit-learn's _output_from_fit_transform), which emits this warning by design.
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
@pytest.mark.filterwarnings("ignore:X has feature names, but:UserWarning")
@pytest.mark.parametrize("check", TRANSFORMER_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("estimator", TRANSFORMERS, ids=_name)
def test_transformer_output(estimator, check, request):
    _xfail_if_expected(request, estimator, check.__name__)
    check(_name(estimator), estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_fitted_state_holds_no_tensor(estimator):
    X, y = fit_data(estimator)
    fitted = clone(estimator).fit(X, y)
    assert tensors_in_fitted_state(fitted) == []


def test_pickles_load_and_predict_without_gpu(tmp_path):
    cases = []
    for estimator in ESTIMATORS:
        X, y = fit_data(estimator)
        fitted = clone(estimator).fit(X, y)
        cases.append((_name(estimator), fitted, X, outputs_of(fitted, X)))
    assert all(outputs for *_, outputs in cases), "every estimator has an output method"
    proc = reload_without_gpu(cases, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"ALL OK {len(cases)}" in proc.stdout


def test_harness_covers_every_public_estimator():
    tested = {name for name, _ in harness_classes()}
    assert {name for name, _ in all_estimators()} <= tested
    # the tables never name a class the harness does not test (stale entries)
    for table in (INIT_PARAMS, EXPECTED_FAILED, FIT_DATA):
        assert set(table) <= tested, set(table) - tested


def test_expected_failures_have_reasons():
    import sklearn.utils.estimator_checks as ec

    known_checks = {name for name, _ in inspect.getmembers(ec, inspect.isfunction)}
    for name, checks in EXPECTED_FAILED.items():
        for check_name, reason in checks.items():
            assert check_name in known_checks, f"{name}: unknown check {check_name}"
            assert isinstance(reason, str) and len(reason.split()) >= 5, f"{name}.{check_name}: give a reason"


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_fit_does_not_modify_input(estimator):
    X, y = fit_data(estimator)
    assert_fit_does_not_modify_input(estimator, X, y)
