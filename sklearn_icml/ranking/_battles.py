"""Battles as data: competitor ids, outcome labels, covariates (shared by the ranking family).

A battle is one row of ``X``: column 0 holds the id of the first competitor,
column 1 the id of the second, and further columns (if any) are numeric battle
covariates. ``y`` holds the outcome label of each battle. The helpers here turn
that into integer item codes, an outcome score in {1, 0.5, 0} ("first won",
"tie", "second won") and a float covariate matrix, and back.
"""

import math

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

#: FastChat's outcome labels: ``"model_a"`` means the first competitor won.
FASTCHAT_WIN_LABELS = ("model_a", "model_b")
#: FastChat's tie labels.
DEFAULT_TIE_LABELS = ("tie", "tie (bothbad)")


class BattleInputMixin:
    """Input tags of an estimator whose ``X`` holds battles, not a feature matrix.

    Each row is two competitor ids (strings or categories allowed), then any
    covariates. scikit-learn's data checks feed random matrices, which are no
    battle logs (they hold self-battles); its API checks and the house checks
    run on real battles instead.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags


def as_battle_array(X):
    """Turn a plain sequence into an array without stringifying numbers.

    ``np.asarray`` on a list that mixes strings and numbers gives a string
    array ('3' instead of 3); an object array keeps each value as it is.
    Arrays and DataFrames are returned unchanged (``validate_data`` handles
    them).
    """
    if hasattr(X, "dtype") or hasattr(X, "dtypes") or hasattr(X, "__array__"):
        return X
    if isinstance(X, (list, tuple)):
        arr = np.asarray(X)
        if arr.dtype.kind in "USV" or arr.dtype == object:
            return np.asarray(X, dtype=object)
        return arr
    return X


def _key(value):
    """A hashable key for a competitor id (unhashable ids are keyed by their repr)."""
    try:
        hash(value)
    except TypeError:
        return ("__unhashable__", type(value).__name__, repr(value))
    return value


def _sort_keys(keys):
    """Sort ids when they are mutually comparable, else by (type name, repr): deterministic either way."""
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=lambda k: (type(k).__name__, repr(k)))


def factorize(values):
    """Sorted distinct values of a 1-D array and the code of each element.

    Like ``np.unique(values, return_inverse=True)``, but linear-time for
    integers of a moderate range and for strings with few distinct values
    (outcome labels: no string sort of a million rows), and hash-based for
    object arrays (pandas' hash table when pandas is installed, else a dict),
    whose ids may be of mixed types (then ordered by type name and repr) or
    unhashable (then keyed by repr).
    """
    n = values.size
    kind = values.dtype.kind
    if kind in "biu" and n:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 4 * n + 1024:
            shifted = (values.astype(np.int64) - lo).astype(np.intp)
            present = np.bincount(shifted, minlength=hi - lo + 1) > 0
            rank = np.cumsum(present) - 1
            return (np.flatnonzero(present) + lo).astype(values.dtype), rank[shifted]
    if kind in "US" and n:
        found = _few_distinct(values, limit=16)
        if found is not None:
            return found
    if kind != "O":
        uniques, inv = np.unique(values, return_inverse=True)
        return uniques, inv.reshape(-1).astype(np.intp)
    try:  # pandas' hash table when installed: hashing in C, no Python object per id
        import pandas as pd

        codes, keys = pd.factorize(values, use_na_sentinel=False)
        keys = list(keys)
    except (ImportError, TypeError):  # no pandas, or unhashable ids
        table = {}
        codes = np.fromiter((table.setdefault(_key(v), len(table)) for v in values), dtype=np.intp, count=n)
        keys = list(table)
    ordered = _sort_keys(keys)
    position = {k: i for i, k in enumerate(ordered)}
    remap = np.array([position[k] for k in keys], dtype=np.intp)
    uniques = np.empty(len(ordered), dtype=object)
    uniques[:] = ordered
    return uniques, remap[codes] if n else codes


def _few_distinct(values, limit):
    """factorize by repeated vectorised comparisons when there are at most ``limit`` distinct values."""
    codes = np.full(values.size, -1, dtype=np.intp)
    uniques = []
    start = 0
    while True:
        rest = np.flatnonzero(codes[start:] < 0)
        if not len(rest):
            break
        if len(uniques) == limit:
            return None
        start += rest[0]
        codes[values == values[start]] = len(uniques)
        uniques.append(values[start])
    uniques = np.asarray(uniques, dtype=values.dtype)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return uniques[order], rank[codes]


def encode_ids(ids):
    """Integer codes for the ids in ``ids`` (shape (n, 2)).

    Returns
    -------
    items : ndarray of shape (n_items,)
        The distinct ids, sorted (numbers and strings natively; mixed or
        unorderable ids by type name and repr).
    codes : ndarray of shape (n, 2)
        Index of each id in ``items``.
    """
    items, codes = factorize(np.ascontiguousarray(ids).reshape(-1))
    return items, codes.reshape(-1, 2)


def lookup_ids(items, ids):
    """Codes of ``ids`` (shape (n, 2)) in ``items``; -1 for ids not in ``items``."""
    flat = ids.reshape(-1)
    both_numeric = items.dtype.kind in "biuf" and flat.dtype.kind in "biuf"
    both_str = items.dtype.kind in "US" and flat.dtype.kind in "US"
    if (both_numeric or both_str) and len(items):
        pos = np.clip(np.searchsorted(items, flat), 0, len(items) - 1)
        codes = np.where(items[pos] == flat, pos, -1)
        return codes.reshape(-1, 2).astype(np.intp)
    table = {_key(v): i for i, v in enumerate(items)}
    codes = np.fromiter((table.get(_key(v), -1) for v in flat), dtype=np.intp, count=flat.size)
    return codes.reshape(-1, 2)


def _is_missing(value):
    """Whether a competitor id is None or a non-finite number (NaN, inf)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating, complex, np.complexfloating)):
        return not np.isfinite(value)
    return False


