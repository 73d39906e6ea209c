"""Private hierarchical histograms over a quadtree of a bounded box.

The box is cut into ``2**d`` equal children, each child again, down to
``n_levels`` levels; a record lies in exactly one cell per level. The tree is
grown top-down: at each level, every child of a *heavy* parent (noisy count at
least ``threshold``) gets a noisy count, and the heavy ones among them are
expanded in turn. The root is always heavy.

Three privacy models share that growth rule and differ only in where the
noisy counts come from:

* ``"central"``: the curator adds Laplace noise of scale ``n_levels /
  epsilon`` to every count it releases. A record changes one count per level
  by one (records added or removed), so each level's release is
  ``epsilon / n_levels``-DP and the tree is ``epsilon``-DP (pure). Cells not
  released reveal nothing beyond their parents' noisy counts, so the pruning
  costs nothing.
* ``"local"``: no curator sees the data. Each record picks one level uniformly
  at random and reports its cell id at that level through optimised local
  hashing (OLH; Wang, Blocki, Li and Jha, USENIX Security 2017): a random
  hash of its cell into ``g = round(e^epsilon) + 1`` buckets, kept with
  probability ``e^epsilon / (e^epsilon + g - 1)`` and otherwise replaced by a
  uniformly random other bucket. Each report is ``epsilon``-LDP. The server
  estimates any cell's count from the reports (``O(n_reports * cells)``
  work; torch on a GPU for large ``n``) and grows the same tree. The estimates
  are unbiased with standard deviation of order ``sqrt(n * n_levels) /
  epsilon``, the price of local privacy.
* continual observation (:class:`ContinualQuadtreeHistogram`): records arrive
  in batches, one per time step, and the histogram is re-released after every
  step. Every cell count is kept by the binary-tree mechanism (Dwork, Naor,
  Pitassi and Rothblum, STOC 2010; Chan, Shi and Song, 2011), so the noise of
  a count after ``T`` steps grows like ``log(T)^1.5 / epsilon`` instead of
  ``T / epsilon``.

Integer cell coordinates are packed into one int64 key per cell
(``n_dims * n_levels <= 62``).
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import DEVICE_CONSTRAINT
from ._mechanisms import gaussian_noise_scale

__all__ = [
    "ContinualQuadtreeHistogram",
    "QuadtreeHistogram",
    "olh_parameters",
    "private_quadtree_histogram",
]

#: Upper bound on the number of candidate cells examined per level; past it the
#: growth stops (a rule on noisy counts only, hence post-processing).
MAX_CANDIDATES = 1 << 20


# ----------------------------------------------------------------------------------------------
# cells and keys

def _check_geometry(n_dims, n_levels):
    if n_dims * n_levels > 62:
        raise ValueError(
            f"a quadtree of {n_levels} levels in {n_dims} dimensions needs {n_dims * n_levels} bits per cell "
            f"key; at most 62 are supported (lower n_levels or the number of dimensions)."
        )


def _keys(cells, level):
    """Pack integer cell coordinates ``(m, d)`` at ``level`` into int64 keys."""
    cells = np.asarray(cells, dtype=np.int64)
    shifts = np.arange(cells.shape[1], dtype=np.int64) * level
    return np.bitwise_or.reduce(cells << shifts, axis=1) if cells.shape[1] else np.zeros(len(cells), np.int64)


def _children_offsets(n_dims):
    return ((np.arange(2 ** n_dims)[:, None] >> np.arange(n_dims)[None, :]) & 1).astype(np.int64)


def unit_cells(U, n_levels):
    """Deepest-level integer cell coordinates of points ``U`` in the unit cube (clipped)."""
    side = 1 << n_levels
    return np.clip(np.floor(np.asarray(U, dtype=np.float64) * side), 0, side - 1).astype(np.int64)


def _level_counts(Q, n_levels, device=None):
    """Per level 1..n_levels: (sorted unique keys, counts) of the points' cells.

    ``Q`` holds deepest-level coordinates. ``device=None`` counts in numpy; a
    torch device counts there (``torch.unique``) and brings the small result
    back.
    """
    out = []
    if device is None:
        for level in range(1, n_levels + 1):
            keys = _keys(Q >> (n_levels - level), level)
            uniq, counts = np.unique(keys, return_counts=True)
            out.append((uniq, counts.astype(np.float64)))
        return out
    import torch

    from ..utils._torch import to_tensor

    Qt = to_tensor(Q, device, torch.int64)
    shifts = torch.arange(Q.shape[1], device=device, dtype=torch.int64)
    for level in range(1, n_levels + 1):
        coords = Qt >> (n_levels - level)
        keys = (coords << (shifts * level)).sum(dim=1)  # disjoint bit fields: sum == bitwise or
        uniq, counts = torch.unique(keys, sorted=True, return_counts=True)
        out.append((uniq.cpu().numpy(), counts.cpu().numpy().astype(np.float64)))
    return out


def _lookup(sorted_keys, values, query):
    """values[sorted_keys == query] for each query key, 0 where absent."""
    if len(sorted_keys) == 0:
        shape = (len(query),) + values.shape[1:]
        return np.zeros(shape, dtype=np.float64)
    idx = np.clip(np.searchsorted(sorted_keys, query), 0, len(sorted_keys) - 1)
    hit = sorted_keys[idx] == query
    out = np.where(hit.reshape((-1,) + (1,) * (values.ndim - 1)), values[idx], 0.0)
    return out.astype(np.float64)


# ----------------------------------------------------------------------------------------------
# the released tree

class QuadtreeHistogram:
    """The released part of a private quadtree histogram.

    Every released cell has a level (1 = the ``2**d`` children of the root),
    integer coordinates at that level, a noisy count and a flag saying whether
    it was heavy (noisy count at least the threshold, hence expanded). All of
    it is differentially private; nothing else about the data is kept.

    Parameters
    ----------
    levels : ndarray of shape (n_cells,)
        Level of each released cell.
    cells : ndarray of shape (n_cells, n_dims)
        Integer coordinates of each cell at its level.
    counts : ndarray of shape (n_cells,)
        Noisy counts.
    heavy : ndarray of shape (n_cells,)
        Whether each cell's noisy count reached ``threshold``.
    n_levels : int
        Depth of the tree.
    threshold : float
        Expansion threshold used.
    lower : ndarray of shape (n_dims,)
        Lower corner of the box.
    upper : ndarray of shape (n_dims,)
        Upper corner of the box.
    noise_std : float
        Standard deviation of the noise of one count.

    Attributes
    ----------
    n_dims : int
        Number of dimensions of the box.

    See Also
    --------
    private_quadtree_histogram : Builds one in the central or the local model.
    ContinualQuadtreeHistogram : Builds one after every step of a stream.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import private_quadtree_histogram
    >>> X = np.random.RandomState(0).uniform(0, 1, size=(1000, 2))
    >>> hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=3, epsilon=1.0,
    ...                                   threshold=20.0, random_state=0)
    >>> hist.cells.shape[1], int(hist.levels.max())
    (2, 3)
    """

    def __init__(self, levels, cells, counts, heavy, n_levels, threshold, lower, upper, noise_std):
        self.levels = np.asarray(levels, dtype=np.int64)
        self.cells = np.asarray(cells, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.float64)
        self.heavy = np.asarray(heavy, dtype=bool)
        self.n_levels = int(n_levels)
        self.threshold = float(threshold)
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.noise_std = float(noise_std)
        self.n_dims = self.cells.shape[1]

    def cell_centers(self):
        """Compute the centres of the released cells, in the box's coordinates.

        Returns
        -------
        centers : ndarray of shape (n_cells, n_dims)
            Cell centres.
        """
        side = (self.upper - self.lower) / (2.0 ** self.levels)[:, None]
        return self.lower + (self.cells + 0.5) * side

    def cell_radii(self):
        """Compute the half diagonals of the released cells.

        Returns
        -------
        radii : ndarray of shape (n_cells,)
            Distance from each cell's centre to its corners.
        """
        return 0.5 * np.linalg.norm(self.upper - self.lower) / 2.0 ** self.levels

    def mass_centers(self):
        """Estimate the centres of mass of the released cells, in the box's coordinates.

        Bottom-up: a cell with released children sits at the mean of their
        centres of mass weighted by their (non-negative) noisy counts; a cell
        without released children, or whose children's noisy counts are all
        non-positive, at its geometric centre. Post-processing of the noisy
        counts only.

        Returns
        -------
        centers : ndarray of shape (n_cells, n_dims)
            Estimated centre of mass of each cell's records.
        """
        loc = self.cell_centers()
        keys = np.empty(len(self.levels), dtype=np.int64)
        for level in np.unique(self.levels):
            sel = self.levels == level
            keys[sel] = _keys(self.cells[sel], level)
        for level in sorted(np.unique(self.levels))[::-1]:
            child = np.flatnonzero(self.levels == level + 1)
            if len(child) == 0:
                continue
            sel = np.flatnonzero(self.levels == level)
            order = np.argsort(keys[sel])
            parent_keys = _keys(self.cells[child] >> 1, level)
            pos = np.searchsorted(keys[sel][order], parent_keys)
            pos = np.clip(pos, 0, len(sel) - 1)
            found = keys[sel][order][pos] == parent_keys
            parent = sel[order][pos[found]]
            w = np.maximum(self.counts[child[found]], 0.0)
            mass = np.zeros(len(self.levels))
            acc = np.zeros_like(loc)
            np.add.at(mass, parent, w)
            np.add.at(acc, parent, w[:, None] * loc[child[found]])
            ok = mass > 0
            loc[ok] = acc[ok] / mass[ok, None]
        return loc

    def frontier(self):
        """Find the heavy cells none of whose children is heavy: the finest heavy partition.

        Returns
        -------
        mask : ndarray of shape (n_cells,)
            True for the heavy cells without a heavy child.
        """
        keys = np.empty(len(self.levels), dtype=np.int64)
        for level in np.unique(self.levels):
            sel = self.levels == level
            keys[sel] = _keys(self.cells[sel], level)
        has_heavy_child = np.zeros(len(self.levels), dtype=bool)
        for level in np.unique(self.levels):
            child = self.heavy & (self.levels == level + 1)
            if child.any():
                sel = self.levels == level
                has_heavy_child[sel] = np.isin(keys[sel], _keys(self.cells[child] >> 1, level))
        return self.heavy & ~has_heavy_child


def _grow(count_fn, n_levels, n_dims, threshold):
    """Top-down growth; ``count_fn(level, cells, keys)`` returns the noisy counts of the candidates."""
    offsets = _children_offsets(n_dims)
    parents = np.zeros((1, n_dims), dtype=np.int64)
    out_levels, out_cells, out_counts, out_heavy = [], [], [], []
    for level in range(1, n_levels + 1):
        cand = (2 * parents[:, None, :] + offsets[None, :, :]).reshape(-1, n_dims)
        keys = _keys(cand, level)
        order = np.argsort(keys, kind="stable")
        cand, keys = cand[order], keys[order]
        noisy = np.asarray(count_fn(level, cand, keys), dtype=np.float64)
        threshold_level = threshold(level) if callable(threshold) else threshold
        heavy = noisy >= threshold_level
        out_levels.append(np.full(len(cand), level, dtype=np.int64))
        out_cells.append(cand)
        out_counts.append(noisy)
        out_heavy.append(heavy)
        parents = cand[heavy]
        if len(parents) == 0 or len(parents) * len(offsets) > MAX_CANDIDATES:
            break
    return (np.concatenate(out_levels), np.concatenate(out_cells), np.concatenate(out_counts),
            np.concatenate(out_heavy))


# ----------------------------------------------------------------------------------------------
# hashing: local hashing reports and counter-based noise (identical in numpy and torch)

_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_GOLDEN = 0x9E3779B97F4A7C15


def _mix64_np(x):
    x = np.array(x, dtype=np.uint64, ndmin=1)
    with np.errstate(over="ignore"):  # wrap-around multiplication is the point
        x ^= x >> np.uint64(30)
        x *= np.uint64(_M1)
        x ^= x >> np.uint64(27)
        x *= np.uint64(_M2)
        x ^= x >> np.uint64(31)
    return x


def _hash_np(seed, key):
    """63-bit keyed hash of int64 ``key`` under uint64 ``seed`` (broadcasting)."""
    with np.errstate(over="ignore"):
        k = np.asarray(key).astype(np.uint64) * np.uint64(_GOLDEN)
    return (_mix64_np(_mix64_np(k) ^ np.asarray(seed, dtype=np.uint64)) >> np.uint64(1)).astype(np.int64)


def _signed(c):
    return c - (1 << 64) if c >= 1 << 63 else c


def _lshr(x, k):
    """Logical right shift of int64 tensors (as on uint64)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def _mix64_torch(x):
    x = x ^ _lshr(x, 30)
    x = x * _signed(_M1)
    x = x ^ _lshr(x, 27)
    x = x * _signed(_M2)
    return x ^ _lshr(x, 31)


