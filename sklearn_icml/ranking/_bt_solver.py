"""Bradley-Terry maximum likelihood on aggregated battles: buckets, Newton, sandwich, bootstrap.

Everything here works on *buckets*: the distinct (first, second, outcome,
covariates, inverse-probability weight) rows of the data with their summed
frequency, so a million battles over 50 competitors cost what their few
thousand distinct rows cost (the aggregation FastChat adopted in its PR 3523).
"""

import numpy as np
from scipy import linalg
from scipy.special import expit

from ._battles import pair_graph_report

#: Newton steps this small (max-norm) are taken whole: the line search cannot resolve their decrease.
_FULL_STEP = 1e-6


class Buckets:
    """Distinct battles with their weights.

    Attributes
    ----------
    a, b : ndarray of int
        Codes of the first and second competitor.
    y : ndarray of float
        Outcome for the first competitor (1, 0.5 or 0).
    Z : ndarray of shape (K, p)
        Covariates.
    freq : ndarray of float
        Summed frequency (sample) weight.
    ipw : ndarray of float
        Inverse-sampling-probability weight of the bucket (1 without reweighting).
    """

    def __init__(self, a, b, y, Z, freq, ipw):
        self.a, self.b, self.y, self.Z, self.freq, self.ipw = a, b, y, Z, freq, ipw

    def loss_weight(self, freq=None):
        return (self.freq if freq is None else freq) * self.ipw

    def meat_weight(self, freq=None):
        return (self.freq if freq is None else freq) * self.ipw ** 2

    def __len__(self):
        return len(self.a)


