"""Long-run statistics of emulated dynamics: energy-spectrum log ratio (MELR) and covariance RMSE."""

import numpy as np
from sklearn.utils.validation import check_array

from ..utils._sklearn_private import validate_params
from ..utils._torch import as_numpy

__all__ = ["cov_rmse", "energy_spectrum_log_ratio"]


def _states(a, name, caller):
    a = np.asarray(as_numpy(a), dtype=np.float64)
    if a.ndim > 2:
        a = a.reshape(-1, a.shape[-1])
    return check_array(a, dtype=np.float64, input_name=name, estimator=caller)


def _energy_spectrum(u):
    """Mean energy ``|u_hat(k)|^2`` of each non-negative wavenumber of periodic fields (rows)."""
    return np.mean(np.abs(np.fft.rfft(u, axis=1)) ** 2, axis=0)


@validate_params(
    {"y_true": ["array-like"], "y_pred": ["array-like"], "weighted": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def energy_spectrum_log_ratio(y_true, y_pred, *, weighted=False):
    """Mean energy log ratio (MELR) between the spectra of two samples of periodic fields.

    ``E(k)`` is the mean over the sample of ``|u_hat(k)|^2``, the squared
    modulus of the discrete Fourier coefficient of wavenumber ``k >= 0``
    along the last axis. MELR is the mean over wavenumbers of
    ``|log10(E_pred(k) / E_true(k))|``; the weighted variant weights
    wavenumber ``k`` by ``E_true(k) / sum E_true``. Zero when the spectra
    agree; 1 means a factor of ten on average.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, n_grid)
        Reference fields (e.g. states on the true attractor); leading axes
        beyond two are flattened into samples.
    y_pred : array-like of shape (n_samples_pred, n_grid)
        Emulated fields on the same grid.
    weighted : bool, default=False
        Weight wavenumbers by their share of the reference energy.

    Returns
    -------
    float
        The mean absolute log10 ratio.

    See Also
    --------
    cov_rmse : Compares the covariance matrices instead.

    Notes
    -----
    The definition follows the evaluation code of the DySLIM authors' group
    (``swirl_dynamics``). A wavenumber where either spectrum is exactly zero
    is left out (its log ratio is undefined).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.dynamics import energy_spectrum_log_ratio
    >>> u = np.random.RandomState(0).normal(size=(50, 16))
    >>> energy_spectrum_log_ratio(u, u)
    0.0
    >>> round(energy_spectrum_log_ratio(u, 10 * u), 6)
    2.0
    """
    true = _states(y_true, "y_true", "energy_spectrum_log_ratio")
    pred = _states(y_pred, "y_pred", "energy_spectrum_log_ratio")
    if true.shape[1] != pred.shape[1]:
        raise ValueError(f"energy_spectrum_log_ratio: y_true has {true.shape[1]} grid points and y_pred "
                         f"{pred.shape[1]}.")
    e_true, e_pred = _energy_spectrum(true), _energy_spectrum(pred)
    keep = (e_true > 0) & (e_pred > 0)
    if not keep.any():
        raise ValueError("energy_spectrum_log_ratio: every wavenumber has zero energy in one of the samples.")
    log_ratio = np.abs(np.log10(e_pred[keep] / e_true[keep]))
    if weighted:
        w = e_true[keep] / e_true[keep].sum()
        return float(np.sum(w * log_ratio))
    return float(np.mean(log_ratio))


@validate_params({"y_true": ["array-like"], "y_pred": ["array-like"]}, prefer_skip_nested_validation=True)
def cov_rmse(y_true, y_pred):
    """Root mean squared difference between the covariance matrices of two samples of states.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, n_features)
        Reference states; leading axes beyond two are flattened into samples.
    y_pred : array-like of shape (n_samples_pred, n_features)
        Emulated states.

    Returns
    -------
    float
        ``sqrt(mean((cov(y_pred) - cov(y_true)) ** 2))`` over all matrix entries.

    See Also
    --------
    energy_spectrum_log_ratio : Compares energy spectra of periodic fields.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.dynamics import cov_rmse
    >>> X = np.random.RandomState(0).normal(size=(100, 2))
    >>> cov_rmse(X, X)
    0.0
    >>> round(float(cov_rmse(X, 2 * X) / np.sqrt(np.mean(np.cov(X.T) ** 2))), 6)
    3.0
    """
    true = _states(y_true, "y_true", "cov_rmse")
    pred = _states(y_pred, "y_pred", "cov_rmse")
    if true.shape[1] != pred.shape[1]:
        raise ValueError(f"cov_rmse: y_true has {true.shape[1]} features and y_pred {pred.shape[1]}.")
    if len(true) < 2 or len(pred) < 2:
        raise ValueError("cov_rmse: each sample needs at least two rows to estimate a covariance.")
    diff = np.cov(pred, rowvar=False).reshape(true.shape[1], -1) - np.cov(true, rowvar=False).reshape(true.shape[1], -1)
    return float(np.sqrt(np.mean(diff ** 2)))
