"""Rival architectures of bench_language.py and the learning-curve loop that trains every architecture alike.

The rivals are the paper's other model families at the size of
:class:`~sklearn_icml.language.NGramTransformerLM` (``d_model`` 64, 2
layers), each with or without the same n-gram heads on the embeddings
(:class:`sklearn_icml.language._modules.NGramHead`, fed by the in-context
histograms of :func:`sklearn_icml.language.ngram_head_histograms`):

* ``lstm``: a 2-layer LSTM;
* ``s4d``: a diagonal linear state-space model (S4D-Lin, Gu et al. 2022) in
  plain torch: per channel a complex diagonal recurrence discretised by zero-order
  hold, applied as a causal convolution with its kernel through the FFT; each
  block is ``x + W GELU(S4D(LN x))`` then ``x + FFN(LN x)`` (the FFN of a
  Transformer block).

The Transformer rows use the estimator's own module
(:class:`sklearn_icml.language._modules.NGramTransformer`). :func:`learning_curve`
trains any of them with the estimator's optimiser (AdamW, learning rate 1e-3,
weight decay 0.01, batches of 16 sequences, cross-entropy over the scored
positions) and evaluates at given step counts, so that every architecture is
compared at equal compute (steps x batch) along the whole curve.
"""

import math
import time

import numpy as np
import torch
from torch import nn

from sklearn_icml.language import ngram_head_histograms
from sklearn_icml.language._modules import NGramHead, NGramTransformer, build_seeded
from sklearn_icml.language._sequences import next_token_targets, scored_positions

__all__ = ["ARCHITECTURES", "RecurrentLM", "S4D", "build_lm", "hidden_states", "histograms", "learning_curve",
           "probe_tvd"]

ARCHITECTURES = ("transformer", "lstm", "s4d")


def histograms(X, orders, vocab_size):
    """The heads' in-context histograms, (n_sequences, n_orders, L, vocab_size) float32 (None without heads)."""
    if not orders:
        return None
    return np.stack([ngram_head_histograms(X, order, vocab_size=vocab_size) for order in orders], axis=1)


class S4D(nn.Module):
    """A diagonal linear state-space layer (S4D-Lin), channel-wise, as a causal FFT convolution.

    ``forward(u)``: ``u`` ``(batch, L, d)`` -> ``(batch, L, d)``. Each channel
    has ``n_state // 2`` complex modes ``A = -exp(log_a) + i pi n``, a step
    ``dt`` in ``[1e-3, 1e-1]`` (log-uniform), ``B = 1`` and learned ``C``,
    discretised by zero-order hold: the kernel is
    ``K[l] = 2 Re(sum_n C_n (exp(dt A_n) - 1) / A_n exp(dt A_n l))``, plus a skip ``D u``.
    """

    def __init__(self, d_model, n_state=32):
        super().__init__()
        self.d_model, self.n_modes = d_model, n_state // 2
        self.log_dt = nn.Parameter(torch.zeros(d_model))
        self.log_a = nn.Parameter(torch.zeros(d_model, self.n_modes))
        self.c = nn.Parameter(torch.zeros(d_model, self.n_modes, 2))
        self.skip = nn.Parameter(torch.zeros(d_model))

    def init_from(self, generator):
        with torch.no_grad():
            u = torch.rand(self.d_model, generator=generator)
            self.log_dt.copy_(math.log(1e-3) + u * (math.log(1e-1) - math.log(1e-3)))
            self.log_a.fill_(math.log(0.5))
            self.c.normal_(0.0, 0.5**0.5, generator=generator)
            self.skip.normal_(0.0, 1.0, generator=generator)

    def kernel(self, length):
        dt = self.log_dt.exp()[:, None]
        n = torch.arange(self.n_modes, dtype=dt.dtype, device=dt.device)
        a = torch.complex(-self.log_a.exp(), math.pi * n.expand_as(self.log_a))
        dta = a * dt
        c = torch.view_as_complex(self.c.contiguous()) * (dta.exp() - 1.0) / a
        steps = torch.arange(length, dtype=dt.dtype, device=dt.device)
        return 2.0 * torch.einsum("hn,hnl->hl", c, (dta[..., None] * steps).exp()).real

    def forward(self, u):
        length = u.shape[1]
        k = self.kernel(length)
        size = 2 * length  # zero padding to 2L makes the circular convolution causal
        y = torch.fft.irfft(torch.fft.rfft(u.transpose(1, 2), n=size) * torch.fft.rfft(k, n=size), n=size)
        return y[..., :length].transpose(1, 2) + u * self.skip


