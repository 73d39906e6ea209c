"""The previous calibration of the local model's Gaussian sums, emulated, to measure it beside the current one.

The local model's sums were calibrated with L2 sensitivity ``sqrt(2) ||h||`` (a record against the empty
record) and always used Gaussian noise; a replaced record needs ``2 ||h||``. :func:`previous_local_calibration`
patches the library's sensitivity and noise choice back to that, so that a benchmark can fit both in one
process. Benchmarks only: the previous calibration spent more than the ``epsilon`` it reported.
"""

import contextlib
import math
from unittest import mock

import numpy as np

import sklearn_icml.privacy._sums as _sums
from sklearn_icml.cluster import PrivateKMeans
from sklearn_icml.privacy._sensitivity import box_sum_sensitivity


def _previous_sensitivity(half, norm, model):
    if norm == 2 and model == "local":
        return max(math.sqrt(2.0) * float(np.linalg.norm(half)), np.finfo(float).tiny)
    return box_sum_sensitivity(half, norm, model)


@contextlib.contextmanager
def previous_local_calibration():
    """Inside the block, ``PrivateKMeans(privacy="local")`` fits with the previous calibration."""
    with mock.patch.object(_sums, "box_sum_sensitivity", _previous_sensitivity), \
            mock.patch.object(PrivateKMeans, "_sum_delta", lambda self, eps, delta: float(delta)):
        yield
