"""The scaling-law forms, their inverse and their marginal compute, in raw compute units.

A law maps compute ``C`` to loss ``E``; all three forms are special cases of
the saturating power law ``E = a (C + d)^-b + c``:

* ``"saturating"``: all four parameters free (Zhai et al. 2022);
* ``"power_offset"``: ``d = 0``, ``E = c + a C^-b``;
* ``"power"``: ``c = d = 0``, ``E = a C^-b``.

The functions take a parameter dict ``{"a", "b", "c", "d"}`` and broadcast over
numpy arrays; they are shared by the regressor and the scheduler.
"""

import numpy as np

FORMS = ("saturating", "power_offset", "power")

#: Parameters each form fits (the others are held at 0).
FREE_PARAMS = {
    "saturating": ("a", "b", "c", "d"),
    "power_offset": ("a", "b", "c"),
    "power": ("a", "b"),
}


def law_loss(compute, p):
    """Loss ``E(C) = a (C + d)^-b + c``."""
    compute = np.asarray(compute, dtype=float)
    return p["a"] * (compute + p["d"]) ** (-p["b"]) + p["c"]


def check_loss_level(loss, name, caller):
    """A loss level given to a fitted law: a number or array of numbers, no NaN (``inf`` is a valid level).

    Raises a ``ValueError`` naming ``caller`` and ``name``; returns a float array (0-d for a scalar).
    """
    try:
        value = np.asarray(loss, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{caller}: {name} must be a number or an array of numbers; got {loss!r}.") from None
    if np.any(np.isnan(value)):
        raise ValueError(f"{caller}: {name} contains NaN; give a loss level (a positive number).")
    return value


def law_compute(loss, p):
    """Inverse ``C(E) = ((E - c) / a)^(-1/b) - d``: ``inf`` for ``E <= c``, 0 above the zero-compute loss."""
    loss = np.asarray(loss, dtype=float)
    gap = loss - p["c"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = np.where(gap > 0, (np.where(gap > 0, gap, 1.0) / p["a"]) ** (-1.0 / p["b"]) - p["d"], np.inf)
    return np.maximum(c, 0.0)


def law_marginal(loss, p):
    """Marginal compute ``-dC/dE = ((E - c)/a)^(-1/b - 1) / (a b)``; ``inf`` for ``E <= c``."""
    loss = np.asarray(loss, dtype=float)
    gap = loss - p["c"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = (np.where(gap > 0, gap, 1.0) / p["a"]) ** (-1.0 / p["b"] - 1.0) / (p["a"] * p["b"])
    return np.where(gap > 0, m, np.inf)


def zero_compute_loss(p):
    """The law's loss at zero compute, ``a d^-b + c`` (``inf`` when ``d = 0``)."""
    if p["d"] <= 0:
        return np.inf
    return float(p["a"] * p["d"] ** (-p["b"]) + p["c"])
