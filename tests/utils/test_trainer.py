"""The public trainer: its loops against hand-written torch loops, its hooks, and skorch's public API only."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from sklearn_icml.utils import Trainer, TrainingResult, torch_generator  # noqa: E402
from sklearn_icml.utils._training import _net_classes  # noqa: E402

from ._regression_data import reference_lbfgs as _reference_lbfgs  # noqa: E402
from ._regression_data import regression_data as _data  # noqa: E402
from ._regression_data import regression_net as _net  # noqa: E402


def _mse(module, X, y):
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(module(torch.as_tensor(X)), torch.as_tensor(y)))


def _assert_same_parameters(a, b):
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa.detach(), pb.detach())


def test_epochs_with_clipping_and_a_per_batch_schedule_are_the_hand_loop():
    """Adam, gradient clipping and a cosine schedule stepped per batch: bit for bit the plain torch loop."""
    X, y = _data(n=70)
    a, b = _net(), _net()
    trainer = Trainer(optimizer="adam", max_iter=5, batch_size=16, learning_rate=0.02, grad_clip=0.5,
                      lr_schedule="cosine", lr_schedule_interval="batch", n_iter_no_change=None, random_state=7)
    res = trainer.fit(a, X, y)

    gen = torch_generator(7)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    opt = torch.optim.Adam(b.parameters(), lr=0.02, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5 * math.ceil(70 / 16))
    curve = []
    for _ in range(5):
        order, total = torch.randperm(70, generator=gen), 0.0
        for lo in range(0, 70, 16):
            idx = order[lo:lo + 16]
            loss = torch.nn.functional.mse_loss(b(Xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(b.parameters(), 0.5)
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        curve.append(total / 70)
    assert isinstance(res, TrainingResult) and res.n_iter == 5
    assert res.loss_curve == curve
    _assert_same_parameters(a, b)


def test_step_stream_is_the_hand_loop_over_successive_permutations():
    """loop="steps": max_iter steps over successive seeded permutations, a batch spanning two passes."""
    X, y = _data(n=50)
    a, b = _net(), _net()
    res = Trainer(loop="steps", optimizer="adam", max_iter=23, batch_size=16, learning_rate=0.01, grad_clip=1.0,
                  n_iter_no_change=None, random_state=3).fit(a, X, y)

    gen = torch_generator(3)
    order = torch.cat([torch.randperm(50, generator=gen) for _ in range(math.ceil(23 * 16 / 50))])
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    opt = torch.optim.Adam(b.parameters(), lr=0.01)
    losses = []
    for k in range(23):
        idx = order[k * 16:(k + 1) * 16]
        loss = torch.nn.functional.mse_loss(b(Xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(b.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    _assert_same_parameters(a, b)
    # the history has one row per pass of ceil(50 / 16) = 4 steps: 4 + 4 + ... + 3 steps
    assert res.n_iter == 23 and len(res.loss_curve) == math.ceil(23 / 4)
    assert res.loss_curve[0] == pytest.approx(np.mean(losses[:4]), rel=1e-12)


def _lbfgs_by_hand(X, y, n_iter, **options):
    """The objective after ``n_iter`` iterations of torch's LBFGS, run by hand from the same start."""
    module = _net(seed=2)
    assert _reference_lbfgs(module, X, y, max_iter=n_iter, **options)[0] == n_iter
    return _mse(module, X, y)


def test_lbfgs_loss_curve_has_the_objective_after_each_iteration():
    """loop="lbfgs": loss_curve[k] is the objective at the k-th iterate of torch's solver (k = 0: the start)."""
    X, y = _data(n=80)
    options = dict(max_eval=10_000, tolerance_change=0.0, history_size=10)
    module = _net(seed=2)
    res = Trainer(loop="lbfgs", max_iter=8, learning_rate=1.0, tol=1e-14, optimizer_options=options).fit(module, X, y)
    assert res.n_iter == 8 and len(res.loss_curve) == 9 and res.n_evaluations >= 9
    expected = [_mse(_net(seed=2), X, y)] + [_lbfgs_by_hand(X, y, k, tolerance_grad=1e-14, **options)
                                             for k in range(1, 9)]
    np.testing.assert_allclose(res.loss_curve, expected, rtol=1e-12)
    assert np.all(np.diff(res.loss_curve) < 0)
    assert res.loss_curve[-1] == pytest.approx(_mse(module, X, y), rel=1e-12)


