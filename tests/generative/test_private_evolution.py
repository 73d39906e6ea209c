"""Private Evolution: accounting against the paper's figures and the analytic Gaussian, the noise actually added,
the per-user cap, utility on blobs and topics, composition with scikit-learn, bad input."""

import math
import pickle

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_topic_corpus, topic_of
from sklearn_icml.generative import PrivateEvolution, PrivateEvolutionText, SyntheticDataClassifier
from sklearn_icml.generative._pe_voting import NearestVoter, nearest_votes, noisy_histogram
from sklearn_icml.generative._private_evolution import cap_users
from sklearn_icml.privacy import gaussian_rounds_epsilon, gaussian_rounds_noise_multiplier


def _analytic_gaussian_epsilon(mu, delta):
    """Balle and Wang's exact epsilon of a Gaussian with mu = sensitivity / sigma, from its delta(epsilon)."""
    def delta_of(eps):
        return norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)

    return brentq(lambda e: delta_of(e) - delta, 0.0, 200.0)


@pytest.mark.parametrize("sigma, expected", [(11.3, 1.29), (2.31, 7.58)])
def test_rdp_reproduces_the_release(sigma, expected):
    assert gaussian_rounds_epsilon(sigma, 11, 3e-6, accountant="rdp") == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize("sigma, expected", [(11.3, 1.19), (2.31, 7.08)])
def test_pld_equals_the_analytic_gaussian_at_sigma_over_root_t(sigma, expected):
    eps = gaussian_rounds_epsilon(sigma, 11, 3e-6, accountant="pld")
    exact = _analytic_gaussian_epsilon(math.sqrt(11) / sigma, 3e-6)
    assert eps == pytest.approx(exact, rel=0.01)
    assert eps == pytest.approx(expected, abs=0.01)
    assert eps < gaussian_rounds_epsilon(sigma, 11, 3e-6, accountant="rdp")


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
@pytest.mark.parametrize("epsilon", [0.5, 1.29, 7.58])
def test_noise_multiplier_round_trips(accountant, epsilon):
    sigma = gaussian_rounds_noise_multiplier(epsilon, 3e-6, 11, accountant=accountant)
    back = gaussian_rounds_epsilon(sigma, 11, 3e-6, accountant=accountant)
    assert back <= epsilon * (1 + 1e-9)
    assert back == pytest.approx(epsilon, rel=0.01)


@pytest.mark.parametrize("bad", [dict(noise_multiplier=0.0), dict(noise_multiplier=-1.0), dict(n_rounds=0),
                                 dict(delta=0.0), dict(delta=1.0), dict(noise_multiplier=float("nan"))])
