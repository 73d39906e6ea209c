"""Torch at the boundary: device resolution, seeded generators, tensor <-> numpy.

torch is imported inside the functions, never at module import, so estimators
can declare ``device`` constraints and convert inputs without loading torch
until they compute.

The pattern every torch-backed estimator follows:

* ``device`` is one of ``"cpu"`` (default), ``"auto"`` or ``"cuda"`` and is
  resolved inside ``fit`` by :func:`resolve_device`;
* random draws come from a CPU :class:`torch.Generator` made by
  :func:`torch_generator` from the estimator's ``random_state``, then move to
  the device, so CPU and GPU runs start from the same numbers;
* fitted attributes are numpy arrays (or CPU modules), never device tensors,
  so pickles load on machines without a GPU.
"""

import numpy as np
from sklearn.utils import check_random_state

from ._sklearn_private import StrOptions

__all__ = [
    "DEVICE_CONSTRAINT",
    "as_numpy",
    "is_torch_tensor",
    "resolve_device",
    "to_numpy",
    "to_tensor",
    "torch_generator",
    "torch_seed",
]

#: Constraint for a ``device`` parameter. Strings only, so that defining an
#: estimator class does not import torch. ``"cuda"`` means the current CUDA
#: device; pick another one with ``CUDA_VISIBLE_DEVICES``.
DEVICE_CONSTRAINT = [StrOptions({"cpu", "auto", "cuda"})]


def resolve_device(device):
    """Turn a ``device`` parameter into a :class:`torch.device`.

    Parameters
    ----------
    device : {"cpu", "auto", "cuda"}
        ``"auto"`` picks CUDA when torch sees a GPU and the CPU otherwise.

    Returns
    -------
    torch.device
        The resolved device.

    Raises
    ------
    ValueError
        If ``device`` is ``"cuda"`` and torch sees no CUDA device, or if the
        value is not one of the three accepted strings.
    """
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                "device='cuda' was requested but torch sees no CUDA device "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda is not None}); "
                "use device='cpu', or device='auto' to fall back to the CPU."
            )
        return torch.device("cuda")
    raise ValueError(f"device must be one of 'cpu', 'auto' or 'cuda'; got {device!r}.")


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
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


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
