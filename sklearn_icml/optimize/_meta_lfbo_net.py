"""MALIBO's meta-training objective in torch: the multi-task network and its regularised loss.

Imported lazily by :class:`~sklearn_icml.optimize.MetaLFBOClassifier.meta_fit`
(torch is imported at the top here). Meta-training runs through the library's
training layer, :class:`sklearn_icml.utils.Trainer`: MALIBO trains
all earlier tasks jointly on mini-batches of their rows (no episodes),
so one optimiser step per mini-batch of one loss expresses it, given as a
custom ``train_step``:

* the data are the rows of the earlier tasks' likelihood-free training sets,
  stacked (standardised point, task index, label, weight), as in MALIBO's
  code: mini-batches, the layer's validation split and the embedding noise
  are drawn per row;
* the batch loss is the weighted cross-entropy averaged over the batch's
  rows plus ``embedding_loss_weight`` times the embedding regulariser;
  Gaussian noise is added to the embeddings in training mode only (the
  validation loss is noise-free).

The train step also accepts one item per *observation* (both its rows
together), the alternative layout that the benchmark page compares with
MALIBO's.
"""

import torch
import torch.nn.functional as F
from torch import nn

from ..utils._mlp import StandardizedMLP

__all__ = ["MALIBONetwork", "make_train_step"]


class MALIBONetwork(nn.Module):
    """``phi``, the mean head and the task embeddings; logit ``m(phi(x)) + z_t . phi(x)``.

    ``phi`` is the library's :class:`~sklearn_icml.utils._mlp.StandardizedMLP`
    in MALIBO's shape: an input layer, residual layers ``h <- elu(h + W h +
    b)`` and an output layer, all followed by ELU, on inputs standardised by
    ``x_mean`` / ``x_scale``. The initial weights are given in scikit-learn's
    ``(fan_in, fan_out)`` layout (drawn by the estimator from its
    ``random_state``, as for its numpy prediction network).
    """

    def __init__(self, coefs, intercepts, mean_coef, mean_intercept, n_tasks, *, x_mean=None, x_scale=None,
                 dtype=torch.float64):
        super().__init__()
        n_in, n_features = coefs[0].shape[0], coefs[-1].shape[1]
        hidden = [W.shape[1] for W in coefs[:-1]]
        self.phi = StandardizedMLP(n_in, hidden, n_features, activation="elu", output_activation=True,
                                   residual=True, x_mean=x_mean, x_scale=x_scale, dtype=dtype,
                                   generator=torch.Generator().manual_seed(0)).set_coefs(coefs, intercepts)
        self.mean_coef = nn.Parameter(torch.as_tensor(mean_coef, dtype=dtype).clone())
        self.mean_intercept = nn.Parameter(torch.as_tensor([mean_intercept], dtype=dtype))
        self.embeddings = nn.Parameter(torch.zeros(n_tasks, n_features, dtype=dtype))

    def features(self, X):
        """``phi(X)`` and the mean-head logit ``m(phi(X))``."""
        phi = self.phi(X)
        return phi, phi @ self.mean_coef + self.mean_intercept

    def forward(self, X, task, noise=None):
        phi, offset = self.features(X)
        z = self.embeddings[task]
        if noise is not None:
            z = z + noise
        return offset + (phi * z).sum(dim=1)


def embedding_penalty_terms(E):
    """Squared KS distance of each dimension to N(0, 1) (mean over dimensions) and the covariance error."""
    T = E.shape[0]
    sorted_E, _ = torch.sort(E.T.contiguous(), dim=1)  # one row per dimension: sorting rows is fast
    cdf = torch.special.ndtr(sorted_E)
    i = torch.arange(1, T + 1, dtype=E.dtype, device=E.device)
    ks = torch.maximum((i / T - cdf).max(dim=1).values, (cdf - (i - 1) / T).max(dim=1).values)
    ks_term = (ks ** 2).mean()
    if T < 2:
        return ks_term, torch.zeros((), dtype=E.dtype, device=E.device)
    centred = E - E.mean(dim=0, keepdim=True)
    cov = centred.T @ centred / (T - 1)
    eye = torch.eye(E.shape[1], dtype=E.dtype, device=E.device)
    return ks_term, ((cov - eye) ** 2).mean()


def make_train_step(*, embedding_loss_weight, ks_scale, cov_scale, embedding_noise, generator, layout="rows",
                    noise_per_row=False):
    """MALIBO's regularised multi-task loss as ``train_step(module, X_batch, y_batch)`` for the trainer.

    ``layout="rows"`` (MALIBO's): ``X_batch`` is ``(X, task, label, weight)``,
    one item per row of the likelihood-free training sets, one embedding-noise
    draw per row. ``layout="observations"``: ``X_batch`` is ``(X, task,
    w_negative, w_positive, n_rows)``, one item per observation carrying both
    of its rows, one noise draw per observation (per row with
    ``noise_per_row``). ``y_batch`` is None.
    ``generator`` (a CPU :class:`torch.Generator`) draws the embedding noise,
    which is then moved to the batch's device.
    """

    def train_step(module, X_batch, y_batch):
        X = X_batch[0]
        noise = None
        if module.training and embedding_noise > 0:
            noise = embedding_noise * torch.randn(X.shape[0], module.embeddings.shape[1], generator=generator,
                                                  dtype=X.dtype).to(X.device)
        a = module(X, X_batch[1], noise)
        if layout == "rows":
            label, w = X_batch[2], X_batch[3]
            loss = (w * F.binary_cross_entropy_with_logits(a, label, reduction="none")).mean()
        else:
            w_neg, w_pos, n_rows = X_batch[2:]
            a_pos = a
            if noise is not None and noise_per_row:  # a second draw for the label-1 row
                phi, _ = module.features(X)
                extra = embedding_noise * torch.randn(X.shape[0], module.embeddings.shape[1], generator=generator,
                                                      dtype=X.dtype).to(X.device)
                a_pos = a + (phi * (extra - noise)).sum(dim=1)
            # -log(1 - p) = softplus(a) for the label-0 row, -log p = softplus(-a) for the label-1 row
            loss = (w_neg * F.softplus(a) + w_pos * F.softplus(-a_pos)).sum() / n_rows.sum()
        if embedding_loss_weight > 0:
            ks, cov = embedding_penalty_terms(module.embeddings)
            loss = loss + embedding_loss_weight * (ks_scale * ks + cov_scale * cov)
        return loss

    return train_step
