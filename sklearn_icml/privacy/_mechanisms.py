"""Additive-noise mechanisms: Laplace, two-sided geometric and (analytic) Gaussian.

The noise is exact discrete noise on a power-of-two grid (module
``_discrete``): a float input is rounded to the grid and integer noise
drawn by exact rejection samplers is added, so the outputs a release can
reach do not depend on its input (floating-point noise would leak it).
``random_state=None`` draws the uniform integers from the operating system's
cryptographic generator; an int or a ``RandomState`` draws them from numpy,
reproducibly: reproducible noise is for testing. The noise scale of each
mechanism is the textbook one:

* Laplace: scale ``b = sensitivity / epsilon`` (L1 sensitivity), pure
  ``epsilon``-DP, on a grid of ``2**30`` to ``2**31`` steps per ``b`` (the
  rounding to the grid adds one step per coordinate to the sensitivity);
* geometric: ``P(k) proportional to exp(-epsilon |k| / sensitivity)`` on the
  integers, pure ``epsilon``-DP for integer-valued queries;
* Gaussian: the smallest ``sigma`` that makes the mechanism
  ``(epsilon, delta)``-DP for the given L2 sensitivity, by the exact condition
  of the analytic Gaussian mechanism (Balle and Wang, ICML 2018), solved
  numerically with :func:`scipy.optimize.brentq`. It is valid for every
  ``epsilon > 0`` (the classic ``sqrt(2 ln(1.25/delta)) / epsilon`` is valid
  only for ``epsilon < 1`` and is looser).
"""

import math
from fractions import Fraction
from numbers import Real

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, validate_params
from ._discrete import (
    DELTA_MARGIN,
    GridNoise,
    add_noise,
    discrete_laplace,
    float_at_least,
    gaussian_grid_step,
    grid_laplace,
    noise_random_state,
    ratio_at_least,
    rounding_slack,
)
from ._validation import DELTA_POSITIVE, EPSILON, POSITIVE, check_finite, check_noise_scale

__all__ = [
    "gaussian_delta",
    "gaussian_mechanism",
    "gaussian_noise_scale",
    "geometric_mechanism",
    "laplace_mechanism",
]

_POSITIVE = POSITIVE
_DELTA = DELTA_POSITIVE
#: largest |count| the geometric mechanism releases (int64 with room for the noise)
_MAX_COUNT = 2 ** 62


