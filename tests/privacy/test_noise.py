"""Noise that survives floating point: extremes of the mechanisms, the counter-based uniforms."""

import numpy as np
import pytest

from sklearn_icml.privacy import gaussian_mechanism, gaussian_noise_scale, geometric_mechanism, laplace_mechanism
from sklearn_icml.privacy._hashing import _bits_to_open_unit, _uniform01, hashed_laplace, hashed_normal

# ------------------------------------------------------------------------------------------------
# extremes: a noise scale float64 cannot carry is refused, never released as inf


@pytest.mark.parametrize("kwargs", [dict(sensitivity=1.0, epsilon=5e-324), dict(sensitivity=1e308, epsilon=1e-10),
                                    dict(sensitivity=5e-324, epsilon=1e300)])
def test_laplace_refuses_a_noise_scale_float64_cannot_carry(kwargs):
    with pytest.raises(ValueError, match=r"noise scale sensitivity / epsilon .* epsilon="):
        laplace_mechanism([1.0], random_state=0, **kwargs)


def test_gaussian_refuses_a_noise_scale_float64_cannot_carry():
    with pytest.raises(ValueError, match=r"noise scale .*sensitivity=1e\+308"):
        gaussian_mechanism([1.0], sensitivity=1e308, epsilon=1.0, delta=1e-5, random_state=0)
    with pytest.raises(ValueError, match="noise scale"):
        gaussian_noise_scale(1.0, 1e-5, 1e308)


@pytest.mark.parametrize("mechanism, extra", [(laplace_mechanism, dict(sensitivity=1.0)),
                                              (geometric_mechanism, dict()),
                                              (gaussian_mechanism, dict(sensitivity=1.0, delta=1e-6))])
@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_booleans_are_not_epsilons(mechanism, extra, flag):
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        mechanism([1.0], epsilon=flag, random_state=0, **extra)


def test_booleans_are_not_sensitivities():
    with pytest.raises(ValueError, match="'sensitivity' parameter"):
        laplace_mechanism([1.0], sensitivity=True, epsilon=1.0)


# ------------------------------------------------------------------------------------------------
# counter-based uniforms: the open interval (0, 1) at the extreme counter values


def test_counter_uniform_never_reaches_zero_or_one():
    extremes = np.array([0, 1, 1 << 11, (1 << 12) - 1, 1 << 12, (1 << 63), (1 << 64) - (1 << 12),
                         (1 << 64) - 1], dtype=np.uint64)
    u = _bits_to_open_unit(extremes)
    assert np.all(u > 0.0) and np.all(u < 1.0)
    assert u[0] == 2.0 ** -53 and u[-1] == 1.0 - 2.0 ** -53  # the two ends, half a step inside
    # the old mapping (top 53 bits plus one half, times 2**-53) rounds the largest word up to exactly 1.0
    assert ((np.uint64((1 << 64) - 1) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53 == 1.0
    # and the counter-based draws built on it stay finite there
    import sklearn_icml.privacy._hashing as hashing
    for word in (0, (1 << 64) - 1):
        forced = lambda x, w=word: np.full(np.shape(np.array(x, ndmin=1)), w, dtype=np.uint64)  # noqa: E731
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(hashing, "_mix64_np", forced)
            u = _uniform01(np.uint64(3), np.arange(4))
            assert np.all((u > 0) & (u < 1))
            assert np.all(np.isfinite(hashed_laplace(1.0, np.uint64(3), np.arange(4))))
            assert np.all(np.isfinite(hashed_normal(1.0, np.uint64(3), np.arange(4))))
