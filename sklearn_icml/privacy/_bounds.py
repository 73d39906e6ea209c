"""A private box: per-feature bounds released from noisy histograms over public grids, in two stages.

Stage 1 (half the budget) counts the records' largest absolute coordinate
over a public grid of magnitudes, the same for every dataset: the bin
``[0, 2**-100)`` and the bins ``[2**j, 2**(j + 1))`` for ``j = -100, ...,
497``; magnitudes beyond ``2**498`` (just under ``MAX_ABS_BOUND = 1e150``)
count in the last bin. A record falls in one bin, so the histogram moves by
at most 1 in L1 norm when a record is added or removed (``m`` for a user of
at most ``m`` rows). The upper edge ``M`` of the highest bin whose noisy count
reaches the threshold is the common radius. Stage 2 (the other half) counts
each feature's values over ``N_LINEAR`` equal bins of ``[-M, M]`` (values
beyond counted in the outermost bins): the ``d`` histograms move by at most
``d`` (``m * d``), and a feature's box is the hull of its bins whose noisy
count reaches the threshold (``[-M, M]`` when none does). Both stages use
two-sided geometric noise (integer counts, pure DP). The box's edges are
grid points (``M`` is a power of two and the linear edges are multiples of
``2 M / N_LINEAR``), never a data value.
"""

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from ..utils._sklearn_private import Interval, validate_params
from ._accounting import ledger_entry, split_budget
from ._discrete import noise_random_state
from ._mechanisms import geometric_mechanism
from ._validation import EPSILON, check_finite

__all__ = ["MAGNITUDE_EDGES", "N_LINEAR", "PrivateBounds", "grid_histogram", "private_bounds"]

_MIN_EXP = -100
_MAX_EXP = 498
#: edges of the grid of magnitudes: ``0``, then ``2**-100, 2**-99, ..., 2**498`` (599 bins)
MAGNITUDE_EDGES = np.concatenate([[0.0], np.ldexp(1.0, np.arange(_MIN_EXP, _MAX_EXP + 1))])
_N_MAG = len(MAGNITUDE_EDGES) - 1
#: number of equal bins of the second stage's grid on ``[-M, M]``
N_LINEAR = 32


class PrivateBounds(NamedTuple):
    """The box released by :func:`private_bounds`.

    Parameters
    ----------
    lower : ndarray of shape (n_features,)
        Lower bounds (grid points).
    upper : ndarray of shape (n_features,)
        Upper bounds (grid points), ``upper > lower``.
    ledger : list of dict
        The ledger entries of the two stages (see :func:`ledger_entry`).
    threshold : tuple of int
        The two stages' thresholds ``(t_1, t_2)``.
    radius : float
        The common radius ``M`` of the first stage (a power of two).
    found : bool
        Whether a bin of the first stage reached its threshold (where not,
        ``M`` is the fallback 1).

    See Also
    --------
    private_bounds : The release.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import private_bounds
    >>> box = private_bounds(np.random.RandomState(0).normal(size=(5000, 2)), 1.0, random_state=0)
    >>> lower, upper, *_ = box
    >>> bool(np.all(lower < upper)), box.found
    (True, True)
    """

    lower: np.ndarray
    upper: np.ndarray
    ledger: list
    threshold: tuple
    radius: float
    found: bool


def _linear_edges(radius, n_features):
    """Lower and upper edges of the ``N_LINEAR`` bins of ``[-radius, radius]``, each of shape (N_LINEAR,)."""
    k = np.arange(N_LINEAR + 1) / (N_LINEAR / 2.0) - 1.0  # exact: multiples of 2 / N_LINEAR
    edges = radius * k
    return edges[:-1], edges[1:]


@validate_params({"X": ["array-like"], "radius": [Interval(Real, 0, None, closed="neither"), None]},
                 prefer_skip_nested_validation=True)
