"""Dask collections as inputs: recognise them, split them into aligned row blocks, reduce per block.

The methods whose statistics add up over the rows (Bradley-Terry pair counts,
private k-means cell counts and sums, calibration grids) take a
``dask.array.Array`` or a ``dask.dataframe.DataFrame`` / ``Series`` and reduce
each block where it lives (a worker of a ``distributed`` cluster, or the local
threads); only the reduced statistics travel to the client. dask is imported
lazily: a collection can only exist once dask has been imported, so checking
``sys.modules`` first keeps ``import sklearn_icml`` (and every in-memory call)
free of dask.
"""

import sys

import numpy as np

__all__ = ["SUPPORTED", "aligned_blocks", "any_dask", "dask_client", "is_dask_collection", "n_columns",
           "reduce_blocks", "sum_combine"]

#: How the supported inputs are named in messages.
SUPPORTED = ("numpy arrays and other in-memory array-likes, dask.array.Array, dask.dataframe.DataFrame and "
             "dask.dataframe.Series")


def is_dask_collection(obj):
    """Whether ``obj`` is a dask collection (without importing dask when nothing imported it yet)."""
    if "dask" not in sys.modules:
        return False
    import dask

    return dask.is_dask_collection(obj)


def any_dask(*objs):
    """Whether any of ``objs`` is a dask collection."""
    return any(is_dask_collection(o) for o in objs)


def _kind(obj):
    """"array", "frame", "series" or None (another dask collection)."""
    import dask.array as da

    if isinstance(obj, da.Array):
        return "array"
    try:
        import dask.dataframe as dd
    except ImportError:  # dask without its dataframe extra
        return None
    if isinstance(obj, dd.DataFrame):
        return "frame"
    if isinstance(obj, dd.Series):
        return "series"
    return None


def _check_kind(obj, name, caller):
    kind = _kind(obj)
    if kind is None:
        raise TypeError(f"{caller}: {name} is a {type(obj).__module__}.{type(obj).__name__}, a dask collection "
                        f"this method cannot reduce; supported inputs are {SUPPORTED}.")
    return kind


def n_columns(X, name, caller):
    """Number of columns of a 2-D dask array or a dask DataFrame (no computation)."""
    kind = _check_kind(X, name, caller)
    if kind == "frame":
        return len(X.columns)
    if kind == "series" or X.ndim != 2:
        raise ValueError(f"{caller}: {name} must be 2-D (n_samples, n_features); got a "
                         f"{'Series' if kind == 'series' else f'{X.ndim}-D array'}.")
    return int(X.shape[1])


def _row_blocked(arr, row_chunks):
    """A dask array with all columns in one block, rechunked to ``row_chunks`` if given."""
    if arr.ndim > 1:
        arr = arr.rechunk({i: -1 for i in range(1, arr.ndim)})
    if row_chunks is not None and arr.chunks[0] != row_chunks:
        arr = arr.rechunk({0: row_chunks})
    return arr


def _delayed_rows(arrays):
    """Delayed row blocks of each dask array, optimised together.

    Arrays cut from one collection (``A[:, 0]`` and ``A[:, 1]``, say) share the
    tasks that produce its blocks: optimised together, those tasks stay shared,
    so one pass computes each block once (optimised one by one, each array would
    inline its own copy, and a lazily generated or disk-backed block would be
    produced once per array).
    """
    import dask

    with dask.config.set({"optimization.fuse.active": False}):  # low-level fusion would copy shared tasks
        arrays = dask.optimize(*arrays)
    out = []
    for arr in arrays:
        blocks = arr.to_delayed(optimize_graph=False)
        out.append(list(blocks.reshape(blocks.shape[0], -1)[:, 0]))
    return out