def check_ids(name, items, *, what="X"):
    """Reject missing competitor ids: None, NaN or infinity.

    Parameters
    ----------
    name : str
        The estimator's name, for messages.
    items : array-like
        Ids to check: the distinct ids found by :func:`encode_ids` (checking
        them costs nothing next to the battles), or any ids.
    what : str, default="X"
        Where the ids came from, for messages.

    Notes
    -----
    NaN is never equal to itself, so a NaN id would become a new competitor on
    each row; None and infinity are no competitor's name.
    """
    items = np.asarray(items).reshape(-1)
    if items.dtype.kind in "fc":
        missing = items[~np.isfinite(items)]
    elif items.dtype.kind == "O":
        missing = [v for v in items if _is_missing(v)]
    else:
        missing = []
    if len(missing):
        shown = repr(missing[0])
        if items.dtype.kind == "O" and isinstance(missing[0], float) and math.isnan(missing[0]):
            shown = "None or NaN"  # the factorization of object ids keeps one missing value for both
        raise ValueError(f"{name}: competitor ids must not be None, NaN or infinite; {what} holds "
                         f"{shown}. Drop these battles or give the competitors names.")


def check_distinct(name, items, codes, rows=None, *, what="X"):
    """Reject battles of a competitor with itself.

    Parameters
    ----------
    name : str
        The estimator's name, for messages.
    items : ndarray of shape (n_items,)
        The competitors that ``codes`` index.
    codes : ndarray of shape (n_battles, 2)
        Codes of the first and second competitor of each battle.
    rows : ndarray of shape (n_battles,), False or None, default=None
        Row of ``X`` of each battle, for messages (``arange(n_battles)`` when
        None; False when the rows are not known, as for aggregated blocks).
    what : str, default="X"
        Where the battles came from, for messages.

    Notes
    -----
    A battle needs two different competitors: a self-battle is no comparison
    (its Bradley-Terry logit, and its Elo update, do not depend on any rating)
    and in a battle log it is a data error, such as an id copied into both
    columns.
    """
    same = np.flatnonzero(codes[:, 0] == codes[:, 1])
    if not same.size:
        return
    example = f"{items[codes[same[0], 0]]!r} against {items[codes[same[0], 1]]!r}"
    if rows is False:
        where = f"{same.size} distinct battle(s) of {what} pit a competitor against itself (e.g. {example})"
    else:
        rows = same if rows is None else np.asarray(rows)[same]
        shown = ", ".join(str(int(r)) for r in rows[:5]) + (", ..." if rows.size > 5 else "")
        where = f"{same.size} row(s) of {what} pit a competitor against itself (row(s) {shown}: e.g. {example})"
    raise ValueError(f"{name}: a battle needs two different competitors; {where}. Drop these rows.")


