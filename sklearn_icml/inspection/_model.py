"""One interface over the models we explain: fitted scikit-learn estimators, torch modules, callables.

An attribution method needs two things from a model: the value of the explained
output ``f_t(x)`` on a batch of inputs, and its gradient with respect to the
input. :class:`_Model` gives both, batched:

* a torch ``nn.Module`` is evaluated on ``device`` and differentiated with
  autograd (gradients with respect to the inputs only; the module's parameters
  never accumulate gradients);
* a fitted scikit-learn estimator (through ``predict_proba``,
  ``decision_function`` or ``predict``) or a plain callable on numpy arrays is a
  black box: gradients are central finite differences, every perturbed copy is
  evaluated in one vectorised call per batch, and batches can be spread over
  ``n_jobs`` workers with :class:`sklearn.utils.parallel.Parallel`.

A model that returns NaN or infinite values (or, for a torch module, non-finite
input gradients) on any evaluated point makes the method raise a ``ValueError``
instead of returning NaN maps.

Torch work runs under the thread rule (:func:`~sklearn_icml.utils._torch.torch_threads`):
at most the threads the process may use, one inside joblib or Dask workers.

The explained output of a 2-D output (class probabilities, logits, several
regression targets) is one column per input row: ``target`` (an int, or one int
per row) or, by default, the column with the largest value at the explained
input (the predicted class).
"""

import copy
import re

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from ..utils._torch import resolve_device, torch_threads

__all__ = ["_Model", "_is_torch_module", "make_model"]

_RESPONSE_METHODS = ("predict_proba", "decision_function", "predict")


def _is_torch_module(obj):
    """Whether ``obj`` is a ``torch.nn.Module``, without importing torch."""
    return any(k.__name__ == "Module" and k.__module__.startswith("torch.nn") for k in type(obj).__mro__)


def _batches(n, size):
    size = max(1, int(size))
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def _call_blackbox(fn, X):
    return np.asarray(fn(X), dtype=np.float64)


def _check_finite(values, what, caller):
    """Refuse NaN or infinite model outputs: every attribution built on them would be NaN without a word."""
    bad = ~np.isfinite(values)
    if bad.any():
        rows = np.flatnonzero(bad.reshape(values.shape[0], -1).any(axis=1))
        raise ValueError(f"{caller}: the model returned non-finite {what} (NaN or inf) for {len(rows)} of "
                         f"{values.shape[0]} evaluated inputs (first at row {int(rows[0])} of the batch); the "
                         "attributions would not be finite. Check the model on the explained inputs and on the "
                         "points the method evaluates (baseline, perturbations, path points).")


class _WithColumns:
    """Call ``fn`` on a DataFrame with the columns the estimator was fitted with."""

    def __init__(self, fn, columns):
        self.fn = fn
        self.columns = columns

    def __call__(self, X):
        import pandas as pd

        return self.fn(pd.DataFrame(X, columns=self.columns))