def grid_histogram(X, radius=None):
    """Exact counts of ``X`` over the public grids of :func:`private_bounds`.

    The counts are additive over disjoint parts of the data (blocks of a Dask
    collection, say): the histogram of a dataset is the sum of its parts'.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite data.
    radius : float or None, default=None
        None: the first stage's counts, of the records' largest absolute
        coordinate over the bins of ``MAGNITUDE_EDGES`` (beyond the last
        edge counted in the last bin). A positive radius ``M``: the second
        stage's per-feature counts over ``N_LINEAR`` equal bins of ``[-M,
        M]`` (values beyond counted in the outermost bins).

    Returns
    -------
    counts : ndarray of int64 of shape (599,) or (n_features, N_LINEAR)
        The counts of the grid.

    Examples
    --------
    >>> from sklearn_icml.privacy import grid_histogram
    >>> X = [[3.0, -0.5], [-0.25, 0.0]]
    >>> grid_histogram(X).nonzero()[0]  # the bins [2**-2, 2**-1) and [2**1, 2**2)
    array([ 99, 102])
    >>> [row.nonzero()[0].tolist() for row in grid_histogram(X, radius=4.0)]  # bins of width 1/4
    [[15, 28], [14, 16]]
    """
    X = check_finite(X, "X", caller="grid_histogram", ndim=2)
    n, d = X.shape
    if radius is None:
        peak = np.abs(X).max(axis=1, initial=0.0)
        exp = np.frexp(peak)[1] - 1  # floor(log2 |x|) for |x| > 0, exact
        idx = np.where(peak < MAGNITUDE_EDGES[1], 0, np.clip(exp, _MIN_EXP, _MAX_EXP - 1) - _MIN_EXP + 1)
        return np.bincount(idx, minlength=_N_MAG).astype(np.int64)
    r = float(radius)
    u = (np.clip(X, -r, r) + r) / (2.0 * r)  # in [0, 1]
    idx = np.clip(np.floor(u * N_LINEAR), 0, N_LINEAR - 1).astype(np.int64) + np.arange(d) * N_LINEAR
    return np.bincount(idx.ravel(), minlength=d * N_LINEAR).reshape(d, N_LINEAR).astype(np.int64)


def _threshold(epsilon, sensitivity, n_tests, failure_probability):
    """Smallest integer ``t`` with ``P(|K| >= t) <= failure_probability / n_tests`` for the geometric noise ``K``.

    ``P(K = k)`` is proportional to ``a**|k|`` with ``a = exp(-epsilon / sensitivity)``, so
    ``P(|K| >= t) = 2 a**t / (1 + a)`` for ``t >= 1``.
    """
    log_a = -epsilon / sensitivity
    target = math.log(failure_probability / n_tests) + math.log1p(math.exp(log_a)) - math.log(2.0)
    return max(1, math.ceil(target / log_a))


def _passing(counts, epsilon, sensitivity, failure_probability, rng):
    """The threshold and the mask of the bins whose noisy count (geometric noise) reaches it."""
    t = _threshold(epsilon, sensitivity, counts.size, failure_probability)
    noisy = np.asarray(geometric_mechanism(counts, sensitivity=sensitivity, epsilon=epsilon, random_state=rng))
    return t, noisy >= t, noisy


