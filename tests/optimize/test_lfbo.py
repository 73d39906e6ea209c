"""likelihood_free_training_set: the threshold, the labels, the EI-type weights and their argmax."""

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingClassifier

from sklearn_icml.optimize import likelihood_free_training_set
from sklearn_icml.utils._sklearn_private import InvalidParameterError


def test_threshold_is_the_quantile_of_the_distinct_values():
    y = np.array([3.0, 1.0, 1.0, 1.0, 0.0, 2.0])  # distinct 0, 1, 2, 3
    X = np.arange(6.0)[:, None]
    _, labels, _, tau = likelihood_free_training_set(X, y, gamma=0.5, return_threshold=True)
    assert tau == pytest.approx(np.quantile([0.0, 1.0, 2.0, 3.0], 0.5))
    assert tau != pytest.approx(np.quantile(y, 0.5))  # repeated values do not pull the threshold
    assert labels.tolist() == [0] * 6 + [1] * 4  # the three 1.0 and the 0.0 lie below tau = 1.5


def test_labels_weights_and_class_balance():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(30, 2))
    y = rng.normal(size=30)
    X_train, labels, w, tau = likelihood_free_training_set(X, y, return_threshold=True)
    below = np.flatnonzero(y < tau)
    np.testing.assert_array_equal(X_train[:30], X)
    np.testing.assert_array_equal(X_train[30:], X[below])
    assert w.mean() == pytest.approx(1.0)
    assert w[labels == 1].sum() == pytest.approx(w[labels == 0].sum())  # balanced classes
    np.testing.assert_allclose(w[labels == 0], w[0])  # negatives share one weight
    # positives weighted by the improvement tau - y
    np.testing.assert_allclose(w[labels == 1] / w[labels == 1].sum(), (tau - y[below]) / (tau - y[below]).sum())


def test_pi_weights_are_unit():
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    _, labels, w = likelihood_free_training_set(np.zeros((5, 1)), y, weight_type="pi")
    np.testing.assert_array_equal(w, np.ones(labels.size))


def test_single_value_gives_only_negatives():
    X_train, labels, w = likelihood_free_training_set(np.zeros((3, 1)), [2.0, 2.0, 2.0])
    assert labels.tolist() == [0, 0, 0] and np.all(w == 1)


def test_weighted_odds_are_the_expected_improvement_and_peak_at_the_minimum():
    # noise-free 1-D quadratic: the optimal classifier's odds at x are w1(x) / w0(x), proportional to max(tau - y, 0)
    x = np.linspace(0, 1, 201)
    y = (x - 0.3) ** 2
    _, labels, w, tau = likelihood_free_training_set(x[:, None], y, return_threshold=True)
    odds = np.zeros_like(x)
    odds[y < tau] = w[labels == 1] / w[labels == 0][0]
    ei = np.maximum(tau - y, 0)
    np.testing.assert_allclose(odds / odds.max(), ei / ei.max(), atol=1e-12)
    assert x[np.argmax(odds)] == pytest.approx(0.3)


def test_a_classifier_trained_on_the_set_maximises_near_the_ei_argmax():
    rng = np.random.RandomState(0)
    x = rng.uniform(size=(120, 1))
    y = (x[:, 0] - 0.3) ** 2
    X_train, labels, w = likelihood_free_training_set(x, y)
    clf = GradientBoostingClassifier(n_estimators=60, max_depth=2, random_state=0)
    clf.fit(X_train, labels, sample_weight=w)
    grid = np.linspace(0, 1, 501)[:, None]
    p = clf.predict_proba(grid)[:, 1]
    best = grid[p >= p.max() - 1e-9, 0]
    assert abs(best.mean() - 0.3) < 0.05


def test_bad_input():
    with pytest.raises(ValueError, match="0 sample"):
        likelihood_free_training_set(np.zeros((0, 1)), np.zeros(0))
    with pytest.raises(ValueError, match="NaN or infinite"):
        likelihood_free_training_set(np.zeros((2, 1)), [0.0, np.nan])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        likelihood_free_training_set(np.zeros((2, 1)), [0.0, 1.0, 2.0])
    with pytest.raises(InvalidParameterError, match="gamma"):
        likelihood_free_training_set(np.zeros((2, 1)), [0.0, 1.0], gamma=1.0)
    with pytest.raises(InvalidParameterError, match="weight_type"):
        likelihood_free_training_set(np.zeros((2, 1)), [0.0, 1.0], weight_type="ucb")


def test_inputs_are_not_modified():
    X = np.arange(5.0)[:, None]
    y = np.array([4.0, 3.0, 2.0, 1.0, 0.0])
    X0, y0 = X.copy(), y.copy()
    likelihood_free_training_set(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
