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
are dropped from each record the same way wherever it is summed (toward 0,
so no coordinate grows and the clipping bounds still hold). The result
is the correctly rounded sum of the (so truncated) coordinates: the same in
memory and for every chunking of a Dask collection.

The same pieces give the per-cell sums of a continual-observation stream
(``PrivateKMeans.partial_fit``): :func:`step_pieces` computes a step's exact
tables (the tables of a step's blocks add up with
``privacy._continual.merge_step_tables``, exactly: they are integers), and
:func:`step_sums` rounds them once into the tables the stream keeps.
"""

import numpy as np

from ..utils._cells import pack_keys, unit_cells

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
    total = pieces[..., 0].astype(object)  # Python integers: the total is exact, then rounded once
    for j in range(1, _N_PIECES):
        total = (total << _PIECE_BITS) + pieces[..., j].astype(object)
    sums = total.astype(np.float64).reshape(pieces.shape[:-1])  # int -> float rounds to nearest, ties to even
    return np.ldexp(sums, np.asarray(exponents, dtype=np.int64) - _PIECE_BITS * _N_PIECES)


def group_sums(Z, groups, n_groups, half):
    """Per-group sums of the rows of ``Z`` (``|Z| <= half`` per feature), independent of the rows' order."""
    exponents = scale_exponents(half)
    return pieces_to_sums(group_pieces(Z, np.asarray(groups, dtype=np.int64), n_groups, exponents), exponents)


def step_pieces(U, n_levels, Z, exponents):
    """Exact tables of one stream step: per level 0..n_levels the sorted cell keys and counts (float64), per
    level 1..n_levels the keys and the int64 pieces of the cells' sums of ``Z`` (index 0 is None).

    ``U`` holds the records in the unit cube (their cells), ``Z`` their values
    (``|Z| < 2**exponents`` per feature).
    """
    Q = unit_cells(U, n_levels)
    per_level = [(np.zeros(1, dtype=np.int64), np.array([float(len(Q))]))]
    pieces = [None]
    for level in range(1, n_levels + 1):
        keys = pack_keys(Q >> (n_levels - level), level)
        uniq, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
        per_level.append((uniq, counts.astype(np.float64)))
        pieces.append((uniq, group_pieces(Z, inv.reshape(-1).astype(np.int64), len(uniq), exponents)))
    return per_level, pieces


def step_sums(tables, exponents):
    """``(per_level, sums)`` for ``ContinualQuadtreeHistogram.add_step_tables``: the pieces rounded once."""
    per_level, pieces = tables
    return per_level, [None] + [(keys, pieces_to_sums(p, exponents)) for keys, p in pieces[1:]]
