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

With ``bootstrap_resample="battles"`` the same pass draws the Poisson
bootstrap of the rows: per resample, every kept row of a block gets an
independent Poisson(1) count (drawn at once per distinct row and weight, as
a Poisson(count) draw); each table row then carries its weight followed by its
``n_bootstrap`` resampled weights, summed like the weight through the merges.
"""

from functools import partial

import numpy as np
from sklearn.utils import check_array, column_or_1d

from ..utils._dask import aligned_blocks, is_dask_collection, n_columns, reduce_blocks, sum_combine
from . import _bt_solver
from ._battles import _key, check_distinct, check_ids, factorize, lookup_ids, parse_outcomes, split_battles


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


def _sum_rows(inv, freq, n_rows):
    """Weights (a vector, or a matrix with one column per weight) summed over the rows that ``inv`` merges."""
    if freq.ndim == 1:
        return np.bincount(inv, weights=freq, minlength=n_rows)
    k = freq.shape[1]
    index = (inv[:, None] * k + np.arange(k)).reshape(-1)
    return np.bincount(index, weights=freq.reshape(-1), minlength=n_rows * k).reshape(n_rows, k)


def _poisson_resamples(inv, freq, n_rows, seeds, index):
    """Per distinct row, its weight in each of ``len(seeds)`` Poisson bootstrap resamples: ``(n_rows, n_boot)``.

    A row of weight ``f`` drawn ``k ~ Poisson(1)`` times weighs ``k * f``; the ``c`` rows that share a distinct
    row and a weight are drawn together, ``Poisson(c)`` being the law of the sum of their counts. The block's
    generator is seeded by the bootstrap seeds and the block's position.
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(s) for s in seeds], spawn_key=(int(index),)))
    B = len(seeds)
    if len(freq) and np.all(freq == freq[0]):
        counts = np.bincount(inv, minlength=n_rows)
        return (rng.poisson(counts, size=(B, n_rows)) * freq[0]).T.astype(np.float64)
    pairs, count = np.unique(np.column_stack([inv.astype(np.float64), freq]), axis=0, return_counts=True)
    row, weight = pairs[:, 0].astype(np.int64), pairs[:, 1]
    draws = rng.poisson(count, size=(B, len(count))) * weight
    index = (np.arange(B)[:, None] * n_rows + row[None, :]).reshape(-1)
    return np.bincount(index, weights=draws.reshape(-1), minlength=B * n_rows).reshape(B, n_rows).T


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
    inv = inv.reshape(-1)
    f = _sum_rows(inv, freq, len(uniq))
    L, ab = max(len(labels), 1), uniq // max(len(labels), 1)
    table = _Table(items, labels, ab // len(items) if len(items) else ab, ab % len(items) if len(items) else ab,
                   uniq % L, w, Zu, f, n_battles, sums)
    table.inv = inv
    return table


def _block_table(block, seeds=None, **kw):
    """One pass: the block's distinct battles against its own competitors and labels (and their resamples)."""
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
    table = _collapse(items, labels, codes[:, 0], codes[:, 1], lab, ipw, Z, freq, n_battles, sums)
    if seeds is not None:
        boot = _poisson_resamples(table.inv, freq, len(table.a), seeds, block["index"])
        table.freq = np.column_stack([table.freq, boot])
    table.inv = None  # not sent up the tree
    return table


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
    table = _collapse(items, labels, merged["a"], merged["b"], merged["lab"], merged["ipw"], merged["Z"],
                      merged["freq"], n_battles, sum_combine([t.sums for t in parts]))
    table.inv = None
    return table


def prepare_dask(ranker, X, y, sample_weight, sampling_proba, seeds=None):
    """Reduce Dask battles to what the in-memory fit needs.

    Returns
    -------
    items : ndarray of shape (n_items,)
    classes, first_label, buckets, n_battles
        As computed in memory from the same battles.
    freqs : ndarray of shape (len(seeds), n_buckets) or None
        With ``seeds``: the buckets' weights in each Poisson bootstrap resample of the rows.
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
    for index, block in enumerate(blocks):
        block["index"] = index
    table = reduce_blocks(partial(_block_table, seeds=seeds, **kw), blocks, combine=_merge_tables)
    freq, boot = (table.freq, None) if table.freq.ndim == 1 else (table.freq[:, 0], table.freq[:, 1:])
    total_freq, total_ipw, n_rows = table.sums
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 is "
                         f"required by {name}.")
    classes, first_label, label_scores = parse_outcomes(name, table.labels, tie_labels=tie_labels,
                                                        win_labels=ranker.win_labels)
    if not len(freq):
        raise ValueError(f"{name}: no battle is left to fit (all weights are zero or all battles are ties "
                         "with ties='drop').")
    items = table.items  # sorted as in memory: factorize of the union of the blocks' sorted ids
    check_ids(name, items)
    check_distinct(name, items, np.column_stack([table.a, table.b]), rows=False)
    ipw = None if sampling_proba is None else table.ipw / (total_ipw / total_freq)
    buckets, inv = _bt_solver.aggregate(np.column_stack([table.a, table.b]), label_scores[table.lab], table.Z,
                                        freq, ipw, len(items), return_inverse=True)
    freqs = None if boot is None else _sum_rows(inv, boot, len(buckets)).T
    # weighted count of each tie label, for the split of the tie probability (as in memory)
    row_w = freq if ipw is None else freq * ipw
    per_label = np.bincount(table.lab, weights=row_w, minlength=len(table.labels))
    ranker._tie_weights = {lab: float(per_label[i]) for i, lab in enumerate(table.labels.tolist())
                           if label_scores[i] == 0.5 and per_label[i] > 0}
    return items, classes, first_label, buckets, table.n_battles, freqs


def feature_names(X):
    """Column names of a Dask DataFrame when they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return np.asarray(list(columns), dtype=object)
