"""Noisy per-group counts and sums of bounded vectors."""

from numbers import Integral

import numpy as np

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ._accounting import ledger_entry
from ._discrete import (
    add_noise,
    gaussian_on_grid,
    grid_index,
    grid_laplace,
    grid_noise_integers,
    noise_random_state,
)
from ._mechanisms import grid_gaussian
from ._sensitivity import box_sum_sensitivity, group_count_sensitivity
from ._validation import DELTA, EPSILON, POSITIVE, check_box, check_finite

__all__ = ["noisy_group_sums"]


@validate_params(
    {"X": ["array-like"], "groups": ["array-like"], "n_groups": [Interval(Integral, 1, None, closed="left")],
     "bounds": [tuple, list], "epsilon_count": EPSILON, "epsilon_sum": EPSILON, "delta": DELTA,
     "model": [StrOptions({"central", "local"})], "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
@fill_doc
def noisy_group_sums(X, groups, n_groups, *, bounds, epsilon_count, epsilon_sum, delta=0.0, model="central",
                     random_state=None):
    """Differentially private size and sum of every group of records.

    Each record belongs to one group, so the groups are disjoint and the
    releases of all groups together cost what one group costs (parallel
    composition). Records are clipped to the public box ``bounds`` and
    centred on its centre ``c``; the released sums are sums of ``x - c``, so
    a record moves a sum by at most the box's half-diagonal.

    * counts: Laplace noise of scale ``1 / epsilon_count`` (L1 sensitivity 1);
    * sums: with ``delta > 0``, Gaussian noise calibrated by the analytic
      Gaussian mechanism to the L2 sensitivity ``||h||_2`` (``h`` the
      half-widths of the box); with ``delta == 0``, Laplace noise of scale
      ``||h||_1 / epsilon_sum`` per coordinate (pure DP).

    All noise is exact discrete noise on a power-of-two grid (see
    :func:`laplace_mechanism`): every released count and sum is a multiple
    of its grid step, and the sums' sensitivities include the rounding to
    that grid (one step per coordinate, a relative ``2**-30`` for Laplace and
    ``2**-13`` for Gaussian noise), which the ledger reports.

    In the local model every record randomises its own contribution (one-hot
    group indicator and the indicator times ``x - c``) before sending it, so
    the sensitivities are those of a record replaced by any other: 2 for the
    counts (a record moved to another group) and ``2 ||h||`` for the sums in
    both norms (two records of the same group at opposite corners of the box
    differ by ``2 h``), and the noise of a total grows like
    ``sqrt(n_samples)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Records.
    groups : array-like of shape (n_samples,)
        Group index of each record, in ``[0, n_groups)``.
    n_groups : int
        Number of groups.
    bounds : tuple (lower, upper)
        Public box, scalars or arrays of shape (n_features,): finite, with
        ``lower < upper``.
    epsilon_count : float
        Budget of the counts.
    epsilon_sum : float
        Budget of the sums.
    delta : float, default=0.0
        Delta of the sums; 0 gives pure DP with Laplace noise.
    model : {"central", "local"}, default="central"
        Who adds the noise: the curator, or every record itself.
    {{noise_random_state}}

    Returns
    -------
    counts : ndarray of shape (n_groups,)
        Noisy group sizes.
    sums : ndarray of shape (n_groups, n_features)
        Noisy sums of ``x - c``; ``c + sums / counts`` estimates the means.
    center : ndarray of shape (n_features,)
        The box centre ``c``.
    ledger : list of dict
        What was released, for :class:`Accountant` (see :func:`ledger_entry`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import noisy_group_sums
    >>> X = np.random.RandomState(0).uniform(-1, 1, size=(1000, 2))
    >>> counts, sums, center, ledger = noisy_group_sums(
    ...     X, (X[:, 0] > 0).astype(int), 2, bounds=(-1, 1), epsilon_count=0.5, epsilon_sum=0.5,
    ...     delta=1e-6, random_state=0)
    >>> counts.shape, sums.shape, sum(e["epsilon"] for e in ledger)
    ((2,), (2, 2), 1.0)
    """
    caller = "noisy_group_sums"
    X = check_finite(X, "X", caller=caller, ndim=2)
    groups = check_finite(groups, "groups", caller=caller, ndim=1)
    if groups.shape != (X.shape[0],):
        raise ValueError(f"{caller}: expects X of shape (n, d) and groups of shape (n,); got {X.shape} and "
                         f"{groups.shape}.")
    if groups.size and not np.all(groups == np.round(groups)):
        raise ValueError(f"{caller}: groups must be integer group indices; got fractional values.")
    if groups.size and (groups.min() < 0 or groups.max() >= n_groups):
        raise ValueError(f"{caller}: groups must lie in [0, {n_groups}); got values in [{groups.min():g}, "
                         f"{groups.max():g}].")
    n, d = X.shape
    lower, upper = check_box(bounds, d, caller=caller)
    center = (lower + upper) / 2.0
    half = (upper - lower) / 2.0
    rng = noise_random_state(random_state)
    Z = np.clip(X, lower, upper) - center
    groups = groups.astype(np.int64)
    counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
    sums = np.zeros((n_groups, d))
    np.add.at(sums, groups, Z)
    counts, sums, ledger = release_group_totals(counts, sums, n, half, epsilon_count=epsilon_count,
                                                epsilon_sum=epsilon_sum, delta=delta, model=model, rng=rng)
    return counts, sums, center, ledger


@validate_params(
    {"counts": ["array-like"], "sums": ["array-like"], "n": [Interval(Integral, 0, None, closed="left")],
     "half": POSITIVE, "epsilon_count": EPSILON, "epsilon_sum": EPSILON, "delta": DELTA,
     "model": [StrOptions({"central", "local"})], "rng": "no_validation"},
    prefer_skip_nested_validation=True,
)
def release_group_totals(counts, sums, n, half, *, epsilon_count, epsilon_sum, delta, model, rng):
    """Release exact per-group totals with the noise of :func:`noisy_group_sums`.

    The totals (counts, sums of ``x - c``) of ``n`` records may be reduced
    elsewhere (blocks of a Dask collection): they are released by the same
    mechanism, with the same draws from ``rng``, as in :func:`noisy_group_sums`.

    Parameters
    ----------
    counts : ndarray of shape (n_groups,)
        Exact number of records per group.
    sums : ndarray of shape (n_groups, n_features)
        Exact sums of the records' offsets ``x - c`` per group.
    n : int
        Number of records.
    half : float
        Half-width of the box the offsets lie in.
    epsilon_count : float
        Budget of the counts.
    epsilon_sum : float
        Budget of the sums.
    delta : float
        0 for Laplace noise on the sums, else the delta of Gaussian noise.
    model : {"central", "local"}
        The trust model.
    rng : numpy.random.RandomState
        Uniform integers, from :func:`noise_random_state`.

    Returns
    -------
    counts : ndarray of shape (n_groups,)
        Noisy counts.
    sums : ndarray of shape (n_groups, n_features)
        Noisy sums.
    ledger : list of dict
        The ledger entries of the two releases.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import noise_random_state, release_group_totals
    >>> counts, sums, ledger = release_group_totals(
    ...     np.array([3.0, 4.0]), np.array([[0.5, -0.5], [1.0, 0.0]]), 7, 1.0, epsilon_count=1.0,
    ...     epsilon_sum=1.0, delta=0.0, model="central", rng=noise_random_state(0))
    >>> counts.shape, sums.shape, [entry["label"] for entry in ledger]
    ((2,), (2, 2), ['group counts', 'group sums'])
    """
    counts = check_finite(counts, "counts", caller="release_group_totals", ndim=1)
    sums = check_finite(sums, "sums", caller="release_group_totals", ndim=2)
    if len(counts) != len(sums):
        raise ValueError(f"release_group_totals: counts and sums must have one row per group; got {len(counts)} "
                         f"counts and {len(sums)} rows of sums.")
    n_groups, d = sums.shape
    local = model != "central"
    # central: a record changes one count and one group's d sums; local: a record's message is replaced, so
    # two counts and two groups' sums change
    count_noise = grid_laplace(group_count_sensitivity(model), epsilon_count, n_rounded=2 if local else 1,
                               integer=True)
    use_gauss = delta > 0
    if use_gauss:
        sum_noise = grid_gaussian(box_sum_sensitivity(half, 2, model), epsilon_sum, delta,
                                  n_rounded=2 * d if local else d)
    else:
        sum_noise = grid_laplace(box_sum_sensitivity(half, 1, model), epsilon_sum, n_rounded=2 * d if local else d)
    count_sens, count_scale = count_noise.sensitivity, count_noise.scale
    sum_sens, sum_scale = sum_noise.sensitivity, sum_noise.scale

    if not local:
        counts = add_noise(counts, count_noise, rng)
        sums = add_noise(sums, sum_noise, rng)
    else:
        # every record adds grid noise to its own (n_groups,) indicator and (n_groups, d) block; the totals of
        # the integer noise are summed in chunks, then added to the totals on the grid
        chunk = max(1, (1 << 21) // max(1, n_groups * (d + 1)))
        count_z = np.zeros(n_groups, dtype=np.int64)
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            count_z += grid_noise_integers(count_noise, m * n_groups, rng).reshape(m, n_groups).sum(0)
        counts = (grid_index(counts, count_noise.grid) + count_z) * count_noise.grid
        if use_gauss:  # the total of n records' Gaussian noise: one discrete Gaussian of sigma sqrt(n), drawn directly
            sums = add_noise(sums, gaussian_on_grid(sum_scale * np.sqrt(max(n, 1))), rng)
        else:
            sum_z = np.zeros((n_groups, d), dtype=np.int64)
            for start in range(0, n, chunk):
                m = min(chunk, n - start)
                sum_z += grid_noise_integers(sum_noise, m * n_groups * d, rng).reshape(m, n_groups, d).sum(0)
            sums = (grid_index(sums, sum_noise.grid) + sum_z) * sum_noise.grid

    kind = "gaussian" if use_gauss else "laplace"
    label = "" if model == "central" else " (local, per record)"
    ledger = [
        ledger_entry("group counts" + label, "laplace", sensitivity=count_sens, scale=count_scale,
                     epsilon=epsilon_count),
        ledger_entry("group sums" + label, kind, sensitivity=sum_sens, scale=sum_scale, epsilon=epsilon_sum,
                     delta=delta if use_gauss else 0.0),
    ]
    return counts, sums, ledger
