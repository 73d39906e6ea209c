"""Quadtree cells of the unit cube: integer coordinates, packed keys, per-level counts, merged tables.

A record in the unit cube lies in exactly one cell per level; level ``l`` has
``2**l`` cells per side. Integer cell coordinates are packed into one int64
key per cell (``n_dims * n_levels <= 62``).
"""

import numpy as np

__all__ = ["MAX_CANDIDATES", "check_geometry", "children_offsets", "level_counts", "lookup", "merge_step_tables",
           "pack_keys", "to_unit", "unit_cells"]

#: Upper bound on the number of candidate cells examined per level; past it the
#: growth stops (a rule on noisy counts only, hence post-processing).
MAX_CANDIDATES = 1 << 20


def check_geometry(n_dims, n_levels):
    """Refuse trees whose cell keys do not fit in 62 bits."""
    if n_dims * n_levels > 62:
        raise ValueError(
            f"a quadtree of {n_levels} levels in {n_dims} dimensions needs {n_dims * n_levels} bits per cell "
            f"key; at most 62 are supported (lower n_levels or the number of dimensions)."
        )


def pack_keys(cells, level):
    """Pack integer cell coordinates ``(m, d)`` at ``level`` into int64 keys."""
    cells = np.asarray(cells, dtype=np.int64)
    shifts = np.arange(cells.shape[1], dtype=np.int64) * level
    return np.bitwise_or.reduce(cells << shifts, axis=1) if cells.shape[1] else np.zeros(len(cells), np.int64)


def children_offsets(n_dims):
    """The ``2**n_dims`` 0/1 offsets of a cell's children."""
    return ((np.arange(2 ** n_dims)[:, None] >> np.arange(n_dims)[None, :]) & 1).astype(np.int64)


def unit_cells(U, n_levels):
    """Deepest-level integer cell coordinates of points ``U`` in the unit cube (clipped)."""
    side = 1 << n_levels
    return np.clip(np.floor(np.asarray(U, dtype=np.float64) * side), 0, side - 1).astype(np.int64)


def level_counts(Q, n_levels, device=None):
    """Per level 1..n_levels: (sorted unique keys, counts) of the points' cells.

    ``Q`` holds deepest-level coordinates. ``device=None`` counts in numpy; a
    torch device counts there (``torch.unique``) and brings the small result
    back.
    """
    out = []
    if device is None:
        for level in range(1, n_levels + 1):
            keys = pack_keys(Q >> (n_levels - level), level)
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


def lookup(sorted_keys, values, query):
    """values[sorted_keys == query] for each query key, 0 where absent."""
    if len(sorted_keys) == 0:
        shape = (len(query),) + values.shape[1:]
        return np.zeros(shape, dtype=np.float64)
    idx = np.clip(np.searchsorted(sorted_keys, query), 0, len(sorted_keys) - 1)
    hit = sorted_keys[idx] == query
    out = np.where(hit.reshape((-1,) + (1,) * (values.ndim - 1)), values[idx], 0.0)
    return out.astype(np.float64)


def to_unit(X, lower, upper):
    """Map points of the box ``[lower, upper]`` to the unit cube (clipping those outside)."""
    return np.clip((X - lower) / (upper - lower), 0.0, 1.0)


def _merge_keyed(tables):
    keys = np.concatenate([k for k, _ in tables])
    uniq, inv = np.unique(keys, return_inverse=True)
    values = np.concatenate([v for _, v in tables])
    acc = np.zeros((len(uniq),) + values.shape[1:], dtype=values.dtype)
    np.add.at(acc, inv.reshape(-1), values)
    return uniq, acc


def merge_step_tables(parts):
    """Tables of the union of disjoint record sets.

    ``parts`` is a list of per-step tables (``step_tables`` of the continual
    histogram); values keep their dtype, so integer tables add exactly.
    """
    per_level = [_merge_keyed([p[0][level] for p in parts]) for level in range(len(parts[0][0]))]
    sums = None
    if parts[0][1] is not None:
        sums = [None] + [_merge_keyed([p[1][level] for p in parts]) for level in range(1, len(parts[0][1]))]
    return per_level, sums
