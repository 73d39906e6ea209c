"""Davidson's tie model on top of fitted Bradley-Terry scores: ties as an outcome class.

Davidson (1970) extends the Bradley-Terry model with a tie parameter ``nu``::

    P(first wins)  = exp(d / 2) / D
    P(second wins) = exp(-d / 2) / D
    P(tie)         = nu / D,        D = exp(d / 2) + exp(-d / 2) + nu,

where ``d`` is the Bradley-Terry logit of the battle (without ties, ``nu = 0``,
``P(first wins)`` is the logistic function of ``d``). Here ``d`` comes from the
fitted ratings and ``log(nu)`` is its maximum-likelihood value given them: the
log-likelihood is concave in ``log(nu)`` and its derivative,
``sum_k w_k (tie_k - P_k(tie))``, decreases strictly, so the root is found by
bracketing (no iteration limit to reach).

Reference: R. R. Davidson, "On extending the Bradley-Terry model to accommodate
ties in paired comparison experiments", Journal of the American Statistical
Association 65(329), 317-328, 1970.
"""

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

__all__ = ["davidson_log_proba", "fit_davidson_tie"]


def davidson_log_proba(d, log_nu):
    """Log-probabilities ``(first wins, second wins, tie)`` of Davidson's model, shape ``(len(d), 3)``."""
    d = np.asarray(d, dtype=np.float64).reshape(-1)
    logits = np.column_stack([d / 2, -d / 2, np.full(len(d), float(log_nu))])
    return logits - logsumexp(logits, axis=1, keepdims=True)


def _tie_score(log_nu, d, w, n_ties):
    """Derivative of the log-likelihood in ``log(nu)``: observed minus expected weighted ties."""
    return n_ties - float(np.dot(w, np.exp(davidson_log_proba(d, log_nu)[:, 2])))


def fit_davidson_tie(d, tie, w):
    """Maximum-likelihood ``log(nu)`` of Davidson's model with the logits ``d`` held fixed.

    Parameters
    ----------
    d : ndarray of shape (n,)
        Bradley-Terry logits (first minus second) of the battles.
    tie : ndarray of bool of shape (n,)
        Whether each battle was a tie.
    w : ndarray of shape (n,)
        Battle weights.

    Returns
    -------
    float
        ``log(nu)``; the maximiser exists when some but not all of the
        weight is on ties (the caller checks).
    """
    d, w = np.asarray(d, dtype=np.float64), np.asarray(w, dtype=np.float64)
    n_ties = float(w[np.asarray(tie, dtype=bool)].sum())
    lo, hi = -1.0, 1.0
    while _tie_score(lo, d, w, n_ties) <= 0:  # expected ties exceed the observed: go lower
        lo *= 2
    while _tie_score(hi, d, w, n_ties) >= 0:
        hi *= 2
    return float(brentq(_tie_score, lo, hi, args=(d, w, n_ties), xtol=1e-12, rtol=4 * np.finfo(float).eps))
