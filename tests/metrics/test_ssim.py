"""SSIM against a per-position brute force of the definition (Gaussian window, zero padding)."""

import numpy as np
import pytest

from sklearn_icml.metrics import ssim_1d, ssim_2d


def _gauss(size, sigma):
    x = np.arange(size) - (size - 1) / 2
    w = np.exp(-x ** 2 / (2 * sigma ** 2))
    return w / w.sum()


def _ssim_brute_2d(a, b, size=11, sigma=1.5):
    """Each pixel: weighted moments over its window; pixels outside the image count as zeros."""
    w2 = np.outer(_gauss(size, sigma), _gauss(size, sigma))
    h, w = a.shape
    r = size // 2
    pa, pb = np.pad(a, r), np.pad(b, r)
    vals = []
    for i in range(h):
        for j in range(w):
            wa, wb = pa[i:i + size, j:j + size], pb[i:i + size, j:j + size]
            ma, mb = (w2 * wa).sum(), (w2 * wb).sum()
            va, vb = (w2 * wa * wa).sum() - ma ** 2, (w2 * wb * wb).sum() - mb ** 2
            cov = (w2 * wa * wb).sum() - ma * mb
            c1, c2 = 0.01 ** 2, 0.03 ** 2
            vals.append((2 * ma * mb + c1) * (2 * cov + c2) / ((ma ** 2 + mb ** 2 + c1) * (va + vb + c2)))
    return np.mean(vals)


def test_ssim_2d_matches_brute_force():
    rng = np.random.RandomState(0)
    a = rng.uniform(size=(3, 9, 13))
    b = np.clip(a + rng.normal(scale=0.2, size=a.shape), 0, 1)
    expected = np.mean([_ssim_brute_2d(x, y) for x, y in zip(a, b)])
    got = ssim_2d(a, b, value_range=(0.0, 1.0))
    assert got == pytest.approx(expected, rel=1e-10)
    # flat rows with shape give the same figure; value_range maps to [0, 1]
    assert ssim_2d(a.reshape(3, -1), b.reshape(3, -1), shape=(9, 13), value_range=(0, 1)) == pytest.approx(got)
    assert ssim_2d(2000 + 1500 * a, 2000 + 1500 * b, value_range=(2000, 3500)) == pytest.approx(got)
    assert ssim_2d(a, a) == pytest.approx(1.0)


def test_ssim_1d_matches_brute_force_and_orders_errors():
    rng = np.random.RandomState(1)
    a = rng.uniform(size=(4, 30))
    b = np.clip(a + rng.normal(scale=0.1, size=a.shape), 0, 1)
    g = _gauss(11, 1.5)
    vals = []
    for x, y in zip(a, b):
        px, py = np.pad(x, 5), np.pad(y, 5)
        for i in range(30):
            wx, wy = px[i:i + 11], py[i:i + 11]
            mx, my = g @ wx, g @ wy
            vx, vy, c = g @ (wx * wx) - mx ** 2, g @ (wy * wy) - my ** 2, g @ (wx * wy) - mx * my
            vals.append((2 * mx * my + 1e-4) * (2 * c + 9e-4) / ((mx ** 2 + my ** 2 + 1e-4) * (vx + vy + 9e-4)))
    assert ssim_1d(a, b, value_range=(0, 1)) == pytest.approx(np.mean(vals), rel=1e-10)
    worse = np.clip(a + rng.normal(scale=0.3, size=a.shape), 0, 1)
    assert ssim_1d(a, worse, value_range=(0, 1)) < ssim_1d(a, b, value_range=(0, 1))
    assert ssim_1d(a[0], a[0]) == pytest.approx(1.0)


def test_ssim_errors():
    a = np.zeros((2, 5))
    with pytest.raises(ValueError, match="ssim_1d: y_true and y_pred must have the same shape"):
        ssim_1d(a, np.zeros((2, 6)))
    with pytest.raises(ValueError, match="ssim_2d: window_size"):
        ssim_2d(np.zeros((4, 4)), np.zeros((4, 4)), window_size=4)
    with pytest.raises(ValueError, match="ssim_2d: shape"):
        ssim_2d(a, a, shape=(2, 2))
