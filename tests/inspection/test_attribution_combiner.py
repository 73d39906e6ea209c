"""AttributionCombiner: the QP optimum on the fit perturbations, held-out gains, the estimator contract."""

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_attribution_task
from sklearn_icml.inspection import AttributionCombiner, infidelity

torch = pytest.importorskip("torch")

CRITERIA = ["faithfulness", "robustness", "both"]
METHODS = ("saliency", "input_x_gradient", ("integrated_gradients", {"n_steps": 8}),
           ("smoothgrad", {"n_samples": 4}), ("gradient_shap", {"n_samples": 4}), "feature_ablation")


def _mlp(d=6, k=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.Tanh(), torch.nn.Linear(16, k)).double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) / np.sqrt(p.shape[-1]))
    return net.eval()


@pytest.fixture(scope="module")
def data():
    return make_attribution_task(n_samples=120, n_features=6, random_state=0)


def _small(estimator, **kw):
    params = dict(methods=METHODS, n_robustness_samples=8, n_faithfulness_samples=20, random_state=0)
    params.update(kw)
    return AttributionCombiner(estimator, **params)


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize("kind", ["torch", "sklearn"])
def test_qp_optimum_dominates_every_single_method_on_the_fit_perturbations(data, criterion, kind):
    X, y = data
    est = _mlp() if kind == "torch" else make_pipeline(StandardScaler(), LogisticRegression())
    comb = _small(est, criterion=criterion).fit(X, y)
    res = comb._explain_full(X[:25])
    base = res["base_objectives"]
    assert np.all(res["objective"] <= base.min(axis=1) + 1e-12 * np.maximum(1, base.max(axis=1)))
    if kind == "torch":  # a real mixture somewhere (for the logistic model, normalised saliency is constant)
        assert np.any(res["objective"] < base.min(axis=1) * (1 - 1e-3))
    np.testing.assert_allclose(res["attributions"], np.einsum("nk,nkd->nd", res["weights"], res["base"]))
    assert np.all(res["weights"] >= 0)
    np.testing.assert_allclose(res["weights"].sum(axis=1), 1, atol=1e-12)
    if criterion == "faithfulness":
        # the diagonal is each method's infidelity (optimally rescaled) on the fit ablations, as the public
        # metric computes it; the combination's infidelity is at most the QP value
        I = res["draws"]["masks_fit"][None] * (X[:25] - comb.baseline_)[:, None, :]
        for i in range(len(METHODS)):
            np.testing.assert_allclose(infidelity(comb.estimator_, X[:25], res["base"][:, i], perturbations=I),
                                       base[:, i], rtol=1e-8, atol=1e-14)
        combined = infidelity(comb.estimator_, X[:25], res["attributions"], perturbations=I)
        assert np.all(combined <= res["objective"] * (1 + 1e-9) + 1e-14)


def test_held_out_quality_beats_the_best_single_method():
    X, y = make_attribution_task(n_samples=200, n_features=8, random_state=1)
    net = _mlp(d=8, seed=1)
    comb = AttributionCombiner(net, methods=METHODS, criterion="faithfulness", n_faithfulness_samples=100,
                               n_robustness_samples=15, random_state=0).fit(X)
    ev = comb._explain_full(X[:30], evaluate=("infidelity", "sensitivity"), n_eval=(15, 200))
    k = len(METHODS)
    infd = ev["infidelity"]
    best = infd[:, :k].mean(axis=0).min()
    assert infd[:, k].mean() < 0.95 * best
    assert np.mean(infd[:, k] < infd[:, np.argmin(infd[:, :k].mean(axis=0))]) >= 0.8
    robust = clone(comb).set_params(criterion="robustness").fit(X)
    ev = robust._explain_full(X[:30], evaluate=("sensitivity",), n_eval=(15, 200))
    sens = ev["sensitivity"]
    assert sens[:, k].mean() < 0.9 * sens[:, :k].mean(axis=0).min()
    assert sens[:, k].mean() < sens[:, k + 1].mean()  # and than the plain average


@pytest.mark.parametrize("criterion", CRITERIA)
def test_score_is_the_negative_held_out_quality(data, criterion):
    X, y = data
    comb = _small(LogisticRegression(), criterion=criterion).fit(X, y)
    score = comb.score(X[:10])
    assert np.isfinite(score) and score < 0
    k = len(METHODS)
    res = comb._explain_full(X[:10], evaluate=("infidelity", "sensitivity"))
    if criterion == "faithfulness":
        assert score == pytest.approx(-res["infidelity"][:, k].mean())
    elif criterion == "robustness":
        assert score == pytest.approx(-res["sensitivity"][:, k].mean())
    else:  # mean of the two, each relative to the average base method: a combination beats 1 here
        assert -score < 1.0


