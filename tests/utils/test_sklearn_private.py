"""The private scikit-learn names the library depends on still exist and behave."""

from numbers import Integral

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from sklearn_icml.utils import _sklearn_private as sp


def test_every_shimmed_name_resolves():
    for name in sp.__all__:
        assert getattr(sp, name) is not None, name


def test_validate_params_and_interval():
    @sp.validate_params({"k": [sp.Interval(Integral, 1, None, closed="left")]},
                        prefer_skip_nested_validation=True)
    def f(k):
        return k

    assert f(3) == 3
    with pytest.raises(sp.InvalidParameterError, match="k"):
        f(0)


def test_fit_context_validates_constraints():
    class E(BaseEstimator):
        _parameter_constraints = {"mode": [sp.StrOptions({"a", "b"})]}

        def __init__(self, mode="a"):
            self.mode = mode

        @sp._fit_context(prefer_skip_nested_validation=True)
        def fit(self, X=None, y=None):
            self.fitted_ = True
            return self

    assert E().fit().fitted_
    with pytest.raises(sp.InvalidParameterError, match="mode"):
        E(mode="c").fit()


def test_sample_weight_helper():
    np.testing.assert_array_equal(sp._check_sample_weight(None, np.zeros((3, 2))), np.ones(3))
    assert sp._num_samples(np.zeros((4, 2))) == 4