def test_rounds_epsilon_rejects_bad_input(bad):
    args = dict(noise_multiplier=2.0, n_rounds=3, delta=1e-6)
    args.update(bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        gaussian_rounds_epsilon(**args)


def test_nearest_votes_equal_brute_force():
    rng = np.random.RandomState(0)
    private, synthetic = rng.normal(size=(300, 5)), rng.normal(size=(40, 5))
    brute = np.argmin(((private[:, None, :] - synthetic[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(nearest_votes(private, synthetic, None), brute)
    np.testing.assert_array_equal(nearest_votes(private, synthetic, "cpu"), brute)
    # the voter of a fit: private set prepared once, small blocks, several rounds' synthetic sets
    for device in (None, "cpu"):
        voter = NearestVoter(private, device, block_size=7)
        for syn in (synthetic, synthetic[::-1] * 0.5, synthetic[:1]):
            expected = np.argmin(((private[:, None, :] - syn[None]) ** 2).sum(-1), axis=1)
            np.testing.assert_array_equal(voter(syn), expected)


def test_released_histogram_noise_has_the_formula_std():
    rng = np.random.RandomState(0)
    votes = np.zeros(0, dtype=int)
    released = [noisy_histogram(votes, 2000, noise_std=3.5, threshold=-1e9, rng=rng)[1] - 1e9 for _ in range(5)]
    assert np.std(np.concatenate(released)) == pytest.approx(3.5, rel=0.02)


def test_fit_adds_noise_of_std_inflation_sigma_m(monkeypatch):
    """The std handed to the histogram is noise_inflation * sigma * m, and the threshold threshold * sigma * m."""
    from sklearn_icml.generative import _private_evolution as module

    seen = []

    def spy(votes, n_bins, *, noise_std, threshold, rng):
        seen.append((noise_std, threshold))
        return noisy_histogram(votes, n_bins, noise_std=noise_std, threshold=threshold, rng=rng)

    monkeypatch.setattr(module, "noisy_histogram", spy)
    X = np.random.RandomState(0).normal(size=(200, 2))
    groups = np.repeat(np.arange(50), 4)
    pe = PrivateEvolution(n_synthetic=20, n_iterations=3, noise_multiplier=2.0, max_samples_per_user=3,
                          noise_inflation=1.5, threshold=0.5, bounds=(-4, 4), random_state=0).fit(X, groups=groups)
    assert seen == [(1.5 * 2.0 * 3, 0.5 * 2.0 * 3)] * 3
    assert pe.n_users_ == 50


def test_a_user_with_many_rows_moves_no_bin_by_more_than_m():
    rng = np.random.RandomState(0)
    groups = np.r_[np.zeros(100, dtype=int), np.arange(1, 201)]
    keep, n_users = cap_users(groups, len(groups), 16, rng)
    assert n_users == 201
    counts = np.bincount(groups[keep])
    assert counts[0] == 16 and (counts[1:] == 1).all()
    # worst case for the histogram: all of the user's kept rows vote for one synthetic point
    private = np.zeros((len(keep), 1))
    synthetic = np.array([[0.0], [5.0]])
    with_user = np.bincount(nearest_votes(private, synthetic, None), minlength=2)
    without = np.bincount(nearest_votes(private[groups[keep] != 0], synthetic, None), minlength=2)
    assert np.linalg.norm(with_user - without) <= 16


def test_ledger_and_budget():
    X, _ = make_blobs(300, centers=2, random_state=0)
    pe = PrivateEvolution(n_synthetic=30, n_iterations=4, epsilon=2.0, delta=1e-5, bounds=(-15, 15),
                          random_state=0).fit(X)
    assert pe.epsilon_spent_ <= 2.0 and pe.epsilon_spent_ == pytest.approx(2.0, rel=0.01)
    assert pe.delta_spent_ == 1e-5
    (entry,) = pe.privacy_ledger_
    assert entry["count"] == 4 and entry["accountant"] == "pld"
    # T Gaussian releases of std sigma*m on sensitivity m are one Gaussian of sigma/sqrt(T): the exact epsilon
    exact = _analytic_gaussian_epsilon(np.sqrt(4) * entry["sensitivity"] / entry["scale"], 1e-5)
    assert exact <= pe.epsilon_spent_ + 1e-3
    from sklearn_icml.privacy import Accountant, ledger_entry

    assert Accountant(epsilon=2.0).add(pe).total[0] == pytest.approx(pe.epsilon_spent_)
    # a ledger entry that understates its composition is refused
    with pytest.raises(ValueError, match="understate"):
        ledger_entry("rounds", "gaussian", sensitivity=1.0, scale=entry["scale"] / 2, epsilon=pe.epsilon_spent_,
                     delta=1e-5, count=4, accountant="pld")
    assert len(pe.histograms_) == 4 and all(h.shape == (30,) and (h >= 0).all() for h in pe.histograms_)


@pytest.mark.parametrize("sigma", [2.31, 11.3])
def test_classifier_on_synthetic_blobs_is_as_good_as_on_real_data(sigma):
    for seed in range(2):
        X, y = make_blobs(4000, centers=2, cluster_std=1.5, random_state=seed)
        real = LogisticRegression().fit(X[:2000], y[:2000]).score(X[2000:], y[2000:])
        gen = PrivateEvolution(n_synthetic=300, n_iterations=10, noise_multiplier=sigma, lookahead=1,
                               bounds=(-15, 15), random_state=seed)
        clf = SyntheticDataClassifier(gen, LogisticRegression()).fit(X[:2000], y[:2000])
        assert clf.score(X[2000:], y[2000:]) >= real - 0.02
        assert set(clf.classes_) == {0, 1}


def test_grid_search_over_the_budget_in_a_pipeline():
    X, y = make_blobs(600, centers=2, cluster_std=1.5, random_state=0)
    pipe = make_pipeline(StandardScaler(), SyntheticDataClassifier(  # the two labels are public knowledge
        PrivateEvolution(n_synthetic=50, n_iterations=3, bounds=(-4, 4), classes=[0, 1], random_state=0)))
    search = GridSearchCV(pipe, {"syntheticdataclassifier__generator__epsilon": [0.5, 8.0]}, cv=3).fit(X, y)
    assert search.best_score_ > 0.8


def test_deterministic_pickles_and_does_not_touch_the_input():
    X, _ = make_blobs(200, centers=3, random_state=0)
    before = X.copy()
    params = dict(n_synthetic=20, n_iterations=3, epsilon=1.0, bounds=(-15, 15), random_state=3)
    a = PrivateEvolution(**params).fit(X)
    b = PrivateEvolution(**params).fit(X)
    np.testing.assert_array_equal(a.synthetic_, b.synthetic_)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).sample(5, random_state=0), a.sample(5, random_state=0))


def test_bounds_data_warns_on_every_fit_and_the_default_box_is_private():
    import warnings

    from sklearn_icml.privacy import PrivacyLeakWarning

    X, _ = make_blobs(100, random_state=0)
    pe = PrivateEvolution(n_synthetic=10, n_iterations=2, bounds="data")
    for _ in range(2):  # the same instance warns again on every fit
        with pytest.warns(PrivacyLeakWarning, match="bounds='data'"):
            pe.fit(X)
    np.testing.assert_array_equal(pe.bounds_[0], X.min(0))
    X, _ = make_blobs(3000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pe = PrivateEvolution(n_synthetic=10, n_iterations=2, random_state=0).fit(X)
    assert np.mean(np.all((X >= pe.bounds_[0]) & (X <= pe.bounds_[1]), axis=1)) > 0.9
    box = [e for e in pe.privacy_ledger_ if e["label"].startswith("private box")]
    assert len(box) == 2 and box[0]["epsilon"] + box[1]["epsilon"] == pytest.approx(0.1)
    assert 0.999 <= pe.epsilon_spent_ <= 1.0  # the rounds compose (pld) to just under their part


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_samples_per_user=0), "max_samples_per_user"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(bounds=(1.0, -1.0)), "bounds"),
    (dict(bounds=(-np.inf, 1.0)), "bounds"),
])
def test_bad_parameters(kwargs, match):
    X, _ = make_blobs(50, random_state=0)
    params = dict(n_synthetic=5, n_iterations=2, bounds=(-15, 15))
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        PrivateEvolution(**params).fit(X)


