"""The MLP projector (FreeBind's Proj_Head_mini): architecture, objectives against their definitions, training."""

import math

import numpy as np
import pytest

from sklearn_icml.multimodal import SpaceBond
from sklearn_icml.multimodal._projectors import HIDDEN_WIDTH, MLPProjector, _objective, make_proj_head

torch = pytest.importorskip("torch")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def _pairs(n=48, d_u=5, d_e=4, seed=0):
    rng = np.random.RandomState(seed)
    u = rng.normal(size=(n, d_u))
    e = np.tanh(u @ rng.normal(size=(d_u, d_e))) + 0.05 * rng.normal(size=(n, d_e))
    return np.hstack([u, e])


def _log_softmax(a, axis):
    a = a - a.max(axis=axis, keepdims=True)
    return a - np.log(np.exp(a).sum(axis=axis, keepdims=True))


def test_proj_head_mini_architecture_and_xavier_initialisation():
    head = make_proj_head(5, 3, torch.Generator().manual_seed(0))
    assert head.fc1.weight.shape == (HIDDEN_WIDTH, 5) and head.fc2.weight.shape == (3, HIDDEN_WIDTH)
    assert isinstance(head.bn1, torch.nn.BatchNorm1d) and head.bn2.num_features == 3
    for fc in (head.fc1, head.fc2):
        fan_out, fan_in = fc.weight.shape
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        w = fc.weight.detach().numpy()
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound  # uniform on [-bound, bound]
        assert not fc.bias.detach().numpy().any()
    head.eval()
    out = head(torch.randn(7, 5, generator=torch.Generator().manual_seed(1))).detach().numpy()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    again = make_proj_head(5, 3, torch.Generator().manual_seed(0))
    assert torch.equal(again.fc1.weight, head.fc1.weight)


@pytest.mark.parametrize("loss", ["infonce", "mse", "cosine"])
def test_objectives_follow_their_definitions(loss):
    head = make_proj_head(4, 3, torch.Generator().manual_seed(0)).eval()
    rng = np.random.RandomState(0)
    xb = torch.tensor(rng.normal(size=(6, 4)), dtype=torch.float32)
    yb = torch.tensor(rng.normal(size=(6, 3)), dtype=torch.float32)
    got = float(_objective(loss, 0.05)(head, xb, yb).detach())
    p = head(xb).detach().numpy().astype(np.float64)
    t = yb.numpy() / np.linalg.norm(yb.numpy(), axis=1, keepdims=True)
    if loss == "infonce":
        logits = p @ t.T / 0.05
        want = -0.5 * (np.mean(np.diag(_log_softmax(logits, 1))) + np.mean(np.diag(_log_softmax(logits, 0))))
    elif loss == "mse":
        want = np.mean(((p - t) ** 2).sum(axis=1))
    else:
        want = np.mean(1.0 - (p * t).sum(axis=1))
    assert got == pytest.approx(want, rel=1e-4)


