"""Quadtree cell counts and sums under continual observation (the binary-tree mechanism).

Records arrive in batches, one per time step, and the histogram is
re-released after every step. Every cell count is kept by the binary-tree
mechanism (Dwork, Naor, Pitassi and Rothblum, STOC 2010; Chan, Shi and Song,
2011), so the noise of a count after ``T`` steps grows like
``log(T)^1.5 / epsilon`` instead of ``T / epsilon``.
"""

import math
from numbers import Integral

import numpy as np

from ..utils._cells import check_geometry, level_counts, lookup, pack_keys, unit_cells
from ..utils._sklearn_private import Interval, validate_params
from ._accounting import ledger_entry
from ._discrete import CounterDraws, add_noise, grid_laplace
from ._hashing import hashed_bits
from ._mechanisms import grid_gaussian
from ._quadtree import QuadtreeHistogram, grow_tree
from ._sensitivity import continual_count_sensitivity, continual_sum_sensitivity
from ._validation import DELTA, EPSILON, POSITIVE, check_finite

__all__ = ["ContinualQuadtreeHistogram", "dyadic_prefix"]


def dyadic_prefix(t):
    """Nodes ``(height, index)`` of the binary tree whose intervals partition steps ``[1, t]``."""
    nodes = []
    for height in range(t.bit_length() - 1, -1, -1):
        if t >> height & 1:
            nodes.append((height, (t >> height) - 1))
    return nodes


