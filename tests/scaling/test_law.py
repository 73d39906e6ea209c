"""ScalingLawRegressor: parameter recovery, the inverse and marginal compute, bounds and input checks."""

import warnings

import numpy as np
import pytest

from sklearn_icml.scaling import ScalingLawBoundWarning, ScalingLawRegressor

TRUTH = {
    "saturating": {"a": 2e3, "b": 0.3, "c": 0.5, "d": 1e11},
    "power_offset": {"a": 5e2, "b": 0.25, "c": 1.2, "d": 0.0},
    "power": {"a": 40.0, "b": 0.12, "c": 0.0, "d": 0.0},
}


def _law(C, p):
    return p["a"] * (C + p["d"]) ** -p["b"] + p["c"]


def _runs(truths, n=30, lo=10, hi=14, noise=0.0, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for shape, p in truths.items():
        C = np.logspace(lo, hi, n)
        X.append(np.column_stack([C, np.full(n, shape)]))
        y.append(_law(C, p) * np.exp(noise * rng.randn(n)))
    return np.vstack(X), np.concatenate(y)


@pytest.mark.parametrize("form", list(TRUTH))
def test_noise_free_law_recovers_its_parameters(form):
    C = np.logspace(10, 14, 30)
    law = ScalingLawRegressor(form, random_state=0).fit(C[:, None], _law(C, TRUTH[form]))
    got = law.params_[0]
    for name, true in TRUTH[form].items():
        if true == 0:
            assert got[name] == 0.0
        else:
            assert abs(got[name] / true - 1) < 1e-3, (name, got[name], true)
    assert law.fit_log_rmse_ < 1e-8
    assert law.at_bound_ == []


def test_noise_free_shapes_with_a_shared_exponent():
    truths = {4: {"a": 5e3, "b": 0.35, "c": 0.3, "d": 5e10}, 8: {"a": 2e4, "b": 0.35, "c": 0.2, "d": 2e11},
              16: {"a": 8e4, "b": 0.35, "c": 0.1, "d": 8e11}}
    X, y = _runs(truths)
    law = ScalingLawRegressor(shape_column=1, share=("b",), random_state=0).fit(X, y)
    assert list(law.params_) == [4, 8, 16]
    np.testing.assert_array_equal(law.shapes_, [4.0, 8.0, 16.0])
    for shape, p in truths.items():
        for name, true in p.items():
            assert abs(law.params_[shape][name] / true - 1) < 1e-3, (shape, name)
    assert len({law.params_[s]["b"] for s in truths}) == 1


def test_shared_a_is_shared_in_raw_compute_units():
    truths = {1: {"a": 3e3, "b": 0.3, "c": 0.2, "d": 0.0}, 2: {"a": 3e3, "b": 0.4, "c": 0.1, "d": 0.0}}
    X, y = _runs(truths)
    law = ScalingLawRegressor("power_offset", shape_column=1, share=("a",), random_state=0).fit(X, y)
    for shape, p in truths.items():
        for name in ("a", "b", "c"):
            assert abs(law.params_[shape][name] / p[name] - 1) < 1e-3


def test_noisy_fit_close_to_truth_and_predict_is_the_law():
    X, y = _runs({0: TRUTH["saturating"]}, noise=0.01, seed=3)
    law = ScalingLawRegressor(shape_column=1, random_state=0).fit(X, y)
    C_test = np.logspace(10.1, 13.9, 17)
    pred = law.predict(np.column_stack([C_test, np.zeros(17)]))
    np.testing.assert_allclose(pred, _law(C_test, law.params_[0]), rtol=1e-12)
    assert np.max(np.abs(np.log(pred / _law(C_test, TRUTH["saturating"])))) < 0.02
    assert 0.005 < law.fit_log_rmse_ < 0.02  # the noise level, 0.01


def test_compute_to_reach_inverts_predict_and_marginal_is_its_derivative():
    X, y = _runs({3: TRUTH["saturating"], 5: TRUTH["power_offset"]})
    law = ScalingLawRegressor(shape_column=1, random_state=0).fit(X, y)
    for shape in (3, 5):
        C = np.logspace(10.5, 13.5, 7)
        E = law.predict(np.column_stack([C, np.full(7, shape)]))
        np.testing.assert_allclose(law.compute_to_reach(E, shape=shape), C, rtol=1e-9)
        h = 1e-6 * E
        numeric = -(law.compute_to_reach(E + h, shape=shape) - law.compute_to_reach(E - h, shape=shape)) / (2 * h)
        np.testing.assert_allclose(law.marginal_compute(E, shape=shape), numeric, rtol=1e-5)
        c = law.params_[shape]["c"]
        assert law.compute_to_reach(c, shape=shape) == np.inf
        assert law.marginal_compute(c * 0.5, shape=shape) == np.inf
    with pytest.raises(ValueError, match="pass shape="):
        law.compute_to_reach(1.0)
    with pytest.raises(ValueError, match="unknown shape"):
        law.compute_to_reach(1.0, shape=7)


def test_zero_compute_loss_clamps_compute_at_zero():
    C = np.logspace(10, 14, 30)
    p = TRUTH["saturating"]
    law = ScalingLawRegressor(random_state=0).fit(C[:, None], _law(C, p))
    e0 = p["a"] * p["d"] ** -p["b"] + p["c"]
    assert law.compute_to_reach(e0 * 1.01) == 0.0


def test_score_is_r2_of_log_loss():
    from sklearn.metrics import r2_score

    X, y = _runs({0: TRUTH["saturating"]}, noise=0.05, seed=1)
    law = ScalingLawRegressor(shape_column=1, random_state=0).fit(X, y)
    assert law.score(X, y) == pytest.approx(r2_score(np.log(y), np.log(law.predict(X))))


def test_exponential_curves_end_on_the_b_bound_and_warn():
    C = np.linspace(1, 100, 40)
    y = 0.1 + np.exp(-C / 5.0)  # an exponential approach, not a power law
    with pytest.warns(ScalingLawBoundWarning, match="bound"):
        law = ScalingLawRegressor(random_state=0).fit(C[:, None], y)
    assert (0, "b") in law.at_bound_ or (0, "c") in law.at_bound_ or (0, "d") in law.at_bound_
    for shape, name in law.at_bound_:
        value = law.params_[shape][name]
        if name == "b":
            assert value == pytest.approx(3.0, rel=1e-5) or value == pytest.approx(0.01, rel=1e-5)


@pytest.mark.parametrize("bad", ["compute", "loss"])
def test_non_positive_compute_or_loss_raises(bad):
    C = np.logspace(0, 3, 10)
    y = 1.0 / C
    if bad == "compute":
        C = C.copy()
        C[3] = 0.0
    else:
        y[4] = -1.0
    with pytest.raises(ValueError, match="compute" if bad == "compute" else "loss"):
        ScalingLawRegressor().fit(C[:, None], y)


def test_bad_parameters_and_unknown_shapes_raise():
    X, y = _runs({1: TRUTH["saturating"]}, n=12)
    with pytest.raises(ValueError, match="share"):
        ScalingLawRegressor(shape_column=1, share=("e",)).fit(X, y)
    with pytest.raises(ValueError, match="b_bounds"):
        ScalingLawRegressor(shape_column=1, b_bounds=(2.0, 1.0)).fit(X, y)
    with pytest.raises(ValueError, match="shape_column=4"):
        ScalingLawRegressor(shape_column=4).fit(X, y)
    law = ScalingLawRegressor(shape_column=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="not seen in fit"):
        law.predict(np.array([[1e12, 2.0]]))
    with pytest.raises(ValueError, match="3 samples .runs.; the 'saturating' law needs at least 4"):
        ScalingLawRegressor(shape_column=1).fit(X[:3], y[:3])


def test_deterministic_and_input_untouched():
    X, y = _runs({1: TRUTH["saturating"], 2: TRUTH["power_offset"]}, noise=0.01)
    X0, y0 = X.copy(), y.copy()
    a = ScalingLawRegressor(shape_column=1, random_state=5).fit(X, y)
    b = ScalingLawRegressor(shape_column=1, random_state=5).fit(X, y)
    assert a.params_ == b.params_
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_extra_columns_are_not_used():
    X, y = _runs({1: TRUTH["saturating"]}, n=20)
    extra = np.column_stack([X, np.random.RandomState(0).rand(len(X))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = ScalingLawRegressor(shape_column=1, random_state=0).fit(X, y)
        b = ScalingLawRegressor(shape_column=1, random_state=0).fit(extra, y)
    assert a.params_ == b.params_
