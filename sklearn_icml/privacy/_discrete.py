"""Exact discrete noise on a power-of-two grid: the samplers behind every release of the toolkit.

Adding floating-point Laplace or Gaussian draws to floating-point values
leaks: the set of outputs a float sampler can reach depends on the input
(Mironov, CCS 2012), so an observer may tell neighbouring inputs apart with
certainty. Here every release is

    ``output = g * (rint(value / g) + Z)``

with ``g = 2**k`` a grid step fixed by public parameters only (a power of two
far below the noise scale) and ``Z`` integer noise drawn *exactly* from the
discrete Laplace or discrete Gaussian distribution by the rejection samplers
of Canonne, Kamath and Steinke (NeurIPS 2020), which use nothing but uniform
integers (no floating-point ``exp``, ``log`` or division). The integer
``rint(value / g) + Z`` is the differentially private release; the float that
the functions return is ``g`` times it, a post-processing (exact while it is
below ``2**53 g``). So every output lies on the grid ``g Z``, and the set of
reachable outputs does not depend on the input.

Rounding the input to the grid moves each coordinate by at most ``g / 2``,
so two neighbouring inputs differ on the grid by at most their difference
plus ``g`` per coordinate they differ in: the noise is calibrated to that
*sensitivity on the grid* (``sensitivity + n_rounded * g`` for L1,
``sensitivity + sqrt(n_rounded) * g`` for L2), and nothing is added for
integer inputs (counts) when ``g <= 1``. The grid is fine (``2**30`` steps
per Laplace scale, ``2**13`` per Gaussian standard deviation), so this costs
a relative ``n_rounded * 2**-30 / epsilon`` of noise for Laplace. Values
beyond ``2**61`` grid steps are clamped there first (a 1-Lipschitz map of
the query: the sensitivity is unchanged).

Sources of the uniform integers:

* ``random_state`` given (an int or a ``RandomState``): numpy's exact bounded
  integers (``RandomState.randint``), so a seed reproduces a release:
  **reproducible noise, for testing and benchmarks** (the seed must stay
  secret for the release to be private, and the generator is not
  cryptographic);
* ``random_state=None``: :class:`SecureRandomState`, whose integers come from
  the operating system's cryptographic generator (``os.urandom``);
* the continual-observation histogram: a counter-based stream per (cell,
  interval) under a secret seed (:class:`CounterDraws`), so the noise of a
  cell exists without being stored.
"""

import math
import os
from fractions import Fraction
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, validate_params
from ._hashing import hashed_bits
from ._validation import EPSILON, POSITIVE, check_finite

__all__ = [
    "CounterDraws",
    "GridNoise",
    "SecureRandomState",
    "add_noise",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential_choice",
    "grid_laplace",
    "gaussian_grid_step",
    "gaussian_on_grid",
    "grid_index",
    "grid_step",
    "noise_random_state",
    "secret_seed",
    "ratio_at_least",
    "rounding_slack",
    "float_at_least",
    "DELTA_MARGIN",
    "GAUSSIAN_BITS",
]

#: Laplace: the grid step is a power of two with scale / step in [2**30, 2**31)
LAPLACE_BITS = 30
#: Gaussian: the grid step is a power of two at most 2**-13 of sigma (and, for float queries, 2**-20 of the
#: sensitivity, so that the rounding slack stays below a relative 2**-20 per changed coordinate)
GAUSSIAN_BITS = 13
SENSITIVITY_BITS = 20
#: the largest |value| / step released (values beyond are clamped: the noise adds at most 2**60 more)
MAX_GRID_INDEX = 1 << 61
#: the Gaussian is calibrated at delta * (1 - DELTA_MARGIN), which covers the discretisation of its tails
DELTA_MARGIN = 2.0 ** -7

_U64_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)


# ------------------------------------------------------------------------------------------------
# sources of uniform integers


