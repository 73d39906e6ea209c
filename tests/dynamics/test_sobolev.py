"""The H^s Sobolev misfit: its modes against a loop over the DFT's definition, a sine of known energy, and training."""

import copy
import math

import numpy as np
import pytest

from sklearn_icml.dynamics import DySLIMRegressor
from sklearn_icml.dynamics._sobolev import sobolev_misfit, sobolev_weights


def _loop_sobolev(R, order, length):
    """Mean over rows of sum over modes m of (sum_i k_m^(2i)) |r_hat_m|^2 / n^2, the DFT written as a loop."""
    n = R.shape[1]
    x = np.arange(n)
    total = np.zeros(len(R))
    for m in range(n):
        signed = m if m <= n // 2 else m - n  # mode n - j is the wavenumber -j
        if n % 2 == 0 and m == n // 2:
            signed = -m  # numpy's fftfreq order puts the Nyquist mode at -n/2; |k| is the same
        k = 2 * math.pi * signed / length
        weight = sum(k ** (2 * i) for i in range(order + 1))
        re = R @ np.cos(2 * math.pi * m * x / n)
        im = -R @ np.sin(2 * math.pi * m * x / n)
        total += weight * (re ** 2 + im ** 2)
    return float(np.mean(total) / n ** 2)


@pytest.mark.parametrize("n", [7, 8])
@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("length", [1.0, 22.0])
def test_misfit_equals_a_loop_over_the_modes(n, order, length):
    torch = pytest.importorskip("torch")
    R = np.random.RandomState(n + order).normal(size=(5, n))
    w = torch.as_tensor(sobolev_weights(n, order, length), dtype=torch.float64)
    got = float(sobolev_misfit(torch.as_tensor(R), w))
    assert got == pytest.approx(_loop_sobolev(R, order, length), rel=1e-10)
    if order == 0:  # Parseval: order 0 is the mean squared error over the grid
        assert got == pytest.approx(float(np.mean(R ** 2)), rel=1e-10)


@pytest.mark.parametrize("j", [1, 3, 13, 15])
def test_a_sine_has_the_weight_of_its_wavenumber_and_a_planted_unsigned_wavenumber_fails(j):
    """sin(2 pi j x / n) on n = 16 points has mean square 1/2 and the single wavenumber 2 pi min(j, n - j) / L."""
    torch = pytest.importorskip("torch")
    n, order, length = 16, 2, 22.0
    R = np.sin(2 * math.pi * j * np.arange(n) / n)[None]
    k = 2 * math.pi * min(j, n - j) / length
    expected = 0.5 * (1 + k ** 2 + k ** 4)
    got = float(sobolev_misfit(torch.as_tensor(R), torch.as_tensor(sobolev_weights(n, order, length))))
    assert got == pytest.approx(expected, rel=1e-10)
    # a planted bug: wavenumbers 2 pi m / L with m = 0..n-1 unsigned weigh mode n - j as a fine scale
    kb = 2 * math.pi * np.arange(n) / length
    buggy = float(sobolev_misfit(torch.as_tensor(R), torch.as_tensor(1 + kb ** 2 + kb ** 4)))
    assert abs(buggy - expected) > 1e-3 * expected


def _fields(n_rows=24, n=8, seed=0):
    rng = np.random.RandomState(seed)
    x = 2 * math.pi * np.arange(n) / n
    a = rng.normal(size=(n_rows, 3))
    X = a[:, :1] + a[:, 1:2] * np.sin(x) + a[:, 2:] * np.cos(2 * x) + 0.1 * rng.normal(size=(n_rows, n))
    return X, np.roll(X, 1, axis=1)  # the next state: the field advected by one grid point


def _net(torch, n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.Tanh(), torch.nn.Linear(16, n))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return net


def test_training_on_the_sobolev_misfit_follows_a_hand_written_loop():
    """Full-batch Adam on the H^1 misfit written with an explicit DFT matrix: same logged misfit, same weights."""
    torch = pytest.importorskip("torch")
    X, y = _fields()
    n, steps, lr, length = X.shape[1], 6, 1e-2, 2 * math.pi
    net = _net(torch)
    est = DySLIMRegressor(module=net, lambda_uncond=0.0, lambda_cond=0.0, sobolev_order=1, sobolev_length=length,
                          normalize=False, batch_size=len(X), max_iter=steps, learning_rate=lr,
                          random_state=0).fit(X, y)

    m = np.arange(n)
    signed = np.where(m <= n // 2, m, m - n)
    weight = torch.tensor(1 + (2 * math.pi * signed / length) ** 2, dtype=torch.float32)
    C = torch.tensor(np.cos(2 * math.pi * np.outer(m, m) / n), dtype=torch.float32)
    S = torch.tensor(np.sin(2 * math.pi * np.outer(m, m) / n), dtype=torch.float32)
    ref = copy.deepcopy(net)
    opt = torch.optim.Adam(ref.parameters(), lr=lr)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    logged = []
    for _ in range(steps):
        opt.zero_grad()
        r = Xt + ref(Xt) - yt
        loss = (((r @ C) ** 2 + (r @ S) ** 2) * weight).sum(dim=1).mean() / n ** 2
        logged.append(float(loss.detach()))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
        opt.step()
    np.testing.assert_allclose(est.loss_curve_[:, 1], logged, rtol=1e-4)
    np.testing.assert_allclose(est.loss_curve_[:, 0], est.loss_curve_[:, 1])
    for p_est, p_ref in zip(est.module_.net.parameters(), ref.parameters()):
        np.testing.assert_allclose(p_est.detach().numpy(), p_ref.detach().numpy(), atol=1e-5)
    # the weights matter: the plain squared error logs other values from the same start
    plain = DySLIMRegressor(module=net, lambda_uncond=0.0, lambda_cond=0.0, normalize=False, batch_size=len(X),
                            max_iter=steps, learning_rate=lr, random_state=0).fit(X, y)
    assert logged[0] > 1.5 * plain.loss_curve_[0, 1]


def test_order_zero_is_the_squared_error_with_the_measure_terms():
    pytest.importorskip("torch")
    X, y = _fields(n_rows=40)
    kw = dict(hidden_layer_sizes=(8,), max_iter=4, batch_size=16, random_state=0)
    a = DySLIMRegressor(sobolev_order=0, **kw).fit(X, y)
    b = DySLIMRegressor(**kw).fit(X, y)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-4, atol=1e-7)


def test_sobolev_needs_dynamics_mode_and_valid_parameters():
    pytest.importorskip("torch")
    X, y = _fields()
    with pytest.raises(ValueError, match="DySLIMRegressor: sobolev_order=1 .*regression mode"):
        DySLIMRegressor(sobolev_order=1, max_iter=2).fit(X, y[:, 0])
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="sobolev_order"):
            DySLIMRegressor(sobolev_order=bad, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="sobolev_length"):
        DySLIMRegressor(sobolev_order=1, sobolev_length=0.0, max_iter=2).fit(X, y)
