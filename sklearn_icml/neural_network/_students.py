"""A batch of MLP students as one torch module, and their training through the shared layer.

Expand-and-Cluster trains N over-parameterised students on the same probes.
Their parameters live in one module as tensors of shape ``(N, width, fan_in)``
and ``(N, width)``, and ``torch.matmul`` broadcasting runs the N forward
passes at once: one optimiser, one step per batch, the sum of the students'
mean squared errors as the loss. The students do not interact: each one's
gradient is that of its own loss, and Adam acts entry by entry, so the batch
trains exactly as N separate runs with the same initial weights would.

Every optimisation of the method goes through
:class:`~sklearn_icml.utils.Trainer`: the students (Adam, cosine
schedule), the fine-tunes after each recovered layer and of the recovered
network (the same module with one student, frozen layers excluded), and the
float64 polish (L-BFGS as one full-batch step through skorch's closure, as
:class:`~sklearn_icml.survival.CoxSurvival` does). The iteration counts of the
method are optimiser *steps*; with mini-batches they become epochs as
``ceil(steps / batches per epoch)``.
"""

import math

import numpy as np

from ._symmetry import torch_activation

__all__ = ["batched_module", "fit_students", "polish_module", "polish_students", "student_losses", "student_outputs"]


def _make_class():
    import torch

    class Dense(torch.autograd.Function):
        """One layer of every student at once, with the tanh fused in when asked.

        The first layer (``shared=True``, ``h`` the transposed input ``(d, n)``)
        is one GEMM over the input all students share,
        ``W.view(N * fan_out, d) @ X.T``; its weight gradient is formed as
        ``(X.T @ G.T).T``, the product shape BLAS runs fastest here. The layers
        above (``h`` of shape ``(N, fan_in, n)``) are one ``baddbmm``; an
        output of width 1 sends its gradient back by a broadcast product
        instead of a batched GEMM with an inner dimension of 1.
        ``tanh(z) = 2 sigmoid(2z) - 1`` (torch's sigmoid kernel is faster
        on the CPU than its tanh), computed in place on the GEMM's
        output, whose factor 2 the GEMM applies.
        """

        @staticmethod
        def forward(ctx, h, W, b, shared, tanh):
            n_students, fan_out, fan_in = W.shape
            scale = 2.0 if tanh else 1.0
            if shared:
                z = torch.addmm(b.reshape(n_students * fan_out, 1), W.reshape(n_students * fan_out, fan_in), h,
                                beta=scale, alpha=scale).view(n_students, fan_out, -1)
            else:
                z = torch.baddbmm(b.unsqueeze(2), W, h, beta=scale, alpha=scale)
            if tanh:
                z = torch.sigmoid_(z).mul_(2.0).sub_(1.0)
            ctx.shared, ctx.tanh = shared, tanh
            ctx.save_for_backward(h, W, z if tanh else None)
            return z

        @staticmethod
        def backward(ctx, grad):
            h, W, out = ctx.saved_tensors
            if ctx.tanh:
                grad = torch.ops.aten.tanh_backward(grad, out)
            grad_h = grad_w = grad_b = None
            if ctx.needs_input_grad[0]:
                grad_h = W.transpose(1, 2) * grad if W.shape[1] == 1 else torch.bmm(W.transpose(1, 2), grad)
            if ctx.needs_input_grad[1]:
                if ctx.shared:
                    flat = grad.reshape(-1, grad.shape[-1])
                    grad_w = torch.mm(h, flat.t()).t().reshape(W.shape)
                else:
                    grad_w = torch.bmm(grad, h.transpose(1, 2))
            if ctx.needs_input_grad[2]:
                grad_b = grad.sum(2)
            return grad_h, grad_w, grad_b, None, None

    class BatchedMLP(torch.nn.Module):
        """N MLPs with the same widths: ``weights[l]`` is (N, fan_out, fan_in), ``biases[l]`` (N, fan_out).

        Activations are kept as (N, width, n) (samples last): the first layer
        is one GEMM over the shared input, the layers above one batched GEMM
        each (:class:`Dense`), with no copy of the input per student.
        """

        def __init__(self, weights, biases, activation):
            super().__init__()
            self.weights = torch.nn.ParameterList([torch.nn.Parameter(w) for w in weights])
            self.biases = torch.nn.ParameterList([torch.nn.Parameter(b) for b in biases])
            self.activation = activation
            self._act = torch_activation(activation)

        def __getstate__(self):
            state = self.__dict__.copy()
            state.pop("_act", None)
            return state

        def __setstate__(self, state):
            self.__dict__.update(state)
            self._act = torch_activation(self.activation)

        def forward(self, X, n_layers=None):
            """(n, d) -> (N, n, n_out); the activations of the first ``n_layers`` hidden layers if given."""
            last = len(self.weights) - 1
            if n_layers == 0:
                return X.unsqueeze(0).expand(self.weights[0].shape[0], *X.shape)
            h = X.t()
            for layer in range(last + 1 if n_layers is None else n_layers):
                fused = self.activation == "tanh" and layer < last
                h = Dense.apply(h, self.weights[layer], self.biases[layer], layer == 0, fused)
                if layer < last and not fused:
                    h = self._act(h)
            return h.transpose(1, 2)

        def freeze(self, n_layers):
            """Train only the layers above the first ``n_layers``."""
            for layer, (w, b) in enumerate(zip(self.weights, self.biases)):
                w.requires_grad_(layer >= n_layers)
                b.requires_grad_(layer >= n_layers)
            return self

    return BatchedMLP


