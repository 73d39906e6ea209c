"""An in-context interpolated Kneser-Ney n-gram: the peer of the in-context n-gram models in bench_language.py.

Like :class:`~sklearn_icml.language.InContextNGram`, the model at position
``t`` sees only ``X[i, :t + 1]``: the strings read so far (split at the
separator, each padded on the left with ``order - 1`` begin symbols, the
current string included up to ``t``). It predicts the next letter (never the
separator) over the letters seen in context, by interpolated Kneser-Ney
(Chen and Goodman, 1999) with one absolute discount ``D``:

* highest order, context ``c`` of ``order - 1`` symbols:
  ``P(w | c) = max(C(c w) - D, 0) / C(c) + D N(c .) / C(c) P'(w | c[1:])``,
  where ``C(c w)`` counts the n-gram, ``C(c) = sum_w C(c w)`` and ``N(c .)``
  is the number of distinct letters that followed ``c``; a context never
  continued backs off entirely (``P = P'``);
* lower orders use continuation counts ``N(. c w)``, the number of distinct
  symbols seen before ``c w``, in place of ``C(c w)``;
* the lowest order is ``N(. w) / sum_v N(. v)`` over the letters seen.

Before any letter is read the law is uniform over the letters. Pure Python,
incremental: one pass per sequence, O(L * letters * order).
"""

from collections import Counter, defaultdict

import numpy as np

__all__ = ["in_context_kneser_ney"]

_BOS = -2


class _State:
    """Counts of the n-grams read so far (orders 1..order, letters as last symbol)."""

    def __init__(self, order):
        self.order = order
        self.count = Counter()                          # C(g) for full-order grams g (tuples)
        self.follow = defaultdict(set)                  # context -> distinct letters after it (highest order)
        self.cont = Counter()                           # N(. g): distinct left symbols before g (lower orders)
        self.cont_left = defaultdict(set)               # g -> the left symbols seen before it
        self.cont_follow = defaultdict(set)             # context -> distinct letters w with N(. context w) > 0

    def add(self, gram):
        """Record the n-gram ``gram`` (a tuple of ``order`` symbols ending with a letter)."""
        self.count[gram] += 1
        self.follow[gram[:-1]].add(gram[-1])
        for k in range(1, self.order):  # the suffixes of length order - k, seen after the symbol gram[k - 1]
            suffix = gram[k:]
            left = self.cont_left[suffix]
            if gram[k - 1] not in left:
                left.add(gram[k - 1])
                self.cont[suffix] += 1
                self.cont_follow[suffix[:-1]].add(suffix[-1])


def _row(state, context, letters, discount):
    """The interpolated KN law over ``letters`` after ``context`` (``order - 1`` symbols)."""
    order = state.order
    # lowest order: continuation unigram over the letters seen
    if order == 1:
        total = sum(state.count[(w,)] for w in letters)
        return np.array([state.count[(w,)] / total for w in letters])
    cont = np.array([state.cont[(w,)] for w in letters], dtype=float)
    prob = cont / cont.sum()
    for k in range(order - 2, -1, -1):  # context lengths 1 .. order - 1, the last one with raw counts
        ctx = tuple(context[k:])
        if k == 0:
            counts = np.array([state.count[ctx + (w,)] for w in letters], dtype=float)
            n_types = len(state.follow[ctx])
        else:
            counts = np.array([state.cont[ctx + (w,)] for w in letters], dtype=float)
            n_types = len(state.cont_follow[ctx])
        total = counts.sum()
        if total > 0:
            prob = np.maximum(counts - discount, 0.0) / total + discount * n_types / total * prob
    return prob


def in_context_kneser_ney(X, *, order=3, discount=0.75, separator=18, vocab_size=19):
    """Next-letter law of the in-context interpolated Kneser-Ney model at every position.

    Parameters
    ----------
    X : ndarray of shape (n_sequences, max_len)
        Token ids padded with -1.
    order : int, default=3
        The n of the n-gram.
    discount : float, default=0.75
        Absolute discount ``D`` in (0, 1].
    separator : int, default=18
        The id joining the strings.
    vocab_size : int, default=19
        Number of token ids.

    Returns
    -------
    ndarray of shape (n_sequences, max_len, vocab_size)
        Row ``t`` is the law of ``X[i, t + 1]`` after ``X[i, :t + 1]``; 0 on
        the separator and past each sequence's end.
    """
    if not 0 < discount <= 1:
        raise ValueError(f"in_context_kneser_ney: discount must be in (0, 1]; got {discount!r}.")
    letters_all = [a for a in range(vocab_size) if a != separator]
    out = np.zeros((*X.shape, vocab_size))
    for i, seq in enumerate(np.asarray(X)):
        state = _State(order)
        history = [_BOS] * (order - 1)
        seen = []
        for t, tok in enumerate(seq):
            tok = int(tok)
            if tok < 0:
                break
            if tok == separator:
                history = [_BOS] * (order - 1)
            else:
                state.add(tuple(history + [tok])[-order:] if order > 1 else (tok,))
                history = (history + [tok])[-(order - 1):] if order > 1 else []
                if tok not in seen:
                    seen.append(tok)
            if not seen:
                out[i, t, letters_all] = 1.0 / len(letters_all)
                continue
            letters = sorted(seen)
            row = _row(state, history, letters, discount)
            out[i, t, letters] = row / row.sum()
    return out
