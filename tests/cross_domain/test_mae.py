"""MaskedAutoencoder: masks, the masked-reconstruction step, steps -> epochs, reconstruction quality, devices."""

import math

import numpy as np
import pytest
import torch

from sklearn_icml.cross_domain import AutoLinear, MaskedAutoencoder
from sklearn_icml.cross_domain._mae_networks import MLPAutoencoder, draw_mask, masked_reconstruction_step

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def _low_rank(n=150, p=12, rank=2, seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, rank)) @ rng.normal(size=(rank, p)) + 5.0


def test_draw_mask_masks_whole_patches_in_the_right_number():
    g = torch.Generator().manual_seed(0)
    mask = draw_mask(7, (10, 9), 3, 0.25, g, "cpu").numpy().reshape(7, 10, 9)
    # patch grid 4 x 3 = 12 patches (the last row of patches cut at the border), round(0.25 * 12) = 3 masked
    corners = mask[:, ::3, ::3]
    assert corners.shape == (7, 4, 3) and np.all(corners.sum(axis=(1, 2)) == 3)
    expanded = corners.repeat(3, axis=1).repeat(3, axis=2)[:, :10, :9]
    np.testing.assert_array_equal(mask, expanded)  # every patch all or nothing
    flat = draw_mask(5, (20,), 1, 0.25, torch.Generator().manual_seed(1), "cpu").numpy()
    assert np.all(flat.sum(axis=1) == 5)
    assert not draw_mask(3, (8,), 1, 0.0, g, "cpu").any()


def test_masked_step_reconstructs_from_the_mask_token():
    module = MLPAutoencoder(6, (8,), 2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        module.mask_token.fill_(0.7)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1))
    loss = masked_reconstruction_step((6,), 1, 0.5, torch.Generator().manual_seed(2))(module, x, None)
    mask = draw_mask(5, (6,), 1, 0.5, torch.Generator().manual_seed(2), "cpu")
    x_in = x.clone()
    x_in[mask] = 0.7
    expected = ((module.decoder(module.encoder(x_in)) - x) ** 2).mean()
    torch.testing.assert_close(loss, expected)


def test_max_iter_counts_steps_and_training_is_seeded():
    X = _low_rank(n=100)
    mae = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(16,), max_iter=7, batch_size=32,
                            random_state=0).fit(X)
    epochs = math.ceil(7 / 4)
    assert len(mae.loss_curve_) == epochs and mae.n_iter_ == epochs * 4
    again = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(16,), max_iter=7, batch_size=32,
                              random_state=0).fit(X)
    np.testing.assert_array_equal(mae.transform(X), again.transform(X))
    other = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(16,), max_iter=7, batch_size=32,
                              random_state=1).fit(X)
    assert not np.allclose(mae.transform(X), other.transform(X))


def test_early_stopping_holds_out_rows_and_stops_on_their_loss():
    X = _low_rank(n=100)
    common = dict(n_components=2, hidden_layer_sizes=(16,), batch_size=30, random_state=0)
    plain = MaskedAutoencoder(max_iter=40, **common).fit(X)  # 4 steps per epoch, 10 epochs, no stopping rule
    assert plain.validation_scores_ is None and plain.n_iter_ == 40 and len(plain.loss_curve_) == 10
    full = MaskedAutoencoder(max_iter=40, early_stopping=True, n_iter_no_change=10, tol=0.0, **common).fit(X)
    assert len(full.validation_scores_) == len(full.loss_curve_) == 10
    assert np.all(np.isfinite(full.validation_scores_))
    assert not np.allclose(full.loss_curve_, plain.loss_curve_)  # trained on the other 90 rows
    # no epoch can improve the validation loss by tol=1e3: the rule stops the run early
    stopped = MaskedAutoencoder(max_iter=400, early_stopping=True, n_iter_no_change=1, tol=1e3, **common).fit(X)
    assert len(stopped.validation_scores_) == len(stopped.loss_curve_) <= 3
    assert stopped.n_iter_ == 4 * len(stopped.loss_curve_)
    # AutoLinear hands the rule to its masked autoencoders
    Y = _low_rank(n=100, p=6, seed=1)
    model = AutoLinear(n_components_x=2, n_components_y=2, hidden_layer_sizes=(8,), max_iter=400, batch_size=30,
                       early_stopping=True, n_iter_no_change=1, tol=1e3, random_state=0).fit(X, Y)
    for encoder in (model.encoder_x_, model.encoder_y_):
        assert encoder.validation_scores_ is not None and encoder.n_iter_ <= 12


@pytest.mark.parametrize("device", DEVICES)
def test_reconstructs_low_rank_data_and_score_is_the_reconstruction_error(device):
    X = _low_rank()
    X_before = X.copy()
    mae = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(32,), max_iter=400, learning_rate=5e-3,
                            device=device, random_state=0).fit(X)
    np.testing.assert_array_equal(X, X_before)
    assert mae.device_ == device and mae.transform(X).shape == (150, 2)
    X_hat = mae.inverse_transform(mae.transform(X))
    assert mae.score(X) == pytest.approx(-np.mean((X_hat - X) ** 2))
    # far better than the mean row (the variance), and the loss went down
    assert -mae.score(X) < 0.1 * X.var(axis=0).mean()
    assert mae.loss_curve_[-1] < 0.5 * mae.loss_curve_[0]
    np.testing.assert_allclose(mae.mean_, X.mean(axis=0))
    assert all(p.device.type == "cpu" for p in mae.module_.parameters())


@pytest.mark.parametrize("shape", [(15,), (5, 7)])
def test_conv_architecture_on_odd_grids(shape):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, int(np.prod(shape))))
    mae = MaskedAutoencoder(n_components=3, architecture="conv", input_shape=shape, hidden_layer_sizes=(4, 8),
                            patch_size=2, max_iter=20, random_state=0).fit(X)
    assert mae.transform(X).shape == (40, 3)
    assert mae.inverse_transform(mae.transform(X)).shape == X.shape
    np.testing.assert_allclose(mae.mean_, X.mean())  # one global mean for grids


def test_encoding_does_not_depend_on_batching():
    X = _low_rank()
    mae = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(16,), max_iter=5, random_state=0).fit(X)
    np.testing.assert_allclose(mae.transform(X)[:7], mae.transform(X[:7]), rtol=0, atol=1e-12)


def test_bad_shapes_are_named():
    X = _low_rank()
    with pytest.raises(ValueError, match="MaskedAutoencoder: input_shape"):
        MaskedAutoencoder(input_shape=(5, 5), max_iter=1).fit(X)
    with pytest.raises(ValueError, match="MaskedAutoencoder: architecture='conv' needs"):
        MaskedAutoencoder(architecture="conv", hidden_layer_sizes=(), max_iter=1).fit(X)
    mae = MaskedAutoencoder(n_components=2, hidden_layer_sizes=(4,), max_iter=1).fit(X)
    with pytest.raises(ValueError, match="expects 2 latent columns"):
        mae.inverse_transform(np.zeros((3, 5)))