def split_battles(name, X):
    """Split a validated ``X`` into its id columns (n, 2) and float covariates (n, p)."""
    ids = X[:, :2]
    try:
        covariates = np.asarray(X[:, 2:], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name}: columns 2 and beyond of X are battle covariates and must be numeric; "
            f"converting them to float failed ({exc})."
        ) from None
    if covariates.size and not np.all(np.isfinite(covariates)):
        raise ValueError(f"{name}: the battle covariates (columns 2 and beyond of X) contain NaN or infinity.")
    return ids, covariates


def _is_in(label, labels):
    for other in labels:
        try:
            if label == other:
                return True
        except Exception:  # incomparable types never match
            continue
    return False


def parse_outcomes(name, y, *, tie_labels, win_labels, classes=None):
    """Map outcome labels to scores for the first competitor.

    Parameters
    ----------
    name : str
        The estimator's name, for messages.
    y : ndarray of shape (n,)
        Outcome labels.
    tie_labels : sequence
        Labels that mean a tie.
    win_labels : "auto" or pair
        ``(label meaning the first competitor won, label meaning the second won)``;
        ``"auto"`` takes FastChat's ``("model_a", "model_b")`` when y uses them,
        else the two non-tie labels of y sorted, the larger meaning that the
        first competitor won (scikit-learn's positive class).
    classes : ndarray of shape (2,), default=None
        Already fixed classes (``partial_fit``): y must only use them and ties.

    Returns
    -------
    classes : ndarray of shape (2,)
        The two outcome labels, sorted.
    first_label : object
        The element of ``classes`` that means the first competitor won.
    score : ndarray of shape (n,)
        1.0 (first won), 0.0 (second won) or 0.5 (tie).
    """
    labels, inv = factorize(np.asarray(y).reshape(-1))
    # the label type (binary, multiclass, continuous, unknown) is a property of the distinct labels
    check_classification_targets(labels)
    tie = np.array([_is_in(lab, tie_labels) for lab in labels], dtype=bool)
    decisive = labels[~tie]
    if classes is not None:
        first_label, second_label = classes_orientation(classes, win_labels)
        unknown = [lab for lab in decisive if not _is_in(lab, classes)]
        if unknown:
            raise ValueError(f"{name}: y contains labels {unknown!r} that are neither classes_ "
                             f"{list(classes)!r} nor tie labels {list(tie_labels)!r}.")
    elif isinstance(win_labels, str):  # "auto"
        if len(decisive) > 2:
            raise ValueError(
                f"Only binary classification is supported. {name} expects two decisive outcome classes (first "
                f"competitor won / second won) plus tie labels {list(tie_labels)!r}; y has classes "
                f"{list(decisive)!r}. Pass the labels of ties as tie_labels."
            )
        if len(decisive) and all(_is_in(lab, FASTCHAT_WIN_LABELS) for lab in decisive):
            first_label, second_label = FASTCHAT_WIN_LABELS
            classes = decisive if len(decisive) == 2 else _label_array(FASTCHAT_WIN_LABELS, labels.dtype)
        elif len(decisive) == 2:
            second_label, first_label = decisive[0], decisive[1]
            classes = decisive
        else:
            raise ValueError(
                f"{name} needs battles of both outcome classes to tell which label means that the first "
                f"competitor won; y has {len(decisive)} class{'' if len(decisive) == 1 else 'es'} besides ties "
                f"{list(decisive)!r}. Pass "
                "win_labels=(first_wins_label, second_wins_label), e.g. for (winner, loser) data."
            )
    else:
        if len(win_labels) != 2:
            raise ValueError(f"{name}: win_labels must be 'auto' or a pair (first_wins, second_wins); "
                             f"got {win_labels!r}.")
        first_label, second_label = win_labels
        if _is_in(first_label, [second_label]):
            raise ValueError(f"{name}: the two win_labels must differ; got {win_labels!r}.")
        unknown = [lab for lab in decisive if not _is_in(lab, win_labels)]
        if unknown:
            raise ValueError(f"{name}: y contains labels {unknown!r} that are neither win_labels "
                             f"{list(win_labels)!r} nor tie labels {list(tie_labels)!r}.")
        classes = _label_array(win_labels, labels.dtype)
    label_score = np.array([0.5 if t else (1.0 if _is_in(lab, [first_label]) else 0.0)
                            for lab, t in zip(labels, tie)], dtype=np.float64)
    return classes, first_label, label_score[inv]