def test_grid_search_and_pipeline(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), _small(LogisticRegression(), criterion="both",
                                                  methods=("saliency", "feature_ablation")))
    grid = [0.1, 0.9]
    search = GridSearchCV(pipe, {"attributioncombiner__lambda_robust": grid}, cv=KFold(2)).fit(X, y)
    # the fold scores are the direct computation: the pipeline fitted on one fold, scored on the other
    for j, lam in enumerate(grid):
        for k, (train, test) in enumerate(KFold(2).split(X)):
            direct = clone(pipe).set_params(attributioncombiner__lambda_robust=lam).fit(X[train], y[train])
            assert search.cv_results_[f"split{k}_test_score"][j] == pytest.approx(direct.score(X[test], y[test]),
                                                                                  rel=1e-9)
    assert search.best_index_ == int(np.argmax(search.cv_results_["mean_test_score"]))
    refit = clone(pipe).set_params(**search.best_params_).fit(X, y)
    np.testing.assert_allclose(search.best_estimator_.transform(X[:4]), refit.transform(X[:4]), rtol=1e-9)


def test_wrapped_estimator_handling(data):
    X, y = data
    # None: logistic regression on class labels, ridge on a continuous target
    assert isinstance(_small(None).fit(X, y).estimator_, LogisticRegression)
    assert isinstance(_small(None).fit(X, X[:, 0] + 0.5).estimator_, Ridge)
    # unfitted: a fitted clone, the parameter stays unfitted
    lr = LogisticRegression()
    comb = _small(lr).fit(X, y)
    assert comb.estimator_ is not lr and hasattr(comb.estimator_, "coef_") and not hasattr(lr, "coef_")
    # fitted: used as is, y not needed; FrozenEstimator keeps it fitted through clone (grid searches)
    fitted = LogisticRegression().fit(X[:60], y[:60])
    comb = _small(fitted).fit(X)
    assert comb.estimator_ is fitted
    assert not comb.__sklearn_tags__().target_tags.required
    frozen = clone(_small(FrozenEstimator(fitted))).fit(X)
    np.testing.assert_allclose(frozen.transform(X[:5]), comb.transform(X[:5]))
    with pytest.raises(ValueError, match="requires y to be passed"):
        _small(LogisticRegression()).fit(X)
    # a torch module: copied to the CPU in eval mode, the caller's module untouched
    net = _mlp().train()
    comb = _small(net).fit(X)
    assert comb.estimator_ is not net and not comb.estimator_.training and net.training
    # a callable (black box)
    w = np.arange(6.0)
    comb = _small(lambda Z: Z @ w, methods=("saliency", "feature_ablation")).fit(X)
    assert comb.transform(X[:3]).shape == (3, 6)


def test_torch_module_and_the_same_function_as_a_black_box_agree(data):
    X, _ = data
    net = _mlp()

    def blackbox(Z):
        with torch.no_grad():
            return net(torch.tensor(Z)).numpy()

    a = _small(net, criterion="both").fit(X).transform(X[:8])
    b = _small(blackbox, criterion="both", feature_scale="unit").fit(X)
    b.scale_ = np.ones(X.shape[1]) * X.std(axis=0)  # same perturbation units as the module's combiner
    np.testing.assert_allclose(a, b.transform(X[:8]), rtol=1e-4, atol=1e-6)


