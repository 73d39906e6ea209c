"""MetaLFBOClassifier: meta-training, the Laplace head, Thompson draws, and the estimator contract."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.optimize import MetaLFBOClassifier, likelihood_free_training_set
from sklearn_icml.optimize._meta_lfbo import _features

SMALL = dict(n_features=8, n_hidden=16, n_layers=3, random_state=0)


def _binary(n=80, seed=0):
    return make_classification(n_samples=n, n_features=3, n_informative=2, n_redundant=0, random_state=seed)


def test_map_and_laplace_precision_match_an_independent_optimiser():
    X, y = _binary()
    w = np.random.RandomState(1).uniform(0.5, 2.0, size=y.size)
    clf = MetaLFBOClassifier(prior_precision=2.0, **SMALL).fit(X, y, sample_weight=w)
    phi, offset = _features(X, clf._network())

    def objective(z):
        a = offset + phi @ z
        return np.sum(w * (np.logaddexp(0, a) - y * a)) + 0.5 * 2.0 * z @ z

    def grad(z):
        return phi.T @ (w * (expit(offset + phi @ z) - y)) + 2.0 * z

    ref = minimize(objective, np.zeros(phi.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(clf.coef_, ref.x, atol=1e-5)
    p = expit(offset + phi @ clf.coef_)
    H = (phi * (w * p * (1 - p))[:, None]).T @ phi + 2.0 * np.eye(phi.shape[1])
    np.testing.assert_allclose(clf.posterior_precision_, H, rtol=1e-10)
    np.testing.assert_allclose(clf.posterior_covariance_ @ H, np.eye(phi.shape[1]), atol=1e-8)


def test_posterior_covariance_shrinks_as_data_are_added():
    X, y = _binary(n=400)
    traces = []
    for n in (20, 80, 320):
        clf = MetaLFBOClassifier(**SMALL).fit(X[:n], y[:n])
        traces.append(np.trace(clf.posterior_covariance_))
    assert traces[0] > traces[1] > traces[2]


def test_probit_mean_matches_monte_carlo_of_the_posterior():
    X, y = _binary(n=30)
    clf = MetaLFBOClassifier(**SMALL).fit(X, y)
    draws = clf.sample_proba(X, n_samples=4000, random_state=0)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], draws.mean(axis=0), atol=0.03)


def test_thompson_draws_differ_between_calls_and_reproduce_with_a_seed():
    X, y = _binary(n=40)
    clf = MetaLFBOClassifier(**SMALL).fit(X, y)
    a = clf.sample_proba(X, 2, random_state=0)
    assert not np.allclose(a[0], a[1])
    np.testing.assert_array_equal(a, clf.sample_proba(X, 2, random_state=0))
    assert not np.allclose(a, clf.sample_proba(X, 2, random_state=1))
    # prediction="thompson": one draw per fit, reproducible under random_state, different across seeds
    t0 = MetaLFBOClassifier(prediction="thompson", **SMALL).fit(X, y)
    t0b = MetaLFBOClassifier(prediction="thompson", **SMALL).fit(X, y)
    t1 = MetaLFBOClassifier(prediction="thompson", **{**SMALL, "random_state": 1}).fit(X, y)
    np.testing.assert_array_equal(t0.predict_proba(X), t0b.predict_proba(X))
    assert not np.allclose(t0.thompson_coef_, t0.coef_)
    assert not np.allclose(t0.predict_proba(X), t1.predict_proba(X))


def test_binary_only_and_one_class_errors():
    X = np.random.RandomState(0).normal(size=(9, 2))
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        MetaLFBOClassifier(**SMALL).fit(X, [0, 1, 2] * 3)
    with pytest.raises(ValueError, match="1 class"):
        MetaLFBOClassifier(**SMALL).fit(X, np.ones(9))


def test_string_labels_and_sample_weight_equal_to_repetition():
    X, y = _binary(n=40)
    labels = np.array(["bad", "good"])[y]
    clf = MetaLFBOClassifier(**SMALL).fit(X, labels)
    assert set(clf.predict(X)) <= {"bad", "good"}
    w = np.random.RandomState(0).randint(1, 4, size=40)
    weighted = MetaLFBOClassifier(**SMALL).fit(X, y, sample_weight=w)
    repeated = MetaLFBOClassifier(**SMALL).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), rtol=1e-7)


def test_inputs_of_magnitude_1e300_are_standardised_like_any_other():
    X, y = _binary(n=40)
    ref = MetaLFBOClassifier(**SMALL).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        huge = MetaLFBOClassifier(**SMALL).fit(X * 1e300, y)
        proba = huge.predict_proba(X * 1e300)
    np.testing.assert_allclose(proba, ref.predict_proba(X), rtol=1e-10)
    rng = np.random.RandomState(0)
    tasks = [(rng.uniform(size=(10, 2)) * 1e300, rng.normal(size=10)) for _ in range(2)]
    with pytest.raises(ValueError, match=r"MetaLFBOClassifier: X holds values up to .*float32"):
        MetaLFBOClassifier(**SMALL, dtype="float32").meta_fit(tasks)


def test_meta_fit_is_reproducible_and_learns_the_family(device, forrester_meta):
    clf, data = forrester_meta
    assert clf.n_meta_tasks_ == 48 and clf.task_embeddings_.shape == (48, 16)
    assert min(clf.validation_scores_) < clf.validation_scores_[0]
    twin = MetaLFBOClassifier(n_features=16, n_hidden=32, n_layers=3, max_iter=3, random_state=0, device=device)
    other = clone(twin).set_params(random_state=1)
    a, b, c = (m.meta_fit(data.tasks) for m in (twin, clone(twin), other))
    for Wa, Wb in zip(a.coefs_, b.coefs_):
        np.testing.assert_allclose(Wa, Wb, rtol=1e-10, atol=1e-12)
    assert not np.allclose(a.coefs_[0], c.coefs_[0])
    # the zero-shot prior predictive puts the family's good region (x ~ 0.75) first
    grid = np.linspace(0, 1, 201)[:, None]
    p = clf.predict_proba(grid)[:, 1]
    assert 0.6 <= grid[np.argmax(p), 0] <= 0.9
    prior_regret = np.median([f(grid[np.argmax(p)]) - f.minimum for f in data.functions])
    random_regret = np.median([np.mean(f(grid)) - f.minimum for f in data.functions])
    assert prior_regret < 0.5 * random_regret


def test_embeddings_follow_the_prior_and_the_penalty_scaling():
    import torch

    from sklearn_icml.optimize._meta_lfbo_net import embedding_penalty_terms

    rng = np.random.RandomState(0)
    normal = torch.from_numpy(rng.standard_normal((256, 16)))
    ks, cov = embedding_penalty_terms(normal)
    zeros_ks, zeros_cov = embedding_penalty_terms(torch.zeros(256, 16, dtype=torch.float64))
    assert float(zeros_ks) > 20 * float(ks) and float(zeros_cov) > 5 * float(cov)
    assert float(zeros_ks) == pytest.approx(0.25)  # KS distance of a point mass at 0: 1/2


def test_tasks_as_list_dict_or_stacked_with_groups_are_the_same(forrester_meta):
    _, data = forrester_meta
    tasks = data.tasks[:4]
    params = dict(n_features=4, n_hidden=8, n_layers=2, max_iter=2, random_state=0)
    a = MetaLFBOClassifier(**params).meta_fit(tasks)
    b = MetaLFBOClassifier(**params).meta_fit({f"t{i}": t for i, t in enumerate(tasks)})
    X = np.concatenate([t[0] for t in tasks])
    y = np.concatenate([t[1] for t in tasks])
    groups = np.repeat(np.arange(4), [len(t[1]) for t in tasks])
    c = MetaLFBOClassifier(**params).meta_fit(X, y, groups=groups)
    for other in (b, c):
        np.testing.assert_allclose(a.coefs_[0], other.coefs_[0])
        np.testing.assert_allclose(a.task_embeddings_, other.task_embeddings_)
    with pytest.raises(ValueError, match="same number of dimensions"):
        MetaLFBOClassifier(**params).meta_fit([tasks[0], (np.zeros((3, 2)), np.zeros(3))])


def test_clone_keeps_the_meta_learned_network_and_grid_search_adapts_it(forrester_meta):
    clf, data = forrester_meta
    X, y = data.tasks[0]
    X_train, labels, w = likelihood_free_training_set(X, y)
    cloned = clone(clf)
    assert not hasattr(cloned, "classes_")  # the clone is unfitted ...
    cloned.fit(X_train, labels, sample_weight=w)
    np.testing.assert_array_equal(cloned.coefs_[0], clf.coefs_[0])  # ... but keeps the meta-trained network
    assert cloned.n_meta_tasks_ == 48
    with pytest.raises(ValueError, match="expecting 1 features"):
        clone(clf).fit(np.hstack([X_train, X_train]), labels)
    search = GridSearchCV(clf, {"prior_precision": [0.1, 10.0]}, cv=3, scoring="neg_log_loss")
    search.fit(X_train, labels)
    assert search.best_estimator_.n_meta_tasks_ == 48
    # as the init of gradient boosting (MALIBO's residual), fitted in place by GradientBoostingClassifier
    gb = GradientBoostingClassifier(init=clone(clf), n_estimators=5, random_state=0)
    gb.fit(X_train, labels, sample_weight=w)
    assert gb.init_.n_meta_tasks_ == 48


def test_meta_fit_alone_predicts_with_the_prior(forrester_meta):
    clf, _ = forrester_meta
    np.testing.assert_array_equal(clf.coef_, 0.0)
    np.testing.assert_allclose(clf.posterior_covariance_, np.eye(16) / clf.prior_precision)


def test_pipeline_and_grid_search_without_meta_data():
    X, y = _binary(n=90)
    search = GridSearchCV(make_pipeline(StandardScaler(), MetaLFBOClassifier(**SMALL)),
                          {"metalfboclassifier__prior_precision": [0.1, 1.0]}, cv=3).fit(X, y)
    assert search.best_score_ > 0.7


def test_verbose_prints_the_losses(capsys, forrester_meta):
    _, data = forrester_meta
    MetaLFBOClassifier(n_features=4, n_hidden=8, n_layers=2, max_iter=2, verbose=1, random_state=0).meta_fit(
        data.tasks[:3])
    assert "epoch" in capsys.readouterr().out


def test_cuda_request_without_gpu_is_a_clear_error(monkeypatch, forrester_meta):
    import torch

    _, data = forrester_meta
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device='cuda'"):
        MetaLFBOClassifier(device="cuda", max_iter=1).meta_fit(data.tasks[:2])


@pytest.mark.parametrize("layout", ["rows", "observations"])
def test_meta_training_loss_is_the_row_mean_of_the_likelihood_free_sets_plus_the_regulariser(forrester_meta, layout):
    import torch

    from sklearn_icml.optimize._meta_lfbo import _init_network, _observation_table, _row_table
    from sklearn_icml.optimize._meta_lfbo_net import MALIBONetwork, embedding_penalty_terms, make_train_step

    _, data = forrester_meta
    tasks = data.tasks[:5]
    rng = np.random.RandomState(0)
    coefs, intercepts, mean_coef, mean_intercept = _init_network(rng, 1, 8, 3, 6)
    net = MALIBONetwork(coefs, intercepts, mean_coef, mean_intercept, len(tasks))
    E = rng.standard_normal((len(tasks), 6))
    with torch.no_grad():
        net.embeddings.copy_(torch.from_numpy(E))
    X = np.concatenate([X_t for X_t, _ in tasks])
    if layout == "rows":
        table = _row_table(tasks, 1 / 3, "ei")
    else:
        table = (X,) + _observation_table(tasks, 1 / 3, "ei")
    step = make_train_step(embedding_loss_weight=0.3, ks_scale=2.0, cov_scale=5.0, embedding_noise=0.5,
                           generator=torch.Generator().manual_seed(0), layout=layout)
    net.eval()  # no embedding noise
    loss = float(step(net, tuple(torch.as_tensor(a) for a in table), None).detach())
    # independently: the public likelihood-free training sets, one row per (observation, label), numpy forward pass
    state = dict(coefs=coefs, intercepts=intercepts, mean_coef=mean_coef, mean_intercept=mean_intercept,
                 x_mean=np.zeros(1), x_scale=np.ones(1))
    terms = []
    for t, (X_t, y_t) in enumerate(tasks):
        X_rows, labels, w = likelihood_free_training_set(X_t, y_t)
        phi, offset = _features(X_rows, state)
        a = offset + phi @ E[t]
        terms.append(w * (np.logaddexp(0, a) - labels * a))
    ks, cov = embedding_penalty_terms(torch.from_numpy(E))
    expected = np.concatenate(terms).mean() + 0.3 * (2.0 * float(ks) + 5.0 * float(cov))
    assert loss == pytest.approx(expected, rel=1e-12)
    # in training mode the embeddings are noisy: a different loss, reproducible from the generator
    net.train()
    noisy = [float(make_train_step(embedding_loss_weight=0.3, ks_scale=2.0, cov_scale=5.0, embedding_noise=0.5,
                                   generator=torch.Generator().manual_seed(0), layout=layout)(
        net, tuple(torch.as_tensor(a) for a in table), None).detach()) for _ in range(2)]
    assert noisy[0] == noisy[1] != pytest.approx(loss)


def test_stopping_rule_and_curves_follow_scikit_learn_mlp_meanings(forrester_meta):
    _, data = forrester_meta
    small = dict(n_features=4, n_hidden=8, n_layers=2, random_state=0)
    fixed = MetaLFBOClassifier(max_iter=7, early_stopping=False, n_iter_no_change=7, **small).meta_fit(data.tasks[:6])
    assert fixed.n_meta_iter_ == 7 == len(fixed.loss_curve_) and fixed.validation_scores_ is None
    # tol larger than any change: the first epoch is the best, and more than n_iter_no_change epochs without
    # improvement follow before the stop
    stalled = MetaLFBOClassifier(max_iter=50, n_iter_no_change=3, tol=10.0, **small).meta_fit(data.tasks[:6])
    assert stalled.n_meta_iter_ == 1 + 3 + 1 == len(stalled.validation_scores_)
    assert all(np.isfinite(stalled.loss_curve_))


def test_numpy_prediction_network_equals_the_torch_module():
    import torch

    from sklearn_icml.optimize._meta_lfbo import _init_network
    from sklearn_icml.optimize._meta_lfbo_net import MALIBONetwork

    rng = np.random.RandomState(1)
    coefs, intercepts, mean_coef, mean_intercept = _init_network(rng, 3, 16, 4, 8)
    net = MALIBONetwork(coefs, intercepts, mean_coef, mean_intercept, 2)
    X = rng.standard_normal((20, 3))
    state = dict(coefs=coefs, intercepts=intercepts, mean_coef=mean_coef, mean_intercept=mean_intercept,
                 x_mean=np.zeros(3), x_scale=np.ones(3))
    phi, offset = _features(X, state)
    with torch.no_grad():
        phi_t, offset_t = net.features(torch.from_numpy(X))
    np.testing.assert_allclose(phi, phi_t.numpy(), rtol=1e-12)
    np.testing.assert_allclose(offset, offset_t.numpy(), rtol=1e-12)
