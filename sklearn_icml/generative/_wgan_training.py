"""The adversarial training loop of :class:`~sklearn_icml.generative.LeftInvertibleWGAN`.

This loop stands apart from :class:`sklearn_icml.utils.Trainer`:
``Trainer`` takes one optimiser step per mini-batch of one loss on one
module, whereas a WGAN alternates two players with opposite objectives.
Each generator iteration first takes ``n_critic`` steps of the critic (its own
optimiser, a gradient penalty that needs a second backward pass through the
critic, fresh real batches), then one joint step of the generator and the
inverse network (two optimisers, one loss ``-D(g(z)) + lambda *
||h(g(z)) - z||^2`` whose critic term must not move the critic); ``max_iter``
counts these generator iterations, not epochs over the data. The loop still
speaks the layer's vocabulary: real batches come from
:func:`~sklearn_icml.utils._training.iterate_minibatches` (a fresh seeded
permutation per pass over the data), every random draw from one CPU
:func:`~sklearn_icml.utils._torch.torch_generator` (then moved to the
device, so CPU and GPU fits start from the same numbers), progress lines from
:class:`~sklearn_icml.utils._training.ProgressReporter` under ``verbose``,
and the caller runs it inside :func:`~sklearn_icml.utils._torch.torch_threads`
on a resolved device. Losses are kept on the device and brought back once at
the end (one synchronisation per fit, not per step). An optional held-out
measure (``validation``, checked every ``check_every`` iterations) drives the
layer's :class:`~sklearn_icml.utils._training.EarlyStopping`, which keeps the
three networks of the best check.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..utils._training import EarlyStopping, ProgressReporter, iterate_minibatches

__all__ = ["WGANTrainingResult", "critic_step_loss", "draw_latent", "train_wgan"]

#: Columns of the loss history, one value per generator iteration.
HISTORY_KEYS = ("critic", "wasserstein", "generator", "inverse")


@dataclass
class WGANTrainingResult:
    """What :func:`train_wgan` returns.

    Parameters
    ----------
    generator, inverse, critic : torch.nn.Module
        The trained networks on the CPU in eval mode (``inverse`` is None when
        no inverse network was trained: the injective architecture, or
        ``train_inverse=False``).
    history : dict of ndarray
        Per generator iteration: the critic's loss (mean over its steps,
        gradient penalty included; hinge or Wasserstein form), its Wasserstein estimate
        ``E D(real) - E D(fake)`` at the last critic step, the generator's
        adversarial loss ``-E D(g(z))``, and the inverse term (mean squared
        ``h(g(z)) - z``, or the singular-value penalty of the injective
        generator).
    seconds : float
        Wall time of the loop.
    n_iter : int
        Generator iterations run.
    validation_scores : list of float or None
        The held-out measure at each check (lower is better), or None
        without ``validation``.
    best_validation_score : float or None
        Its smallest value (that of the networks returned).
    """

    generator: object
    inverse: object
    critic: object
    history: dict = field(default_factory=dict)
    seconds: float = 0.0
    n_iter: int = 0
    validation_scores: list = None
    best_validation_score: float = None


def draw_latent(n, d, latent_distribution, generator):
    """``n`` draws of the latent law (standard normal, or uniform on ``[0, 1]^d``) on the CPU, float32."""
    import torch

    if latent_distribution == "gaussian":
        return torch.randn(n, d, generator=generator)
    return torch.rand(n, d, generator=generator)


def _cycle_batches(n_samples, batch_size, generator, device):
    while True:
        yield from iterate_minibatches(n_samples, batch_size, generator, device=device)


def _critic_terms(critic, real, fake, penalize, gp_at, generator):
    """``E D(real) - E D(fake)``, ``E (||grad D(x)|| - 1)^2`` (None unless ``penalize``) and the real and generated
    rows' scores, from one forward pass of the critic.

    The real, generated (and interpolated) rows go through the critic as one
    batch; the penalty's gradient is taken with respect to the real rows
    (``gp_at="real"``) or to the interpolated ones.
    """
    import torch

    n = len(real)
    if not penalize:
        out = critic(torch.cat([real, fake]))
        return out[:n].mean() - out[n:].mean(), None, out[:n], out[n:]
    if gp_at == "real":
        at = real.detach().requires_grad_(True)
        out = critic(torch.cat([at, fake]))
        scores = out[:n]
    else:
        t = torch.rand(n, 1, generator=generator).to(real.device)
        at = (t * real + (1.0 - t) * fake).requires_grad_(True)
        out = critic(torch.cat([real, fake, at]))
        scores = out[2 * n:]
    (grad,) = torch.autograd.grad(scores.sum(), at, create_graph=True)
    return (out[:n].mean() - out[n:2 * n].mean(), ((grad.norm(dim=1) - 1.0) ** 2).mean(), out[:n],
            out[n:2 * n])


def critic_step_loss(critic, real, fake, *, critic_loss="wasserstein", gradient_penalty=1.0, gp_at="real",
                     generator=None):
    """The critic's loss on one real and one generated batch, and its Wasserstein estimate.

    ``critic_loss="wasserstein"``: ``E D(fake) - E D(real)`` (the form the
    paper's W1 analysis assumes); ``"hinge"``: ``E relu(1 - D(real)) +
    E relu(1 + D(fake))`` (the form of the authors' code). Either way plus
    ``gradient_penalty * E (||grad D(x)|| - 1)^2``. Returns ``(loss,
    E D(real) - E D(fake))``.
    """
    import torch.nn.functional as F

    penalize = gradient_penalty > 0
    w_est, penalty, real_scores, fake_scores = _critic_terms(critic, real, fake, penalize, gp_at, generator)
    if critic_loss == "hinge":
        loss = F.relu(1.0 - real_scores).mean() + F.relu(1.0 + fake_scores).mean()
    else:
        loss = -w_est
    return (loss + gradient_penalty * penalty if penalize else loss), w_est


def _build(X_dim, latent_dim, architecture, hidden, generator, train_inverse):
    """Generator, critic and inverse; the inverse's weights are drawn even when it is left out, so that every
    later draw (batches, latent points) is the same with or without it."""
    from ._wgan_nets import InjectiveGenerator, injective_widths, make_mlp

    if architecture == "injective_mlp":
        g = InjectiveGenerator(injective_widths(latent_dim, hidden, X_dim), generator)
    else:
        g = make_mlp(latent_dim, hidden, X_dim, generator, activation="relu")
    critic = make_mlp(X_dim, hidden, 1, generator, activation="relu")
    h = None
    if architecture == "mlp":
        h = make_mlp(X_dim, tuple(reversed(hidden)), latent_dim, generator)
    return g, h if train_inverse else None, critic


def train_wgan(X, *, latent_dim, latent_distribution="gaussian", architecture="mlp", hidden=(128, 128, 128),
               inverse_penalty=2.0, gradient_penalty=1.0, gp_at="real", critic_loss="wasserstein", n_critic=5,
               learning_rate=1e-4, betas=(0.5, 0.999), batch_size=200, max_iter=2000, device="cpu",
               generator=None, train_inverse=True, verbose=0, name="LeftInvertibleWGAN", validation=None,
               check_every=1, n_iter_no_change=10, tol=1e-4):
    """Train a WGAN with a gradient penalty and a left-inverse penalty on ``X`` (float32, already scaled).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training data (the caller standardises it).
    latent_dim : int
        Latent dimension d.
    latent_distribution : {"gaussian", "uniform"}
        The latent law U.
    architecture : {"mlp", "injective_mlp"}
        Learned inverse network, or injective generator with an exact inverse
        (then the inverse term is the singular-value penalty).
    hidden : tuple of int
        Hidden widths of the generator and the critic (reversed for the inverse).
    inverse_penalty : float
        lambda. At 0 the generator ignores the inverse, which is still
        trained on detached generated points (its gradients never reach g).
    gradient_penalty : float
        Coefficient of ``E (||grad D(x)|| - 1)^2``.
    gp_at : {"real", "interpolate"}
        Where the penalty is evaluated: at the real points (the authors'
        code), or at uniform interpolations of real and generated points.
    critic_loss : {"wasserstein", "hinge"}, default="wasserstein"
        The critic's objective (see :func:`critic_step_loss`); the generator
        minimises ``-E D(g(z))`` with either.
    n_critic : int
        Critic steps per generator iteration.
    learning_rate : float
        Adam's step size, for the three networks.
    betas : tuple of float
        Adam's betas.
    batch_size : int
        Rows per real batch and latent draws per step (clipped to n_samples).
    max_iter : int
        Generator iterations.
    device : torch.device
        Where to train.
    generator : torch.Generator
        CPU source of the initial weights, batches and draws.
    train_inverse : bool, default=True
        Build and train the inverse network (``"mlp"``); False trains a plain
        WGAN-GP without it (to measure what the inverse costs).
    verbose : int, default=0
        About 20 progress lines (every iteration at ``verbose >= 2``).
    name : str
        Prefix of the progress lines.
    validation : callable or None, default=None
        ``validation(generator) -> float``, a held-out measure (lower is
        better) evaluated every ``check_every`` iterations; training stops
        when it has not decreased by at least ``tol`` for more than
        ``n_iter_no_change`` checks, and the networks of its best check are
        returned. None runs all ``max_iter`` iterations.
    check_every : int, default=1
        Generator iterations between two checks.
    n_iter_no_change : int, default=10
        Checks without an improvement tolerated.
    tol : float, default=1e-4
        Minimal decrease that counts as an improvement.

    Returns
    -------
    WGANTrainingResult
    """
    import torch
    import torch.nn.functional as F

    from ._wgan_nets import singular_value_penalty

    start = time.perf_counter()
    X_t = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float32)).to(device)
    n, D = X_t.shape
    bs = min(int(batch_size), n)
    g, h, critic = _build(D, latent_dim, architecture, hidden, generator, train_inverse)
    for module in (g, h, critic):
        if module is not None:
            module.to(device).train()
    opt_d = torch.optim.Adam(critic.parameters(), lr=learning_rate, betas=tuple(betas), foreach=True)
    gen_params = list(g.parameters()) + (list(h.parameters()) if h is not None else [])
    opt_g = torch.optim.Adam(gen_params, lr=learning_rate, betas=tuple(betas), foreach=True)
    batches = _cycle_batches(n, bs, generator, device)
    reporter = ProgressReporter(name, max_iter=max_iter, verbose=verbose)
    every = 1 if verbose >= 2 or max_iter <= 50 else max(1, max_iter // 20)
    lam = float(inverse_penalty)
    records = {key: [] for key in HISTORY_KEYS}
    stopper, scores = None, None
    if validation is not None:
        stopper, scores = EarlyStopping(n_iter_no_change, tol, keep_best=True), []
        players = torch.nn.ModuleDict({k: m for k, m in (("g", g), ("h", h), ("critic", critic)) if m is not None})

    def latent(m):
        return draw_latent(m, latent_dim, latent_distribution, generator).to(device)

    for it in range(1, int(max_iter) + 1):
        critic.requires_grad_(True)
        critic_total = 0.0
        for _ in range(int(n_critic)):
            real = X_t[next(batches)]
            with torch.no_grad():
                fake = g(latent(len(real)))
            loss_d, w_est = critic_step_loss(critic, real, fake, critic_loss=critic_loss,
                                             gradient_penalty=gradient_penalty, gp_at=gp_at, generator=generator)
            opt_d.zero_grad(set_to_none=True)
            loss_d.backward()
            opt_d.step()
            critic_total = critic_total + loss_d.detach()
        critic.requires_grad_(False)
        z = latent(bs)
        fake = g(z)
        adversarial = -critic(fake).mean()
        if architecture == "injective_mlp":
            inverse_term = singular_value_penalty(g)
            loss_g = adversarial + lam * inverse_term
        elif h is not None:
            inverse_term = F.mse_loss(h(fake if lam > 0 else fake.detach()), z)
            loss_g = adversarial + (lam if lam > 0 else 1.0) * inverse_term
        else:
            inverse_term = adversarial.new_zeros(())
            loss_g = adversarial
        opt_g.zero_grad(set_to_none=True)
        loss_g.backward()
        opt_g.step()
        for key, value in zip(HISTORY_KEYS, (critic_total / int(n_critic), w_est, adversarial, inverse_term),
                              strict=True):
            records[key].append(value.detach())
        reporter.tick(it)
        if verbose and (it == 1 or it == max_iter or it % every == 0):
            reporter.message(f"iteration {it}/{max_iter}  critic {float(records['critic'][-1]):.4f}  "
                             f"W1 estimate {float(w_est.detach()):.4f}  inverse {float(inverse_term.detach()):.5f}  "
                             f"({time.perf_counter() - start:.1f} s)")
        if stopper is not None and it % int(check_every) == 0:
            with torch.no_grad():
                scores.append(float(validation(g)))
            reporter.message(f"iteration {it}/{max_iter}  held-out measure {scores[-1]:.5f}")
            if stopper.step(scores[-1], players):
                break
    if stopper is not None and stopper.best_state is not None:
        stopper.restore_best(players)
    critic.requires_grad_(True)
    history = {key: torch.stack(vals).cpu().numpy().astype(np.float64) for key, vals in records.items()}
    modules = [None if m is None else m.cpu().eval() for m in (g, h, critic)]
    return WGANTrainingResult(*modules, history=history, seconds=time.perf_counter() - start,
                              n_iter=len(records["critic"]), validation_scores=scores,
                              best_validation_score=None if not scores else min(scores))
