"""Validation of calibration-metric inputs and their reduction to binary problems.

Every calibration metric of this family measures one or more *binary*
problems: a score ``z`` in logit space (and the matching probability), a 0/1
outcome ``y`` and a weight ``w`` per sample.

* 1-D scores: positive-class calibration, as :func:`sklearn.calibration.calibration_curve`;
  ``y`` is ``y_true == pos_label``.
* 2-D scores, ``multiclass="top_label"`` (the paper's setting): the confidence of
  the predicted class, ``y`` is whether the prediction is right.
* 2-D scores, ``multiclass="classwise"``: one problem per column (one-vs-rest).

Saturated scores (probability exactly 0 or 1, or a top-label logit whose other
classes all underflow) give ``z = -inf`` or ``+inf``; they are kept exactly
rather than clipped, and the metrics treat them as point masses.
"""

from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.utils import check_array, column_or_1d

from ..utils._sklearn_private import StrOptions, _check_sample_weight
from ..utils._torch import as_numpy, is_torch_tensor
from ._backend import get_ops

# the ``validate_params`` constraints of the arguments every calibration metric takes
SCORE_INPUT_CONSTRAINTS = {
    "y_true": ["array-like"],
    "y_score": ["array-like"],
    "response": [StrOptions({"proba", "logits"})],
    "labels": ["array-like", None],
    "pos_label": [Real, str, "boolean", None],
    "sample_weight": ["array-like", None],
}
MULTICLASS_CONSTRAINT = {"multiclass": [StrOptions({"top_label", "classwise"})]}

# rows per chunk in the top-label reduction: bounds the temporary memory to about
# 2**22 scores, whatever the number of classes
_CHUNK_ELEMENTS = 1 << 22


@dataclass
class BinaryProblem:
    """One binary calibration problem (arrays of the backend ``ops``)."""

    z: object  # logit-space score, may hold +-inf
    prob: object  # probability-space score (the confidence)
    y: object  # 0/1 outcome, float64
    w: object  # non-negative weights, float64


