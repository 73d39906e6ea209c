"""Base feature-attribution methods, for torch modules (autograd) and black-box models.

Every method returns an array of shape ``(n_samples, n_features)``: one
attribution map per explained input. The private ``_name(model, X, t, ...)``
functions work on a :class:`~sklearn_icml.inspection._model._Model` and explicit
random draws, vectorised over the inputs; :class:`AttributionCombiner` calls
them directly. The public functions validate their arguments, wrap the model and
draw the random numbers from ``random_state``.

Random draws (SmoothGrad noise, GradientSHAP baselines and path points,
KernelSHAP coalitions) are *common random numbers*: one set of draws shared by
all explained inputs. Each input's attribution is then a deterministic function
of that input alone, so explaining a subset of rows, or the rows in another
order, gives the same maps row by row.
"""

import inspect
from collections.abc import Callable
from itertools import combinations
from math import comb
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import DEVICE_CONSTRAINT, as_numpy
from ._model import make_model

__all__ = [
    "feature_ablation",
    "gradient_shap",
    "input_x_gradient",
    "integrated_gradients",
    "kernel_shap",
    "saliency",
    "smoothgrad",
    "vargrad",
]

# ---------------------------------------------------------------------------------------------
# helpers shared with the metrics and the combiner
# ---------------------------------------------------------------------------------------------


def _check_X(X, caller):
    X = check_array(as_numpy(X), dtype=np.float64, ensure_all_finite=True)
    return X


def _feature_vector(value, n_features, name, caller):
    """A finite float, or a finite array of shape (n_features,), as a float64 vector."""
    arr = np.asarray(as_numpy(value), dtype=np.float64)
    if arr.ndim == 0:
        if not np.isfinite(arr):
            raise ValueError(f"{caller}: {name} must be finite; got {name}={float(arr)!r}.")
        return np.full(n_features, float(arr))
    arr = arr.reshape(-1) if arr.ndim == 2 and arr.shape[0] == 1 else arr
    if arr.shape != (n_features,):
        raise ValueError(f"{caller}: {name} must be a number or an array of shape ({n_features},); "
                         f"got shape {np.shape(value)}.")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{caller}: {name} must be finite; got {float(arr[bad[0]])!r} at feature {int(bad[0])} "
                         f"({len(bad)} non-finite entries).")
    return arr


def _groups(feature_groups, n_features, caller):
    """Feature groups as (labels in 0..G-1 of shape (n_features,), G)."""
    if feature_groups is None:
        return np.arange(n_features), n_features
    groups = np.asarray(feature_groups)
    if groups.shape != (n_features,):
        raise ValueError(f"{caller}: feature_groups must have one label per feature, shape ({n_features},); "
                         f"got shape {groups.shape}.")
    _, labels = np.unique(groups, return_inverse=True)
    return labels.reshape(-1), int(labels.max()) + 1


def _prepare(model, X, target, caller, fd_step=1e-4, **model_kwargs):
    X = _check_X(X, caller)
    if np.ndim(fd_step) > 0:
        fd_step = _feature_vector(fd_step, X.shape[1], "fd_step", caller)
    m = make_model(model, caller=caller, fd_step=fd_step, **model_kwargs)
    t = m.resolve_target(X, target)
    return m, X, t


def _repeat_target(t, times):
    """Targets for ``times`` stacked copies of the inputs (copy-major order)."""
    return None if t is None else np.tile(t, times)


# ---------------------------------------------------------------------------------------------
# the methods, on a _Model
# ---------------------------------------------------------------------------------------------


def _saliency(m, X, t, abs=True):
    g = m.gradient(X, t)
    return np.abs(g) if abs else g


def _input_x_gradient(m, X, t):
    return X * m.gradient(X, t)


def _ig_nodes(n_steps, method):
    """Path points ``alpha`` and weights of the integral over [0, 1]."""
    if method == "gausslegendre":
        x, w = np.polynomial.legendre.leggauss(n_steps)
        return 0.5 * (1.0 + x), 0.5 * w
    if method == "riemann_trapezoid":
        if n_steps < 2:
            raise ValueError("integrated_gradients: method='riemann_trapezoid' needs n_steps >= 2.")
        w = np.full(n_steps, 1.0 / (n_steps - 1))
        w[0] /= 2
        w[-1] /= 2
        return np.linspace(0.0, 1.0, n_steps), w
    w = np.full(n_steps, 1.0 / n_steps)
    if method == "riemann_left":
        return np.arange(n_steps) / n_steps, w
    if method == "riemann_right":
        return np.arange(1, n_steps + 1) / n_steps, w
    return (np.arange(n_steps) + 0.5) / n_steps, w  # riemann_middle


