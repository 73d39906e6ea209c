"""The certified lower bound on W1(g#U, training data) of a left-invertible generator.

If ``h`` is L-Lipschitz and ``eps = E_Z ||h(g(Z)) - Z||`` for ``Z ~ U``, then for
the empirical law ``P_n`` of n training points

    e_n(U) <= W1(U, h#P_n) <= W1(U, h#g#U) + W1(h#g#U, h#P_n) <= eps + L * W1(g#U, P_n),

because ``h#P_n`` sits on at most n points (so it is at least the n-point
quantisation error ``e_n(U)`` away from U), the coupling ``(Z, h(g(Z)))``
moves U to ``h#g#U`` at cost ``eps``, and an L-Lipschitz map contracts W1 by
L. Hence ``W1(g#U, P_n) >= (e_n(U) - eps) / L``.

``e_n`` is bounded below by covering: n balls of radius r hold at most
``n V_d r^d f_max`` of a law whose density is at most ``f_max``, so
``E min_i ||Z - y_i|| >= int_0^{r_0} (1 - n V_d f_max r^d) dr = d / (d + 1) r_0``
with ``r_0 = (n V_d f_max)^{-1/d}`` and ``V_d`` the volume of the unit ball.
"""

import math

import numpy as np
from scipy.special import gammaln
from scipy.stats import norm

__all__ = ["INVERSE_ERROR_CONFIDENCE", "certified_lower_bound", "inverse_error_upper", "quantization_error_lower"]

#: Confidence of the upper bound on the inverse error (one-sided, normal approximation of the mean).
INVERSE_ERROR_CONFIDENCE = 0.999


def _log_latent_density_max(latent_distribution, d):
    if latent_distribution == "gaussian":  # standard normal: (2 pi)^{-d/2} at the origin
        return -0.5 * d * math.log(2.0 * math.pi)
    if latent_distribution == "uniform":  # uniform on [0, 1]^d
        return 0.0
    raise ValueError(f"latent_distribution must be 'gaussian' or 'uniform'; got {latent_distribution!r}.")


def quantization_error_lower(n, d, latent_distribution="gaussian"):
    """Lower bound ``d / (d + 1) (n V_d f_max)^{-1/d}`` on the n-point quantisation error e_n(U).

    Parameters
    ----------
    n : int
        Number of points (training samples).
    d : int
        Latent dimension.
    latent_distribution : {"gaussian", "uniform"}
        Standard normal, or uniform on ``[0, 1]^d``.

    Returns
    -------
    float
        The bound (computed in logarithms, stable for large d).
    """
    n, d = int(n), int(d)
    if n < 1 or d < 1:
        raise ValueError(f"quantization_error_lower: n and d must be >= 1; got n={n}, d={d}.")
    log_ball = 0.5 * d * math.log(math.pi) - float(gammaln(0.5 * d + 1.0))
    log_mass = math.log(n) + log_ball + _log_latent_density_max(latent_distribution, d)
    return d / (d + 1.0) * math.exp(-log_mass / d)


def inverse_error_upper(errors, confidence=INVERSE_ERROR_CONFIDENCE):
    """Mean of Monte Carlo errors ``||h(g(Z_i)) - Z_i||`` and its one-sided upper confidence bound.

    Parameters
    ----------
    errors : array-like of shape (m,)
        Errors at m independent latent draws.
    confidence : float, default=0.999
        Level of the normal-approximation bound ``mean + z * std / sqrt(m)``.

    Returns
    -------
    mean : float
        The estimate of ``E ||h(g(Z)) - Z||``.
    upper : float
        Its upper confidence bound.
    """
    errors = np.asarray(errors, dtype=np.float64)
    mean = float(errors.mean())
    spread = float(errors.std(ddof=1)) if len(errors) > 1 else 0.0
    return mean, mean + float(norm.ppf(confidence)) * spread / math.sqrt(len(errors))


def certified_lower_bound(quantization_lower, inverse_error, lipschitz):
    """``max(0, (e_n - eps) / L)``; 0 when L is infinite or not finite."""
    if not math.isfinite(lipschitz) or lipschitz <= 0:
        return 0.0
    return max(0.0, (quantization_lower - inverse_error) / lipschitz)
