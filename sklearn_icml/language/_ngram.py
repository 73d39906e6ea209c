"""In-context n-gram next-token distributions (Katz-style backoff, stupid backoff, none), vectorised.

At position ``t`` the model has read ``X[:t + 1]``; its statistics are the
n-grams of the strings read so far, each string starting afresh with
begin-of-string symbols (:func:`~._counts.context_counts` with
``boundary=True``). It predicts letters only (never the separator), over the
letters seen in context, like the authors' released in-context n-gram.

Katz-style backoff (the release's rule): a letter ``a`` that followed the
context ``c`` gets ``(C(c, a) + k) / (D(c) + k |V|)``, where ``D(c)`` counts the
occurrences of ``c`` (the current one included, and those that ended a string,
which is where the left-over mass comes from); the left-over mass
``1 - sum`` goes to the letters that never followed ``c``, in proportion to
their backed-off probability under the context one token shorter.
"""

import numpy as np

from ._counts import context_counts

__all__ = ["ngram_histograms", "ngram_probabilities"]


def _order_counts(X, order, vocab_size, separator):
    """Counts and occurrences of the orders 1..order (context lengths 0..order-1)."""
    return [context_counts(X, k, vocab_size=vocab_size, separator=separator, boundary=True,
                           include_current=True) for k in range(order)]


def ngram_histograms(X, order, vocab_size, separator):
    """Normalised next-token histograms of the orders 1..order, concatenated on the last axis.

    Returns
    -------
    ndarray of shape (n_sequences, max_len, order * vocab_size), dtype float32
        Block ``k`` (0-based) is the distribution of the tokens (separator
        included) that followed the ``k`` tokens ending at ``t`` in context; 0
        where that context was never continued.
    """
    blocks = []
    for counts, _ in _order_counts(X, order, vocab_size, separator):
        total = counts.sum(axis=-1, keepdims=True)
        blocks.append(np.divide(counts, np.maximum(total, 1), dtype=np.float32))
    return np.concatenate(blocks, axis=-1)


def ngram_probabilities(X, order, vocab_size, separator, *, backoff="katz", add_k=0.0, stupid_alpha=0.4):
    """Next-token distribution of the in-context n-gram model at every position.

    Parameters
    ----------
    X : ndarray of shape (n_sequences, max_len)
        Validated token ids padded with -1.
    order : int
        The n of the n-gram (contexts of ``order - 1`` tokens).
    vocab_size : int
        Number of token ids (letters and separator).
    separator : int
        The separator id; it never receives probability.
    backoff : {"katz", "stupid", "none"}, default="katz"
        How unseen continuations are handled (see the module docstring);
        "stupid" scores ``C(c, a) / D(c)`` or ``stupid_alpha`` times the shorter
        context's score, then normalises; "none" uses the full-order counts only.
    add_k : float, default=0.0
        Additive smoothing of the observed continuations.
    stupid_alpha : float, default=0.4
        Back-off factor of "stupid" (Brants et al.'s 0.4).

    Returns
    -------
    ndarray of shape (n_sequences, max_len, vocab_size), dtype float64
        Rows sum to 1 on real positions and are 0 past each sequence's end.
        A row with no letter seen yet is uniform over the letters; a
        full-order row whose context was never continued ("none") is uniform
        over the letters seen in context.
    """
    letters = np.ones(vocab_size, dtype=bool)
    letters[separator] = False
    stats = _order_counts(X, order, vocab_size, separator)
    c1 = stats[0][0][..., letters].astype(np.float64)
    seen = c1 > 0
    n_seen = seen.sum(axis=-1, keepdims=True)
    prob = np.divide(c1 + add_k * seen, np.maximum(c1.sum(-1, keepdims=True) + add_k * n_seen, 1e-300))
    if backoff == "none":
        counts, occ = stats[-1]
        c = counts[..., letters].astype(np.float64)
        exist = c > 0
        raw = np.where(exist, (c + add_k) / np.maximum(occ[..., None] + add_k * n_seen, 1e-300), 0.0)
        prob = np.where(exist.any(-1, keepdims=True), raw, seen / np.maximum(n_seen, 1))
    else:
        for counts, occ in stats[1:]:
            c = counts[..., letters].astype(np.float64)
            exist = c > 0
            if backoff == "katz":
                direct = np.where(exist, (c + add_k) / np.maximum(occ[..., None] + add_k * n_seen, 1e-300), 0.0)
                left_over = np.clip(1.0 - direct.sum(-1, keepdims=True), 0.0, None)
                lower = np.where(exist, 0.0, prob)
                lower_mass = lower.sum(-1, keepdims=True)
                prob = direct + np.divide(left_over * lower, lower_mass, out=np.zeros_like(lower),
                                          where=lower_mass > 0)
            else:  # stupid backoff
                direct = np.where(exist, (c + add_k) / np.maximum(occ[..., None] + add_k * n_seen, 1e-300), 0.0)
                prob = np.where(exist, direct, stupid_alpha * prob)
    total = prob.sum(-1, keepdims=True)
    n_letters = letters.sum()
    prob = np.divide(prob, total, out=np.full_like(prob, 1.0 / n_letters), where=total > 0)
    out = np.zeros((*X.shape, vocab_size))
    out[..., letters] = prob
    out[X < 0] = 0.0
    return out
