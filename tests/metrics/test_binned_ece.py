"""Binned ECE: equal to netcal on the same bins; equal-mass bins; the reliability curve."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.naive_bayes import GaussianNB

from sklearn_icml.metrics import binned_ece, ls_ece, ls_reliability_curve


def _digits_proba():
    X, y = load_digits(return_X_y=True)
    P = GaussianNB().fit(X[::2], y[::2]).predict_proba(X[1::2])
    return y[1::2], P


def _netcal_ece(n_bins, P, y):
    netcal = pytest.importorskip("netcal.metrics")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # netcal's own deprecation chatter
        return float(netcal.ECE(n_bins).measure(P, y))


@pytest.mark.peers
@pytest.mark.parametrize("n_bins", [1, 10, 15, 20])
def test_top_label_binned_ece_equals_netcal(n_bins):
    y, P = _digits_proba()
    assert binned_ece(y, P, n_bins=n_bins) == pytest.approx(_netcal_ece(n_bins, P, y), abs=1e-8)


@pytest.mark.peers
@pytest.mark.parametrize("n_bins", [10, 11, 15])
def test_binary_binned_ece_equals_netcal(n_bins):
    rng = np.random.RandomState(0)
    p = np.r_[rng.uniform(size=500), [0.0, 1.0, 0.5, 0.2]]  # bin edges and saturated values included
    y = (rng.uniform(size=p.size) < p ** 1.5).astype(int)
    assert binned_ece(y, p, n_bins=n_bins) == pytest.approx(_netcal_ece(n_bins, p, y), abs=1e-8)


def test_binned_ece_by_hand():
    y = np.array([0, 1, 1, 0, 1, 1])
    p = np.array([0.1, 0.8, 0.7, 0.3, 0.9, 0.6])
    # 2 bins [0, .5), [.5, 1]: {0.1, 0.3} -> acc 0, conf .2 ; {0.8,.7,.9,.6} -> acc 1, conf .75
    assert binned_ece(y, p, n_bins=2) == pytest.approx((2 * 0.2 + 4 * 0.25) / 6)


def test_a_score_on_a_bin_edge_falls_in_the_upper_bin():
    """Bins are [a, b) with the last one closed: 0.5 of two bins is in [0.5, 1], 1.0 in the last bin."""
    y = np.array([0, 1, 1])
    p = np.array([0.5, 0.3, 0.3])
    # upper bin {0.5}: conf 0.5, acc 0; lower bin {0.3, 0.3}: conf 0.3, acc 1 (in the lower bin, 0.5 would cancel)
    assert binned_ece(y, p, n_bins=2) == pytest.approx((0.5 + 2 * 0.7) / 3, rel=1e-12)
    y4, p4 = np.array([0, 1, 1, 0, 1]), np.array([0.25, 0.0, 0.75, 0.5, 1.0])
    # bins of width 1/4: {0.0}, {0.25}, {0.5}, {0.75, 1.0}
    by_hand = (1.0 + 0.25 + 0.5 + 2 * abs(0.875 - 1.0)) / 5
    assert binned_ece(y4, p4, n_bins=4) == pytest.approx(by_hand, rel=1e-12)


def test_quantile_bins_have_equal_mass():
    rng = np.random.RandomState(0)
    p = rng.beta(1, 5, 1000)
    y = (rng.uniform(size=1000) < p).astype(int)
    from sklearn_icml.metrics._binned_ece import binned_reliability

    _, _, weight = binned_reliability(p, y.astype(float), np.ones(1000), 10, "quantile")
    np.testing.assert_allclose(weight, 100, atol=1)  # equal mass up to the sample on an edge
    assert binned_ece(y, p, strategy="quantile", n_bins=10) != binned_ece(y, p, n_bins=10)


def test_logits_and_probabilities_agree():
    y, P = _digits_proba()
    L = np.log(np.clip(P, 1e-300, None))
    assert binned_ece(y, L, response="logits") == pytest.approx(binned_ece(y, P), abs=1e-9)


def test_classwise_binned_ece():
    y, P = _digits_proba()
    per_class = [binned_ece(y == c, P[:, c]) for c in range(10)]
    assert binned_ece(y, P, multiclass="classwise") == pytest.approx(np.mean(per_class))


def test_reliability_curve_of_a_calibrated_predictor_follows_the_diagonal():
    rng = np.random.RandomState(0)
    p = rng.uniform(0.02, 0.98, 20_000)
    y = rng.uniform(size=p.size) < p
    for noise in ("gaussian", "uniform"):
        prob_true, prob_pred = ls_reliability_curve(y, p, sigma=0.2, noise=noise, n_points=20)
        assert prob_true.shape == prob_pred.shape == (20,)
        assert np.all(np.diff(prob_pred) > 0)
        assert np.abs(prob_true - prob_pred).max() < 0.06


def test_reliability_curve_weights_equal_ls_ece():
    """The curve's mean distance to the diagonal (quantile points: equal mass) is the LS-ECE."""
    rng = np.random.RandomState(1)
    p = rng.uniform(0.05, 0.95, 3000)
    y = rng.uniform(size=p.size) < p ** 2
    prob_true, prob_pred = ls_reliability_curve(y, p, sigma=0.1, n_points=2000)
    assert np.mean(np.abs(prob_true - prob_pred)) == pytest.approx(ls_ece(y, p, sigma=0.1), rel=0.02)


def test_reliability_curve_adds_the_saturated_points():
    y = np.array([1, 0, 1, 1, 0, 0])
    p = np.array([1.0, 1.0, 0.6, 0.7, 0.3, 0.0])
    prob_true, prob_pred = ls_reliability_curve(y, p, n_points=10)
    assert prob_pred[-1] == 1.0 and prob_true[-1] == 0.5
    assert prob_pred[0] == 0.0 and prob_true[0] == 0.0
    assert len(prob_pred) == 12
