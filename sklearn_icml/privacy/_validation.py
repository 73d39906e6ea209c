"""Input checks shared by the public helpers of :mod:`sklearn_icml.privacy`.

The budgets are checked by ``validate_params`` constraints (``EPSILON``:
finite and positive; ``DELTA``: in ``[0, 1)``); data and boxes by the
functions below, whose errors name the parameter and the bad value.
"""

from numbers import Real

import numpy as np

from ..utils._sklearn_private import Interval
from ..utils._validation import MAX_ABS_BOUND, RealNotBool, check_box

__all__ = ["DELTA", "DELTA_POSITIVE", "EPSILON", "NOT_BOOL_REAL", "POSITIVE", "MAX_ABS_BOUND",
           "MAX_NOISE_SCALE", "MIN_NOISE_SCALE",
           "check_box", "check_finite", "check_noise_scale"]



_RealNotBool = RealNotBool


#: epsilon: finite and positive (``inf`` would mean no noise at all, i.e. no privacy); never a boolean
EPSILON = [_RealNotBool(Real, 0, np.inf, closed="neither")]
#: the real-valued interval constraint that refuses booleans, for the estimators' other budget parameters
NOT_BOOL_REAL = _RealNotBool
#: delta of an approximate-DP release: in [0, 1)
DELTA = [Interval(Real, 0, 1, closed="left")]
#: delta of a Gaussian release: in (0, 1)
DELTA_POSITIVE = [Interval(Real, 0, 1, closed="neither")]
#: a finite positive scale or sensitivity (never a boolean)
POSITIVE = [_RealNotBool(Real, 0, np.inf, closed="neither")]
#: the noise scales a mechanism accepts: its grid (a power of two far below the scale) and its largest draws
#: (far above it) must stay normal, finite float64 numbers
MIN_NOISE_SCALE = 2.0 ** -900
MAX_NOISE_SCALE = 2.0 ** 900


def check_finite(value, name, *, caller, ndim=None, dtype=np.float64):
    """``value`` as an array, refusing NaN and infinite entries (and a wrong number of dimensions)."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise ValueError(f"{caller}: {name} must be numeric; got {value!r}.") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{caller}: {name} must have {ndim} dimension(s); got shape {arr.shape}.")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{caller}: {name} must be finite (no NaN or inf); got non-finite values.")
    return arr


def check_noise_scale(scale, *, caller, sensitivity, epsilon, name="sensitivity / epsilon"):
    """``scale`` as a float, refusing a noise scale float64 cannot carry (inf, 0, or near either end)."""
    scale = float(scale)
    if not (np.isfinite(scale) and MIN_NOISE_SCALE <= scale <= MAX_NOISE_SCALE):
        raise ValueError(
            f"{caller}: the noise scale {name} = {scale!r} (sensitivity={sensitivity!r}, epsilon={epsilon!r}) "
            f"must be finite and within [2**-900, 2**900] so that the noise is representable in float64; "
            f"choose epsilon and sensitivity whose ratio lies in that range."
        )
    return scale
