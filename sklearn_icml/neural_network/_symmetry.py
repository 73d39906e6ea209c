"""Activations and their symmetries: the canonical form of a hidden unit per activation.

A hidden unit is its incoming vector ``v = [w, b]`` (weights, then bias) and its
outgoing weights ``a``; it adds ``a * act(w @ x + b)`` to the next layer. Two
units that compute the same contribution, up to a term the next layer can
absorb, are symmetric twins. Expand-and-Cluster (Martinelli et al., 2024)
clusters the students' units after mapping every twin to one canonical vector:

* ``"scale"`` (relu, leaky_relu: ``act(c z) = c act(z)`` for ``c > 0``): divide
  ``v`` by its norm and multiply ``a`` by it;
* ``"odd"`` (tanh, identity: ``act(-z) = -act(z)``): flip ``v`` so that its
  first weight is positive and flip ``a`` with it;
* ``"odd_constant"`` (sigmoid: ``act(-z) = 1 - act(z)``): flip as for tanh; the
  constant ``a`` goes into the next layer's bias;
* ``"even_linear"`` (softplus, gelu, silu: ``act(z) - act(-z) = z``): flip
  ``v``, keep ``a``; the leftover linear term ``a * (w @ x + b)`` goes into an
  affine term of the next layer.

"First weight" is the first entry of ``w`` whose magnitude exceeds ``1e-12``
times the norm of ``v`` (the official code's rule; a unit whose first weight is
near zero may be flipped differently in two students, which the clustering's
L2 distance then sees; :func:`unit_alignment` compares ``|cos|`` for that
reason).
"""

import numpy as np
from scipy.special import erf, expit

__all__ = ["ACTIVATIONS", "activate", "canonical_units", "symmetry_kind", "torch_activation", "twin_relation"]

#: activation -> its symmetry kind.
ACTIVATIONS = {
    "relu": "scale",
    "leaky_relu": "scale",
    "tanh": "odd",
    "identity": "odd",
    "sigmoid": "odd_constant",
    "softplus": "even_linear",
    "gelu": "even_linear",
    "silu": "even_linear",
}

#: Negative slope of ``leaky_relu`` (torch's default).
LEAKY_SLOPE = 0.01


def symmetry_kind(activation):
    """The symmetry kind of ``activation`` (a key of :data:`ACTIVATIONS`)."""
    try:
        return ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}.") from None


def activate(activation, z):
    """The activation applied to a numpy array (float64)."""
    z = np.asarray(z, dtype=np.float64)
    if activation == "relu":
        return np.maximum(z, 0.0)
    if activation == "leaky_relu":
        return np.where(z >= 0, z, LEAKY_SLOPE * z)
    if activation == "tanh":
        return np.tanh(z)
    if activation == "identity":
        return z
    if activation == "sigmoid":
        return expit(z)
    if activation == "softplus":
        return np.logaddexp(0.0, z)
    if activation == "gelu":
        return 0.5 * z * (1.0 + erf(z / np.sqrt(2.0)))
    if activation == "silu":
        return z * expit(z)
    symmetry_kind(activation)  # raises the error naming the accepted values
    raise AssertionError(activation)  # pragma: no cover


def torch_activation(activation):
    """The activation as a function of torch tensors."""
    import torch

    functional = torch.nn.functional
    return {
        "relu": functional.relu,
        "leaky_relu": lambda z: functional.leaky_relu(z, LEAKY_SLOPE),
        "tanh": torch.tanh,
        "identity": lambda z: z,
        "sigmoid": torch.sigmoid,
        "softplus": functional.softplus,
        "gelu": functional.gelu,
        "silu": functional.silu,
    }[activation] if activation in ACTIVATIONS else symmetry_kind(activation)


def _reference_sign(V):
    """+1/-1 per row: the sign of the first weight of ``V[:, :-1]`` that is not negligible."""
    W = V[:, :-1]
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    significant = np.abs(W) > 1e-12 * np.maximum(norms, np.finfo(float).tiny)
    first = np.where(significant.any(axis=1), significant.argmax(axis=1), 0)
    sign = np.sign(W[np.arange(len(W)), first])
    sign[sign == 0] = 1.0
    return sign


def canonical_units(W, b, A, activation):
    """Map each hidden unit to its canonical twin.

    Parameters
    ----------
    W : ndarray of shape (n_units, n_inputs)
        Incoming weights, one row per unit.
    b : ndarray of shape (n_units,)
        Biases.
    A : ndarray of shape (n_next, n_units)
        Outgoing weights (one column per unit).
    activation : str
        A key of :data:`ACTIVATIONS`.

    Returns
    -------
    V : ndarray of shape (n_units, n_inputs + 1)
        Canonical incoming vectors ``[w, b]``.
    A_canonical : ndarray of shape (n_next, n_units)
        Outgoing weights of the canonical units.
    affine : ndarray of shape (n_next, n_inputs + 1)
        The term the next layer absorbs: the layer's output is
        ``A_canonical @ act(V @ [x, 1]) + affine @ [x, 1]`` (zero for the
        scaling and odd kinds; a constant for sigmoid; linear for the
        even-linear kind).
    factor : ndarray of shape (n_units,)
        ``[w, b] = factor * V`` row by row: the norm (scaling kind) or the
        sign flipped (the others).
    """
    kind = symmetry_kind(activation)
    V = np.column_stack([np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64)])
    A = np.asarray(A, dtype=np.float64)
    affine = np.zeros((A.shape[0], V.shape[1]))
    if kind == "scale":
        factor = np.linalg.norm(V, axis=1)
        factor[factor == 0] = 1.0
        return V / factor[:, None], A * factor[None, :], affine, factor
    factor = _reference_sign(V)
    flipped = factor < 0
    Vc = V * factor[:, None]
    if kind == "odd":
        return Vc, A * factor[None, :], affine, factor
    if kind == "odd_constant":  # a sigma(z) = a - a sigma(-z)
        affine[:, -1] = A[:, flipped].sum(axis=1)
        return Vc, A * factor[None, :], affine, factor
    # even_linear: a act(z) = a act(-z) + a z
    affine += A[:, flipped] @ V[flipped]
    return Vc, A.copy(), affine, factor


def twin_relation(activation, sign, ratio):
    """How a twin's activation relates to a reference unit's: ``h_twin = coef * h_ref + const (+ linear)``.

    Parameters
    ----------
    activation : str
        A key of :data:`ACTIVATIONS`.
    sign : float or ndarray
        +1 when the twin's incoming vector points like the reference's, -1
        when it is flipped.
    ratio : float or ndarray
        Norm of the twin's incoming vector over the reference's (1 for exact
        twins of the sign-symmetric kinds).

    Returns
    -------
    coef, const : ndarray
        The linear leftover of the even-linear kind is not returned (the
        fine-tune that follows every use absorbs it).
    """
    kind = symmetry_kind(activation)
    sign = np.asarray(sign, dtype=np.float64)
    ratio = np.asarray(ratio, dtype=np.float64)
    zero = np.zeros(np.broadcast(sign, ratio).shape)
    if kind == "scale":
        return ratio + zero, zero
    if activation == "identity":
        return sign * ratio + zero, zero
    if kind == "odd":
        return sign + zero, zero
    if kind == "odd_constant":
        return sign + zero, (sign < 0) + zero
    return np.ones_like(zero), zero
