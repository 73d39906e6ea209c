"""REGBENCH generator, in-context n-gram counts and n-gram heads against brute-force derivations."""

import itertools

import numpy as np
import pytest

from sklearn_icml.datasets import make_regular_languages
from sklearn_icml.datasets._regular_languages import minimize_automaton
from sklearn_icml.language._counts import context_counts, head_histograms
from sklearn_icml.language._ngram import ngram_histograms, ngram_probabilities

from ._brute import katz_row, split_strings


def _accepts(table, string, start=0):
    state = start
    for letter in string:
        state = table[state][letter]
        if state < 0:
            return False
    return True


def test_generator_emits_only_valid_symbols_and_valid_next_agrees():
    data = make_regular_languages(40, max_len=120, random_state=0)
    assert data.sequences.shape == (40, 120) and data.valid_next.shape == (40, 120, 19)
    for i, table in enumerate(data.automata):
        state = 0
        for t, token in enumerate(data.sequences[i]):
            if token < 0:
                assert not data.valid_next[i, t].any()
                continue
            if token == data.separator:
                state = 0
            else:
                assert table[state, token] >= 0, "a letter the current state does not allow"
                state = table[state, token]
            allowed = {a for a in range(18) if table[state, a] >= 0}
            assert set(np.flatnonzero(data.valid_next[i, t])) == allowed
        assert not data.valid_next[i, :, data.separator].any()


def test_generator_ranges_dedup_and_exclude():
    data = make_regular_languages(60, random_state=1)
    keys = {a.tobytes() + bytes([len(a)]) for a in data.automata}
    assert len(keys) == 60, "duplicate languages"
    for table in data.automata:
        assert len(table) <= 12
        assert (np.sum(table >= 0, axis=1) >= 1).all(), "a state without a transition"
        assert len({a for row in table for a in np.flatnonzero(row >= 0)}) >= 1
    # strings: number between 10 and 19 unless truncated at max_len
    for seq in data.sequences:
        tokens = seq[seq >= 0]
        n_strings = np.sum(tokens == 18) + 1
        assert n_strings <= 19 and (n_strings >= 10 or len(tokens) == 256)
    other = make_regular_languages(60, exclude=data.automata, random_state=1)
    assert not keys & {a.tobytes() + bytes([len(a)]) for a in other.automata}
    again = make_regular_languages(60, random_state=1)
    np.testing.assert_array_equal(again.sequences, data.sequences)


def test_minimize_keeps_the_language_and_is_minimal():
    rng = np.random.RandomState(0)
    for _ in range(30):
        n = rng.randint(2, 7)
        table = -np.ones((n, 3), dtype=int)
        for q in range(n):
            for a in rng.choice(3, size=rng.randint(1, 4), replace=False):
                table[q, a] = rng.randint(n)
        small = minimize_automaton(table)
        strings = [s for k in range(6) for s in itertools.product(range(3), repeat=k)]
        assert [_accepts(table, s) for s in strings] == [_accepts(small, s) for s in strings]
        # minimal: no two states of the result accept the same suffixes (up to length 5)
        suffixes = [s for k in range(6) for s in itertools.product(range(3), repeat=k)]
        signatures = {tuple(_accepts(small, s, start=q) for s in suffixes) for q in range(len(small))}
        assert len(signatures) == len(small)


def _brute_counts(X, m, V, sep, boundary, include_current):
    n, L = X.shape
    C, D = np.zeros((n, L, V), int), np.zeros((n, L), int)
    for i in range(n):
        seq = ([sep] if boundary else []) + [int(t) for t in X[i] if t >= 0]

        def ctx(u, seq=seq):
            if boundary:
                last = max(k for k in range(u + 1) if seq[k] == sep)
                return tuple(seq[u - j] if u - j > last else "B" for j in range(m))
            return None if u - m + 1 < 0 else tuple(seq[u - j] for j in range(m))

        for u in range(len(seq)):
            row = u - 1 if boundary else u
            c = ctx(u)
            if c is None or row < 0:
                continue
            D[i, row] = sum(ctx(v) == c for v in range(u + 1))
            for s in range(1, len(seq)):
                if (s <= u if include_current else s < u) and ctx(s - 1) == c:
                    C[i, row, seq[s]] += 1
    return C, D


@pytest.mark.parametrize("boundary, include_current", [(True, True), (False, False)])
def test_context_counts_equal_brute_force(boundary, include_current):
    rng = np.random.RandomState(0)
    for _ in range(12):
        V = rng.randint(2, 5)
        X = rng.randint(0, V, size=(3, rng.randint(2, 20)))
        for i in range(3):
            X[i, rng.randint(1, X.shape[1] + 1):] = -1
        for m in range(4):
            C, D = context_counts(X, m, vocab_size=V, separator=V - 1, boundary=boundary,
                                  include_current=include_current)
            Cb, Db = _brute_counts(X, m, V, V - 1, boundary, include_current)
            np.testing.assert_array_equal(C, Cb)
            np.testing.assert_array_equal(D, Db)