class _Model:
    """Batched values and input gradients of one explained model output.

    Parameters
    ----------
    model : estimator, torch.nn.Module or callable
        What is explained.
    response_method : {"auto", "predict_proba", "decision_function", "predict"}
        Which method of a scikit-learn estimator gives the output; ``"auto"``
        takes the first one the estimator has, in that order.
    device : {"cpu", "auto", "cuda"}
        Where a torch module runs; ignored for black-box models.
    batch_size : int
        Rows per model call.
    n_jobs : int or None
        Workers for black-box evaluation of large batches.
    fd_step : float or ndarray of shape (n_features,)
        Step of the central finite differences of black-box models.
    caller : str
        Name used in error messages.
    """

    def __init__(self, model, *, response_method="auto", device="cpu", batch_size=4096, n_jobs=None,
                 fd_step=1e-4, caller="attribution"):
        self.caller = caller
        self.batch_size = int(batch_size)
        self.n_jobs = n_jobs
        self.fd_step = fd_step
        if _is_torch_module(model):
            import torch

            self.kind = "torch"
            self.device = resolve_device(device)
            params = list(model.parameters()) + list(model.buffers())
            float_params = [p for p in params if p.is_floating_point()]
            self.dtype = float_params[0].dtype if float_params else torch.float32
            on_device = all(p.device.type == self.device.type for p in params)
            if model.training or not on_device:
                # never change the caller's module: evaluate a copy in eval mode on the device
                model = copy.deepcopy(model).eval().to(self.device)
            self.module = model
            self.fn = None
        elif hasattr(model, "fit") or any(hasattr(model, m) for m in _RESPONSE_METHODS):
            self.kind = "estimator"
            if response_method == "auto":
                available = [m for m in _RESPONSE_METHODS if hasattr(model, m)]
                if not available:
                    raise TypeError(f"{caller}: the estimator {type(model).__name__} has none of the methods "
                                    f"{list(_RESPONSE_METHODS)}.")
                response_method = available[0]
            elif not hasattr(model, response_method):
                raise ValueError(f"{caller}: response_method={response_method!r} but the estimator "
                                 f"{type(model).__name__} has no such method.")
            self.response_method = response_method
            self.fn = getattr(model, response_method)
            names = getattr(model, "feature_names_in_", None)
            if names is not None:  # fitted on a DataFrame: give it one, so it does not warn
                self.fn = _WithColumns(self.fn, list(names))
        elif callable(model):
            self.kind = "callable"
            self.fn = model
        else:
            raise TypeError(f"{caller}: the model must be a fitted scikit-learn estimator, a torch.nn.Module "
                            f"or a callable; got {type(model).__name__}.")

    # -- raw outputs -------------------------------------------------------------------------
    def raw(self, X):
        """Model outputs, ``(n,)`` or ``(n, n_outputs)``, as float64 numpy."""
        X = np.asarray(X)
        n = X.shape[0]
        if n == 0:
            return np.zeros((0,))
        if self.kind == "torch":
            import torch

            outs = []
            with torch_threads(), torch.no_grad():
                for sl in _batches(n, self.batch_size):
                    xb = self._tensor(X[sl])
                    outs.append(self._squeeze(self._forward(xb)).detach().to("cpu", torch.float64).numpy())
            out = np.concatenate(outs, axis=0)
        else:
            slices = _batches(n, self.batch_size)
            if self.n_jobs is not None and self.n_jobs != 1 and len(slices) > 1:
                parts = Parallel(n_jobs=self.n_jobs)(delayed(_call_blackbox)(self.fn, X[sl]) for sl in slices)
            else:
                parts = [_call_blackbox(self.fn, X[sl]) for sl in slices]
            out = np.concatenate(parts, axis=0)
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        if out.ndim not in (1, 2) or out.shape[0] != n:
            raise ValueError(f"{self.caller}: the model returned an output of shape {out.shape} for {n} inputs; "
                             "expected (n,) or (n, n_outputs).")
        _check_finite(out, "outputs", self.caller)
        return out

    def _forward(self, xb):
        """The torch module on a batch; an input it cannot take (a wrong width) is a ValueError naming the width."""
        try:
            return self.module(xb)
        except RuntimeError as exc:
            if not re.search(r"shape|size|dimension", str(exc)):
                raise
            raise ValueError(f"{self.caller}: the torch module {type(self.module).__name__} cannot take inputs "
                             f"with {xb.shape[-1]} features (X has shape {tuple(xb.shape)} in this batch): {exc}"
                             ) from exc

    def _tensor(self, X):
        import torch

        # a writable C-contiguous array (broadcast views are read-only), converted on the device
        return torch.from_numpy(np.require(X, requirements=["C", "W"])).to(device=self.device, dtype=self.dtype)

    @staticmethod
    def _squeeze(out):
        if out.ndim == 2 and out.shape[1] == 1:
            return out[:, 0]
        if out.ndim > 2:
            return out.reshape(out.shape[0], -1)
        return out

    # -- targets ---------------------------------------------------------------------------------
    def resolve_target(self, X, target):
        """One output column per row (int array), or None when the output is 1-D."""
        out = self.raw(X)
        if out.ndim == 1:
            if target not in (None, 0) and not (isinstance(target, np.ndarray) and np.all(target == 0)):
                raise ValueError(f"{self.caller}: the model has a single output, so target must be None; "
                                 f"got target={target!r}.")
            return None
        n_out = out.shape[1]
        if target is None:
            return np.argmax(out, axis=1)
        t = np.asarray(target)
        if t.ndim == 0:
            t = np.full(X.shape[0], int(t))
        if t.shape != (X.shape[0],) or not np.issubdtype(t.dtype, np.integer):
            raise ValueError(f"{self.caller}: target must be None, an int or one int per input; got {target!r}.")
        if t.min() < 0 or t.max() >= n_out:
            raise ValueError(f"{self.caller}: target must lie in [0, {n_out - 1}] (the model has {n_out} outputs); "
                             f"got {target!r}.")
        return t.astype(np.int64)

    # -- explained values ------------------------------------------------------------------------
    def value(self, X, t):
        """``f_t(x)`` for each row: shape ``(n,)``."""
        out = self.raw(X)
        if t is None:
            if out.ndim != 1:
                raise ValueError(f"{self.caller}: the model output has {out.shape[1]} columns; give a target.")
            return out
        return out[np.arange(out.shape[0]), t]

    def gradient(self, X, t):
        """``d f_t(x) / d x`` for each row: shape ``(n, n_features)``."""
        X = np.asarray(X, dtype=np.float64)
        if self.kind == "torch":
            return self._torch_gradient(X, t)
        return self._fd_gradient(X, t)

    def _torch_gradient(self, X, t):
        import torch

        n, d = X.shape
        grad = np.empty((n, d), dtype=np.float64)
        tt = None if t is None else torch.as_tensor(t, device=self.device)
        with torch_threads():
            for sl in _batches(n, self.batch_size):
                xb = self._tensor(X[sl]).requires_grad_(True)
                with torch.enable_grad():
                    out = self._squeeze(self._forward(xb))
                    if tt is None:
                        if out.ndim != 1:
                            raise ValueError(f"{self.caller}: the module output has {out.shape[1]} columns; "
                                             "give a target.")
                        sel = out
                    else:
                        sel = out.gather(1, tt[sl].unsqueeze(1)).squeeze(1)
                    (g,) = torch.autograd.grad(sel.sum(), xb)
                grad[sl] = g.detach().to("cpu", torch.float64).numpy()
        _check_finite(grad, "input gradients", self.caller)
        return grad

    def _fd_gradient(self, X, t):
        n, d = X.shape
        h = np.broadcast_to(np.asarray(self.fd_step, dtype=np.float64), (d,))
        h = np.where(h > 0, h, 1e-4)
        step = np.diag(h)
        grad = np.empty((n, d), dtype=np.float64)
        rows_per_chunk = max(1, self.batch_size // (2 * d))
        # several model batches per chunk when the work is spread over workers
        if self.n_jobs is not None and self.n_jobs != 1:
            rows_per_chunk *= 8
        for sl in _batches(n, rows_per_chunk):
            xb = X[sl]
            c = xb.shape[0]
            plus = (xb[:, None, :] + step[None]).reshape(-1, d)
            minus = (xb[:, None, :] - step[None]).reshape(-1, d)
            tb = None if t is None else np.tile(np.repeat(t[sl], d), 2)
            vals = self.value(np.concatenate([plus, minus]), tb)
            grad[sl] = (vals[: c * d] - vals[c * d:]).reshape(c, d) / (2 * h)
        return grad


def make_model(model, *, response_method="auto", device="cpu", batch_size=4096, n_jobs=None, fd_step=1e-4,
               caller="attribution"):
    """Wrap ``model`` in a :class:`_Model` (or return it when it already is one)."""
    if isinstance(model, _Model):
        return model
    return _Model(model, response_method=response_method, device=device, batch_size=batch_size,
                  n_jobs=n_jobs, fd_step=fd_step, caller=caller)
