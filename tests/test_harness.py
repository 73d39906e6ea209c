"""The harness fails when it should: each contract breach in tests/_broken.py is caught.

Every check of :mod:`sklearn_icml.utils.estimator_checks` is run on estimators
that break one rule on purpose, and on the reference estimator that keeps them
all, so a check that silently stopped checking fails here.
"""

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_param_validation

from sklearn_icml.utils import estimator_checks as ec

from . import _broken
from ._params import fit_data, make_instance
from ._reference import ReferenceProjection, ReferenceTextRegressor, ReferenceTorchClassifier


def _failed_checks(estimator, among):
    """Names of the checks in ``among`` that fail on ``estimator``, run as the harness runs them."""
    failed, ran = set(), set()
    for est, check in ec.estimator_checks_generator(estimator, fit_data=fit_data):
        name = ec._check_name(check)
        if name not in among:
            continue
        ran.add(name)
        try:
            check(est)
        except Exception:
            failed.add(name)
    assert ran == among, f"the harness does not run {among - ran}"
    return failed


@pytest.mark.parametrize(
    "broken, must_fail",
    [
        (_broken.OverwritesParams, {"check_dont_overwrite_parameters", "check_estimators_overwrite_params"}),
        (_broken.UnfittedAttributeAccess, {"check_estimators_unfitted"}),
        (_broken.ValidatesInInit, {"check_do_not_raise_errors_in_init_or_set_params"}),
        (_broken.MissingConstraint, {"check_param_validation"}),
        (_broken.KeepsTensor, {"check_fitted_state_holds_no_tensor"}),
        (_broken.MutatesInput, {"check_no_input_mutation"}),
        (_broken.KeepsStateOutsideThePickle, {"check_pickle_loads_without_gpu"}),
        (_broken.WorksBeforeRefusingCuda, {"check_device_rule"}),
        (_broken.SilentCpuFallback, {"check_device_rule"}),
        (_broken.NoDeviceAttribute, {"check_device_rule"}),
        (_broken.ChangesTorchThreads, {"check_thread_rule"}),
        (_broken.IgnoresThreadRule, {"check_thread_rule"}),
        (_broken.DropsFeatureNames, {"check_feature_names", "check_dataframe_column_names_consistency"}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_check_estimator_catches_breach(broken, must_fail):
    failed = _failed_checks(broken(max_iter=5, random_state=0), must_fail)
    assert must_fail <= failed, f"not caught: {must_fail - failed}"


_OWN_INPUT_CHECKS = {"check_fit_returns_self_on_own_input", "check_unfitted_raises_on_own_input",
                     "check_fit_is_deterministic_on_own_input"}


@pytest.mark.parametrize("estimator", [ReferenceTorchClassifier, ReferenceProjection, ReferenceTextRegressor],
                         ids=lambda c: c.__name__)
def test_reference_passes_every_check(estimator):
    results = ec.check_estimator(make_instance(estimator), fit_data=fit_data, on_fail=None)
    assert {r["check_name"] for r in results if r["status"] == "failed"} == set()
    house = {name for name in ec.__all__ if name.startswith("check_") and name != "check_estimator"}
    ran = {r["check_name"] for r in results if r["status"] == "passed"}
    expected = {
        ReferenceTorchClassifier: house - _OWN_INPUT_CHECKS,
        ReferenceProjection: house - _OWN_INPUT_CHECKS - {"check_device_rule"},
        # texts: the contract on its own input; no device, and no DataFrame columns to name
        ReferenceTextRegressor: house - {"check_device_rule", "check_feature_names"},
    }[estimator]
    assert expected <= ran, expected - ran
    if estimator is ReferenceTextRegressor:  # scikit-learn's API checks ran, none of its data checks
        assert {"check_param_validation", "check_estimator_repr", "check_set_params"} <= ran
        assert not {r["check_name"] for r in results} & {"check_fit2d_1sample", "check_regressors_train"}


@pytest.mark.parametrize("broken, check", [
    (_broken.FitReturnsNothing, "check_fit_returns_self_on_own_input"),
    (_broken.PredictsBeforeFit, "check_unfitted_raises_on_own_input"),
    (_broken.UnseededFit, "check_fit_is_deterministic_on_own_input"),
], ids=lambda v: v.__name__ if isinstance(v, type) else v)
def test_own_input_checks_catch_breach(broken, check):
    assert _failed_checks(broken(random_state=0), {check}) == {check}
    assert _failed_checks(ReferenceTextRegressor(random_state=0), {check}) == set()


def test_expected_failure_with_raises_rejects_another_exception():
    est = make_instance(_broken.KeepsTensor)
    mark = ec.parametrize_with_checks(
        [est], fit_data=fit_data, xfail_strict=True,
        expected_failed_checks=lambda e: {"check_fitted_state_holds_no_tensor": ("a reason here", AssertionError)})
    xfail = {p.id: p for p in mark.args[1]}["KeepsTensor-check_fitted_state_holds_no_tensor"].marks
    assert [(m.name, m.kwargs) for m in xfail] == [("xfail", {"reason": "a reason here", "strict": True,
                                                             "raises": AssertionError})]
    results = ec.check_estimator(est, fit_data=fit_data, on_fail=None,
                                 expected_failed_checks={"check_fitted_state_holds_no_tensor": ("r", ValueError)})
    status = {r["check_name"]: r["status"] for r in results}
    assert status["check_fitted_state_holds_no_tensor"] == "failed"  # an AssertionError is not the ValueError named


def test_param_validation_catches_missing_constraint():
    est = _broken.MissingConstraint(max_iter=5)
    with pytest.raises(AssertionError, match="max_iter"):
        check_param_validation("MissingConstraint", est)


def test_tensor_check_names_the_attribute():
    est = make_instance(_broken.KeepsTensor)
    X, y = fit_data(est)
    found = ec.tensors_in_fitted_state(est.fit(X, y))
    assert [path for path, _ in found] == ["weights_['coef']"]
    with pytest.raises(AssertionError, match=r"weights_\['coef'\]"):
        ec.check_fitted_state_holds_no_tensor("KeepsTensor", est, fit_data)
    ok = make_instance(ReferenceTorchClassifier).fit(X, y)
    assert ec.tensors_in_fitted_state(ok) == []


def test_tensor_check_allows_cpu_module_only():
    torch = pytest.importorskip("torch")
    est = make_instance(ReferenceTorchClassifier)
    X, y = fit_data(est)
    est.fit(X, y)
    est.module_ = torch.nn.Linear(2, 2)
    assert ec.tensors_in_fitted_state(est) == []


def test_input_mutation_is_caught():
    est = make_instance(_broken.MutatesInput)
    with pytest.raises(AssertionError, match="fit modified X"):
        ec.check_no_input_mutation("MutatesInput", est, fit_data)


def test_pickle_check_catches_state_outside_the_pickle_that_in_process_pickling_misses():
    import pickle

    est = make_instance(_broken.KeepsStateOutsideThePickle)
    X, y = fit_data(est)
    fitted = est.fit(X, y)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(fitted)).predict_proba(X), fitted.predict_proba(X))
    with pytest.raises(AssertionError, match="MISMATCH.*predict_proba"):
        ec.check_pickle_loads_without_gpu("KeepsStateOutsideThePickle", est, fit_data)


def test_device_check_messages():
    if pytest.importorskip("torch").cuda.is_available():
        pytest.skip("the refusal of device='cuda' is checked on machines without a GPU")
    for broken, match in [(_broken.WorksBeforeRefusingCuda, r"read the data \(X\.__array__\(\)\)"),
                          (_broken.SilentCpuFallback, "ran without a GPU"),
                          (_broken.NoDeviceAttribute, "must set device_='cpu'")]:
        with pytest.raises(AssertionError, match=match):
            ec.check_device_rule(broken.__name__, make_instance(broken), fit_data)


def test_thread_check_messages_and_restores_torch():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with pytest.raises(AssertionError, match="changed torch's global thread count"):
        ec.check_thread_rule("ChangesTorchThreads", make_instance(_broken.ChangesTorchThreads), fit_data)
    with pytest.raises(AssertionError, match=r"ran torch calls with more threads than .*n_threads=1"):
        ec.check_thread_rule("IgnoresThreadRule", make_instance(_broken.IgnoresThreadRule), fit_data)
    assert torch.get_num_threads() == before
    assert torch.set_num_threads.__name__ == "set_num_threads"


def test_feature_names_check_message():
    pytest.importorskip("pandas")
    with pytest.raises(AssertionError, match="feature_names_in_"):
        ec.check_feature_names("DropsFeatureNames", make_instance(_broken.DropsFeatureNames), fit_data)


def test_parametrize_with_checks_marks_expected_failures_and_names_tests():
    est = make_instance(_broken.KeepsTensor)
    reason = "a reason a reviewer would accept"
    mark = ec.parametrize_with_checks([est], fit_data=fit_data, xfail_strict=True,
                                      expected_failed_checks=lambda e: {"check_fitted_state_holds_no_tensor": reason})
    params = {p.id: p for p in mark.args[1]}
    assert "KeepsTensor-check_estimators_pickle" in params
    xfail = params["KeepsTensor-check_fitted_state_holds_no_tensor"].marks
    assert [(m.name, m.kwargs) for m in xfail] == [("xfail", {"reason": reason, "strict": True})]
    with pytest.raises(TypeError, match="instances"):
        ec.parametrize_with_checks([_broken.KeepsTensor])


def test_device_fixture_gives_cpu_and_a_cuda_param(device, request):
    assert device in {"cpu", "cuda"}
    assert ("cuda" in request.node.keywords) == (device == "cuda")


def test_pytest_configuration_is_in_force(pytestconfig):
    """pyproject.toml's [tool.pytest] table is read (pytest>=9): strict markers, doctests, warnings as errors."""
    assert pytestconfig.getoption("strict_markers")
    assert pytestconfig.getoption("doctestmodules")
    assert "error" in pytestconfig.getini("filterwarnings")
    with pytest.raises(UserWarning):
        warnings.warn("warnings are errors in this suite", UserWarning, stacklevel=1)
