"""PrototypeSurvival (MMP fusion network): OT plans equal POT's, both fusions and losses learn, layout errors."""

import warnings

import numpy as np
import pytest

from sklearn_icml.survival import PrototypeSurvival, Surv


def _data(n=120, seed=0, K=3, t=2, sizes=(3, 2)):
    """Tokens whose first histology weight drives the risk, plus pathway blocks whose first gene does too."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, K * t + sum(sizes)))
    eta = 1.5 * X[:, 0] + (1.0 * X[:, K * t] if sizes else 0.0)
    y = Surv.from_arrays(rng.rand(n) < 0.8, rng.exponential(np.exp(-eta)))
    return X, y


SMALL = dict(n_histo_tokens=3, pathway_sizes=[3, 2], embed_dim=8, id_embed_dim=4, learning_rate=1e-2,
             max_iter=20, batch_size=40, random_state=0)


def test_batched_unbalanced_sinkhorn_equals_pot_per_problem():
    import ot
    import torch

    from sklearn_icml.survival._fusion_net import uot_sinkhorn_batch

    rng = np.random.RandomState(0)
    M = rng.uniform(size=(6, 5, 7))
    M /= M.max(axis=(1, 2), keepdims=True)
    plans = uot_sinkhorn_batch(torch.tensor(M), 0.1, 0.5).numpy()
    for b in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # POT notes the default reg_type
            expected = ot.unbalanced.sinkhorn_knopp_unbalanced(np.full(5, 1 / 5), np.full(7, 1 / 7), M[b], 0.1, 0.5)
        np.testing.assert_allclose(plans[b], expected, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("fusion", ["transformer", "ot"])
@pytest.mark.parametrize("loss", ["cox", "nll"])
def test_both_fusions_and_losses_learn_the_signal(fusion, loss):
    X, y = _data()
    X_te, y_te = _data(seed=1)
    net = PrototypeSurvival(fusion=fusion, loss=loss, **SMALL).fit(X, y)
    assert net.score(X_te, y_te) > 0.7
    assert len(net.loss_curve_) == net.n_iter_ <= 20 and net.loss_curve_[-1] < net.loss_curve_[0]
    surv = net.predict_survival_function(X_te[:4])
    assert np.all(np.diff(surv, axis=1) <= 1e-12) and np.all((surv >= 0) & (surv <= 1))
    if loss == "nll":
        assert net.time_bins_.shape == (5,) and surv.shape == (4, 4)
        times = np.r_[0.0, net.time_bins_[1:]]
        np.testing.assert_allclose(net.predict_survival_function(X_te[:4], times)[:, 0], 1.0)
    again = PrototypeSurvival(fusion=fusion, loss=loss, **SMALL).fit(X, y)
    np.testing.assert_array_equal(again.predict(X_te), net.predict(X_te))


def test_histology_only_and_layout_errors():
    X, y = _data(sizes=())
    net = PrototypeSurvival(**{**SMALL, "pathway_sizes": None, "fusion": "ot"}).fit(X, y)
    assert net.pathway_sizes_.shape == (0,) and net.histo_token_dim_ == 2
    with pytest.raises(ValueError, match="do not split into n_histo_tokens=4"):
        PrototypeSurvival(n_histo_tokens=4, max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="positive integers"):
        PrototypeSurvival(n_histo_tokens=3, pathway_sizes=[0], max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="requires y"):
        PrototypeSurvival(n_histo_tokens=3, max_iter=1).fit(X, None)


def test_global_torch_rng_is_untouched():
    import torch

    X, y = _data(n=40)
    state = torch.get_rng_state()
    PrototypeSurvival(**{**SMALL, "max_iter": 2}).fit(X, y).predict(X)
    assert torch.equal(state, torch.get_rng_state())


def test_device_parity(device):
    X, y = _data(n=80)
    params = {**SMALL, "max_iter": 3, "fusion": "ot"}
    gpu = PrototypeSurvival(device=device, **params).fit(X, y)
    cpu = PrototypeSurvival(**params).fit(X, y)
    np.testing.assert_allclose(gpu.predict(X), cpu.predict(X), rtol=1e-3, atol=1e-4)


def test_early_stopping_and_device_attribute():
    X, y = _data(n=150)
    net = PrototypeSurvival(**{**SMALL, "max_iter": 200, "early_stopping": True, "n_iter_no_change": 3,
                               "validation_fraction": 0.2}).fit(X, y)
    assert net.device_ == "cpu" and net.n_iter_ < 200
    assert len(net.validation_scores_) == len(net.loss_curve_) == net.n_iter_
    assert net.n_iter_ - (int(np.argmin(net.validation_scores_)) + 1) > 3
