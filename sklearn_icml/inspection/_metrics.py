"""Quality metrics of feature attributions: infidelity, sensitivity, faithfulness correlation.

Each metric returns one value per explained input, like captum and quantus,
so that a mean, a spread or a per-input comparison can be taken from it.

* :func:`infidelity` (Yeh et al., 2019): ``E_I[(I' phi - (f(x) - f(x - I)))^2]``
  with random perturbations ``I``; with ``normalize=True`` the map is first
  rescaled by its optimal factor ``beta = E[I' phi * df] / E[(I' phi)^2]``,
  which makes the metric independent of the map's scale (captum's
  ``infidelity(normalize=True)``).
* :func:`avg_sensitivity` and :func:`max_sensitivity` (Yeh et al., 2019;
  Bhatt et al., 2020): the mean or the largest change ``||phi(x) - phi(x + e)||``
  of the explanation under small input perturbations ``e``, relative to
  ``||phi(x)||`` by default (captum's ``sensitivity_max``).
* :func:`faithfulness_correlation` (Bhatt et al., 2020): the Pearson
  correlation, over random feature subsets ``S``, between ``sum_{j in S} phi_j``
  and the output drop when ``S`` is set to the baseline.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy
from ._attributions import _DOCS, _MODEL_CONSTRAINTS, _check_X, _feature_vector, _groups, _kw, _prepare

__all__ = ["avg_sensitivity", "faithfulness_correlation", "infidelity", "max_sensitivity"]


# ---------------------------------------------------------------------------------------------
# private pieces shared with the combiner
# ---------------------------------------------------------------------------------------------


def _subset_masks(n_perturbations, fraction, labels, n_groups, rng):
    """Masks (m, n_features) in {0, 1}: each selects a random ``fraction`` of the groups."""
    size = min(n_groups, max(1, int(round(fraction * n_groups))))
    keys = rng.random_sample((n_perturbations, n_groups))
    chosen = np.argsort(np.argsort(keys, axis=1), axis=1) < size  # (m, G)
    return chosen[:, labels].astype(np.float64)


def _output_drops(m, X, t, I):
    """``f(x) - f(x - I)`` for perturbations ``I`` of shape (n, m, d): shape (n, m)."""
    n, n_pert, d = I.shape
    f_x = m.value(X, t)
    perturbed = (X[:, None, :] - I).reshape(-1, d)
    t_rep = None if t is None else np.repeat(t, n_pert)
    return f_x[:, None] - m.value(perturbed, t_rep).reshape(n, n_pert)


def _optimal_scale(a, df):
    """Yeh's optimal rescaling ``beta = sum(a df) / sum(a^2)`` over the last axis (0 for a zero map)."""
    num = (a * df).sum(axis=-1)
    den = (a * a).sum(axis=-1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _infidelity_values(a, df, normalize):
    """Mean of ``(beta a - df)^2`` over the last axis; ``beta = 1`` unless ``normalize``."""
    beta = _optimal_scale(a, df) if normalize else np.ones(a.shape[:-1])
    return ((beta[..., None] * a - df) ** 2).mean(axis=-1)


def _check_attributions(attributions, X, caller):
    A = np.asarray(as_numpy(attributions), dtype=np.float64)
    if A.shape != X.shape:
        raise ValueError(f"{caller}: attributions must have the shape of X, {X.shape}; got {A.shape}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{caller}: attributions must be finite.")
    return A


def _check_perturbations(perturbations, X, caller):
    P = np.asarray(as_numpy(perturbations), dtype=np.float64)
    if P.ndim != 3 or P.shape[0] != X.shape[0] or P.shape[2] != X.shape[1]:
        raise ValueError(f"{caller}: perturbations must have shape (n_samples, n_perturbations, n_features) = "
                         f"({X.shape[0]}, m, {X.shape[1]}); got {P.shape}.")
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{caller}: perturbations must be finite.")
    return P


def _ablation_perturbations(X, baseline, feature_groups, perturb_fraction, n_perturbations, random_state, caller):
    b = _feature_vector(baseline, X.shape[1], "baseline", caller)
    labels, n_groups = _groups(feature_groups, X.shape[1], caller)
    masks = _subset_masks(n_perturbations, perturb_fraction, labels, n_groups, check_random_state(random_state))
    return masks[None] * (X - b)[:, None, :], masks


_PERTURB_DOC = """perturbations : array-like of shape (n_samples, n_perturbations, n_features), default=None
        The perturbations ``I`` (the perturbed input is ``x - I``). When None,
        each perturbation sets a random ``perturb_fraction`` of the features
        (of the groups, with ``feature_groups``) to ``baseline``:
        ``I = mask * (x - baseline)``, the masks being shared by all inputs.
    baseline : float or array-like of shape (n_features,), default=0.0
        Value of the ablated features when ``perturbations`` is None.
    perturb_fraction : float, default=0.25
        Share of the features (groups) ablated per perturbation.
    feature_groups : array-like of shape (n_features,), default=None
        Group label of each feature; groups are ablated together.
    n_perturbations : int, default=50
        Perturbations per input when ``perturbations`` is None.
    random_state : int, RandomState instance or None, default=None
        Seeds the masks."""

_PERTURB_CONSTRAINTS = {
    "perturbations": [None, "array-like"],
    "baseline": [Real, "array-like"],
    "perturb_fraction": [Interval(Real, 0, 1, closed="right")],
    "feature_groups": [None, "array-like"],
    "n_perturbations": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
}


def _doc(func):
    doc = func.__doc__.replace("{perturb}", _PERTURB_DOC)
    for key, text in _DOCS.items():
        doc = doc.replace("{" + key + "}", text)
    func.__doc__ = doc
    return func


@validate_params({**_MODEL_CONSTRAINTS, "attributions": ["array-like"], **_PERTURB_CONSTRAINTS,
                  "normalize": ["boolean"]}, prefer_skip_nested_validation=True)
@_doc
def infidelity(model, X, attributions, *, perturbations=None, baseline=0.0, perturb_fraction=0.25,
               feature_groups=None, n_perturbations=50, random_state=None, normalize=True, target=None,
               response_method="auto", device="cpu", batch_size=4096, n_jobs=None):
    """Infidelity of attributions: how badly ``I' phi`` predicts the output drop under perturbations.

    ``INFD(phi, x) = mean_I (beta I' phi(x) - (f(x) - f(x - I)))^2`` (Yeh et
    al., 2019), with ``beta`` the optimal rescaling of the map when
    ``normalize=True`` (and ``beta = 1`` otherwise). Equal to captum's
    ``infidelity`` given the same perturbations. Lower is better.

    Parameters
    ----------
    {model}
    attributions : array-like of shape (n_samples, n_features)
        The maps evaluated, one per input.
    {perturb}
    normalize : bool, default=True
        Rescale each map by its optimal factor first, which makes the value
        independent of the map's scale.
    {common}

    Returns
    -------
    infidelity : ndarray of shape (n_samples,)
        One value per input.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import infidelity
    >>> f = lambda X: X @ np.array([1.0, 2.0, 3.0])
    >>> X = np.array([[1.0, 1.0, 1.0]])
    >>> infidelity(f, X, np.array([[1.0, 2.0, 3.0]]), random_state=0).round(6)
    array([0.])
    """
    caller = "infidelity"
    m, X, t = _prepare(model, X, target, caller, **_kw(response_method, device, batch_size, n_jobs))
    A = _check_attributions(attributions, X, caller)
    if perturbations is None:
        I, _ = _ablation_perturbations(X, baseline, feature_groups, perturb_fraction, n_perturbations,
                                       random_state, caller)
    else:
        I = _check_perturbations(perturbations, X, caller)
    df = _output_drops(m, X, t, I)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.einsum("nmd,nd->nm", I, A)
        values = _infidelity_values(a, df, normalize)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{caller}: the infidelity overflows float64 (inputs, attributions or output drops too "
                         "large, e.g. X of magnitude 1e300); rescale X or the attributions.")
    return values


@validate_params({**_MODEL_CONSTRAINTS, "attributions": ["array-like"], **_PERTURB_CONSTRAINTS},
                 prefer_skip_nested_validation=True)
@_doc
def faithfulness_correlation(model, X, attributions, *, perturbations=None, baseline=0.0, perturb_fraction=0.25,
                             feature_groups=None, n_perturbations=50, random_state=None, target=None,
                             response_method="auto", device="cpu", batch_size=4096, n_jobs=None):
    """Faithfulness correlation: how well the attribution mass of a subset predicts its ablation effect.

    The Pearson correlation, over random subsets ``S`` of the features, between
    ``sum_{j in S} phi_j`` and ``f(x) - f(x with S set to the baseline)``
    (Bhatt et al., 2020). With explicit ``perturbations`` ``I``, the subset is
    ``{j : I_j != 0}``. Higher is better; NaN where either side is constant.

    Parameters
    ----------
    {model}
    attributions : array-like of shape (n_samples, n_features)
        The maps evaluated, one per input.
    {perturb}
    {common}

    Returns
    -------
    correlation : ndarray of shape (n_samples,)
        One value in [-1, 1] per input.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import faithfulness_correlation
    >>> f = lambda X: X @ np.array([1.0, 2.0, 3.0, 4.0])
    >>> X = np.ones((1, 4))
    >>> faithfulness_correlation(f, X, np.array([[1.0, 2.0, 3.0, 4.0]]), random_state=0).round(6)
    array([1.])
    """
    caller = "faithfulness_correlation"
    m, X, t = _prepare(model, X, target, caller, **_kw(response_method, device, batch_size, n_jobs))
    A = _check_attributions(attributions, X, caller)
    if perturbations is None:
        I, masks = _ablation_perturbations(X, baseline, feature_groups, perturb_fraction, n_perturbations,
                                           random_state, caller)
        S = np.broadcast_to(masks[None], I.shape)
    else:
        I = _check_perturbations(perturbations, X, caller)
        S = (I != 0).astype(np.float64)
    df = _output_drops(m, X, t, I)
    mass = np.einsum("nmd,nd->nm", S, A)
    mass_c = mass - mass.mean(axis=1, keepdims=True)
    df_c = df - df.mean(axis=1, keepdims=True)
    den = np.sqrt((mass_c ** 2).sum(axis=1) * (df_c ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (mass_c * df_c).sum(axis=1) / den
    tiny = den <= 1e-12 * np.maximum(1.0, np.abs(mass).max(axis=1) * np.abs(df).max(axis=1))
    return np.where(tiny, np.nan, corr)


# ---------------------------------------------------------------------------------------------
# sensitivity
# ---------------------------------------------------------------------------------------------


def _noise(shape, radius, kind, rng):
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, size=shape) * radius
    return rng.standard_normal(shape) * radius


def _sensitivities(explain, X, radius, n_perturbations, noise, perturbations, relative, squared, random_state,
                   caller):
    X = _check_X(X, caller)
    n, d = X.shape
    if not callable(explain):
        raise TypeError(f"{caller}: explain must be a callable mapping X (n, n_features) to attributions of the "
                        f"same shape; got {type(explain).__name__}.")
    if perturbations is None:
        r = _feature_vector(radius, d, "radius", caller)
        eps = _noise((n, n_perturbations, d), r, noise, check_random_state(random_state))
    else:
        eps = _check_perturbations(perturbations, X, caller)
    m = eps.shape[1]
    phi = np.asarray(as_numpy(explain(X)), dtype=np.float64)
    phi_pert = np.asarray(as_numpy(explain((X[:, None, :] + eps).reshape(-1, d))), dtype=np.float64)
    if phi.shape != (n, d) or phi_pert.shape != (n * m, d):
        raise ValueError(f"{caller}: explain must return an array of shape (n, {d}) for n inputs; got "
                         f"{phi.shape} for {n} inputs and {phi_pert.shape} for {n * m}.")
    if not (np.all(np.isfinite(phi)) and np.all(np.isfinite(phi_pert))):
        raise ValueError(f"{caller}: explain returned non-finite attributions (NaN or inf); the sensitivity would "
                         "not be finite. Check the explainer on X and on the perturbed inputs.")
    diff = np.linalg.norm(phi[:, None, :] - phi_pert.reshape(n, m, d), axis=2)  # (n, m)
    if relative:
        norm = np.linalg.norm(phi, axis=1, keepdims=True)
        diff = diff / np.where(norm > 0, norm, 1.0)
    return diff ** 2 if squared else diff


_SENS_DOC = """explain : callable
        Maps inputs ``(n, n_features)`` to attributions of the same shape, for
        example ``lambda Z: saliency(model, Z)`` or a fitted
        :class:`AttributionCombiner`'s ``transform``. It is called once on
        ``X`` and once on all perturbed inputs stacked input-major (row
        ``i * n_perturbations + j`` is input ``i``'s ``j``-th perturbation).
    X : array-like of shape (n_samples, n_features)
        Inputs.
    radius : float or array-like of shape (n_features,), default=0.1
        Half-width of the uniform noise (standard deviation of the Gaussian
        noise), per feature when an array.
    n_perturbations : int, default=10
        Perturbations per input.
    noise : {"uniform", "gaussian"}, default="uniform"
        Distribution of the perturbation ``e``.
    perturbations : array-like of shape (n_samples, n_perturbations, n_features), default=None
        Explicit perturbations ``e`` (the perturbed input is ``x + e``);
        ``radius``, ``n_perturbations`` and ``noise`` are then ignored.
    relative : bool, default=True
        Divide by ``||phi(x)||`` (as captum's ``sensitivity_max``).
    squared : bool, default=False
        Use squared norms (the L2 robustness criterion of Decker et al.).
    random_state : int, RandomState instance or None, default=None
        Seeds the perturbations."""

_SENS_CONSTRAINTS = {
    "explain": [callable],
    "X": ["array-like"],
    "radius": [Interval(Real, 0, None, closed="left"), "array-like"],
    "n_perturbations": [Interval(Integral, 1, None, closed="left")],
    "noise": [StrOptions({"uniform", "gaussian"})],
    "perturbations": [None, "array-like"],
    "relative": ["boolean"],
    "squared": ["boolean"],
    "random_state": ["random_state"],
}


@validate_params(_SENS_CONSTRAINTS, prefer_skip_nested_validation=True)
def avg_sensitivity(explain, X, *, radius=0.1, n_perturbations=10, noise="uniform", perturbations=None,
                    relative=True, squared=False, random_state=None):
    """Average sensitivity: the mean change of the explanation under small input perturbations.

    ``mean_e ||phi(x) - phi(x + e)|| / ||phi(x)||`` (Bhatt et al., 2020); lower
    is more robust.

    Parameters
    ----------
    {sens}

    Returns
    -------
    sensitivity : ndarray of shape (n_samples,)
        One value per input.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import avg_sensitivity
    >>> explain = lambda Z: Z ** 2
    >>> avg_sensitivity(explain, np.ones((2, 3)), random_state=0).shape
    (2,)
    """
    return _sensitivities(explain, X, radius, n_perturbations, noise, perturbations, relative, squared,
                          random_state, "avg_sensitivity").mean(axis=1)


@validate_params(_SENS_CONSTRAINTS, prefer_skip_nested_validation=True)
def max_sensitivity(explain, X, *, radius=0.1, n_perturbations=10, noise="uniform", perturbations=None,
                    relative=True, squared=False, random_state=None):
    """Max sensitivity: the largest change of the explanation under small input perturbations.

    ``max_e ||phi(x) - phi(x + e)|| / ||phi(x)||`` (Yeh et al., 2019), a Monte
    Carlo estimate of the worst case over the perturbation ball; equal to
    captum's ``sensitivity_max`` given the same perturbations. Lower is more
    robust.

    Parameters
    ----------
    {sens}

    Returns
    -------
    sensitivity : ndarray of shape (n_samples,)
        One value per input.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import max_sensitivity
    >>> explain = lambda Z: 2.0 * Z
    >>> max_sensitivity(explain, np.ones((1, 2)), perturbations=np.full((1, 1, 2), 0.5))
    array([0.5])
    """
    return _sensitivities(explain, X, radius, n_perturbations, noise, perturbations, relative, squared,
                          random_state, "max_sensitivity").max(axis=1)


avg_sensitivity.__doc__ = avg_sensitivity.__doc__.replace("{sens}", _SENS_DOC)
max_sensitivity.__doc__ = max_sensitivity.__doc__.replace("{sens}", _SENS_DOC)
