"""Sensitivities of every release of the toolkit, each derived once from the neighbouring relation.

Two relations are used:

* **central** (unbounded DP): datasets ``D`` and ``D'`` are neighbours when
  one is the other plus one record. The curator releases functions of the
  whole dataset; the sensitivity is the largest change of the released vector
  over all such pairs.
* **local**: every record sends one randomised message; two inputs of one
  record are neighbours whatever they are (any record may be *replaced* by
  any other). The sensitivity of a message is the largest change of the
  message's exact value over all pairs of possible records.

Each function below states its worst-case pair; ``tests/privacy`` finds the
same numbers by brute force over neighbouring pairs on a grid of records.
Records are clipped to a public box with centre ``c`` and half-widths ``h``
and summed as ``z = clip(x) - c``, so ``|z_j| <= h_j``.
"""

import math

import numpy as np

__all__ = [
    "box_sum_sensitivity",
    "continual_count_sensitivity",
    "continual_sum_sensitivity",
    "group_count_sensitivity",
    "tree_level_sensitivity",
]

_MODELS = ("central", "local")


def _check_model(model):
    if model not in _MODELS:
        raise ValueError(f"model must be one of {_MODELS}; got {model!r}.")


def group_count_sensitivity(model):
    """L1 sensitivity of the vector of group sizes (each record in exactly one group).

    * central: adding a record raises one group's size by one: ``1``.
      Worst pair: any ``D`` and ``D`` plus one record.
    * local: a record's message is its one-hot group indicator ``e_g``;
      replacing it by a record of another group changes it to ``e_g'``:
      ``||e_g - e_g'||_1 = 2``. Worst pair: two records in different groups.
    """
    _check_model(model)
    return 1.0 if model == "central" else 2.0


def box_sum_sensitivity(half, norm, model):
    """Sensitivity of the per-group sums of ``z = clip(x) - c`` (``norm`` 1 or 2).

    * central: adding a record adds its ``z`` to one group's sum, so the
      change is ``||z||_p <= ||h||_p``. Worst pair: ``D`` and ``D`` plus a
      record at a corner of the box.
    * local: a record's message is the block matrix ``e_g z^T``. Replacing
      ``(g, z)`` by ``(g', z')``: in the same group the change is
      ``||z - z'||_p``, up to ``2 ||h||_p`` for opposite corners; across
      groups it is ``(||z||_p^p + ||z'||_p^p)^(1/p)``, at most
      ``2^(1/p) ||h||_p``. The maximum is ``2 ||h||_p`` for both norms.
      Worst pair: two records of the **same** group at opposite corners.

    Parameters
    ----------
    half : array-like of shape (n_features,)
        Half-widths of the box.
    norm : {1, 2}
        The norm of the sensitivity (1 for Laplace, 2 for Gaussian noise).
    model : {"central", "local"}
        Neighbouring relation.

    Returns
    -------
    sensitivity : float
        Positive (the smallest positive float for a degenerate box, where the
        sums carry no information and any noise is private).
    """
    _check_model(model)
    half = np.abs(np.asarray(half, dtype=np.float64))
    base = float(np.abs(half).sum()) if norm == 1 else float(np.linalg.norm(half))
    factor = 1.0 if model == "central" else 2.0
    return max(factor * base, np.finfo(float).tiny)


def tree_level_sensitivity():
    """L1 sensitivity of one level of a quadtree's cell counts (central model): ``1``.

    The cells of a level partition the box and a record lies in exactly one,
    so adding a record raises one count of each level by one. Releasing the
    ``n_levels`` levels is ``n_levels`` releases of sensitivity 1 (total L1
    sensitivity ``n_levels``). Worst pair: any ``D`` and ``D`` plus a record.
    Pruning does not change it: a cell that is not released has no count.
    """
    return 1.0


def continual_count_sensitivity(n_levels, max_steps):
    """L1 sensitivity of all noisy (cell, time-interval) counts of a stream.

    The binary-tree mechanism keeps, for every cell of levels ``0..n_levels``
    and every dyadic interval of steps ``[i 2^j, (i + 1) 2^j)`` with
    ``j < H = floor(log2 max_steps) + 1``, the number of records of the
    cell that arrived in the interval. A record arriving at step ``s`` lies
    in one cell per level and in one interval per height, so it changes
    ``(n_levels + 1) * H`` counts by one. Worst pair: the stream and the same
    stream plus one record at any step.
    """
    return float((int(n_levels) + 1) * (int(max_steps).bit_length()))


def continual_sum_sensitivity(value_bound, norm, n_levels, max_steps):
    """Sensitivity of all noisy (cell, interval) sums of a stream's values.

    Sums are kept for levels ``1..n_levels`` (``H`` intervals each, as in
    :func:`continual_count_sensitivity`): one record changes
    ``m = n_levels * H`` sums, each by its value ``v`` with
    ``||v||_p <= value_bound``. L1: ``m * value_bound``; L2:
    ``sqrt(m) * value_bound``. Worst pair: the stream plus one record whose
    value has the largest norm.
    """
    m = int(n_levels) * int(max_steps).bit_length()
    return float(value_bound) * (m if norm == 1 else math.sqrt(m))
