"""In-context n-gram statistics in O(L) per sequence: hashed contexts, one sort, cumulative counts.

For every position ``t`` of every sequence, :func:`context_counts` returns how
often each token followed an earlier occurrence of the context that ends at
``t`` (the last ``context_length`` tokens), and how often that context occurred.
Contexts are hashed position by position into dense ids, events and queries are
sorted once by ``(sequence, context, time)``, and counts are cumulative sums
inside each run: no ``L x L`` match matrix, no per-position Python loop.

Two conventions are needed by the family:

* the in-context n-gram model (``boundary=True``): each string starts afresh:
  tokens at or before the last separator read as a begin-of-string symbol, as
  when every string is padded with start symbols; the sequence starts with a
  virtual separator, and the token just read counts as a continuation of the
  context before it (``include_current=True``);
* the n-gram head (``boundary=False, include_current=False``): raw tokens,
  separators included; position ``i`` matches earlier ``j < i`` whose preceding
  ``n`` tokens equal the ``n`` tokens ending at ``i``, and reads ``X[j]``.
"""

from numbers import Integral

import numpy as np

from ._sequences import PAD, check_sequences

__all__ = ["context_counts", "head_histograms", "ngram_head_histograms"]


def _dense(keys):
    """Dense ids of an int64 key array (order-preserving)."""
    _, inverse = np.unique(keys, return_inverse=True)
    return inverse.reshape(keys.shape).astype(np.int64)


def _context_ids(X, context_length, vocab_size, separator, boundary):
    """Dense id of the context ending at each position; -1 where the context is incomplete or padded."""
    n, length = X.shape
    bos = vocab_size  # begin-of-string symbol, one past the vocabulary
    valid = X != PAD
    if boundary:
        idx = np.broadcast_to(np.arange(length), X.shape)
        last_sep = np.maximum.accumulate(np.where(X == separator, idx, -1), axis=1)
    keys = np.zeros(X.shape, dtype=np.int64)
    complete = valid.copy()
    for offset in range(context_length):
        shifted = np.full(X.shape, PAD, dtype=np.int64)
        shifted[:, offset:] = X[:, :length - offset] if offset else X
        if boundary:
            # at or before the last separator: a begin-of-string symbol (the separator itself included)
            pos = np.arange(length) - offset
            code = np.where(pos[None, :] > last_sep, shifted, bos)
        else:
            code = shifted
            complete &= shifted != PAD
        keys = _dense(keys * (bos + 1) + np.where(code == PAD, bos, code))
    return np.where(complete, keys, -1)


def context_counts(X, context_length, *, vocab_size, separator=None, boundary=True, include_current=True):
    """Next-token counts after earlier occurrences of each position's context.

    Parameters
    ----------
    X : ndarray of shape (n_sequences, max_len)
        Validated token ids padded with -1.
    context_length : int
        Number of tokens in a context (``n - 1`` for an n-gram; 0 gives the
        unigram counts of the tokens read so far).
    vocab_size : int
        Number of token ids.
    separator : int, default=None
        The separator id; needed when ``boundary`` is True.
    boundary : bool, default=True
        Whether each string starts afresh (see the module docstring).
    include_current : bool, default=True
        Whether the token at ``t`` counts as a continuation of the context
        ending at ``t - 1`` in the counts of row ``t``.

    Returns
    -------
    counts : ndarray of shape (n_sequences, max_len, vocab_size), dtype int32
        ``counts[i, t, a]``: how often ``a`` followed the context ending at
        ``t`` in ``X[i, :t + 1]``.
    occurrences : ndarray of shape (n_sequences, max_len), dtype int32
        How often the context ending at ``t`` occurred in ``X[i, :t + 1]``,
        this occurrence included (0 on padding and incomplete contexts).
    """
    n, length = X.shape
    if boundary:
        Xp = np.concatenate([np.full((n, 1), separator, dtype=np.int64), X], axis=1)
    else:
        Xp = X
    L = Xp.shape[1]
    ids = _context_ids(Xp, context_length, vocab_size, separator, boundary)
    seq = np.broadcast_to(np.arange(n)[:, None], Xp.shape)
    time = np.broadcast_to(np.arange(L)[None, :], Xp.shape)
    # events: token Xp[s] continues the context ending at s - 1
    ev = np.zeros(Xp.shape, dtype=bool)
    ev[:, 1:] = (Xp[:, 1:] != PAD) & (ids[:, :-1] >= 0)
    ev_ctx = np.full(Xp.shape, -1, dtype=np.int64)
    ev_ctx[:, 1:] = ids[:, :-1]
    q = ids >= 0
    n_ev, n_q = int(ev.sum()), int(q.sum())
    all_seq = np.concatenate([seq[ev], seq[q]])
    all_ctx = np.concatenate([ev_ctx[ev], ids[q]])
    all_time = np.concatenate([time[ev], time[q]])
    # at equal time, events come first when the current token counts, queries first otherwise
    kind = np.concatenate([np.full(n_ev, 0 if include_current else 1), np.full(n_q, 1 if include_current else 0)])
    order = np.lexsort((kind, all_time, all_ctx, all_seq))
    is_event = np.zeros(n_ev + n_q, dtype=bool)
    is_event[:n_ev] = True
    is_event = is_event[order]
    tokens = np.zeros(n_ev + n_q, dtype=np.int64)
    tokens[:n_ev] = Xp[ev]
    tokens = tokens[order]
    s_seq, s_ctx = all_seq[order], all_ctx[order]
    run_start = np.ones(n_ev + n_q, dtype=bool)
    run_start[1:] = (s_seq[1:] != s_seq[:-1]) | (s_ctx[1:] != s_ctx[:-1])
    run_id = np.cumsum(run_start) - 1
    first_row = np.flatnonzero(run_start)
    onehot = np.zeros((n_ev + n_q, vocab_size), dtype=np.int32)
    onehot[np.flatnonzero(is_event), tokens[is_event]] = 1
    cum = np.cumsum(onehot, axis=0, dtype=np.int32)
    before_run = np.zeros((len(first_row), vocab_size), dtype=np.int32)
    before_run[1:] = cum[first_row[1:] - 1]
    q_rows = np.flatnonzero(~is_event)
    q_counts = cum[q_rows] - before_run[run_id[q_rows]]
    q_cum = np.cumsum(~is_event)
    q_before = np.zeros(len(first_row), dtype=np.int64)
    q_before[1:] = q_cum[first_row[1:] - 1]
    q_occ = q_cum[q_rows] - q_before[run_id[q_rows]]
    # scatter back to (sequence, position)
    src = order[q_rows] - n_ev  # index among the queries, in the boolean-mask order of q
    counts_p = np.zeros((n, L, vocab_size), dtype=np.int32)
    occ_p = np.zeros((n, L), dtype=np.int32)
    qi, qt = np.nonzero(q)
    counts_p[qi[src], qt[src]] = q_counts
    occ_p[qi[src], qt[src]] = q_occ
    if boundary:
        return counts_p[:, 1:], occ_p[:, 1:]
    return counts_p, occ_p


