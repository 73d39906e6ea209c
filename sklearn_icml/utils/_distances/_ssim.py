"""Structural similarity (SSIM) of signals and images, with OpenFWI's conventions (S5).

OpenFWI evaluates velocity maps by SSIM after mapping them to [0, 1]: a
Gaussian window of 11 samples with standard deviation 1.5, zero padding at the
borders (a "same" convolution), constants ``C1 = 0.01**2`` and
``C2 = 0.03**2``, and the mean of the SSIM map. :func:`ssim_2d` computes that
per image, :func:`ssim_1d` the same with a 1-D window per signal (velocity
logs, traces); both average over the samples.
"""

import numpy as np
from scipy.ndimage import correlate1d

__all__ = ["ssim_1d", "ssim_2d"]

_C1 = 0.01 ** 2
_C2 = 0.03 ** 2


def _gaussian_window(window_size, sigma):
    half = (window_size - 1) / 2.0
    w = np.exp(-((np.arange(window_size) - half) ** 2) / (2.0 * sigma ** 2))
    return w / w.sum()


def _check_options(name, window_size, sigma, value_range):
    if not isinstance(window_size, (int, np.integer)) or isinstance(window_size, bool) or window_size < 1 \
            or window_size % 2 == 0:
        raise ValueError(f"{name}: window_size must be an odd int >= 1; got {window_size!r}.")
    if not (np.isscalar(sigma) and np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{name}: sigma must be a float > 0; got {sigma!r}.")
    if value_range is not None:
        low, high = (float(v) for v in value_range)
        if not (np.isfinite(low) and np.isfinite(high) and high > low):
            raise ValueError(f"{name}: value_range must be (low, high) with low < high; got {value_range!r}.")


def _rescale(y_true, y_pred, value_range):
    low, high = (float(np.min(y_true)), float(np.max(y_true))) if value_range is None else value_range
    span = float(high) - float(low)
    if span <= 0:
        span = 1.0
    return (y_true - low) / span, (y_pred - low) / span


def _ssim_map(a, b, axes, window):
    def blur(z):
        for axis in axes:
            z = correlate1d(z, window, axis=axis, mode="constant", cval=0.0)
        return z

    mu_a, mu_b = blur(a), blur(b)
    var_a = blur(a * a) - mu_a ** 2
    var_b = blur(b * b) - mu_b ** 2
    cov = blur(a * b) - mu_a * mu_b
    return ((2 * mu_a * mu_b + _C1) * (2 * cov + _C2)) / ((mu_a ** 2 + mu_b ** 2 + _C1) * (var_a + var_b + _C2))


def _prepare(name, y_true, y_pred, ndim, shape):
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"{name}: y_true and y_pred must have the same shape; got {y_true.shape} and "
                         f"{y_pred.shape}.")
    if not (np.all(np.isfinite(y_true)) and np.all(np.isfinite(y_pred))):
        raise ValueError(f"{name}: y_true and y_pred must be finite.")
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if len(shape) != ndim or int(np.prod(shape)) != y_true.shape[-1]:
            raise ValueError(f"{name}: shape {shape} does not fit rows of {y_true.shape[-1]} values.")
        y_true = y_true.reshape(*y_true.shape[:-1], *shape)
        y_pred = y_pred.reshape(*y_pred.shape[:-1], *shape)
    if y_true.ndim == ndim:
        y_true, y_pred = y_true[None], y_pred[None]
    if y_true.ndim != ndim + 1 or y_true.size == 0:
        raise ValueError(f"{name}: expected one {ndim}-D sample or a stack of them (n_samples first); got shape "
                         f"{y_true.shape}.")
    return y_true, y_pred


