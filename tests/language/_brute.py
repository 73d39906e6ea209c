"""Brute-force references for the language family's tests: string-level n-gram counting, written from the
definitions (every n-gram of every string read so far, strings padded with begin symbols)."""

from collections import Counter

import numpy as np


def split_strings(tokens, separator):
    """The strings of a token list (the last one may be empty or partial)."""
    strings, cur = [], []
    for tok in tokens:
        if tok == separator:
            strings.append(cur)
            cur = []
        else:
            cur.append(tok)
    strings.append(cur)
    return strings


def everygram_counts(strings, order):
    """Counter per n (1..order) of the n-grams of the strings, each left-padded with order-1 begin symbols."""
    counts = {n: Counter() for n in range(1, order + 1)}
    for s in strings:
        padded = ["B"] * (order - 1) + list(s)
        for n in range(1, order + 1):
            for i in range(len(padded) - n + 1):
                counts[n][tuple(padded[i:i + n])] += 1
    return counts


def katz_row(tokens, order, separator, vocab_size):
    """The next-letter law after reading ``tokens`` under the Katz-style in-context rule (renormalised)."""
    strings = split_strings(tokens, separator)
    counts = everygram_counts(strings, order)
    vocab = sorted({t for s in strings for t in s})
    prefix = (["B"] * (order - 1) + list(strings[-1]))[len(strings[-1]):] if order > 1 else []
    prefix = tuple((["B"] * (order - 1) + list(strings[-1]))[-(order - 1):]) if order > 1 else ()

    def probs(prefix, chars, n):
        out = {}
        if n == 1:
            total = sum(counts[1][(c,)] for c in vocab)
            return {c: counts[1][(c,)] / total for c in chars}
        existing = {c: counts[n][prefix + (c,)] / counts[n - 1][prefix] for c in vocab
                    if counts[n][prefix + (c,)] > 0}
        missing = [c for c in vocab if c not in existing]
        lower = probs(prefix[1:], missing, n - 1) if missing else {}
        beta = 1.0 - sum(existing.values())
        norm = sum(lower.values())
        for c in chars:
            out[c] = existing[c] if c in existing else (beta * lower[c] / norm if norm > 0 else 0.0)
        return out

    row = np.zeros(vocab_size)
    if not vocab:
        row[[t for t in range(vocab_size) if t != separator]] = 1.0
        return row / row.sum()
    p = probs(prefix, vocab, order)
    for c, v in p.items():
        row[c] = v
    return row / row.sum()
