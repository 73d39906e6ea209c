"""The H^s Sobolev misfit of DySLIM's field runs: a squared error weighted over the Fourier modes of the state.

A state of ``n`` features is read as one period of a field on a periodic 1-D grid of
length ``L``. Mode ``m`` of the discrete Fourier transform has the angular wavenumber
``k_m = 2 pi m / L`` (``m`` signed: ``-n/2 < m <= n/2``), and the squared H^s norm of a
residual ``r`` is, as in the DySLIM code (``sobolev_norm`` of ``projects/ergodic``),

``|r|_{H^s}^2 = sum_m (1 + |k_m|^2 + ... + |k_m|^{2s}) |r_hat_m|^2``,

divided here by ``n^2`` so that by Parseval's identity order 0 is the mean squared
error over the grid points (the code divides by ``n``: the sum, not the mean, over the
grid).
"""

import math

import numpy as np

__all__ = ["sobolev_weights", "sobolev_misfit"]


def sobolev_weights(n_points, order, length=1.0):
    """Weights ``sum_{i=0}^{order} |k_m|^{2i}`` of the ``n_points`` modes, in ``numpy.fft.fftfreq`` order."""
    k = 2.0 * math.pi * np.fft.fftfreq(n_points, d=length / n_points)
    return np.sum([k ** (2 * i) for i in range(order + 1)], axis=0)


def sobolev_misfit(residual, weights):
    """Mean over the batch of the weighted squared modes of ``residual`` (torch, ``(batch, n)``), over ``n**2``."""
    import torch

    n = residual.shape[-1]
    power = torch.fft.fft(residual, dim=-1).abs() ** 2
    return (power * weights).sum(dim=-1).mean() / n ** 2
