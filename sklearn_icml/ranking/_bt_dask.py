"""Bradley-Terry battles as Dask collections: the buckets reduced per block, then the in-memory Newton fit.

The likelihood, the sandwich and the multinomial bootstrap only see the
distinct battles with their summed weights (:class:`_bt_solver.Buckets`), so a
battle log of any length reduces to at most ``n_labels * n_items**2`` rows
without covariates. One pass over the blocks: each block collapses its battles
to distinct rows coded against its own competitors and outcome labels; the
tables are merged up a tree on the workers (codes remapped to the union of the
competitors and labels, identical rows summed). On the client the labels are
parsed as in memory, the inverse-probability weights normalised, and
:func:`_bt_solver.aggregate` builds the buckets the in-memory fit builds, in
the same order, so the fit that follows is the in-memory one.
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


class _Table:
    """One block's (or several merged blocks') battles, aggregated against its own competitors and labels.

    ``rows`` holds distinct ``(first, second, label, 1 / sampling_proba, covariates...)`` with their summed
    ``freq``; codes index ``items`` and ``labels``. ``sums`` = (kept weight, kept weight / proba).
    """

    def __init__(self, items, labels, a, b, lab, ipw, Z, freq, n_battles, sums):
        self.items, self.labels = items, labels
        self.a, self.b, self.lab, self.ipw, self.Z, self.freq = a, b, lab, ipw, Z, freq
        self.n_battles, self.sums = n_battles, sums


def _collapse(items, labels, a, b, lab, ipw, Z, freq, n_battles, sums):
    """Sum the weights of identical rows (exact: the likelihood only sees sums)."""
    key = (a.astype(np.int64) * len(items) + b) * max(len(labels), 1) + lab
    if Z.shape[1] == 0 and (len(ipw) == 0 or np.all(ipw == ipw[0])):
        uniq, inv = np.unique(key, return_inverse=True)
        w = np.full(len(uniq), ipw[0] if len(ipw) else 1.0)
        Zu = np.zeros((len(uniq), 0))
    else:
        rows, inv = np.unique(np.column_stack([key.astype(np.float64), ipw, Z]), axis=0, return_inverse=True)
        uniq, w, Zu = rows[:, 0].astype(np.int64), rows[:, 1], np.ascontiguousarray(rows[:, 2:])
    f = np.bincount(inv.reshape(-1), weights=freq, minlength=len(uniq))
    L, ab = max(len(labels), 1), uniq // max(len(labels), 1)
    return _Table(items, labels, ab // len(items) if len(items) else ab, ab % len(items) if len(items) else ab,
                  uniq % L, w, Zu, f, n_battles, sums)


def _block_table(block, **kw):
    """One pass: the block's distinct battles against its own competitors and labels."""
    ids, Z, y, freq, prob, keep = _block_arrays(block, **kw)
    labels, lab = factorize(y) if len(y) else (y, np.zeros(0, dtype=np.intp))
    ipw = np.ones(len(y)) if prob is None else 1.0 / prob
    sums = np.array([freq[keep].sum(), np.dot(freq[keep], ipw[keep]), len(y)])
    ids, Z, lab, freq, ipw = ids[keep], Z[keep], lab[keep], freq[keep], ipw[keep]
    if len(ids):
        items, codes = factorize(np.ascontiguousarray(ids).reshape(-1))
        codes = codes.reshape(-1, 2)
    else:
        items, codes = ids.reshape(-1), np.zeros((0, 2), dtype=np.intp)
    n_battles = (np.bincount(codes[:, 0], weights=freq, minlength=len(items))
                 + np.bincount(codes[:, 1], weights=freq, minlength=len(items)))
    return _collapse(items, labels, codes[:, 0], codes[:, 1], lab, ipw, Z, freq, n_battles, sums)


def _position(union, values):
    """Index of each of ``values`` in the sorted ``union`` (both from :func:`factorize`)."""
    if not len(values):
        return np.zeros(0, dtype=np.intp)
    return lookup_ids(union, np.column_stack([values, values]))[:, 0]


def _merge_tables(parts):
    items = factorize(np.concatenate([t.items for t in parts]))[0]
    labels = factorize(np.concatenate([t.labels for t in parts]))[0]
    cols = {name: [] for name in ("a", "b", "lab", "ipw", "Z", "freq")}
    n_battles = np.zeros(len(items))
    for t in parts:
        item_pos, label_pos = _position(items, t.items), _position(labels, t.labels)
        cols["a"].append(item_pos[t.a])
        cols["b"].append(item_pos[t.b])
        cols["lab"].append(label_pos[t.lab])
        for name in ("ipw", "Z", "freq"):
            cols[name].append(getattr(t, name))
        np.add.at(n_battles, item_pos, t.n_battles)
    merged = {name: np.concatenate(v) for name, v in cols.items()}
    return _collapse(items, labels, merged["a"], merged["b"], merged["lab"], merged["ipw"], merged["Z"],
                     merged["freq"], n_battles, sum_combine([t.sums for t in parts]))


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
    table = reduce_blocks(partial(_block_table, **kw), blocks, combine=_merge_tables)
    total_freq, total_ipw, n_rows = table.sums
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 is "
                         f"required by {name}.")
    classes, first_label, label_scores = parse_outcomes(name, table.labels, tie_labels=tie_labels,
                                                        win_labels=ranker.win_labels)
    if not len(table.freq):
        raise ValueError(f"{name}: no battle is left to fit (all weights are zero or all battles are ties "
                         "with ties='drop').")
    items = table.items  # sorted as in memory: factorize of the union of the blocks' sorted ids
    check_ids(name, items)
    ipw = None if sampling_proba is None else table.ipw / (total_ipw / total_freq)
    buckets = _bt_solver.aggregate(np.column_stack([table.a, table.b]), label_scores[table.lab], table.Z,
                                   table.freq, ipw, len(items))
    return items, classes, first_label, buckets, table.n_battles


def feature_names(X):
    """Column names of a Dask DataFrame when they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return np.asarray(list(columns), dtype=object)
