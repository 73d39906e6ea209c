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
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant()
    for e in ledger:
        multiplier = e["scale"] / e["sensitivity"]
        if e["mechanism"] == "gaussian":
            acc.compose(dp_accounting.GaussianDpEvent(multiplier), e["count"])
        else:  # laplace, and geometric (its discrete twin; Laplace's loss bounds it)
            acc.compose(dp_accounting.LaplaceDpEvent(multiplier), e["count"])
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("epsilon, delta", [(0.25, 1e-6), (1.0, 1e-5), (3.0, 1e-8)])
def test_analytic_gaussian_sigma_matches_pld(epsilon, delta):
    sigma = gaussian_noise_scale(epsilon, delta)
    assert _pld_epsilon([{"mechanism": "gaussian", "scale": sigma, "sensitivity": 1.0, "count": 1}], delta) == \
        pytest.approx(epsilon, rel=1e-3)
    # 1% less noise is no longer (epsilon, delta)-DP according to the oracle
    assert _pld_epsilon([{"mechanism": "gaussian", "scale": 0.99 * sigma, "sensitivity": 1.0, "count": 1}],
                        delta) > epsilon


@pytest.mark.parametrize("params", [dict(), dict(delta=0.0), dict(algorithm="lloyd"), dict(n_levels=4)])
def test_every_release_of_a_fit_composes_within_the_claimed_budget(params):
    X, _ = make_blobs(n_samples=2000, centers=3, n_features=3, random_state=0)
    km = PrivateKMeans(3, epsilon=1.0, bounds=(-15, 15), random_state=0, **params).fit(X)
    eps_pld = _pld_epsilon(km.privacy_ledger_, max(km.delta_spent_, 1e-12))
    assert eps_pld <= km.epsilon_spent_ * (1 + 1e-6)
    if km.delta_spent_ == 0.0:  # pure DP: basic composition of Laplace releases is exact
        assert eps_pld == pytest.approx(km.epsilon_spent_, rel=1e-3)


def test_continual_stream_composes_within_the_claimed_budget():
    X, _ = make_blobs(n_samples=1500, centers=3, random_state=1)
    km = PrivateKMeans(3, epsilon=2.0, bounds=(-15, 15), max_steps=8, random_state=0)
    for batch in np.array_split(X, 3):
        km.partial_fit(batch)
    assert _pld_epsilon(km.privacy_ledger_, km.delta_spent_) <= km.epsilon_spent_ * (1 + 1e-6)
