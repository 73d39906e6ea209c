"""Projectors between embedding spaces: closed-form ridge and orthogonal Procrustes maps, and FreeBind's MLP head.

A projector maps L2-normalised source embeddings (the expert space for a
combination bond, the unified space for a displacement bond) to the target
space; the bond L2-normalises its output. The ridge and Procrustes maps are
closed-form numpy; the MLP (``Proj_Head_mini`` of the official FreeBind code:
Linear(in, 2048) - BatchNorm - ReLU - Linear(2048, out) - BatchNorm - L2, Xavier
initialisation) is trained by :class:`~sklearn_icml.utils.Trainer`
with a symmetric InfoNCE (or MSE / cosine) objective between the projected
source and the target of each pair.
"""

import copy

import numpy as np
from scipy import linalg

from ..utils import Trainer
from ..utils._random import draw_seed
from ..utils._torch import torch_generator
from ._layout import l2_normalize

__all__ = ["LinearProjector", "MLPProjector", "fit_mlp", "fit_procrustes", "fit_projectors", "fit_ridge",
           "make_proj_head", "mean_projection", "projection_sum"]

#: Hidden width of the official ``Proj_Head_mini``.
HIDDEN_WIDTH = 2048


class LinearProjector:
    """An affine map ``Z @ coef + intercept`` (numpy), the fitted form of the ridge and Procrustes projectors.

    Parameters
    ----------
    coef : ndarray of shape (n_in, n_out)
        Linear part.
    intercept : ndarray of shape (n_out,)
        Offset (zero for Procrustes).
    """

    def __init__(self, coef, intercept):
        self.coef = coef
        self.intercept = intercept

    def project(self, Z, device=None, batch_size=None):
        """Map the rows of ``Z`` (the device and batch size are unused: numpy)."""
        return Z @ self.coef + self.intercept


def fit_ridge(source, target, alpha):
    """Least squares ``target ~ source @ W + b`` with penalty ``alpha * ||W||_F^2`` (scikit-learn's Ridge).

    Centred normal equations, ``(S_c' S_c + alpha I) W = S_c' T_c``, solved by
    Cholesky; ``alpha=0`` falls back to the minimum-norm least-squares solution.
    """
    s_mean, t_mean = source.mean(axis=0), target.mean(axis=0)
    S, T = source - s_mean, target - t_mean
    if alpha > 0:
        gram = S.T @ S
        gram.flat[::gram.shape[0] + 1] += alpha
        coef = linalg.solve(gram, S.T @ T, assume_a="pos")
    else:
        coef = linalg.lstsq(S, T)[0]
    return LinearProjector(coef, t_mean - s_mean @ coef)


def fit_procrustes(source, target):
    """The (semi-)orthogonal ``R`` minimising ``||source @ R - target||_F`` (no offset).

    ``R = A B'`` from the thin SVD ``source' target = A S B'``: for equal widths
    this is :func:`scipy.linalg.orthogonal_procrustes`; for unequal widths ``R``
    has orthonormal rows or columns (an isometric embedding or a projection).
    """
    A, _, Bt = linalg.svd(source.T @ target, full_matrices=False)
    coef = A @ Bt
    return LinearProjector(coef, np.zeros(target.shape[1]))


def make_proj_head(n_in, n_out, generator, dtype=None):
    """FreeBind's ``Proj_Head_mini``: Linear-BatchNorm-ReLU-Linear-BatchNorm, then L2 (Xavier-uniform weights)."""
    import torch
    from torch import nn

    class ProjHeadMini(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.utils.skip_init(nn.Linear, n_in, HIDDEN_WIDTH, dtype=dtype)
            self.bn1 = nn.BatchNorm1d(HIDDEN_WIDTH, dtype=dtype)
            self.fc2 = nn.utils.skip_init(nn.Linear, HIDDEN_WIDTH, n_out, dtype=dtype)
            self.bn2 = nn.BatchNorm1d(n_out, dtype=dtype)
            with torch.no_grad():
                for fc in (self.fc1, self.fc2):
                    nn.init.xavier_uniform_(fc.weight, generator=generator)
                    nn.init.zeros_(fc.bias)

        def forward(self, x):
            h = torch.relu(self.bn1(self.fc1(x)))
            return nn.functional.normalize(self.bn2(self.fc2(h)), dim=-1)

    return ProjHeadMini()


def _objective(loss, temperature):
    """``train_step(module, source_batch, target_batch)``: the batch loss between projections and targets."""
    import torch
    from torch.nn import functional as F

    def forward(module, xb):
        if module.training and xb.shape[0] < 2:
            # BatchNorm cannot take batch statistics of one row: use the running ones for this batch
            module.eval()
            try:
                return module(xb)
            finally:
                module.train()
        return module(xb)

    def step(module, xb, yb):
        p = forward(module, xb)
        t = F.normalize(yb, dim=-1)
        if loss == "mse":
            return ((p - t) ** 2).sum(dim=1).mean()
        if loss == "cosine":
            return (1.0 - (p * t).sum(dim=1)).mean()
        logits = p @ t.T / temperature
        labels = torch.arange(p.shape[0], device=p.device)
        return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))

    return step


