"""LeftInvertibleWGAN: the certified bound against exact W1, the covering bound against quantisation, exact
inverses, the loop's terms against finite differences, composition with scikit-learn, bad input."""

import math
import pickle

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist
from sklearn.cluster import KMeans
from sklearn.datasets import make_swiss_roll
from sklearn.model_selection import GridSearchCV

from sklearn_icml.datasets import make_swiss_roll_2d
from sklearn_icml.generative import LeftInvertibleWGAN
from sklearn_icml.generative._wgan_bound import certified_lower_bound, inverse_error_upper, quantization_error_lower
from sklearn_icml.generative._wgan_nets import (
    ExactInverse,
    InjectiveGenerator,
    injective_widths,
    make_mlp,
    mlp_lipschitz_upper,
)
from sklearn_icml.generative._wgan_training import _critic_terms, critic_step_loss, train_wgan
from sklearn_icml.metrics import wasserstein1

TINY = dict(hidden_layer_sizes=(16, 16), max_iter=20, batch_size=64, n_critic=2, learning_rate=1e-3)


@pytest.fixture(scope="module")
def roll():
    X, _ = make_swiss_roll_2d(300, random_state=0)
    return X[:150], X[150:]


def _blobs8(seed, n=120):
    rng = np.random.RandomState(seed)
    centers = rng.normal(scale=3.0, size=(4, 8))
    return centers[rng.randint(4, size=n)] + rng.normal(size=(n, 8)) * [3, 2, 1, 1, 0.5, 0.5, 0.2, 0.2]


# -- the certified bound --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("architecture", ["mlp", "injective_mlp"])
@pytest.mark.parametrize("latent_distribution", ["gaussian", "uniform"])
def test_lower_bound_below_exact_w1_to_train(roll, seed, architecture, latent_distribution):
    X = roll[0]
    gan = LeftInvertibleWGAN(architecture=architecture, latent_distribution=latent_distribution, random_state=seed,
                             **TINY).fit(X)
    # the documented formula of the bound from its three pieces (each tested on its own below)
    expected = max(0.0, (gan.quantization_error_lower_ - gan.inverse_error_upper_) / gan.lipschitz_inverse_upper_)
    assert gan.lower_bound_ == pytest.approx(expected, rel=1e-12, abs=1e-300)
    # and it bounds the generator's distance to the data, estimated by exact matching on as many samples
    w1 = wasserstein1(gan.sample(len(X), random_state=seed + 10), X, max_samples=None)
    assert gan.lower_bound_ <= w1
    if architecture == "injective_mlp":
        assert gan.lower_bound_ > 0.0  # the inverse is exact to float precision: the bound is not vacuous


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("latent_distribution", ["gaussian", "uniform"])
def test_lower_bound_in_higher_latent_dimension(seed, latent_distribution):
    # d = 6: e_n is large (~0.7 for a Gaussian latent, n = 120), so the injective bound is far from vacuous
    X = _blobs8(seed)
    gan = LeftInvertibleWGAN(architecture="injective_mlp", latent_dim=6, latent_distribution=latent_distribution,
                             random_state=seed, **TINY).fit(X)
    w1 = wasserstein1(gan.sample(1000, random_state=seed), X)
    assert 0.0 < gan.lower_bound_ <= w1
    # the bound is the formula of its parts, and its parts are what the fitted maps give
    assert gan.lower_bound_ == pytest.approx(
        (gan.quantization_error_lower_ - gan.inverse_error_upper_) / gan.lipschitz_inverse_upper_)
    assert gan.quantization_error_lower_ == pytest.approx(quantization_error_lower(120, 6, latent_distribution))
    assert gan.inverse_error_upper_ < 1e-5


def test_learned_inverse_bound_is_vacuous_when_the_inverse_error_exceeds_e_n(roll):
    gan = LeftInvertibleWGAN(random_state=0, **TINY).fit(roll[0])
    assert gan.inverse_error_upper_ >= gan.inverse_error_
    if gan.inverse_error_upper_ >= gan.quantization_error_lower_:
        assert gan.lower_bound_ == 0.0
    # the inverse error is that of the fitted maps, measured independently
    z = np.random.RandomState(3).normal(size=(4000, 2))
    back = gan.transform(gan.inverse_transform(z))
    assert np.linalg.norm(back - z, axis=1).mean() == pytest.approx(gan.inverse_error_, rel=0.1)


