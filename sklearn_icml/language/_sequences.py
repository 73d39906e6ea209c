"""Token sequences as data: the language family's input contract and its validation.

A batch of sequences is a 2-D integer array ``(n_sequences, max_len)``: token
ids ``0 .. vocab_size - 1`` (the letters and the separator), padded on the
right with -1. ``predict_proba`` of the family returns
``(n_sequences, max_len, vocab_size)``: row ``t`` is the distribution of
``X[i, t + 1]`` after reading ``X[i, :t + 1]``; rows past a sequence's end are 0.
"""

import numpy as np
import scipy.sparse as sp

from ..utils._torch import as_numpy

__all__ = ["PAD", "check_sequences", "next_token_targets", "scored_positions"]

#: Padding id.
PAD = -1
#: Largest token id accepted: a vocabulary beyond 2**31 ids has no embedding table that fits in memory.
MAX_TOKEN_ID = 2**31 - 1


def check_sequences(X, *, vocab_size=None, name="X", caller="sequences"):
    """Validate a batch of padded token sequences and return it as an int64 array.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_sequences, max_len)
        Token ids, padded on the right with -1.
    vocab_size : int, default=None
        Ids must be below it when given.
    name : str, default="X"
        The argument's name, for messages.
    caller : str, default="sequences"
        Who validates (an estimator or function name), for messages.

    Returns
    -------
    ndarray of shape (n_sequences, max_len), dtype int64
        A new array; the caller's data is never modified.

    Raises
    ------
    ValueError
        On a shape other than 2-D, no sequence or no token, non-integer or
        non-finite values, ids below -1, padding followed by tokens, or an id
        outside the vocabulary (the id is named).
    """
    X = as_numpy(X)
    if sp.issparse(X):
        raise TypeError(f"{caller}: sparse data is not supported for {name}; pass a dense 2-D array of token ids.")
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise ValueError(f"{caller}: {name} must be a 2-D array of token ids padded with -1 ({exc}).") from None
    if arr.ndim != 2:
        raise ValueError(f"{caller}: {name} must be a 2-D array (n_sequences, max_len) of token ids padded with "
                         f"-1; got shape {arr.shape}.")
    if arr.shape[1] == 0:
        raise ValueError(f"{caller}: {name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required: "
                         "no token.")
    if arr.shape[0] == 0:
        raise ValueError(f"{caller}: {name} has 0 sample(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if arr.dtype.kind == "c":
        raise ValueError(f"{caller}: Complex data not supported; {name} must hold integer token ids.")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise ValueError(f"{caller}: {name} must hold integer token ids; got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{caller}: {name} contains NaN or infinity; token ids are integers.")
        if np.any(arr != np.round(arr)):
            bad = arr[arr != np.round(arr)].flat[0]
            raise ValueError(f"{caller}: {name} must hold integer token ids; got the value {bad!r}.")
    if arr.size and (arr.max() > MAX_TOKEN_ID or arr.min() < PAD):
        value = arr.max() if arr.max() > MAX_TOKEN_ID else arr.min()
        if value > MAX_TOKEN_ID:
            raise ValueError(f"{caller}: token id {value.item()!r} in {name} is too large; ids must be at most "
                             f"{MAX_TOKEN_ID}.")
    out = arr.astype(np.int64)
    if out.min() < PAD:
        raise ValueError(f"{caller}: token id {int(out.min())} in {name} is negative; only -1 (padding) is allowed.")
    pad = out == PAD
    if np.any(pad[:, :-1] & ~pad[:, 1:]):
        row = int(np.flatnonzero(np.any(pad[:, :-1] & ~pad[:, 1:], axis=1))[0])
        raise ValueError(f"{caller}: sequence {row} of {name} has tokens after padding; pad on the right only.")
    if vocab_size is not None and out.max() >= vocab_size:
        raise ValueError(f"{caller}: token id {int(out.max())} in {name} is out of the vocabulary "
                         f"(vocab_size={vocab_size}).")
    return out


def next_token_targets(X):
    """The token each position predicts: ``X[i, t + 1]`` (-1 past the end)."""
    targets = np.full_like(X, PAD)
    targets[:, :-1] = X[:, 1:]
    return targets


def scored_positions(X, separator):
    """Positions whose next token is a letter (neither the separator nor padding): those that are scored."""
    targets = next_token_targets(X)
    return (targets >= 0) & (targets != separator)