def aligned_blocks(caller, main_name, main, others):
    """Split ``main`` and the ``others`` (name -> array-like or None) into aligned row blocks.

    ``main`` is a dask collection; each other input is None, a dask collection,
    or an in-memory array-like (split on the client into the blocks of ``main``,
    whose row counts are computed when unknown). Returns a list over blocks of
    dicts name -> delayed block (or None).
    """
    import dask

    kind = _check_kind(main, main_name, caller)
    columns, arrays = {}, {}  # name -> delayed blocks; name -> dask array (their blocks made below, together)
    if kind == "array":
        row_chunks = main.chunks[0]
        known = not any(np.isnan(c) for c in row_chunks)
        arrays[main_name] = _row_blocked(main, None)
        n_blocks = len(row_chunks)
    else:
        row_chunks, known = None, False
        columns[main_name] = list(main.to_delayed())
        n_blocks = len(columns[main_name])
    lengths = None
    for name, obj in others.items():
        if obj is None:
            columns[name] = [None] * n_blocks
            continue
        if is_dask_collection(obj):
            other_kind = _check_kind(obj, name, caller)
            if other_kind == "array" and known:
                if obj.shape[0] != main.shape[0]:
                    raise ValueError(f"{caller}: {name} has {obj.shape[0]} rows but {main_name} has "
                                     f"{main.shape[0]}.")
                arrays[name] = _row_blocked(obj, row_chunks)
                continue
            if other_kind == "array":
                arrays[name] = _row_blocked(obj, None)
                n_other = len(obj.chunks[0])
            else:
                columns[name] = list(obj.to_delayed())
                n_other = len(columns[name])
            if n_other != n_blocks:
                raise ValueError(
                    f"{caller}: {name} has {n_other} partitions but {main_name} has {n_blocks}; pass "
                    f"columns of the same dask DataFrame, or dask arrays with the same row chunks.")
            continue
        values = np.asarray(obj)
        if lengths is None:
            lengths = ([int(c) for c in row_chunks] if known
                       else [int(v) for v in dask.compute(*[dask.delayed(len)(b) for b in columns[main_name]])])
        if values.shape[:1] != (sum(lengths),):
            raise ValueError(f"{caller}: {name} has {values.shape[:1]} rows but {main_name} has {sum(lengths)}.")
        bounds = np.cumsum([0] + lengths)
        columns[name] = [dask.delayed(values[a:b], pure=True) for a, b in zip(bounds[:-1], bounds[1:])]
    if arrays:
        columns.update(zip(arrays, _delayed_rows(list(arrays.values()))))
    columns = {name: columns[name] for name in [main_name, *others]}
    return [{name: blocks[i] for name, blocks in columns.items()} for i in range(n_blocks)]


def sum_combine(parts):
    """Element-wise sum of tuples of arrays (the combine step of additive statistics)."""
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(sum_combine([p[i] for p in parts]) for i in range(len(first)))
    total = first
    for p in parts[1:]:
        total = total + p
    return total


def reduce_blocks(func, blocks, *, combine=sum_combine, split_every=8):
    """``combine`` over blocks of ``func(block_dict)``, as a tree on the workers; only the result comes back.

    Parameters
    ----------
    func : callable
        Maps one dict of aligned blocks (see :func:`aligned_blocks`) to its
        statistics (arrays or tuples of arrays).
    blocks : list of dict
        From :func:`aligned_blocks`.
    combine : callable, default=sum_combine
        Maps a list of statistics to one; associative.
    split_every : int, default=8
        Fan-in of the tree.

    Returns
    -------
    object
        The reduced statistics, on the client.
    """
    import dask

    parts = [dask.delayed(func)(b) for b in blocks]
    if not parts:
        raise ValueError("the dask collection has no partitions.")
    while len(parts) > 1:
        parts = [dask.delayed(combine)(parts[i:i + split_every]) for i in range(0, len(parts), split_every)]
    (result,) = dask.compute(parts[0])
    return result


def dask_client():
    """The active ``distributed`` client, or None (local threads, or ``distributed`` not installed)."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        return None
