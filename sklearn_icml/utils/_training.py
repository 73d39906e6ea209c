"""The one place where the library trains a torch module: :func:`fit_module`, built on skorch.

Every torch estimator builds its module (on the CPU, seeded from its
``random_state``), hands it to :func:`fit_module` with its data and gets a
:class:`TrainingResult` back: the trained module on the CPU in eval mode, the
per-epoch training loss (``loss_curve_``), the validation losses
(``validation_scores_``) and the number of epochs run (``n_iter_``). The
vocabulary and the stopping rules are those of scikit-learn's
:class:`~sklearn.neural_network.MLPClassifier`:

* ``max_iter`` epochs, ``batch_size``, ``learning_rate``;
* ``early_stopping=False``: training stops when the training loss has not
  decreased by at least ``tol`` for more than ``n_iter_no_change``
  consecutive epochs, and the last module is returned;
* ``early_stopping=True``: a ``validation_fraction`` of the rows is held out
  (drawn from the same seeded generator as the batches); training stops when
  the validation loss has not decreased by at least ``tol`` for more than
  ``n_iter_no_change`` consecutive epochs, and the module of the best
  validation loss is returned. Unlike scikit-learn, whose
  ``validation_scores_`` holds accuracy or R², ``validation_scores`` holds
  the validation *loss* (lower is better), in the units of the training loss.

Under the hood a private subclass of :class:`skorch.NeuralNet` runs the loop
(never exposed as an estimator: skorch's nets do not pass scikit-learn's
checks, ours must). skorch's documented hooks carry the library's needs:
``get_loss`` for the loss strings and custom losses, ``train_step_single`` /
``validation_step`` for custom objectives (a Cox partial likelihood over a
batch, a regularised multi-task loss), ``iterator_train`` / ``iterator_valid``
for seeded mini-batches sliced straight from device tensors (skorch's default
``DataLoader`` collates sample by sample), callbacks for gradient clipping
(:class:`skorch.callbacks.GradientNormClipping`), LR schedules, the stopping
rule and the per-epoch log (:class:`skorch.callbacks.PrintLog` under
``verbose``). skorch's default callbacks are replaced by that short list, and
the epoch loss is accumulated on the device (one synchronisation per epoch
instead of one per batch).

Loops that cannot be written as "one optimiser step per mini-batch of one
loss" (adversarial alternation, rollouts with curricula, meta-episodes) use
:func:`iterate_minibatches`, :class:`ProgressReporter` and
:class:`EarlyStopping` so that they speak the same vocabulary.
"""

import contextlib
import math
import sys
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from ._sklearn_private import Interval
from ._torch import is_torch_tensor, torch_generator, torch_threads

__all__ = ["TRAINING_PARAMETER_CONSTRAINTS", "EarlyStopping", "ProgressReporter", "TrainingResult", "fit_module",
           "iterate_minibatches"]

#: ``_parameter_constraints`` of the layer's options under scikit-learn's MLP names. The torch
#: estimator base (:class:`~sklearn_icml.utils._torch_base.TorchEstimatorMixin`) merges the
#: entries of the parameters an estimator has into its constraints; an estimator's own entry wins.
TRAINING_PARAMETER_CONSTRAINTS = {
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "verbose": ["verbose"],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
}