def _hash_torch(seed, key):
    k = key * _signed(_GOLDEN)
    return _lshr(_mix64_torch(_mix64_torch(k) ^ seed), 1)


def _uniform01(seed, *parts):
    """Counter-based uniforms in (0, 1): one per broadcast combination of the int64 ``parts``."""
    h = np.asarray(seed, dtype=np.uint64)
    for p in parts:
        with np.errstate(over="ignore"):
            h = _mix64_np(h ^ (np.asarray(p).astype(np.uint64) * np.uint64(_GOLDEN)))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53


def _hashed_laplace(scale, seed, *parts):
    u = _uniform01(seed, *parts) - 0.5
    return -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))


def _hashed_normal(sigma, seed, *parts):
    u1 = _uniform01(seed, *parts, 1)
    u2 = _uniform01(seed, *parts, 2)
    return sigma * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


# ----------------------------------------------------------------------------------------------
# local model: optimised local hashing per level

def olh_parameters(epsilon):
    """Bucket count and keep probability of optimised local hashing.

    Parameters
    ----------
    epsilon : float
        Local privacy budget of one report.

    Returns
    -------
    g : int
        Number of hash buckets, ``round(e^epsilon) + 1`` (at least 2).
    p : float
        Probability that a report keeps its true bucket,
        ``e^epsilon / (e^epsilon + g - 1)``.

    Examples
    --------
    >>> from sklearn_icml.privacy import olh_parameters
    >>> olh_parameters(1.0)
    (4, 0.475...)
    """
    e = math.exp(epsilon)
    g = max(2, int(round(e)) + 1)
    return g, e / (e + g - 1)


