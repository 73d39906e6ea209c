"""Scores of next-token predictors on automaton languages: DFA accuracy, TVD, agreement between models."""

import numpy as np

from ..utils._torch import as_numpy
from ._sequences import check_sequences, scored_positions

__all__ = ["dfa_accuracy", "model_agreement", "next_token_tvd"]


def _check_proba(proba, shape, name, caller):
    proba = np.asarray(as_numpy(proba), dtype=np.float64)
    if proba.ndim != 3 or proba.shape[:2] != shape:
        raise ValueError(f"{caller}: {name} must have shape (n_sequences, max_len, vocab_size) = "
                         f"({shape[0]}, {shape[1]}, ...); got {proba.shape}.")
    if not np.all(np.isfinite(proba)):
        raise ValueError(f"{caller}: {name} contains NaN or infinity.")
    return proba


def _prepare(sequences, valid_next, proba, separator, caller):
    X = check_sequences(sequences, name="sequences", caller=caller)
    valid = np.asarray(valid_next)
    if valid.ndim != 3 or valid.shape[:2] != X.shape:
        raise ValueError(f"{caller}: valid_next must have shape (n_sequences, max_len, vocab_size) matching "
                         f"sequences {X.shape}; got {valid.shape}.")
    if valid.dtype.kind not in "biuf" or (valid.dtype.kind != "b" and not np.all(np.isin(valid, (0, 1)))):
        raise ValueError(f"{caller}: valid_next must be a boolean mask (True/False or 0/1); got dtype "
                         f"{valid.dtype} with values other than 0 and 1 (NaN included).")
    proba = _check_proba(proba, X.shape, "proba", caller)
    if proba.shape[2] != valid.shape[2]:
        raise ValueError(f"{caller}: proba has {proba.shape[2]} tokens and valid_next {valid.shape[2]}.")
    if not 0 <= separator < valid.shape[2]:
        raise ValueError(f"{caller}: separator={separator} is not a token id of a vocabulary of {valid.shape[2]}.")
    mask = scored_positions(X, separator)
    if not mask.any():
        raise ValueError(f"{caller}: no scored position (no position is followed by a letter).")
    return valid.astype(bool), proba, mask


def dfa_accuracy(sequences, valid_next, proba, *, separator=18):
    """Share of scored positions where the most likely next token is allowed by the automaton.

    A position is scored when the token that follows it is a letter (not the
    separator, not padding), as in the paper's evaluation.

    Parameters
    ----------
    sequences : array-like of shape (n_sequences, max_len)
        Token ids padded with -1.
    valid_next : array-like of bool, shape (n_sequences, max_len, vocab_size)
        The letters the automaton allows after each prefix (see
        :func:`~sklearn_icml.datasets.make_regular_languages`).
    proba : array-like of shape (n_sequences, max_len, vocab_size)
        A model's next-token distributions (or scores: only the argmax is used).
    separator : int, default=18
        The separator id.

    Returns
    -------
    float
        The DFA accuracy in [0, 1].

    See Also
    --------
    next_token_tvd : Distance to the automaton's next-letter law.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.language import dfa_accuracy
    >>> X = np.array([[0, 1, 0]])
    >>> valid = np.zeros((1, 3, 3), dtype=bool); valid[0, :, :2] = True
    >>> proba = np.zeros((1, 3, 3)); proba[0, :, 0] = 1
    >>> dfa_accuracy(X, valid, proba, separator=2)
    1.0
    """
    valid, proba, mask = _prepare(sequences, valid_next, proba, separator, "dfa_accuracy")
    choice = proba.argmax(axis=-1)
    hit = np.take_along_axis(valid, choice[..., None], axis=-1)[..., 0]
    return float(hit[mask].mean())


def next_token_tvd(sequences, valid_next, proba, *, separator=18):
    """Mean total-variation distance to the automaton's next-letter law at the scored positions.

    The automaton's law is uniform over the allowed letters (transitions are
    drawn uniformly); the distance is half the L1 distance over the whole
    vocabulary, so mass on the separator or on forbidden letters counts.

    Parameters
    ----------
    sequences : array-like of shape (n_sequences, max_len)
        Token ids padded with -1.
    valid_next : array-like of bool, shape (n_sequences, max_len, vocab_size)
        The letters the automaton allows after each prefix.
    proba : array-like of shape (n_sequences, max_len, vocab_size)
        A model's next-token distributions (rows summing to 1).
    separator : int, default=18
        The separator id.

    Returns
    -------
    float
        The mean TVD in [0, 1]; lower is better.

    See Also
    --------
    dfa_accuracy : Whether the argmax is allowed.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.language import next_token_tvd
    >>> X = np.array([[0, 1, 0]])
    >>> valid = np.zeros((1, 3, 3), dtype=bool); valid[0, :, :2] = True
    >>> proba = np.zeros((1, 3, 3)); proba[0, :, 0] = 1
    >>> next_token_tvd(X, valid, proba, separator=2)
    0.5
    """
    valid, proba, mask = _prepare(sequences, valid_next, proba, separator, "next_token_tvd")
    target = valid / np.maximum(valid.sum(axis=-1, keepdims=True), 1)
    tvd = 0.5 * np.abs(proba - target).sum(axis=-1)
    return float(tvd[mask].mean())


def model_agreement(proba_a, proba_b, sequences, *, separator=18):
    """How closely two models' next-token distributions agree: 1 minus their mean TVD.

    The paper compares each architecture with the in-context 3-gram model by
    the distance between their next-token distributions at the scored
    positions; this returns ``1 - mean TVD`` (half the paper's L1 distance,
    subtracted from 1), so 1 means identical predictions.

    Parameters
    ----------
    proba_a, proba_b : array-like of shape (n_sequences, max_len, vocab_size)
        The two models' distributions on the same sequences.
    sequences : array-like of shape (n_sequences, max_len)
        Token ids padded with -1.
    separator : int, default=18
        The separator id.

    Returns
    -------
    float
        Agreement in [0, 1].

    See Also
    --------
    next_token_tvd : Distance to the true next-letter law.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.language import model_agreement
    >>> X = np.array([[0, 1, 0]])
    >>> p = np.full((1, 3, 3), 1 / 3)
    >>> model_agreement(p, p, X, separator=2)
    1.0
    """
    X = check_sequences(sequences, name="sequences", caller="model_agreement")
    a = _check_proba(proba_a, X.shape, "proba_a", "model_agreement")
    b = _check_proba(proba_b, X.shape, "proba_b", "model_agreement")
    if a.shape != b.shape:
        raise ValueError(f"model_agreement: proba_a {a.shape} and proba_b {b.shape} differ in shape.")
    mask = scored_positions(X, separator)
    if not mask.any():
        raise ValueError("model_agreement: no scored position (no position is followed by a letter).")
    return float(1.0 - 0.5 * np.abs(a - b).sum(axis=-1)[mask].mean())
