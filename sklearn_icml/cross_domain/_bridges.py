"""The linear maps between latent codes of :class:`AutoLinear`, fitted in closed form on the CPU."""

import numpy as np
from sklearn.cross_decomposition import PLSRegression
from sklearn.linear_model import LinearRegression, RidgeCV

__all__ = ["DEFAULT_BRIDGE_ALPHAS", "fit_bridge"]

#: Ridge penalties tried by the "ridge" bridge when ``bridge_alphas`` is None.
DEFAULT_BRIDGE_ALPHAS = np.logspace(-4, 4, 17)


def fit_bridge(kind, Z_in, Z_out, alphas):
    """A fitted linear map ``Z_in -> Z_out``: RidgeCV (efficient leave-one-out), PLS or least squares.

    ``Z_out`` may be 1-D (a single target). PLS uses as many components as the
    smaller latent space allows (at most ``n_samples - 1``).
    """
    if kind == "ridge":
        return RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS if alphas is None else np.asarray(alphas, dtype=np.float64)
                       ).fit(Z_in, Z_out)
    if kind == "pls":
        n_out = 1 if Z_out.ndim == 1 else Z_out.shape[1]
        k = max(1, min(Z_in.shape[1], n_out, Z_in.shape[0] - 1))
        return PLSRegression(n_components=k).fit(Z_in, Z_out)
    return LinearRegression().fit(Z_in, Z_out)