def _reject_to_range(words, high):
    """Exact uniform integers below ``high`` from uniform uint64 ``words``: (values, accepted mask)."""
    high = np.asarray(high, dtype=np.uint64)
    with np.errstate(over="ignore"):
        rem = (np.uint64(0) - high) % high  # 2**64 mod high: the words at or above 2**64 - rem are rejected
    ok = words <= _U64_MAX - rem
    return (words % high).astype(np.int64), ok


class SecureRandomState(np.random.RandomState):
    """A ``RandomState`` whose noise comes from the operating system's cryptographic generator.

    The samplers of this module take all their randomness from uniform
    integers; given an instance of this class they draw them with
    :meth:`secure_integers` (``os.urandom``), so the noise of a release is
    unpredictable. The inherited methods (used for non-private choices such
    as random projections) are those of a Mersenne Twister seeded with 128
    bits from the operating system. This is what ``random_state=None`` means
    for the noise of every release.
    """

    def __init__(self):
        super().__init__(np.random.MT19937(np.random.SeedSequence()))

    def secure_integers(self, high, size):
        """``size`` uniform int64 in ``[0, high)`` (``high`` a positive int64 scalar or array) from ``os.urandom``.

        Exact: words in the top ``2**64 mod high`` are rejected and redrawn.
        """
        span = np.broadcast_to(np.asarray(high, dtype=np.int64), (int(size),)).astype(np.uint64)
        out = np.empty(span.size, dtype=np.int64)
        todo = np.arange(span.size)
        while todo.size:
            words = np.frombuffer(os.urandom(8 * todo.size), dtype=np.uint64)
            values, ok = _reject_to_range(words, span[todo])
            out[todo[ok]] = values[ok]
            todo = todo[~ok]
        return out


@validate_params({"rng": [np.random.RandomState]}, prefer_skip_nested_validation=True)
def secret_seed(rng):
    """A 63-bit seed for counter-based noise.

    Drawn from ``os.urandom`` when ``rng`` is the cryptographic generator that
    :func:`noise_random_state` returns for None, else from ``rng`` (reproducible).

    Parameters
    ----------
    rng : numpy.random.RandomState
        From :func:`noise_random_state`.

    Returns
    -------
    seed : int
        In ``[0, 2**63)``.

    Examples
    --------
    >>> from sklearn_icml.privacy import noise_random_state, secret_seed
    >>> secret_seed(noise_random_state(0)) == secret_seed(noise_random_state(0))
    True
    >>> 0 <= secret_seed(noise_random_state(None)) < 2 ** 63
    True
    """
    if isinstance(rng, SecureRandomState):
        return int(rng.secure_integers(1 << 62, 1)[0]) * 2 + int(rng.secure_integers(2, 1)[0])
    return int(rng.randint(0, 2 ** 63, dtype=np.int64))


@validate_params({"random_state": ["random_state"]}, prefer_skip_nested_validation=True)
def noise_random_state(random_state):
    """The ``RandomState`` a release draws its noise from.

    For None, a ``RandomState`` whose noise comes from the operating system's
    cryptographic generator (``os.urandom``); otherwise scikit-learn's
    ``check_random_state(random_state)``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        None: cryptographic noise (not reproducible); an int or an instance:
        reproducible noise, for testing.

    Returns
    -------
    rng : numpy.random.RandomState
        The source of the uniform integers every sampler of the package draws.

    Examples
    --------
    >>> from sklearn_icml.privacy import noise_random_state
    >>> noise_random_state(0).randint(10) == noise_random_state(0).randint(10)
    True
    """
    if random_state is None:
        return SecureRandomState()
    return check_random_state(random_state)


class _RandomStateDraws:
    """Uniform integers for the samplers from a ``RandomState`` (one per requested element)."""

    def __init__(self, rng):
        self.rng = rng
        self.secure = isinstance(rng, SecureRandomState)

    def __call__(self, high, idx):
        if self.secure:
            return self.rng.secure_integers(high, len(idx))
        return self.rng.randint(0, high, size=len(idx), dtype=np.int64)  # exact bounded integers


