"""The harness fails when it should: each contract breach in tests/_broken.py is caught."""

import pytest
from sklearn.utils.estimator_checks import check_estimator, check_param_validation

from . import _broken
from ._checks import assert_fit_does_not_modify_input, tensors_in_fitted_state
from ._params import fit_data, make_instance
from ._reference import ReferenceTorchClassifier


def _failed_checks(estimator):
    results = check_estimator(estimator, on_fail=None, on_skip=None)
    return {r["check_name"] for r in results if r["status"] == "failed"}


@pytest.mark.parametrize(
    "broken, must_fail",
    [
        (_broken.OverwritesParams, {"check_dont_overwrite_parameters", "check_estimators_overwrite_params"}),
        (_broken.UnfittedAttributeAccess, {"check_estimators_unfitted"}),
        (_broken.ValidatesInInit, {"check_do_not_raise_errors_in_init_or_set_params"}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_check_estimator_catches_breach(broken, must_fail):
    failed = _failed_checks(broken(max_iter=5, random_state=0))
    assert must_fail <= failed, f"not caught: {must_fail - failed}"


def test_reference_passes_every_check():
    assert _failed_checks(ReferenceTorchClassifier(max_iter=20, random_state=0)) == set()


def test_param_validation_catches_missing_constraint():
    est = _broken.MissingConstraint(max_iter=5)
    with pytest.raises(AssertionError, match="max_iter"):
        check_param_validation("MissingConstraint", est)


def test_tensor_check_catches_tensor_state():
    est = make_instance(_broken.KeepsTensor)
    X, y = fit_data(est)
    found = tensors_in_fitted_state(est.fit(X, y))
    assert [path for path, _ in found] == ["weights_['coef']"]
    ok = make_instance(ReferenceTorchClassifier).fit(X, y)
    assert tensors_in_fitted_state(ok) == []


def test_tensor_check_allows_cpu_module_only():
    torch = pytest.importorskip("torch")
    est = make_instance(ReferenceTorchClassifier)
    X, y = fit_data(est)
    est.fit(X, y)
    est.module_ = torch.nn.Linear(2, 2)
    assert tensors_in_fitted_state(est) == []


def test_input_mutation_is_caught():
    est = make_instance(_broken.MutatesInput)
    X, y = fit_data(est)
    with pytest.raises(AssertionError, match="modified X"):
        assert_fit_does_not_modify_input(est, X, y)
    assert_fit_does_not_modify_input(make_instance(ReferenceTorchClassifier), *fit_data(est))
