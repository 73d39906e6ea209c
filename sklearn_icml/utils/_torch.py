"""Torch at the boundary: device resolution, seeded generators, tensor <-> numpy.

torch is imported inside the functions, never at module import, so estimators
can declare ``device`` constraints and convert inputs without loading torch
until they compute.

The pattern every torch-backed estimator follows:

* ``device`` is ``"cpu"`` (default), ``"auto"``, ``"cuda"``, an indexed
  ``"cuda:N"`` or a :class:`torch.device`, and is resolved inside ``fit`` by
  :func:`resolve_device` (the torch estimator base,
  :class:`~sklearn_icml.utils._torch_base.TorchEstimatorMixin`, does it);
* random draws come from a CPU :class:`torch.Generator` made by
  :func:`torch_generator` from the estimator's ``random_state``, then move to
  the device, so CPU and GPU runs start from the same numbers;
* the torch work of ``fit``/``predict`` runs inside :func:`torch_threads`
  (the thread rule);
* fitted attributes are numpy arrays (or CPU modules), never device tensors,
  so pickles load on machines without a GPU.
"""

import os
import re
import sys
from contextlib import contextmanager

import numpy as np

from ._random import draw_seed
from ._sklearn_private import StrOptions

__all__ = [
    "DEVICE_CONSTRAINT",
    "as_numpy",
    "default_n_threads",
    "forward_float64",
    "is_torch_tensor",
    "resolve_device",
    "to_numpy",
    "to_tensor",
    "torch_generator",
    "torch_seed",
    "torch_threads",
]

_DEVICE_PATTERN = re.compile(r"(cpu|auto|cuda(:[0-9]+)?)")


def _is_torch_device(value):
    klass = type(value)
    return klass.__module__ == "torch" and klass.__name__ == "device"


class _DeviceOptions(StrOptions):
    """Constraint of a ``device`` parameter, checked without importing torch.

    Satisfied by ``"cpu"``, ``"auto"``, ``"cuda"``, ``"cuda:N"`` (N a device
    index) and by :class:`torch.device` objects of type cpu or cuda. A
    subclass of scikit-learn's ``StrOptions`` so that its validation and
    ``check_param_validation`` take it as they take any option set.
    """

    def __init__(self):
        super().__init__({"cpu", "auto", "cuda"})

    def is_satisfied_by(self, val):
        if _is_torch_device(val):
            return val.type in ("cpu", "cuda")
        return isinstance(val, str) and _DEVICE_PATTERN.fullmatch(val) is not None

    def __str__(self):
        return "a str among {'cpu', 'auto', 'cuda'} or 'cuda:<index>', or a torch.device"


#: Constraint for a ``device`` parameter: the strings torch accepts for the CPU
#: and CUDA devices (``"cpu"``, ``"cuda"``, ``"cuda:1"``), ``"auto"``, or a
#: :class:`torch.device`. Checked without importing torch, so that defining an
#: estimator class does not load it.
DEVICE_CONSTRAINT = [_DeviceOptions()]


