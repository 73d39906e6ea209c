"""REGBENCH-style in-context language learning data: random automata and their strings (S6).

Each *language* is a random deterministic finite automaton over a random subset
of 18 letters, all states accepting. A sample of the language is a handful of
random walks from the start state joined by a separator token: a model must
predict the next letter in context, on automata it has never seen.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_regular_languages", "minimize_automaton"]

#: Letters ``0 .. N_LETTERS - 1``; the separator is ``N_LETTERS`` and the vocabulary has ``N_LETTERS + 1`` ids.
N_LETTERS = 18


def _check_range(name, value, low, high=None):
    """A ``(min, max)`` pair of integers with ``low <= min <= max (<= high)``, both ends included."""
    pair = (value, value) if isinstance(value, Integral) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, Integral) for v in pair):
        raise ValueError(f"make_regular_languages: {name} must be an int or a (min, max) pair of ints; got {value!r}.")
    lo, hi = int(pair[0]), int(pair[1])
    if lo < low or lo > hi or (high is not None and hi > high):
        bound = f"{low} <= min <= max" + (f" <= {high}" if high is not None else "")
        raise ValueError(f"make_regular_languages: {name} must satisfy {bound}; got {value!r}.")
    return lo, hi


def minimize_automaton(table):
    """Trim and minimise a deterministic automaton whose states all accept.

    Parameters
    ----------
    table : ndarray of shape (n_states, n_letters)
        ``table[q, a]`` is the state reached from ``q`` on letter ``a``, or -1
        when ``q`` has no ``a`` transition. State 0 is the start state.

    Returns
    -------
    ndarray of shape (n_min_states, n_letters)
        The minimal automaton of the same language, its states numbered in
        breadth-first order from the start (letters in increasing order), so
        that two automata accept the same language exactly when their returned
        tables are equal.

    Notes
    -----
    Moore's partition refinement: with every state accepting, two live states
    are equivalent when, for every letter, both lack the transition or both
    move to equivalent states. Unreachable states are dropped first.
    """
    table = np.asarray(table).tolist()
    reach, seen = [0], {0}
    for q in reach:
        for r in table[q]:
            if r >= 0 and r not in seen:
                seen.add(r)
                reach.append(r)
    block = {q: 0 for q in reach}
    n_blocks = 1
    while True:
        signatures = {q: (block[q], *(block[r] if r >= 0 else -1 for r in table[q])) for q in reach}
        ids = {}
        new_block = {q: ids.setdefault(signatures[q], len(ids)) for q in reach}
        if len(ids) == n_blocks:
            break
        block, n_blocks = new_block, len(ids)
    # canonical numbering: breadth-first from the start state's block, letters in order
    representative = {}
    for q in reach:
        representative.setdefault(block[q], q)
    order, pos = [block[0]], {block[0]: 0}
    for b in order:
        for r in table[representative[b]]:
            if r >= 0 and block[r] not in pos:
                pos[block[r]] = len(order)
                order.append(block[r])
    out = -np.ones((len(order), len(table[0])), dtype=np.int64)
    for i, b in enumerate(order):
        row = table[representative[b]]
        out[i] = [pos[block[r]] if r >= 0 else -1 for r in row]
    return out


def _random_automaton(rng, n_states, n_letters, out_degree):
    """A random automaton: each state gets out-degree many distinct letters to distinct other states."""
    n = rng.randint(n_states[0], n_states[1] + 1)
    alphabet = rng.permutation(N_LETTERS)[:rng.randint(n_letters[0], n_letters[1] + 1)]
    table = [[-1] * N_LETTERS for _ in range(n)]
    for q in range(n):
        k = min(rng.randint(out_degree[0], out_degree[1] + 1), len(alphabet), n - 1)
        letters = alphabet[rng.permutation(len(alphabet))[:k]]
        others = [r for r in range(n) if r != q]
        for letter, j in zip(letters, rng.permutation(n - 1)[:k]):
            table[q][letter] = others[j]
    return minimize_automaton(table)


def _pad_tables(automata):
    """Stack transition tables into one ``(n, max_states, 18)`` array padded with -1."""
    n_max = max(len(a) for a in automata)
    tables = -np.ones((len(automata), n_max, N_LETTERS), dtype=np.int64)
    for i, a in enumerate(automata):
        tables[i, :len(a)] = a
    return tables


def _walk(tables, plan, rng=None, sequences=None, separator=N_LETTERS):
    """Walk every automaton at once, one position at a time (vectorised over languages).

    ``plan`` marks each position: 1 a letter, 0 the separator (back to the
    start state), -1 padding. With ``rng``, letters are drawn uniformly among
    the current state's transitions; otherwise they are read from
    ``sequences``. Returns the tokens and the state after each position.
    """
    n, length = plan.shape
    rows = np.arange(n)
    state = np.zeros(n, dtype=np.int64)
    tokens = np.where(plan == 0, separator, -1).astype(np.int64)
    states = -np.ones((n, length), dtype=np.int64)
    for t in range(length):
        state = np.where(plan[:, t] == 0, 0, state)
        step = plan[:, t] == 1
        if step.any():
            allowed = tables[rows, state] >= 0
            if rng is not None:
                degree = allowed.sum(axis=1)
                k = np.minimum((rng.random_sample(n) * degree).astype(np.int64), degree - 1)
                letter = np.argmax(np.cumsum(allowed, axis=1) > k[:, None], axis=1)
                tokens[step, t] = letter[step]
            else:
                letter = np.maximum(sequences[:, t], 0)
                leave = step & ~allowed[rows, np.minimum(letter, N_LETTERS - 1)]
                if leave.any():
                    i = int(np.flatnonzero(leave)[0])
                    raise ValueError(f"sequence {i} leaves its automaton at position {t} "
                                     f"(letter {int(sequences[i, t])}).")
            state = np.where(step, tables[rows, state, np.minimum(letter, N_LETTERS - 1)], state)
        states[:, t] = np.where(plan[:, t] >= 0, state, -1)
    return tokens, states


def _plan(rng, n, n_strings, string_length, max_len):
    """Per sequence, which positions hold letters (1), separators (0) or padding (-1)."""
    plan = -np.ones((n, max_len), dtype=np.int64)
    for i in range(n):
        lengths = rng.randint(string_length[0], string_length[1] + 1,
                              size=rng.randint(n_strings[0], n_strings[1] + 1))
        kinds = np.concatenate([np.r_[0, np.ones(k, dtype=np.int64)] for k in lengths])[1:][:max_len]
        plan[i, :len(kinds)] = kinds
    return plan


def valid_next_letters(sequences, automata, separator=N_LETTERS):
    """Which letters an automaton allows after each prefix of its sequence.

    Parameters
    ----------
    sequences : ndarray of shape (n_sequences, max_len)
        Token ids padded with -1; ``separator`` returns to the start state.
    automata : list of ndarray of shape (n_states, 18)
        One transition table per sequence (-1: no transition).
    separator : int, default=18
        The separator id.

    Returns
    -------
    ndarray of shape (n_sequences, max_len, separator + 1), dtype bool
        Row ``t`` marks the letters allowed after reading ``sequences[i, :t+1]``;
        the separator column and padded rows are False.
    """
    sequences = np.asarray(sequences, dtype=np.int64)
    tables = _pad_tables(automata)
    plan = np.where(sequences < 0, -1, np.where(sequences == separator, 0, 1))
    _, states = _walk(tables, plan, sequences=sequences, separator=separator)
    valid = np.zeros((*sequences.shape, separator + 1), dtype=bool)
    rows = np.arange(len(sequences))[:, None]
    valid[..., :N_LETTERS] = (tables[rows, np.maximum(states, 0)] >= 0) & (states >= 0)[..., None]
    return valid


@validate_params(
    {
        "n_languages": [Interval(Integral, 1, None, closed="left")],
        "n_states": ["array-like", Interval(Integral, 2, None, closed="left")],
        "n_letters": ["array-like", Interval(Integral, 1, N_LETTERS, closed="both")],
        "out_degree": ["array-like", Interval(Integral, 1, None, closed="left")],
        "n_strings": ["array-like", Interval(Integral, 1, None, closed="left")],
        "string_length": ["array-like", Interval(Integral, 1, None, closed="left")],
        "max_len": [Interval(Integral, 2, None, closed="left")],
        "exclude": [list, None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_regular_languages(n_languages=1000, *, n_states=(4, 12), n_letters=(4, 18), out_degree=(1, 3),
                           n_strings=(10, 19), string_length=(1, 49), max_len=256, exclude=None,
                           random_state=None):
    """Generate samples of random regular languages for in-context language learning (REGBENCH).

    Each language is a random automaton: ``U{n_states}`` states, an alphabet
    of ``U{n_letters}`` letters drawn from 18, and from every state
    ``U{out_degree}`` transitions on distinct letters to distinct *other*
    states; every state accepts and state 0 starts. The automaton is trimmed
    and minimised, and a language equal to an earlier one (or to one in
    ``exclude``) is drawn again. Its sample is ``U{n_strings}`` random walks of
    ``U{string_length}`` letters from the start state, each step choosing
    uniformly among the state's transitions, joined by the separator and
    truncated to ``max_len`` tokens.

    Parameters
    ----------
    n_languages : int, default=1000
        Number of languages (one sequence each).
    n_states : int or (int, int), default=(4, 12)
        Range (both ends included) of the number of states before minimisation.
    n_letters : int or (int, int), default=(4, 18)
        Range of the alphabet size, at most 18.
    out_degree : int or (int, int), default=(1, 3)
        Range of the number of transitions out of each state.
    n_strings : int or (int, int), default=(10, 19)
        Range of the number of strings in a sample.
    string_length : int or (int, int), default=(1, 49)
        Range of a string's length.
    max_len : int, default=256
        Sequences are truncated (and padded with -1) to this length.
    exclude : list of ndarray, default=None
        Automata (as in the returned ``automata``) that must not be drawn, so
        that a test set is disjoint from a training set.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``sequences`` (int array ``(n_languages, max_len)``, letters ``0..17``,
        separator 18, padding -1); ``valid_next`` (bool ``(n_languages,
        max_len, 19)``: the letters the automaton allows after reading
        ``sequences[i, :t+1]``); ``automata`` (list of minimal transition
        tables ``(n_states, 18)``, -1 where a state has no transition);
        ``separator`` (18); ``vocab_size`` (19).

    Notes
    -----
    The generator follows the released REGBENCH code: out-degree, state and
    alphabet ranges, all-accepting states, minimised automata and
    de-duplicated languages. Strings are joined by the separator alone (the
    release's spaces around ``|`` are a tokenisation detail). Minimisation is
    our own partition refinement (:func:`minimize_automaton`), not pythomata.

    References
    ----------
    .. [1] Akyürek, E., Wang, B., Kim, Y. and Andreas, J. "In-Context Language
       Learning: Architectures and Algorithms", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_regular_languages
    >>> data = make_regular_languages(3, max_len=32, random_state=0)
    >>> data.sequences.shape, data.valid_next.shape
    ((3, 32), (3, 32, 19))
    """
    n_states = _check_range("n_states", n_states, 2)
    n_letters = _check_range("n_letters", n_letters, 1, N_LETTERS)
    out_degree = _check_range("out_degree", out_degree, 1)
    n_strings = _check_range("n_strings", n_strings, 1)
    string_length = _check_range("string_length", string_length, 1)
    rng = check_random_state(random_state)
    seen = {np.ascontiguousarray(a, dtype=np.int64).tobytes() + bytes([len(a)]) for a in (exclude or [])}
    automata = []
    attempts = 0
    while len(automata) < n_languages:
        attempts += 1
        if attempts > 100 * n_languages + 1000:
            raise ValueError(f"make_regular_languages: could not draw {n_languages} distinct languages with "
                             f"n_states={n_states}, n_letters={n_letters}, out_degree={out_degree}.")
        table = _random_automaton(rng, n_states, n_letters, out_degree)
        key = table.tobytes() + bytes([len(table)])
        if key in seen:
            continue
        seen.add(key)
        automata.append(table)
    plan = _plan(rng, n_languages, n_strings, string_length, max_len)
    sequences, states = _walk(_pad_tables(automata), plan, rng=rng)
    tables = _pad_tables(automata)
    valid = np.zeros((n_languages, max_len, N_LETTERS + 1), dtype=bool)
    valid[..., :N_LETTERS] = (tables[np.arange(n_languages)[:, None], np.maximum(states, 0)] >= 0) & (
        states >= 0)[..., None]
    return Bunch(sequences=sequences, valid_next=valid, automata=automata, separator=N_LETTERS,
                 vocab_size=N_LETTERS + 1)
