"""Shared input checks: the float32 and square-safe ranges and the overflow-safe standardisation."""

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from sklearn_icml.utils._validation import (
    FLOAT32_SAFE_MAX,
    check_float32_range,
    check_test_data,
    check_value_range,
    square_safe_max,
    standardization,
)


def test_standardization_matches_standard_scaler_and_keeps_constant_columns():
    X = np.random.RandomState(0).normal(3.0, 2.0, size=(50, 4))
    X[:, 2] = 7.0  # constant
    mean, scale = standardization(X)
    ref = StandardScaler().fit(X)
    np.testing.assert_allclose(mean, ref.mean_, rtol=1e-12)
    np.testing.assert_allclose(scale, ref.scale_, rtol=1e-12)  # scikit-learn's scale_ is 1 for the constant one
    assert scale[2] == 1.0


def test_standardization_of_huge_values_is_finite_and_exact_in_ratio():
    X = np.random.RandomState(1).normal(size=(30, 3))
    mean, scale = standardization(X * 1e300)  # X.std would overflow
    ref_mean, ref_scale = standardization(X)
    np.testing.assert_allclose(mean / 1e300, ref_mean, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(scale / 1e300, ref_scale, rtol=1e-10)


def test_tiny_columns_are_scaled_not_taken_for_constant():
    X = np.random.RandomState(2).normal(size=(40, 2)) * 1e-20
    _, scale = standardization(X)
    np.testing.assert_allclose(scale, X.std(axis=0))


def test_float32_range_names_the_estimator_and_the_array():
    check_float32_range(np.array([1.0, np.nan]), np.ones(2), name="Est", labels=("X", "y"))
    with pytest.raises(ValueError, match=r"Est: y holds values up to 1e\+37"):
        check_float32_range(np.ones(2), np.array([1e37]), name="Est", labels=("X", "y"))
    assert FLOAT32_SAFE_MAX < np.finfo(np.float32).max


def test_weighted_standardization_equals_repeated_rows_at_any_scale():
    X = np.random.RandomState(3).normal(2.0, 3.0, size=(25, 3))
    w = np.random.RandomState(4).randint(1, 5, size=25)
    ref_mean, ref_scale = standardization(np.repeat(X, w, axis=0))
    for factor in (1.0, 1e300):  # X * 1e300: the weighted moments would overflow without the peak rescaling
        mean, scale = standardization(X * factor, sample_weight=w.astype(float))
        np.testing.assert_allclose(mean / factor, ref_mean, rtol=1e-12)
        np.testing.assert_allclose(scale / factor, ref_scale, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_square_safe_values_square_and_sum_without_overflow(dtype):
    limit = square_safe_max(dtype)
    assert np.isfinite(np.sum(np.full(10 ** 5, limit, dtype=np.float64).astype(dtype) ** 2, dtype=dtype))
    assert limit * 1e4 > np.sqrt(np.finfo(dtype).max)  # and it is not needlessly small
    check_value_range(np.array([limit, np.nan]), name="Est", limit=limit, reason="why")
    with pytest.raises(ValueError, match=r"Est: X holds values up to .* \(squares\); rescale it"):
        check_value_range(np.array([2 * limit]), name="Est", limit=limit, reason="squares")


def test_test_data_checked_against_the_fit():
    from sklearn.exceptions import NotFittedError

    X = np.arange(12.0).reshape(4, 3)
    scaler = StandardScaler()
    with pytest.raises(NotFittedError):
        check_test_data(scaler, X)
    scaler.fit(X)
    out = check_test_data(scaler, X.astype(np.float32))
    assert out.dtype == np.float32 and np.array_equal(out, X)
    assert check_test_data(scaler, X.astype(int)).dtype == np.float64
    with pytest.raises(ValueError, match="3 features"):
        check_test_data(scaler, X[:, :2])
