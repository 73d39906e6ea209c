"""Exact minimisation of a convex quadratic over the probability simplex, batched.

``min_w w' G w  subject to  w >= 0, sum(w) = 1`` for a stack of small
positive semi-definite matrices ``G`` (one per explained input, ``k`` = number
of attribution methods, typically 2 to 10).

The solver enumerates the supports ``S`` of ``w``. On a support, the
Karush-Kuhn-Tucker conditions of the problem restricted to the affine hull
``{w_S : sum(w_S) = 1}`` are the bordered linear system

    [G_SS 1; 1' 0] [w_S; -nu] = [0; 1],

solved with a pseudo-inverse so that singular ``G`` (identical or zero maps)
is handled. Every solution that is non-negative and solves the system is a
feasible point; the answer is the feasible point of smallest objective. This is
exact: the support ``S*`` of minimal size among the optima carries a unique
minimiser of the restricted problem (otherwise a line of minimisers would reach
a smaller support), so its system is non-singular and its solution is the
optimum. The vertices (``|S| = 1``) are always candidates, so the value
returned never exceeds ``min_i G_ii``: the combination is never worse than the
best single method on the matrix it was fitted on.

All supports of one size are solved in one batched call; the cost is
``2**k - 1`` small solves per input, which is why ``k`` is capped at
:data:`MAX_METHODS`.
"""

from itertools import combinations

import numpy as np

__all__ = ["MAX_METHODS", "solve_simplex_qp"]

#: Largest number of methods the exact solver accepts (4095 supports per input).
MAX_METHODS = 12

_CHUNK = 2_000_000  # (inputs x supports x (s+1)^2) elements per batched solve


def solve_simplex_qp(G, *, tol=1e-9):
    """Minimise ``w' G w`` over the probability simplex, for each matrix of a stack.

    Parameters
    ----------
    G : ndarray of shape (n, k, k) or (k, k)
        Symmetric positive semi-definite matrices (symmetrised here).
    tol : float, default=1e-9
        Feasibility tolerance, relative to the scale of each matrix.

    Returns
    -------
    w : ndarray of shape (n, k) or (k,)
        Optimal weights (non-negative, summing to one).
    value : ndarray of shape (n,) or float
        ``w' G w`` at the optimum.
    """
    G = np.asarray(G, dtype=np.float64)
    single = G.ndim == 2
    if single:
        G = G[None]
    if G.ndim != 3 or G.shape[1] != G.shape[2]:
        raise ValueError(f"solve_simplex_qp: G must have shape (n, k, k); got {G.shape}.")
    n, k, _ = G.shape
    if k > MAX_METHODS:
        raise ValueError(f"solve_simplex_qp: the exact solver handles at most {MAX_METHODS} methods; got {k}.")
    if not np.all(np.isfinite(G)):
        raise ValueError("solve_simplex_qp: G has non-finite entries.")
    G = 0.5 * (G + G.transpose(0, 2, 1))
    diag = np.einsum("nii->ni", G)
    scale = np.abs(diag).max(axis=1)
    scale = np.where(scale > 0, scale, 1.0)
    Gs = G / scale[:, None, None]

    # vertices first: always feasible, ties keep the smallest support and the first method
    best_idx = np.argmin(np.einsum("nii->ni", Gs), axis=1)
    best_w = np.zeros((n, k))
    best_w[np.arange(n), best_idx] = 1.0
    best_val = np.einsum("nii->ni", Gs)[np.arange(n), best_idx]

    for size in range(2, k + 1):
        supports = np.array(list(combinations(range(k), size)))  # (C, s)
        per_input = len(supports) * (size + 1) ** 2
        step = max(1, _CHUNK // per_input)
        for start in range(0, n, step):
            sl = slice(start, min(start + step, n))
            w, val = _solve_supports(Gs[sl], supports, tol)
            better = val < best_val[sl] - 1e-15 * np.maximum(1.0, np.abs(best_val[sl]))
            if np.any(better):
                idx = np.nonzero(better)[0] + start
                best_val[idx] = val[better]
                best_w[idx] = w[better]
    value = np.einsum("ni,nij,nj->n", best_w, G, best_w)
    if single:
        return best_w[0], float(value[0])
    return best_w, value


def _solve_supports(Gs, supports, tol):
    """Best feasible KKT point over the given supports (all of one size) for each matrix."""
    n, k, _ = Gs.shape
    c, s = supports.shape
    sub = Gs[:, supports[:, :, None], supports[:, None, :]]  # (n, C, s, s)
    K = np.zeros((n, c, s + 1, s + 1))
    K[..., :s, :s] = sub
    K[..., :s, s] = 1.0
    K[..., s, :s] = 1.0
    rhs = np.zeros(s + 1)
    rhs[s] = 1.0
    sol = np.linalg.pinv(K, rcond=1e-12, hermitian=True) @ rhs  # (n, C, s + 1)
    resid = np.abs(np.einsum("ncij,ncj->nci", K, sol) - rhs).max(axis=-1)
    w_s = sol[..., :s]
    feasible = (w_s >= -tol).all(axis=-1) & (resid <= 1e-7)
    w_s = np.clip(w_s, 0.0, None)
    total = w_s.sum(axis=-1, keepdims=True)
    feasible &= total[..., 0] > 0
    w_s = w_s / np.where(total > 0, total, 1.0)
    val = np.einsum("nci,ncij,ncj->nc", w_s, sub, w_s)
    val = np.where(feasible, val, np.inf)
    best = np.argmin(val, axis=1)  # (n,)
    rows = np.arange(n)
    w = np.zeros((n, k))
    w[rows[:, None], supports[best]] = w_s[rows, best]
    return w, val[rows, best]
