"""DoRAClassifier and DoRARegressor: fine-tuning contract, data handling, errors, determinism, model selection."""

import copy
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from torch import nn  # noqa: E402

from sklearn_icml.datasets import make_weight_shift_tasks  # noqa: E402
from sklearn_icml.finetune import DoRAClassifier, DoRALinear, DoRARegressor, LoRALinear  # noqa: E402
from sklearn_icml.utils._sklearn_private import InvalidParameterError  # noqa: E402

FAST = dict(hidden_layer_sizes=(16,), max_iter=15, learning_rate=1e-2, batch_size=32, random_state=0)


def _pretrained(n_in=5, n_out=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    net = nn.Sequential(nn.Linear(n_in, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(), nn.Linear(24, n_out))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return net


def _n_params(module):
    return sum(p.numel() for p in module.parameters())


@pytest.fixture(scope="module")
def shifted():
    return make_weight_shift_tasks(n_source=1500, n_target=200, n_test=1000, n_features=8, n_hidden=16,
                                   magnitude_shift=0.8, direction_shift=0.1, random_state=0)


@pytest.fixture(scope="module")
def pretrained(shifted):
    Xs, ys, *_ = shifted
    return DoRARegressor(method="full", hidden_layer_sizes=(32, 32), activation="tanh", max_iter=25,
                         learning_rate=3e-3, random_state=0).fit(Xs, ys)


# -- the fine-tuning contract ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["dora", "lora", "full", "head"])
def test_module_is_copied_merged_and_keeps_the_base_structure(method):
    X, y = make_regression(n_samples=60, n_features=5, random_state=0)
    base = _pretrained()
    before = copy.deepcopy(base.state_dict())
    flags = [p.requires_grad for p in base.parameters()]
    est = DoRARegressor(base, method=method, r=2, max_iter=3, random_state=0).fit(X, y)
    # the caller's module is untouched
    assert all(torch.equal(before[k], v) for k, v in base.state_dict().items())
    assert [p.requires_grad for p in base.parameters()] == flags
    assert est.module_ is not base
    # no adapter left, same parameters as the base, on the CPU, in eval mode
    assert not any(isinstance(m, (DoRALinear, LoRALinear)) for m in est.module_.modules())
    assert [(n, p.shape) for n, p in est.module_.named_parameters()] == [
        (n, p.shape) for n, p in base.named_parameters()]
    assert _n_params(est.module_) == _n_params(base)
    assert {p.device.type for p in est.module_.parameters()} == {"cpu"}
    assert not est.module_.training
    assert [p.requires_grad for p in est.module_.parameters()] == flags
    # training moved what the method trains, and only that
    changed = {n for n, p in est.module_.named_parameters() if not torch.equal(p, base.state_dict()[n])}
    expected = {"dora": {"0.weight", "2.weight", "4.weight", "4.bias"},
                "lora": {"0.weight", "2.weight", "4.weight", "4.bias"},
                "full": {n for n, _ in base.named_parameters()},
                "head": {"4.weight", "4.bias"}}[method]
    assert changed == expected


def test_n_trainable_params_per_method():
    X, y = make_regression(n_samples=40, n_features=5, random_state=0)
    base = _pretrained()
    head = 24 + 1
    counts = {m: DoRARegressor(base, method=m, r=3, max_iter=1).fit(X, y).n_trainable_params_
              for m in ("dora", "lora", "full", "head")}
    lora = 3 * (5 + 24) + 3 * (24 + 24)
    assert counts == {"lora": lora + head, "dora": lora + 24 + 24 + head, "full": _n_params(base), "head": head}
    no_head = DoRARegressor(base, r=3, train_head=False, max_iter=1).fit(X, y)
    assert no_head.n_trainable_params_ == lora + 48
    assert no_head.adapted_modules_ == ["0", "2"]


def test_training_starts_exactly_at_the_pretrained_network():
    """Identity at initialisation, end to end: with a vanishing step the merged network is the base."""
    X, y = make_regression(n_samples=50, n_features=5, random_state=1)
    base = _pretrained()
    est = DoRARegressor(base, learning_rate=1e-30, r=2, max_iter=2, random_state=0).fit(X, y)
    with torch.no_grad():
        expected = base(torch.as_tensor(X, dtype=torch.float32)).numpy()[:, 0]
    np.testing.assert_allclose(est.predict(X), expected, rtol=1e-6, atol=1e-6)


def test_target_modules_and_head_options():
    X, y = make_regression(n_samples=40, n_features=5, random_state=0)
    est = DoRARegressor(_pretrained(), target_modules=["2", "4"], train_head=True, r=1, max_iter=1).fit(X, y)
    assert est.adapted_modules_ == ["2", "4"]
    assert est.n_trainable_params_ == (24 + 24 + 24) + (24 + 1 + 1)
    with pytest.raises(ValueError, match="DoRARegressor: apply_adapters: no nn.Linear named 'fc'"):
        DoRARegressor(_pretrained(), target_modules=["fc"], max_iter=1).fit(X, y)


def test_dora_beats_no_fine_tuning_and_keeps_up_with_lora_on_a_magnitude_shift(shifted, pretrained):
    _, _, Xt, yt, Xte, yte = shifted
    no_ft = pretrained.score(Xte, yte)
    scores = {m: DoRARegressor(pretrained.module_, method=m, r=1, max_iter=40, random_state=0)
              .fit(Xt, yt).score(Xte, yte) for m in ("dora", "lora")}
    assert scores["dora"] >= no_ft + 0.05, (no_ft, scores)
    assert scores["dora"] >= scores["lora"] - 0.01, scores


def test_pretrained_module_carries_its_standardisation(pretrained, shifted):
    Xs, ys, *_ = shifted
    module = pretrained.module_
    assert set(dict(module.named_buffers())) == {"x_mean", "x_scale", "y_mean", "y_scale"}
    with torch.no_grad():
        out = module(torch.as_tensor(Xs[:5], dtype=torch.float32)).numpy()[:, 0]
    np.testing.assert_allclose(out, pretrained.predict(Xs[:5]), rtol=1e-6)


# -- data handling --------------------------------------------------------------------------------


def test_string_labels_and_probabilities():
    X, y = make_classification(n_samples=90, n_features=5, n_informative=3, n_classes=3, random_state=0)
    labels = np.array(["ant", "bee", "cat"])[y]
    clf = DoRAClassifier(**FAST).fit(X, labels)
    assert list(clf.classes_) == ["ant", "bee", "cat"]
    assert set(clf.predict(X)) <= set(labels)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    assert clf.score(X, labels) > 0.8


def test_binary_user_module_with_a_single_logit():
    X, y = make_classification(n_samples=80, n_features=5, random_state=0)
    clf = DoRAClassifier(_pretrained(n_out=1), r=2, max_iter=20, learning_rate=1e-2, random_state=0)
    clf.fit(X, np.where(y == 1, "yes", "no"))
    scores = clf.decision_function(X)
    assert scores.shape == (80,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-scores)))
    np.testing.assert_array_equal(clf.predict(X), np.where(scores > 0, "yes", "no"))
    assert clf.score(X, np.where(y == 1, "yes", "no")) > 0.8