def head_histograms(X, order, vocab_size):
    """Normalised next-token histograms of an n-gram head of ``order`` (see the module docstring).

    Returns
    -------
    ndarray of shape (n_sequences, max_len, vocab_size), dtype float32
        Row ``i`` is the attention-weighted average of the one-hot tokens
        ``X[j]`` over the matches ``j < i``: it sums to 1, or is 0 without a
        match. Multiplied by an embedding matrix it is the head's output on
        embeddings.
    """
    counts, _ = context_counts(X, order, vocab_size=vocab_size, boundary=False, include_current=False)
    total = counts.sum(axis=-1, keepdims=True)
    return np.divide(counts, np.maximum(total, 1), dtype=np.float32)


def ngram_head_histograms(sequences, order, *, vocab_size=None):
    """What an n-gram head reads: the next-token histogram after earlier occurrences of each position's context.

    An n-gram head of ``order`` ``n`` (Akyürek et al., ICML 2024) is a
    parameter-free attention: position ``i`` attends uniformly to every
    earlier position ``j < i`` whose preceding ``n`` tokens equal the ``n``
    tokens ending at ``i``, and reads the token ``sequences[b, j]``. Row ``i``
    of the result is the normalised histogram of the tokens read: the
    in-context distribution of what followed the current context, i.e. the
    statistics of an in-context ``(n + 1)``-gram. Separators count as tokens;
    the histograms of all positions are computed at once in ``O(L log L)`` per
    sequence (hashed contexts and one sort), without an ``L x L`` match matrix.

    Multiplied by an embedding matrix, the histograms are the output of the
    head on embeddings; they are also the targets of a probe for in-context
    n-gram statistics.

    Parameters
    ----------
    sequences : array-like of shape (n_sequences, max_len)
        Token ids, padded on the right with -1.
    order : int
        Length ``n >= 1`` of the context that must match.
    vocab_size : int, default=None
        Number of token ids (the last axis of the result); by default one more
        than the largest id in ``sequences``.

    Returns
    -------
    ndarray of shape (n_sequences, max_len, vocab_size), dtype float32
        Rows sum to 1 where the context occurred before, and are 0 where it
        did not (and on padding).

    Raises
    ------
    ValueError
        On invalid sequences (see the data contract of the user guide), an
        ``order`` that is not an integer of at least 1, or a ``vocab_size``
        that is not a positive integer or is not above every id.

    See Also
    --------
    NGramTransformerLM : A Transformer with n-gram heads of chosen orders.
    InContextNGram : The in-context n-gram predictor (strings start afresh).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.language import ngram_head_histograms
    >>> X = np.array([[0, 1, 0, 2, 0, -1]])
    >>> H = ngram_head_histograms(X, 1, vocab_size=3)
    >>> H[0, 4]  # after the third 0: the earlier 0s were followed by 1 and by 2
    array([0. , 0.5, 0.5], dtype=float32)
    >>> H[0, 1]  # 1 did not occur before position 1
    array([0., 0., 0.], dtype=float32)
    """
    caller = "ngram_head_histograms"
    if isinstance(order, bool) or not isinstance(order, Integral) or order < 1:
        raise ValueError(f"{caller}: order must be an integer of at least 1; got {order!r}.")
    if vocab_size is not None and (isinstance(vocab_size, bool) or not isinstance(vocab_size, Integral)
                                   or vocab_size < 1):
        raise ValueError(f"{caller}: vocab_size must be a positive integer or None; got {vocab_size!r}.")
    X = check_sequences(sequences, vocab_size=vocab_size, name="sequences", caller=caller)
    if vocab_size is None:
        vocab_size = max(int(X.max()) + 1, 1)
    return head_histograms(X, int(order), int(vocab_size))