def _integrated_gradients(m, X, t, baseline, n_steps=50, method="gausslegendre"):
    alphas, weights = _ig_nodes(n_steps, method)
    n, d = X.shape
    delta = X - baseline
    path = (baseline + alphas[:, None, None] * delta[None]).reshape(-1, d)
    grads = m.gradient(path, _repeat_target(t, n_steps)).reshape(n_steps, n, d)
    return delta * np.tensordot(weights, grads, axes=1)


def _noisy_gradients(m, X, t, noise, abs):
    n, d = X.shape
    s = noise.shape[0]
    noisy = (X[None] + noise[:, None, :]).reshape(-1, d)
    g = m.gradient(noisy, _repeat_target(t, s)).reshape(s, n, d)
    return np.abs(g) if abs else g


def _smoothgrad(m, X, t, noise, abs=True):
    return _noisy_gradients(m, X, t, noise, abs).mean(axis=0)


def _vargrad(m, X, t, noise, abs=True):
    return _noisy_gradients(m, X, t, noise, abs).var(axis=0)


def _gradient_shap(m, X, t, baselines, alphas, noise):
    """Mean over draws s of (x + e_s - b_s) * grad f(b_s + a_s (x + e_s - b_s))."""
    n, d = X.shape
    s = baselines.shape[0]
    delta = X[None] + noise[:, None, :] - baselines[:, None, :]  # (s, n, d)
    points = (baselines[:, None, :] + alphas[:, None, None] * delta).reshape(-1, d)
    g = m.gradient(points, _repeat_target(t, s)).reshape(s, n, d)
    return (delta * g).mean(axis=0)


def _feature_ablation(m, X, t, baseline, labels, n_groups):
    n, d = X.shape
    masks = labels[None, :] == np.arange(n_groups)[:, None]  # (G, d): features of each group
    ablated = np.where(masks[:, None, :], baseline, X[None]).reshape(-1, d)
    f_x = m.value(X, t)
    f_ablated = m.value(ablated, _repeat_target(t, n_groups)).reshape(n_groups, n)
    per_group = f_x[None] - f_ablated  # (G, n)
    return per_group.T[:, labels]