def test_multi_output_regression():
    X, Y = make_regression(n_samples=80, n_features=5, n_targets=3, random_state=0)
    Y = Y * np.array([1.0, 100.0, 0.01])
    reg = DoRARegressor(**dict(FAST, max_iter=60)).fit(X, Y)
    assert reg.n_outputs_ == 3
    pred = reg.predict(X)
    assert pred.shape == (80, 3)
    # scale-free loss: every target is learned, whatever its units
    from sklearn.metrics import r2_score

    assert r2_score(Y, pred, multioutput="raw_values").min() > 0.5
    user = DoRARegressor(_pretrained(n_out=3), r=2, max_iter=2).fit(X, Y)
    assert user.predict(X).shape == (80, 3)


def test_torch_tensors_and_float32_inputs():
    X, y = make_regression(n_samples=50, n_features=5, random_state=0)
    reg = DoRARegressor(**FAST).fit(torch.as_tensor(X), torch.as_tensor(y))
    np.testing.assert_allclose(reg.predict(torch.as_tensor(X)), reg.predict(X.astype(np.float32)), rtol=1e-6)
    assert reg.predict(X).dtype == np.float64


def test_float64_user_module_trains_in_float64():
    X, y = make_regression(n_samples=50, n_features=5, random_state=0)
    reg = DoRARegressor(_pretrained().double(), r=2, max_iter=2).fit(X, y)
    assert {p.dtype for p in reg.module_.parameters()} == {torch.float64}


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("Est", [DoRAClassifier, DoRARegressor])
def test_nan_input_is_a_clear_error(Est):
    X, y = make_classification(n_samples=30, n_features=5, random_state=0)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match=f"(?s)Input X contains NaN.*{Est.__name__} does not accept"):
        Est(max_iter=1).fit(X, y)


