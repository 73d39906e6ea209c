"""Training a torch model along an adaptive-shape schedule.

This loop stands apart from :class:`sklearn_icml.utils.Trainer`:
the model's shape, hence the module, its parameters and its optimizer, change
in the middle of training, at loss levels measured during training, and the
loop counts compute step by step to compare with the scaling laws. ``Trainer``
trains one fixed module for whole epochs. The loop still speaks the layer's
vocabulary: seeded mini-batches from ``iterate_minibatches`` and a
``torch_generator``, progress lines from ``ProgressReporter`` under
``verbose``, the thread rule ``torch_threads`` and a resolved ``device``.
"""

import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from ..utils._torch import resolve_device, torch_generator, torch_threads
from ..utils._training import ProgressReporter, iterate_minibatches

__all__ = ["AdaptiveTrainingResult", "train_adaptive"]


@dataclass
class AdaptiveTrainingResult:
    """What :func:`train_adaptive` returns.

    Parameters
    ----------
    module : torch.nn.Module
        The trained model in its final shape, on the CPU, in eval mode.
    history : list of tuple
        ``(compute, loss, shape)`` at every evaluation, compute cumulative.
    switches : list of tuple
        ``(compute, loss, old_shape, new_shape, reason)`` of each shape change;
        ``reason`` is ``"schedule"`` or ``"stall"``.
    n_steps : int
        Optimisation steps run.
    reached : bool
        Whether the target loss was reached.
    compute_to_target : float
        Cumulative compute at the first evaluation at or below the target
        (``inf`` when not reached).
    loss_curve : list of float
        The evaluated losses (the ``loss`` column of ``history``).
    """

    module: object
    history: list = field(default_factory=list)
    switches: list = field(default_factory=list)
    n_steps: int = 0
    reached: bool = False
    compute_to_target: float = float("inf")
    loss_curve: list = field(default_factory=list)


def _plan(scheduler, target_loss, start_loss):
    """``[(shape, switch_loss)]``: train ``shape`` until the loss reaches ``switch_loss``."""
    if scheduler is None:
        return None
    if isinstance(scheduler, (list, tuple)):
        segments = list(scheduler)
    else:
        segments = scheduler.schedule(target_loss, start_loss)
    return [(seg.shape, seg.loss_to) for seg in segments]


def _batches(batches, batch_size, generator, device):
    """Endless stream of ``(X_batch, y_batch)`` tensors on ``device``."""
    import torch

    if isinstance(batches, tuple) and len(batches) == 2 and hasattr(batches[0], "shape"):
        X = torch.as_tensor(np.asarray(batches[0]), dtype=torch.float32).to(device)
        y = torch.as_tensor(np.asarray(batches[1])).to(device)
        if y.is_floating_point():
            y = y.float()
        while True:
            for idx in iterate_minibatches(len(X), batch_size, generator, device=device):
                yield X[idx], y[idx]
    else:
        for xb, yb in batches:
            yield torch.as_tensor(xb).to(device), torch.as_tensor(yb).to(device)


def _move_state(old_opt, old_model, new_opt, new_model, carry):
    """Give the new optimizer the old one's state where the parameter kept its shape.

    Grown parameters (an old block in the leading corner of the new one) get the
    old state there and zeros elsewhere when ``carry``; other parameters start
    fresh.
    """
    import torch

    if not carry:
        return
    old_params = dict(old_model.named_parameters())
    for name, p_new in new_model.named_parameters():
        p_old = old_params.get(name)
        if p_old is None or p_old not in old_opt.state:
            continue
        state = old_opt.state[p_old]
        new_state = {}
        for key, value in state.items():
            if not torch.is_tensor(value) or value.dim() == 0:
                new_state[key] = value.clone() if torch.is_tensor(value) else value
                continue
            if value.shape == p_new.shape:
                new_state[key] = value.clone()
            elif value.dim() == p_new.dim() and all(o <= n for o, n in zip(value.shape, p_new.shape)):
                grown = torch.zeros_like(p_new)
                grown[tuple(slice(0, s) for s in value.shape)] = value
                new_state[key] = grown
            else:
                new_state = None
                break
        if new_state is not None:
            new_opt.state[p_new] = new_state