class CounterDraws:
    """Counter-based uniform integers: element ``i`` reads its own stream ``hash(key_i, 0), hash(key_i, 1), ...``.

    An element's draws depend only on its key and on how many draws it made
    before, never on the other elements drawn beside it: a cell's noise is
    the same whichever cells are read with it.

    Parameters
    ----------
    keys : ndarray of uint64
        One secret stream key per element (``hashed_bits(seed, ...)``).
    """

    def __init__(self, keys):
        self.keys = np.asarray(keys, dtype=np.uint64).ravel()
        self.counters = np.zeros(self.keys.size, dtype=np.uint64)

    def __call__(self, high, idx):
        idx = np.asarray(idx, dtype=np.int64)
        high = np.broadcast_to(np.asarray(high, dtype=np.int64), idx.shape)
        out = np.empty(idx.size, dtype=np.int64)
        todo = np.arange(idx.size)
        while todo.size:
            el = idx[todo]
            words = hashed_bits(self.keys[el], self.counters[el])
            self.counters[el] += np.uint64(1)
            values, ok = _reject_to_range(words, high[todo])
            out[todo[ok]] = values[ok]
            todo = todo[~ok]
        return out


def _draws(source):
    return source if isinstance(source, CounterDraws) else _RandomStateDraws(source)


# ------------------------------------------------------------------------------------------------
# exact samplers (Canonne, Kamath and Steinke, 2020, Algorithms 1 to 3), vectorised over elements


_WORD = 62  # bits of one uniform draw; larger uniform integers are built from several


