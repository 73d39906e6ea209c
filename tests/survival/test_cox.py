"""CoxSurvival: partial likelihood, Breslow baseline, scikit-survival parity, MLP, errors, model selection."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.survival import CoxSurvival, Surv


def _data(n=150, p=3, seed=0, ties=False, nonlinear=False):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, p))
    eta = 1.5 * np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1 if nonlinear else X @ np.linspace(1.0, -0.5, p)
    time = rng.exponential(np.exp(-eta))
    if ties:
        time = np.ceil(time * 4) / 4
    event = rng.rand(n) < 0.75
    return X, Surv.from_arrays(event, time)


def _breslow_nll_loop(eta, event, time):
    total = 0.0
    for i in np.flatnonzero(event):
        total -= eta[i] - np.log(np.exp(eta[time >= time[i]]).sum())
    return total / len(time)


def test_partial_likelihood_with_ties_matches_a_direct_loop():
    import torch

    from sklearn_icml.survival._base import cox_negative_log_likelihood, cox_sort_keys

    X, y = _data(ties=True)
    eta = np.random.RandomState(1).normal(size=len(X))
    order, last = cox_sort_keys(y["time"])
    got = cox_negative_log_likelihood(torch.tensor(eta[order]), torch.tensor(y["event"][order].astype(float)),
                                      torch.tensor(last), len(X))
    assert float(got) == pytest.approx(_breslow_nll_loop(eta, y["event"], y["time"]), rel=1e-12)


def test_fit_reaches_the_stationary_point_and_the_breslow_baseline():
    X, y = _data(ties=True)
    cox = CoxSurvival().fit(X, y)
    eps = 1e-6
    base = _breslow_nll_loop(X @ cox.coef_, y["event"], y["time"])
    for j in range(X.shape[1]):  # numerical gradient of the objective vanishes at coef_
        step = np.zeros(X.shape[1])
        step[j] = eps
        grad = (_breslow_nll_loop(X @ (cox.coef_ + step), y["event"], y["time"]) - base) / eps
        assert abs(grad) < 1e-4
    # Breslow: H0(t) = sum over event times <= t of d / sum of risks at risk
    risk = np.exp(cox.predict(X))
    t = y["time"]
    expected = np.cumsum([y["event"][t == u].sum() / risk[t >= u].sum() for u in cox.event_times_])
    np.testing.assert_allclose(cox.cum_baseline_hazard_, expected, rtol=1e-10)
    surv = cox.predict_survival_function(X[:5])
    assert surv.shape == (5, len(cox.event_times_))
    assert np.all(np.diff(surv, axis=1) <= 1e-15) and np.all((surv > 0) & (surv <= 1))
    np.testing.assert_allclose(cox.predict_survival_function(X[:5], times=[0.0]), 1.0)


def test_target_forms_give_the_same_model():
    X, y = _data()
    a = CoxSurvival().fit(X, y).coef_
    b = CoxSurvival().fit(X, np.column_stack([y["time"], y["event"]])).coef_
    np.testing.assert_allclose(a, b)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # non-convex: max_iter is the budget
def test_mlp_learns_what_a_linear_model_cannot():
    X, y = _data(n=400, nonlinear=True, seed=2)
    X_te, y_te = _data(n=400, nonlinear=True, seed=3)
    linear = CoxSurvival().fit(X, y)
    mlp = CoxSurvival((16,), alpha=1.0, max_iter=300, random_state=0).fit(X, y)
    assert mlp.score(X_te, y_te) > linear.score(X_te, y_te) + 0.1
    adam = CoxSurvival((16,), solver="adam", learning_rate=1e-2, max_iter=100, batch_size=64, random_state=0)
    assert adam.fit(X, y).score(X_te, y_te) > linear.score(X_te, y_te) + 0.05
    np.testing.assert_array_equal(CoxSurvival((16,), random_state=0, max_iter=20).fit(X, y).predict(X),
                                  CoxSurvival((16,), random_state=0, max_iter=20).fit(X, y).predict(X))


def test_features_of_magnitude_1e300_give_the_rescaled_model():
    # the partial likelihood of (c X, w / c) is that of (X, w): same log-risks, coefficients divided by c
    X, y = _data(n=60)
    ref = CoxSurvival().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        huge = CoxSurvival().fit(X * 1e300, y)
        risk = huge.predict(X * 1e300)
    np.testing.assert_allclose(huge.coef_ * 1e300, ref.coef_, rtol=1e-6)
    np.testing.assert_allclose(risk, ref.predict(X), rtol=1e-6, atol=1e-8)


def test_penalty_shrinks_and_separable_data_warn():
    X, y = _data()
    free = CoxSurvival().fit(X, y).coef_
    ridge = CoxSurvival(alpha=100.0).fit(X, y).coef_
    assert np.linalg.norm(ridge) < 0.8 * np.linalg.norm(free)
    # times ordered exactly by a linear score: the unpenalized likelihood has no maximum
    rng = np.random.RandomState(0)
    Xs = rng.normal(size=(30, 2))
    ys = Surv.from_arrays(np.ones(30, dtype=bool), np.exp(-3 * Xs[:, 0]))
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        CoxSurvival(max_iter=20).fit(Xs, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CoxSurvival(alpha=1.0, max_iter=20).fit(Xs, ys)


@pytest.mark.parametrize("y, match", [
    (None, "requires y"),
    (Surv.from_arrays([True] * 5, [1.0, 2.0, -1.0, 3.0, 4.0]), "non-negative"),
    (Surv.from_arrays([False] * 5, [1.0, 2.0, 1.0, 3.0, 4.0]), "censored"),
    (Surv.from_arrays([True] * 4, [1.0, 2.0, 1.0, 3.0]), "inconsistent numbers of samples"),
])
def test_bad_targets(y, match):
    X = np.random.RandomState(0).normal(size=(5, 2))
    with pytest.raises(ValueError, match=match):
        CoxSurvival().fit(X, y)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        CoxSurvival((0,)).fit(X, np.arange(1.0, 6.0))


def test_grid_search_scores_with_the_cindex():
    X, y = _data(n=120)
    search = GridSearchCV(make_pipeline(StandardScaler(), CoxSurvival()), {"coxsurvival__alpha": [0.0, 10.0]},
                          cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
    assert 0.6 < search.best_score_ <= 1.0
    assert search.score(X, y) == pytest.approx(search.best_estimator_.score(X, y))


@pytest.mark.peers
@pytest.mark.parametrize("loader", ["load_whas500", "load_gbsg2"])
def test_matches_scikit_survival_coxph(loader):
    datasets = pytest.importorskip("sksurv.datasets")
    from sklearn.model_selection import train_test_split
    from sksurv.linear_model import CoxPHSurvivalAnalysis
    from sksurv.preprocessing import OneHotEncoder

    X, y = getattr(datasets, loader)()
    if loader == "load_gbsg2":
        X["tgrade"] = X["tgrade"].map(len).astype(int)  # ordinal grade I, II, III
    X = OneHotEncoder().fit_transform(X).astype(float)
    ours = CoxSurvival().fit(X, y)
    theirs = CoxPHSurvivalAnalysis(alpha=0.0, ties="breslow").fit(X, y)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-3)
    np.testing.assert_allclose(ours.predict_survival_function(X.iloc[:20], theirs.unique_times_),
                               theirs.predict_survival_function(X.iloc[:20], return_array=True), atol=1e-4)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    for alpha in (0.0, 0.1):
        c_ours = CoxSurvival(alpha=alpha).fit(X_tr, y_tr).score(X_te, y_te)
        c_theirs = CoxPHSurvivalAnalysis(alpha=alpha).fit(X_tr, y_tr).score(X_te, y_te)
        assert abs(c_ours - c_theirs) <= 0.01


def test_device_parity(device):
    X, y = _data()
    np.testing.assert_allclose(CoxSurvival(device=device).fit(X, y).coef_, CoxSurvival().fit(X, y).coef_,
                               rtol=1e-6, atol=1e-8)


def test_batch_loss_in_any_order_matches_the_direct_loop():
    import torch

    from sklearn_icml.survival import cox_partial_likelihood_loss

    X, y = _data(ties=True)
    eta = np.random.RandomState(2).normal(size=len(X))
    perm = np.random.RandomState(3).permutation(len(X))
    t = torch.as_tensor(y["time"][perm])
    e = torch.as_tensor(y["event"][perm].astype(np.float64))
    loss = cox_partial_likelihood_loss(torch.as_tensor(eta[perm]), t, e, normalizer=len(X))
    assert float(loss) == pytest.approx(_breslow_nll_loop(eta, y["event"], y["time"]), rel=1e-12)
    # presorted: the same value on the samples in descending time order (ties in any order)
    order = np.argsort(-y["time"], kind="stable")
    sorted_loss = cox_partial_likelihood_loss(torch.as_tensor(eta[order]), torch.as_tensor(y["time"][order]),
                                              torch.as_tensor(y["event"][order]), normalizer=len(X), presorted=True)
    assert float(sorted_loss) == pytest.approx(float(loss), rel=1e-12)
    # default normalizer: the number of events; a batch without events costs 0
    n_events = int(y["event"].sum())
    default = cox_partial_likelihood_loss(torch.as_tensor(eta[perm]), t, e)
    assert float(default) == pytest.approx(float(loss) * len(X) / n_events, rel=1e-12)
    assert float(cox_partial_likelihood_loss(torch.zeros(3), torch.ones(3), torch.zeros(3))) == 0.0


def _breslow_nll_gradient(eta, event, time):
    """d/d eta_k of the direct loop: (-event_k + sum over events i with time_k >= time_i of p_ik) / n."""
    risk = np.exp(eta)
    grad = -event.astype(np.float64)
    for i in np.flatnonzero(event):
        at_risk = time >= time[i]
        grad[at_risk] += risk[at_risk] / risk[at_risk].sum()
    return grad / len(time)


@pytest.mark.parametrize("time_dtype, ties", [("float64", False), ("float64", True), ("int16", True)])
def test_batch_loss_value_and_gradient_match_the_direct_loop_for_either_time_dtype(time_dtype, ties):
    # float64 times take the loss's CPU sort path (with and without tied times), int16 times (quarter
    # units, ties kept) its torch sort path
    import torch

    from sklearn_icml.survival import cox_partial_likelihood_loss

    X, y = _data(n=80, ties=ties)
    assert (len(np.unique(y["time"])) < len(X)) == ties
    eta = np.random.RandomState(4).normal(size=len(X))
    time = np.array(y["time"]) if time_dtype == "float64" else np.rint(4 * y["time"]).astype(np.int16)
    log_risk = torch.tensor(eta, requires_grad=True)
    loss = cox_partial_likelihood_loss(log_risk, torch.as_tensor(time), torch.as_tensor(np.array(y["event"])),
                                       normalizer=len(X))
    loss.backward()
    assert float(loss.detach()) == pytest.approx(_breslow_nll_loop(eta, y["event"], y["time"]), rel=1e-12)
    expected = _breslow_nll_gradient(eta, y["event"], y["time"])
    np.testing.assert_allclose(log_risk.grad.numpy(), expected, rtol=1e-10, atol=1e-14)
    # the same gradient through torch.func (whose tensors have no storage to hand to numpy)
    grad = torch.func.grad(lambda r: cox_partial_likelihood_loss(r, torch.as_tensor(time), torch.as_tensor(
        np.array(y["event"])), normalizer=len(X)))(torch.tensor(eta))
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((np.zeros(3), "t", "e"), {}, TypeError, "log_risk must be a torch.Tensor; got ndarray"),
    (("2d", "t", "e"), {}, ValueError, r"log_risk must be 1-D; got shape \(3, 1\)"),
    (("r", "short", "e"), {}, ValueError,
     "log_risk, time and event must have the same length; got 3, 2 and 3"),
    (("r", "t", "e"), {"normalizer": 0}, ValueError, "normalizer must be a positive number or None; got 0"),
])
def test_partial_likelihood_loss_refuses_bad_input(args, kwargs, error, match):
    import torch

    from sklearn_icml.survival import cox_partial_likelihood_loss

    values = {"r": torch.zeros(3), "t": torch.ones(3), "e": torch.ones(3), "2d": torch.zeros(3, 1),
              "short": torch.ones(2)}
    args = [values.get(a, a) if isinstance(a, str) else a for a in args]
    with pytest.raises(error, match="cox_partial_likelihood_loss: " + match):
        cox_partial_likelihood_loss(*args, **kwargs)


def test_adam_epochs_follow_the_training_layer_and_early_stopping():
    X, y = _data(n=200)
    cox = CoxSurvival((8,), solver="adam", learning_rate=1e-2, batch_size=50, max_iter=300, n_iter_no_change=3,
                      tol=1e-3, early_stopping=True, validation_fraction=0.2, random_state=0).fit(X, y)
    assert cox.n_iter_ < 300 and len(cox.loss_curve_) == len(cox.validation_scores_) == cox.n_iter_
    assert cox.n_iter_ - (int(np.argmin(cox.validation_scores_)) + 1) > 3
    assert cox.score(X, y) > 0.7
    lbfgs = CoxSurvival().fit(X, y)
    # one value at the start and one per L-BFGS iteration, each accepted step decreasing the objective (Armijo)
    assert len(lbfgs.loss_curve_) == lbfgs.n_iter_ + 1 > 2 and np.all(np.diff(lbfgs.loss_curve_) <= 0)
    assert lbfgs.loss_curve_[-1] == pytest.approx(lbfgs.loss_, rel=1e-9) and lbfgs.loss_ < lbfgs.loss_curve_[0]
    assert lbfgs.validation_scores_ is None and lbfgs.device_ == "cpu"


def test_predict_is_the_network_and_coefs_are_its_weights():
    X, y = _data(nonlinear=True)
    cox = CoxSurvival((6,), activation="elu", alpha=0.1, solver="adam", max_iter=5, random_state=0).fit(X, y)
    h = (X - cox.mean_) / cox.scale_
    h = h @ cox.coefs_[0] + cox.intercepts_[0]
    h = np.where(h > 0, h, np.expm1(np.minimum(h, 0)))
    np.testing.assert_allclose(cox.predict(X), (h @ cox.coefs_[1])[:, 0], rtol=1e-10, atol=1e-12)


def test_cuda_without_a_gpu_raises_before_any_work(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    X, y = _data()
    X[0, 0] = np.nan  # the device error comes first, before validating the data
    with pytest.raises(ValueError, match="device='cuda' was requested"):
        CoxSurvival(device="cuda").fit(X, y)


def test_fit_and_predict_run_under_the_thread_rule(monkeypatch):
    from contextlib import contextmanager

    from sklearn_icml.utils import _torch_base

    entered = []
    real = _torch_base.torch_threads

    @contextmanager
    def recording(*args, **kwargs):
        entered.append(True)
        with real(*args, **kwargs) as n:
            yield n

    monkeypatch.setattr(_torch_base, "torch_threads", recording)
    X, y = _data()
    cox = CoxSurvival().fit(X, y)
    n_fit = len(entered)
    cox.predict(X)
    assert n_fit >= 1 and len(entered) > n_fit


def test_class_labels_are_refused_as_event_times():
    X = np.random.RandomState(0).normal(size=(20, 3))
    labels = np.tile([0, 1], 10)
    with pytest.raises(ValueError, match="CoxSurvival: y holds only 0 and 1.*Surv.from_arrays"):
        CoxSurvival().fit(X, labels)
    # the same indicators with their times fit
    CoxSurvival().fit(X, Surv.from_arrays(labels.astype(bool), np.arange(1.0, 21.0)))


@pytest.mark.parametrize("hidden", [(), (8,)])
def test_a_penalty_that_leaves_the_null_model_says_so(hidden):
    """alpha=1e100 overwhelms the partial likelihood: the fit warns, names alpha, and is the null model, whose
    baseline is the Nelson-Aalen estimate (computed here by hand); a large penalty that still ranks does not warn."""
    X, y = _data(n=60, ties=True)
    with pytest.warns(UserWarning, match=r"alpha=1e\+100 shrinks every coefficient"):
        null = CoxSurvival(hidden, alpha=1e100, random_state=0).fit(X, y)
    hazard_ratios = np.exp(null.predict(X)[:, None] - null.predict(X)[None, :])
    assert np.all(hazard_ratios == 1.0)
    times = np.unique(y["time"][y["event"]])
    nelson_aalen = np.cumsum([np.sum(y["event"] & (y["time"] == t)) / np.sum(y["time"] >= t) for t in times])
    np.testing.assert_allclose(null.event_times_, times)
    # the baseline is that of a log-risk of ~0 (exactly 0 for the linear model)
    np.testing.assert_allclose(null.cum_baseline_hazard_ * np.exp(null.predict(X[:1])), nelson_aalen, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ranked = CoxSurvival(alpha=1e6).fit(X, y)  # the linear model's coefficients are small, not zero
    assert np.ptp(ranked.predict(X)) > 0 and np.all(ranked.coef_ != 0)