def batched_module(weights, biases, activation, dtype="float32"):
    """A batched MLP from numpy arrays ``weights[l]`` (N, fan_out, fan_in) and ``biases[l]`` (N, fan_out)."""
    import torch

    dtype = getattr(torch, dtype)
    return _make_class()([torch.tensor(np.ascontiguousarray(w), dtype=dtype) for w in weights],
                         [torch.tensor(np.ascontiguousarray(b), dtype=dtype) for b in biases], activation)


def init_students(n_students, n_features, widths, n_outputs, activation, generator):
    """Fresh students: Kaiming-normal weights (gain sqrt(2) for the relu kinds), uniform biases."""
    import torch

    sizes = [n_features, *widths, n_outputs]
    gain = math.sqrt(2.0) if activation in ("relu", "leaky_relu") else 1.0
    weights, biases = [], []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        weights.append(torch.randn(n_students, fan_out, fan_in, generator=generator) * (gain / math.sqrt(fan_in)))
        bound = 1.0 / math.sqrt(fan_in)
        biases.append((torch.rand(n_students, fan_out, generator=generator) * 2 - 1) * bound)
    return _make_class()(weights, biases, activation)


def _sum_of_mse(output, target):
    return ((output - target.unsqueeze(0)) ** 2).mean(dim=(1, 2)).sum()


def _epochs(steps, n_samples, batch_size):
    return max(1, math.ceil(steps / math.ceil(n_samples / min(batch_size, n_samples))))


def fit_students(module, X, Y, *, steps, learning_rate, batch_size, device, random_state, verbose, name):
    """Adam with a cosine schedule on the sum of the students' MSEs; always runs ``steps`` optimiser steps.

    torch's fused Adam updates every parameter tensor in one kernel (the same
    update, entry by entry, as the per-tensor loop it replaces).
    """
    from ..utils import Trainer

    n = X.shape[0]
    batch_size = n if batch_size is None else min(int(batch_size), n)
    epochs = _epochs(steps, n, batch_size)
    return Trainer(
        loss=_sum_of_mse, max_iter=epochs, batch_size=batch_size, learning_rate=learning_rate, optimizer="adam",
        n_iter_no_change=epochs, tol=0.0, optimizer_options=dict(fused=True), lr_schedule="cosine", device=device,
        random_state=random_state, verbose=verbose, name=name, shuffle=batch_size < n).fit(module, X, Y)


def polish_module(module, X, Y, *, max_iter, device, random_state, name):
    """Full-batch float64 L-BFGS (strong Wolfe line search) of a batched module."""

    from ..utils import Trainer

    return Trainer(
        loop="lbfgs", loss=_sum_of_mse, max_iter=max_iter, learning_rate=1.0, tol=1e-14,
        optimizer_options=dict(tolerance_change=1e-16, history_size=50), device=device, random_state=random_state,
        verbose=0, name=name).fit(module, X, Y)


def polish_students(module, X, Y, *, max_iter, device, random_state, name, return_counts=False):
    """The students of ``module`` polished together in float64 by L-BFGS; a float64 batched module.

    The students' losses are independent, so L-BFGS on their sum drives each
    one down (one line search for all; the curvature pairs are block-diagonal).
    Adam leaves the students at an MSE of about 1e-5 of the targets' variance,
    where the units of a weakly weighted teacher unit are still spread out;
    the polish takes them to near-zero loss, where the paper's clustering
    assumes them. With ``return_counts``, also L-BFGS's iterations and
    function evaluations (0, 0 when it failed).
    """
    weights = [w.detach().cpu().double().numpy() for w in module.weights]
    biases = [b.detach().cpu().double().numpy() for b in module.biases]
    net = batched_module(weights, biases, module.activation, dtype="float64")
    before = student_losses(net, X, Y)
    counts = (0, 0)
    try:
        result = polish_module(net, X, Y, max_iter=max_iter, device=device, random_state=random_state, name=name)
    except ValueError:
        return (net, counts) if return_counts else net
    polished = result.module
    counts = (result.n_iter, result.n_evaluations)
    after = student_losses(polished, X, Y)
    if not np.all(np.isfinite(after)):
        return (net, counts) if return_counts else net
    # a student the shared line search made worse keeps its Adam weights
    worse = after > before
    if worse.any():
        import torch

        with torch.no_grad():
            for p, q in zip(polished.parameters(), net.parameters()):
                p[torch.as_tensor(worse)] = q[torch.as_tensor(worse)]
    return (polished, counts) if return_counts else polished


def student_outputs(module, X, n_layers=None):
    """The module's outputs on ``X`` as float64 numpy: (N, n, n_out), or hidden activations with ``n_layers``."""
    import torch

    from ..utils._torch import to_numpy

    dtype = next(module.parameters()).dtype
    with torch.no_grad():
        return to_numpy(module(torch.tensor(np.asarray(X), dtype=dtype), n_layers=n_layers), np.float64)


def student_losses(module, X, Y):
    """Mean squared error of each student on ``(X, Y)``, shape (N,)."""
    out = student_outputs(module, X)
    return ((out - Y[None]) ** 2).mean(axis=(1, 2))