@pytest.mark.parametrize("latent_distribution", ["gaussian", "uniform"])
@pytest.mark.parametrize("d, n", [(1, 4), (2, 5), (2, 16), (3, 10)])
def test_covering_bound_below_kmeans_quantisation(latent_distribution, d, n):
    rng = np.random.RandomState(0)
    U = rng.normal(size=(20000, d)) if latent_distribution == "gaussian" else rng.uniform(size=(20000, d))
    centers = KMeans(n, n_init=3, random_state=0).fit(U).cluster_centers_
    quantisation = cdist(U, centers).min(axis=1).mean()
    assert quantization_error_lower(n, d, latent_distribution) <= quantisation


@pytest.mark.parametrize("n", [1, 3, 10])
def test_covering_bound_is_exact_for_the_uniform_law_on_the_line(n):
    # n equal intervals of [0, 1], each with its midpoint: mean distance 1 / (4n), the optimum
    assert quantization_error_lower(n, 1, "uniform") == pytest.approx(1.0 / (4 * n))


def test_covering_bound_matches_the_closed_form():
    # d = 2, Gaussian: V_2 = pi, f_max = 1 / (2 pi): 2/3 * (n / 2)^{-1/2}
    assert quantization_error_lower(500, 2, "gaussian") == pytest.approx(2 / 3 * math.sqrt(2 / 500))
    assert quantization_error_lower(60000, 64, "gaussian") == pytest.approx(4.19, abs=0.01)


def test_inverse_error_upper_confidence_and_bound_clipping():
    errors = np.random.RandomState(0).exponential(size=500)
    mean, upper = inverse_error_upper(errors)
    assert mean == pytest.approx(errors.mean())
    assert upper == pytest.approx(mean + 3.0902 * errors.std(ddof=1) / math.sqrt(500), rel=1e-4)
    assert certified_lower_bound(0.1, 0.2, 3.0) == 0.0
    assert certified_lower_bound(0.4, 0.1, 3.0) == pytest.approx(0.1)
    assert certified_lower_bound(0.4, 0.1, math.inf) == 0.0


# -- the networks -----------------------------------------------------------------------------------------------------

def test_injective_widths_never_decrease_nor_exceed_the_data_dimension():
    assert injective_widths(2, (128, 128, 128), 2) == [2, 2, 2, 2, 2]
    assert injective_widths(16, (8, 128, 32), 64) == [16, 16, 64, 64, 64]
    with pytest.raises(ValueError, match="non-decreasing"):
        InjectiveGenerator([4, 3], torch.Generator().manual_seed(0))


@pytest.mark.parametrize("widths", [[2, 2, 2, 2], [3, 5, 8, 8], [16, 64, 64]])
def test_injective_round_trip_in_float32(widths):
    gen = torch.Generator().manual_seed(0)
    g = InjectiveGenerator(widths, gen)
    with torch.no_grad():  # move away from the orthonormal start, keeping full column rank
        for layer in g.layers:
            layer.weight.add_(0.3 * torch.randn(layer.weight.shape, generator=gen))
            layer.bias.add_(torch.randn(layer.bias.shape, generator=gen))
    h = ExactInverse(g)
    z = torch.randn(2000, widths[0], generator=gen)
    with torch.no_grad():
        assert float((h(g(z)) - z).abs().max()) <= 1e-4


