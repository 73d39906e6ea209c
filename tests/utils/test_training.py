"""The shared training layer against hand-written loops and the definitions of its rules."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.utils._torch import torch_generator  # noqa: E402
from sklearn_icml.utils._training import (  # noqa: E402
    EarlyStopping,
    ProgressReporter,
    TrainingResult,
    fit_module,
    iterate_minibatches,
)

from ._regression_data import reference_lbfgs as _reference_lbfgs  # noqa: E402
from ._regression_data import regression_data as _data  # noqa: E402
from ._regression_data import regression_net as _net  # noqa: E402


def _hand_loop(module, X, y, *, epochs, batch_size, lr, random_state):
    """The plain loop the layer must reproduce: AdamW, one randperm per epoch from one generator."""
    gen = torch_generator(random_state)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    opt = torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=0.0)
    curve = []
    for _ in range(epochs):
        order = torch.randperm(len(Xt), generator=gen)
        total = 0.0
        for lo in range(0, len(Xt), batch_size):
            idx = order[lo:lo + batch_size]
            loss = torch.nn.functional.mse_loss(module(Xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        curve.append(total / len(Xt))
    return curve


def test_fit_module_reproduces_the_hand_loop_exactly():
    X, y = _data()
    a, b = _net(), _net()
    res = fit_module(a, X, y, max_iter=7, batch_size=16, learning_rate=0.01, n_iter_no_change=7,
                     random_state=3)
    curve = _hand_loop(b, X, y, epochs=7, batch_size=16, lr=0.01, random_state=3)
    assert isinstance(res, TrainingResult)
    assert res.n_iter == 7 and len(res.epoch_times) == 7
    np.testing.assert_allclose(res.loss_curve, curve, rtol=1e-12)
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(pa.detach().numpy(), pb.detach().numpy(), rtol=1e-12)
    assert res.module is a and not a.training
    assert all(p.device.type == "cpu" for p in a.parameters())


def test_same_seed_same_result_other_seed_other_batches():
    X, y = _data()
    r1 = fit_module(_net(), X, y, max_iter=3, random_state=0)
    r2 = fit_module(_net(), X, y, max_iter=3, random_state=0)
    r3 = fit_module(_net(), X, y, max_iter=3, random_state=1)
    assert r1.loss_curve == r2.loss_curve
    assert r1.loss_curve != r3.loss_curve


def _sklearn_stop_epoch(values, n_iter_no_change, tol):
    best, count = math.inf, 0
    for epoch, v in enumerate(values, 1):
        count = count + 1 if v > best - tol else 0
        best = min(best, v)
        if count > n_iter_no_change:
            return epoch
    return None


def test_training_loss_rule_is_scikit_learns():
    X, y = _data()
    res = fit_module(_net(), X, y, max_iter=300, batch_size=60, learning_rate=0.05, n_iter_no_change=3,
                     tol=1e-3, random_state=0)
    assert res.n_iter < 300
    assert _sklearn_stop_epoch(res.loss_curve, 3, 1e-3) == res.n_iter
    assert res.validation_scores is None and res.best_loss == min(res.loss_curve)


def test_early_stopping_holds_out_rows_and_returns_the_best_module():
    X, y = _data(n=50)
    res = fit_module(_net(), X, y, max_iter=400, batch_size=10, learning_rate=0.05, early_stopping=True,
                     validation_fraction=0.2, n_iter_no_change=5, tol=0.0, random_state=4)
    assert res.n_iter < 400
    assert _sklearn_stop_epoch(res.validation_scores, 5, 0.0) == res.n_iter
    # the held-out rows are the first ceil(0.2 n) of one randperm of the seeded generator
    valid = torch.randperm(50, generator=torch_generator(4))[:10].numpy()
    with torch.no_grad():
        out = res.module(torch.as_tensor(X[valid]))
    best = float(torch.nn.functional.mse_loss(out, torch.as_tensor(y[valid])))
    assert best == pytest.approx(min(res.validation_scores), rel=1e-10)
    assert res.best_validation_score == min(res.validation_scores)


def test_custom_train_step_and_custom_loss_match_the_builtin_loss():
    X, y = _data()
    base = fit_module(_net(), X, y, max_iter=4, n_iter_no_change=4, random_state=0)
    custom_loss = fit_module(_net(), X, y, loss=lambda out, t: ((out - t) ** 2).mean(), max_iter=4,
                             n_iter_no_change=4, random_state=0)

    def step(module, xb, yb):
        return ((module(xb) - yb) ** 2).mean()

    custom_step = fit_module(_net(), X, y, train_step=step, max_iter=4, n_iter_no_change=4, random_state=0)
    np.testing.assert_allclose(custom_loss.loss_curve, base.loss_curve, rtol=1e-12)
    np.testing.assert_allclose(custom_step.loss_curve, base.loss_curve, rtol=1e-12)


def test_tuple_inputs_are_unpacked_and_y_may_be_none():
    X, y = _data()

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 1).double()

        def forward(self, a, b):
            return self.lin(a) + b

    seen = []

    def step(module, xb, yb):
        assert yb is None and isinstance(xb, tuple) and len(xb) == 3
        seen.append(len(xb[0]))
        return ((module(xb[0], xb[1]) - xb[2]) ** 2).mean()

    res = fit_module(Two(), (X, np.zeros((60, 1)), y), None, train_step=step, max_iter=2, batch_size=25,
                     n_iter_no_change=2, random_state=0)
    assert res.n_iter == 2 and seen == [25, 25, 10, 25, 25, 10]


def test_cross_entropy_casts_targets_and_learns():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(float)  # floats on purpose: the layer casts to int64
    net = torch.nn.Linear(2, 2)
    fit_module(net, X, y, loss="cross_entropy", max_iter=60, learning_rate=0.05, random_state=0)
    with torch.no_grad():
        pred = net(torch.as_tensor(X, dtype=torch.float32)).argmax(1).numpy()
    assert (pred == y).mean() > 0.95


def test_grad_clip_bounds_each_sgd_step():
    X, y = _data()
    net = _net()
    before = torch.cat([p.detach().flatten() for p in net.parameters()]).clone()
    fit_module(net, X, 100 * y, optimizer="sgd", learning_rate=1.0, grad_clip=0.01, max_iter=1,
               batch_size=60, random_state=0)
    after = torch.cat([p.detach().flatten() for p in net.parameters()])
    assert float((after - before).norm()) == pytest.approx(0.01, rel=1e-6)


def test_lr_schedule_is_stepped_once_per_epoch():
    X, y = _data()
    made = []

    def schedule(opt):
        made.append(torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))
        return made[-1]

    fit_module(_net(), X, y, lr_schedule=schedule, learning_rate=0.1, max_iter=3, n_iter_no_change=3,
               random_state=0)
    assert made[0].last_epoch == 3 and made[0].get_last_lr()[0] == pytest.approx(0.1 / 8)
    cos = []
    fit_module(_net(), X, y, lr_schedule="cosine", max_iter=4, n_iter_no_change=4, random_state=0,
               loss=lambda out, t: (cos.append(1), torch.nn.functional.mse_loss(out, t))[1])
    assert len(cos) == 4 * 2


def test_only_trainable_parameters_move_and_fully_frozen_raises():
    X, y = _data()
    net = _net()
    net[0].weight.requires_grad_(False)
    w0 = net[0].weight.detach().clone()
    fit_module(net, X, y, max_iter=2, random_state=0)
    assert torch.equal(net[0].weight, w0)
    for p in net.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="nothing to train"):
        fit_module(net, X, y, max_iter=2)


def test_non_finite_loss_is_a_clear_error():
    X, y = _data()
    with pytest.raises(ValueError, match="Demo: the training loss became .* lower learning_rate"):
        fit_module(_net(), X, y, loss=lambda out, t: out.sum() * float("nan"), name="Demo", max_iter=2)


@pytest.mark.parametrize("kwargs, match", [
    ({"max_iter": 0}, "max_iter"), ({"batch_size": 0}, "batch_size"), ({"learning_rate": -1.0}, "learning_rate"),
    ({"learning_rate": float("inf")}, "learning_rate"), ({"tol": -1.0}, "tol"),
    ({"validation_fraction": 1.0}, "validation_fraction"), ({"loss": "hinge"}, "loss"),
    ({"optimizer": "lbfgs2"}, "optimizer"), ({"lr_schedule": "step"}, "lr_schedule"),
    ({"grad_clip": 0.0}, "grad_clip"), ({"n_iter_no_change": 0}, "n_iter_no_change"),
])
def test_bad_options_name_the_estimator_and_parameter(kwargs, match):
    X, y = _data()
    with pytest.raises(ValueError, match=f"Demo: {match}"):
        fit_module(_net(), X, y, name="Demo", **kwargs)


def test_verbose_prints_a_per_epoch_log_and_silent_otherwise(capsys):
    X, y = _data()
    fit_module(_net(), X, y, max_iter=3, n_iter_no_change=3, random_state=0)
    assert capsys.readouterr().out == ""
    fit_module(_net(), X, y, max_iter=3, n_iter_no_change=3, random_state=0, verbose=1, name="Demo")
    out = capsys.readouterr().out
    assert "[Demo] training" in out and "train_loss" in out
    assert sum(line.strip().startswith("[Demo]") for line in out.splitlines()) >= 5


def test_fit_runs_under_the_thread_rule():
    import sklearn_icml

    X, y = _data()
    seen = []
    with sklearn_icml.config_context(n_threads=1):
        fit_module(_net(), X, y, max_iter=1, random_state=0,
                   loss=lambda out, t: (seen.append(torch.get_num_threads()), torch.nn.functional.mse_loss(out, t))[1])
    assert set(seen) == {1}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_module_comes_back_on_the_cpu(device):
    X, y = _data()
    res = fit_module(_net(), X, y, max_iter=2, device=device, random_state=0)
    assert all(p.device.type == "cpu" for p in res.module.parameters())


def test_iterate_minibatches_covers_every_row_once_per_epoch():
    gen = torch.Generator().manual_seed(0)
    epochs = [torch.cat(list(iterate_minibatches(23, 5, gen))) for _ in range(2)]
    for e in epochs:
        assert sorted(e.tolist()) == list(range(23))
    assert not torch.equal(epochs[0], epochs[1])
    assert [len(b) for b in iterate_minibatches(5, 10, shuffle=False)] == [5]
    assert torch.equal(torch.cat(list(iterate_minibatches(4, 3, shuffle=False))), torch.arange(4))


def test_early_stopping_helper_keeps_the_best_state():
    lin = torch.nn.Linear(1, 1)
    stopper = EarlyStopping(n_iter_no_change=1, tol=0.0, keep_best=True)
    with torch.no_grad():
        lin.weight.fill_(1.0)
    assert not stopper.step(1.0, lin)
    with torch.no_grad():
        lin.weight.fill_(2.0)
    assert not stopper.step(1.5, lin)
    assert stopper.step(1.2, lin)
    stopper.restore_best(lin)
    assert float(lin.weight.detach()) == 1.0 and stopper.best_epoch == 1


def test_progress_reporter_thins_long_fits(capsys):
    rep = ProgressReporter("Long", max_iter=200, verbose=1)
    for e in range(1, 201):
        rep.epoch(e, 1.0 / e, validation=0.5, extra_metric=2.0)
    lines = capsys.readouterr().out.splitlines()
    assert 15 <= len(lines) <= 25 and lines[-1].startswith("[Long] epoch 200/200")
    assert "validation 0.500000" in lines[0] and "extra_metric 2" in lines[0]


def test_lbfgs_through_optimizer_options_reaches_least_squares():
    X, y = _data()
    lin = torch.nn.Linear(3, 1).double()
    res = fit_module(lin, X, y, optimizer=torch.optim.LBFGS, learning_rate=1.0, max_iter=1, batch_size=60,
                     optimizer_options=dict(max_iter=200, tolerance_grad=1e-12, tolerance_change=0.0,
                                            line_search_fn="strong_wolfe"), random_state=0)
    A = np.hstack([X, np.ones((60, 1))])
    coef = np.linalg.lstsq(A, y, rcond=None)[0].ravel()
    np.testing.assert_allclose(lin.weight.detach().numpy().ravel(), coef[:3], atol=1e-7)
    np.testing.assert_allclose(float(lin.bias.detach()), coef[3], atol=1e-7)
    assert res.optimizer.state[res.optimizer.param_groups[0]["params"][0]]["n_iter"] > 1


def test_lr_schedule_per_batch():
    X, y = _data()
    made = []

    def schedule(opt):
        made.append(torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9))
        return made[-1]

    fit_module(_net(), X, y, lr_schedule=schedule, lr_schedule_interval="batch", batch_size=16, max_iter=2,
               n_iter_no_change=2, random_state=0)
    assert made[0].last_epoch == 8  # 4 batches of 16, 16, 16, 12 per epoch
    with pytest.raises(ValueError, match="lr_schedule_interval"):
        fit_module(_net(), X, y, lr_schedule_interval="step")


def test_shuffle_false_keeps_the_row_order():
    X, y = _data(n=10)
    seen = []

    def step(module, xb, yb):
        seen.append(xb[:, 0].clone())
        return ((module(xb) - yb) ** 2).mean()

    fit_module(_net(), X, y, train_step=step, shuffle=False, batch_size=4, max_iter=2, n_iter_no_change=2)
    np.testing.assert_array_equal(torch.cat(seen).numpy(), np.tile(X[:, 0], 2))


def test_a_silent_fit_says_how_far_it_is_after_ten_seconds_of_cpu(monkeypatch, capsys):
    import time
    import types

    from sklearn_icml.utils import _training

    clock = iter([0.0, 5.0, 12.0, 20.0, 45.0, 0.0, 50.0])
    monkeypatch.setattr(_training, "time", types.SimpleNamespace(perf_counter=time.perf_counter,
                                                                 process_time=lambda: next(clock)))
    reporter = _training.ProgressReporter("Demo", max_iter=100, verbose=0)
    reporter.tick(10)  # 5 s: silent
    assert capsys.readouterr().out == ""
    reporter.epoch(20, 0.5)  # 12 s: the first notice, with the time left at this pace (12 s for 20 of 100 steps)
    assert capsys.readouterr().out == ("[Demo] still fitting: step 20/100 after 12 s of CPU, about 48 s more at this "
                                       "pace (verbose=1 prints the losses; a smaller max_iter fits faster)\n")
    reporter.tick(30)  # 20 s: the next notice is due 30 s after the first
    assert capsys.readouterr().out == ""
    reporter.tick(60)  # 45 s
    assert "step 60/100 after 45 s of CPU, about 30 s more" in capsys.readouterr().out
    # with verbose the losses are the progress: no notices
    _training.ProgressReporter("Loud", max_iter=100, verbose=1).tick(50)
    assert capsys.readouterr().out == ""


def test_the_shared_loop_reports_a_long_silent_fit(monkeypatch, capsys):
    from sklearn_icml.utils import _training

    monkeypatch.setattr(_training, "SLOW_FIT_CPU_SECONDS", 0.0)
    X = np.random.RandomState(0).normal(size=(20, 3)).astype(np.float32)
    module = torch.nn.Linear(3, 1)
    _training.fit_module(module, X, X[:, :1], max_iter=2, batch_size=10, random_state=0, name="Loop")
    assert capsys.readouterr().out.startswith("[Loop] still fitting: step 1/2 after ")


def test_a_long_lbfgs_solve_reports_no_time_left(monkeypatch, capsys):
    # the solve is one epoch: its notice comes once it is done, so it must not extrapolate max_iter iterations
    from sklearn_icml.utils import _training

    monkeypatch.setattr(_training, "SLOW_FIT_CPU_SECONDS", 0.0)
    X = np.random.RandomState(0).normal(size=(20, 3))
    _training.Trainer(loop="lbfgs", max_iter=50, name="Solve").fit(torch.nn.Linear(3, 1).double(), X, X[:, :1])
    out = capsys.readouterr().out
    assert out.startswith("[Solve] still fitting: step 1/1 after ") and "more at this pace" not in out


def test_step_budget_is_a_stream_of_successive_permutations_and_counts_steps():
    """budget="steps": max_iter optimiser steps over successive seeded permutations, batches across passes."""
    X, y = _data(n=10)
    seen = []

    def step(module, xb, yb):
        if module.training:
            seen.append(xb[:, 0].clone())
        return ((module(xb) - yb) ** 2).mean()

    res = fit_module(_net(), X, y, train_step=step, budget="steps", max_iter=7, batch_size=4, n_iter_no_change=None,
                     random_state=5)
    gen = torch_generator(5)
    order = torch.cat([torch.randperm(10, generator=gen) for _ in range(3)])[:28]  # 7 steps of 4 rows
    assert res.n_iter == 7 and [len(b) for b in seen] == [4] * 7
    np.testing.assert_array_equal(torch.cat(seen).numpy(), X[order.numpy(), 0])
    assert len(res.loss_curve) == 3  # one history row per pass of ceil(10 / 4) = 3 steps: 3 + 3 + 1


def test_step_budget_full_batch_when_rows_fit_in_one_batch():
    X, y = _data(n=6)
    seen = []

    def step(module, xb, yb):
        seen.append(xb[:, 0].clone())
        return ((module(xb) - yb) ** 2).mean()

    res = fit_module(_net(), X, y, train_step=step, budget="steps", max_iter=3, batch_size=50, n_iter_no_change=None)
    assert res.n_iter == 3 and len(res.loss_curve) == 3
    np.testing.assert_array_equal(torch.cat(seen).numpy(), np.tile(X[:, 0], 3))


class _RisingOnHeldOut(torch.nn.Module):
    """Planted: training pulls ``b`` to the targets (1), the eval-mode output is ``-b`` (validation loss rises)."""

    def __init__(self):
        super().__init__()
        self.b = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def forward(self, x):
        out = self.b if self.training else -self.b
        return out.expand(x.shape[0], 1)


@pytest.mark.parametrize("budget", ["epochs", "steps"])
def test_early_stopping_stops_on_a_rising_validation_loss_and_keeps_the_best(budget):
    X, y = np.zeros((40, 2)), np.ones((40, 1))
    module = _RisingOnHeldOut()
    res = fit_module(module, X, y, budget=budget, max_iter=500, batch_size=9, learning_rate=0.05,
                     early_stopping=True, validation_fraction=0.1, n_iter_no_change=3, tol=0.0, random_state=0)
    # 36 training rows, 4 batches per pass; the first pass is the best, 3 more are tolerated, the 5th stops
    assert len(res.validation_scores) == 5
    assert np.all(np.diff(res.validation_scores) > 0)
    assert res.n_iter == (5 * 4 if budget == "steps" else 5)
    assert res.best_validation_score == res.validation_scores[0]
    # the module kept is that of the first pass: its held-out loss is the best one
    assert float((-module.b.detach() - 1) ** 2) == pytest.approx(res.validation_scores[0], rel=1e-12)
    # without a stopping rule the whole budget runs
    res = fit_module(_RisingOnHeldOut(), X, y, budget=budget, max_iter=30, batch_size=9, learning_rate=0.05,
                     n_iter_no_change=None, random_state=0)
    assert res.n_iter == 30 and res.validation_scores is None



@pytest.mark.parametrize("options", [
    dict(max_iter=500, tolerance_grad=1e-7, tolerance_change=0.0, history_size=20),  # stops on the gradient
    dict(max_iter=7, tolerance_grad=1e-14, tolerance_change=0.0, history_size=20),  # stops on max_iter
    dict(max_iter=100, max_eval=15, tolerance_grad=1e-14, tolerance_change=0.0, history_size=5),  # on max_eval
    dict(max_iter=500, tolerance_grad=1e-14, tolerance_change=1e-6, history_size=10),  # on a small change
])
def test_lbfgs_iterations_are_those_of_torchs_single_long_step(options):
    """optimizer="lbfgs": the iterates, the iterations and the objective evaluations are bit for bit those of
    torch's LBFGS running all its iterations in one step call, with the layer's option names."""
    X, y = _data(n=80)
    a, b = _net(seed=1), _net(seed=1)
    n_iter, evals = _reference_lbfgs(b, X, y, **options)
    opts = {k: v for k, v in options.items() if k in ("max_eval", "tolerance_change", "history_size")}
    res = fit_module(a, X, y, optimizer="lbfgs", learning_rate=1.0, max_iter=options["max_iter"],
                     tol=options["tolerance_grad"], optimizer_options=opts)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert (res.n_iter, res.n_evaluations) == (n_iter, evals)
    assert 1 < n_iter and len(res.loss_curve) == n_iter + 1  # the start, then one value per iteration
    with torch.no_grad():
        start = float(torch.nn.functional.mse_loss(_net(seed=1)(torch.as_tensor(X)), torch.as_tensor(y)))
    assert res.loss_curve[0] == pytest.approx(start, rel=1e-12)


def test_lbfgs_options_that_do_not_apply_are_refused():
    X, y = _data()
    for kwargs in (dict(early_stopping=True), dict(weight_decay=0.1), dict(lr_schedule="cosine")):
        with pytest.raises(ValueError, match="does not apply to"):
            fit_module(_net(), X, y, optimizer="lbfgs", name="Est", **kwargs)
