"""DySLIM: a learned flow map trained on trajectory misfit plus a distance to the invariant measure.

Training goes through the shared layer :class:`~sklearn_icml.utils.Trainer`
with a custom train step (one optimiser step per mini-batch of ``(x0, future
states)``) on a step budget (``loop="steps"``): ``max_iter`` counts optimiser
steps, as in the DySLIM code, not epochs. The sequence of mini-batches of all
``max_iter`` steps is drawn up front from the seeded generator (successive
random permutations of the rows, cut into batches of ``batch_size``); it costs
``8 * max_iter * batch_size`` bytes. The per-step terms ``(total, l2, uncond,
cond)`` are kept on the device and read once at the end (``loss_curve_``).
"""

import copy
import math
import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..utils._distances import mmd2, sinkhorn_divergence
from ..utils._pipeline import final_step
from ..utils._sklearn_private import HasMethods, Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy, forward_float64, to_numpy, to_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import check_float32_range, standardization

__all__ = ["DySLIMRegressor", "invariant_measure_scorer"]

#: A rolled-out state farther than this many training standard deviations from the training mean has diverged.
DIVERGENCE_THRESHOLD = 100.0
#: Smallest rollout weight (the DySLIM code clips its geometric weights).
_MIN_WEIGHT = 1e-7


def rollout_weights(n_steps, weighting, decay):
    """Weights ``w_1..w_K`` of the rollout steps in the loss."""
    k = np.arange(1, n_steps + 1, dtype=np.float64)
    if weighting == "geometric":
        w = np.maximum(decay ** (k - 1), _MIN_WEIGHT)
    elif weighting == "inverse_sqrt":
        w = 1.0 / np.sqrt(k)
    elif weighting == "inverse_squared":
        w = 1.0 / k ** 2
    else:
        w = np.ones_like(k)
    return [float(v) for v in w]


