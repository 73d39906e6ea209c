"""The SVD-weighted PLS bridge: scikit-learn's PLS where its power method converges, least squares at full rank,
and no convergence warning on the nearly degenerate latent codes of a small seismic set."""

import warnings

import numpy as np
import pytest
from sklearn.cross_decomposition import PLSRegression
from sklearn.decomposition import PCA

from sklearn_icml.cross_domain._bridges import SVDPLSRegression, fit_bridge
from sklearn_icml.datasets import convolutional_seismogram, make_layered_earth


@pytest.mark.parametrize("n_components", [1, 2, 3])
@pytest.mark.parametrize("n_targets", [1, 3])
def test_equals_sklearn_pls_where_its_power_method_converges(n_components, n_targets):
    rng = np.random.default_rng(n_targets)
    X = rng.normal(size=(60, 6)) * [3.0, 2.0, 1.0, 1.0, 0.5, 0.2] + 4.0
    Y = X @ rng.normal(size=(6, n_targets)) + rng.normal(size=(60, n_targets))
    y = Y[:, 0] if n_targets == 1 else Y
    peer = PLSRegression(n_components, max_iter=10_000, tol=1e-15).fit(X, y)
    assert max(peer.n_iter_) < 1_000  # the peer converged far from its iteration limit
    ours = SVDPLSRegression(n_components).fit(X, y)
    assert ours.n_components_ == n_components
    # the peer's weights are exact to its tolerance (squared steps below 1e-15): about 1e-7
    np.testing.assert_allclose(ours.coef_, peer.coef_, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, peer.intercept_, rtol=1e-12)
    X_new = rng.normal(size=(7, 6))
    assert ours.predict(X_new).shape == peer.predict(X_new).shape
    np.testing.assert_allclose(ours.predict(X_new), peer.predict(X_new), rtol=1e-4, atol=1e-5)


def test_all_components_give_least_squares():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 5))
    Y = rng.normal(size=(40, 2))
    design = np.column_stack([np.ones(40), X])
    coef, *_ = np.linalg.lstsq(design, Y, rcond=None)
    ours = SVDPLSRegression(5).fit(X, Y)
    np.testing.assert_allclose(ours.predict(X), design @ coef, atol=1e-10)


def test_stops_when_the_residuals_are_uncorrelated():
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(30, 4)) - rng.normal(size=(30, 4)).mean(axis=0))
    X = (Q - Q.mean(axis=0)) / (Q - Q.mean(axis=0)).std(axis=0, ddof=1)
    X = np.linalg.qr(X)[0] * np.sqrt(29)  # centred orthogonal columns of unit deviation
    y = X @ [2.0, -1.0, 0.5, 0.0] - 1.0  # the first weights are X^T y: one score explains y exactly
    ours = SVDPLSRegression(4).fit(X, y)
    assert ours.n_components_ == 1
    np.testing.assert_allclose(ours.predict(X), y, atol=1e-10)


def _codes(n, n_x, n_y):
    V = make_layered_earth(n, n_cells=24, random_state=0)
    S = convolutional_seismogram(V, n_samples=48)
    return PCA(n_x).fit_transform(S), PCA(n_y).fit_transform(V)


def test_bridge_on_ordinary_codes_is_sklearn_pls():
    Zx, Zy = _codes(200, 10, 5)
    peer = PLSRegression(5, max_iter=10_000, tol=1e-15).fit(Zx, Zy)
    assert max(peer.n_iter_) < 1_000
    bridge = fit_bridge("pls", Zx, Zy, None)
    np.testing.assert_allclose(bridge.predict(Zx), peer.predict(Zx), rtol=1e-4, atol=1e-5 * np.abs(Zy).max())


def test_no_warning_on_degenerate_seismic_codes():
    """30 pairs coded on 30 and 24 components: the standardised cross-covariance's top singular value is
    multiple (the two latent spaces share 19 directions exactly), so a power method has no unique fixed point."""
    Zx, Zy = _codes(30, 30, 24)
    keep = Zx.std(axis=0) > 1e-12 * Zx.std(axis=0).max()
    Xs = (Zx[:, keep] - Zx[:, keep].mean(axis=0)) / Zx[:, keep].std(axis=0, ddof=1)
    Ys = (Zy - Zy.mean(axis=0)) / Zy.std(axis=0, ddof=1)
    s = np.linalg.svd(Xs.T @ Ys, compute_uv=False)
    assert np.sum(s > s[0] * (1 - 1e-8)) > 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bridge = fit_bridge("pls", Zx, Zy, None)
        again = fit_bridge("pls", Zx, Zy, None)
    assert bridge.n_components_ == 24 and np.isfinite(bridge.coef_).all()
    np.testing.assert_array_equal(bridge.coef_, again.coef_)


@pytest.mark.parametrize("kind", ["linear", "ridge"])
def test_refinement_does_not_depend_on_the_memory_layout_of_the_latent_fit(kind):
    """The latent fit's ``coef_`` may be C-ordered, Fortran-ordered or a strided view (scikit-learn and LAPACK give
    any of them): the refinement through the decoder runs on each and returns the same map."""
    import copy

    from sklearn_icml.cross_domain import MaskedAutoencoder
    from sklearn_icml.cross_domain._bridges import refine_in_output_space

    rng = np.random.RandomState(0)
    Y, Z_in = rng.randn(40, 6), rng.randn(40, 3)
    decoder = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(8,), max_iter=3, random_state=0).fit(Y)
    latent = fit_bridge(kind, Z_in, decoder.transform(Y), None)
    coef = np.asarray(latent.coef_, dtype=np.float64)
    wide = np.zeros((coef.shape[0], 2 * coef.shape[1]))
    wide[:, ::2] = coef
    results = []
    for layout in (np.ascontiguousarray(coef), np.asfortranarray(coef), wide[:, ::2]):
        bridge = copy.deepcopy(latent)
        bridge.coef_ = layout
        refined = refine_in_output_space(kind, bridge, Z_in, Y, decoder, None)
        results.append((refined.coef_, refined.intercept_))
    for coef_i, intercept_i in results[1:]:
        np.testing.assert_allclose(coef_i, results[0][0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(intercept_i, results[0][1], rtol=1e-10, atol=1e-12)