def olh_count_std(n_reports, n_levels, epsilon):
    """Standard deviation of one estimated count of the local quadtree (empty cell)."""
    g, p = olh_parameters(epsilon)
    return math.sqrt(n_reports * n_levels * (1.0 / g) * (1.0 - 1.0 / g)) / (p - 1.0 / g)


def _olh_reports(Q, n_levels, epsilon, rng):
    """Every record's report: (level, hash seed, perturbed bucket)."""
    n, d = Q.shape
    g, p = olh_parameters(epsilon)
    level = rng.randint(1, n_levels + 1, size=n)
    seeds = rng.randint(0, 2 ** 64, size=n, dtype=np.uint64)
    keys = np.empty(n, dtype=np.int64)
    for lv in range(1, n_levels + 1):
        sel = level == lv
        keys[sel] = _keys(Q[sel] >> (n_levels - lv), lv)
    true_bucket = _hash_np(seeds, keys) % g
    keep = rng.uniform(size=n) < p
    other = (true_bucket + rng.randint(1, g, size=n)) % g
    return level, seeds, np.where(keep, true_bucket, other).astype(np.int64)


def _olh_support(seeds, buckets, keys, g, device=None, chunk=1 << 22):
    """For each key: how many reports' hashes of it equal their bucket (O(n_reports * n_keys))."""
    n, m = len(seeds), len(keys)
    out = np.zeros(m, dtype=np.float64)
    if n == 0 or m == 0:
        return out
    step = max(1, chunk // n)
    if device is None:
        for start in range(0, m, step):
            k = keys[start:start + step]
            out[start:start + step] = ((_hash_np(seeds[:, None], k[None, :]) % g) == buckets[:, None]).sum(0)
        return out
    import torch

    s = torch.from_numpy(seeds.view(np.int64).copy()).to(device)[:, None]
    b = torch.from_numpy(buckets).to(device)[:, None]
    kt = torch.from_numpy(np.ascontiguousarray(keys, dtype=np.int64)).to(device)
    for start in range(0, m, step):
        k = kt[start:start + step][None, :]
        out[start:start + step] = ((_hash_torch(s, k) % g) == b).sum(0).cpu().numpy()
    return out


# ----------------------------------------------------------------------------------------------
# public entry point (central and local)

def _to_unit(X, lower, upper):
    width = np.where(upper > lower, upper - lower, 1.0)
    return np.clip((X - lower) / width, 0.0, 1.0)


def _as_box(bounds, n_dims):
    lower, upper = (np.broadcast_to(np.asarray(b, dtype=np.float64), (n_dims,)).copy() for b in bounds)
    if np.any(upper < lower):
        raise ValueError(f"bounds must satisfy lower <= upper in every dimension; got {bounds!r}.")
    return lower, upper


@validate_params(
    {"X": ["array-like"], "bounds": [tuple, list], "n_levels": [Interval(Integral, 1, 62, closed="both")],
     "epsilon": [Interval(Real, 0, None, closed="neither")], "threshold": [Real],
     "model": [StrOptions({"central", "local"})], "random_state": ["random_state"],
     "device": DEVICE_CONSTRAINT},
    prefer_skip_nested_validation=True,
)
def private_quadtree_histogram(X, *, bounds, n_levels, epsilon, threshold, model="central",
                               random_state=None, device="cpu"):
    """Differentially private hierarchical histogram of points in a box.

    Grows a quadtree top-down and releases noisy counts of the children of
    every heavy cell (noisy count at least ``threshold``); see the module
    notes for the central and local models.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_dims)
        Points; those outside ``bounds`` are clipped to the box (a per-record
        map, so privacy is unaffected).
    bounds : tuple (lower, upper)
        Public box: scalars or arrays of shape (n_dims,).
    n_levels : int
        Depth of the tree (``n_dims * n_levels <= 62``).
    epsilon : float
        Privacy budget of the whole tree (central model: pure
        ``epsilon``-DP; local model: every report is ``epsilon``-LDP).
    threshold : float
        Noisy count at which a cell is expanded.
    model : {"central", "local"}, default="central"
        Privacy model.
    random_state : int, RandomState instance or None, default=None
        Source of the noise (central) or of the users' randomisation (local).
    device : {"cpu", "auto", "cuda"}, default="cpu"
        Where the counting (central) or the ``O(n_samples * n_cells)``
        estimation from local reports runs; the noise is drawn on the CPU
        from ``random_state`` in any case, so results agree across devices.

    Returns
    -------
    histogram : QuadtreeHistogram
        The released cells and noisy counts.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import private_quadtree_histogram
    >>> X = np.random.RandomState(0).normal(0.25, 0.05, size=(2000, 2))
    >>> hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=4, epsilon=1.0,
    ...                                   threshold=40.0, random_state=0)
    >>> bool(hist.counts.max() > 1900)  # the level-1 cell [0, 0.5)^2 holds nearly every point
    True
    """
    from ..utils._torch import resolve_device

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"private_quadtree_histogram expects 2-D X; got shape {X.shape}.")
    n, d = X.shape
    _check_geometry(d, n_levels)
    lower, upper = _as_box(bounds, d)
    Q = unit_cells(_to_unit(X, lower, upper), n_levels)
    rng = check_random_state(random_state)
    dev = None if device == "cpu" else resolve_device(device)
    if dev is not None and dev.type == "cpu":
        dev = None
    if model == "central":
        counts_fn, std = central_count_fn(Q, n_levels, epsilon, rng, device=dev)
    else:
        counts_fn, std = local_count_fn(Q, n_levels, epsilon, rng, device=dev)
    levels, cells, counts, heavy = _grow(counts_fn, n_levels, d, threshold)
    return QuadtreeHistogram(levels, cells, counts, heavy, n_levels, threshold, lower, upper, std)


