"""Ties as an outcome class of BradleyTerryRanker: Davidson's tie model checked against its definition,
recovered from simulated battles, and used by scikit-learn's multiclass scorers in a grid search."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_icml.ranking import BradleyTerryRanker


def _davidson_battles(n, M=6, nu=0.8, seed=0, labels=("tie",), shares=(1.0,)):
    """Battles from Davidson's model as he wrote it: P(i beats j) = pi_i / (pi_i + pi_j + nu sqrt(pi_i pi_j))."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(scale=0.8, size=M)
    a = rng.integers(M, size=n)
    b = (a + rng.integers(1, M, size=n)) % M
    pi_a, pi_b = np.exp(scores[a]), np.exp(scores[b])
    den = pi_a + pi_b + nu * np.sqrt(pi_a * pi_b)
    u = rng.random(n)
    y = np.where(u < pi_a / den, "model_a", np.where(u < (pi_a + pi_b) / den, "model_b", "tie")).astype(object)
    tied = y == "tie"
    y[tied] = rng.choice(np.asarray(labels, dtype=object), size=int(tied.sum()), p=shares)
    return np.column_stack([a, b]), y, scores


def _loglik(log_nu, ranker, X, y):
    """Davidson's log-likelihood at the fitted scores, from the definition (pi = exp(score)), ties pooled."""
    pi_a, pi_b = np.exp(ranker.scores_[X[:, 0]]), np.exp(ranker.scores_[X[:, 1]])
    tie = np.exp(log_nu) * np.sqrt(pi_a * pi_b)
    den = pi_a + pi_b + tie
    p = np.where(y == "model_a", pi_a, np.where(y == "model_b", pi_b, tie)) / den
    return float(np.log(p).sum())


@pytest.fixture(scope="module")
def battles():
    return _davidson_battles(20000)


def test_tie_parameter_maximises_davidsons_likelihood_at_the_ratings(battles):
    X, y, _ = battles
    r = BradleyTerryRanker().fit(X, y)
    assert list(r.classes_) == ["model_a", "model_b", "tie"] and list(r.tie_classes_) == ["tie"]
    # the derivative in log(nu), by central finite differences of the definition, vanishes at the fit
    h = 1e-4
    slope = (_loglik(r.tie_log_nu_ + h, r, X, y) - _loglik(r.tie_log_nu_ - h, r, X, y)) / (2 * h)
    curvature = (_loglik(r.tie_log_nu_ + h, r, X, y) - 2 * _loglik(r.tie_log_nu_, r, X, y)
                 + _loglik(r.tie_log_nu_ - h, r, X, y)) / h ** 2
    assert curvature < -100  # a clear maximum: thousands of battles
    assert abs(slope) < 1e-6 * abs(curvature)
    # an independent brute-force fit of the same one-dimensional likelihood
    brute = minimize_scalar(lambda t: -_loglik(t, r, X, y), bounds=(-5.0, 5.0), method="bounded",
                            options={"xatol": 1e-10})
    assert r.tie_log_nu_ == pytest.approx(brute.x, abs=1e-6)


def test_predict_proba_is_davidsons_model_and_recovers_nu(battles):
    X, y, scores = battles
    r = BradleyTerryRanker().fit(X, y)
    P = r.predict_proba(X[:50])
    pi_a, pi_b = np.exp(r.scores_[X[:50, 0]]), np.exp(r.scores_[X[:50, 1]])
    nu = np.exp(r.tie_log_nu_)
    den = pi_a + pi_b + nu * np.sqrt(pi_a * pi_b)
    np.testing.assert_allclose(P, np.column_stack([pi_a, pi_b, nu * np.sqrt(pi_a * pi_b)]) / den[:, None],
                               rtol=1e-12)
    # simulated with nu = 0.8: the fit at the (half-win) ratings lands near it
    assert np.exp(r.tie_log_nu_) == pytest.approx(0.8, rel=0.05)
    assert np.corrcoef(r.scores_, scores)[0, 1] > 0.99
    # the most probable class; ties are predicted where they are the likeliest outcome
    np.testing.assert_array_equal(r.predict(X[:50]), r.classes_[P.argmax(axis=1)])
    level = np.array([[0, 0]])  # a competitor against itself: P(tie) = nu / (2 + nu)
    assert r.predict_proba(level)[0, 2] == pytest.approx(nu / (2 + nu), rel=1e-12)


