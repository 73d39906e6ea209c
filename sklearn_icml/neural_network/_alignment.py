"""The paper's evaluation of a recovered network: each teacher unit's best alignment to a recovered unit."""

import numpy as np

from ._symmetry import canonical_units, symmetry_kind, twin_relation

__all__ = ["unit_alignment"]


def _check_layers(coefs, intercepts, label):
    coefs = [np.asarray(c, dtype=np.float64) for c in coefs]
    intercepts = [np.asarray(b, dtype=np.float64).reshape(-1) for b in intercepts]
    if len(coefs) < 2 or len(coefs) != len(intercepts):
        raise ValueError(f"unit_alignment: {label} must hold the weight matrices of every layer, output layer "
                         f"included (MLPRegressor's coefs_/intercepts_), at least two; got {len(coefs)} weight "
                         f"matrices and {len(intercepts)} bias vectors.")
    for c, b in zip(coefs, intercepts):
        if c.ndim != 2 or c.shape[1] != b.shape[0]:
            raise ValueError(f"unit_alignment: {label}: a (fan_in, fan_out) matrix and a (fan_out,) bias per layer "
                             f"are expected; got shapes {c.shape} and {b.shape}.")
    return coefs, intercepts


def _cosines(T, R):
    Tn = T / np.maximum(np.linalg.norm(T, axis=1, keepdims=True), np.finfo(float).tiny)
    Rn = R / np.maximum(np.linalg.norm(R, axis=1, keepdims=True), np.finfo(float).tiny)
    return Tn @ Rn.T


def unit_alignment(coefs_true, intercepts_true, coefs_rec, intercepts_rec, activation):
    """Per teacher unit, the best cosine between its incoming vector and a recovered unit's.

    Each hidden unit is its incoming vector ``[w, b]``. For the first hidden
    layer both networks' vectors live in the input space. For a deeper layer
    the recovered vectors are first expressed in the teacher's units of the
    layer below: each recovered unit of that layer is matched to its best
    teacher unit and its weight is carried over through the symmetry linking
    them (a sign, a positive scale, a constant into the bias). The score is
    ``|cos|`` for the sign-symmetric activations and ``cos`` for the
    positively homogeneous ones (relu, leaky_relu), whose units are
    identifiable up to a positive scale only, as in the paper's evaluation.

    Parameters
    ----------
    coefs_true, intercepts_true : list of ndarray
        The teacher's weight matrices ``(fan_in, fan_out)`` and biases, output
        layer included (the layout of :class:`~sklearn.neural_network.MLPRegressor`).
    coefs_rec, intercepts_rec : list of ndarray
        The recovered network's, same layout and number of layers (the widths
        may differ).
    activation : str
        The hidden activation: relu, leaky_relu, tanh, sigmoid, softplus,
        gelu, silu or identity.

    Returns
    -------
    alignment : list of ndarray
        One array per hidden layer, holding each teacher unit's best score
        (1 is a perfect recovery).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural_network import unit_alignment
    >>> W, b = np.array([[1.0, -2.0], [0.5, 1.0]]), np.array([0.1, -0.3])
    >>> coefs, intercepts = [W, np.ones((2, 1))], [b, np.zeros(1)]
    >>> flipped = [-W[:, ::-1], np.ones((2, 1))], [-b[::-1], np.zeros(1)]
    >>> [a.round(3) for a in unit_alignment(coefs, intercepts, *flipped, "tanh")]
    [array([1., 1.])]
    """
    kind = symmetry_kind(activation)
    coefs_true, intercepts_true = _check_layers(coefs_true, intercepts_true, "coefs_true/intercepts_true")
    coefs_rec, intercepts_rec = _check_layers(coefs_rec, intercepts_rec, "coefs_rec/intercepts_rec")
    if len(coefs_true) != len(coefs_rec):
        raise ValueError(f"unit_alignment: the teacher has {len(coefs_true) - 1} hidden layers and the recovered "
                         f"network {len(coefs_rec) - 1}; they must match.")
    if coefs_true[0].shape[0] != coefs_rec[0].shape[0]:
        raise ValueError(f"unit_alignment: the teacher has {coefs_true[0].shape[0]} inputs and the recovered "
                         f"network {coefs_rec[0].shape[0]}.")
    scores = []
    # recovered unit r of the layer below = coef[r] * teacher unit match[r] + const[r]
    match = coef = const = None
    for layer in range(len(coefs_true) - 1):
        Wt, bt = coefs_true[layer].T, intercepts_true[layer]
        Wr, br = coefs_rec[layer].T, intercepts_rec[layer]
        if match is not None:
            carried = np.zeros((Wr.shape[0], Wt.shape[1]))
            for r in range(Wr.shape[1]):
                carried[:, match[r]] += coef[r] * Wr[:, r]
            br = br + Wr @ const
            Wr = carried
        Vt = canonical_units(Wt, bt, np.zeros((1, len(bt))), activation)[0]
        Vr = canonical_units(Wr, br, np.zeros((1, len(br))), activation)[0]
        cos = _cosines(Vt, Vr)
        score = cos if kind == "scale" else np.abs(cos)
        scores.append(score.max(axis=1) if score.shape[1] else np.zeros(len(Vt)))
        # match each recovered unit to its best teacher unit, in raw orientation
        raw_t = np.column_stack([Wt, bt])
        raw_r = np.column_stack([Wr, br])
        raw_cos = _cosines(raw_r, raw_t)
        match = np.argmax(raw_cos if kind == "scale" else np.abs(raw_cos), axis=1)
        sign = np.sign(raw_cos[np.arange(len(match)), match])
        sign[sign == 0] = 1.0
        ratio = np.linalg.norm(raw_r, axis=1) / np.maximum(np.linalg.norm(raw_t[match], axis=1),
                                                            np.finfo(float).tiny)
        coef, const = twin_relation(activation, sign, ratio)
    return scores