def test_ngram_histograms_are_string_level_counts():
    data = make_regular_languages(4, max_len=60, random_state=3)
    H = ngram_histograms(data.sequences, 3, 19, 18)
    for i in range(4):
        tokens = [int(t) for t in data.sequences[i] if t >= 0]
        for t in range(len(tokens)):
            strings = split_strings(tokens[:t + 1], 18)
            for k in range(3):
                context = tuple((["B"] * k + strings[-1])[-k:]) if k else ()
                counts = np.zeros(19)
                for j, s in enumerate(strings):
                    padded = ["B"] * k + s + ([18] if j < len(strings) - 1 else [])
                    for p in range(k, len(padded)):
                        if tuple(padded[p - k:p]) == context:
                            counts[padded[p]] += 1
                expected = counts / counts.sum() if counts.sum() else counts
                np.testing.assert_allclose(H[i, t, 19 * k:19 * (k + 1)], expected, atol=1e-6)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_katz_backoff_equals_the_string_level_rule(order):
    data = make_regular_languages(4, max_len=90, random_state=order)
    P = ngram_probabilities(data.sequences, order, 19, 18, backoff="katz")
    for i in range(4):
        tokens = [int(t) for t in data.sequences[i] if t >= 0]
        for t in range(len(tokens)):
            np.testing.assert_allclose(P[i, t], katz_row(tokens[:t + 1], order, 18, 19), atol=1e-12)


@pytest.mark.parametrize("backoff", ["katz", "stupid", "none"])
@pytest.mark.parametrize("add_k", [0.0, 1.0])
def test_rows_sum_to_one_and_never_predict_the_separator(backoff, add_k):
    data = make_regular_languages(10, max_len=100, random_state=0)
    P = ngram_probabilities(data.sequences, 3, 19, 18, backoff=backoff, add_k=add_k)
    real = data.sequences >= 0
    np.testing.assert_allclose(P[real].sum(-1), 1.0)
    assert (P[~real] == 0).all() and (P[..., 18] == 0).all() and (P >= 0).all()


def _brute_head(X, order, V):
    n, L = X.shape
    A = np.zeros((n, L, L))
    for b in range(n):
        length = int((X[b] >= 0).sum())
        for i in range(length):
            for j in range(i):
                if all(j - 1 - k >= 0 and i - k >= 0 and X[b, j - 1 - k] == X[b, i - k] for k in range(order)):
                    A[b, i, j] = 1.0
        A[b] /= np.maximum(A[b].sum(-1, keepdims=True), 1)
    return A


@pytest.mark.parametrize("order", [1, 2, 3])
def test_head_histograms_times_embeddings_equal_brute_force_attention(order):
    torch = pytest.importorskip("torch")
    from sklearn_icml.language._modules import head_match_matrix

    data = make_regular_languages(3, max_len=70, random_state=order)
    X = data.sequences
    A = _brute_head(X, order, 19)
    row_sums = A.sum(-1)
    assert np.all(np.isclose(row_sums, 1) | np.isclose(row_sums, 0))
    E = np.random.RandomState(0).normal(size=(19, 5))
    onehot = np.eye(19)[np.maximum(X, 0)] * (X >= 0)[..., None]
    brute = A @ (onehot @ E)
    H = head_histograms(X, order, 19)
    np.testing.assert_allclose(H @ E, brute, atol=1e-6)
    np.testing.assert_allclose(head_match_matrix(torch.as_tensor(X), order).numpy(), A, atol=1e-6)


@pytest.mark.parametrize("order", [1, 2, 4])
def test_public_head_histograms_are_the_brute_force_head_attention_over_one_hot_tokens(order):
    from sklearn_icml.language import ngram_head_histograms

    data = make_regular_languages(3, max_len=60, random_state=10 + order)
    X = data.sequences
    onehot = np.eye(19)[np.maximum(X, 0)] * (X >= 0)[..., None]
    brute = _brute_head(X, order, 19) @ onehot
    H = ngram_head_histograms(X.tolist(), order, vocab_size=19)
    assert H.shape == (3, 60, 19) and H.dtype == np.float32
    np.testing.assert_allclose(H, brute, atol=1e-6)
    wide = ngram_head_histograms(X, order, vocab_size=25)  # unused ids get no mass
    np.testing.assert_array_equal(wide[..., :19], H)
    assert not wide[..., 19:].any()
    # by default the vocabulary ends at the largest id present
    np.testing.assert_array_equal(ngram_head_histograms(X, order), H[..., :int(X.max()) + 1])


@pytest.mark.parametrize("kwargs, match", [
    (dict(order=0), "order"), (dict(order=1.5), "order"), (dict(order=True), "order"),
    (dict(order=1, vocab_size=0), "vocab_size"), (dict(order=1, vocab_size=2.0), "vocab_size"),
    (dict(order=1, vocab_size=3), "out of the vocabulary"),
])
def test_public_head_histograms_refuse_bad_arguments(kwargs, match):
    from sklearn_icml.language import ngram_head_histograms

    X = np.array([[0, 1, 3, 1, -1]])
    with pytest.raises(ValueError, match=match):
        ngram_head_histograms(X, **kwargs)


def test_histograms_are_much_faster_than_a_python_loop():
    import time

    data = make_regular_languages(200, random_state=0)
    start = time.perf_counter()
    head_histograms(data.sequences, 3, 19)
    fast = time.perf_counter() - start
    start = time.perf_counter()
    _brute_head(data.sequences[:4], 3, 19)
    slow_per_sequence = (time.perf_counter() - start) / 4
    assert fast < 200 * slow_per_sequence / 10