def _y_true_1d(y_true, caller):
    y = as_numpy(y_true)
    y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=False, input_name="y_true")
    if y.ndim != 1:
        y = column_or_1d(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{caller}: y_true contains NaN or infinity.")
    return y


def _check_score(y_score, ops, response, caller):
    if is_torch_tensor(y_score):
        shape = tuple(y_score.shape)
        lo, hi = (float(v) for v in ops.torch.aminmax(y_score.detach())) if y_score.numel() else (0.0, 0.0)
    else:
        y_score = check_array(as_numpy(y_score), ensure_2d=False, dtype=[np.float64, np.float32],
                              ensure_all_finite=False, allow_nd=True, input_name="y_score")
        shape = y_score.shape
        lo, hi = (float(y_score.min()), float(y_score.max())) if y_score.size else (0.0, 0.0)
    if len(shape) == 2 and shape[1] == 1:
        y_score = y_score[:, 0]
        shape = shape[:1]
    if len(shape) not in (1, 2):
        raise ValueError(f"{caller}: y_score must be 1-D (binary) or 2-D (n_samples, n_classes); got shape {shape}.")
    # min and max propagate NaN, so two reductions check finiteness without a boolean copy of the scores
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{caller}: y_score contains NaN or infinity.")
    if response == "proba":
        if lo < 0 or hi > 1:
            raise ValueError(f"{caller}: with response='proba', y_score must lie in [0, 1]; got values in "
                             f"[{lo:.6g}, {hi:.6g}]. Pass response='logits' for decision_function outputs.")
        if len(shape) == 2:
            sums = y_score.sum(1)
            dtype = np.float32 if str(y_score.dtype).endswith("float32") else np.float64
            tol = max(1e-8, 100 * float(np.finfo(dtype).eps))
            worst = float(abs(sums - 1).max())
            if worst > tol:
                raise ValueError(f"{caller}: with response='proba', each row of y_score must sum to 1; the worst "
                                 f"row sums to 1 {'+' if float(sums.max()) > 1 else '-'} {worst:.3g}.")
    return y_score, shape


def _binary_labels(y, pos_label, caller):
    if y.dtype.kind in "iub" and y.size and pos_label in (None, 1, True):
        lo, hi = int(y.min()), int(y.max())
        if 0 <= lo and hi <= 1:  # fast path: integer labels within {0, 1}
            return y.astype(np.float64)
    classes = np.unique(y)
    if classes.size > 2:
        raise ValueError(f"{caller}: y_score is 1-D (binary calibration) but y_true has {classes.size} classes "
                         f"{classes[:5].tolist()}; pass 2-D scores for a multiclass problem.")
    if pos_label is None:
        known = [{0, 1}, {-1, 1}, {False, True}]
        values = set(classes.tolist())
        if not any(values <= k for k in known):
            raise ValueError(f"{caller}: y_true has labels {classes.tolist()}; pass pos_label to say which one "
                             "the 1-D y_score is the probability (or logit) of.")
        pos_label = 1
    elif classes.size == 2 and pos_label not in classes.tolist():
        raise ValueError(f"{caller}: pos_label={pos_label!r} is not among the labels of y_true {classes.tolist()}.")
    return (y == pos_label).astype(np.float64)


def _class_indices(y, labels, n_classes, caller):
    if labels is None:
        labels = np.unique(y)
        if labels.size != n_classes:
            raise ValueError(f"{caller}: y_score has {n_classes} columns but y_true contains {labels.size} distinct "
                             f"labels; pass labels= (the class of each column, e.g. estimator.classes_).")
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size != n_classes:
        raise ValueError(f"{caller}: labels must list one class per column of y_score ({n_classes}); "
                         f"got {labels.size}.")
    if np.unique(labels).size != labels.size:
        raise ValueError(f"{caller}: labels contains duplicates: {labels.tolist()}.")
    order = np.argsort(labels, kind="stable")
    pos = np.searchsorted(labels[order], y)
    pos = np.minimum(pos, labels.size - 1)
    unknown = labels[order][pos] != y
    if unknown.any():
        raise ValueError(f"{caller}: y_true contains labels not in labels: {np.unique(y[unknown])[:5].tolist()}.")
    return order[pos]


def _top_label_chunk(ops, block, response):
    """Top-label logit, confidence and predicted column for a block of rows.

    From logits the top-label logit is ``-log sum_{k != argmax} exp(l_k - l_max)``:
    exact, one exp pass in the input's precision, no clipping of a confidence of
    1.0 (which gives ``+inf``). From probabilities it is
    ``log p_max - log(sum of the other p)``, with the sum taken over the other
    entries rather than as ``1 - p_max``.
    """
    if ops.name == "numpy":
        rows = np.arange(block.shape[0])
        am = block.argmax(axis=1)
        if response == "proba":
            top = block[rows, am].astype(np.float64)
            others = block.copy()
            others[rows, am] = 0
            rest = others.sum(axis=1, dtype=np.float64)
            with np.errstate(divide="ignore"):
                return np.log(top) - np.log(rest), top, am
        e = np.subtract(block, block[rows, am][:, None])
        np.exp(e, out=e)
        e[rows, am] = 0
        s = e.sum(axis=1, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return -np.log(s), 1.0 / (1.0 + s), am
    torch = ops.torch
    am = block.argmax(dim=1)[:, None]
    if response == "proba":
        b64 = block.to(torch.float64)
        rest = b64.scatter(1, am, 0.0).sum(dim=1)
        top = b64.gather(1, am)[:, 0]
        return torch.log(top) - torch.log(rest), top, am[:, 0]
    e = torch.exp(block - block.gather(1, am))
    s = e.scatter(1, am, 0.0).sum(dim=1).to(torch.float64)
    return -torch.log(s), 1.0 / (1.0 + s), am[:, 0]


def _classwise_chunk(ops, block, response):
    """One-vs-rest logits and probabilities (n, k) for a block of rows.

    The "rest" of each column is the sum of the other columns' mass; for the
    arg-max column (the only one that can be close to 1) it is summed directly,
    so it keeps its precision.
    """
    if ops.name == "numpy":
        rows = np.arange(block.shape[0])
        am = block.argmax(axis=1)
        if response == "proba":
            p = block.astype(np.float64)
        else:
            p = np.exp(block.astype(np.float64) - block[rows, am].astype(np.float64)[:, None])
        others = p.copy()
        others[rows, am] = 0
        rest = p.sum(axis=1)[:, None] - p
        rest[rows, am] = others.sum(axis=1)
        with np.errstate(divide="ignore"):
            z = np.log(p) - np.log(rest)
        return z, (p if response == "proba" else p / p.sum(axis=1)[:, None])
    torch = ops.torch
    b64 = block.to(torch.float64)
    am = b64.argmax(dim=1)[:, None]
    p = b64 if response == "proba" else torch.exp(b64 - b64.gather(1, am))
    rest = (p.sum(dim=1, keepdim=True) - p).scatter(1, am, p.scatter(1, am, 0.0).sum(dim=1, keepdim=True))
    return torch.log(p) - torch.log(rest), (p if response == "proba" else p / p.sum(dim=1, keepdim=True))


def prepare_binary_problems(y_true, y_score, *, response, multiclass, labels, pos_label, sample_weight, caller):
    """Validate the inputs and reduce them to a list of :class:`BinaryProblem`.

    Returns ``(ops, problems)``: the backend (torch when ``y_score`` is a
    tensor, on its device) and one problem (binary, top-label) or one per class
    (classwise).
    """
    ops = get_ops(y_score)
    y = _y_true_1d(y_true, caller)
    y_score, shape = _check_score(y_score, ops, response, caller)
    n = shape[0]
    if n < 1:
        raise ValueError(f"{caller}: found 0 samples; at least 1 is required.")
    if y.shape[0] != n:
        raise ValueError(f"{caller}: y_true has {y.shape[0]} samples but y_score has {n}.")
    try:
        w = _check_sample_weight(as_numpy(sample_weight), np.empty((n, 0)), dtype=np.float64,
                                 ensure_non_negative=True)
    except ValueError as exc:
        raise ValueError(f"{caller}: bad sample_weight: {exc}") from exc
    if not w.sum() > 0:
        raise ValueError(f"{caller}: sample_weight sums to 0.")
    w_b = ops.from_numpy(w)

    if len(shape) == 1:
        y01 = ops.from_numpy(_binary_labels(y, pos_label, caller))
        s = ops.asarray(y_score)
        if response == "proba":
            return ops, [BinaryProblem(z=ops.logit(s), prob=s, y=y01, w=w_b)]
        return ops, [BinaryProblem(z=s, prob=ops.sigmoid(s), y=y01, w=w_b)]

    n_classes = shape[1]
    if n_classes < 2:
        raise ValueError(f"{caller}: 2-D y_score needs at least 2 columns; got {n_classes}.")
    idx = _class_indices(y, labels, n_classes, caller)
    step = max(1, _CHUNK_ELEMENTS // n_classes)
    chunks = [y_score[i:i + step] for i in range(0, n, step)]
    if multiclass == "top_label":
        parts = [_top_label_chunk(ops, block, response) for block in chunks]
        hits = np.concatenate([ops.to_numpy(am) for _, _, am in parts]) == idx
        problem = BinaryProblem(z=ops.cat([p[0] for p in parts]), prob=ops.cat([p[1] for p in parts]),
                                y=ops.from_numpy(hits.astype(np.float64)), w=w_b)
        return ops, [problem]
    parts = [_classwise_chunk(ops, block, response) for block in chunks]
    z_all, p_all = ops.cat([p[0] for p in parts]), ops.cat([p[1] for p in parts])
    return ops, [BinaryProblem(z=z_all[:, c], prob=p_all[:, c], y=ops.from_numpy((idx == c).astype(np.float64)),
                               w=w_b) for c in range(n_classes)]