@validate_params(
    {"value": ["array-like", Real], "sensitivity": _POSITIVE, "epsilon": EPSILON,
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
@fill_doc
def laplace_mechanism(value, *, sensitivity, epsilon, random_state=None):
    """Release ``value`` with Laplace noise of scale ``sensitivity / epsilon``.

    Parameters
    ----------
    value : float or array-like
        The exact query answer(s). An array is released as one vector query
        whose L1 sensitivity is ``sensitivity``.
    sensitivity : float
        L1 sensitivity of the query: the largest L1 change of ``value`` when
        one record is added or removed.
    epsilon : float
        Privacy budget of the release.
    {{noise_random_state}}

    Returns
    -------
    noisy : float or ndarray
        ``value`` rounded to a power-of-two grid ``g`` (about ``2**-30`` of
        the scale ``sensitivity / epsilon``) plus independent discrete
        Laplace noise on that grid, same shape: every entry is a multiple of
        ``g``. The scale covers the rounding (``sensitivity`` plus ``g`` per
        entry), so the release is ``epsilon``-differentially private.

    Examples
    --------
    >>> from sklearn_icml.privacy import laplace_mechanism
    >>> noisy = laplace_mechanism([10.0, 20.0], sensitivity=1.0, epsilon=1.0, random_state=0)
    >>> noisy.shape
    (2,)
    """
    check_noise_scale(sensitivity / epsilon, caller="laplace_mechanism", sensitivity=sensitivity,
                      epsilon=epsilon)
    value = check_finite(value, "value", caller="laplace_mechanism")
    noise = grid_laplace(sensitivity, epsilon, n_rounded=max(1, value.size))
    noisy = add_noise(value, noise, noise_random_state(random_state))
    return noisy if noisy.ndim else float(noisy)


@validate_params(
    {"value": ["array-like", Real], "sensitivity": [Interval(Real, 1, np.inf, closed="left")],
     "epsilon": EPSILON, "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
@fill_doc
def geometric_mechanism(value, *, sensitivity=1, epsilon, random_state=None):
    """Release integer counts with two-sided geometric noise.

    The noise ``k`` has probability proportional to
    ``exp(-epsilon * |k| / sensitivity)``: the discrete analogue of the
    Laplace mechanism (Ghosh, Roughgarden and Sundararajan, 2012), so the
    released counts stay integers. It is drawn exactly (Canonne, Kamath and
    Steinke, 2020) from uniform integers, with ``sensitivity / epsilon``
    rounded up to a ratio of integers below ``2**62`` where it is not one.

    Parameters
    ----------
    value : int or array-like of int
        Exact counts.
    sensitivity : int, default=1
        L1 sensitivity of the counts (1 for a histogram when one record is
        added or removed).
    epsilon : float
        Privacy budget of the release.
    {{noise_random_state}}

    Returns
    -------
    noisy : int or ndarray of int64
        ``value`` plus noise; ``epsilon``-differentially private.

    Examples
    --------
    >>> from sklearn_icml.privacy import geometric_mechanism
    >>> geometric_mechanism([3, 0, 7], epsilon=1.0, random_state=0).dtype
    dtype('int64')
    """
    value = check_finite(value, "value", caller="geometric_mechanism")
    if value.size and not np.all(np.mod(value, 1) == 0):
        raise ValueError(f"geometric_mechanism releases integer counts; got non-integer values in value {value!r}.")
    if value.size and np.max(np.abs(value)) > _MAX_COUNT:
        raise ValueError(f"geometric_mechanism: value must be counts within +-2**62 (int64 range); got "
                         f"{np.max(np.abs(value)):g}.")
    check_noise_scale(sensitivity / epsilon, caller="geometric_mechanism", sensitivity=sensitivity, epsilon=epsilon)
    t, s = ratio_at_least(Fraction(sensitivity) / Fraction(epsilon), caller="geometric_mechanism")
    noise = discrete_laplace(t, s, value.size, noise_random_state(random_state)).reshape(value.shape)
    noisy = value.astype(np.int64) + noise
    return noisy if noisy.ndim else int(noisy)


@validate_params(
    {"sigma": _POSITIVE, "epsilon": [Interval(Real, 0, np.inf, closed="left")], "sensitivity": _POSITIVE},
    prefer_skip_nested_validation=True,
)
def gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """Smallest ``delta`` for which Gaussian noise ``sigma`` is ``(epsilon, delta)``-DP.

    The exact privacy profile of the Gaussian mechanism (Balle and Wang,
    ICML 2018, Theorem 8):
    ``Phi(D / (2 s) - e s / D) - exp(e) Phi(-D / (2 s) - e s / D)``
    with ``D`` the L2 sensitivity, ``s = sigma`` and ``e = epsilon``.

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise.
    epsilon : float
        Privacy parameter epsilon (non-negative).
    sensitivity : float, default=1.0
        L2 sensitivity of the query.

    Returns
    -------
    delta : float
        The delta of the release at this epsilon.

    Examples
    --------
    >>> from sklearn_icml.privacy import gaussian_delta
    >>> round(gaussian_delta(1.0, 0.0), 4)  # total variation distance at sigma = sensitivity
    0.3829
    """
    return _gaussian_delta(sigma, epsilon, sensitivity)


def _gaussian_delta(sigma, epsilon, sensitivity):
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(ndtr(a - b) - np.exp(epsilon + log_ndtr(-a - b)))


@validate_params(
    {"epsilon": EPSILON, "delta": _DELTA, "sensitivity": _POSITIVE},
    prefer_skip_nested_validation=True,
)
def gaussian_noise_scale(epsilon, delta, sensitivity=1.0):
    """Standard deviation of the analytic Gaussian mechanism.

    The smallest ``sigma`` with ``gaussian_delta(sigma, epsilon, sensitivity)
    <= delta`` (Balle and Wang, ICML 2018), found by root finding. It scales
    linearly with ``sensitivity``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter epsilon of the release (finite; large values up
        to ``1e12`` and beyond give ``sigma`` of order
        ``sensitivity / sqrt(2 epsilon)``).
    delta : float
        Privacy parameter delta of the release, in (0, 1).
    sensitivity : float, default=1.0
        L2 sensitivity of the query.

    Returns
    -------
    sigma : float
        Noise standard deviation.

    Examples
    --------
    >>> from sklearn_icml.privacy import gaussian_noise_scale
    >>> round(gaussian_noise_scale(1.0, 1e-5), 2)
    3.73
    """
    def excess(log_sigma):
        return _gaussian_delta(np.exp(log_sigma), epsilon, 1.0) - delta

    # bracket the root in log(sigma): small sigma leaks (excess > 0), large sigma does not
    lo, hi = -10.0, 10.0
    while excess(lo) <= 0:  # large epsilon: sigma ~ 1 / sqrt(2 epsilon) and below
        lo -= 10.0
        if lo < -700:  # pragma: no cover - unreachable for finite epsilon
            raise ValueError(f"gaussian_noise_scale: no noise scale found for epsilon={epsilon!r}.")
    while excess(hi) > 0:  # pragma: no cover - only for absurdly small delta
        hi *= 2
    sigma = np.exp(brentq(excess, lo, hi, xtol=1e-12, rtol=1e-12))
    # brentq's root may sit a hair on the wrong side; step up until the condition holds
    while _gaussian_delta(sigma, epsilon, 1.0) > delta:
        sigma *= 1 + 1e-12
    with np.errstate(over="ignore", under="ignore"):
        scaled = float(sigma * sensitivity)
    return check_noise_scale(scaled, caller="gaussian_noise_scale", sensitivity=sensitivity, epsilon=epsilon,
                             name="sigma(epsilon, delta) * sensitivity")


@validate_params(
    {"value": ["array-like", Real], "sensitivity": _POSITIVE, "epsilon": EPSILON, "delta": _DELTA,
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
@fill_doc
def gaussian_mechanism(value, *, sensitivity, epsilon, delta, random_state=None):
    """Release ``value`` with analytic-Gaussian noise.

    Parameters
    ----------
    value : float or array-like
        The exact query answer(s), one vector query.
    sensitivity : float
        L2 sensitivity of the query: the largest Euclidean change of
        ``value`` when one record is added or removed.
    epsilon : float
        Privacy parameter epsilon.
    delta : float
        Privacy parameter delta, in (0, 1).
    {{noise_random_state}}

    Returns
    -------
    noisy : float or ndarray
        ``value`` rounded to a power-of-two grid ``g`` plus independent
        discrete Gaussian noise on it, of standard deviation the analytic
        :func:`gaussian_noise_scale` for the sensitivity on the grid
        (``sensitivity + sqrt(size) * g``) at ``delta * (1 - 2**-7)``, rounded
        up to a multiple of ``g`` (at least ``2**13`` steps): every entry is
        a multiple of ``g``.

    Examples
    --------
    >>> from sklearn_icml.privacy import gaussian_mechanism
    >>> gaussian_mechanism([1.0, 2.0, 3.0], sensitivity=1.0, epsilon=1.0, delta=1e-6,
    ...                    random_state=0).shape
    (3,)
    """
    value = check_finite(value, "value", caller="gaussian_mechanism")
    gaussian_noise_scale(epsilon, delta, sensitivity)  # refuses a scale float64 cannot carry
    noise = grid_gaussian(sensitivity, epsilon, delta, n_rounded=max(1, value.size))
    noisy = add_noise(value, noise, noise_random_state(random_state))
    return noisy if noisy.ndim else float(noisy)


@fill_doc
def grid_gaussian(sensitivity, epsilon, delta, *, n_rounded, integer=False):
    """Discrete Gaussian noise that makes a release of L2 ``sensitivity`` ``(epsilon, delta)``-DP on its grid.

    ``sigma`` is the analytic Gaussian one (Balle and Wang, 2018) for the
    sensitivity on the grid at ``delta * (1 - 2**-7)`` (the margin covers the
    discretisation of the tails at ``2**13`` or more grid steps per
    standard deviation), rounded up to a multiple of the grid step. The grid
    step is a power of two at most ``2**-13 sigma``; for a float query also
    at most ``2**-20 sensitivity`` (so the rounding slack, ``sqrt(n_rounded)``
    steps, stays small), for an integer one at most 1 (no slack).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the exact query.
    epsilon, delta : float
        Budget.
    {{grid_rounding_parameters}}

    Returns
    -------
    GridNoise
    """
    delta_cal = delta * (1.0 - DELTA_MARGIN)
    grid = gaussian_grid_step(gaussian_noise_scale(epsilon, delta_cal, sensitivity),
                              None if integer else sensitivity)
    sens = float_at_least(Fraction(sensitivity) + rounding_slack(grid, n_rounded, integer, 2))
    sigma = gaussian_noise_scale(epsilon, delta_cal, sens)
    return GridNoise("gaussian", grid, math.ceil(sigma / grid) * grid, sens)
