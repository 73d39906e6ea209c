"""Input checks shared by the estimators beyond scikit-learn's ``validate_data``."""

import numpy as np

__all__ = ["FLOAT32_SAFE_MAX", "check_float32_range"]

#: Largest magnitude accepted by estimators that compute in float32: float32's maximum with three orders of
#: magnitude to spare for the sums, squares and products a network or a norm forms on the way.
FLOAT32_SAFE_MAX = float(np.finfo(np.float32).max) / 1e3


def check_float32_range(*arrays, name, labels=("X",), reason="it computes in float32"):
    """Raise a ValueError naming the estimator when an array holds a value beyond :data:`FLOAT32_SAFE_MAX`.

    NaN entries are ignored (estimators that allow NaN check them themselves).

    Parameters
    ----------
    *arrays : ndarray
        The arrays to check (numeric).
    name : str
        The estimator's name, for the message.
    labels : sequence of str, default=("X",)
        One label per array, for the message.
    reason : str, default="it computes in float32"
        Why the limit applies.
    """
    for label, a in zip(labels, arrays, strict=True):
        a = np.asarray(a)
        if a.size and np.nanmax(np.abs(a), initial=0.0) > FLOAT32_SAFE_MAX:
            raise ValueError(f"{name}: {label} holds values up to {np.nanmax(np.abs(a)):.3g}, beyond "
                             f"{FLOAT32_SAFE_MAX:.3g} in magnitude ({reason}); rescale it.")