def resolve_device(device):
    """Turn a ``device`` parameter into a :class:`torch.device`.

    Parameters
    ----------
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device
        ``"auto"`` picks CUDA when torch sees a GPU and the CPU otherwise;
        ``"cuda"`` is the current CUDA device, ``"cuda:1"`` the second one.

    Returns
    -------
    torch.device
        The resolved device.

    Raises
    ------
    ValueError
        If a CUDA device is asked for and torch sees no CUDA device, or not
        that index, or if the value is none of the accepted forms.

    Examples
    --------
    >>> from sklearn_icml.utils._torch import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    import torch

    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not (_is_torch_device(device) or (isinstance(device, str) and _DEVICE_PATTERN.fullmatch(device))):
        raise ValueError(f"device must be one of 'cpu', 'auto', 'cuda', 'cuda:<index>' or a torch.device; "
                         f"got {device!r}.")
    resolved = torch.device(device)
    if resolved.type == "cpu":
        return resolved
    if resolved.type != "cuda":
        raise ValueError(f"device must be a CPU or CUDA device; got {device!r}.")
    if not torch.cuda.is_available():
        raise ValueError(
            f"device={str(device)!r} was requested but torch sees no CUDA device "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda is not None}); "
            "use device='cpu', or device='auto' to fall back to the CPU."
        )
    if resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ValueError(f"device={str(device)!r} was requested but torch sees {torch.cuda.device_count()} CUDA "
                         f"device(s) (indices 0 to {torch.cuda.device_count() - 1}); pick one of them, or set "
                         "CUDA_VISIBLE_DEVICES.")
    return resolved


def torch_seed(random_state):
    """Draw an integer seed for torch from a scikit-learn ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        As everywhere in scikit-learn.

    Returns
    -------
    int
        A seed in ``[0, 2**31 - 1)``.
    """
    return draw_seed(random_state)


def torch_generator(random_state):
    """A CPU :class:`torch.Generator` seeded from a scikit-learn ``random_state``.

    Draws are made on the CPU and then moved to the compute device, so a fit on
    CPU and a fit on GPU start from identical random numbers.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        As everywhere in scikit-learn.

    Returns
    -------
    torch.Generator
        A fresh CPU generator; the global torch RNG is never touched.
    """
    import torch

    return torch.Generator(device="cpu").manual_seed(torch_seed(random_state))


def is_torch_tensor(obj):
    """Whether ``obj`` is a torch tensor, without importing torch.

    Parameters
    ----------
    obj : object
        Anything.

    Returns
    -------
    bool
        True for :class:`torch.Tensor` instances (any device).
    """
    for klass in type(obj).__mro__:
        if klass.__module__ == "torch" and klass.__name__ == "Tensor":
            return True
    return False


def as_numpy(X):
    """Convert a torch tensor (any device, with or without grad) to numpy.

    Anything else is returned unchanged, for ``validate_data`` to handle. Use
    it on every public method's input before validation.

    Parameters
    ----------
    X : object
        A tensor, an array-like, a DataFrame, ...

    Returns
    -------
    object
        ``X`` itself, or a numpy array when ``X`` was a tensor.
    """
    if is_torch_tensor(X):
        return X.detach().cpu().numpy()
    return X


def to_tensor(X, device, dtype=None):
    """Move a numpy array to ``device`` as a torch tensor.

    The caller's array is never modified. Read-only arrays (memory maps, the
    broadcasting results of numpy) are copied first, because torch warns on
    them.

    Parameters
    ----------
    X : ndarray
        Input array.
    device : torch.device or str
        Target device.
    dtype : torch.dtype, default=None
        Target dtype; by default the dtype matching ``X``.

    Returns
    -------
    torch.Tensor
        The tensor on ``device``.
    """
    import torch

    X = np.asarray(X)
    if not X.flags.writeable or not X.flags.c_contiguous:
        X = np.array(X, order="C", copy=True)
    return torch.from_numpy(X).to(device=device, dtype=dtype)


def forward_float64(module, X):
    """``module(X)`` in float64 on the CPU, without gradients and without touching the fitted module.

    A fitted float32 module evaluated in float64 on a copy of its weights: a
    row's output then does not depend on the other rows of the batch (float32
    matrix products are blocked by batch size), and the fitted state keeps its
    dtype.

    Parameters
    ----------
    module : torch.nn.Module
        A module on the CPU.
    X : ndarray or torch.Tensor
        Its input.

    Returns
    -------
    torch.Tensor
        The float64 output, on the CPU.
    """
    import copy

    import torch

    x = X.detach().to("cpu", torch.float64) if torch.is_tensor(X) else to_tensor(X, "cpu", torch.float64)
    with torch.no_grad():
        return copy.deepcopy(module).to(torch.float64)(x)


def to_numpy(tensor, dtype=None):
    """Bring a tensor back from any device as a numpy array.

    Parameters
    ----------
    tensor : torch.Tensor
        Any tensor.
    dtype : numpy dtype, default=None
        Cast to this dtype (a copy) when given.

    Returns
    -------
    ndarray
        A numpy array owning its memory (never a view on a tensor).
    """
    out = tensor.detach().cpu().numpy()
    if dtype is not None:
        return out.astype(dtype, copy=True)
    return out.copy()


def _available_cpus():
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def _in_parallel_worker():
    """Whether we run inside a joblib (loky, multiprocessing) or Dask worker.

    Child processes of :mod:`multiprocessing` and of loky (joblib's default
    backend) have a parent process; a Dask worker is recognised by
    ``distributed.get_worker()`` (only looked up when ``distributed`` is
    already imported, so this never imports it).
    """
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return True
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            distributed.get_worker()
        except (ValueError, AttributeError):
            return False
        return True
    return False


def _machine_is_oversubscribed():
    """Whether more tasks want to run than the machine has CPUs (1-minute load average).

    On such a machine torch's worker threads wait for each other's time
    slices: a small network trained with two threads on a loaded 2-core
    machine takes several times the wall time and CPU time of one thread.
    Unknown (no load average on this OS): False.
    """
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return False
    return load >= (os.cpu_count() or 1) + 1


def default_n_threads():
    """The number of torch intra-op threads the thread rule allows here.

    ``sklearn_icml.get_config()["n_threads"]`` when set; otherwise one inside
    a joblib or Dask worker or on an oversubscribed machine (1-minute load
    average at least the number of CPUs plus one), else
    ``min(torch.get_num_threads(), CPUs of the process's affinity)``.

    Returns
    -------
    int
        At least 1.
    """
    from .._config import get_config

    configured = get_config()["n_threads"]
    if configured is not None:
        return int(configured)
    if _in_parallel_worker() or _machine_is_oversubscribed():
        return 1
    import torch

    return max(1, min(torch.get_num_threads(), _available_cpus()))


@contextmanager
def torch_threads(n_threads=None):
    """The thread rule: limit torch's intra-op threads for a ``with`` block, then restore them.

    Every torch estimator runs the torch work of ``fit`` and ``predict``
    inside this context. On a busy machine torch's default (one thread per
    core) oversubscribes the CPUs; inside joblib or Dask workers, which
    already run one task per core, it multiplies.

    Parameters
    ----------
    n_threads : int >= 1 or None, default=None
        Threads to use. ``None`` applies :func:`default_n_threads`: the global
        ``sklearn_icml.set_config(n_threads=...)`` when set, else one inside a
        joblib/loky/Dask worker or on a machine whose load average exceeds its
        CPUs, else no more than torch's current setting and the CPUs the
        process's affinity allows.

    Yields
    ------
    int
        The number of threads in force inside the block.

    Notes
    -----
    :func:`torch.set_num_threads` is process-wide: concurrent Python threads
    share it. Inter-op threads are left alone (torch allows setting them only
    once per process).

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.utils._torch import torch_threads
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1) as n:
    ...     n == torch.get_num_threads() == 1
    True
    >>> torch.get_num_threads() == before
    True
    """
    import torch

    if n_threads is None:
        n_threads = default_n_threads()
    elif isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(f"torch_threads: n_threads must be None or an int >= 1; got {n_threads!r}.")
    n_threads = int(n_threads)
    before = torch.get_num_threads()
    if n_threads != before:
        torch.set_num_threads(n_threads)
    try:
        yield n_threads
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