@validate_params(
    {"X": ["array-like", callable], "epsilon": EPSILON,
     "failure_probability": [Interval(Real, 0, 1, closed="neither")],
     "max_rows_per_user": [Interval(Integral, 1, None, closed="left")], "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
def private_bounds(X, epsilon, *, failure_probability=1e-3, max_rows_per_user=1, random_state=None):
    """Per-feature lower and upper bounds of ``X``, released with ``epsilon``-differential privacy.

    Two stages, each on ``epsilon / 2``, each a histogram over a public grid
    released with two-sided geometric noise; a bin *passes* when its noisy
    count reaches the stage's threshold ``t``, the smallest integer with
    ``P(|noise| >= t) <= (beta / 2) / (number of bins)``.

    1. The records' largest absolute coordinate, over the bins ``[0,
       2**-100)`` and ``[2**j, 2**(j + 1))`` (``j = -100, ..., 497``): L1
       sensitivity 1 (a record falls in one bin), ``t_1`` about ``(2 /
       epsilon) ln(4 * 599 / beta)``. The common radius ``M`` is the upper
       edge of the highest passing bin (a power of two).
    2. Each feature over ``N_LINEAR = 32`` equal bins of ``[-M, M]``: L1
       sensitivity ``n_features``, ``t_2`` about ``(2 n_features / epsilon)
       ln(4 * 32 n_features / beta)``. A feature's box is the hull of its
       passing bins, ``[-M, M]`` when none passes; a side of the hull
       widens to ``M`` when the bins beyond it hold together a noisy mass
       of ``t_2`` or more (records spread thinly over many bins, none of
       which reaches ``t_2``).

    Guarantee: with probability at least ``1 - beta`` (``beta =
    failure_probability``) every noise draw is below its threshold in
    magnitude, so in each stage every bin holding ``2 t`` records or more
    passes and no empty bin passes. Then every record outside ``[-M, M]``
    lies in a magnitude bin of fewer than ``2 t_1`` records, the box
    contains every linear bin of ``2 t_2`` records or more, and its edges
    are edges of non-empty bins: the records it leaves out (which the
    estimators clip) lie in bins of fewer than ``2 t`` records. When no
    magnitude bin passes (roughly fewer than ``t_1`` records), ``M`` is the
    data-independent fallback 1 and ``found`` is False: pass public bounds
    (or standardise with public parameters) then. The edges are grid
    points, never data values. One radius serves every feature: features of
    much smaller scale than the largest get boxes of at least ``2 M / 32``.

    Read more in the :ref:`User Guide <privacy>`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or callable
        Private data (finite), or, for data held elsewhere (the blocks of a
        Dask collection), a callable ``X(radius)`` that returns
        :func:`grid_histogram` of the data for that ``radius`` (None, then a
        positive float).
    epsilon : float
        Privacy budget of the release (pure DP: no delta).
    failure_probability : float, default=1e-3
        ``beta`` of the guarantee above.
    max_rows_per_user : int, default=1
        Rows one user may hold (user-level privacy): the sensitivities, and
        the noise, grow ``max_rows_per_user`` times.
    random_state : int, RandomState instance or None, default=None
        Source of the noise (a fixed seed reproduces the release, for tests).

    Returns
    -------
    bounds : PrivateBounds
        Named tuple ``(lower, upper, ledger, threshold, radius, found)``: the
        box (arrays of shape (n_features,), ``lower < upper``), the ledger
        entries of the two stages (see :func:`ledger_entry`; their epsilons
        add up to ``epsilon``), ``(t_1, t_2)``, ``M``, and whether a
        magnitude bin passed (functions of the noisy counts only: part of
        the release).

    See Also
    --------
    grid_histogram : The exact counts, additive over parts of the data.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import private_bounds
    >>> X = np.random.RandomState(0).normal(size=(5000, 2)) * [1.0, 30.0] + [0.0, 100.0]
    >>> box = private_bounds(X, epsilon=1.0, random_state=0)
    >>> box.radius
    256.0
    >>> bool(np.all(box.lower < [-1, 50]) and np.all(box.upper > [1, 150]))
    True
    >>> bool(np.mean((X >= box.lower) & (X <= box.upper)) > 0.95)  # the few records beyond are clipped
    True
    >>> sum(e["epsilon"] for e in box.ledger)
    1.0
    """
    counts_of = X if callable(X) else None
    if counts_of is None:
        data = check_finite(X, "X", caller="private_bounds", ndim=2)

        def counts_of(radius):
            return grid_histogram(data, radius)

    rng = noise_random_state(random_state)  # None: cryptographic noise
    m = int(max_rows_per_user)
    eps1, eps2 = split_budget(float(epsilon), [1.0, 1.0])
    beta = float(failure_probability) / 2.0
    counts = np.asarray(counts_of(None), dtype=np.int64)
    if counts.shape != (_N_MAG,):
        raise ValueError(f"private_bounds: the first stage's counts must have shape ({_N_MAG},); got "
                         f"{counts.shape}.")
    t1, passing, _ = _passing(counts, eps1, m, beta, rng)
    found = bool(passing.any())
    radius = float(MAGNITUDE_EDGES[np.flatnonzero(passing)[-1] + 1]) if found else 1.0
    counts = np.asarray(counts_of(radius), dtype=np.int64)
    if counts.ndim != 2 or counts.shape[1] != N_LINEAR or counts.shape[0] < 1:
        raise ValueError(f"private_bounds: the second stage's counts must have shape (n_features, {N_LINEAR}); "
                         f"got {counts.shape}.")
    d = counts.shape[0]
    t2, passing, noisy = _passing(counts, eps2, m * d, beta, rng)
    edge_lo, edge_hi = _linear_edges(radius, d)
    lower, upper = np.full(d, -radius), np.full(d, radius)
    for f in range(d):
        bins = np.flatnonzero(passing[f])
        if not len(bins):
            continue
        lo, hi = bins[0], bins[-1]
        # a side keeps the hull's edge unless the bins beyond it hold, together, a noisy mass clearly above
        # their noise (records spread thinly over many bins, none reaching t_2): then it widens to the radius
        if noisy[f, :lo].sum() < t2:
            lower[f] = edge_lo[lo]
        if noisy[f, hi + 1:].sum() < t2:
            upper[f] = edge_hi[hi]
    ledger = [ledger_entry("private box, stage 1 (noisy histogram of the records' largest magnitude)", "geometric",
                           sensitivity=float(m), scale=m / eps1, epsilon=eps1),
              ledger_entry(f"private box, stage 2 ({d} noisy histograms over [-M, M])", "geometric",
                           sensitivity=float(m * d), scale=m * d / eps2, epsilon=eps2)]
    return PrivateBounds(lower, upper, ledger, (t1, t2), radius, found)