def fit_mlp(source, target, *, loss, temperature, max_iter, batch_size, learning_rate, device, random_state,
            verbose, name, early_stopping=False, validation_fraction=0.1, n_iter_no_change=10, tol=1e-4):
    """Train one ``Proj_Head_mini`` from ``source`` to ``target`` rows; return an :class:`MLPProjector`.

    Every one of the ``max_iter`` epochs runs unless ``early_stopping`` holds out rows and stops on their
    loss (the contrastive training loss over reshuffled batches is too noisy to stop on).
    """
    import torch

    generator = torch_generator(random_state)
    module = make_proj_head(source.shape[1], target.shape[1], generator, dtype=torch.float32)
    result = Trainer(
        train_step=_objective(loss, temperature), max_iter=max_iter, batch_size=batch_size,
        learning_rate=learning_rate, early_stopping=early_stopping, validation_fraction=validation_fraction,
        n_iter_no_change=n_iter_no_change if early_stopping else max_iter, tol=tol, device=device,
        random_state=generator, verbose=verbose, name=name,
    ).fit(module, source.astype(np.float32), target.astype(np.float32))
    return MLPProjector(result.module, result.loss_curve, result.validation_scores)


class MLPProjector:
    """A trained ``Proj_Head_mini`` (a CPU torch module in eval mode) and its loss curve.

    Parameters
    ----------
    module : torch.nn.Module
        The trained head, on the CPU.
    loss_curve : list of float
        Mean training loss of each epoch.
    validation_scores : list of float or None, default=None
        Loss of the held-out pairs at each epoch under early stopping.
    """

    def __init__(self, module, loss_curve, validation_scores=None):
        self.module = module
        self.loss_curve = loss_curve
        self.validation_scores = validation_scores

    def project(self, Z, device="cpu", batch_size=4096):
        """Map the rows of ``Z`` on ``device``, ``batch_size`` rows at a time (the fitted module stays on the CPU)."""
        import torch

        with torch.no_grad():  # inside the estimator's torch context (the thread rule)
            module = self.module if str(device) == "cpu" else copy.deepcopy(self.module).to(device)
            module.eval()
            out = np.empty((Z.shape[0], _n_out(module)), dtype=np.float64)
            for lo in range(0, Z.shape[0], batch_size):
                xb = torch.from_numpy(np.ascontiguousarray(Z[lo:lo + batch_size], dtype=np.float32)).to(device)
                out[lo:lo + batch_size] = module(xb).to("cpu").numpy()
        return out


def _n_out(module):
    return int(module.fc2.out_features)


def fit_projectors(source, target, *, projector, n_projectors, groups, ridge_alpha, loss, temperature, max_iter,
                   batch_size, learning_rate, device, rng, verbose, name, stopping=None):
    """The mixture: one projector per group value (``groups``), else ``n_projectors`` on bootstrap resamples.

    With ``n_projectors=1`` and no groups, the single projector sees every pair.
    Source rows are L2-normalised here, targets by the objectives.
    """
    source = l2_normalize(source)
    target = l2_normalize(target)
    if groups is not None:
        subsets = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    elif n_projectors == 1:
        subsets = [slice(None)]  # every pair, without a copy
    else:
        subsets = [rng.randint(0, source.shape[0], size=source.shape[0]) for _ in range(n_projectors)]
    projectors = []
    for j, rows in enumerate(subsets):
        S, T = source[rows], target[rows]
        n_rows = S.shape[0]
        if projector == "ridge":
            projectors.append(fit_ridge(S, T, ridge_alpha))
        elif projector == "procrustes":
            projectors.append(fit_procrustes(S, T))
        else:
            if verbose:
                print(f"[{name}] projector {j + 1}/{len(subsets)} on {n_rows} pairs", flush=True)
            projectors.append(fit_mlp(S, T, loss=loss, temperature=temperature, max_iter=max_iter,
                                      batch_size=batch_size, learning_rate=learning_rate, device=device,
                                      random_state=draw_seed(rng), verbose=verbose,
                                      name=name, **(stopping or {})))
    return projectors


def projection_sum(projectors, Z, device, batch_size):
    """``sum_j normalize(P_j(normalize(Z)))``, the numerator of the mixture's mean projection."""
    Z = l2_normalize(Z)
    return sum(l2_normalize(p.project(Z, device=device, batch_size=batch_size)) for p in projectors)


def mean_projection(projectors, Z, device, batch_size):
    """``normalize(mean_j normalize(P_j(Z)))``: the mixture's projection of normalised rows, on the sphere."""
    return l2_normalize(projection_sum(projectors, Z, device, batch_size) / len(projectors))
