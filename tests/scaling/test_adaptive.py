"""train_adaptive: switches at the scheduled losses, counts compute, guards stalls."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.scaling import (  # noqa: E402
    AdaptiveShapeScheduler,
    ScalingLawRegressor,
    Segment,
    train_adaptive,
    widen_mlp,
)


def _task(n=256, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = np.tanh(X @ rng.normal(size=4).astype(np.float32) + np.sin(2 * X[:, 0]))[:, None]
    return X, y


def _net(width=2, seed=0):
    torch_gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.Tanh(), torch.nn.Linear(width, 1))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=torch_gen) * 0.5)
    return net


def _evaluator(X, y):
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

    def evaluate(model):
        device = next(model.parameters()).device
        with torch.no_grad():
            return float(torch.nn.functional.mse_loss(model(Xt.to(device)), yt.to(device)))
    return evaluate


def _resize(model, width):
    return widen_mlp(model, width, random_state=0) if model[0].out_features != width else model


def _flops(width):
    return 6.0 * 32 * (4 * width + width + width + 1)


def test_switches_at_the_scheduled_loss_and_counts_compute(device):
    X, y = _task()
    evaluate = _evaluator(X, y)
    switch = evaluate(_net()) * 0.6
    plan = [Segment(2, 10.0, switch, 0, 0), Segment(8, switch, 0.02, 0, 0)]
    res = train_adaptive(_net(), _resize, plan, (X, y), target_loss=0.02, loss_fn=torch.nn.functional.mse_loss,
                         eval_fn=evaluate, flops_per_step=_flops, learning_rate=1e-2, max_steps=1500,
                         eval_every=10, device=device, random_state=0)
    assert len(res.switches) == 1
    compute, loss, old, new, reason = res.switches[0]
    assert (old, new, reason) == (2, 8, "schedule") and loss <= switch
    # the loss before the switch evaluation was above the switch level
    before = [h for h in res.history if h[0] < compute]
    assert all(h[1] > switch for h in before)
    # compute is the sum of the per-step FLOPs of the shape trained at each step
    steps_small = len(before) * 10 + 10
    total = res.history[-1][0]
    assert total == pytest.approx(steps_small * _flops(2) + (len(res.history) * 10 - steps_small) * _flops(8))
    assert res.module[0].out_features == 8 and not res.module.training
    assert next(res.module.parameters()).device.type == "cpu"
    assert res.loss_curve == [h[1] for h in res.history]


def test_static_run_and_target():
    X, y = _task()
    res = train_adaptive(_net(8), _resize, None, (X, y), target_loss=0.05, loss_fn=torch.nn.functional.mse_loss,
                         eval_fn=_evaluator(X, y), flops_per_step=lambda s: 1.0, learning_rate=1e-2,
                         max_steps=2000, eval_every=20, random_state=0)
    assert res.switches == []
    assert res.reached and res.history[-1][1] <= 0.05
    assert res.compute_to_target == res.n_steps == res.history[-1][0]


def test_stall_guard_moves_on():
    X, y = _task()
    # a switch level no width-2 network reaches: only the stall guard moves the run on
    plan = [Segment(2, 10.0, 1e-6, 0, 0), Segment(16, 1e-6, 1e-7, 0, 0)]
    res = train_adaptive(_net(), _resize, plan, (X, y), target_loss=1e-7, loss_fn=torch.nn.functional.mse_loss,
                         eval_fn=_evaluator(X, y), flops_per_step=_flops, learning_rate=3e-2, max_steps=1500,
                         eval_every=10, stall_patience=5, min_gain=0.01, random_state=0)
    assert [s[4] for s in res.switches] == ["stall"]
    assert res.module[0].out_features == 16


def test_deterministic_and_model_untouched():
    X, y = _task()
    net = _net()
    w0 = [p.detach().clone() for p in net.parameters()]
    runs = [train_adaptive(net, _resize, [Segment(2, 10, 0.3, 0, 0), Segment(6, 0.3, 0.05, 0, 0)], (X, y),
                           target_loss=0.05, loss_fn=torch.nn.functional.mse_loss, eval_fn=_evaluator(X, y),
                           flops_per_step=_flops, learning_rate=1e-2, max_steps=300, eval_every=10,
                           optimizer_state="carry", random_state=3) for _ in range(2)]
    assert runs[0].history == runs[1].history
    for p, q in zip(w0, net.parameters()):
        assert torch.equal(p, q)


def test_follows_a_fitted_scheduler():
    C = np.logspace(0, 4, 20)
    X_runs = np.vstack([np.column_stack([C, np.full(20, s)]) for s in (2, 8)])
    y_runs = np.concatenate([0.05 + 1.0 * C ** -0.5, 0.01 + 3.0 * C ** -0.6])
    sched = AdaptiveShapeScheduler(ScalingLawRegressor("power_offset", shape_column=1, n_restarts=2,
                                                       random_state=0)).fit(X_runs, y_runs)
    segments = sched.schedule(0.06, start_loss=2.0)
    X, y = _task()
    res = train_adaptive(_net(), _resize, sched, (X, y), target_loss=0.06, start_loss=2.0,
                         loss_fn=torch.nn.functional.mse_loss, eval_fn=_evaluator(X, y), flops_per_step=_flops,
                         learning_rate=1e-2, max_steps=400, eval_every=10, random_state=0)
    assert res.history[0][2] == segments[0].shape
    for _compute, loss, old, _new, reason in res.switches:
        assert reason == "stall" or loss <= segments[[s.shape for s in segments].index(old)].loss_to


def test_bad_arguments_raise():
    X, y = _task()
    kwargs = dict(target_loss=0.1, loss_fn=torch.nn.functional.mse_loss, eval_fn=_evaluator(X, y),
                  flops_per_step=_flops)
    with pytest.raises(ValueError, match="eval_every"):
        train_adaptive(_net(), _resize, None, (X, y), eval_every=0, **kwargs)
    with pytest.raises(ValueError, match="optimizer_state"):
        train_adaptive(_net(), _resize, None, (X, y), optimizer_state="keep", **kwargs)
    with pytest.raises(ValueError, match="stall_patience"):
        train_adaptive(_net(), _resize, None, (X, y), stall_patience=0, **kwargs)