def central_count_fn(Q, n_levels, epsilon, rng, device=None):
    """Laplace-noised counts of candidate cells; returns ``(count_fn, noise_std)``."""
    per_level = _level_counts(Q, n_levels, device)
    scale = n_levels / epsilon

    def count_fn(level, cells, keys):
        uniq, counts = per_level[level - 1]
        return _lookup(uniq, counts, keys) + rng.laplace(0.0, scale, size=len(keys))

    return count_fn, math.sqrt(2.0) * scale


def local_count_fn(Q, n_levels, epsilon, rng, device=None):
    """Counts estimated from simulated OLH reports; returns ``(count_fn, noise_std)``."""
    n = len(Q)
    g, p = olh_parameters(epsilon)
    level, seeds, buckets = _olh_reports(Q, n_levels, epsilon, rng)

    def count_fn(lv, cells, keys):
        sel = level == lv
        n_level = int(sel.sum())
        if n_level == 0:
            return np.zeros(len(keys))
        support = _olh_support(seeds[sel], buckets[sel], keys, g, device)
        return (support - n_level / g) / (p - 1.0 / g) * (n / n_level)

    return count_fn, olh_count_std(n, n_levels, epsilon)


# ----------------------------------------------------------------------------------------------
# continual observation: binary-tree mechanism over time for every cell

