"""Google's dp-accounting as the oracle of our accounting (installed by the ``peers`` extra).

The library composes by basic composition and calibrates the Gaussian by the
analytic Gaussian mechanism; dp-accounting's privacy-loss-distribution (PLD)
accountant is exact for a single Gaussian or Laplace release and tight for
their compositions, so it checks both: our sigma is the one PLD finds, and
every fit's ledger, composed by PLD, is at least as private as we claim.
"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from sklearn_icml.cluster import PrivateKMeans
from sklearn_icml.privacy import gaussian_noise_scale

dp_accounting = pytest.importorskip("dp_accounting")

pytestmark = pytest.mark.peers


def _pld_epsilon(ledger, delta):
    """PLD composition of the additive releases, plus (basic composition) the pure-DP local and choice steps.

    The noise multiplier is the ledger's scale over the sensitivity; the sensitivities themselves are
    checked against brute force in test_sensitivity.py and test_private_kmeans.py.
    """
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant()
    pure = 0.0
    for e in ledger:
        if e["mechanism"] in ("local_hashing", "exponential"):  # epsilon-DP randomisers without a PLD event here
            pure += e["epsilon"]
            continue
        multiplier = e["scale"] / e["sensitivity"]
        if e["mechanism"] == "gaussian":
            acc.compose(dp_accounting.GaussianDpEvent(multiplier), e["count"])
        else:  # laplace, and geometric (its discrete twin; Laplace's loss bounds it)
            acc.compose(dp_accounting.LaplaceDpEvent(multiplier), e["count"])
    return acc.get_epsilon(delta) + pure


@pytest.mark.parametrize("epsilon, delta", [(0.25, 1e-6), (1.0, 1e-5), (3.0, 1e-8)])
def test_analytic_gaussian_sigma_matches_pld(epsilon, delta):
    sigma = gaussian_noise_scale(epsilon, delta)
    assert _pld_epsilon([{"mechanism": "gaussian", "scale": sigma, "sensitivity": 1.0, "count": 1}], delta) == \
        pytest.approx(epsilon, rel=1e-3)
    # 1% less noise is no longer (epsilon, delta)-DP according to the oracle
    assert _pld_epsilon([{"mechanism": "gaussian", "scale": 0.99 * sigma, "sensitivity": 1.0, "count": 1}],
                        delta) > epsilon


@pytest.mark.parametrize("params", [
    dict(), dict(delta=0.0), dict(n_levels=4), dict(algorithm="lloyd"), dict(algorithm="lloyd", delta=0.0),
    dict(privacy="local"), dict(privacy="local", delta=0.0), dict(privacy="local", algorithm="lloyd"),
    dict(n_repeats=3), dict(algorithm="lloyd", n_repeats=2), dict(epsilon=20.0)])
@pytest.mark.parametrize("n_features", [3, 12])
def test_every_release_of_a_fit_composes_within_the_claimed_budget(params, n_features):
    X, _ = make_blobs(n_samples=2000, centers=3, n_features=n_features, random_state=0)
    params = dict(epsilon=1.0) | params
    km = PrivateKMeans(3, bounds=(-15, 15), random_state=0, n_init=2, **params).fit(X)
    assert km.epsilon_spent_ <= params["epsilon"] and km.delta_spent_ <= km.delta
    eps_pld = _pld_epsilon(km.privacy_ledger_, max(km.delta_spent_, 1e-12))
    # the PLD accountant discretises the privacy loss pessimistically (about 1e-4 per composed release)
    assert eps_pld <= km.epsilon_spent_ * (1 + 1e-3)
    if km.delta_spent_ == 0.0:  # pure DP: basic composition of Laplace releases is exact
        assert eps_pld == pytest.approx(km.epsilon_spent_, rel=1e-3)


def test_continual_stream_composes_within_the_claimed_budget():
    X, _ = make_blobs(n_samples=1500, centers=3, random_state=1)
    km = PrivateKMeans(3, epsilon=2.0, bounds=(-15, 15), max_steps=8, random_state=0)
    for batch in np.array_split(X, 3):
        km.partial_fit(batch)
    assert km.epsilon_spent_ <= 2.0
    assert _pld_epsilon(km.privacy_ledger_, km.delta_spent_) <= km.epsilon_spent_ * (1 + 1e-6)