def _big_below(high, idx, draw):
    """Uniform Python integers below the Python integer ``high >= 2**62`` (object array; exact: rejection)."""
    bits = high.bit_length()
    n_words = -(-bits // _WORD)
    out = np.empty(len(idx), dtype=object)
    todo = np.arange(len(idx))
    while todo.size:
        acc = np.zeros(todo.size, dtype=object)
        for _ in range(n_words):
            acc = (acc << _WORD) | draw(1 << _WORD, idx[todo]).astype(object)
        acc = acc >> (n_words * _WORD - bits)
        ok = (acc < high).astype(bool)
        out[todo[ok]] = acc[ok]
        todo = todo[~ok]
    return out


def _bernoulli_exp_fraction(num, den, idx, draw):
    """Bernoulli(exp(-num / den)) for integers ``0 <= num <= den`` (scalars or arrays aligned with ``idx``).

    Algorithm 1: ``K = 1``; while a Bernoulli(``num / (den K)``) succeeds,
    ``K += 1``; succeed when ``K`` is odd. A Bernoulli(``num / (den K)``) is
    a Bernoulli(``num / den``) and a Bernoulli(``1 / K``), independent (the
    first needs no draw when ``num == den``, the second none while ``K == 1``).
    """
    n = len(idx)
    scalar = np.ndim(num) == 0 and np.ndim(den) == 0
    if not scalar and not (np.ndim(den) == 0 and den >= 1 << _WORD):
        num, den = np.broadcast_to(num, n), np.broadcast_to(den, n)
    result = np.zeros(n, dtype=bool)
    K = 1
    active = np.arange(n)
    while active.size:
        if scalar and num == den:
            hit = np.ones(active.size, dtype=bool)
        elif scalar:
            hit = draw(den, idx[active]) < num
        elif np.ndim(den) == 0 and den >= 1 << _WORD:  # Python-integer fractions (the Gaussian's wide grids)
            hit = (_big_below(den, idx[active], draw) < num[active]).astype(bool)
        else:
            hit = draw(den[active], idx[active]) < num[active]
        if K > 1:
            hit &= draw(K, idx[active]) == 0
        result[active[~hit]] = K % 2 == 1  # the loop stops at this K for these elements
        active = active[hit]
        K += 1
    return result


def _bernoulli_exp_parts(whole, rest, den, idx, draw):
    """Bernoulli(exp(-(whole + rest / den))) for integers ``whole >= 0`` and ``0 <= rest < den``.

    ``whole`` Bernoulli(exp(-1)) draws must all succeed, then a
    Bernoulli(exp(-rest / den)) (Algorithm 1's extension to ``gamma > 1``).
    """
    whole = np.array(whole, dtype=np.int64)
    out = _bernoulli_exp_fraction(rest, den, idx, draw)
    active = np.flatnonzero(out & (whole > 0))
    while active.size:
        keep = _bernoulli_exp_fraction(1, 1, idx[active], draw)
        out[active[~keep]] = False
        whole[active] -= 1
        active = active[keep & (whole[active] > 0)]
    return out


def _discrete_laplace_idx(t, s, idx, draw):
    """Algorithm 2: integers with ``P(y)`` proportional to ``exp(-|y| s / t)`` (``t``, ``s`` positive int64)."""
    n = len(idx)
    out = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        U = draw(t, idx[todo])
        ok = _bernoulli_exp_fraction(U, t, idx[todo], draw)
        cand = todo[ok]
        U = U[ok]
        V = np.zeros(cand.size, dtype=np.int64)
        going = np.arange(cand.size)
        while going.size:  # V: the number of successes of Bernoulli(exp(-1)) before the first failure
            more = _bernoulli_exp_fraction(1, 1, idx[cand[going]], draw)
            going = going[more]
            V[going] += 1
        Y = (U + t * V) // s
        B = draw(2, idx[cand])
        accept = ~((B == 1) & (Y == 0))
        out[cand[accept]] = np.where(B[accept] == 1, -Y[accept], Y[accept])
        done = np.zeros(n, dtype=bool)
        done[cand[accept]] = True
        todo = todo[~done[todo]]
    return out


def discrete_laplace(t, s, size, source):
    """Exact discrete Laplace integers: ``P(y)`` proportional to ``exp(-|y| s / t)``.

    Parameters
    ----------
    t, s : int
        Positive integers below ``2**62``: the scale is ``t / s``.
    size : int
        Number of draws.
    source : RandomState or CounterDraws
        Uniform integers.

    Returns
    -------
    ndarray of int64
    """
    return _discrete_laplace_idx(int(t), int(s), np.arange(int(size)), _draws(source))


_W_MAX = 3037000499  # the largest w with w * w below 2**63


def _discrete_gaussian_idx(S, idx, draw):
    """Algorithm 3 for ``sigma**2 = S`` (a positive integer): exact discrete Gaussian integers.

    A discrete Laplace candidate ``Y`` of scale ``t = floor(sigma) + 1`` is
    kept with probability ``exp(-(|Y| t - S)**2 / (2 S t**2))``; the
    fraction is split into its integer part and remainder exactly, in int64
    while ``2 S t**2 < 2**62`` and in Python integers beyond.
    """
    t = math.isqrt(S) + 1
    n = len(idx)
    out = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    den = 2 * S * t * t
    wide = den >= 1 << _WORD
    while todo.size:
        Y = _discrete_laplace_idx(t, 1, idx[todo], draw)
        if wide:
            w = np.abs(Y).astype(object) * t - S
            sq = w * w
            whole = (sq // den).astype(np.int64)
            rest = sq % den
        else:
            w = np.abs(Y) * t - S
            whole = np.zeros(todo.size, dtype=np.int64)
            rest = np.zeros(todo.size, dtype=np.int64)
            small = np.abs(w) <= _W_MAX
            whole[small], rest[small] = np.divmod(w[small] * w[small], den)
            for j in np.flatnonzero(~small):  # far tails (|Y| beyond about 2.8 sigma): exact in Python integers
                whole[j], rest[j] = divmod(int(w[j]) * int(w[j]), den)
        accept = _bernoulli_exp_parts(whole, rest, den, idx[todo], draw)
        out[todo[accept]] = Y[accept]
        todo = todo[~accept]
    return out


def discrete_gaussian(S, size, source):
    """Exact discrete Gaussian integers: ``P(y)`` proportional to ``exp(-y**2 / (2 S))``.

    Parameters
    ----------
    S : int
        The variance parameter ``sigma**2``, a positive integer (``sqrt(S)`` below ``2**55``).
    size : int
        Number of draws.
    source : RandomState or CounterDraws
        Uniform integers.

    Returns
    -------
    ndarray of int64
    """
    return _discrete_gaussian_idx(int(S), np.arange(int(size)), _draws(source))


# ------------------------------------------------------------------------------------------------
# grids and calibration


def grid_step(scale, bits):
    """The power of two ``g`` with ``scale / g`` in ``[2**bits, 2**(bits + 1))``, at least ``2**-1000`` (a normal
    float: below, ``scale / g`` is smaller, still an exact ratio of integers)."""
    return math.ldexp(1.0, max(math.frexp(float(scale))[1] - 1 - bits, -1000))


def ratio_at_least(x, *, caller):
    """Integers ``(t, s)`` below ``2**62`` with ``t / s >= x`` (the Fraction ``x`` itself when it fits)."""
    if x.numerator < 1 << 62 and x.denominator < 1 << 62:
        return x.numerator, x.denominator
    e = x.numerator.bit_length() - x.denominator.bit_length()  # log2(x) within one
    s = 1 << min(61, max(0, 59 - e))
    t = -((-x.numerator * s) // x.denominator)  # ceil(x * s)
    if t >= 1 << 62:
        raise ValueError(f"{caller}: the noise scale {float(x)!r} is too large for exact sampling (at most 2**59).")
    return t, s


def float_at_least(x):
    """The smallest float at least the exact rational ``x``."""
    f = float(x)
    return f if Fraction(f) >= x else float(np.nextafter(f, np.inf))


class GridNoise(NamedTuple):
    """Noise on a grid: ``kind`` ("laplace" or "gaussian"), ``grid`` step ``g``, ``scale`` (Laplace ``b`` or
    Gaussian ``sigma``, a multiple of ``g`` for the Gaussian) and the ``sensitivity`` on the grid it covers."""

    kind: str
    grid: float
    scale: float
    sensitivity: float


def rounding_slack(grid, n_rounded, integer, norm):
    if integer and grid <= 1.0:
        return Fraction(0)
    return Fraction(grid) * (n_rounded if norm == 1 else Fraction(float_at_least(math.sqrt(n_rounded))))


@validate_params(
    {"sensitivity": POSITIVE, "epsilon": EPSILON, "n_rounded": [Interval(Integral, 1, None, closed="left")],
     "integer": ["boolean"]},
    prefer_skip_nested_validation=True,
)
@fill_doc
def grid_laplace(sensitivity, epsilon, *, n_rounded, integer=False):
    """Laplace noise that makes a release of L1 ``sensitivity`` ``epsilon``-DP on its grid.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity of the exact query.
    epsilon : float
        Budget.
    {{grid_rounding_parameters}}

    Returns
    -------
    noise : GridNoise
        A named tuple ``(kind, grid, scale, sensitivity)``: the grid step, the
        Laplace scale and the sensitivity on the grid, for :func:`add_noise`.

    Examples
    --------
    >>> from sklearn_icml.privacy import grid_laplace
    >>> noise = grid_laplace(1.0, 0.5, n_rounded=1, integer=True)
    >>> noise.kind, noise.scale, noise.sensitivity
    ('laplace', 2.0, 1.0)
    """
    grid = grid_step(sensitivity / epsilon, LAPLACE_BITS)
    sens = Fraction(sensitivity) + rounding_slack(grid, n_rounded, integer, 1)
    scale = float_at_least(sens / Fraction(epsilon))
    return GridNoise("laplace", grid, scale, float_at_least(sens))


def gaussian_grid_step(sigma, sensitivity=None):
    """The grid of discrete Gaussian noise ``sigma``: a power of two at most ``2**-13 sigma``, and at most
    ``2**-20 sensitivity`` for a float query (``sensitivity`` given) or at most 1 for an integer query (None)."""
    grid = grid_step(sigma, GAUSSIAN_BITS)
    if sensitivity is None:
        return min(grid, 1.0)
    return min(grid, grid_step(sensitivity, SENSITIVITY_BITS))


@validate_params({"sigma": POSITIVE}, prefer_skip_nested_validation=True)
def gaussian_on_grid(sigma):
    """Discrete Gaussian noise of standard deviation at least ``sigma`` for an integer query.

    For a query whose noise ``sigma`` was calibrated elsewhere (an
    accountant over many rounds): the grid step is at most 1, so the
    integers lie on the grid, and ``sigma`` is only rounded up to a multiple
    of the step (a relative ``2**-13`` at most).

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise.

    Returns
    -------
    noise : GridNoise
        A named tuple ``(kind, grid, scale, sensitivity)`` for :func:`add_noise`
        (the sensitivity is NaN: the calibration was made elsewhere).

    Examples
    --------
    >>> from sklearn_icml.privacy import gaussian_on_grid
    >>> noise = gaussian_on_grid(3.0)
    >>> noise.kind, noise.grid <= 1.0, 3.0 <= noise.scale <= 3.0 * (1 + 2 ** -13)
    ('gaussian', True, True)
    """
    grid = gaussian_grid_step(sigma)
    return GridNoise("gaussian", grid, math.ceil(sigma / grid) * grid, float("nan"))


# ------------------------------------------------------------------------------------------------
# releases


def grid_index(value, grid):
    """``rint(value / grid)`` as int64, clamped to ``+-2**61`` (a 1-Lipschitz map: sensitivity unchanged)."""
    with np.errstate(over="ignore"):  # beyond the clamp anyway
        index = np.rint(np.asarray(value, dtype=np.float64) / grid)
    return np.clip(index, -MAX_GRID_INDEX, MAX_GRID_INDEX).astype(np.int64)


def grid_noise_integers(noise, size, source):
    """``size`` integer noise draws (in grid steps) of ``noise``."""
    if noise.kind == "laplace":
        t, s = Fraction(noise.scale / noise.grid).as_integer_ratio()
        return discrete_laplace(t, s, size, source)
    s_grid = int(round(noise.scale / noise.grid))
    return discrete_gaussian(s_grid * s_grid, size, source)


@validate_params({"value": ["array-like", Real], "noise": [GridNoise], "source": "no_validation"},
                 prefer_skip_nested_validation=True)
def add_noise(value, noise, source):
    """Release ``value`` with the exact discrete ``noise`` on its grid.

    Returns ``g * (rint(value / g) + Z)``, ``g`` the grid step of ``noise`` and
    ``Z`` its integer noise.

    Parameters
    ----------
    value : float or array-like
        The exact query answer(s).
    noise : GridNoise
        From :func:`grid_laplace` (or the package's Gaussian on a grid).
    source : numpy.random.RandomState
        Uniform integers, from :func:`noise_random_state`.

    Returns
    -------
    released : ndarray of float64
        Same shape as ``value``; every entry a multiple of ``noise.grid``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import add_noise, grid_laplace, noise_random_state
    >>> noise = grid_laplace(1.0, 1.0, n_rounded=1, integer=True)
    >>> released = add_noise([10.0, 20.0], noise, noise_random_state(0))
    >>> released.shape, bool(np.all(released % noise.grid == 0))
    ((2,), True)
    """
    value = check_finite(value, "value", caller="add_noise")
    index = grid_index(value, noise.grid)
    Z = grid_noise_integers(noise, index.size, source).reshape(index.shape)
    return (index + Z).astype(np.float64) * noise.grid


# ------------------------------------------------------------------------------------------------
# the exponential mechanism, exactly


def _randbelow(rng, high):
    """A uniform Python integer in ``[0, high)`` for any ``high >= 1`` from 62-bit draws (exact: rejection)."""
    bits = max(1, (high - 1).bit_length())
    while True:
        x = 0
        for _ in range(-(-bits // 62)):
            x = (x << 62) | int(_RandomStateDraws(rng)(1 << 62, np.zeros(1))[0])
        x >>= (-(-bits // 62)) * 62 - bits
        if x < high:
            return x


def _bernoulli_exp_unit(num, den, rng):
    """Bernoulli(exp(-num / den)) for Python integers ``0 <= num <= den`` (Algorithm 1)."""
    K = 1
    while _randbelow(rng, den) < num and (K == 1 or _randbelow(rng, K) == 0):
        K += 1
    return K % 2 == 1


def _bernoulli_exp_scalar(gamma, rng):
    """Bernoulli(exp(-gamma)) for a non-negative Fraction ``gamma``: ``floor(gamma)`` times exp(-1), then the rest."""
    whole = gamma.numerator // gamma.denominator
    for _ in range(whole):
        if not _bernoulli_exp_unit(1, 1, rng):
            return False
    return _bernoulli_exp_unit(gamma.numerator - whole * gamma.denominator, gamma.denominator, rng)


@validate_params({"costs": ["array-like"], "sensitivity": POSITIVE, "epsilon": EPSILON, "rng": [np.random.RandomState]},
                 prefer_skip_nested_validation=True)
def exponential_choice(costs, sensitivity, epsilon, rng):
    """The exponential mechanism on costs (lower is better), sampled exactly.

    The costs are floored to a grid ``g`` (a power of two ``2**-30`` of the
    sensitivity), which raises the sensitivity to ``sensitivity + g``;
    candidate ``i`` is then chosen with probability proportional to
    ``exp(-epsilon * g * C_i / (sensitivity + g))`` (``C_i`` the floored cost
    in grid steps), ``epsilon``-DP for costs that all move the same way when
    one record is added or removed (monotone utility), by rejection: a
    uniform candidate is kept with probability ``exp(-gamma_i)``, ``gamma_i``
    measured from the cheapest, with exact Bernoulli draws.

    Parameters
    ----------
    costs : array-like of shape (n_candidates,)
        Finite costs.
    sensitivity : float
        Largest change of every cost when one record is added or removed.
    epsilon : float
        Budget.
    rng : numpy.random.RandomState
        Uniform integers, from :func:`noise_random_state`.

    Returns
    -------
    chosen : int
        Index of the chosen candidate.
    sensitivity_on_grid : float
        ``sensitivity + g``.

    Examples
    --------
    >>> from sklearn_icml.privacy import exponential_choice, noise_random_state
    >>> chosen, sensitivity = exponential_choice([50.0, 0.0, 70.0], 1.0, 5.0, noise_random_state(0))
    >>> chosen
    1
    """
    costs = check_finite(costs, "costs", caller="exponential_choice", ndim=1)
    if costs.size == 0:
        raise ValueError("exponential_choice: costs must hold at least one candidate; got none.")
    grid = grid_step(sensitivity, LAPLACE_BITS)
    floored = [int(c) for c in np.floor(costs / grid)]
    sens = Fraction(sensitivity) + Fraction(grid)
    rate = Fraction(epsilon) * Fraction(grid) / sens
    low = min(floored)
    while True:
        i = _randbelow(rng, len(floored))
        if _bernoulli_exp_scalar(rate * (floored[i] - low), rng):
            return i, float_at_least(sens)