class ContinualQuadtreeHistogram:
    """Quadtree cell counts (and optional cell sums) under continual observation.

    Read more in the :ref:`User Guide <privacy>`.

    Batches of records arrive one per time step (:meth:`add_step`); after any
    step, the noisy prefix count of *any* cell at any level can be read
    (:meth:`counts`), and :meth:`grow` releases a pruned tree like
    :func:`private_quadtree_histogram`. Each cell count is kept by the
    binary-tree mechanism: every dyadic interval of steps holds the cell's
    count in it plus Laplace noise, and a prefix count sums at most
    ``floor(log2 T) + 1`` of them. A record enters one cell per level and
    ``H = floor(log2 max_steps) + 1`` intervals per cell, so the L1
    sensitivity of everything released over the whole stream is
    ``(n_levels + 1) * H`` (levels 0..n_levels) and the Laplace scale is that
    over ``epsilon``: the whole sequence of releases is ``epsilon``-DP.

    Optionally (``sums=True``) the d-dimensional sums of the records'
    ``values`` per cell at every level 1..n_levels are kept the same way,
    ``(sum_epsilon, sum_delta)``-DP: with Gaussian noise (L2 sensitivity
    ``sum_sensitivity * sqrt(n_levels * H)``) when ``sum_delta > 0``, with
    Laplace noise (L1 sensitivity ``sum_l1_sensitivity * n_levels * H``) when
    ``sum_delta`` is 0 or None.

    The noise of each (cell, interval) is exact discrete noise on a
    power-of-two grid (as :func:`laplace_mechanism`'s), drawn from a
    counter-based stream of uniform integers under a secret 64-bit seed, so
    it exists for every cell without being stored, and a cell read twice
    gets the same noise. The sums' sensitivities include their rounding to
    the grid (one step for each of the ``n_levels * H * n_values`` sums a
    record enters). The seed is the secret: draw it from a cryptographic
    source (``secrets.randbits(63)``) for a release, from a ``random_state``
    for reproducible tests; the counter-based mixer (SplitMix64's finaliser)
    is fast, not cryptographic.

    Parameters
    ----------
    n_dims : int
        Dimension of the box.
    n_levels : int
        Depth of the tree.
    max_steps : int
        Largest number of steps the budget covers.
    epsilon : float
        Budget of all counts over the whole stream.
    seed : int
        Secret seed of the noise (draw it from a ``random_state``).
    sums : bool, default=False
        Whether per-cell sums of the records' values are kept.
    sum_epsilon : float, default=None
        Budget of the sums.
    sum_delta : float, default=None
        Delta of the sums; 0 or None for pure DP (Laplace).
    sum_sensitivity : float, default=None
        Largest Euclidean norm of one record's value (Gaussian sums).
    sum_l1_sensitivity : float, default=None
        Largest L1 norm of one record's value (Laplace sums).
    n_values : int, default=1
        Number of columns of the records' values (sums), which sets the
        rounding slack of the sums on their grid; :meth:`add_step` refuses
        wider values.

    Attributes
    ----------
    n_steps : int
        Steps seen so far.
    count_scale : float
        Laplace scale of one (cell, interval) count.
    sum_scale : float or None
        Noise scale (Gaussian sigma or Laplace b) of one (cell, interval) sum
        coordinate.
    sum_mechanism : {"gaussian", "laplace"} or None
        Noise of the sums.
    count_sensitivity : float
        L1 sensitivity of all (cell, interval) counts of the stream.
    sum_sensitivity : float or None
        Sensitivity (L2 for Gaussian, L1 for Laplace) of all (cell,
        interval) sums.
    ledger : list of dict
        What the whole stream spends (see :func:`ledger_entry`).

    See Also
    --------
    private_quadtree_histogram : The one-shot central and local versions.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import ContinualQuadtreeHistogram
    >>> stream = ContinualQuadtreeHistogram(2, n_levels=3, max_steps=8, epsilon=1.0, seed=0)
    >>> rng = np.random.RandomState(0)
    >>> for _ in range(3):
    ...     _ = stream.add_step(rng.uniform(0.2, 0.3, size=(500, 2)))
    >>> root = stream.counts(0, np.zeros(1, dtype=np.int64))
    >>> bool(abs(root[0] - 1500) < 200)
    True
    """

    @validate_params(
        {"n_dims": [Interval(Integral, 1, 62, closed="both")], "n_levels": [Interval(Integral, 1, 62, closed="both")],
         "max_steps": [Interval(Integral, 1, 1 << 40, closed="both")], "epsilon": EPSILON,
         "seed": [Interval(Integral, None, None, closed="neither")], "sums": ["boolean"],
         "sum_epsilon": EPSILON + [None], "sum_delta": DELTA + [None], "sum_sensitivity": POSITIVE + [None],
         "sum_l1_sensitivity": POSITIVE + [None], "n_values": [Interval(Integral, 1, None, closed="left")]},
        prefer_skip_nested_validation=True,
    )
    def __init__(self, n_dims, n_levels, max_steps, epsilon, seed, *, sums=False, sum_epsilon=None,
                 sum_delta=None, sum_sensitivity=None, sum_l1_sensitivity=None, n_values=1):
        caller = type(self).__name__
        check_geometry(n_dims, n_levels)
        self.n_dims = int(n_dims)
        self.n_levels = int(n_levels)
        self.max_steps = int(max_steps)
        self.epsilon = float(epsilon)
        self.seed = np.uint64(int(seed) % (1 << 64))
        self.height = self.max_steps.bit_length()  # floor(log2 T) + 1 intervals per step
        self.n_values = int(n_values)
        count_sensitivity = continual_count_sensitivity(self.n_levels, self.max_steps)
        # a record enters (n_levels + 1) * H counts, integers: no rounding slack while the grid step is at most 1
        self._count_noise = grid_laplace(count_sensitivity, self.epsilon, n_rounded=int(count_sensitivity),
                                         integer=True)
        self.count_sensitivity = self._count_noise.sensitivity
        self.count_scale = self._count_noise.scale
        self._sum_noise = None
        n_sums = self.n_levels * self.height * self.n_values  # the sums one record enters over the stream
        self.keep_sums = bool(sums)
        self.sum_scale = None
        self.sum_mechanism = None
        self.sum_sensitivity = None
        self.sum_delta = 0.0
        # the declared per-record bounds of the values, which add_step enforces by clipping
        self._value_l2 = None if sum_sensitivity is None else float(sum_sensitivity)
        self._value_l1 = None if sum_l1_sensitivity is None else float(sum_l1_sensitivity)
        ledger = [ledger_entry("tree counts (binary-tree mechanism over the stream)", "laplace",
                               sensitivity=self.count_sensitivity, scale=self.count_scale, epsilon=self.epsilon)]
        if self.keep_sums:
            if sum_epsilon is None:
                raise ValueError(f"{caller}: sums=True needs sum_epsilon.")
            if sum_delta:
                if sum_sensitivity is None:
                    raise ValueError(f"{caller}: Gaussian sums (sum_delta > 0) need sum_sensitivity.")
                self.sum_mechanism = "gaussian"
                self.sum_delta = float(sum_delta)
                self._sum_noise = grid_gaussian(
                    continual_sum_sensitivity(sum_sensitivity, 2, self.n_levels, self.max_steps), sum_epsilon,
                    sum_delta, n_rounded=n_sums)
            else:
                if sum_l1_sensitivity is None:
                    raise ValueError(f"{caller}: Laplace sums (sum_delta 0 or None) need sum_l1_sensitivity.")
                self.sum_mechanism = "laplace"
                self._sum_noise = grid_laplace(
                    continual_sum_sensitivity(sum_l1_sensitivity, 1, self.n_levels, self.max_steps), sum_epsilon,
                    n_rounded=n_sums)
            self.sum_sensitivity, self.sum_scale = self._sum_noise.sensitivity, self._sum_noise.scale
            ledger.append(ledger_entry("cell sums (binary-tree mechanism over the stream)", self.sum_mechanism,
                                       sensitivity=self.sum_sensitivity, scale=self.sum_scale,
                                       epsilon=sum_epsilon, delta=self.sum_delta))
        self.ledger = ledger
        self.n_steps = 0
        self._steps = []  # per step: list over levels 0..L of (keys, counts); plus (keys, sums) or None

    def add_step(self, U, values=None):
        """Add one batch of records (one time step).

        Parameters
        ----------
        U : array-like of shape (n_records, n_dims)
            Records in the unit cube (clipped).
        values : array-like of shape (n_records, n_values), default=None
            Per-record vectors summed per cell at every level. Each is clipped
            to the declared bounds before it is summed: scaled down to
            Euclidean norm ``sum_sensitivity`` and to L1 norm
            ``sum_l1_sensitivity`` (those declared), so a record beyond them
            is released as a record on them and the guarantee does not
            depend on the caller.

        Returns
        -------
        self : ContinualQuadtreeHistogram
            The histogram, for chaining.
        """
        if self.n_steps >= self.max_steps:
            raise ValueError(f"the stream's budget covers max_steps={self.max_steps} steps; all were used.")
        caller = f"{type(self).__name__}.add_step"
        U = check_finite(U, "U", caller=caller, ndim=2)
        if U.shape[1] != self.n_dims:
            raise ValueError(f"{caller}: U must have {self.n_dims} columns; got shape {U.shape}.")
        if self.keep_sums and values is not None:
            values = check_finite(values, "values", caller=caller, ndim=2)
            if len(values) != len(U):
                raise ValueError(f"{caller}: values must have one row per record; got {len(values)} for {len(U)}.")
            if values.shape[1] > self.n_values:
                raise ValueError(f"{caller}: values must have at most n_values={self.n_values} columns; got "
                                 f"{values.shape[1]}.")
            values = clip_rows(values, self._value_l2, self._value_l1)
        else:
            values = None
        per_level, sums = step_tables(U, self.n_levels, values)
        return self.add_step_tables(per_level, sums)

    def add_step_tables(self, per_level, sums=None):
        """Add one time step from its exact per-cell tables.

        The tables are those :meth:`add_step` computes from the records; tables
        of disjoint blocks of the same step merge by adding their counts and
        sums, so a step held by a Dask collection is added without gathering
        its records.

        Parameters
        ----------
        per_level : list of (keys, counts)
            Levels 0 to ``n_levels``: sorted packed cell keys and exact counts.
        sums : list of (keys, sums) or None
            Levels 1 to ``n_levels`` (index 0 is None): exact per-cell sums
            of values within the declared bounds (see :meth:`add_step`, which
            clips). Tables that no such values can give (a cell's sum beyond
            its count times the declared bound) are refused with a
            ``ValueError``.

        Returns
        -------
        histogram : ContinualQuadtreeHistogram
            The histogram, for chaining.
        """
        if self.n_steps >= self.max_steps:
            raise ValueError(f"the stream's budget covers max_steps={self.max_steps} steps; all were used.")
        if self.keep_sums and sums is not None:
            self._check_sum_tables(per_level, sums)
        self._steps.append((per_level, sums if self.keep_sums else None))
        self.n_steps += 1
        return self

    def _check_sum_tables(self, per_level, sums):
        """Refuse per-cell sums beyond ``count * bound`` in a declared norm: no clipped records give them."""
        bounds = [(2, self._value_l2), (1, self._value_l1)]
        for level in range(1, min(len(sums), len(per_level))):
            if sums[level] is None:
                continue
            keys, cell_sums = sums[level]
            counts = lookup(per_level[level][0], per_level[level][1], np.asarray(keys, dtype=np.int64))
            for order, bound in bounds:
                if bound is None or not len(keys):
                    continue
                norms = np.linalg.norm(np.asarray(cell_sums, dtype=np.float64), ord=order, axis=1)
                if np.any(norms > counts * bound * (1 + 1e-9)):
                    raise ValueError(
                        f"{type(self).__name__}.add_step_tables: a cell's sum at level {level} exceeds its count "
                        f"times the declared per-record bound {bound!r} (L{order}); clip the values first "
                        "(add_step does).")

    def _node_total(self, node, getter, keys, width):
        height, index = node
        first, last = index << height, min(((index + 1) << height), self.n_steps)
        total = np.zeros((len(keys),) + width)
        for step in range(first, last):
            item = getter(self._steps[step])
            if item is not None:
                total += lookup(item[0], item[1], keys)
        return total

    def counts(self, level, keys):
        """Read the noisy prefix counts (all steps so far) of the cells ``keys`` at ``level``.

        Parameters
        ----------
        level : int
            Level, 0 (the root, key 0) to ``n_levels``.
        keys : ndarray of int64
            Packed cell keys at that level.

        Returns
        -------
        counts : ndarray of shape (n_keys,)
            Noisy counts.
        """
        if not 0 <= int(level) <= self.n_levels:
            raise ValueError(f"{type(self).__name__}.counts: level must be in [0, {self.n_levels}]; got {level!r}.")
        keys = np.asarray(keys, dtype=np.int64)
        out = np.zeros(len(keys))
        for node in dyadic_prefix(self.n_steps):
            exact = self._node_total(node, lambda s: s[0][level], keys, ())
            draws = CounterDraws(hashed_bits(self.seed, 1, level, node[0], node[1], keys))
            out += add_noise(exact, self._count_noise, draws)
        return out

    def sums(self, level, keys):
        """Read the noisy prefix sums of the values per cell at ``level``.

        Parameters
        ----------
        level : int
            Level, 1 to ``n_levels``.
        keys : ndarray of int64
            Packed cell keys at that level.

        Returns
        -------
        sums : ndarray of shape (n_keys, n_values)
            Noisy sums.
        """
        keys = np.asarray(keys, dtype=np.int64)
        width = next((s[1][1][1].shape[1] for s in self._steps if s[1] is not None), 0)
        out = np.zeros((len(keys), width))
        cols = np.arange(width, dtype=np.int64)[None, :]
        for node in dyadic_prefix(self.n_steps):
            exact = self._node_total(node, lambda s: None if s[1] is None else s[1][level], keys, (width,))
            draws = CounterDraws(hashed_bits(self.seed, 2, level, node[0], node[1], keys[:, None], cols))
            out += add_noise(exact, self._sum_noise, draws)
        return out

    def prefix_noise_std(self):
        """Give the standard deviation of one noisy prefix count at the current step.

        Returns
        -------
        std : float
            ``sqrt(2 * n_intervals) * count_scale``.
        """
        return math.sqrt(2.0 * max(1, len(dyadic_prefix(self.n_steps)))) * self.count_scale

    def grow(self, threshold, lower=0.0, upper=1.0):
        """Release the pruned tree of the current prefix counts.

        Parameters
        ----------
        threshold : float
            Noisy count at which a cell is expanded.
        lower : float or array-like of shape (n_dims,), default=0.0
            Lower corner of the box the unit cube stands for (only changes
            the coordinates the returned histogram reports).
        upper : float or array-like of shape (n_dims,), default=1.0
            Upper corner of that box.

        Returns
        -------
        histogram : QuadtreeHistogram
            Released cells.
        """
        if np.isnan(threshold):
            raise ValueError(f"{type(self).__name__}.grow: threshold must not be NaN.")
        levels, cells, counts, heavy = grow_tree(lambda lv, c, k: self.counts(lv, k), self.n_levels,
                                                 self.n_dims, threshold)
        return QuadtreeHistogram(levels, cells, counts, heavy, self.n_levels, threshold, lower, upper,
                                 self.prefix_noise_std(), ledger=self.ledger)


def clip_rows(values, l2=None, l1=None):
    """Rows of ``values`` scaled down (never up) to Euclidean norm ``l2`` and L1 norm ``l1`` (those given)."""
    values = np.array(values, dtype=np.float64)
    for order, bound in ((2, l2), (1, l1)):
        if bound is not None and len(values):
            norms = np.linalg.norm(values, ord=order, axis=1)
            over = norms > bound
            values[over] *= (bound / norms[over])[:, None]
    return values


def step_tables(U, n_levels, values=None):
    """Exact per-level cell counts (and per-cell sums of ``values``) of records ``U`` in the unit cube."""
    Q = unit_cells(U, n_levels)
    per_level = [(np.zeros(1, dtype=np.int64), np.array([float(len(Q))]))]
    per_level += level_counts(Q, n_levels)
    sums = None
    if values is not None:
        sums = [None]
        for level in range(1, n_levels + 1):
            keys = pack_keys(Q >> (n_levels - level), level)
            uniq, inv = np.unique(keys, return_inverse=True)
            acc = np.zeros((len(uniq), values.shape[1]))
            np.add.at(acc, inv, values)
            sums.append((uniq, acc))
    return per_level, sums
