"""Budget bookkeeping: a ledger of releases composed by basic composition.

Every private estimator of the collection records what its fit released in a
fitted ``privacy_ledger_``: a list of plain dicts (so a pickle needs nothing
but Python to load), one per group of identical releases::

    {"label": "tree counts", "mechanism": "laplace", "sensitivity": 1.0,
     "scale": 8.0, "count": 4, "epsilon": 0.5, "delta": 0.0}

``count`` releases of ``mechanism`` with noise ``scale`` (Laplace ``b``,
geometric ``b`` or Gaussian ``sigma``) on a query of the given
``sensitivity`` (L1 for Laplace and geometric, L2 for Gaussian) together
spend ``epsilon`` and ``delta`` by basic (sequential) composition.
:class:`Accountant` adds such ledgers up, for example over the fits of a grid
search on private data.

Why basic composition and not a privacy-loss-distribution accountant: the
estimators split a user's ``(epsilon, delta)`` into a handful of releases and
promise that the parts add up to exactly what was asked
(``epsilon_spent_ == epsilon``). Google's ``dp-accounting`` composes tighter
and is the oracle of the tests (``tests/privacy``); the ledger's
``mechanism`` and ``scale / sensitivity`` are exactly its ``LaplaceDpEvent``
and ``GaussianDpEvent`` noise multipliers, so a user who wants tighter
totals over many fits can hand them to it.
"""

import math
from numbers import Integral, Real

import numpy as np

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ._validation import DELTA, NOT_BOOL_REAL, POSITIVE

__all__ = ["Accountant", "ledger_entry", "split_budget"]

_MECHANISMS = ("laplace", "geometric", "gaussian", "local_hashing", "exponential")
#: a budget that may be spent: finite, non-negative
_SPEND = [NOT_BOOL_REAL(Real, 0, np.inf, closed="left")]