def test_module_of_the_wrong_width_is_a_clear_error():
    X, y = make_regression(n_samples=30, n_features=7, random_state=0)
    with pytest.raises(ValueError, match="DoRARegressor: the module does not accept X with 7 features"):
        DoRARegressor(_pretrained(n_in=5), max_iter=1).fit(X, y)
    X5 = X[:, :5]
    with pytest.raises(ValueError, match=r"maps \(2, 5\) inputs to outputs of shape \(2, 3\); expected \(2, 1\)"):
        DoRARegressor(_pretrained(n_out=3), max_iter=1).fit(X5, y)
    with pytest.raises(ValueError, match=r"DoRAClassifier: .*expected \(2, 3\)"):
        DoRAClassifier(_pretrained(n_out=2), max_iter=1).fit(X5, np.arange(30) % 3)
    fitted = DoRARegressor(_pretrained(), max_iter=1).fit(X5, y)
    with pytest.raises(ValueError, match="X has 7 features, but DoRARegressor is expecting 5 features"):
        fitted.predict(X)


def test_bad_module_and_parameters():
    X, y = make_regression(n_samples=30, n_features=5, random_state=0)

    class NotAModule:
        def forward(self, x):
            return x

        def named_modules(self):
            return iter(())

        def parameters(self):
            return iter(())

    with pytest.raises(TypeError, match="DoRARegressor: module must be a torch.nn.Module or None; got NotAModule"):
        DoRARegressor(NotAModule()).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'module' parameter of DoRARegressor"):
        DoRARegressor(module="mlp").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'method' parameter"):
        DoRARegressor(method="vera").fit(X, y)
    with pytest.raises(ValueError, match=r"hidden_layer_sizes must hold positive integers; got \(8, 0\)"):
        DoRARegressor(hidden_layer_sizes=(8, 0)).fit(X, y)
    with pytest.raises(ValueError, match="method='dora' needs an nn.Linear"):
        DoRARegressor(nn.Sequential(nn.Identity()), max_iter=1).fit(X[:, :1], y)
    frozen = _pretrained()
    with pytest.raises(ValueError, match="selects no nn.Linear layer"):
        DoRARegressor(frozen, target_modules="none", max_iter=1).fit(X, y)
    broken = _pretrained()
    with torch.no_grad():
        broken[4].weight[0, 0] = float("inf")
        broken[4].weight[0, 1] = -float("inf")
    with pytest.raises(ValueError, match="DoRARegressor: the training loss became nan at epoch 1"):
        DoRARegressor(broken, max_iter=3).fit(X, y)


def test_single_class_is_a_clear_error():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="DoRAClassifier needs samples of at least 2 classes; got 1 class"):
        DoRAClassifier().fit(X, ["a"] * 10)


# -- determinism, global state, device, pickling ------------------------------------------------------


