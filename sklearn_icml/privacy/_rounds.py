"""Privacy of repeated Gaussian releases: epsilon of ``n_rounds`` full-batch Gaussian rounds and its inverse.

Private Evolution releases one Gaussian-noised histogram per round, each with
L2 sensitivity 1 (in units of the per-user cap) and noise multiplier
``sigma``. Two accountants from Google's ``dp-accounting`` compose them:

* ``"rdp"``: Rényi DP over the library's default orders, converted to
  (epsilon, delta): what the PrE-Text release reports (sigma 11.3 over 11
  rounds at delta 3e-6 gives epsilon 1.29; sigma 2.31 gives 7.58);
* ``"pld"``: the privacy-loss distribution, tight. ``n_rounds`` Gaussian
  releases of noise multiplier ``sigma`` are exactly one Gaussian release of
  noise multiplier ``sigma / sqrt(n_rounds)`` (the privacy loss of a Gaussian
  is Gaussian and composes by adding means and variances), so the PLD of that
  single release is accounted: the same answer as composing the rounds one by
  one, in a fraction of the time. Above epsilon = 1000 (no privacy to speak
  of) the analytic Gaussian's exact epsilon is returned instead, where the
  PLD's grid would overflow.
"""

import math
from numbers import Integral

import numpy as np

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ._validation import DELTA_POSITIVE, EPSILON, POSITIVE

__all__ = ["gaussian_rounds_epsilon", "gaussian_rounds_noise_multiplier"]

_ACCOUNTANTS = {"pld", "rdp"}
#: smallest noise multiplier of the single equivalent release (``noise_multiplier / sqrt(n_rounds)``) whose
#: epsilon dp-accounting computes (about 5e299 at delta=1e-6; below, its root finder fails to converge)
_MIN_SINGLE_MULTIPLIER = 1e-150


def _dp_accounting():
    try:
        import dp_accounting
    except ImportError as exc:  # a core dependency; a broken install should say what is missing
        raise ImportError("sklearn_icml.privacy needs the 'dp-accounting' package to compose Gaussian rounds; "
                          "install it with `pip install dp-accounting`.") from exc
    return dp_accounting


def _epsilon(noise_multiplier, n_rounds, delta, accountant):
    # dp-accounting's root finders take logs of 0 at the extremes (a noise multiplier far above or below any
    # useful one) and still return the right limit
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _epsilon_raw(noise_multiplier, n_rounds, delta, accountant)


def _epsilon_raw(noise_multiplier, n_rounds, delta, accountant):
    dp = _dp_accounting()
    if accountant == "rdp":
        acc = dp.rdp.RdpAccountant()
        acc.compose(dp.GaussianDpEvent(noise_multiplier), int(n_rounds))
        return float(acc.get_epsilon(delta))
    single = noise_multiplier / math.sqrt(n_rounds)
    # the PLD's cost grows with the privacy loss's range: discretise relative to the answer (1e-4 of it)
    analytic = float(dp.get_epsilon_gaussian(single, delta))
    if analytic > 1e3:  # beyond any meaningful budget the PLD grid overflows; the analytic Gaussian is exact
        return analytic
    scale = max(1.0, analytic)
    acc = dp.pld.PLDAccountant(value_discretization_interval=1e-4 * scale)
    acc.compose(dp.GaussianDpEvent(single))
    return float(acc.get_epsilon(delta))