def _dyadic_prefix(t):
    """Nodes ``(height, index)`` of the binary tree whose intervals partition steps ``[1, t]``."""
    nodes = []
    for height in range(t.bit_length() - 1, -1, -1):
        if t >> height & 1:
            nodes.append((height, (t >> height) - 1))
    return nodes


class ContinualQuadtreeHistogram:
    """Quadtree cell counts (and optional cell sums) under continual observation.

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

    The noise of each (cell, interval) is a deterministic function of a
    secret 64-bit seed (counter-based), so it exists for every cell without
    being stored, and a cell read twice gets the same noise.

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

    def __init__(self, n_dims, n_levels, max_steps, epsilon, seed, *, sums=False, sum_epsilon=None,
                 sum_delta=None, sum_sensitivity=None, sum_l1_sensitivity=None):
        _check_geometry(n_dims, n_levels)
        self.n_dims = int(n_dims)
        self.n_levels = int(n_levels)
        self.max_steps = int(max_steps)
        self.epsilon = float(epsilon)
        self.seed = np.uint64(int(seed) % (1 << 64))
        self.height = self.max_steps.bit_length()  # floor(log2 T) + 1 intervals per step
        self.count_scale = (self.n_levels + 1) * self.height / self.epsilon
        self.keep_sums = bool(sums)
        self.sum_scale = None
        self.sum_mechanism = None
        self.sum_sensitivity = None
        if self.keep_sums:
            if sum_delta:
                self.sum_mechanism = "gaussian"
                self.sum_sensitivity = sum_sensitivity * math.sqrt(self.n_levels * self.height)
                self.sum_scale = gaussian_noise_scale(sum_epsilon, sum_delta, self.sum_sensitivity)
            else:
                self.sum_mechanism = "laplace"
                self.sum_sensitivity = sum_l1_sensitivity * self.n_levels * self.height
                self.sum_scale = self.sum_sensitivity / sum_epsilon
        self.n_steps = 0
        self._steps = []  # per step: list over levels 0..L of (keys, counts); plus (keys, sums) or None

    def add_step(self, U, values=None):
        """Add one batch of records (one time step).

        Parameters
        ----------
        U : array-like of shape (n_records, n_dims)
            Records in the unit cube (clipped).
        values : array-like of shape (n_records, n_values), default=None
            Per-record vectors summed per cell at every level (norms at most
            ``sum_sensitivity``; the caller clips).

        Returns
        -------
        self : ContinualQuadtreeHistogram
            The histogram, for chaining.
        """
        if self.n_steps >= self.max_steps:
            raise ValueError(f"the stream's budget covers max_steps={self.max_steps} steps; all were used.")
        Q = unit_cells(U, self.n_levels)
        per_level = [(np.zeros(1, dtype=np.int64), np.array([float(len(Q))]))]
        per_level += _level_counts(Q, self.n_levels)
        sums = None
        if self.keep_sums and values is not None:
            values = np.asarray(values, dtype=np.float64)
            sums = [None]
            for level in range(1, self.n_levels + 1):
                keys = _keys(Q >> (self.n_levels - level), level)
                uniq, inv = np.unique(keys, return_inverse=True)
                acc = np.zeros((len(uniq), values.shape[1]))
                np.add.at(acc, inv, values)
                sums.append((uniq, acc))
        self._steps.append((per_level, sums))
        self.n_steps += 1
        return self

    def _node_total(self, node, getter, keys, width):
        height, index = node
        first, last = index << height, min(((index + 1) << height), self.n_steps)
        total = np.zeros((len(keys),) + width)
        for step in range(first, last):
            item = getter(self._steps[step])
            if item is not None:
                total += _lookup(item[0], item[1], keys)
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
        keys = np.asarray(keys, dtype=np.int64)
        out = np.zeros(len(keys))
        for node in _dyadic_prefix(self.n_steps):
            out += self._node_total(node, lambda s: s[0][level], keys, ())
            out += _hashed_laplace(self.count_scale, self.seed, 1, level, node[0], node[1], keys)
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
        for node in _dyadic_prefix(self.n_steps):
            out += self._node_total(node, lambda s: None if s[1] is None else s[1][level], keys, (width,))
            noise = _hashed_normal if self.sum_mechanism == "gaussian" else _hashed_laplace
            out += noise(self.sum_scale, self.seed, 2, level, node[0], node[1], keys[:, None], cols)
        return out

    def prefix_noise_std(self):
        """Give the standard deviation of one noisy prefix count at the current step.

        Returns
        -------
        std : float
            ``sqrt(2 * n_intervals) * count_scale``.
        """
        return math.sqrt(2.0 * max(1, len(_dyadic_prefix(self.n_steps)))) * self.count_scale

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
        levels, cells, counts, heavy = _grow(lambda lv, c, k: self.counts(lv, k), self.n_levels, self.n_dims,
                                             threshold)
        lower, upper = _as_box((lower, upper), self.n_dims)
        return QuadtreeHistogram(levels, cells, counts, heavy, self.n_levels, threshold, lower, upper,
                                 self.prefix_noise_std())
