"""The language benchmark's peers against derivations: in-context Kneser-Ney by brute-force counting, the S4D
layer by its recurrence, and the causality of the rival language models."""

import importlib.util
import pathlib

import numpy as np
import pytest

from sklearn_icml.datasets import make_regular_languages

from ._brute import everygram_counts, split_strings

_BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kn_brute(tokens, order, discount, separator, vocab_size):
    """Interpolated Kneser-Ney from its definition, recounting every n-gram of the prefix from scratch."""
    strings = split_strings(tokens, separator)
    counts = everygram_counts(strings, order)
    letters = sorted({t for s in strings for t in s})
    row = np.zeros(vocab_size)
    if not letters:
        row[[a for a in range(vocab_size) if a != separator]] = 1.0
        return row / row.sum()
    context = tuple((["B"] * (order - 1) + list(strings[-1]))[-(order - 1):]) if order > 1 else ()

    def continuation(gram):  # distinct symbols seen right before ``gram``
        return len({g[0] for g, c in counts[len(gram) + 1].items() if c > 0 and g[1:] == gram})

    def prob(w, ctx, top):
        if not ctx:
            if top:
                return counts[1][(w,)] / sum(counts[1][(v,)] for v in letters)
            return continuation((w,)) / sum(continuation((v,)) for v in letters)

        def num(v):
            return counts[len(ctx) + 1][ctx + (v,)] if top else continuation(ctx + (v,))

        total = sum(num(v) for v in letters)
        if total == 0:
            return prob(w, ctx[1:], False)
        types = sum(num(v) > 0 for v in letters)
        return max(num(w) - discount, 0) / total + discount * types / total * prob(w, ctx[1:], False)

    for w in letters:
        row[w] = prob(w, context, True)
    return row


@pytest.mark.parametrize("order, discount", [(1, 0.75), (2, 0.5), (3, 0.75), (4, 0.9)])
def test_in_context_kneser_ney_equals_brute_force_counting(order, discount):
    kn = _load("_peer_kneser_ney")
    # letters 0..3, separator 5, vocabulary 6; repeated contexts, a string end, an empty string, padding
    X = np.array([[0, 1, 0, 1, 2, 0, 1, 5, 1, 0, 1, 2, 2, 5, 5, 0, 1, 3, 1, 0, -1, -1],
                  [5, 2, 2, 2, 3, 2, 2, 5, 2, 3, 2, 2, 2, 3, -1, -1, -1, -1, -1, -1, -1, -1]])
    got = kn.in_context_kneser_ney(X, order=order, discount=discount, separator=5, vocab_size=6)
    for i in range(len(X)):
        for t in range(len(X[i])):
            if X[i, t] < 0:
                assert not got[i, t].any()
                continue
            expected = _kn_brute([int(a) for a in X[i, :t + 1]], order, discount, 5, 6)
            np.testing.assert_allclose(got[i, t], expected, atol=1e-12, err_msg=f"sequence {i}, position {t}")
            assert got[i, t].sum() == pytest.approx(1.0) and got[i, t, 5] == 0


def test_in_context_kneser_ney_rejects_a_bad_discount():
    kn = _load("_peer_kneser_ney")
    with pytest.raises(ValueError, match="discount"):
        kn.in_context_kneser_ney(np.array([[0, 1]]), discount=1.5)


def test_s4d_convolution_equals_its_recurrence():
    torch = pytest.importorskip("torch")
    rivals = _load("_language_rivals")
    layer = rivals.S4D(3, n_state=8)
    layer.init_from(torch.Generator().manual_seed(0))
    u = torch.randn(2, 40, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    layer = layer.double()
    with torch.no_grad():
        got = layer(u)
        dt = layer.log_dt.exp()[:, None]
        n = torch.arange(layer.n_modes, dtype=torch.float64)
        a = torch.complex(-layer.log_a.exp(), torch.pi * n.expand_as(layer.log_a))
        decay, gain = (a * dt).exp(), ((a * dt).exp() - 1) / a
        c = torch.view_as_complex(layer.c.contiguous())
        state = torch.zeros(2, 3, layer.n_modes, dtype=torch.complex128)
        expected = []
        for step in range(u.shape[1]):  # x_l = exp(dt A) x_{l-1} + (exp(dt A) - 1) / A u_l, y_l = 2 Re(C x_l) + D u_l
            state = decay * state + gain * u[:, step, :, None]
            expected.append(2 * (c * state).sum(-1).real + layer.skip * u[:, step])
    torch.testing.assert_close(got, torch.stack(expected, 1), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("kind", ["lstm", "s4d", "transformer"])
@pytest.mark.parametrize("orders", [(), (1, 2)])
def test_rival_language_models_are_causal_and_seeded(kind, orders):
    torch = pytest.importorskip("torch")
    rivals = _load("_language_rivals")
    X = make_regular_languages(3, max_len=30, random_state=0).sequences
    changed = X.copy()
    changed[:, 20:] = np.where(changed[:, 20:] >= 0, (changed[:, 20:] + 1) % 18, -1)
    net = rivals.build_lm(kind, 19, 30, orders, seed=0, d_model=8, n_heads=2).eval()
    with torch.no_grad():
        out = [net(torch.as_tensor(Z), None if not orders else torch.as_tensor(rivals.histograms(Z, orders, 19)))
               for Z in (X, changed)]
    torch.testing.assert_close(out[0][:, :20], out[1][:, :20])
    assert not torch.allclose(out[0][:, 20:], out[1][:, 20:])
    again = rivals.build_lm(kind, 19, 30, orders, seed=0, d_model=8, n_heads=2)
    for p, q in zip(net.parameters(), again.parameters()):
        torch.testing.assert_close(p, q)
