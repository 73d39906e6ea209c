"""Trajectories of chaotic systems for the dynamics family: Lorenz-63 (vectorised RK4) and
Kuramoto-Sivashinsky (ETDRK4 on a periodic grid)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_kuramoto_sivashinsky", "make_lorenz63"]


def _observe(states, noise, rng):
    """Add Gaussian noise of ``noise`` times each coordinate's standard deviation (observations only)."""
    if noise == 0:
        return states
    scale = states.reshape(-1, states.shape[-1]).std(axis=0)
    return states + noise * scale * rng.standard_normal(states.shape)


def _lorenz_rhs(x, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    dx = np.empty_like(x)
    dx[:, 0] = sigma * (x[:, 1] - x[:, 0])
    dx[:, 1] = x[:, 0] * (rho - x[:, 2]) - x[:, 1]
    dx[:, 2] = x[:, 0] * x[:, 1] - beta * x[:, 2]
    return dx


def _rk4(x, dt):
    k1 = _lorenz_rhs(x)
    k2 = _lorenz_rhs(x + 0.5 * dt * k1)
    k3 = _lorenz_rhs(x + 0.5 * dt * k2)
    k4 = _lorenz_rhs(x + dt * k3)
    return x + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@validate_params(
    {
        "n_trajectories": [Interval(Integral, 1, None, closed="left")],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "dt": [Interval(Real, 0, None, closed="neither")],
        "stride": [Interval(Integral, 1, None, closed="left")],
        "spin_up": [Interval(Real, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_lorenz63(n_trajectories=100, n_steps=400, *, dt=0.01, stride=10, spin_up=20.0, noise=0.0,
                  random_state=None):
    """Simulate trajectories of the Lorenz-63 system on its attractor.

    ``dx/dt = sigma (y - x)``, ``dy/dt = x (rho - z) - y``,
    ``dz/dt = x y - beta z`` with the classic ``sigma=10, rho=28, beta=8/3``,
    integrated by a fourth-order Runge-Kutta scheme vectorised over the
    trajectories. Initial states are drawn around the attractor and
    integrated for ``spin_up`` time units before the first observation;
    observations are ``stride`` integration steps apart (a time step of
    ``dt * stride``).

    Parameters
    ----------
    n_trajectories : int, default=100
        Number of independent trajectories.
    n_steps : int, default=400
        Observations per trajectory.
    dt : float, default=0.01
        Integration step.
    stride : int, default=10
        Integration steps between observations.
    spin_up : float, default=20.0
        Time integrated before the first observation, to land on the attractor.
    noise : float, default=0.0
        Standard deviation of Gaussian observation noise, in units of each
        coordinate's standard deviation over the returned states. The
        dynamics themselves are noise-free.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial states and the noise.

    Returns
    -------
    trajectories : ndarray of shape (n_trajectories, n_steps, 3)
        The observed states, time along axis 1.

    See Also
    --------
    make_kuramoto_sivashinsky : A chaotic field on a periodic grid.
    sklearn_icml.dynamics.make_rollout_dataset : Turns trajectories into (X, y).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_lorenz63
    >>> traj = make_lorenz63(n_trajectories=2, n_steps=5, random_state=0)
    >>> traj.shape
    (2, 5, 3)
    """
    rng = check_random_state(random_state)
    x = rng.standard_normal((n_trajectories, 3)) * np.array([8.0, 8.0, 8.0]) + np.array([0.0, 0.0, 25.0])
    for _ in range(int(round(spin_up / dt))):
        x = _rk4(x, dt)
    out = np.empty((n_trajectories, n_steps, 3))
    for t in range(n_steps):
        out[:, t] = x
        if t < n_steps - 1:
            for _ in range(stride):
                x = _rk4(x, dt)
    return _observe(out, noise, rng)


def _etdrk4_coefficients(linear, h, n_contour=32):
    """ETDRK4 coefficients of Kassam and Trefethen (2005), by a contour integral in the complex plane."""
    E = np.exp(h * linear)
    E2 = np.exp(h * linear / 2.0)
    roots = np.exp(1j * np.pi * (np.arange(1, n_contour + 1) - 0.5) / n_contour)
    LR = h * linear[:, None] + roots[None, :]
    Q = h * np.real(np.mean((np.exp(LR / 2.0) - 1.0) / LR, axis=1))
    f1 = h * np.real(np.mean((-4.0 - LR + np.exp(LR) * (4.0 - 3.0 * LR + LR ** 2)) / LR ** 3, axis=1))
    f2 = h * np.real(np.mean((2.0 + LR + np.exp(LR) * (-2.0 + LR)) / LR ** 3, axis=1))
    f3 = h * np.real(np.mean((-4.0 - 3.0 * LR - LR ** 2 + np.exp(LR) * (4.0 - LR)) / LR ** 3, axis=1))
    return E, E2, Q, f1, f2, f3


@validate_params(
    {
        "n_trajectories": [Interval(Integral, 1, None, closed="left")],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "n_grid": [Interval(Integral, 8, None, closed="left")],
        "domain_length": [Interval(Real, 0, None, closed="neither")],
        "dt": [Interval(Real, 0, None, closed="neither")],
        "stride": [Interval(Integral, 1, None, closed="left")],
        "spin_up": [Interval(Real, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_kuramoto_sivashinsky(n_trajectories=20, n_steps=200, *, n_grid=64, domain_length=22.0, dt=0.25, stride=4,
                              spin_up=200.0, noise=0.0, random_state=None):
    """Simulate trajectories of the Kuramoto-Sivashinsky equation on a periodic domain.

    ``u_t = -u u_x - u_xx - u_xxxx`` on ``[0, domain_length)`` with periodic
    boundaries, discretised on ``n_grid`` points by Fourier modes and
    integrated by the exponential time-differencing Runge-Kutta scheme
    ETDRK4 of Kassam and Trefethen (2005), vectorised over the
    trajectories. The domain length 22 gives the classic chaotic regime.
    Initial fields are a few random low Fourier modes, integrated for
    ``spin_up`` time units before the first observation; observations are
    ``stride`` steps apart (a time step of ``dt * stride``).

    Parameters
    ----------
    n_trajectories : int, default=20
        Number of independent trajectories.
    n_steps : int, default=200
        Observations per trajectory.
    n_grid : int, default=64
        Grid points (the state dimension).
    domain_length : float, default=22.0
        Length of the periodic domain.
    dt : float, default=0.25
        Integration step.
    stride : int, default=4
        Integration steps between observations.
    spin_up : float, default=200.0
        Time integrated before the first observation.
    noise : float, default=0.0
        Standard deviation of Gaussian observation noise, in units of each
        grid point's standard deviation over the returned states.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial fields and the noise.

    Returns
    -------
    trajectories : ndarray of shape (n_trajectories, n_steps, n_grid)
        The observed fields, time along axis 1.

    See Also
    --------
    make_lorenz63 : A three-dimensional chaotic system.
    sklearn_icml.dynamics.energy_spectrum_log_ratio : Compares the energy spectra of fields.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_kuramoto_sivashinsky
    >>> u = make_kuramoto_sivashinsky(n_trajectories=2, n_steps=3, n_grid=32, spin_up=10.0, random_state=0)
    >>> u.shape
    (2, 3, 32)
    """
    rng = check_random_state(random_state)
    k = 2.0 * np.pi / domain_length * np.fft.rfftfreq(n_grid, d=1.0 / n_grid)
    linear = k ** 2 - k ** 4
    E, E2, Q, f1, f2, f3 = _etdrk4_coefficients(linear, dt)
    g = -0.5j * k
    if n_grid % 2 == 0:
        g[-1] = 0.0  # no odd derivative of the Nyquist mode: the grid values then hold the whole state

    x = domain_length * np.arange(n_grid) / n_grid
    modes = np.arange(1, 5)
    phases = rng.uniform(0, 2 * np.pi, (n_trajectories, len(modes)))
    amplitudes = rng.standard_normal((n_trajectories, len(modes)))
    u0 = np.einsum("tm,tmx->tx", amplitudes,
                   np.cos(2 * np.pi * modes[None, :, None] * x[None, None, :] / domain_length + phases[..., None]))
    v = np.fft.rfft(u0, axis=-1)

    def nonlinear(v_hat):
        u = np.fft.irfft(v_hat, n=n_grid, axis=-1)
        return g * np.fft.rfft(u * u, axis=-1)

    def step(v_hat):
        Nv = nonlinear(v_hat)
        a = E2 * v_hat + Q * Nv
        Na = nonlinear(a)
        b = E2 * v_hat + Q * Na
        Nb = nonlinear(b)
        c = E2 * a + Q * (2.0 * Nb - Nv)
        Nc = nonlinear(c)
        return E * v_hat + Nv * f1 + 2.0 * (Na + Nb) * f2 + Nc * f3

    for _ in range(int(round(spin_up / dt))):
        v = step(v)
    out = np.empty((n_trajectories, n_steps, n_grid))
    for t in range(n_steps):
        out[:, t] = np.fft.irfft(v, n=n_grid, axis=-1)
        if t < n_steps - 1:
            for _ in range(stride):
                v = step(v)
    return _observe(out, noise, rng)
