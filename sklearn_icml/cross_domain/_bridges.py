"""The linear maps between latent codes of :class:`AutoLinear`, fitted on the CPU.

:func:`fit_bridge` fits a map in closed form on the latent codes (:class:`SVDPLSRegression` for
``bridge="pls"``);
:func:`refine_in_output_space` then moves an affine map so that the frozen
decoder of the target domain reproduces the target rows (the converter
trained through the decoder, with the ridge penalty of the latent fit).
"""

import copy

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LinearRegression, RidgeCV

__all__ = ["DEFAULT_BRIDGE_ALPHAS", "SVDPLSRegression", "fit_bridge", "refine_in_output_space"]

#: Ridge penalties tried by the "ridge" bridge when ``bridge_alphas`` is None.
DEFAULT_BRIDGE_ALPHAS = np.logspace(-4, 4, 17)

#: L-BFGS iterations of the output-space refinement: the map is small and starts at the latent fit, so a short
#: run refines it (see the benchmark page).
_REFINE_ITER = 50


#: Relative standard deviation below which a latent column is numerically constant (round-off of a null direction).
_NULL_STD = 1e-12


def _alphas(alphas):
    return DEFAULT_BRIDGE_ALPHAS if alphas is None else np.asarray(alphas, dtype=np.float64)


class SVDPLSRegression(RegressorMixin, BaseEstimator):
    """PLS regression (PLS2, regression deflation) whose weights come from an SVD.

    The model of :class:`~sklearn.cross_decomposition.PLSRegression` with
    ``scale=True``: ``X`` and ``y`` centred and divided by their standard
    deviations (``ddof=1``; a column whose deviation is below ``1e-12`` times
    the largest, such as the last principal component of ``n`` codes from
    ``n`` rows, is numerically constant and is left unscaled rather than
    blown up to unit variance); component ``k`` takes as weights the first left
    singular vector of ``X_k^T y_k`` (the fixed point of the NIPALS power
    method), then deflates ``X_k`` and ``y_k`` on the scores ``t = X_k w``.
    The singular vector comes from LAPACK's SVD, so no iteration limit can
    be reached and no convergence warning is raised, whatever the gap
    between the singular values. Components stop early, without a warning,
    once the largest singular value of ``X_k^T y_k`` falls below
    ``n_samples * eps`` times the first one: the residuals of ``X`` and
    ``y`` are then uncorrelated and a further component would fit noise of
    the floating-point kind; ``n_components_`` records how many were kept.

    Parameters
    ----------
    n_components : int, default=2
        Largest number of components.

    Attributes
    ----------
    n_components_ : int
        Components kept.
    coef_ : ndarray of shape (n_targets, n_features)
        The linear map on the raw inputs.
    intercept_ : ndarray of shape (n_targets,)
        Intercept (the mean of ``y``, as in scikit-learn's PLS).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.cross_domain._bridges import SVDPLSRegression
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 3.0
    >>> pls = SVDPLSRegression(n_components=3).fit(X, y)
    >>> bool(np.allclose(pls.predict(X), y))
    True
    """

    def __init__(self, n_components=2):
        self.n_components = n_components

    def fit(self, X, y):
        X = np.array(X, dtype=np.float64)
        Y = np.array(y, dtype=np.float64)
        self._y_1d = Y.ndim == 1
        Y = Y.reshape(len(Y), -1)
        x_mean, y_mean = X.mean(axis=0), Y.mean(axis=0)
        x_std, y_std = X.std(axis=0, ddof=1), Y.std(axis=0, ddof=1)
        x_std[x_std <= _NULL_STD * x_std.max(initial=0.0)] = 1.0
        y_std[y_std <= _NULL_STD * y_std.max(initial=0.0)] = 1.0
        Xk, Yk = (X - x_mean) / x_std, (Y - y_mean) / y_std
        weights, x_loadings, y_loadings = [], [], []
        first = None
        for _ in range(self.n_components):
            U, s, _ = np.linalg.svd(Xk.T @ Yk, full_matrices=False)
            first = s[0] if first is None else first
            if s[0] <= len(X) * np.finfo(np.float64).eps * max(first, np.finfo(np.float64).tiny):
                break
            w = U[:, 0]
            t = Xk @ w
            tt = t @ t
            p, q = t @ Xk / tt, t @ Yk / tt
            Xk = Xk - np.outer(t, p)
            Yk = Yk - np.outer(t, q)
            weights.append(w)
            x_loadings.append(p)
            y_loadings.append(q)
        self.n_components_ = len(weights)
        if self.n_components_ == 0:
            coef = np.zeros((X.shape[1], Y.shape[1]))
        else:
            W, P, Q = (np.column_stack(a) for a in (weights, x_loadings, y_loadings))
            coef = W @ np.linalg.pinv(P.T @ W) @ Q.T  # (n_features, n_targets) on the standardised scale
        self.coef_ = (coef * y_std).T / x_std
        self.intercept_ = y_mean
        self._x_mean = x_mean
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        out = (np.asarray(X, dtype=np.float64) - self._x_mean) @ self.coef_.T + self.intercept_
        return out[:, 0] if self._y_1d else out