def _kernel_shap_design(n_groups, n_samples, rng):
    """Coalitions (m, G) in {0, 1} and their weights for the Shapley-kernel regression.

    All ``2**G - 2`` proper coalitions with their exact kernel weights when that
    many fit in ``n_samples`` (then the result is the exact Shapley value);
    otherwise coalition sizes are drawn from the Shapley kernel's size
    distribution and each coalition is paired with its complement, with equal
    weights.
    """
    g = n_groups
    if 2 ** g - 2 <= n_samples:
        rows, weights = [], []
        for size in range(1, g):
            w = (g - 1) / (comb(g, size) * size * (g - size))
            for members in combinations(range(g), size):
                z = np.zeros(g)
                z[list(members)] = 1.0
                rows.append(z)
                weights.append(w)
        return np.array(rows), np.array(weights)
    sizes = np.arange(1, g)
    p = (g - 1) / (sizes * (g - sizes))
    p /= p.sum()
    n_pairs = max(1, n_samples // 2)
    drawn = rng.choice(sizes, size=n_pairs, p=p)
    order = np.argsort(rng.random_sample((n_pairs, g)), axis=1)
    Z = (np.argsort(order, axis=1) < drawn[:, None]).astype(np.float64)
    Z = np.concatenate([Z, 1.0 - Z])
    return Z, np.ones(Z.shape[0])


def _kernel_shap(m, X, t, baseline, labels, n_groups, Z, weights):
    n, d = X.shape
    f_x = m.value(X, t)
    f_b = m.value(np.broadcast_to(baseline, (n, d)), t)
    total = f_x - f_b
    if n_groups == 1:
        return np.broadcast_to(total[:, None], (n, d)).copy()
    present = Z[:, labels] > 0.5  # (m, d)
    points = np.where(present[:, None, :], X[None], baseline).reshape(-1, d)
    v = m.value(points, _repeat_target(t, Z.shape[0])).reshape(Z.shape[0], n) - f_b[None]  # (m, n)
    # efficiency constraint sum(phi) = f(x) - f(b), by eliminating the last group's value
    A = Z[:, :-1] - Z[:, -1:]
    y = v - Z[:, -1:] * total[None]
    sw = np.sqrt(weights)[:, None]
    coef, *_ = np.linalg.lstsq(sw * A, sw * y, rcond=None)  # (G - 1, n)
    phi = np.vstack([coef, total[None] - coef.sum(axis=0, keepdims=True)])  # (G, n)
    return phi.T[:, labels]


# ---------------------------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------------------------

_MODEL_CONSTRAINTS = {
    "model": "no_validation",
    "X": ["array-like"],
    "target": [None, Interval(Integral, 0, None, closed="left"), "array-like"],
    "response_method": [StrOptions({"auto", "predict_proba", "decision_function", "predict"})],
    "device": DEVICE_CONSTRAINT,
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "n_jobs": [Integral, None],
}
_FD_CONSTRAINT = {"fd_step": [Interval(Real, 0, None, closed="neither"), "array-like"]}

_DOCS = {
    "model": """model : fitted estimator, torch.nn.Module or callable
        The model explained: a fitted scikit-learn classifier or regressor
        (black box), a torch module mapping a float tensor ``(n, n_features)``
        to ``(n,)`` or ``(n, n_outputs)`` (autograd), or a callable mapping a
        numpy array ``(n, n_features)`` to such an array (black box).
    X : array-like of shape (n_samples, n_features)
        Inputs to explain.""",
    "common": """target : int, array-like of shape (n_samples,) or None, default=None
        Which output is explained when the model has several (class
        probabilities, logits, ...): a column index, one per input, or None for
        the column with the largest value at each input (the predicted class).
        Must be None for a single-output model.
    response_method : {"auto", "predict_proba", "decision_function", "predict"}, \
default="auto"
        For a scikit-learn estimator, the method giving the explained output;
        ``"auto"`` takes the first the estimator has, in that order.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where a torch module runs; ignored for black-box models.
    batch_size : int, default=4096
        Rows per model call.
    n_jobs : int, default=None
        Workers (:class:`joblib.Parallel`) over the batches of a black-box
        model; ``None`` means one.""",
    "fd_step": """fd_step : float or array-like of shape (n_features,), default=1e-4
        Step of the central finite differences that give black-box models
        their gradients (torch modules use autograd).""",
    "random_state": """random_state : int, RandomState instance or None, default=None
        Seeds the random draws, made once and shared by all inputs (so each
        input's map depends on that input only).""",
    "returns": """attributions : ndarray of shape (n_samples, n_features)
        One attribution map per input.""",
}


def _doc(func):
    doc = func.__doc__
    for key, text in _DOCS.items():
        doc = doc.replace("{" + key + "}", text)
    func.__doc__ = doc
    return func


def _kw(response_method, device, batch_size, n_jobs):
    return dict(response_method=response_method, device=device, batch_size=batch_size, n_jobs=n_jobs)


@validate_params({**_MODEL_CONSTRAINTS, **_FD_CONSTRAINT, "abs": ["boolean"]}, prefer_skip_nested_validation=True)
@_doc
def saliency(model, X, *, abs=True, target=None, response_method="auto", device="cpu", batch_size=4096,
             n_jobs=None, fd_step=1e-4):
    """Saliency: the gradient of the explained output with respect to the input.

    Parameters
    ----------
    {model}
    abs : bool, default=True
        Return the absolute gradient, as Simonyan et al. (2014) and captum's
        ``Saliency`` do.
    {common}
    {fd_step}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import saliency
    >>> f = lambda X: X[:, 0] ** 2 + 3 * X[:, 1]
    >>> saliency(f, np.array([[1.0, 2.0]]), abs=False).round(4)
    array([[2., 3.]])
    """
    m, X, t = _prepare(model, X, target, "saliency", fd_step, **_kw(response_method, device, batch_size, n_jobs))
    return _run("saliency", m, X, t, {"abs": abs}, _Context(caller="saliency"))


@validate_params({**_MODEL_CONSTRAINTS, **_FD_CONSTRAINT}, prefer_skip_nested_validation=True)
@_doc
def input_x_gradient(model, X, *, target=None, response_method="auto", device="cpu", batch_size=4096,
                     n_jobs=None, fd_step=1e-4):
    """Input times gradient: the gradient scaled feature-wise by the input.

    Parameters
    ----------
    {model}
    {common}
    {fd_step}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import input_x_gradient
    >>> f = lambda X: X @ np.array([1.0, -2.0])
    >>> input_x_gradient(f, np.array([[3.0, 1.0]])).round(4)
    array([[ 3., -2.]])
    """
    m, X, t = _prepare(model, X, target, "input_x_gradient", fd_step,
                       **_kw(response_method, device, batch_size, n_jobs))
    return _run("input_x_gradient", m, X, t, {}, _Context(caller="input_x_gradient"))


@validate_params({**_MODEL_CONSTRAINTS, **_FD_CONSTRAINT, "baseline": [Real, "array-like"],
                  "n_steps": [Interval(Integral, 1, None, closed="left")],
                  "method": [StrOptions({"gausslegendre", "riemann_left", "riemann_right", "riemann_middle",
                                         "riemann_trapezoid"})]},
                 prefer_skip_nested_validation=True)
@_doc
def integrated_gradients(model, X, *, baseline=0.0, n_steps=50, method="gausslegendre", target=None,
                         response_method="auto", device="cpu", batch_size=4096, n_jobs=None, fd_step=1e-4):
    """Integrated gradients: the path integral of the gradient from a baseline to the input.

    ``(x - b) * integral_0^1 grad f(b + a (x - b)) da``, by a quadrature of
    ``n_steps`` nodes (Sundararajan et al., 2017). The attributions of each
    input sum approximately to ``f(x) - f(b)``.

    Parameters
    ----------
    {model}
    baseline : float or array-like of shape (n_features,), default=0.0
        The reference input ``b``.
    n_steps : int, default=50
        Quadrature nodes.
    method : {"gausslegendre", "riemann_left", "riemann_right", "riemann_middle", \
"riemann_trapezoid"}, default="gausslegendre"
        Quadrature rule. Gauss-Legendre and the left, right and middle
        Riemann sums are captum's; the trapezoid rule here has weights summing
        to one (captum's sum to ``(n_steps - 1) / n_steps``).
    {common}
    {fd_step}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import integrated_gradients
    >>> f = lambda X: X[:, 0] * X[:, 1]
    >>> integrated_gradients(f, np.array([[2.0, 3.0]]), n_steps=8).round(3)
    array([[3., 3.]])
    """
    m, X, t = _prepare(model, X, target, "integrated_gradients", fd_step,
                       **_kw(response_method, device, batch_size, n_jobs))
    b = _feature_vector(baseline, X.shape[1], "baseline", "integrated_gradients")
    return _run("integrated_gradients", m, X, t, {"n_steps": n_steps, "method": method},
                _Context(caller="integrated_gradients", baseline=b))


_NOISE_CONSTRAINTS = {
    "n_samples": [Interval(Integral, 1, None, closed="left")],
    "noise_scale": [Interval(Real, 0, None, closed="left"), "array-like"],
    "abs": ["boolean"],
    "random_state": ["random_state"],
}


@validate_params({**_MODEL_CONSTRAINTS, **_FD_CONSTRAINT, **_NOISE_CONSTRAINTS}, prefer_skip_nested_validation=True)
@_doc
def smoothgrad(model, X, *, n_samples=10, noise_scale=0.1, abs=True, random_state=None, target=None,
               response_method="auto", device="cpu", batch_size=4096, n_jobs=None, fd_step=1e-4):
    """SmoothGrad: the saliency map averaged over Gaussian copies of the input.

    ``mean_s g(x + e_s)`` with ``e_s ~ N(0, diag(noise_scale**2))`` and ``g`` the
    (absolute, by default) gradient (Smilkov et al., 2017), as captum's
    ``NoiseTunnel(Saliency(model))`` with ``nt_type="smoothgrad"``.

    Parameters
    ----------
    {model}
    n_samples : int, default=10
        Noisy copies per input.
    noise_scale : float or array-like of shape (n_features,), default=0.1
        Standard deviation of the noise, per feature when an array.
    abs : bool, default=True
        Average absolute gradients (captum's default saliency) rather than
        signed ones.
    {random_state}
    {common}
    {fd_step}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import smoothgrad
    >>> f = lambda X: X @ np.array([1.0, -2.0])
    >>> smoothgrad(f, np.zeros((1, 2)), random_state=0).round(4)
    array([[1., 2.]])
    """
    m, X, t = _prepare(model, X, target, "smoothgrad", fd_step, **_kw(response_method, device, batch_size, n_jobs))
    return _run("smoothgrad", m, X, t, {"n_samples": n_samples, "noise_scale": noise_scale, "abs": abs},
                _Context(caller="smoothgrad"), random_state)


@validate_params({**_MODEL_CONSTRAINTS, **_FD_CONSTRAINT, **_NOISE_CONSTRAINTS}, prefer_skip_nested_validation=True)
@_doc
def vargrad(model, X, *, n_samples=10, noise_scale=0.1, abs=True, random_state=None, target=None,
            response_method="auto", device="cpu", batch_size=4096, n_jobs=None, fd_step=1e-4):
    """VarGrad: the variance of the saliency map over Gaussian copies of the input.

    ``var_s g(x + e_s)`` (Adebayo et al., 2018), as captum's
    ``NoiseTunnel(Saliency(model))`` with ``nt_type="vargrad"``.

    Parameters
    ----------
    {model}
    n_samples : int, default=10
        Noisy copies per input.
    noise_scale : float or array-like of shape (n_features,), default=0.1
        Standard deviation of the noise, per feature when an array.
    abs : bool, default=True
        Use absolute gradients (captum's default saliency).
    {random_state}
    {common}
    {fd_step}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import vargrad
    >>> f = lambda X: X[:, 0] ** 2
    >>> vargrad(f, np.ones((1, 2)), noise_scale=0.0, random_state=0).round(4)
    array([[0., 0.]])
    """
    m, X, t = _prepare(model, X, target, "vargrad", fd_step, **_kw(response_method, device, batch_size, n_jobs))
    return _run("vargrad", m, X, t, {"n_samples": n_samples, "noise_scale": noise_scale, "abs": abs},
                _Context(caller="vargrad"), random_state)


def _check_baselines(baselines, n_features, caller):
    """GradientSHAP's reference distribution as a finite array (n_baselines, n_features)."""
    b = np.asarray(as_numpy(baselines), dtype=np.float64)
    if b.ndim == 0:
        b = np.full((1, n_features), float(b))
    elif b.ndim == 1:
        b = b[None, :]
    if b.ndim != 2 or b.shape[1] != n_features or not np.all(np.isfinite(b)):
        raise ValueError(f"{caller}: baselines must be a number, a vector of {n_features} values or an array "
                         f"of shape (n_baselines, {n_features}), all finite; got shape {np.shape(baselines)}"
                         + ("." if b.ndim != 2 or b.shape[1] != n_features else " with non-finite entries."))
    return b


@validate_params({**_MODEL_CONSTRAINTS, **_FD_CONSTRAINT, "baselines": [Real, "array-like"],
                  "n_samples": [Interval(Integral, 1, None, closed="left")],
                  "noise_scale": [Interval(Real, 0, None, closed="left"), "array-like"],
                  "random_state": ["random_state"]},
                 prefer_skip_nested_validation=True)
@_doc
def gradient_shap(model, X, *, baselines=0.0, n_samples=10, noise_scale=0.0, random_state=None, target=None,
                  response_method="auto", device="cpu", batch_size=4096, n_jobs=None, fd_step=1e-4):
    """GradientSHAP: expected gradients between random baselines and (noisy) inputs.

    ``mean_s (x + e_s - b_s) * grad f(b_s + a_s (x + e_s - b_s))`` with ``b_s``
    drawn from ``baselines``, ``a_s ~ U(0, 1)`` and ``e_s`` Gaussian noise
    (Lundberg and Lee, 2017; captum's ``GradientShap``).

    Parameters
    ----------
    {model}
    baselines : float or array-like of shape (n_features,) or (n_baselines, n_features), \
default=0.0
        The reference distribution (for example a sample of training rows).
    n_samples : int, default=10
        Draws per input.
    noise_scale : float or array-like of shape (n_features,), default=0.0
        Standard deviation of the Gaussian noise added to the input.
    {random_state}
    {common}
    {fd_step}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import gradient_shap
    >>> f = lambda X: X @ np.array([1.0, -2.0])
    >>> gradient_shap(f, np.array([[1.0, 1.0]]), random_state=0).round(4)
    array([[ 1., -2.]])
    """
    m, X, t = _prepare(model, X, target, "gradient_shap", fd_step,
                       **_kw(response_method, device, batch_size, n_jobs))
    b = _check_baselines(baselines, X.shape[1], "gradient_shap")
    return _run("gradient_shap", m, X, t, {"n_samples": n_samples, "noise_scale": noise_scale},
                _Context(caller="gradient_shap", background=b), random_state)


@validate_params({**_MODEL_CONSTRAINTS, "baseline": [Real, "array-like"], "feature_groups": [None, "array-like"]},
                 prefer_skip_nested_validation=True)
@_doc
def feature_ablation(model, X, *, baseline=0.0, feature_groups=None, target=None, response_method="auto",
                     device="cpu", batch_size=4096, n_jobs=None):
    """Feature ablation (occlusion): the output drop when a feature or group is set to the baseline.

    ``phi_j = f(x) - f(x with the group of j replaced by the baseline)``, every
    feature of a group receiving its group's value, as captum's
    ``FeatureAblation`` with a feature mask. Occlusion of image patches is
    ablation with the patches as groups.

    Parameters
    ----------
    {model}
    baseline : float or array-like of shape (n_features,), default=0.0
        The value an ablated feature takes.
    feature_groups : array-like of shape (n_features,), default=None
        Group label of each feature (superpixels, patches, one-hot blocks);
        each feature is its own group when None.
    {common}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import feature_ablation
    >>> f = lambda X: X[:, 0] * X[:, 1]
    >>> feature_ablation(f, np.array([[2.0, 3.0]]))
    array([[6., 6.]])
    """
    m, X, t = _prepare(model, X, target, "feature_ablation", **_kw(response_method, device, batch_size, n_jobs))
    b = _feature_vector(baseline, X.shape[1], "baseline", "feature_ablation")
    labels, n_groups = _groups(feature_groups, X.shape[1], "feature_ablation")
    return _run("feature_ablation", m, X, t, {},
                _Context(caller="feature_ablation", baseline=b, labels=labels, n_groups=n_groups))


@validate_params({**_MODEL_CONSTRAINTS, "baseline": [Real, "array-like"], "feature_groups": [None, "array-like"],
                  "n_samples": [Interval(Integral, 2, None, closed="left")], "random_state": ["random_state"]},
                 prefer_skip_nested_validation=True)
@_doc
def kernel_shap(model, X, *, baseline=0.0, feature_groups=None, n_samples=256, random_state=None, target=None,
                response_method="auto", device="cpu", batch_size=4096, n_jobs=None):
    """KernelSHAP: Shapley values by a Shapley-kernel weighted regression on coalitions.

    Absent features take the baseline's values (interventional, single
    reference). The regression is constrained so that the attributions of an
    input sum to ``f(x) - f(baseline)`` (Lundberg and Lee, 2017). When all
    ``2**G - 2`` proper coalitions of the ``G`` groups fit in ``n_samples``
    they are all used with their exact kernel weights, and the result is the
    exact Shapley value; otherwise coalition sizes are drawn from the
    kernel's size distribution, each coalition paired with its complement.

    Parameters
    ----------
    {model}
    baseline : float or array-like of shape (n_features,), default=0.0
        Values of absent features.
    feature_groups : array-like of shape (n_features,), default=None
        Group label of each feature; the players of the game are the groups,
        and every feature of a group receives its group's value.
    n_samples : int, default=256
        Coalitions evaluated per input (shared by all inputs).
    {random_state}
    {common}

    Returns
    -------
    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import kernel_shap
    >>> f = lambda X: X[:, 0] * X[:, 1] + X[:, 2]
    >>> kernel_shap(f, np.array([[2.0, 3.0, 1.0]])).round(6)
    array([[3., 3., 1.]])
    """
    m, X, t = _prepare(model, X, target, "kernel_shap", **_kw(response_method, device, batch_size, n_jobs))
    b = _feature_vector(baseline, X.shape[1], "baseline", "kernel_shap")
    labels, n_groups = _groups(feature_groups, X.shape[1], "kernel_shap")
    return _run("kernel_shap", m, X, t, {"n_samples": n_samples},
                _Context(caller="kernel_shap", baseline=b, labels=labels, n_groups=n_groups), random_state)


# ---------------------------------------------------------------------------------------------
# the registry: one entry per base method, shared by the public functions and the combiner
# ---------------------------------------------------------------------------------------------


class _Context(NamedTuple):
    """What a base method may need beyond the model, the inputs and its own parameters."""

    caller: str
    baseline: np.ndarray = None  # (n_features,): reference input / value of absent features
    labels: np.ndarray = None  # (n_features,): group of each feature, 0..n_groups-1
    n_groups: int = None
    scale: object = 1.0  # unit of the noise parameters (float or (n_features,))
    background: np.ndarray = None  # (n_baselines, n_features): GradientSHAP's reference distribution


def _draw_noise(params, ctx, n_features, rng):
    scale = _feature_vector(params["noise_scale"], n_features, "noise_scale", ctx.caller)
    if np.any(scale < 0):
        raise ValueError(f"{ctx.caller}: noise_scale must be non-negative; got {params['noise_scale']!r}.")
    return {"noise": rng.standard_normal((params["n_samples"], n_features)) * scale * ctx.scale}


def _draw_gradient_shap(params, ctx, n_features, rng):
    s = params["n_samples"]
    idx = rng.randint(ctx.background.shape[0], size=s)
    alphas = rng.uniform(size=s)
    scale = _feature_vector(params["noise_scale"], n_features, "noise_scale", ctx.caller)
    noise = rng.standard_normal((s, n_features)) * scale * ctx.scale
    return {"baselines": ctx.background[idx], "alphas": alphas, "noise": noise}


def _draw_kernel_shap(params, ctx, n_features, rng):
    Z, weights = _kernel_shap_design(ctx.n_groups, params["n_samples"], rng)
    return {"Z": Z, "weights": weights}


class _BaseMethod(NamedTuple):
    """One base attribution method.

    ``function`` is the public function, whose signature gives the defaults of
    ``params`` (the parameters an ``AttributionCombiner`` entry ``(name, params)``
    may set); ``run(m, X, t, params, ctx, draws)`` computes the maps on a
    ``_Model``; ``draw(params, ctx, n_features, rng)`` makes the method's common
    random numbers (None for a deterministic method).
    """

    function: Callable
    params: tuple
    run: Callable
    draw: Callable = None

    @property
    def defaults(self):
        signature = inspect.signature(self.function)
        return {p: signature.parameters[p].default for p in self.params}


BASE_METHODS = {
    "saliency": _BaseMethod(saliency, ("abs",), lambda m, X, t, p, c, dr: _saliency(m, X, t, abs=p["abs"])),
    "input_x_gradient": _BaseMethod(input_x_gradient, (), lambda m, X, t, p, c, dr: _input_x_gradient(m, X, t)),
    "integrated_gradients": _BaseMethod(
        integrated_gradients, ("n_steps", "method"),
        lambda m, X, t, p, c, dr: _integrated_gradients(m, X, t, c.baseline, n_steps=p["n_steps"],
                                                        method=p["method"])),
    "smoothgrad": _BaseMethod(smoothgrad, ("n_samples", "noise_scale", "abs"),
                              lambda m, X, t, p, c, dr: _smoothgrad(m, X, t, dr["noise"], abs=p["abs"]), _draw_noise),
    "vargrad": _BaseMethod(vargrad, ("n_samples", "noise_scale", "abs"),
                           lambda m, X, t, p, c, dr: _vargrad(m, X, t, dr["noise"], abs=p["abs"]), _draw_noise),
    "gradient_shap": _BaseMethod(
        gradient_shap, ("n_samples", "noise_scale"),
        lambda m, X, t, p, c, dr: _gradient_shap(m, X, t, dr["baselines"], dr["alphas"], dr["noise"]),
        _draw_gradient_shap),
    "feature_ablation": _BaseMethod(
        feature_ablation, (), lambda m, X, t, p, c, dr: _feature_ablation(m, X, t, c.baseline, c.labels, c.n_groups)),
    "kernel_shap": _BaseMethod(
        kernel_shap, ("n_samples",),
        lambda m, X, t, p, c, dr: _kernel_shap(m, X, t, c.baseline, c.labels, c.n_groups, dr["Z"], dr["weights"]),
        _draw_kernel_shap),
}
"""The base attribution methods by name: what ``AttributionCombiner(methods=...)`` accepts."""


def _draw(name, params, ctx, n_features, rng):
    """The common random numbers of one method (an empty dict for a deterministic one)."""
    method = BASE_METHODS[name]
    return {} if method.draw is None else method.draw(params, ctx, n_features, rng)


def _run(name, m, X, t, params, ctx, random_state=None):
    """Attributions of ``X`` by the base method ``name`` with all its ``params`` given."""
    draws = _draw(name, params, ctx, X.shape[1], check_random_state(random_state))
    return BASE_METHODS[name].run(m, X, t, params, ctx, draws)