def test_deterministic_and_row_independent(data):
    X, y = data
    comb = _small(LogisticRegression(), criterion="both").fit(X, y)
    full = comb.transform(X[:12])
    np.testing.assert_array_equal(comb.transform(X[:12]), full)
    np.testing.assert_allclose(comb.transform(X[4:9]), full[4:9], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(comb.transform(X[:12][::-1]), full[::-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(clone(comb).fit(X, y).transform(X[:12]), full)
    assert not np.allclose(clone(comb).set_params(random_state=1).fit(X, y).transform(X[:12]), full)


def test_black_box_batches_in_parallel_give_the_same_result(data):
    X, y = data
    seq = _small(LogisticRegression(), batch_size=64).fit(X, y)
    par = clone(seq).set_params(n_jobs=2).fit(X, y)
    with joblib.parallel_config(backend="threading"):
        np.testing.assert_allclose(par.transform(X[:6]), seq.transform(X[:6]), rtol=1e-12, atol=1e-14)


def test_methods_parameter(data):
    X, y = data
    comb = _small(LogisticRegression(), methods=("saliency", ("smoothgrad", {"noise_scale": 0.05}),
                                                 ("smoothgrad", {"noise_scale": 0.5}), lambda Z: Z ** 2)).fit(X, y)
    assert list(comb.method_names_) == ["saliency", "smoothgrad", "smoothgrad#2", "<lambda>"]
    phi, w, base = comb.explain(X[:3], return_weights=True)
    assert w.shape == (3, 4) and base.shape == (3, 4, 6)
    np.testing.assert_allclose(comb.explain(X[:3]), phi)
    for methods, match in [(("salience",), "unknown attribution method 'salience'"),
                           ((("smoothgrad", {"sigma": 1}),), r"takes the parameters .* got \['sigma'\]"),
                           (("saliency",) * 13, "at most 12 methods"),
                           ((), "at least one"),
                           ((3,), "must be a method name")]:
        with pytest.raises(ValueError, match=match):
            _small(LogisticRegression(), methods=methods).fit(X, y)
    with pytest.raises(ValueError, match=r"baseline must be a number or an array of shape \(6,\)"):
        _small(LogisticRegression(), baseline=[0.0, 1.0]).fit(X, y)


def test_feature_groups_and_target(data):
    X, y = data
    groups = [0, 0, 1, 1, 2, 2]
    comb = _small(LogisticRegression(), methods=("feature_ablation", ("kernel_shap", {"n_samples": 8})),
                  feature_groups=groups).fit(X, y)
    _, _, base = comb.explain(X[:5], return_weights=True)
    np.testing.assert_allclose(base[:, :, 0::2], base[:, :, 1::2])  # one value per group
    # the explained class follows target
    one = _small(LogisticRegression(), target=1, methods=("saliency",)).fit(X, y)
    zero = clone(one).set_params(target=0).fit(X, y)
    # |grad p1| = |grad p0|; the optimal rescaling flips its sign with the explained class
    np.testing.assert_allclose(one.transform(X[:4]), -zero.transform(X[:4]))
    with pytest.raises(ValueError, match=r"target must lie in \[0, 1\]"):
        clone(one).set_params(target=3).fit(X, y).transform(X[:2])


def test_dataframe_input_gives_feature_names(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    comb = _small(LogisticRegression(), methods=("saliency",)).fit(df, y)
    assert list(comb.get_feature_names_out()) == list(df.columns)
    out = comb.set_output(transform="pandas").transform(df.iloc[:3])
    assert list(out.columns) == list(df.columns)


def test_device(data, device):
    X, _ = data
    net = _mlp()
    cpu = _small(net, criterion="both").fit(X).transform(X[:6])
    dev = _small(net, criterion="both", device=device).fit(X)
    np.testing.assert_allclose(dev.transform(X[:6]), cpu, rtol=1e-6, atol=1e-9)
    assert all(p.device.type == "cpu" for p in dev.estimator_.parameters())


def test_make_attribution_task():
    X, y, rel = make_attribution_task(n_samples=50, n_features=5, return_relevance=True, random_state=3)
    assert X.shape == (50, 5) and set(np.unique(y)) <= {0, 1} and rel.tolist() == [True] * 3 + [False] * 2
    X2, y2 = make_attribution_task(n_samples=50, n_features=5, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_evaluate_reports_every_method_the_combination_and_the_average(data):
    X, y = data
    comb = _small(LogisticRegression(), criterion="both").fit(X, y)
    quality = comb.evaluate(X[:7])
    k = len(METHODS)
    assert list(quality.names[-3:]) == ["combination", "average", "inverse_variance"]
    assert len(quality.names) == k + 3
    for key in ("infidelity", "sensitivity", "relative_sensitivity"):
        assert quality[key].shape == (7, k + 3) and np.all(quality[key] >= 0)
    # the average column is the plain mean of the normalised maps, scored like the others
    res = comb._explain_full(X[:7], evaluate=("infidelity",))
    np.testing.assert_allclose(comb.evaluate(X[:7], metrics=("infidelity",)).infidelity, res["infidelity"])
    assert "sensitivity" not in comb.evaluate(X[:7], metrics=["infidelity"])
    with pytest.raises(ValueError, match="metrics must be among"):
        comb.evaluate(X[:7], metrics=("accuracy",))


def test_device_rule_cuda_without_gpu_raises_before_any_work(data):
    X, y = data
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    comb = AttributionCombiner(LogisticRegression(), device="cuda")
    with pytest.raises(ValueError, match="device='cuda'"):
        comb.fit(X, y)
    assert not hasattr(comb, "estimator_")
    assert AttributionCombiner(LogisticRegression(), device="auto").fit(X, y).device_ == "cpu"
    assert _small(_mlp()).fit(X).device_ == "cpu"


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_baseline_is_refused_at_fit(data, bad):
    X, y = data
    comb = AttributionCombiner(LogisticRegression(), baseline=bad)
    with pytest.raises(ValueError, match="AttributionCombiner: baseline must be finite"):
        comb.fit(X, y)
    assert not hasattr(comb, "estimator_")
