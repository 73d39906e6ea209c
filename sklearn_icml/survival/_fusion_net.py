"""Torch pieces of the MMP fusion network (imported only inside ``PrototypeSurvival``'s methods).

Written from the paper's description (Song et al., ICML 2024); no code of the
official implementation is used. Every parameter is initialised from an
explicit CPU ``torch.Generator`` and dropout masks are drawn from it too, so
a fit is a function of ``random_state`` alone and the global torch RNG is
never touched.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F


def _uniform(shape, bound, generator):
    return nn.Parameter((torch.rand(*shape, generator=generator) * 2.0 - 1.0) * bound)


def dropout(x, p, generator):
    """Inverted dropout with a mask drawn on the CPU from ``generator`` (None or p == 0: identity)."""
    if generator is None or p == 0.0:
        return x
    keep = (torch.rand(x.shape, generator=generator) >= p).to(device=x.device, dtype=x.dtype)
    return x * keep / (1.0 - p)


def alpha_dropout(x, p, generator):
    """Alpha dropout (Klambauer et al., 2017): keeps the mean and variance of SELU/ELU activations."""
    if generator is None or p == 0.0:
        return x
    alpha_prime = -1.7580993408473766
    keep = (torch.rand(x.shape, generator=generator) >= p).to(device=x.device, dtype=x.dtype)
    q = 1.0 - p
    a = (q + alpha_prime ** 2 * q * p) ** -0.5
    b = -a * alpha_prime * p
    return a * (x * keep + alpha_prime * (1.0 - keep)) + b


def uot_sinkhorn_batch(M, reg, reg_m, max_iter=1000, tol=1e-6):
    """Entropic unbalanced OT plans of a batch of problems with uniform marginals.

    The same fixed-point iteration, KL reference ``a b^T`` and stopping rule as
    POT's ``ot.unbalanced.sinkhorn_knopp_unbalanced(a, b, M, reg, reg_m)``
    (``reg_type="kl"``, its default), run on all ``B`` problems at once; a
    problem stops updating once its own error is below ``tol``, so each plan
    is what POT returns for that problem alone (tested against POT). POT's
    solver takes one problem at a time; calling it per sample of every
    mini-batch, inside the autograd graph, would cost a Python loop per
    step, so the batched iteration is written here. ``M``: (B, n, m).
    """
    B, n, m = M.shape
    a = torch.full((B, n), 1.0 / n, dtype=M.dtype, device=M.device)
    b = torch.full((B, m), 1.0 / m, dtype=M.dtype, device=M.device)
    K = torch.exp(-M / reg) * a.unsqueeze(2) * b.unsqueeze(1)
    fi = reg_m / (reg_m + reg)
    u = torch.ones_like(a)
    v = torch.ones_like(b)
    done = torch.zeros(B, dtype=torch.bool, device=M.device)
    for _ in range(max_iter):
        u_new = (a / torch.bmm(K, v.unsqueeze(2)).squeeze(2)) ** fi
        v_new = (b / torch.bmm(K.transpose(1, 2), u_new.unsqueeze(2)).squeeze(2)) ** fi
        bad = ~(torch.isfinite(u_new).all(1) & torch.isfinite(v_new).all(1))
        one = torch.ones_like(done, dtype=M.dtype)
        err_u = (u_new - u).abs().amax(1) / torch.maximum(torch.maximum(u_new.abs().amax(1), u.abs().amax(1)), one)
        err_v = (v_new - v).abs().amax(1) / torch.maximum(torch.maximum(v_new.abs().amax(1), v.abs().amax(1)), one)
        freeze = (done | bad).unsqueeze(1)
        u = torch.where(freeze, u, u_new)
        v = torch.where(freeze, v, v_new)
        done = done | bad | (0.5 * (err_u + err_v) < tol)
        if bool(done.all()):
            break
    return u.unsqueeze(2) * K * v.unsqueeze(1)


class SelfAttention(nn.Module):
    """Single-head scaled dot-product attention with an output projection."""

    def __init__(self, dim, head_dim, generator):
        super().__init__()
        bound = 1.0 / math.sqrt(dim)
        self.q = _uniform((dim, head_dim), bound, generator)
        self.k = _uniform((dim, head_dim), bound, generator)
        self.v = _uniform((dim, head_dim), bound, generator)
        self.o = _uniform((head_dim, dim), 1.0 / math.sqrt(head_dim), generator)
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, x):
        scores = (x @ self.q) @ (x @ self.k).transpose(1, 2) * self.scale
        return (torch.softmax(scores, dim=-1) @ (x @ self.v)) @ self.o


class FusionNet(nn.Module):
    """MMP fusion network on ``n_histo`` histology tokens and one token per pathway.

    Tokens: histology tokens through a shared linear map, each pathway's gene
    block through its own SNN (linear, ELU, alpha dropout), and a learnable
    identity embedding appended to every token. Fusion: one layer of
    single-head attention over all tokens ("transformer"), or self-attention
    within each modality plus cross-modal attention given by the unbalanced
    OT plan between pathway and histology tokens ("ot"); then a feed-forward
    network of its own for every token and a LayerNorm. Readout: mean of the
    pathway tokens and mean of the histology tokens, concatenated, into a
    bias-free linear layer.
    """

    def __init__(self, n_histo, token_dim, pathway_sizes, embed_dim, id_dim, fusion, n_out, dropout_rate,
                 ot_reg, ot_reg_m, generator):
        super().__init__()
        self.n_histo = n_histo
        self.token_dim = token_dim
        self.n_path = len(pathway_sizes)
        self.fusion = fusion
        self.dropout_rate = dropout_rate
        self.ot_reg = ot_reg
        self.ot_reg_m = ot_reg_m
        E0, E = embed_dim, embed_dim + id_dim
        self.histo_w = _uniform((token_dim, E0), 1.0 / math.sqrt(token_dim), generator)
        self.histo_b = _uniform((E0,), 1.0 / math.sqrt(token_dim), generator)
        if self.n_path:
            s_max = max(pathway_sizes)
            sizes = torch.tensor(pathway_sizes, dtype=torch.float32)
            bounds = (1.0 / sizes.sqrt()).view(-1, 1, 1)
            self.path_w = nn.Parameter((torch.rand(self.n_path, s_max, E0, generator=generator) * 2 - 1) * bounds)
            self.path_b = nn.Parameter((torch.rand(self.n_path, E0, generator=generator) * 2 - 1) * bounds[:, 0])
            # column gather map: pathway p, slot s -> input column (or the zero column for padding)
            starts = torch.cumsum(torch.tensor([0] + list(pathway_sizes[:-1])), 0)
            slots = torch.arange(s_max)
            valid = slots.unsqueeze(0) < torch.tensor(pathway_sizes).unsqueeze(1)
            self.register_buffer("gather", torch.where(valid, starts.unsqueeze(1) + slots, -1))
        n_tokens = n_histo + self.n_path
        self.id_embed = nn.Parameter(0.1 * torch.randn(n_tokens, id_dim, generator=generator)) if id_dim else None
        head_dim = max(1, E // 2)
        self.norm_in = nn.LayerNorm(E)
        self.attn = SelfAttention(E, head_dim, generator)
        if fusion == "ot" and self.n_path:
            self.attn_path = SelfAttention(E, head_dim, generator)
            bound = 1.0 / math.sqrt(E)
            self.cross_h = _uniform((E, E), bound, generator)  # values carried from histology to pathways
            self.cross_p = _uniform((E, E), bound, generator)  # and from pathways to histology
        bound = 1.0 / math.sqrt(E)
        self.ffn_w1 = _uniform((n_tokens, E, E), bound, generator)
        self.ffn_b1 = _uniform((n_tokens, E), bound, generator)
        self.ffn_w2 = _uniform((n_tokens, E, E), bound, generator)
        self.ffn_b2 = _uniform((n_tokens, E), bound, generator)
        self.norm_out = nn.LayerNorm(E)
        readout = 2 * E if self.n_path else E
        self.head = _uniform((readout, n_out), 1.0 / math.sqrt(readout), generator)

    def tokens(self, X, generator=None):
        B = X.shape[0]
        histo = X[:, : self.n_histo * self.token_dim].reshape(B, self.n_histo, self.token_dim)
        h = histo @ self.histo_w + self.histo_b
        parts = []
        if self.n_path:
            genes = X[:, self.n_histo * self.token_dim:]
            padded = torch.cat([genes, torch.zeros_like(genes[:, :1])], dim=1)[:, self.gather]  # (B, P, s_max)
            p = F.elu(torch.einsum("bps,pse->bpe", padded, self.path_w) + self.path_b)
            parts.append(alpha_dropout(p, self.dropout_rate, generator))
        parts.append(h)
        t = torch.cat(parts, dim=1)
        if self.id_embed is not None:
            t = torch.cat([t, self.id_embed.unsqueeze(0).expand(B, -1, -1)], dim=-1)
        return t

    def transport_plan(self, zp, zh):
        with torch.no_grad():
            cost = torch.cdist(zp, zh) ** 2
            cost = cost / cost.amax(dim=(1, 2), keepdim=True).clamp_min(1e-12)
            return uot_sinkhorn_batch(cost, self.ot_reg, self.ot_reg_m)

    def forward(self, X, generator=None):
        t = self.tokens(X, generator)
        z = self.norm_in(t)
        P = self.n_path
        if self.fusion == "ot" and P:
            zp, zh = z[:, :P], z[:, P:]
            plan = self.transport_plan(zp, zh)
            to_path = plan / plan.sum(2, keepdim=True).clamp_min(1e-30)
            to_histo = plan.transpose(1, 2) / plan.sum(1).unsqueeze(2).clamp_min(1e-30)
            upd_p = self.attn_path(zp) + to_path @ (zh @ self.cross_h)
            upd_h = self.attn(zh) + to_histo @ (zp @ self.cross_p)
            update = torch.cat([upd_p, upd_h], dim=1)
        else:
            update = self.attn(z)
        t = t + dropout(update, self.dropout_rate, generator)
        hidden = F.gelu(torch.einsum("bte,tef->btf", t, self.ffn_w1) + self.ffn_b1)
        ffn = torch.einsum("btf,tfe->bte", hidden, self.ffn_w2) + self.ffn_b2
        t = self.norm_out(t + dropout(ffn, self.dropout_rate, generator))
        if P:
            pooled = torch.cat([t[:, :P].mean(1), t[:, P:].mean(1)], dim=-1)
        else:
            pooled = t.mean(1)
        return pooled @ self.head


def nll_loss(logits, bins, event, alpha):
    """Discrete-time survival NLL (Zadeh & Schmid, 2020) with hazards ``sigmoid(logits)``.

    An event in bin k costs ``-log S(k-1) - log h(k)``; a censoring in bin k
    costs ``-log S(k)``; the total is ``(1 - alpha) * all + alpha * events``.
    """
    log_h = F.logsigmoid(logits)
    log_surv = torch.cumsum(F.logsigmoid(-logits), dim=1)
    log_surv_pad = torch.cat([torch.zeros_like(log_surv[:, :1]), log_surv], dim=1)
    idx = bins.unsqueeze(1)
    uncensored = -(log_surv_pad.gather(1, idx) + log_h.gather(1, idx)).squeeze(1) * event
    censored = -log_surv.gather(1, idx).squeeze(1) * (1.0 - event)
    return ((1.0 - alpha) * (uncensored + censored) + alpha * uncensored).mean()
