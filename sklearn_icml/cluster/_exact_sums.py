"""Per-group sums of bounded records that do not depend on the order of the records (or how they are split).

A floating-point sum depends on the order of its terms, so the per-cluster
sums of a Dask fit (added block by block, then up a tree) would differ in the
last bits from the in-memory sums. Here each coordinate is scaled by a power
of two so that it lies in ``[-1, 1)`` (the box is public, so the scale is
too), then cut into four 26-bit fixed-point pieces; the pieces are integers,
so their sums are exact in any order (``bincount`` in float64 is exact for up
to ``2**26`` rows per call, the blocks' totals are added as int64), and the
total is rounded once, correctly, at the end. The 104 bits kept cover every
coordinate down to ``2**-104`` times the box's half-width; the bits below
are dropped from each record the same way wherever it is summed. The result
is the correctly rounded sum of the (so truncated) coordinates: the same in
memory and for every chunking of a Dask collection.
"""

import math

import numpy as np

_PIECE_BITS = 26
_N_PIECES = 4
_ROWS_PER_CALL = 1 << 26  # |piece| <= 2**26: partial sums of this many stay below 2**52, exact in float64


def scale_exponents(half):
    """Per feature the exponent ``e`` with ``|x - c| <= half < 2**e``."""
    return np.frexp(np.maximum(np.asarray(half, dtype=np.float64), np.finfo(np.float64).tiny))[1]


def group_pieces(Z, groups, n_groups, exponents):
    """Exact int64 sums ``(n_groups, n_features, 4)`` of the fixed-point pieces of the rows of ``Z`` per group."""
    n, d = Z.shape
    out = np.zeros((n_groups, d, _N_PIECES), dtype=np.int64)
    scale = np.ldexp(1.0, _PIECE_BITS - exponents)  # powers of two: the products below are exact
    for start in range(0, n, _ROWS_PER_CALL):
        rest = Z[start:start + _ROWS_PER_CALL] * scale
        index = (groups[start:start + _ROWS_PER_CALL, None] * d + np.arange(d)).reshape(-1)
        piece = np.empty_like(rest)
        for j in range(_N_PIECES):
            if j:
                rest *= float(1 << _PIECE_BITS)
            np.trunc(rest, out=piece)
            rest -= piece  # exact: the fraction of a float
            sums = np.bincount(index, weights=piece.reshape(-1), minlength=n_groups * d)
            out[:, :, j] += sums.astype(np.int64).reshape(n_groups, d)
    return out


def pieces_to_sums(pieces, exponents):
    """The correctly rounded sums ``(n_groups, n_features)`` from the summed pieces."""
    n_groups, d, _ = pieces.shape
    sums = np.empty((n_groups, d))
    shift = _PIECE_BITS * _N_PIECES
    for g in range(n_groups):
        for f in range(d):
            total = 0
            for j in range(_N_PIECES):
                total = (total << _PIECE_BITS) + int(pieces[g, f, j])
            sums[g, f] = math.ldexp(float(total), int(exponents[f]) - shift)
    return sums


def group_sums(Z, groups, n_groups, half):
    """Per-group sums of the rows of ``Z`` (``|Z| <= half`` per feature), independent of the rows' order."""
    exponents = scale_exponents(half)
    return pieces_to_sums(group_pieces(Z, np.asarray(groups, dtype=np.int64), n_groups, exponents), exponents)
