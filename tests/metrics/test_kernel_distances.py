"""mmd2 and sinkhorn_divergence against brute-force references written from their definitions."""

import numpy as np
import pytest

from sklearn_icml.metrics import mmd2, sinkhorn_divergence


def _mmd2_brute_force(X, Y, bandwidths):
    def k(a, b):
        r2 = float(np.sum((a - b) ** 2))
        return sum(s * s / (s * s + r2) for s in bandwidths)

    kxx = np.mean([[k(a, b) for b in X] for a in X])
    kyy = np.mean([[k(a, b) for b in Y] for a in Y])
    kxy = np.mean([[k(a, b) for b in Y] for a in X])
    return kxx + kyy - 2 * kxy


def _sinkhorn_cost_brute_force(X, Y, reg, n_iter=5000):
    """Entropic OT cost <P, C> by plain Sinkhorn scaling (float64, small problems only)."""
    C = np.array([[np.sum((a - b) ** 2) for b in Y] for a in X])
    a, b = np.full(len(X), 1 / len(X)), np.full(len(Y), 1 / len(Y))
    K = np.exp(-C / reg)
    u = np.ones(len(X))
    for _ in range(n_iter):
        v = b / (K.T @ u)
        u = a / (K @ v)
    P = u[:, None] * K * v[None, :]
    return float(np.sum(P * C))


@pytest.mark.parametrize("bandwidths", [(0.2, 0.5, 0.9, 1.3), (2.0,), (0.1, 5.0, 50.0)])
def test_mmd2_matches_the_definition(bandwidths):
    rng = np.random.RandomState(0)
    X, Y = rng.normal(size=(30, 3)), rng.normal(0.5, 1.5, size=(20, 3))
    expected = _mmd2_brute_force(X, Y, bandwidths)
    assert mmd2(X, Y, bandwidths=bandwidths) == pytest.approx(expected, abs=1e-6)
    assert mmd2(Y, X, bandwidths=bandwidths) == pytest.approx(expected, abs=1e-6)
    assert mmd2(X, X, bandwidths=bandwidths) == 0.0


def test_mmd2_on_tensors_is_the_same_number_and_differentiable_without_cdist(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "cdist", lambda *a, **k: pytest.fail("mmd2 must not call torch.cdist"))
    rng = np.random.RandomState(1)
    X, Y = rng.normal(size=(25, 2)), rng.normal(size=(15, 2)) + 1.0
    Xt = torch.tensor(X, requires_grad=True)
    value = mmd2(Xt, torch.tensor(Y))
    assert value.item() == pytest.approx(_mmd2_brute_force(X, Y, (0.2, 0.5, 0.9, 1.3)), abs=1e-9)
    value.backward()
    assert Xt.grad.shape == X.shape and torch.isfinite(Xt.grad).all() and Xt.grad.abs().sum() > 0
    assert mmd2(Xt, Xt).item() == pytest.approx(0.0, abs=1e-12)


def test_mmd2_grows_with_the_shift_and_stays_bounded():
    X = np.random.RandomState(2).normal(size=(40, 2))
    values = [mmd2(X, X + shift) for shift in (0.0, 0.2, 1.0, 5.0, 1e6)]
    assert values == sorted(values)
    assert values[-1] <= 2 * 4 + 1e-12


def test_mmd2_rejects_bad_input():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="features"):
        mmd2(X, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="bandwidths"):
        mmd2(X, X, bandwidths=(0.5, -1.0))
    with pytest.raises(ValueError, match="kernel"):
        mmd2(X, X, kernel="rbf")
    with pytest.raises(ValueError, match="NaN"):
        mmd2(X, np.full((3, 2), np.nan))


@pytest.mark.parametrize("reg", [0.5, 2.0])
def test_sinkhorn_divergence_matches_plain_sinkhorn_scaling(reg):
    rng = np.random.RandomState(3)
    X, Y = rng.normal(size=(12, 2)), rng.normal(1.0, 1.0, size=(9, 2))
    expected = _sinkhorn_cost_brute_force(X, Y, reg) - 0.5 * (
        _sinkhorn_cost_brute_force(X, X, reg) + _sinkhorn_cost_brute_force(Y, Y, reg))
    assert sinkhorn_divergence(X, Y, reg=reg) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert sinkhorn_divergence(X, X, reg=reg) == pytest.approx(0.0, abs=1e-9)
    undebiased = sinkhorn_divergence(X, Y, reg=reg, debias=False)
    assert undebiased == pytest.approx(_sinkhorn_cost_brute_force(X, Y, reg), rel=1e-4)


def test_sinkhorn_divergence_of_a_translation_is_the_squared_shift():
    # for a translated copy the optimal plan is the identity; the debiased entropic value tends to |shift|^2
    X = np.random.RandomState(4).normal(size=(40, 2))
    shift = np.array([3.0, -1.0])
    assert sinkhorn_divergence(X, X + shift, reg=0.5) == pytest.approx(10.0, rel=1e-3)


def test_sinkhorn_divergence_on_tensors_has_a_gradient():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(5)
    Xt = torch.tensor(rng.normal(size=(10, 2)), requires_grad=True)
    Y = torch.tensor(rng.normal(size=(8, 2)) + 2.0)
    value = sinkhorn_divergence(Xt, Y, reg=1.0)
    assert value.item() == pytest.approx(sinkhorn_divergence(Xt.detach().numpy(), Y.numpy(), reg=1.0), rel=1e-6)
    value.backward()
    assert torch.isfinite(Xt.grad).all() and Xt.grad.abs().sum() > 0
    with pytest.raises(TypeError, match="both"):
        sinkhorn_divergence(Xt, Y.numpy())