@validate_params(
    {"total": _SPEND, "shares": ["array-like"], "spent": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def split_budget(total, shares, spent=()):
    """Split a budget into parts proportional to ``shares`` that add up to at most ``total`` exactly.

    The last part is the remainder, lowered by an ulp at a time until the
    correctly rounded sum (:func:`math.fsum`) of the parts is ``<= total``,
    so a ledger of these parts never reports more than was asked (a naive
    ``total * share`` split can exceed it by one ulp, e.g. 7.77 becoming
    7.7700000000000005).

    Parameters
    ----------
    total : float
        The budget (epsilon or delta), finite and non-negative.
    shares : array-like of shape (n_parts,)
        Positive finite weights (normalised here).
    spent : array-like of float, default=()
        Parts already spent out of ``total``; the new parts share what is
        left, and ``math.fsum(spent + parts) <= total``.

    Returns
    -------
    parts : list of float
        Non-negative parts with ``math.fsum(parts) <= total``, equal to
        ``total`` up to rounding.

    Examples
    --------
    >>> import math
    >>> from sklearn_icml.privacy import split_budget
    >>> parts = split_budget(7.77, [0.5, 0.25, 0.25])
    >>> math.fsum(parts) <= 7.77, len(parts)
    (True, 3)
    """
    w = np.asarray(shares, dtype=np.float64).ravel()
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"split_budget: shares must be positive finite numbers; got {shares!r}.")
    spent = [float(v) for v in np.asarray(spent, dtype=np.float64).ravel()]
    w = w / w.sum()
    total = float(total)
    rest = max(total - math.fsum(spent), 0.0)
    parts = [rest * float(s) for s in w[:-1]]
    last = max(total - math.fsum(spent + parts), 0.0)
    while last > 0 and math.fsum(spent + parts + [last]) > total:
        last = float(np.nextafter(last, 0.0))
    while parts and math.fsum(spent + parts + [last]) > total:  # pragma: no cover - rounding of the others
        parts = [float(np.nextafter(p, 0.0)) for p in parts]
    return parts + [last]


@validate_params(
    {"label": [str], "mechanism": [StrOptions(set(_MECHANISMS))], "epsilon": _SPEND,
     "sensitivity": POSITIVE + [None], "scale": POSITIVE + [None], "delta": DELTA,
     "count": [Interval(Integral, 1, None, closed="left")],
     "accountant": [StrOptions({"basic", "pld", "rdp"})]},
    prefer_skip_nested_validation=True,
)
def ledger_entry(label, mechanism, *, epsilon, sensitivity=None, scale=None, delta=0.0, count=1,
                 accountant="basic"):
    """One ledger entry (a plain dict), checked for consistency.

    The check (``accountant="basic"``): ``count`` releases of the noise
    ``scale`` on a query of this ``sensitivity`` must each be
    ``(epsilon / count, delta / count)``-DP
    (Laplace and geometric: ``scale >= sensitivity * count / epsilon``;
    Gaussian: the analytic condition of :func:`gaussian_delta`; exponential
    mechanism on a utility of the given sensitivity with monotone utilities:
    ``scale >= sensitivity * count / epsilon``, selection probabilities
    proportional to ``exp(utility / scale)``).

    Parameters
    ----------
    label : str
        What was released (``"tree counts"``, ``"cluster sums"``, ...).
    mechanism : {"laplace", "geometric", "gaussian", "local_hashing", "exponential"}
        The noise distribution; ``"local_hashing"`` is a local randomiser
        (each record's report is ``epsilon``-LDP) with no additive scale;
        ``"exponential"`` the exponential mechanism (``scale`` its
        temperature).
    epsilon : float
        Total epsilon of the ``count`` releases.
    sensitivity : float, default=None
        Sensitivity of one release (L1 for Laplace/geometric, L2 for
        Gaussian); None for ``"local_hashing"``.
    scale : float, default=None
        Noise scale of one release (Laplace ``b``, geometric ``b``, Gaussian
        ``sigma``); None for ``"local_hashing"``.
    delta : float, default=0.0
        Total delta of the ``count`` releases.
    count : int, default=1
        Number of releases composed sequentially.
    accountant : {"basic", "pld", "rdp"}, default="basic"
        How the ``count`` releases were composed. "basic" adds their
        epsilons (the check above); "pld" and "rdp" (Gaussian only) compose
        them with :func:`gaussian_rounds_epsilon`, and the check is that the
        composed epsilon of ``count`` releases of noise multiplier
        ``scale / sensitivity`` at ``delta`` is at most ``epsilon`` (Private
        Evolution's rounds). The entry records the accountant.

    Returns
    -------
    entry : dict
        The entry, with float fields.

    Examples
    --------
    >>> from sklearn_icml.privacy import ledger_entry
    >>> ledger_entry("counts", "laplace", sensitivity=1.0, scale=2.0, epsilon=0.5)["scale"]
    2.0
    """
    if mechanism not in _MECHANISMS:
        raise ValueError(f"mechanism must be one of {_MECHANISMS}; got {mechanism!r}.")
    additive = mechanism != "local_hashing"
    if additive and (sensitivity is None or scale is None):
        raise ValueError(f"a {mechanism} ledger entry needs its sensitivity and noise scale.")
    if accountant not in ("basic", "pld", "rdp"):
        raise ValueError(f"ledger_entry: accountant must be 'basic', 'pld' or 'rdp'; got {accountant!r}.")
    per_eps, per_delta = epsilon / count, delta / count
    if accountant != "basic":
        if mechanism != "gaussian" or not delta > 0:
            raise ValueError(f"ledger_entry: accountant={accountant!r} composes Gaussian releases with delta > 0; "
                             f"got mechanism={mechanism!r}, delta={delta!r}.")
        from ._rounds import gaussian_rounds_epsilon

        composed = gaussian_rounds_epsilon(scale / sensitivity, int(count), delta, accountant=accountant)
        if composed > epsilon * (1 + 1e-9):
            raise ValueError(f"ledger_entry: {count} Gaussian releases of noise multiplier {scale / sensitivity!r} "
                             f"compose ({accountant}) to epsilon={composed!r} > {epsilon!r}; the entry would "
                             "understate its cost.")
    elif additive:
        if per_eps == 0:
            raise ValueError(f"ledger_entry: epsilon must be positive for a {mechanism} entry; got {epsilon!r}.")
        if mechanism == "gaussian":
            from ._mechanisms import _gaussian_delta

            if delta <= 0 or _gaussian_delta(scale, per_eps, sensitivity) > per_delta * (1 + 1e-6) + 1e-300:
                raise ValueError(
                    f"ledger_entry: Gaussian noise sigma={scale!r} on sensitivity {sensitivity!r} is not "
                    f"(epsilon={per_eps!r}, delta={per_delta!r})-DP per release; the entry would understate its cost."
                )
        elif scale < sensitivity / per_eps * (1 - 1e-9):
            raise ValueError(
                f"ledger_entry: {mechanism} noise scale={scale!r} on sensitivity {sensitivity!r} spends "
                f"{sensitivity / scale:.6g} per release, more than epsilon / count = {per_eps!r}."
            )
    return {"label": str(label), "mechanism": mechanism,
            "sensitivity": float(sensitivity) if additive else None,
            "scale": float(scale) if additive else None,
            "count": int(count), "epsilon": float(epsilon), "delta": float(delta), "accountant": accountant}


class Accountant:
    """Add up the privacy budget of several private releases or fits.

    Basic composition: running mechanisms that are ``(epsilon_i, delta_i)``
    differentially private on the same data is ``(sum epsilon_i,
    sum delta_i)``-DP, whatever each mechanism was and even when later ones
    were chosen from earlier outputs. The accountant never changes an
    estimator: it only reads the fitted ``privacy_ledger_`` (or
    ``epsilon_spent_`` and ``delta_spent_``).

    Read more in the :ref:`User Guide <privacy>`.

    Parameters
    ----------
    epsilon : float, default=None
        Optional cap on the total epsilon; :meth:`spend` and :meth:`add`
        raise ``ValueError`` beyond it.
    delta : float, default=None
        Optional cap on the total delta.

    Attributes
    ----------
    entries : list of dict
        The ledger entries recorded so far (see :func:`ledger_entry`).

    See Also
    --------
    sklearn_icml.cluster.PrivateKMeans : Records its releases in ``privacy_ledger_``.

    Examples
    --------
    >>> from sklearn_icml.privacy import Accountant
    >>> acc = Accountant(epsilon=3.0)
    >>> acc.spend(1.0, 1e-6, label="fit 1").spend(1.0, 1e-6, label="fit 2").total
    (2.0, 2e-06)
    >>> acc.remaining[0]
    1.0
    """

    @validate_params(
        {"epsilon": [NOT_BOOL_REAL(Real, 0, np.inf, closed="neither"), None],
         "delta": [Interval(Real, 0, 1, closed="both"), None]},
        prefer_skip_nested_validation=True,
    )
    def __init__(self, epsilon=None, delta=None):
        self.epsilon = epsilon
        self.delta = delta
        self.entries = []

    @property
    def total(self):
        """``(epsilon, delta)`` spent so far, by basic composition."""
        eps = sum(e["epsilon"] for e in self.entries)
        delta = sum(e["delta"] for e in self.entries)
        return float(eps), float(delta)

    @property
    def remaining(self):
        """``(epsilon, delta)`` left under the caps (``inf`` where no cap was set)."""
        eps, delta = self.total
        cap_eps = float("inf") if self.epsilon is None else self.epsilon
        cap_delta = float("inf") if self.delta is None else self.delta
        return cap_eps - eps, cap_delta - delta

    def _check_cap(self, new_entries):
        eps = self.total[0] + sum(e["epsilon"] for e in new_entries)
        delta = self.total[1] + sum(e["delta"] for e in new_entries)
        tol = 1e-12
        if self.epsilon is not None and eps > self.epsilon * (1 + tol) + tol:
            raise ValueError(f"Accountant: spending would reach epsilon={eps:.6g}, over the cap {self.epsilon}.")
        if self.delta is not None and delta > self.delta * (1 + tol) + tol:
            raise ValueError(f"Accountant: spending would reach delta={delta:.6g}, over the cap {self.delta}.")

    @validate_params(
        {"epsilon": _SPEND, "delta": DELTA, "label": [str, None]},
        prefer_skip_nested_validation=True,
    )
    def spend(self, epsilon, delta=0.0, *, label=None):
        """Record a release of the given cost.

        Parameters
        ----------
        epsilon : float
            Epsilon of the release.
        delta : float, default=0.0
            Delta of the release.
        label : str, default=None
            What was released.

        Returns
        -------
        self : Accountant
            The accountant, for chaining.
        """
        entry = {"label": label or f"release {len(self.entries)}", "mechanism": None, "sensitivity": None,
                 "scale": None, "count": 1, "epsilon": float(epsilon), "delta": float(delta)}
        self._check_cap([entry])
        self.entries.append(entry)
        return self

    def add(self, estimator, label=None):
        """Record everything a fitted private estimator released.

        Parameters
        ----------
        estimator : estimator instance
            A fitted estimator with ``privacy_ledger_`` (or at least
            ``epsilon_spent_`` and ``delta_spent_``).
        label : str, default=None
            Prefix for the entries' labels (default: the class name).

        Returns
        -------
        self : Accountant
            The accountant, for chaining.
        """
        prefix = label or type(estimator).__name__
        if hasattr(estimator, "privacy_ledger_"):
            new = [dict(e, label=f"{prefix}: {e['label']}") for e in estimator.privacy_ledger_]
        elif hasattr(estimator, "epsilon_spent_"):
            new = [{"label": prefix, "mechanism": None, "sensitivity": None, "scale": None, "count": 1,
                    "epsilon": float(estimator.epsilon_spent_),
                    "delta": float(getattr(estimator, "delta_spent_", 0.0))}]
        else:
            raise ValueError(
                f"Accountant.add needs a fitted private estimator (with privacy_ledger_ or epsilon_spent_); "
                f"got {type(estimator).__name__}."
            )
        self._check_cap(new)
        self.entries.extend(new)
        return self

    def __repr__(self):
        eps, delta = self.total
        return f"Accountant(spent epsilon={eps:.6g}, delta={delta:.3g}, entries={len(self.entries)})"
