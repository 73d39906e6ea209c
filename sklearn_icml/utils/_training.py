"""The one place where the library trains a torch module: :class:`Trainer`, built on skorch.

Every torch estimator builds its module (on the CPU, seeded from its
``random_state``), configures a :class:`Trainer` with its loop and options, and
gets a :class:`TrainingResult` back from ``Trainer.fit(module, X, y)``: the
trained module on the CPU in eval mode, the per-epoch training loss
(``loss_curve_``), the validation losses (``validation_scores_``) and the number
of epochs, steps or iterations run (``n_iter_``). The loops: mini-batch epochs
(``loop="epochs"``), step-budgeted streams (``loop="steps"``) and full-batch
L-BFGS (``loop="lbfgs"``); a multi-task objective is a ``train_step`` returning
named terms. The vocabulary and the stopping rules are those of scikit-learn's
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
checks, ours must), through the methods skorch documents for customisation
only (see :class:`Trainer`'s notes). :func:`fit_module` is the keyword form,
``Trainer(**options).fit(module, X, y)``.

Loops that cannot be written as "one optimiser step per mini-batch of one
loss" (adversarial alternation, rollouts with curricula, meta-episodes) use
:func:`iterate_minibatches`, :class:`ProgressReporter` and
:class:`EarlyStopping` so that they speak the same vocabulary.
"""

import contextlib
import functools
import math
import sys
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from ._sklearn_private import Interval
from ._torch import is_torch_tensor, torch_generator, torch_threads

__all__ = ["TRAINING_PARAMETER_CONSTRAINTS", "EarlyStopping", "ProgressReporter", "Trainer", "TrainingResult",
           "fit_module", "iterate_minibatches"]

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
    """What :meth:`Trainer.fit` returns (its fields are its parameters, in this order).

    Parameters
    ----------
    module : torch.nn.Module
        The trained module, on the CPU and in eval mode (the one of the best
        validation loss when ``early_stopping=True``).
    loss_curve : list of float
        Mean training loss of each epoch (over samples) -> ``loss_curve_``;
        with ``loop="lbfgs"``, the objective at the start and after each
        iteration (``n_iter + 1`` values).
    validation_scores : list of float or None
        Validation loss of each epoch when ``early_stopping=True``, else
        ``None`` -> ``validation_scores_``. Lower is better.
    n_iter : int
        Epochs run (optimiser steps with ``loop="steps"``, L-BFGS
        iterations with ``loop="lbfgs"``) -> ``n_iter_``.
    best_loss : float or None
        Smallest training loss (``early_stopping=False``) -> ``best_loss_``.
    best_validation_score : float or None
        Smallest validation loss (``early_stopping=True``).
    epoch_times : list of float
        Wall-clock seconds of each epoch (training and validation pass).
    optimizer : torch.optim.Optimizer or None
        The optimiser used; its state may live on the training device.
    n_evaluations : int or None
        With ``loop="lbfgs"``: evaluations of the objective (and its
        gradient), line searches included; None otherwise.
    loss_terms : dict of str to list of float, or None
        When ``train_step`` returns named terms (a multi-task objective): the
        mean of each term over the samples of each epoch; None otherwise.
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
    loss_terms: dict = None


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

@functools.cache
def _import_torch_data():
    """The trainer's torch ``Dataset`` class, made once (torch is imported lazily)."""
    import torch

    class _TensorData(torch.utils.data.Dataset):
        """Rows of device tensors: ``xs`` a tuple of tensors (module(*xs)), ``y`` a tensor or None."""

        def __init__(self, xs, y, single):
            self.xs, self.y, self.single = xs, y, single

        def __len__(self):
            return int(self.xs[0].shape[0])

        def batch(self, idx):
            xb = self.xs[0][idx] if self.single else tuple(x[idx] for x in self.xs)
            return xb, (None if self.y is None else self.y[idx])

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
        """Index tensors of the next epoch's batches (views of the order, moved to ``device`` once)."""
        import torch

        if self.order is None:
            self.order = torch.arange(self.n_samples)  # every step: all rows, in order
        if self.order.device != torch.device(device):
            self.order = self.order.to(device)
        full = self.n_samples <= self.batch_size
        count = min(self.steps_per_epoch, self.n_steps - self.step)
        for _ in range(count):
            lo = 0 if full else self.step * self.batch_size
            self.step += 1
            yield self.order[lo:lo + self.batch_size]