def test_several_tie_labels_share_the_tie_probability():
    X, y, _ = _davidson_battles(6000, labels=("tie", "tie (bothbad)"), shares=(0.3, 0.7), seed=1)
    r = BradleyTerryRanker().fit(X, y)
    assert list(r.classes_) == ["model_a", "model_b", "tie", "tie (bothbad)"]
    counts = np.array([(y == "tie").sum(), (y == "tie (bothbad)").sum()], dtype=float)
    np.testing.assert_allclose(r.tie_shares_, counts / counts.sum(), rtol=1e-12)
    P = r.predict_proba(X[:20])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(P[:, 3] / P[:, 2], counts[1] / counts[0], rtol=1e-12)
    pooled = BradleyTerryRanker().fit(X, np.where(np.isin(y, ["tie", "tie (bothbad)"]), "tie", y))
    np.testing.assert_allclose(P[:, 2] + P[:, 3], pooled.predict_proba(X[:20])[:, 2], rtol=1e-10)


def test_without_ties_the_classifier_stays_binary():
    X, y, _ = _davidson_battles(2000, nu=0.0)
    r = BradleyTerryRanker().fit(X, y)
    assert list(r.classes_) == ["model_a", "model_b"] and r.tie_log_nu_ is None and len(r.tie_classes_) == 0
    P = r.predict_proba(X[:5])
    np.testing.assert_allclose(P[:, 1], 1 / (1 + np.exp(-r.decision_function(X[:5]))), rtol=1e-12)
    dropped = BradleyTerryRanker(ties="drop").fit(*_davidson_battles(2000)[:2])
    assert list(dropped.classes_) == ["model_a", "model_b"]


def test_grid_search_with_multiclass_scorers(battles):
    X, y, _ = battles
    X, y = X[:3000], y[:3000]
    search = GridSearchCV(BradleyTerryRanker(ci_method=None), {"alpha": [0.0, 10.0]},
                          scoring=["neg_log_loss", "roc_auc_ovr", "accuracy"], refit="neg_log_loss", cv=KFold(3))
    search.fit(X, y)
    for name in ("neg_log_loss", "roc_auc_ovr", "accuracy"):
        assert np.all(np.isfinite(search.cv_results_[f"mean_test_{name}"])), name
    assert 0.5 < search.cv_results_["mean_test_roc_auc_ovr"].max() < 1
    # the direct computation on the first split of the first candidate
    train, test = next(KFold(3).split(X))
    fitted = BradleyTerryRanker(alpha=0.0, ci_method=None).fit(X[train], y[train])
    assert search.cv_results_["split0_test_neg_log_loss"][0] == pytest.approx(
        -log_loss(y[test], fitted.predict_proba(X[test]), labels=fitted.classes_), rel=1e-12)
    assert search.cv_results_["split0_test_accuracy"][0] == accuracy_score(y[test], fitted.predict(X[test]))


def test_dask_battles_give_the_same_tie_model():
    da = pytest.importorskip("dask.array")
    X, y, _ = _davidson_battles(3000, labels=("tie", "tie (bothbad)"), shares=(0.4, 0.6), seed=2)
    w = np.random.default_rng(3).integers(1, 4, size=len(y)).astype(float)
    ref = BradleyTerryRanker(ci_method=None).fit(X, y, sample_weight=w)
    got = BradleyTerryRanker(ci_method=None).fit(da.from_array(X, chunks=700), da.from_array(y, chunks=700),
                                                 sample_weight=da.from_array(w, chunks=700))
    assert list(got.classes_) == list(ref.classes_)
    np.testing.assert_allclose(got.tie_shares_, ref.tie_shares_, rtol=1e-12)
    np.testing.assert_allclose(got.predict_proba(X[:30]), ref.predict_proba(X[:30]), rtol=1e-9)