@validate_params(
    {
        "noise_multiplier": POSITIVE,
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "delta": DELTA_POSITIVE,
        "accountant": [StrOptions(_ACCOUNTANTS)],
    },
    prefer_skip_nested_validation=True,
)
def gaussian_rounds_epsilon(noise_multiplier, n_rounds, delta, *, accountant="pld"):
    """Epsilon of ``n_rounds`` Gaussian releases of sensitivity 1 and noise std ``noise_multiplier``.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation over the L2 sensitivity, in (0, inf).
    n_rounds : int
        Number of releases composed (full batch: every record takes part in
        each).
    delta : float
        Target delta, in (0, 1).
    accountant : {"pld", "rdp"}, default="pld"
        "pld": privacy-loss distribution (tight); "rdp": Rényi DP, as the
        PrE-Text release accounts.

    Returns
    -------
    float
        The epsilon of the composition.

    See Also
    --------
    gaussian_rounds_noise_multiplier : The inverse.

    Notes
    -----
    Neighbouring datasets differ by adding or removing one record (one
    user's capped contribution in Private Evolution).

    Examples
    --------
    >>> from sklearn_icml.privacy import gaussian_rounds_epsilon
    >>> round(gaussian_rounds_epsilon(11.3, 11, 3e-6, accountant="rdp"), 2)
    1.29
    """
    if not math.isfinite(noise_multiplier):
        raise ValueError(f"gaussian_rounds_epsilon: noise_multiplier must be finite; got {noise_multiplier!r}.")
    smallest = _MIN_SINGLE_MULTIPLIER * math.sqrt(n_rounds)
    eps = math.inf
    if noise_multiplier >= smallest:
        try:
            eps = _epsilon(float(noise_multiplier), int(n_rounds), float(delta), accountant)
        except RuntimeError:  # dp-accounting's root finder, beyond float64's range of epsilons
            pass
    if not math.isfinite(eps):
        raise ValueError(
            f"gaussian_rounds_epsilon: noise_multiplier={noise_multiplier!r} over {n_rounds} rounds is too small "
            f"for the accountant (epsilon beyond 1e300); the range that works is noise_multiplier >= {smallest:.3g} "
            "(epsilon below 1e6 needs noise_multiplier of about 1e-3 * sqrt(n_rounds) or more).")
    return eps


@validate_params(
    {
        "epsilon": EPSILON,
        "delta": DELTA_POSITIVE,
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "accountant": [StrOptions(_ACCOUNTANTS)],
    },
    prefer_skip_nested_validation=True,
)
def gaussian_rounds_noise_multiplier(epsilon, delta, n_rounds, *, accountant="pld"):
    """The smallest noise multiplier whose ``n_rounds`` Gaussian releases are (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        Target epsilon, in (0, 1e6].
    delta : float
        Target delta, in (0, 1).
    n_rounds : int
        Number of releases.
    accountant : {"pld", "rdp"}, default="pld"
        As in :func:`gaussian_rounds_epsilon`.

    Returns
    -------
    float
        The noise multiplier, never spending more than ``epsilon``: by
        bisection on a log scale to a relative 1e-6 ("rdp"), or from the
        analytic Gaussian's inverse raised by steps of 1e-4 until the PLD
        accountant agrees ("pld").

    See Also
    --------
    gaussian_rounds_epsilon : The forward map.

    Examples
    --------
    >>> from sklearn_icml.privacy import gaussian_rounds_noise_multiplier
    >>> round(gaussian_rounds_noise_multiplier(1.29, 3e-6, 11, accountant="rdp"), 1)
    11.3
    """
    if not math.isfinite(epsilon) or epsilon > 1e6:
        raise ValueError(f"gaussian_rounds_noise_multiplier: epsilon must be finite and at most 1e6; "
                         f"got {epsilon!r}.")
    eps = lambda s: _epsilon(s, int(n_rounds), float(delta), accountant)  # noqa: E731
    if accountant == "pld":
        # start from the analytic Gaussian's inverse; the PLD is a (pessimistic) discretisation of the same loss
        dp = _dp_accounting()
        sigma = float(dp.get_sigma_gaussian(float(epsilon), float(delta))) * math.sqrt(n_rounds)
        for _ in range(60):
            if eps(sigma) <= epsilon:
                return sigma
            sigma *= 1 + 1e-4
        # below about 1e-3 the discretisation (1e-4) dominates the answer: larger steps, still certified
        for _ in range(200):
            sigma *= 1.05
            if eps(sigma) <= epsilon:
                return sigma
        raise ValueError(
            f"gaussian_rounds_noise_multiplier: the PLD accountant (the privacy loss discretised to 1e-4) certified "
            f"epsilon={epsilon!r} at delta={delta!r} over {n_rounds} rounds for no noise multiplier up to "
            f"{sigma:.3g}; the range that works is epsilon in [1e-3, 1e6] (the private estimators' range), or "
            "accountant='rdp' for smaller ones.")
    lo, hi = 1e-3, 1.0
    while eps(hi) > epsilon:
        lo, hi = hi, hi * 4
        if hi > 1e9:
            raise ValueError(f"gaussian_rounds_noise_multiplier: no noise multiplier below 1e9 reaches "
                             f"epsilon={epsilon!r} at delta={delta!r} over {n_rounds} rounds.")
    if eps(lo) <= epsilon:
        return lo
    while hi / lo > 1 + 1e-6:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if eps(mid) > epsilon else (lo, mid)
    return hi