def aggregate(codes, score, Z, freq, ipw, n_items, return_inverse=False):
    """Collapse identical battles into :class:`Buckets` (exact: the likelihood only sees sums).

    With ``return_inverse``, also the bucket of every battle.
    """
    a, b = codes[:, 0], codes[:, 1]
    ycode = np.rint(2 * score).astype(np.int64)  # 0, 1, 2
    key = (a.astype(np.int64) * n_items + b) * 3 + ycode
    uniform_ipw = ipw is None or np.all(ipw == ipw[0])
    if Z.shape[1] == 0 and uniform_ipw:
        n_keys = n_items * n_items * 3
        if n_keys <= max(4 * len(key), 1 << 16):
            counts = np.bincount(key, weights=freq, minlength=n_keys)
            present = np.bincount(key, minlength=n_keys) > 0
            uniq = np.flatnonzero(present)
            f = counts[uniq]
            inv = np.searchsorted(uniq, key) if return_inverse else None
        else:
            uniq, inv = np.unique(key, return_inverse=True)
            f = np.bincount(inv, weights=freq, minlength=len(uniq))
        w = np.full(len(uniq), 1.0 if ipw is None else float(ipw[0]))
        Zu = np.zeros((len(uniq), 0))
    else:
        table = np.column_stack([key.astype(np.float64), np.ones(len(key)) if ipw is None else ipw, Z])
        rows, inv = np.unique(table, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        f = np.bincount(inv, weights=freq, minlength=len(rows))
        uniq = rows[:, 0].astype(np.int64)
        w = rows[:, 1]
        Zu = np.ascontiguousarray(rows[:, 2:])
    y = (uniq % 3) / 2.0
    ab = uniq // 3
    buckets = Buckets(ab // n_items, ab % n_items, y, Zu, f, w)
    return (buckets, inv.reshape(-1)) if return_inverse else buckets


def gram(a, b, w, Z, n_items):
    """sum_k w_k x_k x_k^T with x_k = (e_a - e_b, z_k): the Fisher-information pattern of the BT logit."""
    M, p = n_items, Z.shape[1]
    W = np.bincount(a * M + b, weights=w, minlength=M * M).reshape(M, M)
    S = W + W.T
    H = np.zeros((M + p, M + p))
    H[:M, :M] = np.diag(S.sum(axis=1)) - S
    if p:
        wZ = w[:, None] * Z
        cross = np.empty((M, p))
        for j in range(p):
            cross[:, j] = np.bincount(a, weights=wZ[:, j], minlength=M) - np.bincount(b, weights=wZ[:, j], minlength=M)
        H[:M, M:] = cross
        H[M:, :M] = cross.T
        H[M:, M:] = Z.T @ wZ
    return H


def _eta(theta, a, b, Z, M):
    eta = theta[a] - theta[b]
    if Z.shape[1]:
        eta = eta + Z @ theta[M:]
    return eta


def _objective(theta, a, b, y, n, Z, M, alpha):
    eta = _eta(theta, a, b, Z, M)
    return float(np.dot(n, np.logaddexp(0.0, eta) - y * eta) + alpha * np.dot(theta, theta))


def _augment(H, M):
    """Add c * 11^T / M on the score block: removes the shift null-space without moving the optimum."""
    c = 1.0 + np.trace(H[:M, :M]) / max(M, 1)
    H = H.copy()
    H[:M, :M] += c / M
    return H


def _solve(H, g):
    try:
        return linalg.cho_solve(linalg.cho_factor(H, check_finite=False), g, check_finite=False)
    except linalg.LinAlgError:
        return np.linalg.lstsq(H, g, rcond=None)[0]


def newton(a, b, y, n, Z, n_items, alpha, *, theta0=None, tol=1e-10, max_iter=100, verbose=0, name=""):
    """Penalized BT maximum likelihood by damped Newton steps.

    Minimises ``sum_k n_k [log(1 + exp(eta_k)) - y_k eta_k] + alpha ||theta||^2``
    with ``eta_k = xi_{a_k} - xi_{b_k} + z_k . gamma``, keeping ``sum(xi) = 0``.

    Returns
    -------
    theta : ndarray of shape (n_items + p,)
    n_iter : int
    converged : bool
    """
    M = n_items
    D = M + Z.shape[1]
    theta = np.zeros(D) if theta0 is None else np.array(theta0, dtype=np.float64)
    theta[:M] -= theta[:M].mean() if M else 0.0
    f = _objective(theta, a, b, y, n, Z, M, alpha)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        eta = _eta(theta, a, b, Z, M)
        p = expit(eta)
        r = n * (p - y)
        g = 2.0 * alpha * theta
        g[:M] += np.bincount(a, weights=r, minlength=M) - np.bincount(b, weights=r, minlength=M)
        if D > M:
            g[M:] += Z.T @ r
        H = gram(a, b, n * p * (1.0 - p), Z, M)
        H[np.diag_indices(D)] += 2.0 * alpha
        step = -_solve(_augment(H, M), g)
        slope = float(g @ step)
        t = 1.0
        move = None
        for _ in range(60):
            f_new = _objective(theta + t * step, a, b, y, n, Z, M, alpha)
            if f_new <= f + 1e-4 * t * slope:
                break
            if t * np.max(np.abs(step), initial=0.0) <= tol:
                # the objective's rounding hides the decrease of a tiny step: converged, and a full step this
                # small is taken whole (Newton's quadratic accuracy instead of an iterate tol short of the optimum)
                if np.max(np.abs(step), initial=0.0) <= _FULL_STEP:
                    move = step
                    f_new = _objective(theta + step, a, b, y, n, Z, M, alpha)
                break
            t *= 0.5
        theta = theta + (t * step if move is None else move)
        theta[:M] -= theta[:M].mean() if M else 0.0
        change = t * np.max(np.abs(step), initial=0.0)
        if verbose:
            print(f"[{name}] Newton iter {it:3d}  objective {f_new:.10g}  max step {change:.3g}")
        f = f_new
        if change <= tol:
            converged = True
            break
    return theta, it, converged


def sandwich(theta, buckets, n_items, alpha, freq=None):
    """Huber-White covariance H^-1 G H^-1 of the (centred) BT parameters.

    ``H`` is the penalized Hessian of the weighted loss and ``G`` the sum of
    squared per-battle scores ``sum_t w_t^2 (y_t - p_t)^2 x_t x_t^T`` (with
    inverse-probability weights ``w_t``). The shift direction of the scores is
    removed, so the result is the covariance of the sum-to-zero scores.
    """
    M = n_items
    bk = buckets
    eta = _eta(theta, bk.a, bk.b, bk.Z, M)
    p = expit(eta)
    H = gram(bk.a, bk.b, bk.loss_weight(freq) * p * (1 - p), bk.Z, M)
    H[np.diag_indices(len(theta))] += 2.0 * alpha
    G = gram(bk.a, bk.b, bk.meat_weight(freq) * (bk.y - p) ** 2, bk.Z, M)
    Hinv = np.linalg.inv(_augment(H, M))
    V = Hinv @ G @ Hinv
    return (V + V.T) / 2.0


def mle_problem(buckets, n_items, items, freq=None):
    """The graph report (see :func:`pair_graph_report`) on the buckets with positive weight."""
    f = buckets.freq if freq is None else freq
    keep = f > 0
    return pair_graph_report(n_items, buckets.a[keep], buckets.b[keep], buckets.y[keep], items)


def _refit(f, buckets, n_items, alpha, theta0, tol, max_iter, check_mle):
    """The fit on the bucket frequencies ``f`` of one resample; None where the MLE does not exist."""
    keep = f > 0
    if check_mle and mle_problem(buckets, n_items, np.arange(n_items), freq=f) is not None:
        return None
    bk = buckets
    theta, _, _ = newton(bk.a[keep], bk.b[keep], bk.y[keep], bk.loss_weight(f)[keep], bk.Z[keep], n_items,
                         alpha, theta0=theta0, tol=tol, max_iter=max_iter)
    return theta


def bootstrap_chunk(seeds, buckets, n_items, n_draws, alpha, theta0, tol, max_iter, check_mle, rows=None):
    """Refit on multinomial resamples (one per seed); NaN rows where the MLE does not exist.

    Without ``rows``, ``n_draws`` battles are drawn from the buckets in proportion to their frequencies
    (resampling the aggregated counts). With ``rows = (bucket, weight, count)``, the rows of the battle log
    are resampled: ``n_draws`` rows drawn uniformly with replacement, where ``count`` rows of weight ``weight``
    fall in ``bucket`` (rows with the same bucket and weight are interchangeable, so drawing among these
    groups is drawing among the rows).
    """
    if rows is None:
        probs = buckets.freq / buckets.freq.sum()
    else:
        bucket, weight, count = rows
        probs = count / count.sum()
    out = np.full((len(seeds), len(theta0)), np.nan)
    for i, seed in enumerate(seeds):
        draw = np.random.RandomState(seed).multinomial(n_draws, probs).astype(np.float64)
        f = draw if rows is None else np.bincount(bucket, weights=weight * draw, minlength=len(buckets))
        theta = _refit(f, buckets, n_items, alpha, theta0, tol, max_iter, check_mle)
        if theta is not None:
            out[i] = theta
    return out


def refit_chunk(freqs, buckets, n_items, alpha, theta0, tol, max_iter, check_mle):
    """Refit on resamples given as bucket frequencies (rows of ``freqs``); NaN rows where the MLE does not exist."""
    out = np.full((len(freqs), len(theta0)), np.nan)
    for i, f in enumerate(freqs):
        theta = _refit(f, buckets, n_items, alpha, theta0, tol, max_iter, check_mle)
        if theta is not None:
            out[i] = theta
    return out
