"""AutoLinear: the PCA case against PCA -> RidgeCV -> inverse PCA, latent R², unpaired pools and routing."""

import numpy as np
import pytest
import sklearn
from sklearn.decomposition import PCA
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_icml.cross_domain import AutoLinear, MaskedAutoencoder
from sklearn_icml.cross_domain._bridges import DEFAULT_BRIDGE_ALPHAS
from sklearn_icml.datasets import convolutional_seismogram, make_layered_earth

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def _pairs(n, seed=0, n_cells=24, n_samples=48):
    V = make_layered_earth(n, n_cells=n_cells, random_state=seed)
    return convolutional_seismogram(V, n_samples=n_samples), V


def test_pca_encoders_equal_pca_ridge_inverse_pca():
    S, V = _pairs(120)
    S_test, V_test = _pairs(30, seed=1)
    model = AutoLinear("pca", "pca", n_components_x=10, n_components_y=5, random_state=0).fit(S, V)
    px, py = PCA(10).fit(S), PCA(5).fit(V)
    inverse = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit(px.transform(S), py.transform(V))
    forward = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit(py.transform(V), px.transform(S))
    np.testing.assert_allclose(model.predict(S_test), py.inverse_transform(inverse.predict(px.transform(S_test))),
                               rtol=1e-8, atol=1e-6)
    np.testing.assert_allclose(model.predict_forward(V_test),
                               px.inverse_transform(forward.predict(py.transform(V_test))), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(model.transform(S_test), px.transform(S_test), atol=1e-10)
    np.testing.assert_allclose(model.latent_y(V_test), py.transform(V_test), atol=1e-8)


def test_latent_r2_is_the_bridge_r2_by_least_squares():
    S, V = _pairs(100)
    model = AutoLinear("pca", "pca", n_components_x=8, n_components_y=4, bridge="linear").fit(S, V)
    Zx, Zy = model.transform(S), model.latent_y(V)
    design = np.column_stack([np.ones(len(Zx)), Zx])
    coef, *_ = np.linalg.lstsq(design, Zy, rcond=None)
    rss = ((Zy - design @ coef) ** 2).sum()
    tss = ((Zy - Zy.mean(axis=0)) ** 2).sum()
    assert model.latent_r2_ == pytest.approx(1 - rss / tss, rel=1e-9)
    assert 0.3 < model.latent_r2_ < 1  # seismic latents explain much, not all, of the velocity latents


def test_unpaired_pools_train_only_the_encoders():
    S, V = _pairs(40)
    S_u, _ = _pairs(90, seed=5)
    _, V_u = _pairs(70, seed=6)
    before = [a.copy() for a in (S, V, S_u, V_u)]
    model = AutoLinear("pca", "pca", n_components_x=6, n_components_y=3).fit(S, V, X_unpaired=S_u, y_unpaired=V_u)
    for a, b in zip((S, V, S_u, V_u), before):
        np.testing.assert_array_equal(a, b)
    assert model.encoder_x_.n_samples_ == 130 and model.encoder_y_.n_samples_ == 110
    px = PCA(6).fit(np.vstack([S, S_u]))
    np.testing.assert_allclose(np.abs(model.encoder_x_.components_), np.abs(px.components_), atol=1e-8)
    # the bridges are fitted on the 40 pairs only
    ridge = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit(model.transform(S), model.latent_y(V))
    np.testing.assert_allclose(model.bridge_inverse_.coef_, ridge.coef_, atol=1e-10)
    with pytest.raises(ValueError, match="AutoLinear: X_unpaired must have 48 columns"):
        model.fit(S, V, X_unpaired=S_u[:, :10])
    with pytest.raises(ValueError, match="AutoLinear: y_unpaired must have 24 columns"):
        model.fit(S, V, y_unpaired=V_u[:, :3])


def test_routing_through_pipeline_and_grid_search():
    S, V = _pairs(60)
    S_u, _ = _pairs(50, seed=3)
    _, V_u = _pairs(45, seed=4)
    with sklearn.config_context(enable_metadata_routing=True):
        model = AutoLinear("pca", "pca", n_components_x=6, n_components_y=3).set_fit_request(
            X_unpaired=True, y_unpaired=True)
        pipe = Pipeline([("identity", FunctionTransformer()), ("model", model)])
        pipe.fit(S, V, X_unpaired=S_u, y_unpaired=V_u)
        assert pipe[-1].encoder_x_.n_samples_ == 110 and pipe[-1].encoder_y_.n_samples_ == 105

        def pool_size(estimator, X, y):
            return estimator.encoder_x_.n_samples_ + 1000 * estimator.encoder_y_.n_samples_

        search = GridSearchCV(model, {"bridge": ["ridge", "linear"]}, cv=KFold(3), scoring=pool_size)
        search.fit(S, V, X_unpaired=S_u, y_unpaired=V_u)
        # every fold's fit saw its 40 training pairs plus the whole pools; the refit saw all 60
        np.testing.assert_array_equal(search.cv_results_["mean_test_score"], 90 + 1000 * 85)
        assert search.best_estimator_.encoder_x_.n_samples_ == 110

        unrequested = AutoLinear("pca", "pca", n_components_x=6, n_components_y=3)
        with pytest.raises(sklearn.exceptions.UnsetMetadataPassedError):
            Pipeline([("model", unrequested)]).fit(S, V, X_unpaired=S_u)
    assert not sklearn.get_config()["enable_metadata_routing"]


def test_single_target_has_no_y_encoder():
    S, V = _pairs(50)
    y = V[:, -1]
    model = AutoLinear("pca", "pca", n_components_x=5).fit(S, y)
    assert model.encoder_y_ is None and model.n_outputs_ == 1 and model.predict(S).shape == (50,)
    ridge = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit(model.transform(S), y)
    np.testing.assert_allclose(model.predict(S), ridge.predict(model.transform(S)))
    assert model.predict_forward(y).shape == S.shape
    with pytest.warns(UserWarning, match="y_unpaired is unused"):
        model.fit(S, y, y_unpaired=y[:10])


def test_frozen_encoders_and_clipping():
    S, V = _pairs(30)
    ex, ey = PCA(4).fit(S), PCA(2).fit(V)
    components = ex.components_.copy()
    model = AutoLinear(ex, ey, refit_encoders=False).fit(S[:20], V[:20])
    assert model.encoder_x_ is ex and model.n_components_x_ == 4 and model.n_components_y_ == 2
    np.testing.assert_array_equal(ex.components_, components)
    with pytest.raises(ValueError, match="refit_encoders=False needs fitted transformers as encoder_x"):
        AutoLinear(refit_encoders=False).fit(S, V)
    with pytest.raises(ValueError, match="encoder_y is not fitted"):
        AutoLinear(ex, PCA(2), refit_encoders=False).fit(S, V)
    clipped = AutoLinear("pca", "pca", n_components_x=500, n_components_y=500).fit(S[:12], V[:12])
    assert clipped.n_components_x_ == 12 and clipped.n_components_y_ == 12
    assert AutoLinear("pca", "pca", bridge="pls").fit(S, V).predict(S).shape == V.shape


@pytest.mark.parametrize("device", DEVICES)
def test_masked_autoencoder_encoders(device):
    S, V = _pairs(80)
    model = AutoLinear(n_components_x=6, n_components_y=4, hidden_layer_sizes=(16,), max_iter=10,
                       device=device, random_state=0).fit(S, V)
    assert isinstance(model.encoder_x_, MaskedAutoencoder) and model.encoder_x_.device_ == device
    assert model.encoder_x_.n_components_ == 6 and model.encoder_y_.n_components_ == 4
    assert model.encoder_x_.random_state != model.encoder_y_.random_state
    np.testing.assert_allclose(model.transform(S), model.encoder_x_.transform(S))
    assert model.predict(S).shape == V.shape and model.predict_forward(V).shape == S.shape
    again = AutoLinear(n_components_x=6, n_components_y=4, hidden_layer_sizes=(16,), max_iter=10,
                       device=device, random_state=0).fit(S, V)
    np.testing.assert_array_equal(model.predict(S), again.predict(S))


def test_output_space_bridge_minimises_the_decoded_error_with_the_latent_penalty():
    S, V = _pairs(60)
    kw = dict(n_components_x=6, n_components_y=4, hidden_layer_sizes=(16,), max_iter=30, random_state=0)
    latent = AutoLinear(bridge_space="latent", **kw).fit(S, V)
    model = AutoLinear(**kw).fit(S, V)  # same seeds: the same encoders, only the bridges differ
    np.testing.assert_array_equal(model.transform(S), latent.transform(S))
    Zx, Zy = model.transform(S), model.latent_y(V)
    ridge = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit(Zx, Zy)
    np.testing.assert_allclose(latent.bridge_inverse_.coef_, ridge.coef_, atol=1e-10)
    dec = model.encoder_y_
    sd = Zx.std(axis=0)
    alpha = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit((Zx - Zx.mean(axis=0)) / sd, Zy).alpha_

    def objective(coef, intercept):  # the definition, through the public decoder, in standardised units
        decoded = dec.inverse_transform(Zx @ coef.T + intercept)
        err = ((decoded - V) / dec.scale_) ** 2
        return err.sum(axis=1).mean() + alpha / len(Zx) * ((coef * sd) ** 2).sum()

    best = objective(model.bridge_inverse_.coef_, model.bridge_inverse_.intercept_)
    assert best < objective(ridge.coef_, ridge.intercept_)
    rng = np.random.RandomState(0)
    for _ in range(5):  # a local minimum: small moves of the map do not lower the objective
        step = 1e-3 * rng.normal(size=ridge.coef_.shape)
        assert objective(model.bridge_inverse_.coef_ + step, model.bridge_inverse_.intercept_) >= best - 1e-9
    assert np.abs(model.predict(S) - V).mean() < np.abs(latent.predict(S) - V).mean()
    assert model.latent_r2_ == latent.latent_r2_  # how linear the latent codes are: the latent fit's R²


def test_conv_encoders_on_2d_maps():
    # 2-D maps and gathers, flattened: conv masked autoencoders on their grids, patch masking, the pools
    V3 = make_layered_earth(40, n_cells=8, n_columns=6, random_state=0)
    S3 = convolutional_seismogram(V3, n_samples=12, f0=30.0)
    S, V = S3.reshape(40, -1), V3.reshape(40, -1)
    shape_x, shape_y = (12, 6), (8, 6)
    model = AutoLinear(architecture="conv", input_shape_x=shape_x, input_shape_y=shape_y, hidden_layer_sizes=(4,),
                       n_components_x=5, n_components_y=3, patch_size=2, max_iter=4, bridge_space="latent",
                       random_state=0).fit(S[:25], V[:25], X_unpaired=S[25:], y_unpaired=V[25:])
    assert model.encoder_x_.input_shape == shape_x and model.encoder_y_.input_shape == shape_y
    assert model.transform(S).shape == (40, 5) and model.latent_y(V).shape == (40, 3)
    assert model.predict(S).shape == V.shape and model.predict_forward(V).shape == S.shape
    # the inverse model is the composition D_y(A E_x(x) + a), A and a by RidgeCV on the pairs' codes (independent)
    Z_x, Z_y = model.encoder_x_.transform(S[:25]), model.encoder_y_.transform(V[:25])
    ridge = RidgeCV(alphas=DEFAULT_BRIDGE_ALPHAS).fit(Z_x, Z_y)
    expected = model.encoder_y_.inverse_transform(ridge.predict(model.encoder_x_.transform(S[25:])))
    np.testing.assert_allclose(model.predict(S[25:]), expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
    # rows are predicted one by one: a permutation of the rows permutes the predictions
    order = np.random.RandomState(1).permutation(15)
    np.testing.assert_allclose(model.predict(S[25:][order]), model.predict(S[25:])[order], rtol=1e-6)
    with pytest.raises(ValueError, match="input_shape"):
        AutoLinear(architecture="conv", input_shape_x=(5, 5), input_shape_y=shape_y, hidden_layer_sizes=(4,),
                   max_iter=1).fit(S, V)