class _S4DBlock(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ssm, self.mix = S4D(d_model), nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, h):
        h = h + self.mix(nn.functional.gelu(self.ssm(self.norm1(h))))
        return h + self.ffn(self.norm2(h))


class RecurrentLM(nn.Module):
    """Token embedding, optional n-gram heads on the embeddings, an LSTM or S4D stack, LayerNorm, readout.

    ``forward(tokens, histograms=None)`` as :class:`NGramTransformer` with its
    heads on the embeddings; no position table (the recurrence orders tokens).
    """

    def __init__(self, vocab_size, d_model, n_layers, ngram_orders, kind):
        super().__init__()
        self.vocab_size, self.ngram_orders, self.kind = vocab_size, tuple(ngram_orders), kind
        self.embed = nn.Embedding(vocab_size + 1, d_model, padding_idx=vocab_size)
        self.heads = nn.ModuleList(NGramHead(d_model) for _ in self.ngram_orders)
        if kind == "lstm":
            self.body = nn.LSTM(d_model, d_model, n_layers, batch_first=True)
        elif kind == "s4d":
            self.body = nn.ModuleList(_S4DBlock(d_model) for _ in range(n_layers))
        else:
            raise ValueError(f"RecurrentLM: kind must be 'lstm' or 's4d'; got {kind!r}.")
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab_size)

    def init_from(self, generator):
        """Seed what :func:`build_seeded` does not reach (LSTM weights, S4D parameters)."""
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.LSTM):
                    bound = 1.0 / math.sqrt(m.hidden_size)
                    for p in m.parameters():
                        p.uniform_(-bound, bound, generator=generator)
                elif isinstance(m, S4D):
                    m.init_from(generator)
        return self

    def forward(self, tokens, histograms=None):
        ids = torch.where(tokens < 0, torch.full_like(tokens, self.vocab_size), tokens)
        h = self.embed(ids)
        for k, head in enumerate(self.heads):
            h = head(h, histograms[:, k] @ self.embed.weight[:self.vocab_size])
        if self.kind == "lstm":
            h = self.body(h)[0]
        else:
            for block in self.body:
                h = block(h)
        return self.out(self.norm(h))


def build_lm(kind, vocab_size, max_len, ngram_orders, seed, d_model=64, n_layers=2, n_heads=2, heads_on="embedding"):
    """One language model of ``kind`` in :data:`ARCHITECTURES`, initialised from ``seed``.

    ``heads_on`` (Transformer only): the heads on the embeddings, or on the
    hidden states after the first block.
    """
    generator = torch.Generator().manual_seed(int(seed))
    if kind == "transformer":
        return build_seeded(lambda: NGramTransformer(vocab_size, d_model, n_layers, n_heads, max_len, ngram_orders,
                                                     heads_on, 0.0), generator)
    return build_seeded(lambda: RecurrentLM(vocab_size, d_model, n_layers, ngram_orders, kind),
                        generator).init_from(generator)


def _proba(net, X, hist, batch_size=50):
    out = []
    with torch.no_grad():
        for lo in range(0, len(X), batch_size):
            h = None if hist is None else torch.as_tensor(hist[lo:lo + batch_size])
            out.append(torch.softmax(net(torch.as_tensor(X[lo:lo + batch_size]), h), -1).double().numpy())
    proba = np.concatenate(out)
    proba[X < 0] = 0.0
    return proba