def test_fitted_injective_round_trip_in_float32(roll):
    gan = LeftInvertibleWGAN(architecture="injective_mlp", random_state=0, **TINY).fit(roll[0])
    z = torch.randn(5000, 2, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert gan.generator_(z).dtype == torch.float32
        assert float((gan.inverse_(gan.generator_(z)) - z).abs().max()) <= 1e-4
    # the public maps too, in X's units
    Z = z.numpy().astype(np.float64)
    np.testing.assert_allclose(gan.transform(gan.inverse_transform(Z)), Z, atol=1e-4)


def _empirical_lipschitz(f, dim, gen, n=3000):
    x = torch.randn(n, dim, generator=gen, dtype=torch.float64) * 2
    y = x + torch.randn(n, dim, generator=gen, dtype=torch.float64) * 0.05
    with torch.no_grad():
        return float(((f(x) - f(y)).norm(dim=1) / (x - y).norm(dim=1)).max())


def test_lipschitz_upper_bounds_hold_on_random_pairs():
    gen = torch.Generator().manual_seed(0)
    mlp = make_mlp(3, (32, 32), 2, gen).double()
    assert _empirical_lipschitz(mlp, 3, gen) <= mlp_lipschitz_upper(mlp)
    inj = InjectiveGenerator([2, 4, 6], gen)
    with torch.no_grad():
        for layer in inj.layers:
            layer.weight.mul_(0.5)
    inverse = ExactInverse(inj).double()
    assert _empirical_lipschitz(inverse, 6, gen) <= inverse.lipschitz_upper()
    # orthonormal columns halved: sigma_min = 0.5 in both layers, one LeakyReLU of slope 0.5
    assert inverse.lipschitz_upper() == pytest.approx(2.0 * 2.0 * 2.0, rel=1e-5)


def test_critic_terms_against_finite_differences():
    gen = torch.Generator().manual_seed(0)
    critic = make_mlp(3, (8,), 1, gen).double()
    real = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    fake = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    w_est, penalty, _, _ = _critic_terms(critic, real, fake, True, "real", gen)
    with torch.no_grad():
        assert float(w_est) == pytest.approx(float(critic(real).mean() - critic(fake).mean()))
        step, norms = 1e-6, []
        for x in real:
            grad = [(critic((x + step * e)[None]) - critic((x - step * e)[None])).item() / (2 * step)
                    for e in torch.eye(3, dtype=torch.float64)]
            norms.append(np.linalg.norm(grad))
    assert float(penalty.detach()) == pytest.approx(np.mean((np.array(norms) - 1.0) ** 2), rel=1e-5)


def test_hinge_critic_loss_against_its_definition():
    gen = torch.Generator().manual_seed(1)
    critic = make_mlp(3, (8,), 1, gen).double()
    with torch.no_grad():
        critic[-1].weight.mul_(5.0)  # scores well past the margin +-1, where hinge and Wasserstein forms part
    real = torch.randn(16, 3, generator=gen, dtype=torch.float64)
    fake = torch.randn(16, 3, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        r, f = critic(real).numpy().ravel(), critic(fake).numpy().ravel()
    assert (r > 1).any() and (r < 1).any() and (f < -1).any() and (f > -1).any()
    hinge = np.maximum(0.0, 1.0 - r).mean() + np.maximum(0.0, 1.0 + f).mean()
    loss, w_est = critic_step_loss(critic, real, fake, critic_loss="hinge", gradient_penalty=0.0)
    assert float(loss.detach()) == pytest.approx(hinge, rel=1e-12)
    assert float(w_est.detach()) == pytest.approx(r.mean() - f.mean(), rel=1e-12)
    assert float(loss.detach()) != pytest.approx(2.0 - float(w_est.detach()))
    # with the gradient penalty (at the real points) both forms add the same term
    loss_h, _ = critic_step_loss(critic, real, fake, critic_loss="hinge", gradient_penalty=1.0)
    loss_w, _ = critic_step_loss(critic, real, fake, critic_loss="wasserstein", gradient_penalty=1.0)
    _, penalty, _, _ = _critic_terms(critic, real, fake, True, "real", gen)
    assert float(loss_h.detach()) == pytest.approx(hinge + float(penalty.detach()), rel=1e-12)
    assert float(loss_w.detach()) == pytest.approx(f.mean() - r.mean() + float(penalty.detach()), rel=1e-12)


def test_hinge_and_wasserstein_critics_take_the_same_steps_inside_the_margin(roll):
    # while every score lies in (-1, 1) the hinge loss is the Wasserstein loss plus 2: same gradients, same fit
    # (three small steps from the initial critic, whose scores here stay within the margin)
    kw = dict(hidden_layer_sizes=(8,), max_iter=3, n_critic=2, batch_size=32, random_state=0)
    a = LeftInvertibleWGAN(**kw).fit(roll[0])
    b = LeftInvertibleWGAN(critic_loss="hinge", **kw).fit(roll[0])
    np.testing.assert_allclose(b.loss_history_["critic"], a.loss_history_["critic"] + 2.0, atol=1e-5)
    np.testing.assert_allclose(b.loss_history_["wasserstein"], a.loss_history_["wasserstein"], atol=1e-5)
    np.testing.assert_allclose(b.sample(50), a.sample(50), atol=1e-5)


def test_training_loop_without_the_inverse_network(roll):
    X = (roll[0] - roll[0].mean(0)) / roll[0].std(0)
    result = train_wgan(X, latent_dim=2, hidden=(8,), max_iter=5, n_critic=2, generator=torch.Generator(),
                        train_inverse=False)
    assert result.inverse is None and np.all(result.history["inverse"] == 0.0)
    assert all(len(v) == 5 for v in result.history.values())


# -- the estimator ----------------------------------------------------------------------------------------------------

def test_fitted_state_and_units(roll):
    X = roll[0] * [100.0, 0.01] + [5.0, -3.0]
    gan = LeftInvertibleWGAN(random_state=0, **TINY).fit(X)
    assert gan.latent_dim_ == 2 and gan.n_iter_ == 20
    assert set(gan.loss_history_) == {"critic", "wasserstein", "generator", "inverse"}
    assert all(v.shape == (20,) for v in gan.loss_history_.values())
    np.testing.assert_allclose(gan.mean_, X.mean(0))
    np.testing.assert_allclose(gan.scale_, X.std(0))
    S = gan.sample(500)
    # samples come back in X's units: within a few scales of the data, per feature
    assert np.all(np.abs(np.median(S, 0) - np.median(X, 0)) < 2 * X.std(0))
    for module in (gan.generator_, gan.inverse_, gan.critic_):
        assert all(p.device.type == "cpu" for p in module.parameters())


def test_same_seed_same_model_and_sample_seeding(roll):
    a = LeftInvertibleWGAN(random_state=3, **TINY).fit(roll[0])
    b = LeftInvertibleWGAN(random_state=3, **TINY).fit(roll[0])
    np.testing.assert_array_equal(a.sample(20), b.sample(20))
    np.testing.assert_array_equal(a.sample(20), a.sample(20))
    assert not np.array_equal(a.sample(20, random_state=1), a.sample(20, random_state=2))
    c = LeftInvertibleWGAN(random_state=4, **TINY).fit(roll[0])
    assert not np.array_equal(a.sample(20), c.sample(20))


def test_training_moves_the_generator_towards_the_data(roll):
    # a step of 3e-3: with ReLU networks this small, 60 iterations at 1e-3 do not reliably move every seed
    X, quick = roll[0], {**TINY, "learning_rate": 3e-3}
    short = LeftInvertibleWGAN(random_state=0, **{**quick, "max_iter": 1}).fit(X)
    longer = LeftInvertibleWGAN(random_state=0, **{**quick, "max_iter": 60}).fit(X)
    assert wasserstein1(longer.sample(500), X) < wasserstein1(short.sample(500), X)


def test_score_is_minus_w1_and_grid_search_tunes_the_inverse_penalty(roll):
    X = roll[0]
    gan = LeftInvertibleWGAN(random_state=0, **TINY).fit(X)
    assert gan.score(roll[1]) == pytest.approx(-wasserstein1(gan.sample(150), roll[1], random_state=0))
    grid = {"inverse_penalty": [0.0, 2.0]}
    search = GridSearchCV(LeftInvertibleWGAN(random_state=0, **{**TINY, "max_iter": 5}), grid, cv=2).fit(X)
    # each candidate's fold scores are the direct computation: fit on one half, minus W1 on the other
    half = len(X) // 2
    for j, penalty in enumerate(grid["inverse_penalty"]):
        for k, (train, test) in enumerate([(slice(half, None), slice(None, half)),
                                           (slice(None, half), slice(half, None))]):
            fitted = LeftInvertibleWGAN(random_state=0, inverse_penalty=penalty, **{**TINY, "max_iter": 5})
            direct = fitted.fit(X[train]).score(X[test])
            assert search.cv_results_[f"split{k}_test_score"][j] == pytest.approx(direct, rel=1e-6)
    assert search.best_index_ == int(np.argmax(search.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("options", [dict(gp_at="interpolate"), dict(standardize=False),
                                     dict(gradient_penalty=0.0), dict(inverse_penalty=0.0)])
def test_options_fit(roll, options):
    gan = LeftInvertibleWGAN(random_state=0, **TINY, **options).fit(roll[0])
    assert np.all(np.isfinite(gan.sample(10)))
    assert np.isfinite(gan.loss_history_["critic"]).all()


def test_inverse_penalty_zero_is_a_plain_wgan_gp(roll):
    # lambda = 0: the inverse network learns from detached points, so the generator is exactly that of a
    # WGAN-GP trained without any inverse network; lambda = 2 moves it
    X = (roll[0] - roll[0].mean(0)) / roll[0].std(0)
    kw = dict(latent_dim=2, hidden=(8,), max_iter=5, n_critic=1)
    z = torch.randn(10, 2, generator=torch.Generator().manual_seed(5))
    runs = {name: train_wgan(X, generator=torch.Generator().manual_seed(0), **kw, **extra).generator(z).detach()
            for name, extra in [("zero", dict(inverse_penalty=0.0)),
                                ("plain", dict(inverse_penalty=0.0, train_inverse=False)),
                                ("two", dict(inverse_penalty=2.0))]}
    torch.testing.assert_close(runs["zero"], runs["plain"], rtol=0, atol=0)
    assert not torch.allclose(runs["zero"], runs["two"])


def test_pickle_round_trip(roll):
    gan = LeftInvertibleWGAN(random_state=0, **TINY).fit(roll[0])
    back = pickle.loads(pickle.dumps(gan))
    np.testing.assert_array_equal(back.sample(10), gan.sample(10))
    np.testing.assert_array_equal(back.transform(roll[1]), gan.transform(roll[1]))


def test_verbose_prints_progress_and_quiet_by_default(roll, capsys):
    LeftInvertibleWGAN(random_state=0, **{**TINY, "max_iter": 3}).fit(roll[0])
    assert capsys.readouterr().out == ""
    LeftInvertibleWGAN(random_state=0, verbose=1, **{**TINY, "max_iter": 3}).fit(roll[0])
    out = capsys.readouterr().out
    assert "[LeftInvertibleWGAN] iteration 3/3" in out and out.count("\n") == 3


def test_device(roll, device):
    gan = LeftInvertibleWGAN(random_state=0, device=device, **{**TINY, "max_iter": 5}).fit(roll[0])
    assert gan.device_ == device
    for module in (gan.generator_, gan.inverse_, gan.critic_):
        assert all(p.device.type == "cpu" for p in module.parameters())
    assert np.all(np.isfinite(gan.sample(10)))


# -- data and bad input -----------------------------------------------------------------------------------------------

def test_make_swiss_roll_2d_is_the_papers_cut():
    X, t = make_swiss_roll_2d(50, noise=0.5, random_state=1)
    X3, t3 = make_swiss_roll(50, noise=0.5, random_state=1)
    np.testing.assert_array_equal(X, X3[:, [0, 2]] / 7.5)
    np.testing.assert_array_equal(t, t3)


def test_bad_input(roll):
    X = roll[0]
    with pytest.raises(ValueError, match="NaN"):
        LeftInvertibleWGAN(**TINY).fit(np.where(np.arange(300).reshape(150, 2) == 7, np.nan, X))
    with pytest.raises(ValueError, match="latent_dim=3 is above n_features=2"):
        LeftInvertibleWGAN(latent_dim=3, **TINY).fit(X)
    with pytest.raises(ValueError, match=r"1 sample\(s\) .* minimum of 2 is required by LeftInvertibleWGAN"):
        LeftInvertibleWGAN(**TINY).fit(X[:1])
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        LeftInvertibleWGAN(hidden_layer_sizes=(8, 0)).fit(X)
    with pytest.raises(ValueError, match="betas"):
        LeftInvertibleWGAN(betas=(0.5, 1.5)).fit(X)
    with pytest.raises(ValueError, match="float32 range"):
        LeftInvertibleWGAN(standardize=False, **TINY).fit(X * 1e300)
    huge = LeftInvertibleWGAN(random_state=0, **{**TINY, "max_iter": 2}).fit(X * 1e300)  # standardised: fine
    assert np.all(np.isfinite(huge.sample(5))) and np.all(np.isfinite(huge.scale_))
    gan = LeftInvertibleWGAN(random_state=0, **{**TINY, "max_iter": 2}).fit(X)
    with pytest.raises(ValueError, match="features"):
        gan.transform(np.ones((3, 3)))
    with pytest.raises(ValueError, match="latent_dim_ is 2"):
        gan.inverse_transform(np.ones((3, 1)))
    with pytest.raises(ValueError, match="NaN"):
        gan.inverse_transform(np.full((3, 2), np.nan))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n_samples"):
            gan.sample(bad)
    with pytest.raises(ValueError, match="n_samples"):
        make_swiss_roll_2d(0)


def test_a_long_silent_fit_prints_its_progress(roll, monkeypatch, capsys):
    from sklearn_icml.utils import _training

    monkeypatch.setattr(_training, "SLOW_FIT_CPU_SECONDS", 0.0)  # every fit counts as long here
    LeftInvertibleWGAN(random_state=0, **{**TINY, "max_iter": 3}).fit(roll[0])
    out = capsys.readouterr().out
    assert out.startswith("[LeftInvertibleWGAN] still fitting: step 1/3 after ") and out.count("\n") == 1
    monkeypatch.setattr(_training, "SLOW_FIT_CPU_SECONDS", 1e9)
    LeftInvertibleWGAN(random_state=0, **{**TINY, "max_iter": 3}).fit(roll[0])
    assert capsys.readouterr().out == ""


# -- early stopping ---------------------------------------------------------------------------------------------------

def test_a_rising_held_out_measure_stops_the_loop_and_keeps_the_first_networks(roll):
    """Planted: a held-out measure that rises at every check; the loop stops after n_iter_no_change more checks."""
    X = (roll[0] - roll[0].mean(0)) / roll[0].std(0)
    calls = []

    def rising(g):
        calls.append(1)
        return float(len(calls))

    common = dict(latent_dim=2, hidden=(8,), n_critic=2, batch_size=32, learning_rate=1e-3)
    result = train_wgan(X, max_iter=100, generator=torch.Generator().manual_seed(0), validation=rising,
                        check_every=3, n_iter_no_change=2, tol=0.0, **common)
    # the first check (iteration 3) is the best; 2 more are tolerated, the 4th check (iteration 12) stops
    assert result.validation_scores == [1.0, 2.0, 3.0, 4.0] and result.n_iter == 12
    assert all(len(v) == 12 for v in result.history.values())
    # the networks kept are those of iteration 3: those of a run of 3 iterations from the same seed
    first = train_wgan(X, max_iter=3, generator=torch.Generator().manual_seed(0), **common)
    for kept, ref in ((result.generator, first.generator), (result.inverse, first.inverse),
                      (result.critic, first.critic)):
        for p, q in zip(kept.parameters(), ref.parameters(), strict=True):
            assert torch.equal(p, q)


def test_early_stopping_measures_exact_w1_to_the_held_out_rows(roll):
    from sklearn.utils import check_random_state

    from sklearn_icml.generative._wgan_training import draw_latent
    from sklearn_icml.utils._torch import torch_generator

    X = roll[0]
    gan = LeftInvertibleWGAN(random_state=0, early_stopping=True, validation_fraction=0.2, n_iter_no_change=3,
                             **dict(TINY, max_iter=200)).fit(X)
    scores = gan.validation_scores_
    assert len(scores) == gan.n_iter_ // 2  # a check every max_iter // 100 = 2 iterations
    assert gan.best_validation_score_ == min(scores)
    # scikit-learn's rule on these values, from its definition: the fit stops at the first check that makes
    # more than n_iter_no_change checks in a row without a decrease of at least tol (1e-4)
    best, count, stop = np.inf, 0, None
    for i, v in enumerate(scores):
        count = count + 1 if v > best - 1e-4 else 0
        best = min(best, v)
        if count > 3:
            stop = i
            break
    assert (stop == len(scores) - 1) if gan.n_iter_ < 200 else stop is None
    # the same split and latent draws, by hand: the networks kept score the best value
    rng = check_random_state(0)
    order = rng.permutation(len(X))
    held = X[order[:30]]
    z = draw_latent(30, 2, "gaussian", torch_generator(rng))
    with torch.no_grad():
        out = gan.generator_(z).double().numpy() * gan.scale_ + gan.mean_
    assert wasserstein1(out, held, max_samples=None) == pytest.approx(gan.best_validation_score_, rel=1e-6)
    assert gan.loss_curve_.shape == (gan.n_iter_,)
    np.testing.assert_array_equal(gan.loss_curve_, gan.loss_history_["wasserstein"])


def test_defaults_run_the_whole_budget_without_holding_out(roll):
    gan = LeftInvertibleWGAN(random_state=0, **TINY).fit(roll[0])
    assert gan.n_iter_ == 20 and gan.validation_scores_ is None and gan.best_validation_score_ is None
    with pytest.raises(ValueError, match="LeftInvertibleWGAN: early_stopping"):
        LeftInvertibleWGAN(early_stopping=True, validation_fraction=0.9, **TINY).fit(roll[0][:3])
