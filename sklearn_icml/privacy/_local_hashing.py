"""Local model of the quadtree: optimised local hashing (OLH) reports, one random level per record.

No curator sees the data. Each record picks one level uniformly at random (a
choice that does not depend on the record) and reports its cell id at that
level through optimised local hashing (Wang, Blocki, Li and Jha, USENIX
Security 2017): a random hash of its cell into ``g`` buckets, kept with
probability ``p = e^epsilon / (e^epsilon + g - 1)`` and otherwise replaced by
a uniformly random other bucket. For any two inputs and any output, the
probabilities differ by at most the factor ``p / ((1 - p) / (g - 1)) =
e^epsilon`` whatever ``g`` is, so each report is ``epsilon``-LDP (the worst
pair: two cells hashed to different buckets, the output being one of them).
OLH's variance-optimal ``g = e^epsilon + 1`` is capped at ``2**24`` so that
large budgets stay in integer range (the collision error, about ``n / g``,
is then negligible).

The server estimates any cell's count from the reports (``O(n_reports *
cells)`` work; torch on a GPU for large ``n``): unbiased, with standard
deviation of order ``sqrt(n * n_levels) / epsilon`` for small epsilon.
"""

import math
from numbers import Integral

import numpy as np

from ..utils._cells import pack_keys
from ..utils._sklearn_private import Interval, validate_params
from ._hashing import hash_np, hash_torch
from ._validation import EPSILON

__all__ = ["local_count_fn", "olh_count_std", "olh_parameters"]

#: Largest number of hash buckets (the variance-optimal count, e^epsilon + 1, explodes past epsilon ~ 17).
MAX_BUCKETS = 1 << 24


#: Largest local budget spent by a report: beyond about 53 the keep probability p rounds to exactly 1 in float64 (a
#: report never randomised, an infinite privacy loss); a larger budget is spent as this one, a stronger guarantee.
MAX_LOCAL_EPSILON = 50.0


def _olh(epsilon):
    epsilon = min(float(epsilon), MAX_LOCAL_EPSILON)
    if epsilon >= math.log(MAX_BUCKETS):
        g = MAX_BUCKETS
    else:
        g = max(2, min(int(round(math.exp(epsilon))) + 1, MAX_BUCKETS))
    # p = e / (e + g - 1), written so that it does not overflow for large epsilon
    p = 1.0 / (1.0 + (g - 1) * math.exp(-epsilon))
    return g, p


@validate_params({"epsilon": EPSILON}, prefer_skip_nested_validation=True)
def olh_parameters(epsilon):
    """Bucket count and keep probability of optimised local hashing.

    Parameters
    ----------
    epsilon : float
        Local privacy budget of one report, positive. A budget above 50 is
        spent as 50 (beyond about 53 the keep probability rounds to 1 in
        floating point and the report would not be randomised at all), which
        is a stronger guarantee than the one asked for.

    Returns
    -------
    g : int
        Number of hash buckets, ``round(e^epsilon) + 1`` (at least 2, at
        most ``2**24``).
    p : float
        Probability that a report keeps its true bucket,
        ``e^epsilon / (e^epsilon + g - 1)``, always below 1.

    Examples
    --------
    >>> from sklearn_icml.privacy import olh_parameters
    >>> olh_parameters(1.0)
    (4, 0.475...)
    """
    return _olh(epsilon)


@validate_params(
    {"n_reports": [Interval(Integral, 0, None, closed="left")],
     "n_levels": [Interval(Integral, 1, None, closed="left")], "epsilon": EPSILON},
    prefer_skip_nested_validation=True,
)
def olh_count_std(n_reports, n_levels, epsilon):
    """Standard deviation of one estimated count of the local quadtree (an empty cell).

    Each of the ``n_reports / n_levels`` reports of a level hits a given
    empty cell's bucket with probability ``1 / g``; the estimate rescales by
    ``n_levels / (p - 1 / g)``.

    Parameters
    ----------
    n_reports : int
        Number of records (reports).
    n_levels : int
        Depth of the tree; each record reports one level.
    epsilon : float
        Budget of one report.

    Returns
    -------
    std : float
        ``sqrt(n_reports * n_levels * (1/g) * (1 - 1/g)) / (p - 1/g)``.

    Examples
    --------
    >>> from sklearn_icml.privacy import olh_count_std
    >>> round(olh_count_std(10000, 4, 1.0), 1)
    384.3
    """
    g, p = _olh(epsilon)
    return math.sqrt(n_reports * n_levels * (1.0 / g) * (1.0 - 1.0 / g)) / (p - 1.0 / g)


def olh_reports(Q, n_levels, epsilon, rng):
    """Every record's report: (level, hash seed, perturbed bucket)."""
    n, d = Q.shape
    g, p = _olh(epsilon)
    level = rng.randint(1, n_levels + 1, size=n)
    seeds = rng.randint(0, 2 ** 64, size=n, dtype=np.uint64)
    keys = np.empty(n, dtype=np.int64)
    for lv in range(1, n_levels + 1):
        sel = level == lv
        keys[sel] = pack_keys(Q[sel] >> (n_levels - lv), lv)
    true_bucket = hash_np(seeds, keys) % g
    keep = rng.uniform(size=n) < p
    other = (true_bucket + rng.randint(1, g, size=n)) % g
    return level, seeds, np.where(keep, true_bucket, other).astype(np.int64)


def olh_support(seeds, buckets, keys, g, device=None, chunk=1 << 22):
    """For each key: how many reports' hashes of it equal their bucket (O(n_reports * n_keys))."""
    n, m = len(seeds), len(keys)
    out = np.zeros(m, dtype=np.float64)
    if n == 0 or m == 0:
        return out
    step = max(1, chunk // n)
    if device is None:
        for start in range(0, m, step):
            k = keys[start:start + step]
            out[start:start + step] = ((hash_np(seeds[:, None], k[None, :]) % g) == buckets[:, None]).sum(0)
        return out
    import torch

    s = torch.from_numpy(seeds.view(np.int64).copy()).to(device)[:, None]
    b = torch.from_numpy(buckets).to(device)[:, None]
    kt = torch.from_numpy(np.ascontiguousarray(keys, dtype=np.int64)).to(device)
    for start in range(0, m, step):
        k = kt[start:start + step][None, :]
        out[start:start + step] = ((hash_torch(s, k) % g) == b).sum(0).cpu().numpy()
    return out


def local_count_fn(Q, n_levels, epsilon, rng, device=None):
    """Counts estimated from simulated OLH reports; returns ``(count_fn, noise_std)``."""
    n = len(Q)
    g, p = _olh(epsilon)
    level, seeds, buckets = olh_reports(Q, n_levels, epsilon, rng)

    def count_fn(lv, cells, keys):
        sel = level == lv
        n_level = int(sel.sum())
        if n_level == 0:
            return np.zeros(len(keys))
        support = olh_support(seeds[sel], buckets[sel], keys, g, device)
        return (support - n_level / g) / (p - 1.0 / g) * (n / n_level)

    return count_fn, olh_count_std(n, n_levels, epsilon)
