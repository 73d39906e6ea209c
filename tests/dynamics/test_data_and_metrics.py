"""make_lorenz63 / make_kuramoto_sivashinsky against independent integrators; rollout pairs, MELR and
covariance RMSE against loops written from their definitions."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from sklearn_icml.datasets import make_kuramoto_sivashinsky, make_lorenz63
from sklearn_icml.dynamics import cov_rmse, energy_spectrum_log_ratio, make_rollout_dataset


def _lorenz(t, x):
    return [10.0 * (x[1] - x[0]), x[0] * (28.0 - x[2]) - x[1], x[0] * x[1] - 8.0 / 3.0 * x[2]]


def test_lorenz63_follows_the_ode_and_adds_noise_to_observations_only():
    traj = make_lorenz63(3, 6, random_state=0)
    assert traj.shape == (3, 6, 3)
    for x in traj:
        for t in range(5):  # each observation is the exact flow of the previous one over 0.1 time units
            sol = solve_ivp(_lorenz, (0.0, 0.1), x[t], method="DOP853", rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(x[t + 1], sol.y[:, -1], rtol=1e-4, atol=5e-4)  # RK4 at dt 0.01
    # spun up onto the attractor: the classic ranges
    big = make_lorenz63(50, 100, random_state=1)
    assert 20.0 < big[..., 2].mean() < 27.0 and np.abs(big[..., 0]).max() < 25.0
    noisy = make_lorenz63(50, 100, noise=0.5, random_state=1)
    ratio = (noisy - big).reshape(-1, 3).std(axis=0) / big.reshape(-1, 3).std(axis=0)
    np.testing.assert_allclose(ratio, 0.5, rtol=0.03)


def test_kuramoto_sivashinsky_matches_a_fine_explicit_integration():
    n = 32
    u = make_kuramoto_sivashinsky(2, 2, n_grid=n, domain_length=22.0, dt=0.25, stride=4, spin_up=20.0,
                                  random_state=0)
    k = 2 * np.pi / 22.0 * np.fft.rfftfreq(n, d=1.0 / n)
    dk = k.copy()
    dk[-1] = 0.0  # the Nyquist mode has no odd derivative on a real grid

    def rhs(v):  # u_t = -(u^2/2)_x - u_xx - u_xxxx in Fourier space
        w = np.fft.irfft(v, n=n)
        return (k ** 2 - k ** 4) * v - 0.5j * dk * np.fft.rfft(w * w)

    v, h = np.fft.rfft(u[0, 0]), 1e-3
    for _ in range(1000):  # classic RK4 with a step 250x smaller, over one observation interval (1.0)
        a = rhs(v)
        b = rhs(v + 0.5 * h * a)
        c = rhs(v + 0.5 * h * b)
        d = rhs(v + h * c)
        v = v + h / 6 * (a + 2 * b + 2 * c + d)
    np.testing.assert_allclose(u[0, 1], np.fft.irfft(v, n=n), atol=1e-4 * np.abs(u[0, 1]).max())
    assert abs(u.mean()) < 1e-10  # the mean of the field is conserved (zero initially)


def test_make_rollout_dataset_matches_loops():
    rng = np.random.RandomState(0)
    traj = rng.normal(size=(3, 9, 2))
    for K, stride in [(1, 1), (3, 1), (2, 3)]:
        X, y = make_rollout_dataset(traj, n_rollout_steps=K, stride=stride)
        rows_X, rows_y = [], []
        for tr in traj:
            for t in range(0, 9 - K, stride):
                rows_X.append(tr[t])
                rows_y.append(np.concatenate([tr[t + j] for j in range(1, K + 1)]))
        np.testing.assert_array_equal(X, rows_X)
        np.testing.assert_array_equal(y, rows_y)
    with pytest.raises(ValueError, match="too short"):
        make_rollout_dataset(traj, n_rollout_steps=9)


def test_energy_spectrum_log_ratio_by_an_explicit_dft():
    rng = np.random.RandomState(0)
    true, pred = rng.normal(size=(20, 8)), 1.5 * rng.normal(size=(30, 8)) + 0.2
    x = np.arange(8)

    def spectrum(u):
        return np.array([np.mean([abs(np.sum(row * np.exp(-2j * np.pi * m * x / 8))) ** 2 for row in u])
                         for m in range(5)])

    e_true, e_pred = spectrum(true), spectrum(pred)
    log_ratio = np.abs(np.log10(e_pred / e_true))
    assert energy_spectrum_log_ratio(true, pred) == pytest.approx(log_ratio.mean(), rel=1e-10)
    assert energy_spectrum_log_ratio(true, pred, weighted=True) == pytest.approx(
        np.sum(e_true / e_true.sum() * log_ratio), rel=1e-10)
    assert energy_spectrum_log_ratio(true, true) == 0.0
    with pytest.raises(ValueError, match="grid points"):
        energy_spectrum_log_ratio(true, pred[:, :4])


def test_cov_rmse_by_loops():
    rng = np.random.RandomState(1)
    A, B = rng.normal(size=(40, 3)), rng.normal(size=(25, 3)) @ np.diag([1.0, 2.0, 0.5])

    def cov(M):
        c = M - M.mean(axis=0)
        return np.array([[np.sum(c[:, i] * c[:, j]) / (len(M) - 1) for j in range(3)] for i in range(3)])

    assert cov_rmse(A, B) == pytest.approx(np.sqrt(np.mean((cov(B) - cov(A)) ** 2)), rel=1e-12)
    assert cov_rmse(A, A) == 0.0
    with pytest.raises(ValueError, match="two rows"):
        cov_rmse(A, B[:1])
