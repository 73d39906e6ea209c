"""Keyed 64-bit hashing, identical in numpy and torch, and counter-based noise.

Local hashing reports hash cell keys with per-record seeds (the same bits on
the CPU and a GPU); the continual-observation histogram derives the uniform
integers behind the noise of every (cell, interval) from a secret seed
(:func:`hashed_bits`, read by ``_discrete.CounterDraws``), so the noise exists
for every cell without being stored. The mixer is SplitMix64's finaliser.
"""

import numpy as np

__all__ = ["hash_np", "hash_torch", "hashed_bits"]

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


def hash_np(seed, key):
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


def hash_torch(seed, key):
    """The same hash as :func:`hash_np` on int64 torch tensors."""
    k = key * _signed(_GOLDEN)
    return _lshr(_mix64_torch(_mix64_torch(k) ^ seed), 1)


def hashed_bits(seed, *parts):
    """Counter-based uint64 words: one per broadcast combination of the int64 ``parts`` under ``seed``."""
    h = np.asarray(seed, dtype=np.uint64)
    for p in parts:
        with np.errstate(over="ignore"):
            h = _mix64_np(h ^ (np.asarray(p).astype(np.uint64) * np.uint64(_GOLDEN)))
    return h


def _bits_to_open_unit(h):
    """Map uint64 words to the open interval (0, 1): the top 52 bits plus one half, times ``2**-52``.

    Every result ``(k + 1/2) 2**-52`` with ``0 <= k < 2**52`` is exactly
    representable (53 significant bits), so neither 0 nor 1 is ever reached
    (with the top 53 bits, ``2**53 - 1/2`` would round up to ``2**53``: 1.0).
    """
    return ((np.asarray(h, dtype=np.uint64) >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0 ** -52


def _uniform01(seed, *parts):
    """Counter-based uniforms in the open interval (0, 1): one per broadcast combination of the int64 ``parts``."""
    return _bits_to_open_unit(hashed_bits(seed, *parts))
