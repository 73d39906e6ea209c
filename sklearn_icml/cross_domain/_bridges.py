"""The linear maps between latent codes of :class:`AutoLinear`, fitted on the CPU.

:func:`fit_bridge` fits a map in closed form on the latent codes;
:func:`refine_in_output_space` then moves an affine map so that the frozen
decoder of the target domain reproduces the target rows (the converter
trained through the decoder, with the ridge penalty of the latent fit).
"""

import copy

import numpy as np
from sklearn.cross_decomposition import PLSRegression
from sklearn.linear_model import LinearRegression, RidgeCV

__all__ = ["DEFAULT_BRIDGE_ALPHAS", "fit_bridge", "refine_in_output_space"]

#: Ridge penalties tried by the "ridge" bridge when ``bridge_alphas`` is None.
DEFAULT_BRIDGE_ALPHAS = np.logspace(-4, 4, 17)

#: L-BFGS iterations of the output-space refinement: the map is small and starts at the latent fit; on the 1-D
#: benchmark 50 iterations give the errors of 200 to within 1 % at a fifth of the cost.
_REFINE_ITER = 50


def _alphas(alphas):
    return DEFAULT_BRIDGE_ALPHAS if alphas is None else np.asarray(alphas, dtype=np.float64)


def fit_bridge(kind, Z_in, Z_out, alphas):
    """A fitted linear map ``Z_in -> Z_out``: RidgeCV (efficient leave-one-out), PLS or least squares.

    ``Z_out`` may be 1-D (a single target). PLS uses as many components as the
    smaller latent space allows (at most ``n_samples - 1``).
    """
    if kind == "ridge":
        return RidgeCV(alphas=_alphas(alphas)).fit(Z_in, Z_out)
    if kind == "pls":
        n_out = 1 if Z_out.ndim == 1 else Z_out.shape[1]
        k = max(1, min(Z_in.shape[1], n_out, Z_in.shape[0] - 1))
        return PLSRegression(n_components=k).fit(Z_in, Z_out)
    return LinearRegression().fit(Z_in, Z_out)


def refine_in_output_space(kind, bridge, Z_in, Y_out, decoder, alphas):
    """A copy of the affine ``bridge`` (``kind`` "ridge" or "linear") refitted through the frozen ``decoder``.

    Minimises ``mean_i ||D((z_i - mu) / sd @ W + b) - y_i||^2 + alpha / n * ||W||^2``
    over ``W, b`` by L-BFGS in float64, from the latent fit. ``D`` is the
    decoder's network on its standardised outputs (``decoder.module_.decode``
    of a :class:`MaskedAutoencoder`), so every feature of ``Y_out`` weighs the
    same; the latent inputs are standardised so that the penalty treats the
    latent dimensions alike. ``alpha`` is the leave-one-out choice of
    :class:`~sklearn.linear_model.RidgeCV` on the standardised latent codes
    against the target's latent codes (0 for ``kind="linear"``), so the
    latent fit's regularisation carries over. Returns the bridge with
    ``coef_`` and ``intercept_`` replaced (in the raw latent coordinates).
    """
    import torch

    from ..utils._torch import to_tensor, torch_threads

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
    module = decoder.module_
    with torch_threads():
        Z = to_tensor(Zs, "cpu", torch.float64)
        Y = to_tensor((Y_out - decoder.mean_) / decoder.scale_, "cpu", torch.float64)
        W = torch.tensor((coef * sd).T, dtype=torch.float64, requires_grad=True)
        b = torch.tensor(intercept + coef @ mu, dtype=torch.float64, requires_grad=True)
        frozen = [p.requires_grad for p in module.parameters()]
        for p in module.parameters():
            p.requires_grad_(False)
        try:
            optimizer = torch.optim.LBFGS([W, b], max_iter=_REFINE_ITER, line_search_fn="strong_wolfe")

            def closure():
                optimizer.zero_grad()
                loss = ((module.decode(Z @ W + b) - Y) ** 2).sum(dim=1).mean() + alpha / n * (W ** 2).sum()
                loss.backward()
                return loss

            optimizer.step(closure)
        finally:
            for p, flag in zip(module.parameters(), frozen):
                p.requires_grad_(flag)
        W_raw = W.detach().numpy().T / sd
        b_raw = b.detach().numpy() - W_raw @ mu
    refined = copy.deepcopy(bridge)
    refined.coef_ = W_raw.reshape(np.shape(bridge.coef_))
    refined.intercept_ = b_raw.reshape(np.shape(bridge.intercept_))
    return refined