class _StreamIterator:
    """skorch ``iterator_train`` of a step budget: the next epoch of a :class:`_Stream`."""

    def __init__(self, dataset, batch_size=None, stream=None):
        self.dataset, self.stream = dataset, stream

    def __len__(self):
        return min(self.stream.steps_per_epoch, self.stream.n_steps - self.stream.step)

    def __iter__(self):
        for idx in self.stream.take(self.dataset.xs[0].device):
            yield self.dataset.batch(idx)


# -- the skorch net ------------------------------------------------------------------------------

@functools.cache
def _net_classes():
    """The skorch classes of the trainer, made once (skorch and torch are imported lazily)."""
    import torch
    from skorch import NeuralNet
    from skorch.callbacks import Callback
    from skorch.history import History
    from skorch.utils import FirstStepAccumulator, TeeGenerator

    class _History(History):
        """skorch's ``History``, its per-batch records written straight into the current epoch's row.

        The same rows as skorch's (``History.__getitem__`` resolves any index, which is more than
        the two records ``run_single_epoch`` writes after every batch need).
        """

        def new_batch(self):
            list.__getitem__(self, -1)["batches"].append({})

        def record_batch(self, attr, value):
            list.__getitem__(self, -1)["batches"][-1][attr] = value

    def objective(net, batch, training, fit_params):
        """The batch objective: ``train_step(module, X, y)``, or ``get_loss(infer(X), y)``."""
        Xi, yi = batch
        if net.train_step_fn is None:
            y_pred = net.infer(Xi, **fit_params)
            return {"loss": net.get_loss(y_pred, yi, X=Xi, training=training), "y_pred": y_pred}
        out = net.train_step_fn(net.module_, Xi, yi)
        if isinstance(out, dict):  # a multi-task objective: the sum of its named terms
            terms = iter(out.values())
            loss = next(terms)
            for term in terms:
                loss = loss + term
            return {"loss": loss, "y_pred": None, "terms": {k: v.detach() for k, v in out.items()}}
        return {"loss": out, "y_pred": None}

    def notify_grad(net, batch):
        net.notify("on_grad_computed", named_parameters=TeeGenerator(net.get_all_learnable_params()),
                   batch=batch, training=True)

    class _TrainerNet(NeuralNet):
        """skorch ``NeuralNet`` with the trainer's hooks (private; never an estimator).

        It overrides only the methods skorch documents for customisation: ``train_step`` (one
        optimiser step per batch, with the trainer's gradient clipping, and skorch's closure for
        optimisers that re-evaluate the objective), ``train_step_single`` / ``validation_step``
        (the batch objective), ``get_loss``, ``infer``, ``get_all_learnable_params``,
        ``get_train_step_accumulator`` (the L-BFGS loop's per-iteration losses) and
        ``get_default_callbacks``. ``fit_loop`` and ``run_single_epoch`` are skorch's own.
        """

        def __init__(self, *args, loss_fn=None, train_step_fn=None, grad_clip=None, closure_step=True,
                     iteration_log=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_fn = loss_fn
            self.train_step_fn = train_step_fn
            self.grad_clip = grad_clip
            self.closure_step = closure_step
            self.iteration_log = iteration_log
            self.grad_callbacks = False
            self.clip_params = None

        def get_default_callbacks(self):
            return []  # replaced by the trainer's short list (no per-batch scoring)

        def initialize_callbacks(self):
            super().initialize_callbacks()
            # on_grad_computed is sent only when a callback listens to it (the trainer clips gradients itself)
            self.grad_callbacks = any(type(cb).on_grad_computed is not Callback.on_grad_computed
                                      for _, cb in self.callbacks_)
            return self

        def initialize_optimizer(self, *args, **kwargs):
            super().initialize_optimizer(*args, **kwargs)
            self.clip_params = [p for _, p in self.get_all_learnable_params()]
            return self

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

        def get_train_step_accumulator(self):
            if self.iteration_log is None:
                return FirstStepAccumulator()
            return _IterationAccumulator(self.optimizer_, self.iteration_log)

        def train_step_single(self, batch, **fit_params):
            if not self.module_.training:  # switch on a change only (skorch switches before every batch)
                self.module_.train(True)
            step = objective(self, batch, True, fit_params)
            step["loss"].backward()
            return step

        def validation_step(self, batch, **fit_params):
            if self.module_.training:
                self.module_.train(False)
            with torch.no_grad():
                return objective(self, batch, False, fit_params)

        def train_step(self, batch, **fit_params):
            optimizer = self.optimizer_
            if self.closure_step:  # skorch's step: the optimiser may evaluate the objective several times
                accumulator = self.get_train_step_accumulator()

                def closure():
                    optimizer.zero_grad()
                    step = self.train_step_single(batch, **fit_params)
                    accumulator.store_step(step)
                    if self.grad_clip is not None:
                        torch.nn.utils.clip_grad_norm_(self.clip_params, max_norm=self.grad_clip)
                    if self.grad_callbacks:
                        notify_grad(self, batch)
                    return step["loss"]

                optimizer.step(closure)
                return accumulator.get_step()
            optimizer.zero_grad()
            step = self.train_step_single(batch, **fit_params)
            if self.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(self.clip_params, max_norm=self.grad_clip)
            if self.grad_callbacks:
                notify_grad(self, batch)
            optimizer.step()
            return step

    class _IterationAccumulator(FirstStepAccumulator):
        """skorch's train-step accumulator for L-BFGS, also keeping the last evaluation of each iteration.

        torch's solver counts its iterations in the state of its first parameter (``n_iter``, 0
        before the first one); the objective evaluated last within an iteration is the point its
        line search accepts (the strong Wolfe search returns its last trial unless it stops on its
        own limits).
        """

        def __init__(self, optimizer, log):
            super().__init__()
            self.state = optimizer.state[optimizer.param_groups[0]["params"][0]]
            self.log = log

        def store_step(self, step):
            super().store_step(step)
            self.log[int(self.state.get("n_iter", 0))] = step["loss"].detach()

    class _EpochLoss(Callback):
        """The epoch's mean loss over samples (``train_loss``, ``valid_loss``) from skorch's batch records."""

        def __init__(self):
            self.terms = None

        def on_epoch_begin(self, net, **kwargs):
            self.terms = {}

        def on_batch_end(self, net, batch=None, training=False, terms=None, **kwargs):
            if terms is not None:
                size = len(batch[0][0] if isinstance(batch[0], tuple) else batch[0])
                sums = self.terms.setdefault("train" if training else "valid", {})
                for key, value in terms.items():
                    weighted = value.to(torch.float64) * size
                    sums[key] = (weighted, size) if key not in sums else (sums[key][0] + weighted,
                                                                         sums[key][1] + size)

        def on_epoch_end(self, net, **kwargs):
            row = net.history[-1]
            for prefix in ("train", "valid"):
                if prefix + "_batch_count" not in row:
                    continue
                total, count = 0.0, 0
                for batch in row["batches"]:
                    if prefix + "_loss" in batch:
                        size = batch[prefix + "_batch_size"]
                        total += batch[prefix + "_loss"] * size
                        count += size
                net.history.record(prefix + "_loss", total / count if count else math.nan)
                for key, (value, size) in self.terms.get(prefix, {}).items():
                    net.history.record(f"{prefix}_{key}", float(value.item()) / size)

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

    return _TrainerNet, _History, _EpochLoss, _Monitor


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
        torch.default_generator.manual_seed(seed)  # what torch.manual_seed does for the CPU and CUDA, without
        if devices:  # its calls for other backends (a stack trace recorded per call)
            torch.cuda.manual_seed_all(seed)
        yield



_LOOPS = ("epochs", "steps", "lbfgs")


class Trainer:
    """Train a torch module with one of the library's loops, on skorch's public API.

    Configured once with the loop and its options, :meth:`fit` trains a module
    in place on ``(X, y)`` and returns a :class:`TrainingResult`. The
    vocabulary and the stopping rules are those of scikit-learn's
    :class:`~sklearn.neural_network.MLPClassifier` (``max_iter``,
    ``batch_size``, ``learning_rate``, ``early_stopping``,
    ``validation_fraction``, ``n_iter_no_change``, ``tol``); every torch
    estimator of the library trains through it, and code beside the
    estimators can too.

    Parameters
    ----------
    loop : {"epochs", "steps", "lbfgs"}, default="epochs"
        The training loop.

        * ``"epochs"``: mini-batch epochs; ``max_iter`` counts epochs and a
          new seeded batch order is drawn every epoch (``shuffle=True``).
        * ``"steps"``: a step-budgeted stream; ``max_iter`` counts optimiser
          steps. The (training) rows are visited as successive seeded
          permutations cut into batches in order, a batch possibly spanning
          two passes (every step sees all rows, in order, when they fit in
          one batch); the whole order is drawn before the first step. An
          epoch of the history, of the stopping rule and of the validation
          pass is one pass over the rows (``ceil(n_rows / batch_size)``
          steps, the last one shorter). ``n_iter`` counts steps.
        * ``"lbfgs"``: full-batch L-BFGS with a strong Wolfe line search
          (torch's :class:`~torch.optim.LBFGS`) over all rows in their order.
          ``max_iter`` counts L-BFGS iterations, ``tol`` is the gradient
          tolerance (stop when the gradient's largest entry is at most
          ``tol``), and the solve also stops after ``optimizer_options``'
          ``max_eval`` evaluations of the objective (default
          ``max_iter * 5 // 4``) or on ``tolerance_change`` (default 1e-9),
          the rules of torch's solver; ``history_size`` defaults to 100.
          ``learning_rate`` is the initial step length (1.0 is torch's
          default). ``loss_curve`` holds the objective at the start, then
          after each iteration (the last evaluation of the iteration's line
          search, the point it accepts unless it stops on its own limits).
          ``n_iter_no_change``, ``batch_size``, ``shuffle``, ``lr_schedule``
          and ``grad_clip`` do not apply, nor ``early_stopping`` or
          ``weight_decay`` (a ``ValueError``).
    loss : {"mse", "cross_entropy", "bce_with_logits"} or callable, default="mse"
        The batch loss, skorch's ``get_loss``: a callable takes
        ``(output, y_batch)`` and returns a scalar tensor (a mean over the
        batch).
    train_step : callable, default=None
        ``train_step(module, X_batch, y_batch)`` for objectives that are not
        ``loss(module(X_batch), y_batch)``. ``X_batch`` is a tensor (or a
        tuple of tensors) on ``device``; ``y_batch`` a tensor or None. It
        returns a scalar loss tensor, or, for a multi-task objective, a dict
        of named scalar terms: their sum is minimised and each term's epoch
        mean is kept in :attr:`TrainingResult.loss_terms`. Also used, under
        ``torch.no_grad``, for the validation loss.
    optimizer : {"adamw", "adam", "sgd", "rmsprop"} or torch optimizer class, default=None
        The optimiser of the ``"epochs"`` and ``"steps"`` loops (``None``:
        ``"adamw"``). A class that re-evaluates the objective gets skorch's
        closure; its epoch loss is the one at the start of the step. With
        ``loop="lbfgs"`` it must be None (or ``"lbfgs"``).
    max_iter : int, default=200
        Maximum number of epochs (steps with ``loop="steps"``, iterations
        with ``loop="lbfgs"``).
    batch_size : int, default=32
        Rows per mini-batch (clipped to the number of rows).
    learning_rate : float, default=1e-3
        Step size of the optimiser.
    weight_decay : float, default=0.0
        The optimiser's ``weight_decay``.
    optimizer_options : dict, default=None
        More keyword arguments of the optimiser (``momentum``, ``betas``,
        ``fused``, L-BFGS's ``tolerance_change`` / ``history_size`` /
        ``max_eval``, ...).
    lr_schedule : None, "cosine" or callable, default=None
        ``"cosine"``: cosine annealing over the run; a callable
        ``lr_schedule(optimizer)`` returns a torch LR scheduler, stepped once
        per epoch (``ReduceLROnPlateau`` receives the monitored loss) or per
        mini-batch (``lr_schedule_interval="batch"``).
    lr_schedule_interval : {"epoch", "batch"}, default="epoch"
        Step the LR scheduler after every epoch or after every mini-batch
        (warm-up schedules counted in optimiser steps).
    grad_clip : float or None, default=None
        Clip the gradients' global norm to this value before each step.
    shuffle : bool, default=True
        Draw a new batch order every epoch; ``False`` keeps the rows' order.
        The validation split is drawn either way.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows (drawn from the seeded
        generator) and stop when the validation loss has not decreased by
        at least ``tol`` for more than ``n_iter_no_change`` consecutive
        epochs; the module of the best validation loss is returned.
        Otherwise the same rule runs on the training loss and the last
        module is returned.
    validation_fraction : float in (0, 1), default=0.1
        Share of rows held out when ``early_stopping`` (at least one).
    n_iter_no_change : int or None, default=10
        Epochs without an improvement of at least ``tol`` tolerated before
        stopping. ``None`` always runs ``max_iter`` (with
        ``early_stopping``, the best module is still the one returned).
    tol : float, default=1e-4
        Minimal decrease of the monitored loss that counts as an improvement
        (the gradient tolerance with ``loop="lbfgs"``).
    callbacks : list of skorch callbacks, default=None
        More :class:`skorch.callbacks.Callback` instances (or ``(name,
        callback)`` pairs), run after the trainer's own: they see
        ``train_loss`` (and ``valid_loss``) in the epoch's history row.
    device : torch.device or str, default="cpu"
        Where to train (an estimator resolves it first with
        :func:`~sklearn_icml.utils.resolve_device`).
    random_state : int, RandomState, torch.Generator or None, default=None
        Seeds the one CPU generator that draws the validation split and the
        batch order; seeded, torch's global generator (dropout) is forked
        and seeded from it for the fit.
    verbose : int, default=0
        Per-epoch log (skorch's ``PrintLog`` table) when positive; a silent
        fit says how far it is after 10 s of CPU (:class:`ProgressReporter`).
    name : str, default="Estimator"
        The estimator's name, used in messages.

    See Also
    --------
    TrainingResult : What :meth:`fit` returns.
    EarlyStopping : The stopping rule, for loops of their own.

    Notes
    -----
    A private subclass of :class:`skorch.NeuralNet` runs the loop; it is never
    the public object (skorch's nets do not pass scikit-learn's checks). It
    overrides only the methods skorch documents for customisation:
    ``train_step`` (one optimiser step per batch, gradient clipping, the
    closure of re-evaluating optimisers), ``train_step_single`` and
    ``validation_step`` (the batch objective; the module's mode is switched
    only when it changes), ``get_loss``, ``infer``,
    ``get_train_step_accumulator`` (the per-iteration losses of
    ``"lbfgs"``) and the ``initialize_*`` / ``get_*`` hooks. skorch's
    ``fit_loop`` and ``run_single_epoch`` run the epochs; the batches come
    from ``iterator_train`` / ``iterator_valid`` classes that slice device
    tensors (skorch's default ``DataLoader`` collates sample by sample); the
    epoch loss, the stopping rule, the LR schedule and the log are
    callbacks. The work runs inside
    :func:`~sklearn_icml.utils.torch_threads`; the module is updated in
    place and returned on the CPU, in eval mode.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_icml.utils import Trainer
    >>> X = np.linspace(-1, 1, 64).reshape(-1, 1)
    >>> net = torch.nn.Linear(1, 1)
    >>> result = Trainer(max_iter=300, batch_size=16, learning_rate=0.05, random_state=0).fit(net, X, 3 * X)
    >>> round(float(net.weight.detach()), 1), result.loss_curve[-1] < 1e-3
    (3.0, True)
    >>> lbfgs = Trainer(loop="lbfgs", max_iter=20, learning_rate=1.0).fit(torch.nn.Linear(1, 1), X, 3 * X)
    >>> len(lbfgs.loss_curve) == lbfgs.n_iter + 1
    True
    """

    def __init__(self, *, loop="epochs", loss="mse", train_step=None, optimizer=None, max_iter=200, batch_size=32,
                 learning_rate=1e-3, weight_decay=0.0, optimizer_options=None, lr_schedule=None,
                 lr_schedule_interval="epoch", grad_clip=None, shuffle=True, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, callbacks=None, device="cpu",
                 random_state=None, verbose=0, name="Estimator"):
        self.loop = loop
        self.loss = loss
        self.train_step = train_step
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.optimizer_options = optimizer_options
        self.lr_schedule = lr_schedule
        self.lr_schedule_interval = lr_schedule_interval
        self.grad_clip = grad_clip
        self.shuffle = shuffle
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.callbacks = callbacks
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.name = name

    def __repr__(self):
        return f"Trainer(loop={self.loop!r}, max_iter={self.max_iter!r}, name={self.name!r})"

    def _options(self):
        """Validated options: (loop, optimizer class, optimizer kwargs, closure_step)."""
        import torch

        name = self.name
        _check_params(name, self.max_iter, self.batch_size, self.learning_rate, self.validation_fraction,
                      self.n_iter_no_change, self.tol, self.grad_clip)
        if self.loop not in _LOOPS:
            raise ValueError(f"{name}: loop must be one of {_LOOPS}; got {self.loop!r}.")
        if self.train_step is not None and not callable(self.train_step):
            raise TypeError(f"{name}: train_step must be a callable(module, X_batch, y_batch); "
                            f"got {self.train_step!r}.")
        if self.lr_schedule_interval not in ("epoch", "batch"):
            raise ValueError(f"{name}: lr_schedule_interval must be 'epoch' or 'batch'; "
                             f"got {self.lr_schedule_interval!r}.")
        options = {} if self.optimizer_options is None else dict(self.optimizer_options)
        is_lbfgs_name = isinstance(self.optimizer, str) and self.optimizer.lower() == "lbfgs"
        if self.loop == "lbfgs":
            if self.optimizer is not None and not is_lbfgs_name:
                raise ValueError(f"{name}: loop='lbfgs' runs torch's LBFGS; leave optimizer=None "
                                 f"(got {self.optimizer!r}).")
            for flag, label in ((self.early_stopping, "early_stopping"), (self.weight_decay, "weight_decay"),
                                (self.lr_schedule is not None, "lr_schedule"),
                                (self.grad_clip is not None, "grad_clip")):
                if flag:
                    raise ValueError(f"{name}: {label} does not apply to loop='lbfgs' (full-batch L-BFGS stops "
                                     "on its gradient tolerance tol).")
            options.setdefault("max_eval", self.max_iter * 5 // 4)
            options.setdefault("tolerance_change", 1e-9)
            options.update(tolerance_grad=self.tol, line_search_fn="strong_wolfe", max_iter=self.max_iter)
            options.setdefault("history_size", 100)
            return torch.optim.LBFGS, options, True
        if is_lbfgs_name:
            raise ValueError(f"{name}: full-batch L-BFGS is loop='lbfgs' (optimizer='lbfgs' with loop="
                             f"{self.loop!r} is not a loop of the trainer).")
        optimizer = "adamw" if self.optimizer is None else self.optimizer
        optimizer_cls = _optimizer_class(optimizer, name)
        if isinstance(optimizer, str) or self.weight_decay:
            options.setdefault("weight_decay", self.weight_decay)
        # the named first-order optimisers step without a closure (skorch passes one to every optimiser)
        return optimizer_cls, options, not isinstance(optimizer, str)

    def fit(self, module, X, y=None):
        """Train ``module`` on ``(X, y)``.

        Parameters
        ----------
        module : torch.nn.Module
            Built (on the CPU, seeded) by the caller. Trained in place on
            ``device``; only parameters with ``requires_grad`` are optimised.
        X : ndarray, tensor, or tuple of them
            Inputs, first axis = samples. A tuple is unpacked into
            ``module(*X_batch)``. Float arrays are cast to the module's float
            dtype.
        y : ndarray, tensor or None, default=None
            Targets (``int64`` for ``"cross_entropy"``, floats otherwise).
            ``None`` for objectives that need none (then give ``train_step``).

        Returns
        -------
        TrainingResult
            The trained module (CPU, eval mode) and the training history.

        Raises
        ------
        ValueError
            For invalid options, fewer than two rows when ``early_stopping``,
            or a non-finite training/validation loss (with a hint to lower
            ``learning_rate``).
        """
        import torch

        name = self.name
        optimizer_cls, options, closure_step = self._options()
        if self.train_step is None and y is None:
            raise ValueError(f"{name}: y is None: pass targets, or a train_step that needs none.")
        _Net, _History, _EpochLoss, _Monitor = _net_classes()
        loss_fn = _loss_function(self.loss, torch.nn.functional, name)
        lbfgs = self.loop == "lbfgs"
        steps_loop = self.loop == "steps"
        max_iter, batch_size, learning_rate = self.max_iter, self.batch_size, self.learning_rate
        early_stopping, verbose = self.early_stopping, self.verbose
        n_iter_no_change, shuffle = (None, False) if lbfgs else (self.n_iter_no_change, self.shuffle)
        device = torch.device(self.device)
        generator = _as_generator(self.random_state)

        with torch_threads():
            module.to(device)
            float_dtype = _float_dtype(module)
            if learning_rate > torch.finfo(float_dtype).max:
                raise ValueError(f"{name}: learning_rate={learning_rate!r} overflows the module's {float_dtype} "
                                 "parameters; give a finite step size in their range.")
            single = not isinstance(X, (tuple, list))
            xs = tuple(_tensor(a, device, float_dtype) for a in ((X,) if single else X))
            target_dtype = torch.long if (isinstance(self.loss, str) and self.loss == "cross_entropy") else None
            yt = None if y is None else _tensor(y, device, float_dtype, target_dtype)
            n = int(xs[0].shape[0])
            if any(int(x.shape[0]) != n for x in xs) or (yt is not None and int(yt.shape[0]) != n):
                raise ValueError(f"{name}: X and y have inconsistent numbers of rows.")
            if n < 1:
                raise ValueError(f"{name}: no rows to train on.")
            max_epochs = max_iter
            if lbfgs:
                batch_size, max_epochs = n, 1  # the solve is one epoch: one train_step over the full batch

            data = _import_torch_data()(xs, yt, single)
            train_split, valid, n_train = None, None, n
            if early_stopping:
                n_valid = int(math.ceil(self.validation_fraction * n))
                if n - n_valid < 1:
                    raise ValueError(f"{name}: early_stopping needs at least 2 rows (validation_fraction="
                                     f"{self.validation_fraction!r} of {n} leaves none to train on).")
                perm = torch.randperm(n, generator=generator).to(device)
                train_data, valid = data.subset(perm[n_valid:]), data.subset(perm[:n_valid])
                train_split = lambda dataset, y=None, **kw: (train_data, valid)  # noqa: E731
                n_train = n - n_valid
            per_batch = self.lr_schedule_interval == "batch"
            if steps_loop:
                stream = _Stream(n_train, batch_size, max_iter, generator)
                max_epochs = stream.n_epochs
                n_steps = max_iter if per_batch else max_epochs
                iterator = dict(iterator_train=_StreamIterator, iterator_train__stream=stream)
            else:
                n_steps = max_epochs * (math.ceil(n / min(batch_size, n)) if per_batch else 1)
                iterator = dict(iterator_train=_BatchIterator, iterator_train__shuffle=bool(shuffle),
                                iterator_train__generator=generator)
            scheduler_factory = _scheduler_factory(self.lr_schedule, n_steps, name)
            stopper = EarlyStopping(n_iter_no_change, self.tol, keep_best=early_stopping)
            # the notices count what ``progress`` counts: a stream's optimiser steps, else epochs (an L-BFGS solve
            # is one epoch, reported once it has ended)
            planned = max_iter if steps_loop else max_epochs
            monitor = _Monitor(stopper, early_stopping, scheduler_factory, name, learning_rate, per_batch=per_batch,
                               reporter=ProgressReporter(name, planned, verbose=0) if not verbose else None,
                               progress=(lambda net: stream.step) if steps_loop else None)
            from skorch.callbacks import EpochTimer, PrintLog

            callbacks = [("epoch_loss", _EpochLoss()), ("epoch_timer", EpochTimer())]
            for k, cb in enumerate(self.callbacks or ()):
                callbacks.append(cb if isinstance(cb, tuple) else (f"callback_{k}", cb))
            if verbose:
                callbacks.append(("print_log", PrintLog(sink=lambda s: print(f"[{name}] " + s.replace(
                    "\n", f"\n[{name}] "), flush=True), keys_ignored=("train_batch_count", "valid_batch_count"))))
            callbacks.append(("monitor", monitor))
            iteration_log = {} if lbfgs else None
            net = _Net(
                module, criterion=torch.nn.Identity, optimizer=optimizer_cls, lr=learning_rate,
                **{f"optimizer__{k}": v for k, v in options.items()}, max_epochs=max_epochs, batch_size=batch_size,
                **iterator, iterator_valid=_BatchIterator, train_split=train_split, callbacks=callbacks,
                device=None, verbose=0, history=_History(), loss_fn=loss_fn, train_step_fn=self.train_step,
                grad_clip=None if lbfgs else self.grad_clip, closure_step=closure_step, iteration_log=iteration_log,
            )
            if not any(p.requires_grad for p in module.parameters()):
                raise ValueError(f"{name}: nothing to train: every parameter of the module is frozen.")
            net.initialize()
            if verbose:
                print(f"[{name}] training {sum(p.numel() for _, p in net.get_all_learnable_params())} parameters "
                      f"on {n_train} rows ({device}), up to {max_iter} "
                      f"{'L-BFGS iterations' if lbfgs else self.loop}", flush=True)
            with _seeded_global_draws(generator if self.random_state is not None else None, device):
                net.partial_fit(data, None)
            if early_stopping:
                stopper.restore_best(module)
            history = net.history
            valid_curve = [float(row["valid_loss"]) for row in history] if early_stopping else None
            n_evaluations = None
            if lbfgs:
                state = net.optimizer_.state[net.optimizer_.param_groups[0]["params"][0]]
                n_iter, n_evaluations = int(state.get("n_iter", 0)), int(state.get("func_evals", 0))
                # an iteration that stops before its line search (no descent left) evaluates nothing and
                # leaves the iterate where it was: its value is the previous one
                loss_curve = []
                for k in range(n_iter + 1):
                    loss_curve.append(float(iteration_log[k].item()) if k in iteration_log else loss_curve[-1])
            else:
                loss_curve = [float(row["train_loss"]) for row in history]
                n_iter = stream.step if steps_loop else len(loss_curve)
            term_names = [key[len("train_"):] for key in (history[0] if len(history) else {})
                          if key.startswith("train_") and key not in ("train_loss", "train_batch_count")]
            loss_terms = {k: [float(row["train_" + k]) for row in history] for k in term_names} or None
            module.eval()
            module.to("cpu")
        return TrainingResult(
            module=module, loss_curve=loss_curve, validation_scores=valid_curve, n_iter=n_iter,
            best_loss=None if early_stopping else min(loss_curve),
            best_validation_score=min(valid_curve) if early_stopping else None,
            epoch_times=[float(row["dur"]) for row in history], optimizer=net.optimizer_,
            n_evaluations=n_evaluations, loss_terms=loss_terms,
        )


def fit_module(module, X, y=None, *, optimizer="adamw", budget="epochs", **options):
    """Train ``module`` with a one-off :class:`Trainer`; the keyword form of ``Trainer(...).fit``.

    ``fit_module(module, X, y, **options)`` is ``Trainer(**options).fit(module, X, y)``, where
    ``optimizer="lbfgs"`` selects ``loop="lbfgs"`` and ``budget="steps"`` selects
    ``loop="steps"``. Every other keyword is a :class:`Trainer` parameter.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_icml.utils._training import fit_module
    >>> X = np.linspace(-1, 1, 64).reshape(-1, 1)
    >>> res = fit_module(torch.nn.Linear(1, 1), X, 3 * X, max_iter=300, batch_size=16, learning_rate=0.05,
    ...                  random_state=0)
    >>> res.loss_curve[-1] < 1e-3
    True
    """
    if budget not in ("epochs", "steps"):
        raise ValueError(f"{options.get('name', 'Estimator')}: budget must be 'epochs' or 'steps'; got {budget!r}.")
    loop = "steps" if budget == "steps" else "epochs"
    if isinstance(optimizer, str) and optimizer.lower() == "lbfgs":
        if budget == "steps":
            raise ValueError(f"{options.get('name', 'Estimator')}: budget='steps' does not apply to "
                             "optimizer='lbfgs' (full-batch L-BFGS stops on its gradient tolerance tol).")
        loop, optimizer = "lbfgs", None
    return Trainer(loop=loop, optimizer=optimizer, **options).fit(module, X, y)
