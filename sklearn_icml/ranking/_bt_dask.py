"""Bradley-Terry battles as Dask collections: the buckets reduced per block, then the in-memory Newton fit.

The likelihood, the sandwich and the multinomial bootstrap only see the
distinct battles with their summed weights (:class:`_bt_solver.Buckets`), so a
battle log of any length reduces to at most ``3 * n_items**2`` rows without
covariates. Two passes over the blocks:

1. the distinct competitor ids (of the battles that are fitted), the distinct
   outcome labels, and the sums that normalise the inverse-probability weights;
2. per block, the buckets of its battles (codes against the global, sorted
   competitor list), merged pairwise up a tree on the workers.

The merged buckets are those :func:`_bt_solver.aggregate` builds in memory,
in the same order, so the fit that follows is the in-memory one.
"""

from functools import partial

import numpy as np
from sklearn.utils import check_array, column_or_1d

from ..utils._dask import aligned_blocks, is_dask_collection, n_columns, reduce_blocks, sum_combine
from . import _bt_solver
from ._battles import _key, check_ids, factorize, lookup_ids, parse_outcomes, split_battles


def _block_arrays(block, *, name, n_features, tie_keys, ties):
    """One block as (ids, Z, y, freq, prob, keep) numpy arrays, validated as the in-memory fit does."""
    X = check_array(block["X"], dtype=None, ensure_all_finite=False, ensure_min_samples=0, ensure_2d=True)
    if X.shape[1] != n_features:
        raise ValueError(f"{name}: a block of X has {X.shape[1]} columns; expected {n_features}.")
    ids, Z = split_battles(name, X)
    y = column_or_1d(np.asarray(block["y"]))
    if len(y) != len(X):
        raise ValueError(f"{name}: a block of y has {len(y)} rows but its block of X has {len(X)}; X and y must "
                         "be aligned (the same partitions).")
    freq = np.ones(len(X))
    if block["sample_weight"] is not None:
        freq = np.asarray(block["sample_weight"], dtype=np.float64).reshape(-1)
        if freq.shape != y.shape or not np.all(np.isfinite(freq)) or np.any(freq < 0):
            raise ValueError(f"{name}: sample_weight must hold one finite, non-negative weight per battle.")
    prob = None
    if block["sampling_proba"] is not None:
        prob = np.asarray(block["sampling_proba"], dtype=np.float64).reshape(-1)
        if prob.shape != y.shape or not np.all((prob > 0) & (prob <= 1)):
            raise ValueError(f"{name}: sampling_proba must hold one probability in (0, 1] per battle.")
    keep = freq > 0
    if ties == "drop" and len(y):
        labels, inv = factorize(y)
        is_tie = np.array([_key(lab) in tie_keys for lab in labels], dtype=bool)
        keep &= ~is_tie[inv]
    return ids, Z, y, freq, prob, keep


def _first_pass(block, **kw):
    """Distinct kept ids, distinct labels, and the sums (freq, freq / prob) of the kept battles."""
    ids, _, y, freq, prob, keep = _block_arrays(block, **kw)
    items = factorize(np.ascontiguousarray(ids[keep]).reshape(-1))[0] if keep.any() else ids[:0].reshape(-1)
    labels = factorize(y)[0] if len(y) else y
    sums = np.array([freq[keep].sum(), 0.0 if prob is None else np.dot(freq[keep], 1.0 / prob[keep]),
                     keep.sum(), len(y)])
    return items, labels, sums


def _merge_first(parts):
    items = factorize(np.concatenate([p[0] for p in parts]))[0]
    labels = factorize(np.concatenate([p[1] for p in parts]))[0]
    return items, labels, sum_combine([p[2] for p in parts])


def _second_pass(block, *, items, label_keys, label_scores, ipw_scale, **kw):
    """The block's buckets against the global competitor list, and its per-competitor battle weights."""
    ids, Z, y, freq, prob, keep = _block_arrays(block, **kw)
    M = len(items)
    ids, Z, y, freq = ids[keep], Z[keep], y[keep], freq[keep]
    ipw = None if prob is None else (1.0 / prob[keep]) / ipw_scale
    if not len(y):
        return None, np.zeros(M)
    labels, inv = factorize(y)
    score = np.array([label_scores[label_keys[_key(lab)]] for lab in labels])[inv]
    codes = lookup_ids(items, ids)
    n_battles = (np.bincount(codes[:, 0], weights=freq, minlength=M)
                 + np.bincount(codes[:, 1], weights=freq, minlength=M))
    return _bt_solver.aggregate(codes, score, Z, freq, ipw, M), n_battles


def _merge_second(parts, *, n_items):
    buckets = [p[0] for p in parts if p[0] is not None]
    n_battles = sum_combine([p[1] for p in parts])
    if not buckets:
        return None, n_battles
    return merge_buckets(buckets, n_items), n_battles


def merge_buckets(buckets, n_items):
    """Buckets of the union of the battles of several :class:`Buckets` (exact: weights add)."""
    codes = np.column_stack([np.concatenate([b.a for b in buckets]), np.concatenate([b.b for b in buckets])])
    score = np.concatenate([b.y for b in buckets])
    Z = np.concatenate([b.Z for b in buckets])
    freq = np.concatenate([b.freq for b in buckets])
    ipw = np.concatenate([b.ipw for b in buckets])
    return _bt_solver.aggregate(codes, score, Z, freq, ipw, n_items)


def prepare_dask(ranker, X, y, sample_weight, sampling_proba):
    """Reduce Dask battles to what the in-memory fit needs.

    Returns
    -------
    items : ndarray of shape (n_items,)
    classes, first_label, buckets, n_battles
        As computed in memory from the same battles.
    """
    name = type(ranker).__name__
    if not is_dask_collection(X):
        raise TypeError(f"{name}: y, sample_weight or sampling_proba is a Dask collection but X is a "
                        f"{type(X).__name__}; pass X as a dask.array.Array or dask.dataframe.DataFrame too, or "
                        "all inputs in memory.")
    n_features = n_columns(X, "X", name)
    if n_features < 2:
        raise ValueError(f"{name}: X must have at least 2 columns (the two competitor ids); got {n_features}.")
    blocks = aligned_blocks(name, "X", X, {"y": y, "sample_weight": sample_weight,
                                           "sampling_proba": sampling_proba})
    tie_labels = tuple(ranker.tie_labels)
    kw = dict(name=name, n_features=n_features, tie_keys={_key(t) for t in tie_labels}, ties=ranker.ties)
    items, labels, (total_freq, total_ipw, n_kept, n_rows) = reduce_blocks(
        partial(_first_pass, **kw), blocks, combine=_merge_first)
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 is "
                         f"required by {name}.")
    classes, first_label, label_scores = parse_outcomes(name, labels, tie_labels=tie_labels,
                                                        win_labels=ranker.win_labels)
    if n_kept == 0:
        raise ValueError(f"{name}: no battle is left to fit (all weights are zero or all battles are ties "
                         "with ties='drop').")
    check_ids(name, items)  # sorted as in memory: factorize of the union of the blocks' sorted ids
    ipw_scale = total_ipw / total_freq if sampling_proba is not None else 1.0
    label_keys = {_key(lab): i for i, lab in enumerate(labels)}
    buckets, n_battles = reduce_blocks(
        partial(_second_pass, items=items, label_keys=label_keys, label_scores=label_scores,
                ipw_scale=ipw_scale, **kw),
        blocks, combine=partial(_merge_second, n_items=len(items)))
    return items, classes, first_label, buckets, n_battles


def feature_names(X):
    """Column names of a Dask DataFrame when they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return np.asarray(list(columns), dtype=object)
