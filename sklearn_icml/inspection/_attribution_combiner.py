"""AttributionCombiner: per-input optimal convex combinations of feature attributions (S10).

Decker, Bhattarai, Gu, Tresp and Buettner, "Provably Better Explanations with
Optimized Aggregation of Feature Attributions", ICML 2024.

Quality criteria of the form ``Q(phi) = E ||g1 phi - g2||^2`` (random ``g1``,
``g2``) are quadratic in the weights of a convex combination
``phi_w = sum_i w_i phi_i``: ``Q(phi_w) = w' Gamma w`` with
``Gamma_ij = E[(g1 phi_i - g2)'(g1 phi_j - g2)]``. The best combination of the
``k`` base maps of an input is therefore the solution of a ``k``-dimensional
quadratic programme over the simplex, solved exactly per input.
"""

import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._random import draw_seed
from ..utils._sklearn_private import HasMethods, Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._torch_base import TorchEstimatorMixin
from ._aggregation import AGG_VAR_OFFSET, _inverse_variance
from ._attributions import BASE_METHODS, _Context, _draw, _feature_vector, _groups
from ._metrics import _infidelity_values, _optimal_scale, _output_drops, _subset_masks
from ._model import _is_torch_module, make_model
from ._simplex_qp import MAX_METHODS, solve_simplex_qp

__all__ = ["AttributionCombiner"]

_N_BACKGROUND = 50
_DEFAULT_METHODS = ("saliency", "input_x_gradient", "integrated_gradients", "smoothgrad", "gradient_shap",
                    "feature_ablation")


