"""G-optimal experimental design over a finite set of feature vectors (Kiefer-Wolfowitz)."""

from numbers import Integral, Real

import numpy as np
from scipy import linalg

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["g_optimal_design", "leverages"]


def leverages(features, weights):
    """``phi_a^T A(pi)^+ phi_a`` for every row, with ``A(pi) = sum_a pi_a phi_a phi_a^T``."""
    features = np.asarray(features, dtype=np.float64)
    A = (features * weights[:, None]).T @ features
    return np.einsum("ij,jk,ik->i", features, linalg.pinvh(A), features)


@validate_params(
    {
        "features": ["array-like"],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def g_optimal_design(features, *, tol=1e-3, max_iter=100_000):
    """A G-optimal design: weights on the rows that minimise the largest leverage.

    The design ``pi`` (a probability vector over the rows ``phi_a``) makes
    ``max_a phi_a^T A(pi)^{-1} phi_a`` as small as possible, where
    ``A(pi) = sum_a pi_a phi_a phi_a^T``. By the Kiefer-Wolfowitz theorem
    the optimum is the D-optimal design and the smallest maximal leverage
    equals the dimension ``r`` of the span of the rows. The design is found
    by the Frank-Wolfe (Fedorov-Wynn) algorithm with Wolfe-Atwood away steps,
    exact line searches and rank-one updates of ``A^{-1}`` and of all
    leverages, started from ``r`` well-spread rows (column-pivoted QR), until the largest leverage is at
    most ``r (1 + tol)``. :class:`BordaETC` samples its exploration duels
    from this design over the pair features.

    Parameters
    ----------
    features : array-like of shape (n_points, n_features)
        The candidate vectors (e.g. the distinct pair features ``phi_ij``).
        Rows that are zero never get weight.
    tol : float, default=1e-3
        Relative tolerance on the largest leverage.
    max_iter : int, default=100_000
        Maximum number of Frank-Wolfe steps.

    Returns
    -------
    weights : ndarray of shape (n_points,)
        The design, summing to 1.
    max_leverage : float
        ``max_a phi_a^T A(pi)^+ phi_a`` at the returned design (recomputed
        exactly); at most ``rank * (1 + tol)`` unless ``max_iter`` ran out.

    Notes
    -----
    When the rows do not span the whole space, the design is computed in
    their span (``A^+`` replaces ``A^{-1}`` and the target is the rank).
    Scaling every row by one factor changes neither the design nor the
    leverages, so the features are first divided by their largest absolute
    entry: designs over tiny or huge features are those of the rescaled ones.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", ICML 2024.
    .. [2] J. Kiefer and J. Wolfowitz, "The Equivalence of Two Extremum
       Problems", Canadian Journal of Mathematics 12, 1960.
    .. [3] M. J. Todd, "Minimum-Volume Ellipsoids: Theory and Algorithms",
       SIAM, 2016 (Wolfe-Atwood away steps).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.bandits import g_optimal_design
    >>> features = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.2, 0.1]])
    >>> weights, max_leverage = g_optimal_design(features)
    >>> weights.round(3), round(max_leverage, 3)
    (array([0.5, 0.5, 0. , 0. ]), 2.0)
    """
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2 or features.shape[0] == 0:
        raise ValueError(f"g_optimal_design: features must be a non-empty 2-D array; got shape {features.shape}.")
    if not np.all(np.isfinite(features)):
        raise ValueError("g_optimal_design: features contain NaN or infinity.")
    n = features.shape[0]
    nonzero = np.any(features != 0, axis=1)
    if not nonzero.any():
        raise ValueError("g_optimal_design: every feature vector is zero; there is nothing to design.")
    # the design and the leverages do not change when all rows are scaled by one factor: bring the largest
    # entry to 1 so that tiny (1e-200) or huge (1e200) features neither underflow nor overflow in A(pi)
    features = features / np.abs(features).max()
    nonzero = np.any(features != 0, axis=1)
    # work in the span of the rows, in an orthonormal basis
    _, s, Vt = linalg.svd(features[nonzero], full_matrices=False)
    rank = int(np.sum(s > s[0] * max(features.shape) * np.finfo(float).eps))
    Z = features[nonzero] @ Vt[:rank].T
    m = Z.shape[0]
    # start on r well-spread points (the pivots of a column-pivoted QR), so the support stays small
    _, _, pivots = linalg.qr(Z.T, mode="economic", pivoting=True)
    pi = np.zeros(m)
    pi[pivots[:rank]] = 1.0 / rank
    target = rank * (1.0 + tol)

    def exact(pi):
        M = linalg.inv((Z * pi[:, None]).T @ Z)
        return M, np.einsum("ij,jk,ik->i", Z, M, Z)

    M, g = exact(pi)
    for it in range(max_iter):
        a = int(np.argmax(g))
        if g[a] <= target:
            break
        support = pi > 0
        b = int(np.flatnonzero(support)[np.argmin(g[support])])
        if g[a] - rank >= rank - g[b] or pi[b] >= 1.0:
            # toward step on a: pi <- (1 - lam) pi + lam e_a, exact line search for log det
            lam = (g[a] / rank - 1.0) / (g[a] - 1.0)
            u = M @ Z[a]
            c = lam / (1.0 - lam)
            denom = 1.0 + c * g[a]
            proj = Z @ u
            M = (M - (c / denom) * np.outer(u, u)) / (1.0 - lam)
            g = (g - (c / denom) * proj ** 2) / (1.0 - lam)
            pi *= 1.0 - lam
            pi[a] += lam
        else:
            # away step from b: pi <- (1 + beta) pi - beta e_b, capped to drop b entirely
            cap = pi[b] / (1.0 - pi[b])
            beta = cap if g[b] <= 1.0 else min((rank - g[b]) / (rank * (g[b] - 1.0)), cap)
            u = M @ Z[b]
            c = beta / (1.0 + beta)
            denom = 1.0 - c * g[b]
            if denom <= 1e-12:  # dropping b would make A singular: take a toward step instead
                lam = (g[a] / rank - 1.0) / (g[a] - 1.0)
                pi *= 1.0 - lam
                pi[a] += lam
                M, g = exact(pi)
                continue
            proj = Z @ u
            M = (M + (c / denom) * np.outer(u, u)) / (1.0 + beta)
            g = (g + (c / denom) * proj ** 2) / (1.0 + beta)
            pi *= 1.0 + beta
            pi[b] -= beta
            if beta == cap:
                pi[b] = 0.0
        if it % 200 == 199:  # wash out the round-off of the rank-one updates
            pi = np.clip(pi, 0.0, None)
            pi /= pi.sum()
            M, g = exact(pi)
    pi = np.clip(pi, 0.0, None)
    pi /= pi.sum()
    weights = np.zeros(n)
    weights[nonzero] = pi
    _, g = exact(pi)
    return weights, float(g.max())