def test_multi_task_terms_are_summed_and_reported_per_epoch():
    X, y = _data()

    def scalar(module, xb, yb):
        out = module(xb)
        return ((out - yb) ** 2).mean() + 0.1 * (out ** 2).mean()

    def terms(module, xb, yb):
        out = module(xb)
        return {"fit": ((out - yb) ** 2).mean(), "shrink": 0.1 * (out ** 2).mean()}

    a, b = _net(), _net()
    ra = Trainer(train_step=scalar, max_iter=4, n_iter_no_change=None, random_state=0).fit(a, X, y)
    rb = Trainer(train_step=terms, max_iter=4, n_iter_no_change=None, random_state=0).fit(b, X, y)
    _assert_same_parameters(a, b)
    assert ra.loss_curve == rb.loss_curve and ra.loss_terms is None
    assert set(rb.loss_terms) == {"fit", "shrink"} and all(len(v) == 4 for v in rb.loss_terms.values())
    np.testing.assert_allclose(np.add(rb.loss_terms["fit"], rb.loss_terms["shrink"]), rb.loss_curve, rtol=1e-6)
    # the term means are means over samples of each epoch: the first epoch's "fit" term by hand
    order = torch.randperm(60, generator=torch_generator(0))
    c = _net()
    opt = torch.optim.AdamW(c.parameters(), lr=1e-3, weight_decay=0.0)
    total = 0.0
    for lo in range(0, 60, 32):
        idx = order[lo:lo + 32]
        parts = terms(c, torch.as_tensor(X[idx]), torch.as_tensor(y[idx]))
        opt.zero_grad()
        (parts["fit"] + parts["shrink"]).backward()
        opt.step()
        total += float(parts["fit"].detach()) * len(idx)
    assert rb.loss_terms["fit"][0] == pytest.approx(total / 60, rel=1e-12)


@pytest.mark.parametrize("n_iter_no_change", [1, 4])
def test_stopping_rule_counts_epochs_as_scikit_learns_mlp(n_iter_no_change):
    """With a tolerance no decrease can meet, scikit-learn's MLP and the trainer stop after the same epochs."""
    from sklearn.neural_network import MLPRegressor

    X, y = _data()
    mlp = MLPRegressor(hidden_layer_sizes=(4,), solver="adam", tol=1e6, n_iter_no_change=n_iter_no_change,
                       max_iter=50, random_state=0).fit(X, y.ravel())
    res = Trainer(max_iter=50, tol=1e6, n_iter_no_change=n_iter_no_change, random_state=0).fit(_net(), X, y)
    assert res.n_iter == mlp.n_iter_ == n_iter_no_change + 2


def test_skorch_callbacks_see_the_epoch_loss_and_the_gradients():
    """User callbacks: skorch's GradientNormClipping is the trainer's grad_clip; a logger sees train_loss."""
    from skorch.callbacks import Callback, GradientNormClipping

    class Log(Callback):
        def initialize(self):
            self.losses = []
            return self

        def on_epoch_end(self, net, **kwargs):
            self.losses.append(net.history[-1, "train_loss"])

    X, y = _data()
    log, a, b = Log(), _net(), _net()
    options = dict(optimizer="sgd", learning_rate=0.5, max_iter=3, n_iter_no_change=None, random_state=1)
    ra = Trainer(grad_clip=0.05, **options).fit(a, X, 10 * y)
    rb = Trainer(callbacks=[GradientNormClipping(0.05), ("log", log)], **options).fit(b, X, 10 * y)
    _assert_same_parameters(a, b)
    assert ra.loss_curve == rb.loss_curve == log.losses


def test_the_net_overrides_only_what_skorch_documents_for_customisation():
    """No private skorch method and neither fit_loop nor run_single_epoch (skorch's bookkeeping) is replaced."""
    net_cls = _net_classes()[0]
    overridden = {name for name in vars(net_cls) if hasattr(skorch.NeuralNet, name) and not name.startswith("__")}
    assert not {name for name in overridden if name.startswith("_")}
    assert overridden <= {"train_step", "train_step_single", "validation_step", "get_loss", "infer",
                          "get_train_step_accumulator", "get_all_learnable_params", "get_default_callbacks",
                          "initialize_callbacks", "initialize_optimizer"}
    assert not {name for name in vars(net_cls) if name.startswith("_") and not name.startswith("__")}


@pytest.mark.parametrize("kwargs, match", [
    (dict(loop="epoch"), "loop must be one of"),
    (dict(optimizer="lbfgs"), "loop='lbfgs'"),
    (dict(loop="lbfgs", optimizer="adam"), "leave optimizer=None"),
    (dict(loop="lbfgs", grad_clip=1.0), "does not apply to loop='lbfgs'"),
    (dict(loop="lbfgs", early_stopping=True), "does not apply to loop='lbfgs'"),
])
def test_invalid_options_are_refused_at_fit(kwargs, match):
    X, y = _data()
    trainer = Trainer(name="Est", **kwargs)  # __init__ only stores
    with pytest.raises(ValueError, match=match):
        trainer.fit(_net(), X, y)


def test_a_trainer_fits_several_modules_alike():
    X, y = _data()
    trainer = Trainer(max_iter=3, random_state=0)
    r1, r2 = trainer.fit(_net(), X, y), trainer.fit(_net(), X, y)
    assert r1.loss_curve == r2.loss_curve and r1.module is not r2.module