_LOSSES = ("mse", "cross_entropy", "bce_with_logits")
_OPTIMIZERS = {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop", "lbfgs": "LBFGS"}


@dataclass
class TrainingResult:
    """What :func:`fit_module` returns.

    Attributes
    ----------
    module : torch.nn.Module
        The trained module, on the CPU and in eval mode (the one of the best
        validation loss when ``early_stopping=True``).
    loss_curve : list of float
        Mean training loss of each epoch (over samples) -> ``loss_curve_``.
    validation_scores : list of float or None
        Validation loss of each epoch when ``early_stopping=True``, else
        ``None`` -> ``validation_scores_``. Lower is better.
    n_iter : int
        Epochs run (optimiser steps with ``budget="steps"``, L-BFGS
        iterations with ``optimizer="lbfgs"``) -> ``n_iter_``.
    best_loss : float or None
        Smallest training loss (``early_stopping=False``) -> ``best_loss_``.
    best_validation_score : float or None
        Smallest validation loss (``early_stopping=True``).
    epoch_times : list of float
        Wall-clock seconds of each epoch (training and validation pass).
    optimizer : torch.optim.Optimizer or None
        The optimiser used; its state may live on the training device.
    n_evaluations : int or None
        With ``optimizer="lbfgs"``: evaluations of the objective (and its
        gradient), line searches included; None otherwise.
    """

    module: object
    loss_curve: list
    validation_scores: list = None
    n_iter: int = 0
    best_loss: float = None
    best_validation_score: float = None
    epoch_times: list = field(default_factory=list)
    optimizer: object = None
    n_evaluations: int = None


# -- helpers also used by hand-written loops -----------------------------------------------------

def _as_generator(random_state):
    if type(random_state).__name__ == "Generator" and type(random_state).__module__.startswith("torch"):
        return random_state
    return torch_generator(random_state)


def iterate_minibatches(n_samples, batch_size, generator=None, *, shuffle=True, device=None):
    """Yield index tensors of mini-batches over ``n_samples`` rows.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    batch_size : int
        Rows per batch (the last one may be smaller); clipped to ``n_samples``.
    generator : torch.Generator, int, RandomState or None, default=None
        Source of the permutation (a CPU generator; one ``randperm`` per
        call). An int / RandomState / None is turned into a generator by
        :func:`~sklearn_icml.utils._torch.torch_generator`.
    shuffle : bool, default=True
        Permute the rows; otherwise the batches are in row order.
    device : torch.device or str, default=None
        Where the index tensors live (that of the data they index).

    Yields
    ------
    torch.Tensor
        1-D ``int64`` tensor of row indices.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.utils._training import iterate_minibatches
    >>> batches = list(iterate_minibatches(5, 2, torch.Generator().manual_seed(0)))
    >>> [len(b) for b in batches], sorted(torch.cat(batches).tolist())
    ([2, 2, 1], [0, 1, 2, 3, 4])
    """
    import torch

    n_samples, batch_size = int(n_samples), int(batch_size)
    if batch_size < 1:
        raise ValueError(f"iterate_minibatches: batch_size must be >= 1; got {batch_size!r}.")
    if shuffle:
        order = torch.randperm(n_samples, generator=_as_generator(generator))
    else:
        order = torch.arange(n_samples)
    if device is not None:
        order = order.to(device)
    batch_size = min(batch_size, max(n_samples, 1))
    for lo in range(0, n_samples, batch_size):
        yield order[lo:lo + batch_size]


#: CPU seconds after which a silent fit (``verbose=0``) says how far it is, and the interval of further notices.
SLOW_FIT_CPU_SECONDS = 10.0
SLOW_FIT_NOTICE_EVERY = 30.0


class ProgressReporter:
    """Per-epoch progress lines under ``verbose``, one format for every loop.

    A fit without ``verbose`` stays silent for its first
    ``SLOW_FIT_CPU_SECONDS`` (10) seconds of CPU; a longer one prints one line
    then, and one every 30 s of CPU after, with the step reached and the time
    left at that pace (:meth:`tick`, called by :meth:`epoch` too), so that a
    default fit never takes minutes in silence.

    Parameters
    ----------
    name : str
        Printed in brackets at the start of each line (the estimator's name).
    max_iter : int or None
        Planned epochs, shown as ``epoch k/max_iter``.
    verbose : int or bool
        When falsy, only the slow-fit notices (above). With ``verbose=1`` every epoch of fits
        up to 50 epochs and about 20 lines for longer ones are printed; with
        ``verbose >= 2`` every epoch.
    file : file-like, default=None
        Where to print; ``sys.stdout`` by default.

    Examples
    --------
    >>> from sklearn_icml.utils._training import ProgressReporter
    >>> reporter = ProgressReporter("Demo", max_iter=2, verbose=1)
    >>> reporter.epoch(1, 0.5, dur=0.0)
    [Demo] epoch 1/2  loss 0.500000  (0.00 s)
    >>> ProgressReporter("Quiet", max_iter=2, verbose=0).epoch(1, 0.5)
    """

    def __init__(self, name, max_iter=None, verbose=0, *, file=None):
        self.name = name
        self.max_iter = max_iter
        self.verbose = verbose
        self.file = file
        self._start = time.perf_counter()
        self._cpu_start = time.process_time()
        self._next_notice = SLOW_FIT_CPU_SECONDS

    def tick(self, step, stage=None):
        """Under ``verbose=0``, print the progress of a fit that has used 10 s of CPU (then every 30 s).

        Parameters
        ----------
        step : int
            Steps (epochs, iterations) done, out of ``max_iter``.
        stage : str, default=None
            What the fit has just finished, for fits made of unequal stages
            (printed instead of the step and the time left).
        """
        if self.verbose:
            return
        cpu = time.process_time() - self._cpu_start
        if cpu < self._next_notice:
            return
        self._next_notice = cpu + SLOW_FIT_NOTICE_EVERY
        left = ""
        if self.max_iter and 0 < step < self.max_iter:
            left = f", about {cpu * (self.max_iter - step) / step:.0f} s more at this pace"
        done = f"{step}/{self.max_iter}" if self.max_iter else f"{step}"
        where = f"{stage} after {cpu:.0f} s of CPU" if stage else f"step {done} after {cpu:.0f} s of CPU{left}"
        print(f"[{self.name}] still fitting: {where} (verbose=1 prints the losses; a smaller max_iter fits "
              "faster)", file=self.file or sys.stdout, flush=True)

    def _every(self):
        if self.verbose >= 2 or not self.max_iter or self.max_iter <= 50:
            return 1
        return max(1, self.max_iter // 20)

    def message(self, text):
        """Print ``[name] text`` under ``verbose``."""
        if self.verbose:
            print(f"[{self.name}] {text}", file=self.file or sys.stdout, flush=True)

    def epoch(self, epoch, loss, *, validation=None, dur=None, force=False, **extra):
        """Report one epoch (1-based); printed when due under ``verbose``.

        Parameters
        ----------
        epoch : int
            The epoch just finished, counted from 1.
        loss : float
            Its training loss.
        validation : float, default=None
            Its validation loss or score.
        dur : float, default=None
            Its duration in seconds.
        force : bool, default=False
            Print even when the thinning of long fits would skip it.
        **extra : float or str
            More ``key value`` pairs for the line.
        """
        if not self.verbose:
            self.tick(epoch)
            return
        last = self.max_iter is not None and epoch >= self.max_iter
        if not (force or last or epoch == 1 or epoch % self._every() == 0):
            return
        width = len(str(self.max_iter)) if self.max_iter else 1
        parts = [f"epoch {epoch:>{width}d}" + (f"/{self.max_iter}" if self.max_iter else ""),
                 f"loss {loss:.6f}"]
        if validation is not None:
            parts.append(f"validation {validation:.6f}")
        for key, value in extra.items():
            parts.append(f"{key} {value:.6g}" if isinstance(value, float) else f"{key} {value}")
        if dur is not None:
            parts.append(f"({dur:.2f} s)")
        self.message("  ".join(parts))


class EarlyStopping:
    """scikit-learn's MLP stopping rule on a monitored loss (lower is better).

    An epoch counts as "no improvement" when its value is not below the best
    so far minus ``tol``; training should stop once more than
    ``n_iter_no_change`` consecutive epochs made no improvement (the rule of
    :class:`~sklearn.neural_network.MLPClassifier`). The best value and,
    when a module is given, a copy of its state at the best epoch are kept.

    Parameters
    ----------
    n_iter_no_change : int >= 1 or None, default=10
        Epochs without an improvement of at least ``tol`` tolerated;
        ``None`` never asks to stop (the best value is still tracked).
    tol : float >= 0, default=1e-4
        Minimal decrease of the monitored loss counted as an improvement.
    keep_best : bool, default=False
        Keep a copy of the module's ``state_dict`` at the best value
        (restore it with :meth:`restore_best`).

    Examples
    --------
    >>> from sklearn_icml.utils._training import EarlyStopping
    >>> stopper = EarlyStopping(n_iter_no_change=2, tol=0.0)
    >>> [stopper.step(v) for v in [3.0, 2.0, 2.5, 2.5, 2.5]]
    [False, False, False, False, True]
    >>> stopper.best, stopper.best_epoch
    (2.0, 2)
    """

    def __init__(self, n_iter_no_change=10, tol=1e-4, *, keep_best=False):
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.keep_best = keep_best
        self.best = math.inf
        self.best_epoch = 0
        self.best_state = None
        self.no_improvement_count = 0
        self.epoch = 0

    def step(self, value, module=None):
        """Record one epoch's value; return True when training should stop."""
        self.epoch += 1
        value = float(value)
        if value > self.best - self.tol:
            self.no_improvement_count += 1
        else:
            self.no_improvement_count = 0
        if value < self.best:
            self.best = value
            self.best_epoch = self.epoch
            if self.keep_best and module is not None:
                self.best_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        return self.n_iter_no_change is not None and self.no_improvement_count > self.n_iter_no_change

    def restore_best(self, module):
        """Load the kept best state into ``module`` (no-op when none was kept)."""
        if self.best_state is not None:
            module.load_state_dict(self.best_state)
        return module


# -- data plumbing for skorch --------------------------------------------------------------------

def _import_torch_data():
    import torch

    class _TensorData(torch.utils.data.Dataset):
        """Rows of device tensors: ``xs`` a tuple of tensors (module(*xs)), ``y`` a tensor or None."""

        def __init__(self, xs, y, single):
            self.xs, self.y, self.single = xs, y, single

        def __len__(self):
            return int(self.xs[0].shape[0])

        def batch(self, idx):
            xb = tuple(x[idx] for x in self.xs)
            return (xb[0] if self.single else xb), (None if self.y is None else self.y[idx])

        def subset(self, idx):
            return _TensorData(tuple(x[idx] for x in self.xs), None if self.y is None else self.y[idx], self.single)

        def __getitem__(self, i):
            return self.batch(i)

    return _TensorData


class _BatchIterator:
    """skorch ``iterator_train`` / ``iterator_valid``: slices device tensors per mini-batch."""

    def __init__(self, dataset, batch_size, shuffle=False, generator=None):
        self.dataset, self.batch_size, self.shuffle, self.generator = dataset, batch_size, shuffle, generator

    def __len__(self):
        return math.ceil(len(self.dataset) / min(self.batch_size, max(len(self.dataset), 1)))

    def __iter__(self):
        device = self.dataset.xs[0].device
        for idx in iterate_minibatches(len(self.dataset), self.batch_size, self.generator,
                                       shuffle=self.shuffle, device=device):
            yield self.dataset.batch(idx)


class _Stream:
    """A step budget over the rows: successive seeded permutations, cut into batches in order.

    The whole order is drawn when the stream is made (before any step, so that the draws of an
    objective that shares the generator come after it); a batch may span two passes. Each
    epoch of the net takes the next ``steps_per_epoch`` batches of it (fewer at the end).
    With no more rows than ``batch_size``, every step is the full set of rows in order.
    """

    def __init__(self, n_samples, batch_size, n_steps, generator, steps_per_epoch=None):
        import torch

        n_samples, batch_size, n_steps = int(n_samples), int(batch_size), int(n_steps)
        if n_samples <= batch_size:
            self.order, self.batch_size = None, n_samples
        else:
            need = n_steps * batch_size
            passes = [torch.randperm(n_samples, generator=generator) for _ in range(math.ceil(need / n_samples))]
            self.order, self.batch_size = torch.cat(passes)[:need], batch_size
        self.n_samples, self.n_steps = n_samples, n_steps
        self.steps_per_epoch = steps_per_epoch or math.ceil(n_samples / self.batch_size)
        self.step = 0

    @property
    def n_epochs(self):
        return math.ceil(self.n_steps / self.steps_per_epoch)

    def take(self, device):
        """Index tensors of the next epoch's batches."""
        import torch

        count = min(self.steps_per_epoch, self.n_steps - self.step)
        for _ in range(count):
            if self.order is None:
                idx = torch.arange(self.n_samples)
            else:
                idx = self.order[self.step * self.batch_size:(self.step + 1) * self.batch_size]
            self.step += 1
            yield idx.to(device)


class _StreamIterator:
    """skorch ``iterator_train`` of a step budget: the next epoch of a :class:`_Stream`."""

    def __init__(self, dataset, batch_size=None, stream=None):
        self.dataset, self.stream = dataset, stream

    def __len__(self):
        return min(self.stream.steps_per_epoch, self.stream.n_steps - self.stream.step)

    def __iter__(self):
        for idx in self.stream.take(self.dataset.xs[0].device):
            yield self.dataset.batch(idx)


class _LBFGSSolve:
    """Full-batch L-BFGS as one ``train_step``: torch's solver runs all its iterations in one ``step`` call.

    torch's :class:`~torch.optim.LBFGS` iterates inside ``step`` until its own rules stop it (``max_iter``
    iterations, ``max_eval`` evaluations, the gradient's largest entry at most ``tolerance_grad``, a step
    or a change of the objective below ``tolerance_change``); the solve is thus one epoch of the net, and
    its counts (iterations, evaluations) are read from the solver's state once it returns. (One ``step``
    per iteration would record a loss per iteration, at the price of a ``step`` call's fixed overhead per
    iteration, large beside the evaluation of a small network.)
    """

    def __init__(self, max_iter, max_eval):
        self.max_iter, self.max_eval = max_iter, max_eval
        self.n_iter = self.evaluations = 0

    def step(self, net, batch, fit_params):
        first = []

        def closure():
            net.optimizer_.zero_grad()
            loss = net.train_step_single(batch, **fit_params)["loss"]
            if not first:
                first.append(loss)
            return loss

        group = net.optimizer_.param_groups[0]
        group["max_iter"], group["max_eval"] = self.max_iter, self.max_eval
        net.optimizer_.step(closure)
        state = net.optimizer_.state[group["params"][0]]
        self.n_iter, self.evaluations = int(state.get("n_iter", 0)), int(state.get("func_evals", 0))
        return {"loss": first[0], "y_pred": None}


# -- the skorch net ------------------------------------------------------------------------------

def _make_net_class():
    import torch
    from skorch import NeuralNet
    from skorch.callbacks import Callback

    functional = torch.nn.functional

    class _Net(NeuralNet):
        """skorch NeuralNet with the library's hooks (private; never an estimator)."""

        def __init__(self, *args, loss_fn=None, train_step_fn=None, lbfgs=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_fn = loss_fn
            self.train_step_fn = train_step_fn
            self.lbfgs = lbfgs

        def train_step(self, batch, **fit_params):
            if self.lbfgs is None:
                return super().train_step(batch, **fit_params)
            return self.lbfgs.step(self, batch, fit_params)

        def get_default_callbacks(self):
            return []  # replaced by the short list fit_module passes (no per-batch scoring)

        def _switch_mode(self, training):
            # skorch's steps switch the mode of every submodule before every batch; the steps below
            # switch only on a change (the mode the hand loops set once per epoch)
            if self.module_.training != training:
                self.module_.train(training)

        def get_all_learnable_params(self):
            for name, param in self.module_.named_parameters():
                if param.requires_grad:
                    yield name, param

        def infer(self, x, **fit_params):
            if isinstance(x, tuple):
                return self.module_(*x, **fit_params)
            return self.module_(x, **fit_params)

        def get_loss(self, y_pred, y_true, X=None, training=False):
            return self.loss_fn(y_pred, y_true)

        def _batch_loss(self, batch, training, **fit_params):
            Xi, yi = batch
            if self.train_step_fn is not None:
                return self.train_step_fn(self.module_, Xi, yi), None
            y_pred = self.infer(Xi, **fit_params)
            return self.get_loss(y_pred, yi, X=Xi, training=training), y_pred

        def train_step_single(self, batch, **fit_params):
            self._switch_mode(True)
            loss, y_pred = self._batch_loss(batch, True, **fit_params)
            loss.backward()
            return {"loss": loss, "y_pred": y_pred}

        def validation_step(self, batch, **fit_params):
            self._switch_mode(False)
            with torch.no_grad():
                loss, y_pred = self._batch_loss(batch, False, **fit_params)
            return {"loss": loss, "y_pred": y_pred}

        def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
            # skorch's version calls loss.item() per batch (a device sync) and records per-batch
            # history; the epoch mean is all the library uses, so it is accumulated on the device.
            if iterator is None:
                return
            total, count, batches = None, 0, 0
            for batch in iterator:
                self.notify("on_batch_begin", batch=batch, training=training)
                step = step_fn(batch, **fit_params)
                size = len(batch[0][0] if isinstance(batch[0], tuple) else batch[0])
                weighted = step["loss"].detach().to(torch.float64) * size
                total = weighted if total is None else total + weighted
                count += size
                batches += 1
                self.notify("on_batch_end", batch=batch, training=training, **step)
            self.history.record(prefix + "_batch_count", batches)
            self.history.record(prefix + "_loss", float(total.item()) / count if count else math.nan)

    class _Monitor(Callback):
        """Stopping rule, non-finite check and LR schedule, once per epoch."""

        def __init__(self, stopper, early_stopping, scheduler_factory, name, learning_rate, per_batch=False,
                     reporter=None, progress=None):
            self.reporter = reporter
            self.progress = progress or (lambda net: len(net.history))  # epochs, or steps of a stream
            self.stopper = stopper
            self.early_stopping = early_stopping
            self.scheduler_factory = scheduler_factory
            self.name = name
            self.learning_rate = learning_rate
            self.per_batch = per_batch

        def on_batch_end(self, net, training=False, **kwargs):
            if training and self.per_batch and self.scheduler_ is not None:
                self.scheduler_.step()

        def on_train_begin(self, net, **kwargs):
            self.scheduler_ = None if self.scheduler_factory is None else self.scheduler_factory(net.optimizer_)
            self.stopped_ = False

        def on_epoch_end(self, net, **kwargs):
            row = net.history[-1]
            loss = row["train_loss"]
            if not np.isfinite(loss):
                raise ValueError(f"{self.name}: the training loss became {loss} at epoch {row['epoch']}; "
                                 f"lower learning_rate (now {self.learning_rate!r}) or check the data.")
            monitored = row["valid_loss"] if self.early_stopping else loss
            if self.early_stopping and not np.isfinite(monitored):
                raise ValueError(f"{self.name}: the validation loss became {monitored} at epoch "
                                 f"{row['epoch']}; lower learning_rate (now {self.learning_rate!r}).")
            if self.scheduler_ is not None and not self.per_batch:
                if isinstance(self.scheduler_, torch.optim.lr_scheduler.ReduceLROnPlateau):
                    self.scheduler_.step(monitored)
                else:
                    self.scheduler_.step()
            if self.reporter is not None:
                self.reporter.tick(self.progress(net))
            if self.stopper.step(monitored, net.module_ if self.early_stopping else None):
                self.stopped_ = True
                raise KeyboardInterrupt  # skorch's documented way for a callback to end fit

    return _Net, _Monitor, functional


def _loss_function(loss, functional, name):
    if callable(loss):
        return loss
    if loss == "mse":
        return functional.mse_loss
    if loss == "cross_entropy":
        return functional.cross_entropy
    if loss == "bce_with_logits":
        return functional.binary_cross_entropy_with_logits
    raise ValueError(f"{name}: loss must be one of {_LOSSES} or a callable(output, y_batch); got {loss!r}.")


def _optimizer_class(optimizer, name):
    import torch

    if isinstance(optimizer, str):
        if optimizer.lower() not in _OPTIMIZERS:
            raise ValueError(f"{name}: optimizer must be one of {sorted(_OPTIMIZERS)} or a torch optimizer class; "
                             f"got {optimizer!r}.")
        return getattr(torch.optim, _OPTIMIZERS[optimizer.lower()])
    if isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer):
        return optimizer
    raise TypeError(f"{name}: optimizer must be a string or a torch.optim.Optimizer subclass; got {optimizer!r}.")


def _scheduler_factory(lr_schedule, n_steps, name):
    import torch

    if lr_schedule is None:
        return None
    if lr_schedule == "cosine":
        return lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=n_steps)
    if callable(lr_schedule):
        return lr_schedule
    raise ValueError(f"{name}: lr_schedule must be None, 'cosine' or a callable(optimizer) -> scheduler; "
                     f"got {lr_schedule!r}.")


def _float_dtype(module):
    import torch

    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype
    for b in module.buffers():
        if b.is_floating_point():
            return b.dtype
    return torch.get_default_dtype()


def _tensor(a, device, float_dtype, target_dtype=None):
    """Array/tensor -> tensor on ``device``; floats in ``float_dtype`` (or ``target_dtype``)."""
    import torch

    if is_torch_tensor(a):
        t = a.detach()
    else:
        arr = np.asarray(a)
        if not arr.flags.writeable or not arr.flags.c_contiguous:
            arr = np.array(arr, order="C", copy=True)
        t = torch.from_numpy(arr)
    if target_dtype is not None:
        t = t.to(dtype=target_dtype)
    elif t.is_floating_point():
        t = t.to(dtype=float_dtype)
    return t.to(device)


def _check_params(name, max_iter, batch_size, learning_rate, validation_fraction, n_iter_no_change, tol, grad_clip):
    def positive_int(v, label):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: {label} must be an int >= 1; got {v!r}.")

    positive_int(max_iter, "max_iter")
    positive_int(batch_size, "batch_size")
    if n_iter_no_change is not None:
        positive_int(n_iter_no_change, "n_iter_no_change")
    if not (isinstance(learning_rate, (int, float)) and np.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"{name}: learning_rate must be a finite float > 0; got {learning_rate!r}.")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"{name}: tol must be a finite float >= 0; got {tol!r}.")
    if not (isinstance(validation_fraction, (int, float)) and 0 < validation_fraction < 1):
        raise ValueError(f"{name}: validation_fraction must be in (0, 1); got {validation_fraction!r}.")
    if grad_clip is not None and not (isinstance(grad_clip, (int, float)) and grad_clip > 0):
        raise ValueError(f"{name}: grad_clip must be None or a float > 0; got {grad_clip!r}.")