def ssim_1d(y_true, y_pred, *, value_range=None, window_size=11, sigma=1.5):
    """Mean structural similarity of 1-D signals (velocity logs, traces), OpenFWI's convention.

    Both arrays are mapped to [0, 1] by ``(y - low) / (high - low)``, then
    the local means, variances and covariance are taken under a Gaussian
    window (zero padding beyond the ends) and combined into
    ``SSIM = (2 mu_t mu_p + C1)(2 cov + C2) / ((mu_t^2 + mu_p^2 + C1)(var_t + var_p + C2))``
    with ``C1 = 0.01**2`` and ``C2 = 0.03**2``; the map is averaged over
    positions and signals.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, length) or (length,)
        Reference signals.
    y_pred : array-like of the same shape
        Estimated signals.
    value_range : tuple of two floats, default=None
        ``(low, high)`` mapped to [0, 1] (e.g. a velocity range in m/s; OpenFWI
        uses the dataset's minimum and maximum). ``None``: the minimum and
        maximum of ``y_true``.
    window_size : odd int, default=11
        Length of the Gaussian window.
    sigma : float, default=1.5
        Its standard deviation in samples.

    Returns
    -------
    float
        Mean SSIM; 1 for identical signals.

    See Also
    --------
    ssim_2d : The same for images (velocity maps).

    References
    ----------
    .. [1] Wang, Z., Bovik, A. C., Sheikh, H. R. and Simoncelli, E. P. "Image
       quality assessment: from error visibility to structural similarity",
       IEEE Transactions on Image Processing 13(4), 2004.
    .. [2] Feng, Y., Chen, Y., Jin, P., Feng, S. and Lin, Y. "Auto-Linear
       Phenomenon in Subsurface Imaging", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import ssim_1d
    >>> v = np.repeat([[2000.0, 2500.0, 3000.0]], 20, axis=1)
    >>> ssim_1d(v, v)
    1.0
    >>> round(ssim_1d(v, v + 100.0, value_range=(2000, 3500)), 2)  # the luminance term is harsh near 0
    0.7
    """
    _check_options("ssim_1d", window_size, sigma, value_range)
    a, b = _prepare("ssim_1d", y_true, y_pred, 1, None)
    a, b = _rescale(a, b, value_range)
    return float(np.mean(_ssim_map(a, b, (1,), _gaussian_window(window_size, sigma))))


def ssim_2d(y_true, y_pred, *, shape=None, value_range=None, window_size=11, sigma=1.5):
    """Mean structural similarity of images (velocity maps), OpenFWI's convention.

    The 2-D counterpart of :func:`ssim_1d`: the window is the outer product of
    two 1-D Gaussian windows (that of OpenFWI's ``pytorch_ssim``), with zero
    padding beyond the borders; the SSIM map is averaged over pixels and images.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, height, width) or (height, width)
        Reference images; flat rows ``(n_samples, height * width)`` with
        ``shape=(height, width)``.
    y_pred : array-like of the same shape
        Estimated images.
    shape : tuple of two ints, default=None
        Image shape of flat rows.
    value_range : tuple of two floats, default=None
        ``(low, high)`` mapped to [0, 1]; ``None``: the minimum and maximum of
        ``y_true``.
    window_size : odd int, default=11
        Side of the Gaussian window.
    sigma : float, default=1.5
        Its standard deviation in pixels.

    Returns
    -------
    float
        Mean SSIM; 1 for identical images.

    See Also
    --------
    ssim_1d : The same for 1-D signals.

    References
    ----------
    .. [1] Wang, Z., Bovik, A. C., Sheikh, H. R. and Simoncelli, E. P. "Image
       quality assessment: from error visibility to structural similarity",
       IEEE Transactions on Image Processing 13(4), 2004.
    .. [2] Deng, C., Feng, S., Wang, H., et al. "OpenFWI: Large-scale
       multi-structural benchmark datasets for full waveform inversion",
       NeurIPS Datasets and Benchmarks, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import ssim_2d
    >>> rng = np.random.RandomState(0)
    >>> img = rng.uniform(size=(2, 16, 16))
    >>> ssim_2d(img, img)
    1.0
    >>> round(ssim_2d(img, img + rng.normal(scale=0.3, size=img.shape)), 2)
    0.69
    """
    _check_options("ssim_2d", window_size, sigma, value_range)
    a, b = _prepare("ssim_2d", y_true, y_pred, 2, shape)
    a, b = _rescale(a, b, value_range)
    return float(np.mean(_ssim_map(a, b, (1, 2), _gaussian_window(window_size, sigma))))