class _Objective:
    """The DySLIM batch objective as the layer's ``train_step(module, idx, None)``; logs its terms per step.

    In training mode it logs its terms and counts the steps (the curriculum's clock); in eval mode
    (the validation pass of early stopping) it neither logs nor draws: the rollout is the full one
    of the current horizon, without the push-forward's random start.
    """

    def __init__(self, est, X, Y, horizon, generator, device, name, reporter):
        import torch

        self.est, self.X, self.Y, self.horizon = est, X, Y, horizon
        self.generator, self.name, self.reporter = generator, name, reporter
        self.lam_u = float(est.lambda_uncond) if Y.ndim == 3 else 0.0
        self.lam_c = float(est.lambda_cond)
        self.log = torch.zeros((est.max_iter, 4), dtype=X.dtype, device=device)
        self.step = 0
        self.sobolev = None
        if est.sobolev_order is not None:
            from ._sobolev import sobolev_weights

            w = sobolev_weights(X.shape[1], int(est.sobolev_order), float(est.sobolev_length))
            self.sobolev = torch.as_tensor(w, dtype=X.dtype, device=device)

    def misfit(self, residual):
        """The trajectory misfit of one rollout step: mean squared error, or the H^s norm (``_sobolev``)."""
        if self.sobolev is None:
            return (residual ** 2).mean()
        from ._sobolev import sobolev_misfit

        return sobolev_misfit(residual, self.sobolev)

    def distance(self, P, Q):
        if self.est.measure == "sinkhorn":
            return sinkhorn_divergence(P, Q)
        return mmd2(P, Q, bandwidths=self.est.mmd_bandwidths)

    def mmd_terms(self, terms, x0):
        """``(U, C)`` of the MMD: one kernel block per rollout step shared by both terms (``_measure_loss``)."""
        from ._measure_loss import mmd_terms

        uncond = cond = x0.new_zeros(())
        x0_self = None
        for w, p, t in terms:
            U, C, x0_self = mmd_terms(p, x0, t, self.est.mmd_bandwidths, uncond=bool(self.lam_u),
                                      cond=bool(self.lam_c), x0_self=x0_self)
            if U is not None:
                uncond = uncond + w * U
            if C is not None:
                cond = cond + w * C
        return uncond / len(terms), cond / len(terms)

    def horizon_now(self):
        every = self.est.curriculum_every
        if every is None:
            return self.horizon
        return min(self.horizon, 1 + self.step // every)

    def predictions(self, module, x0, targets):
        """``[(w_k, p_k, x_k)]``: the rollout terms of the batch (one differentiable step under push-forward)."""
        import torch

        K = self.horizon_now()
        if self.est.pushforward and K >= 2 and module.training:
            k = int(torch.randint(2, K + 1, (1,), generator=self.generator))
            with torch.no_grad():
                p = x0
                for _ in range(k - 1):
                    p = module(p)
            return [(1.0, module(p), targets[:, k - 1])]
        weights = rollout_weights(K, self.est.rollout_weighting, self.est.rollout_decay)
        out, p = [], x0
        for k in range(K):
            p = module(p)
            out.append((weights[k], p, targets[:, k]))
        return out

    def __call__(self, module, idx, _):
        import torch

        x0 = self.X[idx]
        if self.Y.ndim == 2:  # generic regression: one map, no rollout
            terms = [(1.0, module(x0), self.Y[idx])]
        else:
            terms = self.predictions(module, x0, self.Y[idx])
        m = len(terms)
        l2 = sum(w * self.misfit(p - t) for w, p, t in terms) / m
        loss = l2
        zero = torch.zeros((), dtype=l2.dtype, device=l2.device)
        uncond = cond = zero
        if self.est.measure == "mmd" and (self.lam_u or self.lam_c):
            uncond, cond = self.mmd_terms(terms, x0)
        else:
            if self.lam_u:
                uncond = sum(w * self.distance(p, x0) for w, p, _ in terms) / m
            if self.lam_c:
                cond = sum(w * self.distance(p, t) for w, p, t in terms) / m
        if self.lam_u:
            loss = loss + self.lam_u * uncond
        if self.lam_c:
            loss = loss + self.lam_c * cond
        if not module.training:
            return loss
        if self.step < len(self.log):
            self.log[self.step] = torch.stack([loss.detach(), l2.detach(), uncond.detach(), cond.detach()])
        self.step += 1
        if self.reporter is not None and (self.step % max(1, self.est.max_iter // 20) == 0 or self.step == 1):
            self.reporter.message(f"step {self.step}/{self.est.max_iter}  loss {float(loss):.6f}  "
                                  f"l2 {float(l2):.6f}  uncond {float(uncond):.6f}  cond {float(cond):.6f}")
        return loss


class DySLIMRegressor(RegressorMixin, TorchEstimatorMixin, BaseEstimator):
    """Learn the flow map of a dynamical system with DySLIM's invariant-measure objective.

    Read more in the :ref:`User Guide <dynamics>`.

    A network ``S_theta`` that advances a state by one time step is trained
    on batches of segments ``(x_0, x_1, ..., x_K)`` by

    ``loss = l2 + lambda_uncond * U + lambda_cond * C``, with
    ``l2 = mean_k w_k mean |S^k(x_0) - x_k|^2`` (or its H^s Sobolev norm,
    ``sobolev_order``),
    ``U = mean_k w_k D({S^k(x_0)}, {x_0})`` and
    ``C = mean_k w_k D({S^k(x_0)}, {x_k})``,

    where ``D`` is the squared MMD (multiscale inverse multiquadric kernel)
    or the Sinkhorn divergence between the batch of predictions and a batch
    of states. The batch of initial states ``{x_0}`` is a sample of the
    invariant measure, so ``U`` asks the learned map to leave that measure
    invariant, and ``C`` asks the predictions to be distributed like the
    true states ``k`` steps later; this keeps long rollouts on the
    attractor where the misfit alone lets them collapse or diverge [1]_.
    The default uses ``C`` only (see ``lambda_uncond``). With
    ``lambda_uncond = lambda_cond = 0`` it is a plain MSE emulator (trained
    bit for bit the same way).

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=(64, 64)
        Widths of the MLP's hidden layers; with ``network="periodic_conv"``,
        one processor block (a dilated stack of convolutions) per entry, of
        that many channels.
    activation : {"silu", "relu", "tanh", "gelu", "elu"}, default="silu"
        Activation of the hidden layers ("silu" is the swish of the paper).
    network : {"mlp", "periodic_conv"}, default="mlp"
        The network ``f``: an MLP on the state vector, or the dilated
        PeriodicConvNet of the DySLIM code for a field on a periodic grid
        (the state is the grid, one channel): a circular convolution (kernel
        5) lifts the field to ``hidden_layer_sizes[0]`` channels, each
        processor block applies circular convolutions with dilations ``1, 2,
        ..., 2**(L-1), ..., 2, 1`` and adds its input, and a last convolution
        maps back to one channel. ``L`` is the smallest number of levels
        whose receptive field covers the whole grid.
    module : torch.nn.Module or None, default=None
        Your own ``f`` mapping ``(batch, n_features)`` to ``(batch,
        n_outputs)``; deep-copied and trained from its weights. Overrides
        ``network``, ``hidden_layer_sizes`` and ``activation``.
    integrator : {"residual", "euler", "rk4", "direct"}, default="residual"
        How ``f`` makes a step: ``x + f(x)``, ``x + dt f(x)``, a Runge-Kutta
        step of ``dx/dt = f(x)``, or ``f(x)``.
    dt : float, default=1.0
        Time step of the ``euler`` and ``rk4`` integrators (in the units of
        the data's time step; with ``normalize`` the vector field acts on
        z-scores).
    n_rollout_steps : int, default=1
        ``K``, the future states per training row (``y`` of width
        ``K * n_features``); the loss rolls out ``K`` steps.
    rollout_weighting : {"geometric", "inverse_sqrt", "inverse_squared", "none"}, default="geometric"
        Weights ``w_k`` of the rollout steps: ``rollout_decay ** (k - 1)``
        (at least 1e-7), ``1 / sqrt(k)``, ``1 / k**2`` or 1.
    rollout_decay : float, default=0.1
        Ratio of the geometric weights (0.1 in the paper's Lorenz-63 runs, 0.9
        for Kuramoto-Sivashinsky).
    lambda_uncond : float, default=0.0
        Weight of the unconditional measure term ``U`` (dynamics mode only).
        Off by default, as in the paper's Kuramoto-Sivashinsky and
        Kolmogorov-flow configurations: on a finite batch ``U`` is zero for
        the identity map rather than for the true one, a bias that costs
        accuracy when the data are clean (see Notes); the conditional term
        alone keeps the long-run gains on noisy data.
    lambda_cond : float, default=1.0
        Weight of the conditional measure term ``C`` (in regression mode, of
        ``D(predictions, targets)``); at most 1e6, as ``lambda_uncond``.
    measure : {"mmd", "sinkhorn"}, default="mmd"
        ``D``: squared MMD (:func:`~sklearn_icml.metrics.mmd2`) or the
        Sinkhorn divergence (:func:`~sklearn_icml.metrics.sinkhorn_divergence`,
        POT, much slower).
    mmd_bandwidths : tuple of float, default=(0.2, 0.5, 0.9, 1.3)
        Scales of the kernel, in the units the network sees (z-scores with
        ``normalize``); also used by :meth:`invariant_measure_score`.
    pushforward : bool, default=False
        Push-forward training: each step draws ``k`` uniformly in ``[2, K]``,
        rolls ``k - 1`` steps without gradient and one with; only that last
        step enters the loss. Needs ``n_rollout_steps >= 2``.
    curriculum_every : int or None, default=None
        Start the rollout at one step and add one every ``curriculum_every``
        optimiser steps, up to ``n_rollout_steps``.
    sobolev_order : int >= 0 or None, default=None
        Replace the squared error ``l2`` by the paper's H^s Sobolev misfit
        of order ``s = sobolev_order`` (its Kolmogorov-flow runs use
        ``s = 1``): the state's ``n_features`` values are read as one period
        of a field on a periodic 1-D grid (as ``network="periodic_conv"``
        reads them) and the residual ``r = S^k(x_0) - x_k`` is measured as
        ``sum_m (1 + |k_m|^2 + ... + |k_m|^(2s)) |r_hat_m|^2 / n_features^2``
        over its discrete Fourier modes ``r_hat_m``, with the angular
        wavenumber ``k_m = 2 pi m / sobolev_length`` (``m`` signed). Order 0
        is the mean squared error (Parseval); higher orders weigh the fine
        scales of the field more, so that a prediction with the right
        large scales and wrong small ones is penalised. It is a norm over
        space: for a state of unrelated coordinates (Lorenz-63) it has no
        meaning, and the paper uses it only for fields. White observation
        noise weighs as much at fine scales as at coarse ones, so on noisy
        fields the weighted misfit is mostly noise. Dynamics mode only; with
        ``normalize`` the residual is in z-scores per grid point.
    sobolev_length : float, default=1.0
        Length ``L`` of the periodic domain in the wavenumbers of the
        Sobolev misfit (the DySLIM code's default is 1; pass the physical
        length, e.g. 22 for the Kuramoto-Sivashinsky data of
        :func:`~sklearn_icml.datasets.make_kuramoto_sivashinsky`, to weigh
        mode ``m`` by its physical wavenumber).
    normalize : bool, default=True
        Train on z-scores of the training states (undone on output).
    batch_size : int, default=256
        Rows per optimiser step (clipped to the number of rows).
    learning_rate : float, default=1e-3
        Adam's step size.
    max_iter : int, default=2000
        Optimiser steps (not epochs).
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows, evaluate the objective
        on them after every pass over the training rows (``ceil(n_train /
        batch_size)`` steps) and stop when it has not decreased by at least
        ``tol`` for more than ``n_iter_no_change`` passes; the map of the best
        validation objective is kept. The held-out objective is the training
        one (misfit and measure terms over batches of ``batch_size`` held-out
        rows) with the full rollout, without the push-forward's random start.
        Without early stopping all ``max_iter`` steps run: the training
        objective of a batch (an MMD between batches) is too noisy an
        estimate to stop on.
    validation_fraction : float in (0, 1), default=0.1
        Share of the rows held out for early stopping (drawn from the seeded
        generator).
    n_iter_no_change : int >= 1, default=10
        Passes without an improvement of the validation objective tolerated
        (``early_stopping`` only).
    tol : float >= 0, default=1e-4
        Minimal decrease of the validation objective that counts as an
        improvement (``early_stopping`` only).
    mode : {"auto", "dynamics", "regression"}, default="auto"
        ``"dynamics"``: ``y`` holds the next state (width ``n_features``) or
        the ``K`` next states (width ``K * n_features``). ``"regression"``:
        any ``y``; the loss is MSE + ``lambda_cond * D(predictions, y)``.
        ``"auto"`` picks dynamics when ``y``'s width allows it, and plain
        regression for a 1-D ``y``; a 2-D ``y`` of any other width is fitted
        as regression with a warning (say ``mode="regression"``).
    grad_clip : float or None, default=1.0
        Clip the global gradient norm before each step.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where training and rollouts run.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the mini-batches and push-forward draws.
    verbose : int, default=0
        Print the loss terms about 20 times during fit when positive.

    Attributes
    ----------
    module_ : torch.nn.Module
        The trained one-step map ``S_theta`` (integrator included), on the
        CPU, acting on normalised states.
    mode_ : {"dynamics", "regression"}
        The mode used.
    mean_ : ndarray of shape (n_features,)
        Mean of the training states (0 without ``normalize``).
    scale_ : ndarray of shape (n_features,)
        Standard deviation of the training states (1 for constant features
        and without ``normalize``).
    target_mean_ : ndarray of shape (n_outputs,)
        Mean subtracted from the targets (``mean_`` in dynamics mode).
    target_scale_ : ndarray of shape (n_outputs,)
        Scale the targets are divided by (``scale_`` in dynamics mode).
    loss_curve_ : ndarray of shape (``n_iter_``, 4)
        Per optimiser step: total loss, ``l2`` (the Sobolev misfit with
        ``sobolev_order``), ``U`` and ``C`` (the unweighted terms).
    validation_scores_ : list of float or None
        The held-out objective after each pass (lower is better) with
        ``early_stopping``; ``None`` otherwise.
    best_validation_score_ : float or None
        Its smallest value (that of the map kept) with ``early_stopping``;
        ``None`` otherwise.
    n_iter_ : int
        Optimiser steps run.
    n_outputs_ : int
        Width of one prediction (``n_features_in_`` in dynamics mode).
    n_rollout_steps_ : int
        Future states per training row (dynamics mode; 0 in regression).
    device_ : str
        Where training ran.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when X had string column names.

    See Also
    --------
    make_rollout_dataset : Trajectories to ``(X, y)``.
    invariant_measure_scorer : A scorer for model selection on long-run statistics.
    sklearn_icml.metrics.mmd2 : The measure distance.

    Notes
    -----
    The objective is that of the official code (``swirl_dynamics``,
    ``projects/ergodic/stable_ar.py``): biased MMD V-statistic, inverse
    multiquadric kernel, geometric rollout weights, optional push-forward and
    curriculum. Differences: the default network is a small MLP with a
    residual step (the paper's L63 runs use an Euler step, Adam 1e-4 and
    500k steps); ``periodic_conv`` is the paper's dilated PeriodicConvNet
    (encoder, processor blocks of dilated circular convolutions with a skip
    connection, decoder; the residual integrator is its input skip), with
    the number of dilation levels chosen so that every output point sees
    the whole grid (the paper uses 4 levels, 4 blocks of 48 channels at 512
    points). A field network whose receptive field is a small part of the
    grid learns the one-step map poorly and its rollouts diverge (the
    comparison on Kuramoto-Sivashinsky is on :doc:`the benchmark page
    </benchmarks/dyslim>`). The Sinkhorn divergence uses POT's
    log-domain solver with the regularisation set to 5% of the mean cost,
    as we assume ``ott``'s relative default to be. The Sobolev misfit
    (``sobolev_order``) is the code's ``sobolev_norm`` on a 1-D periodic
    grid (the paper applies it to the 2-D Kolmogorov flow), divided by the
    squared number of grid points rather than by the number of points, so
    that order 0 equals the default squared error and the weights
    ``lambda_uncond`` and ``lambda_cond`` keep their scale.

    Where the measure term helps: on *noisy* Lorenz-63 observations the
    MSE emulator can learn a contracting map whose rollouts
    collapse, and DySLIM keeps the attractor; on *clean* data with a short
    time step the MSE emulator already reproduces the attractor and DySLIM's
    long-run statistics are worse. The unconditional term is the cause: on
    a finite batch ``U`` is zero for the identity map and positive for the
    true one (the batch of next states is not the batch of initial
    states), so it pulls the map away from the true dynamics with a
    strength that does not shrink with the data's noise; on clean data the
    misfit is small and that pull dominates. The conditional term is zero
    at the true map; it alone (the default, ``lambda_uncond=0``) tracks
    like the MSE emulator on clean data and keeps DySLIM's long-run gains
    on noisy data (the benchmark page shows both cases).

    With ``measure="mmd"`` both terms of a rollout step come from one
    kernel block of the predictions against ``[p_k, x_0, x_k]``, with the
    kernel's slope kept from the forward pass for a hand-written backward;
    the values and gradients are those of two
    :func:`~sklearn_icml.metrics.mmd2` calls.

    Training runs in float32. :meth:`predict` evaluates its one step in
    float64 (on a copy of the weights), so that a row's prediction does not
    depend on the other rows of the batch; :meth:`rollout` runs in float32 on
    ``device_`` (many trajectories at once).

    Rollouts flag a trajectory as diverged when it leaves the ball of
    ``DIVERGENCE_THRESHOLD = 100`` training standard deviations (or becomes
    non-finite); it is held at its last state and a warning is issued.

    References
    ----------
    .. [1] Schiff, Y., Wan, Z. Y., Parker, J. B., Hoyer, S., Kuleshov, V.,
       Sha, F. and Zepeda-Nunez, L. "DySLIM: Dynamics Stable Learning by
       Invariant Measure for Chaotic Systems", Proceedings of the 41st
       International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_lorenz63
    >>> from sklearn_icml.dynamics import DySLIMRegressor, make_rollout_dataset
    >>> X, y = make_rollout_dataset(make_lorenz63(20, 50, random_state=0))
    >>> model = DySLIMRegressor(hidden_layer_sizes=(32,), max_iter=50, random_state=0).fit(X, y)
    >>> model.rollout(X[:2], n_steps=5).shape
    (2, 5, 3)
    >>> model.loss_curve_.shape
    (50, 4)

    The paper's H^1 Sobolev misfit for a field on a periodic grid:

    >>> from sklearn_icml.datasets import make_kuramoto_sivashinsky
    >>> fields = make_kuramoto_sivashinsky(4, 20, random_state=0)
    >>> X, y = make_rollout_dataset(fields)
    >>> model = DySLIMRegressor((8,), network="periodic_conv", sobolev_order=1, sobolev_length=22.0,
    ...                         max_iter=5, random_state=0).fit(X, y)
    >>> model.rollout(X[:2], n_steps=3).shape
    (2, 3, 64)
    """

    _parameter_constraints = {
        "hidden_layer_sizes": [tuple, list],
        "activation": [StrOptions({"silu", "relu", "tanh", "gelu", "elu"})],
        "network": [StrOptions({"mlp", "periodic_conv"})],
        "module": [HasMethods(["forward", "parameters"]), None],
        "integrator": [StrOptions({"residual", "euler", "rk4", "direct"})],
        "dt": [Interval(Real, 0, None, closed="neither")],
        "n_rollout_steps": [Interval(Integral, 1, None, closed="left")],
        "rollout_weighting": [StrOptions({"geometric", "inverse_sqrt", "inverse_squared", "none"})],
        "rollout_decay": [Interval(Real, 0, 1, closed="right")],
        # loss weights, at most 1e6 as the house's penalty weights (the loss is float32: 1e300 overflows it)
        "lambda_uncond": [Interval(Real, 0, 1e6, closed="both")],
        "lambda_cond": [Interval(Real, 0, 1e6, closed="both")],
        "measure": [StrOptions({"mmd", "sinkhorn"})],
        "mmd_bandwidths": [tuple, list],
        "pushforward": ["boolean"],
        "curriculum_every": [Interval(Integral, 1, None, closed="left"), None],
        "sobolev_order": [Interval(Integral, 0, None, closed="left"), None],
        "sobolev_length": [Interval(Real, 0, None, closed="neither")],
        "normalize": ["boolean"],
        "learning_rate": [Interval(Real, 0, float(np.finfo(np.float32).max), closed="neither")],
        "mode": [StrOptions({"auto", "dynamics", "regression"})],
        "grad_clip": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, hidden_layer_sizes=(64, 64), *, activation="silu", network="mlp", module=None,
                 integrator="residual", dt=1.0, n_rollout_steps=1, rollout_weighting="geometric", rollout_decay=0.1,
                 lambda_uncond=0.0, lambda_cond=1.0, measure="mmd", mmd_bandwidths=(0.2, 0.5, 0.9, 1.3),
                 pushforward=False, curriculum_every=None, sobolev_order=None, sobolev_length=1.0, normalize=True,
                 batch_size=256, learning_rate=1e-3, max_iter=2000, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-4, mode="auto", grad_clip=1.0, device="cpu", random_state=None,
                 verbose=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.network = network
        self.module = module
        self.integrator = integrator
        self.dt = dt
        self.n_rollout_steps = n_rollout_steps
        self.rollout_weighting = rollout_weighting
        self.rollout_decay = rollout_decay
        self.lambda_uncond = lambda_uncond
        self.lambda_cond = lambda_cond
        self.measure = measure
        self.mmd_bandwidths = mmd_bandwidths
        self.pushforward = pushforward
        self.curriculum_every = curriculum_every
        self.sobolev_order = sobolev_order
        self.sobolev_length = sobolev_length
        self.normalize = normalize
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.mode = mode
        self.grad_clip = grad_clip
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    # -- fitting -----------------------------------------------------------------------------------

    def _check_options(self, name):
        sizes = tuple(self.hidden_layer_sizes)
        if not all(isinstance(h, Integral) and not isinstance(h, bool) and h >= 1 for h in sizes):
            raise ValueError(f"{name}: hidden_layer_sizes must hold positive integers; got "
                             f"{self.hidden_layer_sizes!r}.")
        bw = np.asarray(self.mmd_bandwidths, dtype=np.float64).ravel() if len(self.mmd_bandwidths) else None
        if bw is None or not np.all(np.isfinite(bw)) or np.any(bw <= 0):
            raise ValueError(f"{name}: mmd_bandwidths must be a non-empty sequence of positive numbers; got "
                             f"{self.mmd_bandwidths!r}.")
        if self.pushforward and self.n_rollout_steps < 2:
            raise ValueError(f"{name}: pushforward=True needs n_rollout_steps >= 2; got "
                             f"n_rollout_steps={self.n_rollout_steps}.")
        return sizes

    def _resolve_mode(self, d, y, name):
        """``("dynamics", K)`` or ``("regression", 0)`` from y's shape and ``mode``."""
        K = int(self.n_rollout_steps)
        width = y.shape[1] if y.ndim == 2 else None
        fits = width is not None and (width == K * d or (K == 1 and width == d))
        if self.mode == "regression" or (self.mode == "auto" and not fits):
            if self.mode == "auto" and width == d and K > 1:
                raise ValueError(f"{name}: y has {width} columns (one next state) but n_rollout_steps={K} needs "
                                 f"{K * d} (K future states; see make_rollout_dataset).")
            if self.mode == "auto" and width is not None:
                warnings.warn(f"{name}: y has {width} columns, not the {K * d} of the next state(s) of X's {d} "
                              "features, so this fits a plain multi-output regressor (no rollouts, no "
                              "invariant-measure loss on states). Pass mode='regression' to fit it so without this "
                              "warning, or y of the next states (make_rollout_dataset) to learn the dynamics.",
                              UserWarning, stacklevel=3)
            return "regression", 0
        if not fits:
            raise ValueError(f"{name}: mode='dynamics' needs y of shape (n_samples, {K * d}) (n_rollout_steps={K} "
                             f"future states of {d} features); got y of shape {y.shape}.")
        return "dynamics", K

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the flow map.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            States at time t.
        y : array-like of shape (n_samples, n_features) or (n_samples, n_rollout_steps * n_features)
            The next state, or the ``K`` next states one after the other
            (:func:`make_rollout_dataset`). Any other ``y`` is fitted as plain
            regression: silently for a 1-D ``y`` in ``mode="auto"``, with a
            warning for another width unless ``mode="regression"``.

        Returns
        -------
        self : object
            Fitted estimator.
        """

        import torch

        from ..utils import Trainer
        from ..utils._training import ProgressReporter
        from ._networks import FlowMap, build_network

        name = type(self).__name__
        with self._torch_fit_context() as ctx:
            X, y = validate_data(self, as_numpy(X), as_numpy(y), multi_output=True, y_numeric=True,
                                 dtype=[np.float64, np.float32])
            sizes = self._check_options(name)
            n, d = X.shape
            self._y_1d = y.ndim == 1
            mode, K = self._resolve_mode(d, y, name)
            if self.sobolev_order is not None and mode != "dynamics":
                raise ValueError(f"{name}: sobolev_order={self.sobolev_order!r} measures the misfit of a predicted "
                                 f"state over the Fourier modes of its grid and needs dynamics mode (y of the next "
                                 f"state(s) of X); this y of shape {y.shape} is fitted in regression mode.")
            Y = y.reshape(n, -1).astype(np.float64)
            check_float32_range(X, Y, name=name, labels=("X", "y"), reason="the flow map trains in float32")
            q = d if mode == "dynamics" else Y.shape[1]
            if self.network == "periodic_conv" and self.module is None and (d < 2 or not sizes):
                raise ValueError(f"{name}: network='periodic_conv' needs a grid of at least 2 points and at least one "
                                 f"processor block in hidden_layer_sizes; got {d} features and "
                                 f"hidden_layer_sizes={self.hidden_layer_sizes!r}.")
            if mode == "regression" and self.network == "periodic_conv" and self.module is None and q != d:
                raise ValueError(f"{name}: network='periodic_conv' maps a field to a field of the same size; y has "
                                 f"{q} columns and X {d}.")

            if self.normalize:
                self.mean_, self.scale_ = standardization(X)
            else:
                self.mean_, self.scale_ = np.zeros(d), np.ones(d)
            if mode == "dynamics":
                self.target_mean_, self.target_scale_ = self.mean_.copy(), self.scale_.copy()
            elif self.normalize:
                self.target_mean_, self.target_scale_ = standardization(Y)
            else:
                self.target_mean_, self.target_scale_ = np.zeros(q), np.ones(q)
            Xz = (X - self.mean_) / self.scale_
            if mode == "dynamics":
                Yz = ((Y.reshape(n, K, d) - self.mean_) / self.scale_)
            else:
                Yz = (Y - self.target_mean_) / self.target_scale_

            device, generator = ctx.device, ctx.generator
            if self.module is not None:
                net = copy.deepcopy(self.module)
            else:
                net = build_network(self.network, d, q, sizes, self.activation, generator)
            integrator = self.integrator if mode == "dynamics" else "direct"
            module = FlowMap(net, integrator, self.dt).to("cpu")
            dtype = next(module.parameters()).dtype
            Xt = to_tensor(Xz, device, dtype)
            Yt = to_tensor(Yz, device, dtype)
            reporter = ProgressReporter(name, self.max_iter, self.verbose) if self.verbose else None
            objective = _Objective(self, Xt, Yt, K, generator, device, name, reporter)
            rows = torch.arange(n, device=device)  # the objective reads its batches from Xt, Yt by row
            result = Trainer(
                loop="steps", train_step=objective, max_iter=self.max_iter, batch_size=self.batch_size,
                learning_rate=self.learning_rate, optimizer="adam", early_stopping=self.early_stopping,
                validation_fraction=self.validation_fraction,
                n_iter_no_change=self.n_iter_no_change if self.early_stopping else None, tol=self.tol,
                grad_clip=self.grad_clip, device=device, random_state=generator, verbose=0, name=name,
            ).fit(module, rows, None)
            curve = to_numpy(objective.log, np.float64)
        self.module_ = result.module
        self.mode_ = mode
        self.n_rollout_steps_ = K
        self.n_outputs_ = q
        self.n_iter_ = result.n_iter
        self.loss_curve_ = curve[:self.n_iter_]
        self.validation_scores_ = result.validation_scores
        self.best_validation_score_ = result.best_validation_score
        return self

    # -- prediction --------------------------------------------------------------------------------

    def _inference_device(self):
        import torch

        if self.device_.startswith("cuda") and torch.cuda.is_available():
            return torch.device(self.device_)
        return torch.device("cpu")

    def _check_X(self, X, reset=False, name="X"):
        check_is_fitted(self)
        return validate_data(self, as_numpy(X), reset=reset, dtype=[np.float64, np.float32])

    def predict(self, X):
        """One step of the learned map (or the regression prediction).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            States.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, n_features) or (n_samples, n_outputs)
            The next states (dynamics mode); the predicted targets in
            regression mode (1-D when fitted on a 1-D ``y``).
        """
        X = self._check_X(X)
        with self._torch_context():
            # one step in float64, so that a row's prediction does not depend on the other rows of the batch
            out = to_numpy(forward_float64(self.module_, (X - self.mean_) / self.scale_), np.float64)
        out = out * self.target_scale_ + self.target_mean_
        return out[:, 0] if (self.mode_ == "regression" and self._y_1d) else out

    def _rollout_z(self, Z0, n_steps):
        """Roll normalised states out; returns (states (n, n_steps, d) float64, diverged (n,) bool, first step)."""
        import torch

        device = self._inference_device()
        module = self.module_ if device.type == "cpu" else copy.deepcopy(self.module_).to(device)
        dtype = next(module.parameters()).dtype
        with self._torch_context(), torch.no_grad():
            z = to_tensor(Z0, device, dtype)
            out = torch.empty((z.shape[0], n_steps, z.shape[1]), dtype=dtype, device=device)
            alive = torch.ones(z.shape[0], dtype=torch.bool, device=device)
            first = torch.full((z.shape[0],), -1, dtype=torch.long, device=device)
            for t in range(n_steps):
                nxt = module(z)
                bad = ~torch.isfinite(nxt).all(1) | (nxt.abs().amax(1) > DIVERGENCE_THRESHOLD)
                newly = bad & alive
                first = torch.where(newly, torch.full_like(first, t + 1), first)
                alive = alive & ~bad
                z = torch.where(alive[:, None], nxt, z)
                out[:, t] = z
            return to_numpy(out, np.float64), to_numpy(~alive).astype(bool), to_numpy(first)

    def rollout(self, X0, n_steps, return_all=True, *, return_diverged=False):
        """Apply the learned map repeatedly.

        Parameters
        ----------
        X0 : array-like of shape (n_trajectories, n_features)
            Initial states.
        n_steps : int >= 1
            Steps to take.
        return_all : bool, default=True
            Return every state; otherwise only the last.
        return_diverged : bool, default=False
            Also return which trajectories diverged.

        Returns
        -------
        states : ndarray of shape (n_trajectories, n_steps, n_features)
            States after steps 1..n_steps (``(n_trajectories, n_features)``
            when ``return_all=False``). A diverged trajectory is held at its
            last state inside the divergence ball.
        diverged : ndarray of shape (n_trajectories,) of bool
            Only with ``return_diverged``.

        Warns
        -----
        RuntimeWarning
            When a trajectory diverged (left the ball of 100 training
            standard deviations around the training mean, or became
            non-finite).
        """
        name = type(self).__name__
        X0 = self._check_X(X0, name="X0")
        if self.mode_ != "dynamics":
            raise ValueError(f"{name}.rollout: the model was fitted in regression mode (y of another width than "
                             "X); rollouts need a flow map (dynamics mode).")
        if isinstance(n_steps, bool) or not isinstance(n_steps, Integral) or n_steps < 1:
            raise ValueError(f"{name}.rollout: n_steps must be an int >= 1; got {n_steps!r}.")
        Z, diverged, first = self._rollout_z((X0 - self.mean_) / self.scale_, int(n_steps))
        if diverged.any():
            warnings.warn(f"{name}.rollout: {int(diverged.sum())} of {len(diverged)} trajectories diverged (first at "
                          f"step {int(first[diverged].min())}); they are held at their last state.",
                          RuntimeWarning, stacklevel=2)
        states = Z * self.scale_ + self.mean_
        if not return_all:
            states = states[:, -1]
        return (states, diverged) if return_diverged else states

    def invariant_measure_score(self, X0, reference, n_steps=1000, burn_in=0.9, *, max_samples=2000,
                                random_state=0):
        """Compute minus the squared MMD between the long-run states of rollouts and a reference sample.

        The states after step ``burn_in * n_steps`` of the rollouts from
        ``X0`` are compared with ``reference`` (e.g. states on the true
        attractor) by :func:`~sklearn_icml.metrics.mmd2` with
        ``mmd_bandwidths``, in the normalised units of the training states.
        Higher is better; 0 is a perfect match.

        Parameters
        ----------
        X0 : array-like of shape (n_trajectories, n_features)
            Initial states.
        reference : array-like of shape (n_reference, n_features)
            A sample of the invariant measure.
        n_steps : int, default=1000
            Rollout length.
        burn_in : float in [0, 1), default=0.9
            Share of the rollout left out.
        max_samples : int or None, default=2000
            Rows kept (without replacement) from each sample.
        random_state : int, RandomState instance or None, default=0
            Seeds the subsampling.

        Returns
        -------
        float
            ``-MMD^2``.
        """
        name = type(self).__name__
        check_is_fitted(self)
        if not (isinstance(burn_in, Real) and 0 <= burn_in < 1):
            raise ValueError(f"{name}.invariant_measure_score: burn_in must be in [0, 1); got {burn_in!r}.")
        reference = check_array(as_numpy(reference), dtype=np.float64, input_name="reference")
        if reference.shape[1] != self.n_features_in_:
            raise ValueError(f"{name}.invariant_measure_score: reference has {reference.shape[1]} features; the model "
                             f"has {self.n_features_in_}.")
        states = self.rollout(X0, n_steps)
        start = min(int(math.floor(burn_in * n_steps)), n_steps - 1)
        long_run = states[:, start:].reshape(-1, self.n_features_in_)
        rng = check_random_state(random_state)
        P = (long_run - self.mean_) / self.scale_
        Q = (reference - self.mean_) / self.scale_
        if max_samples is not None:
            P = P[rng.choice(len(P), max_samples, replace=False)] if len(P) > max_samples else P
            Q = Q[rng.choice(len(Q), max_samples, replace=False)] if len(Q) > max_samples else Q
        return -mmd2(P, Q, bandwidths=self.mmd_bandwidths)

    def score(self, X, y, sample_weight=None):
        """R² of the predictions of ``y``'s layout (the ``K``-step rollout for ``K`` future states).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            States.
        y : array-like
            Targets in the layout of fit.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        float
            R² (uniform average over outputs).
        """
        y = np.asarray(as_numpy(y))
        check_is_fitted(self)
        if self.mode_ == "dynamics" and y.ndim == 2 and y.shape[1] == self.n_rollout_steps_ * self.n_features_in_ \
                and self.n_rollout_steps_ > 1:
            pred = self.rollout(X, self.n_rollout_steps_).reshape(len(y), -1)
        else:
            pred = self.predict(X)
        return float(r2_score(y, pred, sample_weight=sample_weight))


def _invariant_measure_score(estimator, X, y=None, *, reference, **kwargs):
    model, Xt = final_step(estimator, X)
    _, reference = final_step(estimator, reference)
    if not hasattr(model, "invariant_measure_score"):
        raise TypeError(f"invariant_measure_scorer: the estimator (or a Pipeline's last step) must have "
                        f"invariant_measure_score, as DySLIMRegressor has; got {type(model).__name__}.")
    return model.invariant_measure_score(Xt, reference, **kwargs)


def invariant_measure_scorer(reference, **kwargs):
    """A scorer ``(estimator, X, y) -> estimator.invariant_measure_score(X, reference, **kwargs)``.

    For model selection on long-run statistics: in :class:`~sklearn.model_selection.GridSearchCV`
    each fold's held-out ``X`` serves as initial states of the rollouts. A
    :class:`~sklearn.pipeline.Pipeline` ending in a :class:`DySLIMRegressor`
    is scored through its last step, on ``X`` transformed by the steps before
    it; ``reference`` goes through those steps too, so the rollouts and the
    reference sample are compared in the last step's coordinates.

    Parameters
    ----------
    reference : array-like of shape (n_reference, n_features)
        A sample of the invariant measure.
    **kwargs : dict
        ``n_steps``, ``burn_in``, ``max_samples``, ``random_state`` of
        :meth:`DySLIMRegressor.invariant_measure_score`.

    Returns
    -------
    callable
        The scorer (picklable; higher is better).

    See Also
    --------
    DySLIMRegressor.invariant_measure_score : What it calls.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.dynamics import invariant_measure_scorer
    >>> scorer = invariant_measure_scorer(np.zeros((5, 3)), n_steps=10)
    >>> callable(scorer)
    True
    """
    reference = check_array(as_numpy(reference), dtype=np.float64, input_name="reference")
    return partial(_invariant_measure_score, reference=reference, **kwargs)