@contextlib.contextmanager
def _seeded_global_draws(generator, device):
    """Seed torch's global generator from ``generator`` for the block, then restore it.

    Modules draw some randomness from the global generator (``nn.Dropout``); a seeded fit must repeat those
    draws too. The seed is derived from the generator's initial seed without drawing from it, so the batch
    order is the same with or without this scope. ``None`` leaves the global generator alone.
    """
    import torch

    if generator is None:
        yield
        return
    devices = [device] if torch.device(device).type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        seed = (generator.initial_seed() + 0x9E3779B97F4A7C15) % 2**63
        torch.manual_seed(seed)
        yield


def fit_module(module, X, y=None, *, loss="mse", train_step=None, max_iter=200, batch_size=32,
               learning_rate=1e-3, optimizer="adamw", weight_decay=0.0, early_stopping=False,
               validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, lr_schedule=None, grad_clip=None,
               device="cpu", random_state=None, verbose=0, name="Estimator", optimizer_options=None,
               lr_schedule_interval="epoch", shuffle=True, budget="epochs"):
    """Train ``module`` on ``(X, y)`` with mini-batch gradient steps; the library's one training loop.

    Parameters
    ----------
    module : torch.nn.Module
        Built (on the CPU, seeded) by the estimator. Trained in place on
        ``device``; only parameters with ``requires_grad`` are optimised.
    X : ndarray, tensor, or tuple of them
        Inputs, first axis = samples. A tuple is unpacked into
        ``module(*X_batch)``. Float arrays are cast to the module's float dtype.
    y : ndarray, tensor or None, default=None
        Targets (``int64`` for ``"cross_entropy"``, floats otherwise). ``None``
        for objectives that need none (then give ``train_step``).
    loss : {"mse", "cross_entropy", "bce_with_logits"} or callable, default="mse"
        The batch loss; a callable takes ``(output, y_batch)`` and returns a
        scalar tensor (a mean over the batch).
    train_step : callable, default=None
        ``train_step(module, X_batch, y_batch) -> scalar loss tensor`` for
        objectives that are not ``loss(module(X_batch), y_batch)``. ``X_batch``
        is a tensor (or a tuple of tensors) on ``device``; ``y_batch`` a tensor
        or None. Also used, under ``torch.no_grad``, for the validation loss.
    max_iter : int, default=200
        Maximum number of epochs (optimiser steps with ``budget="steps"``).
    batch_size : int, default=32
        Rows per mini-batch (clipped to the number of rows).
    learning_rate : float, default=1e-3
        Step size of the optimiser.
    optimizer : {"adamw", "adam", "sgd", "rmsprop", "lbfgs"} or torch optimizer class, default="adamw"
        The optimiser. ``"lbfgs"`` is full-batch L-BFGS with a strong Wolfe
        line search (torch's :class:`~torch.optim.LBFGS`): one batch of all
        rows in their order, ``max_iter`` counts L-BFGS iterations (the solve
        is one epoch of the net; ``loss_curve`` holds the loss at its start),
        ``tol`` is the gradient tolerance (stop when the gradient's
        largest entry is at most ``tol``), and the fit also stops on
        ``optimizer_options``' ``max_eval`` objective evaluations (default
        ``max_iter * 5 // 4``) and ``tolerance_change`` (default 1e-9), the
        rules of torch's solver; ``history_size`` defaults to 100.
        ``n_iter_no_change``, ``batch_size``, ``shuffle`` and
        ``lr_schedule`` do not apply, nor ``early_stopping`` or
        ``weight_decay`` (a ``ValueError``); ``learning_rate`` is the
        initial step length (1.0 is torch's default).
    weight_decay : float, default=0.0
        The optimiser's ``weight_decay``.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows and stop on the
        validation loss (the best module is returned); otherwise stop on the
        training loss (the last module is returned).
    validation_fraction : float in (0, 1), default=0.1
        Share of rows held out when ``early_stopping`` (at least one).
    n_iter_no_change : int or None, default=10
        Epochs without an improvement of at least ``tol`` tolerated before
        stopping (scikit-learn's MLP rule). ``None`` always runs ``max_iter``
        epochs (with ``early_stopping``, the module of the best validation
        loss is still the one returned).
    tol : float, default=1e-4
        Minimal decrease of the monitored loss that counts as an improvement.
    lr_schedule : None, "cosine" or callable, default=None
        ``"cosine"``: cosine annealing over the ``max_iter`` epochs; a callable
        ``lr_schedule(optimizer)`` returns a torch LR scheduler, stepped once
        per epoch (``ReduceLROnPlateau`` receives the monitored loss) or per
        mini-batch (``lr_schedule_interval="batch"``).
    grad_clip : float or None, default=None
        Clip the gradients' global norm to this value before each step.
    device : torch.device or str, default="cpu"
        Where to train; already resolved by the estimator (``resolve_device``).
    random_state : int, RandomState, torch.Generator or None, default=None
        Seeds the one CPU generator that draws the validation split and the
        batch order of every epoch.
    verbose : int, default=0
        Per-epoch log (skorch's ``PrintLog`` table) when positive.
    name : str, default="Estimator"
        The estimator's name, used in messages.
    optimizer_options : dict, default=None
        More keyword arguments of the optimiser (``momentum``, ``betas``,
        ``"lbfgs"``'s ``tolerance_change`` / ``history_size`` / ``max_eval``,
        ...). An optimiser class that re-evaluates the objective gets
        skorch's closure; its epoch loss is the one at the start of the step.
    lr_schedule_interval : {"epoch", "batch"}, default="epoch"
        Step the LR scheduler after every epoch or after every mini-batch
        (warm-up schedules counted in optimiser steps).
    shuffle : bool, default=True
        Draw a new batch order every epoch; ``False`` keeps the rows' order
        (full-batch solvers on pre-sorted data). The validation split is
        drawn either way.
    budget : {"epochs", "steps"}, default="epochs"
        ``"steps"``: a step-budgeted stream. ``max_iter`` counts optimiser
        steps; the (training) rows are visited as successive seeded
        permutations cut into batches in order, a batch possibly spanning two
        passes (every step sees all rows, in order, when they fit in one
        batch), and the order is drawn before the first step. An epoch of the
        history, of the stopping rule and of the validation pass is one pass
        over the rows (``ceil(n_rows / batch_size)`` steps; the last one
        shorter). ``n_iter`` then counts steps.

    Returns
    -------
    TrainingResult
        The trained module (CPU, eval mode) and the training history.

    Raises
    ------
    ValueError
        For invalid options, fewer than two rows when ``early_stopping``, or
        a non-finite training/validation loss (with a hint to lower
        ``learning_rate``).

    Notes
    -----
    The work runs inside :func:`~sklearn_icml.utils._torch.torch_threads`.
    Module parameters are updated in place; the returned module is the same
    object, moved to the CPU.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_icml.utils._training import fit_module
    >>> X = np.linspace(-1, 1, 64).reshape(-1, 1)
    >>> y = 3 * X
    >>> net = torch.nn.Linear(1, 1)
    >>> res = fit_module(net, X, y, max_iter=300, batch_size=16, learning_rate=0.05, random_state=0)
    >>> round(float(net.weight.detach()), 1), res.n_iter <= 300, res.loss_curve[-1] < 1e-3
    (3.0, True, True)
    """
    import torch

    _check_params(name, max_iter, batch_size, learning_rate, validation_fraction, n_iter_no_change, tol, grad_clip)
    if train_step is not None and not callable(train_step):
        raise TypeError(f"{name}: train_step must be a callable(module, X_batch, y_batch); got {train_step!r}.")
    if train_step is None and y is None:
        raise ValueError(f"{name}: y is None: pass targets, or a train_step that needs none.")
    _Net, _Monitor, functional = _make_net_class()
    loss_fn = _loss_function(loss, functional, name)
    optimizer_cls = _optimizer_class(optimizer, name)
    if budget not in ("epochs", "steps"):
        raise ValueError(f"{name}: budget must be 'epochs' or 'steps'; got {budget!r}.")
    if lr_schedule_interval not in ("epoch", "batch"):
        raise ValueError(f"{name}: lr_schedule_interval must be 'epoch' or 'batch'; got {lr_schedule_interval!r}.")
    options = {} if optimizer_options is None else dict(optimizer_options)
    lbfgs = None
    if isinstance(optimizer, str) and optimizer.lower() == "lbfgs":
        for flag, label in ((early_stopping, "early_stopping"), (weight_decay, "weight_decay"),
                            (lr_schedule is not None, "lr_schedule"), (budget != "epochs", "budget='steps'")):
            if flag:
                raise ValueError(f"{name}: {label} does not apply to optimizer='lbfgs' (full-batch L-BFGS stops "
                                 "on its gradient tolerance tol).")
        lbfgs = _LBFGSSolve(max_iter, options.pop("max_eval", max_iter * 5 // 4))
        options.setdefault("tolerance_change", 1e-9)
        options.update(tolerance_grad=tol, line_search_fn="strong_wolfe", max_iter=max_iter)
        options.setdefault("history_size", 100)
        n_iter_no_change, shuffle = None, False
    elif isinstance(optimizer, str) or weight_decay:
        options.setdefault("weight_decay", weight_decay)
    device = torch.device(device)
    generator = _as_generator(random_state)

    with torch_threads():
        module.to(device)
        float_dtype = _float_dtype(module)
        if learning_rate > torch.finfo(float_dtype).max:
            raise ValueError(f"{name}: learning_rate={learning_rate!r} overflows the module's {float_dtype} "
                             "parameters; give a finite step size in their range.")
        single = not isinstance(X, (tuple, list))
        xs = tuple(_tensor(a, device, float_dtype) for a in ((X,) if single else X))
        target_dtype = torch.long if (isinstance(loss, str) and loss == "cross_entropy") else None
        yt = None if y is None else _tensor(y, device, float_dtype, target_dtype)
        n = int(xs[0].shape[0])
        if any(int(x.shape[0]) != n for x in xs) or (yt is not None and int(yt.shape[0]) != n):
            raise ValueError(f"{name}: X and y have inconsistent numbers of rows.")
        if n < 1:
            raise ValueError(f"{name}: no rows to train on.")
        if lbfgs is not None:
            batch_size, max_iter = n, 1  # the solve is one epoch: one train_step over the full batch

        data = _import_torch_data()(xs, yt, single)
        train_split, valid, n_train = None, None, n
        if early_stopping:
            n_valid = int(math.ceil(validation_fraction * n))
            if n - n_valid < 1:
                raise ValueError(f"{name}: early_stopping needs at least 2 rows (validation_fraction="
                                 f"{validation_fraction!r} of {n} leaves none to train on).")
            perm = torch.randperm(n, generator=generator).to(device)
            train_data, valid = data.subset(perm[n_valid:]), data.subset(perm[:n_valid])
            train_split = lambda dataset, y=None, **kw: (train_data, valid)  # noqa: E731
            n_train = n - n_valid
        if budget == "steps":
            stream = _Stream(n_train, batch_size, max_iter, generator)
            max_epochs = stream.n_epochs
            steps = max_iter if lr_schedule_interval == "batch" else max_epochs
            iterator = dict(iterator_train=_StreamIterator, iterator_train__stream=stream)
        else:
            max_epochs = max_iter
            steps = max_iter * (math.ceil(n / min(batch_size, n)) if lr_schedule_interval == "batch" else 1)
            iterator = dict(iterator_train=_BatchIterator, iterator_train__shuffle=bool(shuffle),
                            iterator_train__generator=generator)
        scheduler_factory = _scheduler_factory(lr_schedule, steps, name)
        stopper = EarlyStopping(n_iter_no_change, tol, keep_best=early_stopping)
        monitor = _Monitor(stopper, early_stopping, scheduler_factory, name, learning_rate,
                           per_batch=lr_schedule_interval == "batch",
                           reporter=ProgressReporter(name, max_iter, verbose=0) if not verbose else None,
                           progress=(lambda net: stream.step) if budget == "steps" else None)
        from skorch.callbacks import EpochTimer, GradientNormClipping, PrintLog

        callbacks = [("epoch_timer", EpochTimer())]
        if grad_clip is not None:
            callbacks.append(("grad_clip", GradientNormClipping(gradient_clip_value=grad_clip)))
        if verbose:
            callbacks.append(("print_log", PrintLog(sink=lambda s: print(f"[{name}] " + s.replace(
                "\n", f"\n[{name}] "), flush=True), keys_ignored=("train_batch_count", "valid_batch_count"))))
        callbacks.append(("monitor", monitor))
        net = _Net(
            module, criterion=torch.nn.Identity, optimizer=optimizer_cls, lr=learning_rate,
            **{f"optimizer__{k}": v for k, v in options.items()}, max_epochs=max_epochs, batch_size=batch_size,
            **iterator, iterator_valid=_BatchIterator, train_split=train_split, callbacks=callbacks,
            device=None, verbose=0, loss_fn=loss_fn, train_step_fn=train_step, lbfgs=lbfgs,
        )
        if not any(p.requires_grad for p in module.parameters()):
            raise ValueError(f"{name}: nothing to train: every parameter of the module is frozen.")
        net.initialize()
        if verbose:
            print(f"[{name}] training {sum(p.numel() for _, p in net.get_all_learnable_params())} parameters "
                  f"on {n_train} rows ({device}), up to {lbfgs.max_iter if lbfgs else max_iter} "
                  f"{'L-BFGS iterations' if lbfgs else budget}",
                  flush=True)
        with _seeded_global_draws(generator if random_state is not None else None, device):
            net.partial_fit(data, None)
        if early_stopping:
            stopper.restore_best(module)
        history = net.history
        loss_curve = [float(row["train_loss"]) for row in history]
        valid_curve = [float(row["valid_loss"]) for row in history] if early_stopping else None
        module.eval()
        module.to("cpu")
    return TrainingResult(
        module=module, loss_curve=loss_curve, validation_scores=valid_curve,
        n_iter=stream.step if budget == "steps" else lbfgs.n_iter if lbfgs is not None else len(loss_curve),
        best_loss=None if early_stopping else min(loss_curve),
        best_validation_score=min(valid_curve) if early_stopping else None,
        epoch_times=[float(row["dur"]) for row in history], optimizer=net.optimizer_,
        n_evaluations=None if lbfgs is None else lbfgs.evaluations,
    )
