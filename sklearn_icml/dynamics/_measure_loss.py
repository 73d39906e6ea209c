"""DySLIM's two MMD terms from one kernel block per rollout step, with a hand-written kernel gradient.

The unconditional and conditional terms of a rollout step ``k`` share the
predictions ``p_k``: ``U_k = MMD^2(p, x_0)`` and ``C_k = MMD^2(p, x_k)`` both
contain the mean kernel among the predictions. Computed term by term (two
:func:`~sklearn_icml.metrics.mmd2` calls) that is six ``(n, n)`` kernel blocks
under autograd, four at each bandwidth in the backward pass. Here the block
of the predictions against ``[p, x_0, x_k]`` is evaluated once, its gradient
``dk/dd = -sum_a a^2 / (a^2 + d)^2`` is accumulated in the same pass over the
bandwidths (no autograd graph over the bandwidth loop), and the blocks among
the data states, constants of the parameters, are evaluated without a graph
(the one of ``x_0`` once per optimiser step). The values equal the two
:func:`~sklearn_icml.metrics.mmd2` calls (biased V-statistic, diagonals
included, squared distances by matrix product clamped at zero).

torch is imported when this module is imported: import it inside functions.
"""

import torch

__all__ = ["imq_kernel", "mmd_terms"]


class _IMQBlock(torch.autograd.Function):
    """``k(P_i, Q_j)`` for ``Q = [P; R]``, differentiable in ``P`` only (``R`` holds data states).

    Forward: squared distances by one matrix product, clamped at zero, and
    ``k = sum_a a^2 / (a^2 + d)`` with its slope ``dk/dd = -sum_a a^2 /
    (a^2 + d)^2`` accumulated in the same loop. Backward, with ``G = grad *
    slope``: ``dL/dP = 2 (rowsum(G) P - G Q) + 2 (colsum(G_P) P - G_P^T P)``
    where ``G_P`` is the block of ``Q``'s rows that are ``P``. The products
    with a narrow factor are taken as ``(Q^T G^T)^T``, which BLAS does faster
    on the CPU than ``G Q``.
    """

    @staticmethod
    def forward(ctx, P, R, squared_bandwidths):
        Q = torch.cat([P, R]) if R is not None else P
        d = torch.addmm((Q * Q).sum(1)[None, :], P, Q.T, alpha=-2.0).add_((P * P).sum(1)[:, None]).clamp_(min=0.0)
        value = torch.zeros_like(d)
        slope = torch.zeros_like(d) if ctx.needs_input_grad[0] else None
        for a2 in squared_bandwidths:
            d_a = d.add(a2).reciprocal_()
            value.add_(d_a, alpha=a2)
            if slope is not None:
                slope.addcmul_(d_a, d_a, value=-a2)
        if slope is not None:
            ctx.save_for_backward(P, Q, slope)
        return value

    @staticmethod
    def backward(ctx, grad):
        P, Q, slope = ctx.saved_tensors
        n = len(P)
        G = grad * slope
        G_P = G[:, :n]
        out = G.sum(1)[:, None] * P - (Q.T @ G.T).T + G_P.sum(0)[:, None] * P - (P.T @ G_P).T
        return 2.0 * out, None, None


def imq_kernel(P, R, bandwidths):
    """The multiscale inverse multiquadric kernel of ``P`` against ``[P; R]`` (differentiable in ``P``).

    ``R`` (or None) holds constants such as data states; no gradient flows to it.
    """
    squared = tuple(float(a) ** 2 for a in bandwidths)
    if R is not None:
        R = R.detach()
    if torch.is_grad_enabled() and P.requires_grad:
        return _IMQBlock.apply(P, R, squared)
    with torch.no_grad():
        return _IMQBlock.apply(P, R, squared)


def _self_term(X, bandwidths):
    """Mean of the kernel block of a data sample with itself (no gradient)."""
    with torch.no_grad():
        return imq_kernel(X, None, bandwidths).mean()


def mmd_terms(pred, x0, xk, bandwidths, *, uncond=True, cond=True, x0_self=None):
    """``(MMD^2(pred, x0), MMD^2(pred, xk), x0_self)`` from one kernel block of ``pred`` against the states.

    A term not asked for is ``None``. ``x0_self`` (the mean kernel of ``x0``
    with itself) can be passed in to reuse it across rollout steps.
    """
    refs = ([x0] if uncond else []) + ([xk] if cond else [])
    K = imq_kernel(pred, torch.cat(refs) if refs else None, bandwidths)
    n = len(pred)
    blocks = K.reshape(n, 1 + len(refs), n).mean(dim=(0, 2))
    pp = blocks[0]
    U = C = None
    if uncond:
        if x0_self is None:
            x0_self = _self_term(x0, bandwidths)
        U = pp + x0_self - 2.0 * blocks[1]
    if cond:
        C = pp + _self_term(xk, bandwidths) - 2.0 * blocks[-1]
    return U, C, x0_self