def test_random_state_determines_the_fit_and_global_rng_is_untouched():
    X, y = make_classification(n_samples=80, n_features=5, random_state=0)
    state = torch.random.get_rng_state()
    np_state = np.random.get_state()[1].copy()
    a = DoRAClassifier(**dict(FAST, dropout=0.2)).fit(X, y)
    b = DoRAClassifier(**dict(FAST, dropout=0.2)).fit(X, y)
    c = DoRAClassifier(**dict(FAST, dropout=0.2, random_state=1)).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.loss_curve_ == b.loss_curve_
    assert not np.allclose(a.predict_proba(X), c.predict_proba(X))


def test_loss_curve_and_verbose(capsys):
    import re

    X, y = make_regression(n_samples=60, n_features=5, random_state=0)
    reg = DoRARegressor(**dict(FAST, max_iter=30, n_iter_no_change=30, verbose=1)).fit(X, y)
    out = capsys.readouterr().out
    assert len(re.findall(r"^\[DoRARegressor\]\s+\d+\s", out, flags=re.M)) == 30  # one log row per epoch
    assert len(reg.loss_curve_) == reg.n_iter_ == 30 and reg.validation_scores_ is None
    assert reg.loss_curve_[-1] < 0.5 * reg.loss_curve_[0]
    assert reg.best_loss_ == min(reg.loss_curve_)
    DoRARegressor(**FAST).fit(X, y)
    assert capsys.readouterr().out == ""


def test_early_stopping_keeps_the_best_validation_network():
    X, y = make_regression(n_samples=80, n_features=5, noise=30.0, random_state=0)
    reg = DoRARegressor(**dict(FAST, hidden_layer_sizes=(64,), max_iter=300, early_stopping=True,
                               validation_fraction=0.25, n_iter_no_change=5, learning_rate=3e-2)).fit(X, y)
    assert reg.n_iter_ < 300 and len(reg.validation_scores_) == reg.n_iter_
    assert reg.best_validation_score_ == min(reg.validation_scores_)
    # stopped by the rule: more than n_iter_no_change epochs after the best one
    assert reg.n_iter_ - (int(np.argmin(reg.validation_scores_)) + 1) > 5


def test_training_loss_rule_stops_a_converged_fit():
    X, y = make_regression(n_samples=60, n_features=5, random_state=0)
    reg = DoRARegressor(**dict(FAST, max_iter=500, n_iter_no_change=2, tol=1e-2)).fit(X, y)
    assert reg.n_iter_ < 500


def test_device_fit_leaves_a_cpu_module_and_matches_cpu(device):
    X, y = make_regression(n_samples=60, n_features=5, random_state=0)
    reg = DoRARegressor(**dict(FAST, device=device)).fit(X, y)
    assert {p.device.type for p in reg.module_.parameters()} == {"cpu"}
    cpu = DoRARegressor(**FAST).fit(X, y)
    np.testing.assert_allclose(reg.predict(X), cpu.predict(X), rtol=1e-3, atol=1e-3 * np.abs(y).max())


def test_pickle_round_trip_with_user_module():
    X, y = make_classification(n_samples=60, n_features=5, random_state=0)
    clf = DoRAClassifier(_pretrained(n_out=2), r=2, max_iter=3, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


# -- model selection ------------------------------------------------------------------------------


def test_grid_search_over_method_and_rank_in_a_pipeline():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3, random_state=0)
    pipe = make_pipeline(StandardScaler(), DoRAClassifier(_pretrained(n_out=2), max_iter=5, learning_rate=1e-2,
                                                          random_state=0))
    grid = {"doraclassifier__method": ["dora", "lora", "full", "head"], "doraclassifier__r": [1, 4]}
    search = GridSearchCV(pipe, grid, cv=2, scoring="accuracy").fit(X, y)
    assert len(search.cv_results_["params"]) == 8
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    best = search.best_estimator_[-1]
    assert best.method == search.best_params_["doraclassifier__method"]
    # rank matters for the adapters only
    res = search.cv_results_
    by = {(p["doraclassifier__method"], p["doraclassifier__r"]): s for p, s in zip(res["params"],
                                                                                   res["mean_test_score"])}
    assert by[("full", 1)] == by[("full", 4)] and by[("head", 1)] == by[("head", 4)]
