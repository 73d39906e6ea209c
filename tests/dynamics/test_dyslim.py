"""DySLIMRegressor: the objective against a hand-written loop, rollouts, normalisation, divergence, bad input."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_lorenz63
from sklearn_icml.dynamics import DySLIMRegressor, invariant_measure_scorer, make_rollout_dataset

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.fixture(scope="module")
def lorenz():
    traj = make_lorenz63(12, 40, random_state=0)
    return traj, *make_rollout_dataset(traj)


def _mlp(torch, seed=0):
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.SiLU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return net


def test_lambda_zero_is_exactly_plain_mse_training(lorenz):
    """λ1 = λ2 = 0 trains bit for bit like a hand-written full-batch Adam loop on the MSE of x + f(x)."""
    torch = pytest.importorskip("torch")
    _, X, y = lorenz
    net = _mlp(torch)
    steps, lr = 15, 1e-2
    est = DySLIMRegressor(module=net, lambda_uncond=0.0, lambda_cond=0.0, normalize=False, batch_size=len(X),
                          max_iter=steps, learning_rate=lr, grad_clip=1.0, random_state=0).fit(X, y)

    ref = copy.deepcopy(net)
    opt = torch.optim.Adam(ref.parameters(), lr=lr)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((Xt + ref(Xt) - yt) ** 2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
        opt.step()
    for p_est, p_ref in zip(est.module_.net.parameters(), ref.parameters()):
        assert torch.equal(p_est.detach(), p_ref.detach())
    # the unweighted terms are logged; the measure terms are not computed at λ = 0
    assert est.loss_curve_.shape == (steps, 4)
    np.testing.assert_array_equal(est.loss_curve_[:, 0], est.loss_curve_[:, 1])
    assert np.all(est.loss_curve_[:, 2:] == 0)
    # and the caller's module was not trained
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), _mlp(torch).parameters()))


def test_lambda_zero_equals_mse_only_on_minibatches_and_lambda_changes_training(lorenz):
    _, X, y = lorenz
    kw = dict(hidden_layer_sizes=(16,), batch_size=64, max_iter=20, random_state=3)
    a = DySLIMRegressor(lambda_uncond=0.0, lambda_cond=0.0, measure="mmd", **kw).fit(X, y)
    b = DySLIMRegressor(lambda_uncond=0.0, lambda_cond=0.0, measure="sinkhorn", **kw).fit(X, y)
    c = DySLIMRegressor(lambda_uncond=1.0, lambda_cond=1.0, **kw).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.predict(X), c.predict(X))
    # with λ = 1 the total is l2 + U + C, with both measure terms positive
    np.testing.assert_allclose(c.loss_curve_[:, 0], c.loss_curve_[:, 1:].sum(axis=1), rtol=1e-5)
    assert np.all(c.loss_curve_[:, 2:] > 0)


def test_rollout_equals_repeated_predict_and_undoes_normalisation(lorenz):
    traj, X, y = lorenz
    est = DySLIMRegressor(hidden_layer_sizes=(16,), max_iter=30, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.mean_, X.mean(axis=0))
    np.testing.assert_allclose(est.scale_, X.std(axis=0))
    x0 = traj[:5, 0]
    states = est.rollout(x0, 6)
    expected, x = [], x0
    for _ in range(6):
        x = est.predict(x)
        expected.append(x)
    np.testing.assert_allclose(states, np.stack(expected, axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(est.rollout(x0, 6, return_all=False), states[:, -1])
    # predictions come back in the units of the data: the one-step R² is positive and the
    # predictions sit on the attractor's scale, not on z-scores
    assert est.score(X, y) > 0.5
    assert np.abs(est.predict(X)).max() > 10.0


def test_normalisation_makes_the_fit_equivariant_to_units(lorenz):
    """Rescaling and shifting every coordinate gives the same model, in the new units."""
    _, X, y = lorenz
    a, b = np.array([100.0, 0.01, 3.0]), np.array([5.0, -2.0, 1000.0])
    kw = dict(hidden_layer_sizes=(16,), max_iter=20, random_state=0)
    est = DySLIMRegressor(**kw).fit(X, y)
    est2 = DySLIMRegressor(**kw).fit(a * X + b, a * y + b)
    np.testing.assert_allclose((est2.predict(a * X + b) - b) / a, est.predict(X), rtol=1e-4, atol=1e-3)


def test_a_diverging_rollout_is_reported_not_nan(lorenz):
    torch = pytest.importorskip("torch")
    _, X, y = lorenz
    net = torch.nn.Linear(3, 3, bias=False)
    with torch.no_grad():
        net.weight.copy_(3.0 * torch.eye(3))
    # tiny learning rate: the fitted map stays ~ x -> 3x, which leaves any ball
    est = DySLIMRegressor(module=net, integrator="direct", max_iter=1, learning_rate=1e-12,
                          random_state=0).fit(X, y)
    with pytest.warns(RuntimeWarning, match="3 of 3 trajectories diverged"):
        states, diverged = est.rollout(X[:3], 200, return_diverged=True)
    assert np.isfinite(states).all() and diverged.all()
    # held inside the divergence ball (100 training standard deviations)
    assert np.all(np.abs((states - est.mean_) / est.scale_) <= 100.0 + 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stable = DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=5, random_state=0).fit(X, y)
        _, ok = stable.rollout(X[:3], 20, return_diverged=True)
    assert not ok.any()


def test_multi_step_targets_pushforward_and_curriculum_train():
    traj = make_lorenz63(8, 30, random_state=1)
    X, y = make_rollout_dataset(traj, n_rollout_steps=4)
    kw = dict(hidden_layer_sizes=(8,), n_rollout_steps=4, max_iter=8, random_state=0)
    est = DySLIMRegressor(**kw).fit(X, y)
    assert est.mode_ == "dynamics" and est.n_rollout_steps_ == 4 and est.n_iter_ == 8
    assert np.isfinite(est.score(X, y))
    pf = DySLIMRegressor(pushforward=True, **kw).fit(X, y)
    cur = DySLIMRegressor(curriculum_every=4, **kw).fit(X, y)
    plain_k1 = DySLIMRegressor(**{**kw, "n_rollout_steps": 1}).fit(X, y[:, :3])
    # the curriculum's first 4 steps roll out one step, like a K = 1 fit on the first future state
    np.testing.assert_allclose(cur.loss_curve_[:4], plain_k1.loss_curve_[:4], rtol=1e-6)
    assert not np.allclose(cur.loss_curve_, est.loss_curve_)
    assert np.isfinite(pf.loss_curve_).all()


def test_regression_mode_for_other_targets():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.05 * rng.normal(size=120)
    est = DySLIMRegressor(hidden_layer_sizes=(16,), max_iter=100, learning_rate=3e-2, random_state=0).fit(X, y)
    assert est.mode_ == "regression" and est.predict(X).shape == (120,)
    assert est.score(X, y) > 0.9
    with pytest.raises(ValueError, match="regression mode"):
        est.rollout(X[:2], 3)
    with pytest.raises(ValueError, match="mode='dynamics'"):
        DySLIMRegressor(mode="dynamics", max_iter=2).fit(X, y)
    # a 2-D y whose width is no state of X: regression, said aloud in mode="auto", silent when asked for
    Y2 = np.column_stack([y, -y])
    with pytest.warns(UserWarning, match=r"y has 2 columns, not the 4 .* Pass mode='regression'"):
        auto = DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=2, random_state=0).fit(X, Y2)
    assert auto.mode_ == "regression"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asked = DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=2, random_state=0, mode="regression").fit(X, Y2)
    np.testing.assert_array_equal(asked.predict(X), auto.predict(X))


def test_bad_input_is_named(lorenz):
    _, X, y = lorenz
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DySLIMRegressor(max_iter=2).fit(Xn, y)
    est = DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="3 features"):
        est.rollout(np.zeros((2, 4)), 5)
    with pytest.raises(ValueError, match="n_steps"):
        est.rollout(X[:2], 0)
    with pytest.raises(ValueError, match="pushforward"):
        DySLIMRegressor(pushforward=True, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="n_rollout_steps=3"):
        DySLIMRegressor(n_rollout_steps=3, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="burn_in"):
        est.invariant_measure_score(X[:2], X, n_steps=10, burn_in=1.0)


def _imq_mmd2(P, Q, bandwidths):
    """Biased MMD^2 with the multiscale inverse multiquadric kernel, written out pair by pair."""
    def k(A, B):
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        return sum(a * a / (a * a + d2) for a in bandwidths)
    return k(P, P).mean() + k(Q, Q).mean() - 2 * k(P, Q).mean()


def test_invariant_measure_score_is_minus_the_mmd_of_the_long_run_states(lorenz):
    traj, X, y = lorenz
    reference = traj.reshape(-1, 3)
    est = DySLIMRegressor(hidden_layer_sizes=(16,), max_iter=20, random_state=0).fit(X, y)
    score = est.invariant_measure_score(traj[:, 0], reference, n_steps=20, burn_in=0.5, max_samples=None)
    states = est.rollout(traj[:, 0], 20)[:, 10:].reshape(-1, 3)  # steps from burn_in * n_steps on
    P, Q = (states - est.mean_) / est.scale_, (reference - est.mean_) / est.scale_
    expected = _imq_mmd2(P, Q, est.mmd_bandwidths)
    assert expected > 1e-3  # a 20-epoch model is visibly off the attractor: the comparison is not 0 == 0
    assert score == pytest.approx(-expected, rel=1e-9)
    # the reference itself scores higher than the model (MMD^2 of a sample with its own subsample is smaller)
    assert _imq_mmd2(Q[::2], Q, est.mmd_bandwidths) < expected
    scorer = invariant_measure_scorer(reference, n_steps=20, burn_in=0.5, max_samples=None)
    assert scorer(est, traj[:, 0]) == score


def test_invariant_measure_scorer_in_a_pipeline_and_a_grid_search(lorenz):
    traj, X, y = lorenz
    reference = traj.reshape(-1, 3)
    scorer = invariant_measure_scorer(reference, n_steps=20, burn_in=0.5)
    kw = dict(hidden_layer_sizes=(8,), max_iter=10, random_state=0)
    grid = {"lambda_uncond": [0.0, 1.0]}
    bare = GridSearchCV(DySLIMRegressor(**kw), grid, scoring=scorer, cv=2).fit(X, y)
    piped = GridSearchCV(Pipeline([("m", DySLIMRegressor(**kw))]), {"m__" + k: v for k, v in grid.items()},
                         scoring=scorer, cv=2).fit(X, y)
    assert np.all(np.isfinite(piped.cv_results_["mean_test_score"]))
    # the direct computation on each split: the bare estimator's own method
    for i, (train, test) in enumerate(KFold(2).split(X)):
        for j, lam in enumerate(grid["lambda_uncond"]):
            est = DySLIMRegressor(lambda_uncond=lam, **kw).fit(X[train], y[train])
            direct = est.invariant_measure_score(X[test], reference, n_steps=20, burn_in=0.5)
            assert piped.cv_results_[f"split{i}_test_score"][j] == pytest.approx(direct, rel=1e-12)
    np.testing.assert_array_equal(piped.cv_results_["mean_test_score"], bare.cv_results_["mean_test_score"])
    # steps before the model transform the initial states and the reference alike
    scaled = Pipeline([("s", StandardScaler()), ("m", DySLIMRegressor(**kw))]).fit(X, y)
    s = scaled["s"]
    assert scorer(scaled, X[:5]) == scaled["m"].invariant_measure_score(s.transform(X[:5]), s.transform(reference),
                                                                        n_steps=20, burn_in=0.5)
    with pytest.raises(TypeError, match="must have invariant_measure_score"):
        scorer(Pipeline([("r", Ridge())]).fit(X, y), X[:5])


@pytest.mark.parametrize("device", DEVICES)
def test_device_runs_and_fitted_state_is_on_the_cpu(lorenz, device):
    torch = pytest.importorskip("torch")
    _, X, y = lorenz
    kw = dict(hidden_layer_sizes=(16,), max_iter=10, random_state=0)
    est = DySLIMRegressor(device=device, **kw).fit(X, y)
    assert est.device_.startswith(device)
    assert all(p.device.type == "cpu" for p in est.module_.parameters())
    cpu = DySLIMRegressor(device="cpu", **kw).fit(X, y)
    np.testing.assert_allclose(est.predict(X), cpu.predict(X), rtol=1e-4, atol=1e-4)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert isinstance(est.module_, torch.nn.Module)


def test_shared_kernel_block_equals_two_mmd2_calls_in_value_and_gradient():
    """The training loss's MMD terms (one kernel block of the predictions against [p, x0, xk], a hand-written
    kernel slope) equal mmd2(p, x0) and mmd2(p, xk) and their autograd gradient, in float64."""
    torch = pytest.importorskip("torch")
    from sklearn_icml.dynamics._measure_loss import mmd_terms
    from sklearn_icml.metrics import mmd2

    g = torch.Generator().manual_seed(0)
    bw = (0.2, 0.5, 0.9, 1.3)
    p = torch.randn(40, 3, generator=g, dtype=torch.float64, requires_grad=True)
    x0, xk = torch.randn(40, 3, generator=g, dtype=torch.float64), torch.randn(40, 3, generator=g, dtype=torch.float64)
    U, C, _ = mmd_terms(p, x0, xk, bw)
    (grad,) = torch.autograd.grad(2.0 * U + 3.0 * C, p)
    U_ref, C_ref = mmd2(p, x0, bandwidths=bw), mmd2(p, xk, bandwidths=bw)
    (grad_ref,) = torch.autograd.grad(2.0 * U_ref + 3.0 * C_ref, p)
    np.testing.assert_allclose([U.item(), C.item()], [U_ref.item(), C_ref.item()], rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), grad_ref.numpy(), rtol=1e-10, atol=1e-13)
    # only one term asked for; a duplicated state (zero distance) keeps the gradient finite
    p2 = torch.cat([p.detach()[:39], p.detach()[:1]]).requires_grad_()
    U2, C2, _ = mmd_terms(p2, x0, xk, bw, cond=False)
    assert C2 is None
    (grad2,) = torch.autograd.grad(U2, p2)
    (grad2_ref,) = torch.autograd.grad(mmd2(p2, x0, bandwidths=bw), p2)
    np.testing.assert_allclose(grad2.numpy(), grad2_ref.numpy(), rtol=1e-10, atol=1e-13)


def _rising_on_held_out(torch):
    """Planted map: training pulls its output ``b`` to the targets (1); in eval mode it outputs ``-b``."""

    class Rising(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.b = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):
            return (self.b if self.training else -self.b).expand(x.shape[0], 1)

    return Rising()


def test_early_stopping_stops_when_the_held_out_objective_rises():
    torch = pytest.importorskip("torch")
    X, y = np.zeros((100, 3)), np.ones(100)
    params = dict(module=_rising_on_held_out(torch), mode="regression", normalize=False, lambda_cond=0.0,
                  batch_size=30, learning_rate=0.05, max_iter=300, random_state=0)
    est = DySLIMRegressor(early_stopping=True, n_iter_no_change=2, tol=0.0, **params).fit(X, y)
    # 90 training rows: passes of 3 steps; the first pass is the best, 2 more are tolerated, the 4th stops
    assert len(est.validation_scores_) == 4 and np.all(np.diff(est.validation_scores_) > 0)
    assert est.n_iter_ == 12 and est.loss_curve_.shape == (12, 4)
    assert est.best_validation_score_ == est.validation_scores_[0]
    b = float(est.module_.net.b.detach())
    assert (b + 1) ** 2 == pytest.approx(est.validation_scores_[0], rel=1e-6)  # the map of the first pass is kept
    # the default runs the whole step budget and holds nothing out
    default = DySLIMRegressor(**params).fit(X, y)
    assert default.n_iter_ == 300 and default.validation_scores_ is None
    assert default.best_validation_score_ is None and float(default.module_.net.b.detach()) > b


def test_defaults_keep_the_step_budget_and_the_stream(lorenz):
    """Early stopping off by default: bit for bit the fit of early_stopping=False, all max_iter steps."""
    torch = pytest.importorskip("torch")
    _, X, y = lorenz
    a = DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=25, batch_size=64, random_state=0).fit(X, y)
    b = DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=25, batch_size=64, random_state=0, early_stopping=False,
                        n_iter_no_change=1, tol=10.0).fit(X, y)
    assert a.get_params()["early_stopping"] is False and a.n_iter_ == 25
    for pa, pb in zip(a.module_.parameters(), b.module_.parameters()):
        assert torch.equal(pa, pb)