def test_one_row_batch_uses_running_statistics():
    head = make_proj_head(4, 3, torch.Generator().manual_seed(0)).train()
    # give the running statistics values of their own, away from the initial 0 and 1
    with torch.no_grad():
        head(torch.tensor(np.random.RandomState(1).normal(2.0, 3.0, size=(32, 4)), dtype=torch.float32))
    buffers = {k: v.clone() for k, v in head.state_dict().items()}
    xb, yb = torch.tensor([[0.5, -1.0, 2.0, 0.1]]), torch.tensor([[1.0, 0.0, -1.0]])
    loss = _objective("mse", 0.05)(head, xb, yb)
    loss.backward()
    # the loss of the evaluation-mode network (running statistics), squared error to the normalised target
    ref = make_proj_head(4, 3, torch.Generator().manual_seed(0))
    ref.load_state_dict(buffers)
    with torch.no_grad():
        p = ref.eval()(xb).numpy().astype(np.float64)
    t = yb.numpy() / np.linalg.norm(yb.numpy())
    assert float(loss.detach()) == pytest.approx(float(((p - t) ** 2).sum()), rel=1e-5)
    # back in training mode, the running statistics untouched by the one-row batch, gradients present
    assert head.training
    for k, v in head.state_dict().items():
        assert torch.equal(v, buffers[k]), k
    assert head.fc1.weight.grad is not None and float(head.fc1.weight.grad.abs().sum()) > 0


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_bond_trains_with_infonce_and_is_deterministic(device):
    X = _pairs()
    kw = dict(n_base_features=5, projector="mlp", max_iter=12, batch_size=16, learning_rate=1e-2, device=device)
    bond = SpaceBond(**kw, random_state=0).fit(X)
    assert bond.device_.startswith(device)
    (proj,) = bond.projectors_
    assert isinstance(proj, MLPProjector)
    assert {p.device.type for p in proj.module.parameters()} == {"cpu"}
    assert len(proj.loss_curve) == 12 and proj.loss_curve[-1] < proj.loss_curve[0]
    Z = bond.transform(X)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-10)
    np.testing.assert_array_equal(Z, SpaceBond(**kw, random_state=0).fit(X).transform(X))
    assert not np.allclose(Z, SpaceBond(**kw, random_state=1).fit(X).transform(X))
    if device == "cuda":
        cpu = SpaceBond(**{**kw, "device": "cpu"}, random_state=0).fit(X).transform(X)
        np.testing.assert_allclose(Z, cpu, atol=1e-3)


def test_mlp_early_stopping_holds_out_pairs_and_stops_on_their_loss():
    X = _pairs()
    kw = dict(n_base_features=5, projector="mlp", batch_size=16, learning_rate=1e-2, random_state=0)
    (plain,) = SpaceBond(max_iter=12, **kw).fit(X).projectors_
    assert plain.validation_scores is None and len(plain.loss_curve) == 12  # no rule without early stopping
    (full,) = SpaceBond(max_iter=12, early_stopping=True, n_iter_no_change=12, tol=0.0, **kw).fit(X).projectors_
    assert len(full.validation_scores) == len(full.loss_curve) == 12
    assert np.all(np.isfinite(full.validation_scores))
    assert not np.allclose(full.loss_curve, plain.loss_curve)  # a tenth of the pairs is held out
    bond = SpaceBond(max_iter=50, early_stopping=True, n_iter_no_change=1, tol=1e3, **kw).fit(X)
    (stopped,) = bond.projectors_
    assert len(stopped.validation_scores) == len(stopped.loss_curve) == bond.n_iter_ <= 3


def test_mlp_transform_streams_in_batches_and_mixes_projectors():
    X = _pairs(n=33)  # 33 = 2 * 16 + 1: the last training batch has a single row
    bond = SpaceBond(n_base_features=5, projector="mlp", loss="cosine", n_projectors=2, max_iter=2, batch_size=16,
                     random_state=0).fit(X)
    assert len(bond.projectors_) == 2
    full = bond.transform(X)
    np.testing.assert_allclose(bond.set_params(batch_size=5).transform(X), full, atol=1e-6)
    # combination: normalize(0.5 * normalize(mean of the heads' outputs) + 0.5 * normalize(u))
    e = X[:, 5:] / np.linalg.norm(X[:, 5:], axis=1, keepdims=True)
    with torch.no_grad():
        outs = [p.module(torch.tensor(e, dtype=torch.float32)).numpy() for p in bond.projectors_]
    p = np.mean(outs, axis=0)
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    u = X[:, :5] / np.linalg.norm(X[:, :5], axis=1, keepdims=True)
    want = 0.5 * p + 0.5 * u
    np.testing.assert_allclose(full, want / np.linalg.norm(want, axis=1, keepdims=True), atol=1e-5)


def test_mlp_progress_only_under_verbose(capsys):
    X = _pairs(n=20)
    SpaceBond(n_base_features=5, projector="mlp", max_iter=1, random_state=0).fit(X)
    assert capsys.readouterr().out == ""
    SpaceBond(n_base_features=5, projector="mlp", max_iter=1, verbose=1, random_state=0).fit(X)
    assert "[SpaceBond]" in capsys.readouterr().out


def test_cuda_without_gpu_is_refused_before_work():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="cuda"):
        SpaceBond(projector="mlp", device="cuda").fit(_pairs())