def train_adaptive(model, resize, scheduler, batches, *, target_loss, loss_fn, eval_fn, flops_per_step,
                   shape=None, start_loss=None, learning_rate=1e-3, optimizer="adam", optimizer_state="reset",
                   batch_size=32, max_steps=10000, eval_every=50, stall_patience=None, min_gain=0.01, device="cpu",
                   random_state=None, verbose=0, max_compute=None):
    """Train ``model``, changing its shape at the loss levels of an adaptive schedule.

    The model starts in the schedule's first shape (``resize(model, shape)``
    is applied when it is not already in it). Every ``eval_every`` steps the
    loss is evaluated; when it reaches the current segment's end loss, the
    model is resized to the next shape and a new optimizer is made. A stall
    guard moves on when the loss has not improved by a relative ``min_gain``
    over ``stall_patience`` evaluations (a law's floor may lie below what the
    shape really reaches). Training stops at ``target_loss``, ``max_steps`` or
    ``max_compute``.

    Parameters
    ----------
    model : torch.nn.Module
        The model in its initial shape, built and seeded by the caller. Not modified.
    resize : callable
        ``resize(model, shape) -> model`` returns the model in another shape,
        ideally keeping its function (:func:`widen_mlp`,
        :func:`resize_input_resolution`). Must accept the current shape and
        return an equivalent model; ``getattr(model, "shape", None)`` names the
        current shape when the model has that attribute.
    scheduler : AdaptiveShapeScheduler, list of Segment or None
        A fitted scheduler (its :meth:`~AdaptiveShapeScheduler.schedule` to
        ``target_loss`` is followed), an explicit schedule, or None to train the
        model's current shape only (a static run).
    batches : tuple (X, y) of arrays or iterable of (X_batch, y_batch)
        Training data: arrays are cycled through in seeded mini-batches of
        ``batch_size``; an iterable (a stream) is consumed as it is.
    target_loss : float
        Stop when the evaluated loss reaches it.
    loss_fn : callable
        ``loss_fn(output, y_batch) -> scalar tensor``, the training objective.
    eval_fn : callable
        ``eval_fn(model) -> float``, the loss the schedule is written in
        (e.g. held-out loss), evaluated under ``torch.no_grad``.
    flops_per_step : callable
        ``flops_per_step(shape) -> float``: compute of one training step.
    shape : shape id or None, default=None
        The shape ``model`` is in; needed for a static run (``scheduler=None``).
        None means ``getattr(model, "shape", None)``. With a schedule the model
        is resized to the schedule's first shape in any case.
    start_loss : float or None, default=None
        Passed to the scheduler's ``schedule``.
    learning_rate : float, default=1e-3
        Step size.
    optimizer : {"adam", "sgd"}, default="adam"
        Optimizer, re-created at every shape change.
    optimizer_state : {"reset", "carry"}, default="reset"
        At a shape change, start the optimizer afresh, or carry its state:
        kept-shape parameters keep theirs, grown ones get it in their old block
        and zeros for the new entries.
    batch_size : int, default=32
        Mini-batch size when ``batches`` holds arrays.
    max_steps : int, default=10000
        Step budget.
    eval_every : int or callable, default=50
        Steps between evaluations, or ``eval_every(shape) -> int`` (e.g. fewer
        steps for a dearer shape, to evaluate at even compute intervals).
    stall_patience : int or None, default=None
        Evaluations without a relative ``min_gain`` improvement before moving
        to the next shape; None disables the guard.
    min_gain : float, default=0.01
        Relative improvement the stall guard asks for.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where to train.
    random_state : int, RandomState instance or None, default=None
        Seeds the mini-batch order.
    verbose : int, default=0
        Progress lines at each evaluation and shape change.
    max_compute : float or None, default=None
        Compute budget: training stops at the first evaluation past it.

    Returns
    -------
    result : AdaptiveTrainingResult
        The trained model, the ``(compute, loss, shape)`` history and the switches.

    See Also
    --------
    AdaptiveShapeScheduler : Gives the schedule.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_icml.scaling import Segment, train_adaptive, widen_mlp
    >>> X = np.random.RandomState(0).normal(size=(256, 4)).astype("float32")
    >>> y = np.sin(2 * X[:, :1]) * np.cos(X[:, 1:2])
    >>> with torch.random.fork_rng():  # seeded initial weights; the global generator is left as it was
    ...     _ = torch.manual_seed(0)
    ...     net = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    >>> plan = [Segment(2, 1.0, 0.15, 0, 0), Segment(16, 0.15, 0.05, 0, 0)]  # width 2, then 16
    >>> mse = torch.nn.functional.mse_loss
    >>> def evaluate(m):
    ...     return float(mse(m(torch.as_tensor(X)), torch.as_tensor(y)))
    >>> res = train_adaptive(net, lambda m, w: widen_mlp(m, w, random_state=0), plan, (X, y), target_loss=0.05,
    ...                      loss_fn=mse, eval_fn=evaluate, flops_per_step=lambda w: 6 * 32 * w * 6,
    ...                      learning_rate=1e-2, max_steps=3000, random_state=0)
    >>> res.module[0].out_features, res.reached, [sw[2:] for sw in res.switches]
    (16, True, [(2, 16, 'schedule')])
    """
    import torch

    name = "train_adaptive"
    for label, value, kind in (("batch_size", batch_size, Integral), ("max_steps", max_steps, Integral),
                               ("learning_rate", learning_rate, Real), ("target_loss", target_loss, Real)):
        if not isinstance(value, kind) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name}: {label} must be a positive number; got {value!r}.")
    every = eval_every if callable(eval_every) else (lambda shape: eval_every)
    if not callable(eval_every) and (not isinstance(eval_every, Integral) or isinstance(eval_every, bool)
                                     or eval_every <= 0):
        raise ValueError(f"{name}: eval_every must be a positive int or a callable; got {eval_every!r}.")
    if max_compute is not None and (not isinstance(max_compute, Real) or max_compute <= 0):
        raise ValueError(f"{name}: max_compute must be None or a positive number; got {max_compute!r}.")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"{name}: optimizer must be 'adam' or 'sgd'; got {optimizer!r}.")
    if optimizer_state not in ("reset", "carry"):
        raise ValueError(f"{name}: optimizer_state must be 'reset' or 'carry'; got {optimizer_state!r}.")
    if stall_patience is not None and (not isinstance(stall_patience, Integral) or stall_patience < 1):
        raise ValueError(f"{name}: stall_patience must be None or an int >= 1; got {stall_patience!r}.")
    device = resolve_device(device)
    plan = _plan(scheduler, target_loss, start_loss)
    opt_class = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    reporter = ProgressReporter(name, max_iter=None, verbose=verbose)
    generator = torch_generator(random_state)
    result = AdaptiveTrainingResult(module=None)

    with torch_threads():
        stage = 0
        shape = (getattr(model, "shape", None) if shape is None else shape) if plan is None else plan[0][0]
        current = model if plan is None else resize(model, shape)
        if current is model:
            import copy

            current = copy.deepcopy(model)
        current = current.to(device).train()
        opt = opt_class(current.parameters(), lr=learning_rate)
        compute, best_recent, since_eval = 0.0, [], 0
        stream = _batches(batches, batch_size, generator, device)
        start = time.perf_counter()
        for step in range(1, max_steps + 1):
            try:
                xb, yb = next(stream)
            except StopIteration:
                break
            opt.zero_grad()
            loss = loss_fn(current(xb), yb)
            loss.backward()
            opt.step()
            compute += float(flops_per_step(shape))
            result.n_steps = step
            since_eval += 1
            if since_eval < max(int(every(shape)), 1):
                continue
            since_eval = 0
            current.eval()
            with torch.no_grad():
                value = float(eval_fn(current))
            current.train()
            result.history.append((compute, value, shape))
            result.loss_curve.append(value)
            reporter.epoch(len(result.history), value, dur=time.perf_counter() - start, step=step, shape=str(shape),
                           compute=compute)
            if value <= target_loss:
                result.reached, result.compute_to_target = True, compute
                break
            if max_compute is not None and compute >= max_compute:
                break
            best_recent.append(value)
            stalled = (stall_patience is not None and len(best_recent) > stall_patience
                       and min(best_recent[-stall_patience:]) > min(best_recent[:-stall_patience]) * (1 - min_gain))
            due = plan is not None and stage + 1 < len(plan) and value <= plan[stage][1]
            if plan is not None and stage + 1 < len(plan) and (due or stalled):
                stage += 1
                new_shape = plan[stage][0]
                resized = resize(current, new_shape).to(device).train()
                new_opt = opt_class(resized.parameters(), lr=learning_rate)
                _move_state(opt, current, new_opt, resized, optimizer_state == "carry")
                result.switches.append((compute, value, shape, new_shape, "schedule" if due else "stall"))
                reporter.message(f"switch {shape} -> {new_shape} at loss {value:.6g}, compute {compute:.4g}"
                                 f" ({'schedule' if due else 'stall'})")
                current, opt, shape, best_recent = resized, new_opt, new_shape, []
        result.module = current.cpu().eval()
    return result