def learning_curve(net, train, test, checkpoints, evaluate, *, ngram_orders, vocab_size, separator, seed,
                   batch_size=16, learning_rate=1e-3, weight_decay=0.01, stop=None):
    """Train ``net`` for ``max(checkpoints)`` steps; ``evaluate(proba)`` on ``test`` at each checkpoint.

    Batches are drawn from a permutation of ``train`` seeded by ``seed``
    (a new permutation per epoch). Returns ``{step: (evaluate(...), seconds
    of training so far)}``; with ``stop``, training ends at the first
    checkpoint where ``stop(curve so far)`` is true.
    """
    targets = np.where(scored_positions(train, separator), next_token_targets(train), -100)
    train_hist = histograms(train, ngram_orders, vocab_size)
    test_hist = histograms(test, ngram_orders, vocab_size)
    opt = torch.optim.AdamW(net.parameters(), lr=learning_rate, weight_decay=weight_decay)
    rng = np.random.default_rng(seed)
    order, pos, trained, out = rng.permutation(len(train)), 0, 0.0, {}
    for step in range(1, max(checkpoints) + 1):
        if pos + batch_size > len(order):
            order, pos = rng.permutation(len(train)), 0
        idx = np.sort(order[pos:pos + batch_size])
        pos += batch_size
        start = time.perf_counter()
        net.train()
        hist = None if train_hist is None else torch.as_tensor(train_hist[idx])
        logits = net(torch.as_tensor(train[idx]), hist)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           torch.as_tensor(targets[idx]).reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        trained += time.perf_counter() - start
        if step in checkpoints:
            net.eval()
            out[step] = (evaluate(_proba(net, test, test_hist)), trained)
            if stop is not None and stop(out):
                break
    return out


def hidden_states(net, X, hist, batch_size=50):
    """The residual stream after each block of an :class:`NGramTransformer`: a list of ``(n, L, d_model)`` arrays."""
    captured = [[] for _ in net.blocks]
    hooks = [block.register_forward_hook(lambda _m, _i, out, k=k: captured[k].append(out.detach().double().numpy()))
             for k, block in enumerate(net.blocks)]
    try:
        net.eval()
        with torch.no_grad():
            for lo in range(0, len(X), batch_size):
                h = None if hist is None else torch.as_tensor(hist[lo:lo + batch_size])
                net(torch.as_tensor(X[lo:lo + batch_size]), h)
    finally:
        for hook in hooks:
            hook.remove()
    return [np.concatenate(c) for c in captured]


def probe_tvd(train_features, train_target, test_features, test_target, *, max_iter=100):
    """Fit a linear softmax probe from features to target distributions; its mean TVD on the test rows.

    ``*_features`` ``(n, d)``, ``*_target`` ``(n, vocab)`` rows summing to 1.
    The probe is ``softmax(W x + b)`` on standardised features, fitted by
    L-BFGS on the cross-entropy to the soft targets (an L2 penalty of 1e-4 on
    ``W``); the score is ``mean_i 0.5 * ||probe(x_i) - target_i||_1``.
    """
    mean, std = train_features.mean(0), train_features.std(0) + 1e-8
    xtr = torch.as_tensor((train_features - mean) / std)
    xte = torch.as_tensor((test_features - mean) / std)
    ytr = torch.as_tensor(train_target, dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    weight = (0.01 * torch.randn(xtr.shape[1], ytr.shape[1], generator=generator, dtype=torch.float64)
              ).requires_grad_()
    bias = torch.zeros(ytr.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -(ytr * torch.log_softmax(xtr @ weight + bias, -1)).sum(-1).mean() + 1e-4 * (weight ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        pred = torch.softmax(xte @ weight + bias, -1).numpy()
    return float(0.5 * np.abs(pred - test_target).sum(-1).mean())
