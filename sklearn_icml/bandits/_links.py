"""Link functions of the generalized linear dueling model, ``P(i beats j) = mu(phi_ij . theta)``.

Every link satisfies ``mu(x) + mu(-x) = 1``, so antisymmetric pair features
(``phi_ji = -phi_ij``) give consistent preferences ``p_ji = 1 - p_ij``. Each
link also carries ``m``, an antiderivative of ``mu``: the GLM estimate solves
``sum_t (mu(phi_t . theta) - r_t) phi_t = 0``, which is the gradient of the
convex objective ``sum_t m(phi_t . theta) - r_t phi_t . theta``.
"""

import numpy as np
from scipy.special import expit, logit, ndtr, ndtri

__all__ = ["LINKS", "get_link"]

_SQRT_2PI = np.sqrt(2.0 * np.pi)


class _Link:
    """A link function with its derivative, antiderivative and inverse."""

    def __init__(self, name, mu, dmu, m, inverse):
        self.name = name
        self.mu = mu
        self.dmu = dmu
        self.m = m
        self.inverse = inverse

    def proba(self, x):
        """``mu(x)`` clipped to [0, 1] (only the linear link needs the clip)."""
        return np.clip(self.mu(x), 0.0, 1.0)


def _logistic_dmu(x):
    p = expit(x)
    return p * (1.0 - p)


def _probit_dmu(x):
    return np.exp(-0.5 * np.square(x)) / _SQRT_2PI


def _probit_m(x):
    return x * ndtr(x) + _probit_dmu(x)


LINKS = {
    "logistic": _Link("logistic", expit, _logistic_dmu, lambda x: np.logaddexp(0.0, x), logit),
    "probit": _Link("probit", ndtr, _probit_dmu, _probit_m, ndtri),
    # mu(x) = 1/2 + x: the linear (adversarial) setting of the paper; probabilities need |x| <= 1/2
    "linear": _Link("linear", lambda x: 0.5 + np.asarray(x, dtype=float), lambda x: np.ones_like(x, dtype=float),
                    lambda x: 0.5 * x + 0.5 * np.square(x), lambda p: np.asarray(p, dtype=float) - 0.5),
}


def get_link(name):
    """The :class:`_Link` called ``name`` ("logistic", "probit" or "linear")."""
    try:
        return LINKS[name]
    except KeyError:
        raise ValueError(f"link must be one of {sorted(LINKS)}; got {name!r}.") from None