class AttributionCombiner(OneToOneFeatureMixin, TransformerMixin, TorchEstimatorMixin, BaseEstimator):
    """Optimal convex combination of feature attributions, per input.

    Read more in the :ref:`User Guide <inspection>`.

    For each input ``x``, the base attribution maps ``phi_1(x), ..., phi_k(x)``
    (saliency, integrated gradients, SmoothGrad, ablation, ...) are normalised
    and combined with the weights ``w`` of the probability simplex that
    minimise a quality criterion of the combination, estimated on random
    perturbations of ``x``:

    * ``"faithfulness"``: infidelity ``E_I[(I' phi - (f(x) - f(x - I)))^2]``,
      ``I`` setting a random ``perturb_fraction`` of the features (groups) to
      ``baseline``, each map rescaled by its optimal factor (Yeh et al.);
    * ``"robustness"``: sensitivity ``E_e ||phi(x) - phi(x + e)||^2``, ``e``
      uniform in ``[-noise_level, noise_level]`` times each feature's scale;
    * ``"both"``: ``lambda_robust`` times the robustness matrix plus
      ``1 - lambda_robust`` times the faithfulness matrix, each divided by its
      mean diagonal (the average base method's value).

    Both criteria are quadratic in ``w`` (``Q = w' Gamma w``), so the weights
    solve a small quadratic programme over the simplex, solved exactly per
    input: on the perturbations it was fitted on, the combination is never
    worse than the best base method.

    ``fit`` fits the wrapped ``estimator`` when it is an unfitted
    scikit-learn estimator, and records what the explanations need (baseline,
    feature scales, a background sample, the random seed). ``transform``
    returns the combined maps, ``explain`` also the weights and the base maps,
    ``evaluate`` the held-out quality of every method and of the combination,
    and ``score`` the negative quality on fresh perturbations, so that
    :class:`~sklearn.model_selection.GridSearchCV` can tune the criterion,
    ``lambda_robust``, the perturbation scales or the methods.

    Parameters
    ----------
    estimator : estimator, torch.nn.Module, callable or None, default=None
        The model explained. An unfitted scikit-learn classifier or regressor
        is cloned and fitted on ``(X, y)`` in ``fit``; a fitted one is used as
        it is (wrap it in :class:`~sklearn.frozen.FrozenEstimator` to keep it
        fitted through ``clone``, e.g. in a grid search). A torch module
        (mapping ``(n, n_features)`` float tensors to ``(n,)`` or
        ``(n, n_outputs)``) is copied to the CPU and differentiated with
        autograd; a callable on numpy arrays is a black box. None means
        :class:`~sklearn.linear_model.LogisticRegression` for a
        classification target and :class:`~sklearn.linear_model.Ridge`
        otherwise.
    methods : list or tuple, default=("saliency", "input_x_gradient", \
"integrated_gradients", "smoothgrad", "gradient_shap", "feature_ablation")
        The base methods, at most 12: names among ``"saliency"``,
        ``"input_x_gradient"``, ``"integrated_gradients"``, ``"smoothgrad"``,
        ``"vargrad"``, ``"gradient_shap"``, ``"feature_ablation"`` and
        ``"kernel_shap"``; ``(name, params)`` pairs to set a method's
        parameters (variants of one method can be combined, e.g.
        ``("smoothgrad", {"noise_scale": 0.3})``); or callables mapping
        ``X`` to maps of the same shape. A parameter not set takes the
        default of the public function of the same name (for instance
        ``n_steps=50`` for :func:`integrated_gradients`, ``n_samples=256``
        for :func:`kernel_shap`), so a method means the same inside and
        outside the combiner.
    criterion : {"faithfulness", "robustness", "both"}, default="faithfulness"
        The quality the weights optimise.
    lambda_robust : float, default=0.5
        Share of robustness in ``criterion="both"``, in ``[0, 1]``.
    normalize : {"l2", "max_abs"} or None, default="l2"
        Per-input normalisation of every base map before combining, so that a
        method's scale does not decide its weight.
    n_robustness_samples : int, default=20
        Perturbations ``e`` per input for the robustness matrix (and again,
        fresh, in ``score``). Each costs one re-explanation by every method.
    noise_level : float, default=0.1
        Half-width of the robustness perturbations, in units of
        ``feature_scale``.
    n_faithfulness_samples : int, default=50
        Perturbations ``I`` per input for the faithfulness matrix (and again,
        fresh, in ``score``).
    perturb_fraction : float, default=0.25
        Share of the features (groups) set to the baseline by one
        faithfulness perturbation.
    baseline : "mean", float or array-like of shape (n_features,), default="mean"
        Reference input of integrated gradients, ablation, KernelSHAP and the
        faithfulness perturbations; ``"mean"`` is the training mean.
    feature_groups : array-like of shape (n_features,), default=None
        Group label of each feature (image segments, one-hot blocks): groups
        are ablated together by ablation, KernelSHAP and the faithfulness
        perturbations.
    feature_scale : {"std", "unit"}, default="std"
        Unit of the perturbations (robustness noise, SmoothGrad and
        GradientSHAP noise, finite-difference steps): each feature's training
        standard deviation, or 1.
    target : int or None, default=None
        Output explained when the model has several; None explains the
        largest output at each input (the predicted class).
    response_method : {"auto", "predict_proba", "decision_function", "predict"}, \
default="auto"
        Method of a scikit-learn estimator giving the explained output;
        ``"auto"`` takes the first available, in that order.
    batch_size : int, default=4096
        Rows per model call.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where a torch module runs. Resolved at the start of ``fit`` for
        every kind of model: ``"cuda"`` without a GPU raises a
        ``ValueError`` there, before any work; ``"auto"`` records its choice
        in ``device_``. Black-box models (scikit-learn estimators,
        callables) always run where they are.
    n_jobs : int, default=None
        Workers over the batches of a black-box model (a scikit-learn
        estimator or callable).
    random_state : int, RandomState instance or None, default=None
        Seeds all perturbations and the random draws of the base methods
        (drawn once and shared by all inputs, so each input's result depends
        on that input only).

    Attributes
    ----------
    estimator_ : object
        The explained model: the fitted clone of ``estimator``, the fitted
        estimator itself, a CPU copy of the torch module, or the callable.
    method_names_ : ndarray of shape (n_methods,)
        Names of the base methods, in the order of the weights.
    baseline_ : ndarray of shape (n_features,)
        The baseline input.
    scale_ : ndarray of shape (n_features,)
        Unit of each feature's perturbations.
    background_ : ndarray of shape (n_background, n_features)
        Training rows drawn as GradientSHAP's reference distribution.
    seed_ : int
        Seed of every random draw made by ``transform`` and ``score``.
    device_ : str
        Where a torch module runs (``"cpu"`` or ``"cuda"``), resolved from
        ``device`` in ``fit``.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features,)
        Feature names, when X had string column names.

    See Also
    --------
    integrated_gradients : One of the base methods.
    aggregate_attributions : The paper's fixed-rule baselines AGG_mean and AGG_var.
    infidelity : The faithfulness criterion, on any attribution.
    avg_sensitivity : The robustness criterion, on any explanation function.

    Notes
    -----
    Per input, with ``phi_i`` the normalised base maps:

    * faithfulness: ``Gamma_ij = mean_I (b_i I'phi_i - df)(b_j I'phi_j - df)``
      with ``df = f(x) - f(x - I)`` and ``b_i`` the optimal rescaling of map
      ``i`` on the same perturbations; the output is ``sum_i w_i b_i phi_i``,
      the maps that were optimised (the official code averages the raw maps
      instead);
    * robustness: ``Gamma_ij = mean_e (phi_i(x) - phi_i(x+e))'(phi_j(x) -
      phi_j(x+e))``, the explained output fixed to the target at ``x``; the
      output is ``sum_i w_i phi_i``;
    * both: the rescaled maps ``b_i phi_i`` of the faithfulness criterion
      enter both matrices (with ``b_i`` fixed at ``x``), so the two terms
      measure the same combined map. A method that explains little gets a
      small ``b_i`` and looks robust; keep ``lambda_robust`` moderate.

    Infidelity compares ``I' phi`` with the output drop (Yeh et al., captum):
    for a linear model the gradient is the exact map, and attribution-form
    maps such as ``(x - b) * grad f`` are scored through their optimal
    rescaling only.

    Assumptions where the paper or its code leaves a choice (ours): maps are
    L2-normalised per input; the weights of the "both" criterion use each
    matrix divided by its mean diagonal (the official code divides by the
    Frobenius norms of the stacked terms, the same up to a constant);
    perturbations are common random numbers shared by all inputs (one set of
    ``e`` and ``I`` draws), so a row's result never depends on the other rows;
    the sensitivity of a combination is measured with its weights fixed (the
    paper's ``phi_w(x + e) = sum_i w_i phi_i(x + e)``). Gradients of black-box
    models are central finite differences with steps ``1e-4 * scale_``; on
    piecewise-constant models (trees) they vanish, use ablation and
    KernelSHAP there. ``score`` returns ``-mean infidelity`` (optimally
    rescaled, on fresh ablations), ``-mean sensitivity`` (fresh ``e``), or for
    "both" minus the mean of the two, each relative to the average base
    method on the same perturbations.

    References
    ----------
    .. [1] Decker, T., Bhattarai, A. R., Gu, J., Tresp, V. and Buettner, F.
       "Provably Better Explanations with Optimized Aggregation of Feature
       Attributions". Proceedings of the 41st International Conference on
       Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_icml.inspection import AttributionCombiner
    >>> X, y = load_iris(return_X_y=True)
    >>> comb = AttributionCombiner(LogisticRegression(max_iter=500), random_state=0).fit(X, y)
    >>> phi, weights, base = comb.explain(X[:3], return_weights=True)
    >>> phi.shape, weights.shape, base.shape
    ((3, 4), (3, 6), (3, 6, 4))
    >>> bool(abs(weights.sum(axis=1) - 1).max() < 1e-12)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [None, HasMethods(["fit"]), HasMethods(["predict"]), callable],
        "methods": [list, tuple],
        "criterion": [StrOptions({"faithfulness", "robustness", "both"})],
        "lambda_robust": [Interval(Real, 0, 1, closed="both")],
        "normalize": [StrOptions({"l2", "max_abs"}), None],
        "n_robustness_samples": [Interval(Integral, 1, None, closed="left")],
        "noise_level": [Interval(Real, 0, None, closed="neither")],
        "n_faithfulness_samples": [Interval(Integral, 2, None, closed="left")],
        "perturb_fraction": [Interval(Real, 0, 1, closed="right")],
        "baseline": [StrOptions({"mean"}), Real, "array-like"],
        "feature_groups": [None, "array-like"],
        "feature_scale": [StrOptions({"std", "unit"})],
        "target": [None, Interval(Integral, 0, None, closed="left")],
        "response_method": [StrOptions({"auto", "predict_proba", "decision_function", "predict"})],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, methods=_DEFAULT_METHODS, criterion="faithfulness", lambda_robust=0.5,
                 normalize="l2", n_robustness_samples=20, noise_level=0.1, n_faithfulness_samples=50,
                 perturb_fraction=0.25, baseline="mean", feature_groups=None, feature_scale="std",
                 target=None, response_method="auto", batch_size=4096, device="cpu", n_jobs=None,
                 random_state=None):
        self.estimator = estimator
        self.methods = methods
        self.criterion = criterion
        self.lambda_robust = lambda_robust
        self.normalize = normalize
        self.n_robustness_samples = n_robustness_samples
        self.noise_level = noise_level
        self.n_faithfulness_samples = n_faithfulness_samples
        self.perturb_fraction = perturb_fraction
        self.baseline = baseline
        self.feature_groups = feature_groups
        self.feature_scale = feature_scale
        self.target = target
        self.response_method = response_method
        self.batch_size = batch_size
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state

    # -- fitting -------------------------------------------------------------------------------
    def _needs_fit(self):
        """Whether ``fit`` has to fit the wrapped estimator (so it needs ``y``)."""
        est = self.estimator
        if est is None:
            return True
        if _is_torch_module(est) or not hasattr(est, "fit"):
            return False
        try:
            check_is_fitted(est)
        except NotFittedError:
            return True
        except TypeError:  # not a scikit-learn estimator
            return False
        return False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._needs_fit()
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the wrapped estimator if needed, and record what the explanations use.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data: fits an unfitted ``estimator``, and gives the
            ``"mean"`` baseline, the feature scales and GradientSHAP's
            background sample.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Target of the wrapped estimator; needed only when it is fitted here.

        Returns
        -------
        self : object
            Fitted combiner.
        """
        name = type(self).__name__
        with self._torch_fit_context():  # device="cuda" without a GPU fails here, before any work, whatever the model
            needs_fit = self._needs_fit()
            if needs_fit:
                X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=np.float64, multi_output=True)
            else:
                X = validate_data(self, as_numpy(X), dtype=np.float64)
            n, d = X.shape
            specs = self._method_specs()
            self.method_names_ = np.array(_unique_names([s[0] if isinstance(s[0], str) else s[2] for s in specs]),
                                          dtype=object)

            if isinstance(self.baseline, str):
                self.baseline_ = X.mean(axis=0)
            else:
                self.baseline_ = _feature_vector(self.baseline, d, "baseline", name)
            _groups(self.feature_groups, d, name)  # validates the labels

            est = self.estimator
            if needs_fit:
                if est is None:
                    kind = type_of_target(y)
                    est = LogisticRegression() if kind in ("binary", "multiclass") else Ridge()
                self.estimator_ = clone(est).fit(X, y)
            elif _is_torch_module(est):
                self.estimator_ = copy.deepcopy(est).cpu().eval()
            else:
                self.estimator_ = est

            self.scale_ = X.std(axis=0) if self.feature_scale == "std" else np.ones(d)
            rng = check_random_state(self.random_state)
            self.seed_ = draw_seed(rng)
            idx = rng.choice(n, size=min(n, _N_BACKGROUND), replace=False)
            self.background_ = X[np.sort(idx)]
        return self

    def _method_specs(self):
        """Validate ``methods``: a list of (name or callable, params, display name)."""
        name = type(self).__name__
        if len(self.methods) == 0:
            raise ValueError(f"{name}: methods must name at least one attribution method; got {self.methods!r}.")
        if len(self.methods) > MAX_METHODS:
            raise ValueError(f"{name}: at most {MAX_METHODS} methods can be combined exactly; "
                             f"got {len(self.methods)}.")
        specs = []
        for item in self.methods:
            if isinstance(item, str):
                method, params = item, {}
            elif (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
                  and isinstance(item[1], dict)):
                method, params = item
            elif callable(item):
                specs.append((item, {}, getattr(item, "__name__", type(item).__name__)))
                continue
            else:
                raise ValueError(f"{name}: each entry of methods must be a method name, a (name, params) pair "
                                 f"or a callable; got {item!r}.")
            if method not in BASE_METHODS:
                raise ValueError(f"{name}: unknown attribution method {method!r}; choose among "
                                 f"{sorted(BASE_METHODS)}.")
            allowed = BASE_METHODS[method].params
            unknown = set(params) - set(allowed)
            if unknown:
                raise ValueError(f"{name}: method {method!r} takes the parameters {sorted(allowed)}; "
                                 f"got {sorted(unknown)}.")
            specs.append((method, {**BASE_METHODS[method].defaults, **params}, method))
        return specs

    # -- the computation -------------------------------------------------------------------------
    def _model(self):
        return make_model(self.estimator_, response_method=self.response_method, device=self.device_,
                          batch_size=self.batch_size, n_jobs=self.n_jobs,
                          fd_step=1e-4 * np.where(self.scale_ > 0, self.scale_, 1.0),
                          caller=type(self).__name__)

    def _draws(self, specs, n_eval=None):
        """Every random draw, from ``seed_``: per-method draws, and fit / held-out perturbations.

        ``n_eval`` = (robustness, faithfulness) counts of the held-out
        perturbations, by default those of the fit.
        """
        d = self.n_features_in_
        ctx = self._context()
        rngs = [np.random.RandomState((self.seed_ + 7919 * i) % (2 ** 32)) for i in range(len(specs) + 4)]
        per_method = [{} if callable(method) else _draw(method, params, ctx, d, rng)
                      for (method, params, _), rng in zip(specs, rngs)]
        labels, n_groups = ctx.labels, ctx.n_groups
        r_fit, r_eval, f_fit, f_eval = rngs[len(specs):]
        m_r, m_f = self.n_robustness_samples, self.n_faithfulness_samples
        e_r, e_f = (m_r, m_f) if n_eval is None else n_eval
        amp = self.noise_level * self.scale_
        return {
            "labels": labels,
            "n_groups": n_groups,
            "methods": per_method,
            "eps_fit": r_fit.uniform(-1.0, 1.0, size=(m_r, d)) * amp,
            "eps_eval": r_eval.uniform(-1.0, 1.0, size=(e_r, d)) * amp,
            "masks_fit": _subset_masks(m_f, self.perturb_fraction, labels, n_groups, f_fit),
            "masks_eval": _subset_masks(e_f, self.perturb_fraction, labels, n_groups, f_eval),
        }

    def _context(self):
        labels, n_groups = _groups(self.feature_groups, self.n_features_in_, type(self).__name__)
        return _Context(caller=type(self).__name__, baseline=self.baseline_, labels=labels, n_groups=n_groups,
                        scale=self.scale_, background=self.background_)

    def _base_maps(self, model, X, t, specs, draws):
        """Normalised base maps, shape (k, n, d)."""
        maps = np.empty((len(specs), X.shape[0], X.shape[1]))
        ctx = self._context()
        for i, ((method, params, _), dr) in enumerate(zip(specs, draws["methods"])):
            if callable(method):
                out = np.asarray(as_numpy(method(X)), dtype=np.float64)
                if out.shape != X.shape:
                    raise ValueError(f"{type(self).__name__}: the callable method {specs[i][2]!r} returned shape "
                                     f"{out.shape} for inputs of shape {X.shape}.")
            else:
                out = BASE_METHODS[method].run(model, X, t, params, ctx, dr)
            maps[i] = out
        return _normalize(maps, self.normalize)

    def _terms(self, model, X, t, phi, specs, draws, which, faithfulness, robustness):
        """Per-input quantities on the ``which`` ("fit" or "eval") perturbations.

        Returns a dict with ``a`` (k, n, m_f), the projections ``I' phi_i``,
        ``I`` (n, m_f, d), the perturbations, and ``df`` (n, m_f), the
        output drops, when ``faithfulness``; and
        ``delta`` (k, n, m_r, d), the changes of the base maps under the
        robustness perturbations, when ``robustness``.
        """
        out = {}
        n, d = X.shape
        if faithfulness:
            I = draws[f"masks_{which}"][None] * (X - self.baseline_)[:, None, :]  # (n, m_f, d)
            out["df"] = _output_drops(model, X, t, I)
            out["a"] = np.einsum("knd,nmd->knm", phi, I)
            out["I"] = I
        if robustness:
            eps = draws[f"eps_{which}"]
            m_r = eps.shape[0]
            Xp = (X[:, None, :] + eps[None]).reshape(-1, d)
            tp = None if t is None else np.repeat(t, m_r)
            phip = self._base_maps(model, Xp, tp, specs, draws).reshape(len(specs), n, m_r, d)
            out["delta"] = phi[:, :, None, :] - phip
        return out

    def _weights(self, terms, k, criterion):
        """Per-input scales of the maps, the matrix Gamma, and the optimal weights."""
        coef = G_f = G_r = None
        if criterion in ("faithfulness", "both"):
            a, df = terms["a"], terms["df"]
            coef = _optimal_scale(a, df[None])  # (k, n)
            r = coef[..., None] * a - df[None]
            G_f = np.einsum("inm,jnm->nij", r, r) / a.shape[2]
        if criterion in ("robustness", "both"):
            delta = terms["delta"]
            if coef is not None:
                delta = coef[:, :, None, None] * delta
            G_r = np.einsum("inmd,jnmd->nij", delta, delta) / delta.shape[2]
        if criterion == "faithfulness":
            G = G_f
        elif criterion == "robustness":
            G = G_r
            coef = np.ones(G.shape[:2][::-1])
        else:
            G = self.lambda_robust * _unit_diag(G_r) + (1 - self.lambda_robust) * _unit_diag(G_f)
        w, value = solve_simplex_qp(G)
        return coef, G, w, value

    def _chunks(self, n, k):
        d = self.n_features_in_
        per_input = k * (self.n_robustness_samples + 1) * d + k * self.n_faithfulness_samples
        step = max(1, int(4_000_000 // max(1, per_input)))
        return [slice(s, min(s + step, n)) for s in range(0, n, step)]

    def _explain_full(self, X, evaluate=(), n_eval=None, criteria=None):
        """The combination and everything around it, for validated ``X`` (float64).

        ``evaluate`` may hold ``"infidelity"`` and ``"sensitivity"``: the
        held-out values of the base maps, the combination, the plain
        average of the normalised maps (AGG_mean) and their inverse-variance
        aggregate (AGG_var) (columns ``0..k-1``, ``k``, ``k+1``, ``k+2``),
        on ``n_eval`` = (robustness, faithfulness) fresh perturbations.
        ``criteria`` (a tuple of criteria) computes several combinations on
        the same base maps and perturbations and returns a dict of results.
        """
        specs = self._method_specs()
        k = len(specs)
        model = self._model()
        draws = self._draws(specs, n_eval)
        n, d = X.shape
        todo = (self.criterion,) if criteria is None else tuple(criteria)
        results = {}
        for criterion in todo:
            res = {"draws": draws, "attributions": np.empty((n, d)), "weights": np.empty((n, k)),
                   "base": np.empty((n, k, d)), "objective": np.empty(n), "base_objectives": np.empty((n, k))}
            for key in evaluate:
                res[key] = np.empty((n, k + 3))
            if "sensitivity" in evaluate:
                res["relative_sensitivity"] = np.empty((n, k + 3))
            results[criterion] = res
        faith = any(c in ("faithfulness", "both") for c in todo)
        robust = any(c in ("robustness", "both") for c in todo)
        for sl in self._chunks(n, k):
            Xc = X[sl]
            t = model.resolve_target(Xc, self.target)
            phi = self._base_maps(model, Xc, t, specs, draws)
            terms = self._terms(model, Xc, t, phi, specs, draws, "fit", faith, robust)
            ev = None
            if evaluate:
                ev = self._terms(model, Xc, t, phi, specs, draws, "eval", "infidelity" in evaluate,
                                 "sensitivity" in evaluate)
            for criterion, res in results.items():
                coef, G, w, value = self._weights(terms, k, criterion)
                maps = coef[..., None] * phi  # (k, n, d): the maps that were optimised
                res["attributions"][sl] = np.einsum("nk,knd->nd", w, maps)
                res["weights"][sl] = w
                res["base"][sl] = maps.transpose(1, 0, 2)
                res["objective"][sl] = value
                res["base_objectives"][sl] = np.einsum("nii->ni", G)
                if ev is not None:
                    _evaluate_chunk(res, sl, ev, phi, coef, w)
        return results if criteria is not None else results[self.criterion]

    # -- public API ------------------------------------------------------------------------------
    def _validated(self, X):
        return validate_data(self, as_numpy(X), reset=False, dtype=np.float64)

    def transform(self, X):
        """Combined attributions: the optimal convex combination of the base maps, per input.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs to explain.

        Returns
        -------
        attributions : ndarray of shape (n_samples, n_features)
            One combined map per input.
        """
        check_is_fitted(self)
        X = self._validated(X)
        return self._explain_full(X)["attributions"]

    def explain(self, X, return_weights=False):
        """Combined attributions, with the per-input weights and the base maps if asked.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs to explain.
        return_weights : bool, default=False
            Also return the weights and the base maps.

        Returns
        -------
        attributions : ndarray of shape (n_samples, n_features)
            One combined map per input.
        weights : ndarray of shape (n_samples, n_methods)
            The convex weights of each input (rows sum to one), in the order
            of ``method_names_``. Only when ``return_weights`` is True.
        base_attributions : ndarray of shape (n_samples, n_methods, n_features)
            The (normalised, and for the faithfulness criterion rescaled)
            base maps that were combined:
            ``attributions[i] == weights[i] @ base_attributions[i]``. Only
            when ``return_weights`` is True.
        """
        check_is_fitted(self)
        X = self._validated(X)
        res = self._explain_full(X)
        if return_weights:
            return res["attributions"], res["weights"], res["base"]
        return res["attributions"]

    def evaluate(self, X, metrics=("infidelity", "sensitivity")):
        """Held-out quality of every base method, of the combination and of the fixed-rule aggregates.

        Fresh perturbations, independent of those the weights were fitted on,
        as in :meth:`score`; the combination keeps the weights of each input.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs to explain.
        metrics : tuple of {"infidelity", "sensitivity"}, default=("infidelity", "sensitivity")
            What to compute. Sensitivity re-explains every input at
            ``n_robustness_samples`` perturbed copies.

        Returns
        -------
        result : :class:`~sklearn.utils.Bunch`
            ``names``: the methods, then ``"combination"``, ``"average"``
            (the paper's AGG_mean of the normalised base maps) and
            ``"inverse_variance"`` (its AGG_var, see
            :func:`aggregate_attributions`) (``n_methods + 3`` names);
            ``infidelity`` (optimally rescaled, on
            ``n_faithfulness_samples`` ablations), ``sensitivity``
            (``E ||phi(x) - phi(x + e)||^2``) and ``relative_sensitivity``
            (divided by ``||phi(x)||^2``): arrays of shape
            ``(n_samples, n_methods + 3)``, for the metrics asked.
        """
        check_is_fitted(self)
        X = self._validated(X)
        metrics = tuple(metrics)
        unknown = set(metrics) - {"infidelity", "sensitivity"}
        if unknown or not metrics:
            raise ValueError(f"{type(self).__name__}.evaluate: metrics must be among 'infidelity' and "
                             f"'sensitivity'; got {metrics!r}.")
        res = self._explain_full(X, evaluate=metrics)
        out = Bunch(names=np.array(list(self.method_names_) + ["combination", "average", "inverse_variance"],
                                   dtype=object))
        for key in ("infidelity", "sensitivity", "relative_sensitivity"):
            if key in res:
                out[key] = res[key]
        return out

    def score(self, X, y=None):
        """Negative quality of the combined attributions on fresh perturbations.

        The perturbations are drawn independently of those the weights were
        fitted on. Faithfulness: minus the mean (optimally rescaled)
        infidelity; robustness: minus the mean sensitivity; both: minus the
        mean of the two, each divided by the average base method's value on
        the same input. Higher is better.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs to explain.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Negative held-out quality.
        """
        check_is_fitted(self)
        X = self._validated(X)
        evaluate = {"faithfulness": ("infidelity",), "robustness": ("sensitivity",),
                    "both": ("infidelity", "sensitivity")}[self.criterion]
        res = self._explain_full(X, evaluate=evaluate)
        k = res["weights"].shape[1]
        if self.criterion == "faithfulness":
            return -float(np.mean(res["infidelity"][:, k]))
        if self.criterion == "robustness":
            return -float(np.mean(res["sensitivity"][:, k]))
        infd = res["infidelity"][:, k]
        sens = res["sensitivity"][:, k]
        ref_i = res["infidelity"][:, :k].mean(axis=1)
        ref_s = res["sensitivity"][:, :k].mean(axis=1)
        rel = 0.5 * (_safe_ratio(infd, ref_i) + _safe_ratio(sens, ref_s))
        return -float(np.mean(rel))


def _evaluate_chunk(res, sl, ev, phi, coef, w):
    """Held-out infidelity and sensitivity of the base maps, the combination, AGG_mean and AGG_var."""
    k = phi.shape[0]
    uniform = np.full_like(w, 1.0 / k)
    var_map = _inverse_variance(phi.transpose(1, 0, 2), AGG_VAR_OFFSET)  # (n, d)
    if "a" in ev:
        a, df = ev["a"], ev["df"]  # (k, n, m_f), (n, m_f)
        a_all = np.concatenate([a, np.einsum("nk,knm->nm", w, coef[..., None] * a)[None],
                                np.einsum("nk,knm->nm", uniform, a)[None],
                                np.einsum("nd,nmd->nm", var_map, ev["I"])[None]])
        res["infidelity"][sl] = _infidelity_values(a_all, df[None], normalize=True).T
    if "delta" in ev:
        delta = ev["delta"]  # (k, n, m_r, d)
        # AGG_var's weights depend on the maps, so it is recomputed from the base maps at x + e
        phi_moved = phi[:, :, None, :] - delta
        var_delta = var_map[:, None, :] - _inverse_variance(phi_moved.transpose(1, 2, 0, 3), AGG_VAR_OFFSET)
        d_all = np.concatenate([delta, np.einsum("nk,knmd->nmd", w, coef[:, :, None, None] * delta)[None],
                                np.einsum("nk,knmd->nmd", uniform, delta)[None], var_delta[None]])
        sens = (d_all ** 2).sum(axis=3).mean(axis=2)  # (k + 3, n)
        maps_all = np.concatenate([phi, np.einsum("nk,knd->nd", w, coef[..., None] * phi)[None],
                                   phi.mean(axis=0)[None], var_map[None]])
        norms = (maps_all ** 2).sum(axis=2)
        res["sensitivity"][sl] = sens.T
        res["relative_sensitivity"][sl] = (sens / np.where(norms > 0, norms, 1.0)).T


def _normalize(maps, kind):
    if kind is None:
        return maps
    if kind == "l2":
        norm = np.linalg.norm(maps, axis=-1, keepdims=True)
    else:
        norm = np.abs(maps).max(axis=-1, keepdims=True)
    return maps / np.where(norm > 0, norm, 1.0)


def _unit_diag(G):
    """``G`` divided by its mean diagonal, per input (left as is where that is zero)."""
    s = np.einsum("nii->n", G) / G.shape[1]
    return G / np.where(s > 0, s, 1.0)[:, None, None]


def _safe_ratio(num, den):
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _unique_names(names):
    seen = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out