def fit_bridge(kind, Z_in, Z_out, alphas):
    """A fitted linear map ``Z_in -> Z_out``: RidgeCV (efficient leave-one-out), PLS (by SVD) or least squares.

    ``Z_out`` may be 1-D (a single target). PLS uses as many components as the
    smaller latent space allows (at most ``n_samples - 1``).
    """
    if kind == "ridge":
        return RidgeCV(alphas=_alphas(alphas)).fit(Z_in, Z_out)
    if kind == "pls":
        n_out = 1 if Z_out.ndim == 1 else Z_out.shape[1]
        k = max(1, min(Z_in.shape[1], n_out, Z_in.shape[0] - 1))
        return SVDPLSRegression(n_components=k).fit(Z_in, Z_out)
    return LinearRegression().fit(Z_in, Z_out)


def _affine_through_decoder(W, b, decoding):
    """``z -> D(z @ W + b)``: trainable ``W``, ``b`` (float64) before a frozen decoding network ``D``."""
    import torch

    class AffineThroughDecoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.W = torch.nn.Parameter(torch.tensor(W, dtype=torch.float64))
            self.b = torch.nn.Parameter(torch.tensor(b, dtype=torch.float64))
            self.decoding = decoding

        def train(self, mode=True):
            self.training = mode  # the frozen decoder keeps its own mode
            return self

        def forward(self, Z):
            return self.decoding.decode(Z @ self.W + self.b)

    return AffineThroughDecoder()


def refine_in_output_space(kind, bridge, Z_in, Y_out, decoder, alphas):
    """A copy of the affine ``bridge`` (``kind`` "ridge" or "linear") refitted through the frozen ``decoder``.

    Minimises ``mean_i ||D((z_i - mu) / sd @ W + b) - y_i||^2 + alpha / n * ||W||^2``
    over ``W, b`` by full-batch L-BFGS in float64 (the training layer's
    ``loop="lbfgs"``, ``_REFINE_ITER`` iterations), from the latent fit. ``D`` is the
    decoder's network on its standardised outputs (``decoder.module_.decode``
    of a :class:`MaskedAutoencoder`), so every feature of ``Y_out`` weighs the
    same; the latent inputs are standardised so that the penalty treats the
    latent dimensions alike. ``alpha`` is the leave-one-out choice of
    :class:`~sklearn.linear_model.RidgeCV` on the standardised latent codes
    against the target's latent codes (0 for ``kind="linear"``), so the
    latent fit's regularisation carries over. Returns the bridge with
    ``coef_`` and ``intercept_`` replaced (in the raw latent coordinates).
    """

    from ..utils import Trainer

    n = len(Z_in)
    mu = Z_in.mean(axis=0)
    sd = Z_in.std(axis=0)
    sd = np.where(sd > 1e-12 * max(1.0, float(np.abs(mu).max(initial=0.0))), sd, 1.0)
    Zs = (Z_in - mu) / sd
    alpha = 0.0
    if kind == "ridge":
        alpha = float(RidgeCV(alphas=_alphas(alphas)).fit(Zs, decoder.transform(Y_out)).alpha_)
    coef = np.asarray(bridge.coef_, dtype=np.float64).reshape(-1, Z_in.shape[1])  # (n_out, n_in)
    intercept = np.asarray(bridge.intercept_, dtype=np.float64).reshape(-1)
    decoding = decoder.module_
    # torch.tensor keeps the strides of its numpy input and the gradient follows them, while L-BFGS flattens
    # gradients with .view(-1): the parameters start contiguous, whatever the layout of the latent fit's coef_
    W = np.ascontiguousarray((coef * sd).T)
    b = intercept + coef @ mu
    frozen = [p.requires_grad for p in decoding.parameters()]
    for p in decoding.parameters():
        p.requires_grad_(False)
    try:
        bridge_net = _affine_through_decoder(W, b, decoding)

        def objective(net, Z, Y):
            return ((net(Z) - Y) ** 2).sum(dim=1).mean() + alpha / n * (net.W ** 2).sum()

        Trainer(
            loop="lbfgs", train_step=objective, max_iter=_REFINE_ITER, learning_rate=1.0, tol=1e-7, name="AutoLinear",
        ).fit(bridge_net, Zs, (Y_out - decoder.mean_) / decoder.scale_)
    finally:
        for p, flag in zip(decoding.parameters(), frozen):
            p.requires_grad_(flag)
    W_raw = bridge_net.W.detach().numpy().T / sd
    b_raw = bridge_net.b.detach().numpy() - W_raw @ mu
    refined = copy.deepcopy(bridge)
    refined.coef_ = W_raw.reshape(np.shape(bridge.coef_))
    refined.intercept_ = b_raw.reshape(np.shape(bridge.intercept_))
    return refined