def test_bad_data():
    pe = PrivateEvolution(n_synthetic=5, n_iterations=2, bounds=(-1, 1))
    with pytest.raises(ValueError):
        pe.fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="groups"):
        pe.fit(np.zeros((10, 2)), groups=np.arange(9))
    with pytest.raises(ValueError, match="class_conditional"):
        PrivateEvolution(class_conditional=True, bounds=(-1, 1)).fit(np.zeros((10, 2)))


def test_text_mode_moves_the_synthetic_texts_to_the_private_topics():
    corpus = make_topic_corpus(2000, 600, random_state=0)
    start = np.isin(topic_of(corpus.public, corpus.topic_words), corpus.private_topic_ids).mean()
    pe = PrivateEvolutionText(n_synthetic=200, n_iterations=6, noise_multiplier=2.31, lookahead=1,
                              initial_population=corpus.public, random_state=0).fit(corpus.private)
    share = np.isin(topic_of(pe.synthetic_, corpus.topic_words), corpus.private_topic_ids).mean()
    assert start < 0.2 and share >= 0.8
    assert all(isinstance(t, str) for t in pe.synthetic_)
    assert pe.score(corpus.private[:50]) > pe.score(corpus.public[corpus.public_topics == 0][:50])


def test_text_mode_bad_input():
    corpus = make_topic_corpus(100, 20, random_state=0)
    with pytest.raises(ValueError, match="initial_population"):
        PrivateEvolutionText(n_synthetic=5, n_iterations=1).fit(corpus.private)
    with pytest.raises(ValueError, match="strings"):
        PrivateEvolutionText(n_synthetic=5, n_iterations=1, initial_population=corpus.public).fit([1, 2, 3])
