"""Base attribution methods: closed forms, exact Shapley values, autograd = finite differences, captum."""

from itertools import combinations
from math import factorial

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LinearRegression, LogisticRegression

from sklearn_icml.inspection import (
    feature_ablation,
    gradient_shap,
    input_x_gradient,
    integrated_gradients,
    kernel_shap,
    saliency,
    smoothgrad,
    vargrad,
)

torch = pytest.importorskip("torch")

W = np.array([1.0, -2.0, 0.5, 3.0])
C = 0.7


def linear(X):
    return X @ W + C


def _X(n=6, d=4, seed=0):
    return np.random.RandomState(seed).standard_normal((n, d))


def _torch_mlp(d=5, k=3, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Tanh(), torch.nn.Linear(8, k)).to(dtype)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=dtype))
    return net.eval()


def test_closed_forms_on_a_linear_model():
    X = _X()
    b = np.array([0.5, 0.0, -1.0, 2.0])
    np.testing.assert_allclose(saliency(linear, X), np.tile(np.abs(W), (6, 1)), rtol=1e-6)
    np.testing.assert_allclose(saliency(linear, X, abs=False), np.tile(W, (6, 1)), rtol=1e-6)
    np.testing.assert_allclose(input_x_gradient(linear, X), X * W, rtol=1e-6, atol=1e-9)
    for method in ("gausslegendre", "riemann_middle", "riemann_trapezoid", "riemann_left", "riemann_right"):
        np.testing.assert_allclose(integrated_gradients(linear, X, baseline=b, n_steps=5, method=method),
                                   (X - b) * W, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(smoothgrad(linear, X, random_state=0), np.tile(np.abs(W), (6, 1)), rtol=1e-6)
    np.testing.assert_allclose(vargrad(linear, X, random_state=0), 0.0, atol=1e-8)
    np.testing.assert_allclose(gradient_shap(linear, X, baselines=b, random_state=0), (X - b) * W,
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(feature_ablation(linear, X, baseline=b), (X - b) * W, rtol=1e-12, atol=1e-12)
    # exhaustive (2^4 - 2 <= 256 coalitions) and sampled KernelSHAP are both exact on additive models
    np.testing.assert_allclose(kernel_shap(linear, X, baseline=b), (X - b) * W, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(kernel_shap(linear, X, baseline=b, n_samples=6, random_state=0), (X - b) * W,
                               rtol=1e-9, atol=1e-9)


def _exact_shapley(f, x, b):
    d = len(x)
    phi = np.zeros(d)
    for j in range(d):
        others = [i for i in range(d) if i != j]
        for size in range(d):
            for S in combinations(others, size):
                z = b.copy()
                z[list(S)] = x[list(S)]
                with_j = z.copy()
                with_j[j] = x[j]
                weight = factorial(size) * factorial(d - size - 1) / factorial(d)
                phi[j] += weight * (f(with_j[None])[0] - f(z[None])[0])
    return phi


def test_kernel_shap_is_the_exact_shapley_value_when_all_coalitions_fit():
    def f(X):
        return np.tanh(X[:, 0] * X[:, 1]) + X[:, 2] ** 2 * X[:, 3] - np.sin(X[:, 4])

    X = _X(3, 5, seed=1)
    b = np.full(5, 0.3)
    phi = kernel_shap(f, X, baseline=b, n_samples=30)  # 2^5 - 2 = 30 coalitions: exhaustive
    for i in range(3):
        np.testing.assert_allclose(phi[i], _exact_shapley(f, X[i], b), rtol=1e-9, atol=1e-10)
    # sampled: efficiency holds exactly, values approach the exact ones
    phi_s = kernel_shap(f, X, baseline=b, n_samples=20, random_state=0)
    np.testing.assert_allclose(phi_s.sum(axis=1), f(X) - f(b[None]), rtol=1e-10)


def test_feature_groups_share_their_group_value():
    X = _X(4, 4)
    groups = [0, 0, 1, 1]
    abl = feature_ablation(linear, X, baseline=0.0, feature_groups=groups)
    expected = np.repeat((X * W).reshape(4, 2, 2).sum(axis=2), 2, axis=1)
    np.testing.assert_allclose(abl, expected, rtol=1e-12, atol=1e-12)
    ks = kernel_shap(linear, X, feature_groups=groups)
    np.testing.assert_allclose(ks, expected, rtol=1e-9, atol=1e-9)


def test_integrated_gradients_completeness():
    def f(X):
        return np.tanh(X[:, 0]) * X[:, 1] + np.exp(0.3 * X[:, 2])

    X = _X(5, 3)
    b = np.array([0.1, -0.2, 0.0])
    ig = integrated_gradients(f, X, baseline=b, n_steps=40)
    np.testing.assert_allclose(ig.sum(axis=1), f(X) - f(b[None]), rtol=1e-6, atol=1e-8)


def test_finite_differences_match_the_analytic_gradient_of_a_classifier():
    X, y = make_classification(n_samples=80, n_features=4, n_informative=3, n_redundant=0, random_state=0)
    clf = LogisticRegression().fit(X, y)
    proba = clf.predict_proba(X[:5])
    pred = proba.argmax(axis=1)
    # d p_c / dx = p_c (1 - p_c) * (+-w) for the predicted class c
    sign = np.where(pred == 1, 1.0, -1.0)[:, None]
    expected = (proba[:, 1] * proba[:, 0])[:, None] * sign * clf.coef_[0]
    np.testing.assert_allclose(saliency(clf, X[:5], abs=False), expected, rtol=1e-6, atol=1e-10)
    # the explained output follows response_method and target
    dec = saliency(clf, X[:5], abs=False, response_method="decision_function")
    np.testing.assert_allclose(dec, np.tile(clf.coef_[0], (5, 1)), rtol=1e-6)
    p0 = saliency(clf, X[:5], abs=False, target=0)
    np.testing.assert_allclose(p0, -(proba[:, 1] * proba[:, 0])[:, None] * clf.coef_[0], rtol=1e-6, atol=1e-10)


def test_autograd_on_a_module_equals_finite_differences_on_the_same_function(device):
    net = _torch_mlp()

    def blackbox(Z):
        with torch.no_grad():
            return net(torch.tensor(Z)).numpy()

    X = _X(7, 5)
    for fn, kwargs in [(saliency, {}), (input_x_gradient, {}), (integrated_gradients, {"n_steps": 8}),
                       (smoothgrad, {"random_state": 0}), (vargrad, {"random_state": 0}),
                       (gradient_shap, {"baselines": _X(4, 5, seed=2), "noise_scale": 0.1, "random_state": 0}),
                       (feature_ablation, {}), (kernel_shap, {"n_samples": 16, "random_state": 0})]:
        ours = fn(net, X, device=device, **kwargs)
        box = fn(blackbox, X, **kwargs)
        np.testing.assert_allclose(ours, box, rtol=1e-5, atol=1e-7, err_msg=fn.__name__)


def test_module_is_never_modified():
    net = _torch_mlp().train()
    before = [p.detach().clone() for p in net.parameters()]
    saliency(net, _X(3, 5))
    assert net.training
    assert all(p.grad is None for p in net.parameters())
    for p, q in zip(net.parameters(), before):
        assert torch.equal(p, q)


def test_common_random_numbers_make_rows_independent():
    net = _torch_mlp()
    X = _X(9, 5)
    for fn, kwargs in [(smoothgrad, {}), (gradient_shap, {"baselines": _X(6, 5, seed=3), "noise_scale": 0.2}),
                       (kernel_shap, {"n_samples": 10})]:
        full = fn(net, X, random_state=4, **kwargs)
        np.testing.assert_allclose(fn(net, X[3:6], random_state=4, **kwargs), full[3:6], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fn(net, X[::-1], random_state=4, **kwargs), full[::-1], rtol=1e-12, atol=1e-12)
        assert not np.allclose(fn(net, X, random_state=5, **kwargs), full)


def test_errors_name_the_function_and_the_value():
    X = _X(3, 4)
    with pytest.raises(ValueError, match="single output, so target must be None"):
        saliency(linear, X, target=1)
    two = LogisticRegression().fit(*make_classification(n_samples=40, n_features=4, random_state=0))
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        saliency(two, X, target=[0, 1, 5])
    with pytest.raises(ValueError, match=r"baseline must be a number or an array of shape \(4,\)"):
        integrated_gradients(linear, X, baseline=[0.0, 1.0])
    with pytest.raises(ValueError, match="feature_groups must have one label per feature"):
        feature_ablation(linear, X, feature_groups=[0, 1])
    with pytest.raises(ValueError, match="NaN"):
        saliency(linear, np.array([[np.nan, 0, 0, 0]]))
    with pytest.raises(TypeError, match="must be a fitted scikit-learn estimator, a torch.nn.Module or a callable"):
        saliency(object(), X)
    with pytest.raises(ValueError, match="response_method='decision_function'"):
        saliency(LinearRegression().fit(X, [0.0, 1.0, 2.0]), X, response_method="decision_function")


@pytest.mark.peers
@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require gradients:UserWarning")
def test_saliency_and_integrated_gradients_equal_captum():
    captum_attr = pytest.importorskip("captum.attr")
    net = _torch_mlp(d=5, k=3, seed=1)
    X = _X(8, 5, seed=4)
    x = torch.tensor(X)
    targets = [0, 1, 2, 0, 1, 2, 2, 1]
    ours = saliency(net, X, target=targets)
    theirs = captum_attr.Saliency(net).attribute(x, target=targets).detach().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    base = np.full(5, 0.25)
    for method in ("gausslegendre", "riemann_middle", "riemann_left", "riemann_right"):
        ours = integrated_gradients(net, X, baseline=base, n_steps=20, method=method, target=targets)
        theirs = captum_attr.IntegratedGradients(net).attribute(
            x, baselines=torch.tensor(base)[None], target=targets, n_steps=20, method=method).detach().numpy()
        # captum turns its path points into a float32 tensor: agreement to float32 precision on them
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=method)
    # default target: the predicted class
    pred = net(x).argmax(1).tolist()
    np.testing.assert_allclose(integrated_gradients(net, X),
                               captum_attr.IntegratedGradients(net).attribute(x, target=pred).detach().numpy(),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(input_x_gradient(net, X, target=targets),
                               captum_attr.InputXGradient(net).attribute(x, target=targets).detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(feature_ablation(net, X, baseline=base, target=targets),
                               captum_attr.FeatureAblation(net).attribute(
                                   x, baselines=torch.tensor(base)[None], target=targets).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_estimator_fitted_on_a_dataframe_gets_its_column_names():
    pd = pytest.importorskip("pandas")
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    df = pd.DataFrame(X, columns=list("abcd"))
    clf = LogisticRegression().fit(df, y)  # predicting on a bare array would warn (an error in the tests)
    np.testing.assert_allclose(saliency(clf, X[:3]), saliency(LogisticRegression().fit(X, y), X[:3]), rtol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scalar_baseline_is_refused_by_name(bad):
    from sklearn_icml.inspection import faithfulness_correlation, infidelity

    X = _X(3, 4)
    calls = [lambda: integrated_gradients(linear, X, baseline=bad), lambda: feature_ablation(linear, X, baseline=bad),
             lambda: kernel_shap(linear, X, baseline=bad),
             lambda: infidelity(linear, X, np.ones_like(X), baseline=bad),
             lambda: faithfulness_correlation(linear, X, np.ones_like(X), baseline=bad)]
    for call in calls:
        with pytest.raises(ValueError, match="baseline must be finite"):
            call()
    with pytest.raises(ValueError, match=r"baseline must be finite; got nan at feature 2"):
        integrated_gradients(linear, X, baseline=[0.0, 0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="baselines must be .* non-finite"):
        gradient_shap(linear, X, baselines=bad)


def test_a_model_returning_nan_raises_instead_of_returning_nan_maps():
    def nan_away_from_zero(X):  # a model undefined at the all-zero baseline: log of the L1 norm
        s = np.abs(X).sum(axis=1)
        out = np.full(len(X), np.nan)
        out[s > 0] = np.log(s[s > 0])
        return out

    X = _X(3, 4) + 3.0
    assert np.all(np.isfinite(saliency(nan_away_from_zero, X)))  # fine where the model is defined
    for fn in (feature_ablation, kernel_shap):  # both evaluate the model at the baseline
        with pytest.raises(ValueError, match=r"non-finite outputs \(NaN or inf\)"):
            fn(nan_away_from_zero, np.zeros((2, 4)) + [1.0, 0.0, 0.0, 0.0], baseline=0.0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 1)).double()
    with torch.no_grad():
        net[0].bias.fill_(float("nan"))
    with pytest.raises(ValueError, match="non-finite outputs"):
        saliency(net, X)


def test_registry_defaults_are_the_public_functions_defaults():
    """The combiner takes each method's defaults from the public function: a single-method combination
    without normalisation or rescaling returns exactly the public function's map."""
    import inspect

    from sklearn_icml.inspection import AttributionCombiner
    from sklearn_icml.inspection._attributions import BASE_METHODS

    assert set(BASE_METHODS) == {"saliency", "input_x_gradient", "integrated_gradients", "smoothgrad", "vargrad",
                                 "gradient_shap", "feature_ablation", "kernel_shap"}
    assert inspect.signature(integrated_gradients).parameters["n_steps"].default == 50
    assert inspect.signature(kernel_shap).parameters["n_samples"].default == 256
    net = _torch_mlp(d=5, k=1, seed=2)
    X = _X(20, 5, seed=3)
    for fn in (saliency, input_x_gradient, integrated_gradients, feature_ablation, kernel_shap):
        name = fn.__name__
        comb = AttributionCombiner(net, methods=(name,), criterion="robustness", normalize=None,
                                   n_robustness_samples=1, random_state=0).fit(X)
        params = comb._method_specs()[0][1]
        sig = inspect.signature(fn).parameters
        assert params == {p: sig[p].default for p in BASE_METHODS[name].params}
        _, _, base = comb.explain(X[:4], return_weights=True)
        kw = {"baseline": comb.baseline_} if "baseline" in sig else {}
        np.testing.assert_allclose(base[:, 0], fn(net, X[:4], **kw), rtol=1e-12, atol=1e-12)
