"""Torch modules of the language family: a causal Transformer with hard-wired n-gram heads, an MLP smoother.

Imported only when a model is built (torch is imported here at module level).

An n-gram head of order ``n`` is a parameter-free attention: position ``i``
attends uniformly to every earlier ``j < i`` whose preceding ``n`` tokens equal
the ``n`` tokens ending at ``i``, and averages the hidden states at those ``j``
(it reads the token *after* each match). The layer outputs
``Linear0(average) + Linear1(h_i)``. On embeddings the average of the token
embeddings is ``(normalised in-context histogram) @ embedding matrix``, so the
histograms (:func:`~._counts.head_histograms`) are computed once from the
tokens and the layer costs a matmul; on hidden states the match matrix is
built per batch (``O(L^2)``, the paper's placement after the first layer).
"""

import math

import torch
from torch import nn

__all__ = ["NGramTransformer", "build_seeded", "head_match_matrix", "make_mlp"]


def _reset_from(module, generator):
    """Re-initialise every parameter of ``module`` from ``generator`` (torch's default schemes)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=generator)
                if m.bias is not None:
                    bound = 1.0 / math.sqrt(m.in_features)
                    nn.init.uniform_(m.bias, -bound, bound, generator=generator)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, generator=generator)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
            elif isinstance(m, nn.MultiheadAttention):
                nn.init.xavier_uniform_(m.in_proj_weight, generator=generator)
                nn.init.zeros_(m.in_proj_bias)
                nn.init.zeros_(m.out_proj.bias)
            if hasattr(m, "_identity_init"):
                m._identity_init()
    return module


def build_seeded(factory, generator):
    """Build a module with ``factory()`` and initialise it from ``generator``; torch's global RNG is untouched."""
    with torch.random.fork_rng(devices=[]):
        module = factory()
    return _reset_from(module, generator)


def make_mlp(n_in, hidden, n_out):
    """``Linear -> ReLU -> ... -> Linear``."""
    layers, width = [], n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


def head_match_matrix(tokens, order):
    """The head's attention over hidden states: ``(batch, L, L)``, rows summing to 1 or 0 without a match.

    ``tokens`` is ``(batch, L)`` with -1 for padding; entry ``[b, i, j]`` is
    nonzero when ``j < i`` and ``tokens[b, j - 1 - k] == tokens[b, i - k]`` for
    ``k = 0 .. order - 1`` (all indices inside the sequence).
    """
    batch, length = tokens.shape
    match = torch.ones(batch, length, length, dtype=torch.bool, device=tokens.device)
    pad_i, pad_j = torch.tensor(-2, device=tokens.device), torch.tensor(-3, device=tokens.device)
    for k in range(order):
        cur = torch.full_like(tokens, -2)
        cur[:, k:] = tokens[:, :length - k] if k else tokens
        cur = torch.where(cur < 0, pad_i, cur)
        prev = torch.full_like(tokens, -3)
        prev[:, k + 1:] = tokens[:, :length - k - 1]
        prev = torch.where(prev < 0, pad_j, prev)
        match &= cur[:, :, None] == prev[:, None, :]
    match &= torch.ones(length, length, dtype=torch.bool, device=tokens.device).tril(-1)
    weights = match.float()
    return weights / weights.sum(-1, keepdim=True).clamp_min(1.0)


class NGramHead(nn.Module):
    """``Linear0(average over matches) + Linear1(h)``; ``Linear1`` starts as the identity."""

    def __init__(self, d_model):
        super().__init__()
        self.read = nn.Linear(d_model, d_model)
        self.keep = nn.Linear(d_model, d_model)

    def _identity_init(self):
        nn.init.eye_(self.keep.weight)
        nn.init.zeros_(self.keep.bias)

    def forward(self, h, average):
        return self.read(average) + self.keep(h)


class NGramTransformer(nn.Module):
    """A pre-norm causal Transformer LM with learned positions and optional n-gram heads.

    ``forward(tokens, histograms=None)``: ``tokens`` ``(batch, L)`` with -1
    padding; ``histograms`` ``(batch, n_orders, L, vocab)`` when the heads sit
    on the embeddings. Returns next-token logits ``(batch, L, vocab)``.
    """

    def __init__(self, vocab_size, d_model, n_layers, n_heads, max_len, ngram_orders, heads_on, dropout):
        super().__init__()
        self.vocab_size, self.ngram_orders, self.heads_on = vocab_size, tuple(ngram_orders), heads_on
        self.embed = nn.Embedding(vocab_size + 1, d_model, padding_idx=vocab_size)
        self.position = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout, batch_first=True, norm_first=True)
            for _ in range(n_layers))
        self.heads = nn.ModuleList(NGramHead(d_model) for _ in self.ngram_orders)
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab_size)

    def _apply_heads(self, h, tokens, histograms):
        for k, (order, head) in enumerate(zip(self.ngram_orders, self.heads)):
            if self.heads_on == "embedding":
                average = histograms[:, k] @ self.embed.weight[:self.vocab_size]
            else:
                average = head_match_matrix(tokens, order) @ h
            h = head(h, average)
        return h

    def forward(self, tokens, histograms=None):
        length = tokens.shape[1]
        ids = torch.where(tokens < 0, torch.full_like(tokens, self.vocab_size), tokens)
        h = self.embed(ids) + self.position.weight[:length]
        if self.ngram_orders and self.heads_on == "embedding":
            h = self._apply_heads(h, tokens, histograms)
        causal = nn.Transformer.generate_square_subsequent_mask(length, device=tokens.device, dtype=h.dtype)
        for i, block in enumerate(self.blocks):
            h = block(h, src_mask=causal, is_causal=True)
            if i == 0 and self.ngram_orders and self.heads_on == "hidden":
                h = self._apply_heads(h, tokens, histograms)
        return self.out(self.norm(h))