def _label_array(pair, dtype):
    """The two labels of ``pair`` as a sorted array, in y's dtype family where they fit."""
    pair = _sort_keys(list(pair))
    if dtype.kind in "biuf" and all(isinstance(v, (int, float, np.number)) for v in pair):
        return np.asarray(pair)
    if dtype.kind in "US" and all(isinstance(v, str) for v in pair):
        return np.asarray(pair)
    out = np.empty(2, dtype=object)
    out[:] = pair
    return out


def classes_orientation(classes, win_labels):
    """(first_label, second_label) for fitted ``classes`` (see :func:`parse_outcomes`)."""
    if not isinstance(win_labels, str):
        return tuple(win_labels)
    if all(_is_in(lab, FASTCHAT_WIN_LABELS) for lab in classes):
        return FASTCHAT_WIN_LABELS
    return classes[1], classes[0]


def pair_graph_report(n_items, a, b, score, items):
    """Why the maximum-likelihood Bradley-Terry ratings do not exist, or None when they do.

    ``a``, ``b`` are the codes of the decisive-or-tied battles with positive
    weight and ``score`` their outcome for ``a``. The ratings exist (without
    covariates) exactly when the "beat" graph is strongly connected (Zermelo
    1929, Ford 1957): every split of the competitors into two groups has a win
    in each direction.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    keep = a != b
    a, b, score = a[keep], b[keep], score[keep]
    played = np.zeros(n_items, dtype=bool)
    played[a] = True
    played[b] = True
    ones = np.ones(len(a))
    undirected = coo_matrix((ones, (a, b)), shape=(n_items, n_items)).tocsr()
    n_comp, comp = connected_components(undirected, directed=False)
    if n_comp > 1:
        sizes = np.bincount(comp)
        small = np.argsort(sizes)[0]
        members = items[np.flatnonzero(comp == small)[:5]].tolist()
        never = items[np.flatnonzero(~played)[:5]].tolist()
        extra = f"; competitors with no battle: {never!r}" if len(never) else ""
        return (f"the comparison graph has {n_comp} disconnected components (e.g. {members!r} are never "
                f"compared with the rest{extra}), so ratings of different components are not comparable")
    # winner -> loser edges; a tie is an edge both ways
    src = np.concatenate([a[score > 0], b[score < 1]])
    dst = np.concatenate([b[score > 0], a[score < 1]])
    beat = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n_items, n_items)).tocsr()
    n_strong, strong = connected_components(beat, directed=True, connection="strong")
    if n_strong > 1:
        # components that never lose to another component, and those that never win
        cross = strong[src] != strong[dst]
        loses = np.zeros(n_strong, dtype=bool)
        wins = np.zeros(n_strong, dtype=bool)
        loses[strong[dst[cross]]] = True
        wins[strong[src[cross]]] = True
        undefeated = items[np.flatnonzero(~loses[strong])[:5]].tolist()
        winless = items[np.flatnonzero(~wins[strong])[:5]].tolist()
        return (f"some competitors never lose against the others (e.g. {undefeated!r}) or never win against "
                f"them (e.g. {winless!r}), so their maximum-likelihood ratings are infinite")
    return None
