"""The data contract of the space bonds: column blocks ``[base | expert_1 | ...]``, NaN for a missing expert.

One 2-D ``X`` holds, per row, the embeddings of one item in several spaces side
by side. A block that is entirely NaN marks an item of a modality that the
block's expert does not cover (an image for an audio-text expert). Only
expert blocks may be NaN, and only entirely: a NaN in the base block or in
part of an expert block is an error.
"""

import warnings
from numbers import Real

import numpy as np

from ..utils._validation import check_float32_range

__all__ = ["block_widths", "check_blocks", "l2_normalize", "resolve_mixing"]


def l2_normalize(Z):
    """Rows of ``Z`` divided by their Euclidean norm (a zero row stays zero).

    Each row is first divided by its largest magnitude, so rows of any scale (1e-300 or 1e300, where the squares
    under- or overflow) come out with unit norm.
    """
    Z = np.asarray(Z)
    scale = np.max(np.abs(Z), axis=1, keepdims=True) if Z.shape[1] else np.zeros((Z.shape[0], 1))
    Z = Z / np.where(scale > 0, scale, 1.0)
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.where(norms > 0, norms, 1.0)


def block_widths(n_features, n_base_features, expert_widths, n_experts, name, param="n_base_features"):
    """Widths ``[base, expert_1, ...]`` of the column blocks of ``X``.

    ``n_base_features=None`` with ``expert_widths=None`` splits the columns into
    ``n_experts + 1`` blocks as equal as possible (the first blocks one wider),
    with a warning that names the guess and ``param``, the caller's parameter that says it;
    a given base width leaves the rest to the experts (split as equally), and
    given expert widths leave the rest to the base.
    """
    if n_features < n_experts + 1:
        raise ValueError(f"{name} needs at least {n_experts + 1} features (a base block and {n_experts} expert "
                         f"block(s)); got {n_features} feature(s).")
    if expert_widths is not None:
        if any(isinstance(w, bool) or not isinstance(w, Real) or not float(w).is_integer() or w < 1
               for w in expert_widths):
            raise ValueError(f"{name}: expert_widths must hold positive whole numbers of columns; got "
                             f"{list(expert_widths)!r}.")
        expert_widths = [int(w) for w in expert_widths]
        if len(expert_widths) != n_experts:
            raise ValueError(f"{name}: expert_widths has {len(expert_widths)} entries for {n_experts} bond(s).")
        base = n_features - sum(expert_widths)
        if n_base_features is not None and n_base_features != base:
            raise ValueError(f"{name}: n_base_features={n_base_features} and expert_widths={expert_widths} do not "
                             f"add up to the {n_features} columns of X.")
        widths = [base, *expert_widths]
    elif n_base_features is None:
        widths = [len(b) for b in np.array_split(np.arange(n_features), n_experts + 1)]
        warnings.warn(f"{name}: {param} is None, so X's {n_features} columns are split into blocks of widths "
                      f"{widths} ([base, expert...]) by guess; pass {param} (the widths of the embeddings) to say "
                      "where the blocks end.", UserWarning, stacklevel=4)
    else:
        if n_base_features >= n_features:
            raise ValueError(f"{name}: n_base_features={n_base_features} leaves no expert columns in X with "
                             f"{n_features} feature(s).")
        rest = np.array_split(np.arange(n_features - n_base_features), n_experts)
        widths = [int(n_base_features), *(len(b) for b in rest)]
    if min(widths) < 1:
        raise ValueError(f"{name}: every block of X needs at least one column; the widths [base, experts...] are "
                         f"{widths} for {n_features} feature(s).")
    return widths


def check_blocks(X, widths, name):
    """Split validated ``X`` into its blocks; return ``(blocks, present)``.

    ``present[k]`` is the boolean mask of the rows whose expert block ``k`` is
    there (not all NaN). Raises a ValueError for a NaN in the base block or a
    partly NaN expert block.
    """
    if X.shape[1] != sum(widths):
        raise ValueError(f"{name}: X has {X.shape[1]} features but the blocks [base, experts...] are {widths} "
                         f"wide ({sum(widths)} features).")
    edges = np.cumsum([0, *widths])
    blocks = [X[:, lo:hi] for lo, hi in zip(edges[:-1], edges[1:])]
    nan_base = np.isnan(blocks[0]).any(axis=1)
    if nan_base.any():
        raise ValueError(f"{name}: X has NaN in the base (unified) part, columns 0..{widths[0] - 1}, in "
                         f"{int(nan_base.sum())} row(s) (first: row {int(np.flatnonzero(nan_base)[0])}); only an "
                         "expert part may be NaN, and only as a whole (an item the expert does not cover).")
    check_float32_range(X, name=name, reason="the norms and projections of the embeddings would overflow")
    present = []
    for k, block in enumerate(blocks[1:], 1):
        isnan = np.isnan(block)
        missing = isnan.all(axis=1)
        partial = isnan.any(axis=1) & ~missing
        if partial.any():
            raise ValueError(f"{name}: the expert part (columns {edges[k]}..{edges[k + 1] - 1}) of row "
                             f"{int(np.flatnonzero(partial)[0])} is partly NaN; an expert part is either complete "
                             "or entirely NaN (an item the expert does not cover).")
        present.append(~missing)
    return blocks, present


def resolve_mixing(mixing, groups, n_rows, name, param="mixing"):
    """The mixing factor of every row: a float for all, or a dict {group: factor} looked up by ``groups``."""
    if isinstance(mixing, dict):
        if groups is None:
            raise ValueError(f"{name}: {param} is a dict {{group: factor}} ({sorted(map(str, mixing))}), so "
                             "transform needs groups=<the group of each row>.")
        groups = np.asarray(groups)
        if groups.shape != (n_rows,):
            raise ValueError(f"{name}: groups must have one entry per row of X ({n_rows}); got shape "
                             f"{groups.shape}.")
        values = np.empty(n_rows)
        for g in np.unique(groups):
            label = g.item() if isinstance(g, np.generic) else g
            if g not in mixing:
                raise ValueError(f"{name}: group {label!r} has no factor in {param}={mixing!r}.")
            values[groups == g] = _check_factor(mixing[g], name, f"{param}[{label!r}]")
        return values[:, None]
    return np.full((n_rows, 1), _check_factor(mixing, name, param))


def _check_factor(value, name, label):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not (
            0.0 <= float(value) <= 1.0):
        raise ValueError(f"{name}: {label} must be a float in [0, 1]; got {value!r}.")
    return float(value)
