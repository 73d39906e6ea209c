"""BradleyTerryRanker against its definitions written battle by battle: the penalized objective's stationarity
and the sandwich covariance with frequency and inverse-probability weights (no peer package needed)."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_arena_battles
from sklearn_icml.ranking import BradleyTerryRanker


def _data(n=400, M=5, seed=0, n_covariates=0):
    X, y = make_arena_battles(n_battles=n, n_competitors=M, string_ids=False, tie_proba=0.15,
                              n_covariates=n_covariates, random_state=seed)
    return X, y


def _design(ranker, X):
    """One row x_t = (e_first - e_second, z_t) per battle, and the first competitor's result y_t."""
    M = len(ranker.items_)
    codes = np.searchsorted(ranker.items_, X[:, :2].astype(ranker.items_.dtype))
    D = np.zeros((len(X), M + X.shape[1] - 2))
    D[np.arange(len(X)), codes[:, 0]] += 1.0
    D[np.arange(len(X)), codes[:, 1]] -= 1.0
    D[:, M:] = X[:, 2:].astype(float)
    return D


def _result(y):
    return np.where(y == "model_a", 1.0, np.where(y == "model_b", 0.0, 0.5))


@pytest.mark.parametrize("n_covariates", [0, 2])
def test_penalized_fit_is_a_stationary_point_of_the_documented_objective(n_covariates):
    """sum_t n_t [log(1 + exp(eta_t)) - y_t eta_t] + alpha ||theta||^2, differentiated by central differences."""
    X, y = _data(n_covariates=n_covariates)
    w = np.random.default_rng(1).integers(1, 4, size=len(y)).astype(float)
    alpha = 3.0
    r = BradleyTerryRanker(alpha=alpha, ci_method=None).fit(X, y, sample_weight=w)
    D, s = _design(r, X), _result(y)
    theta = np.concatenate([r.scores_, r.covariate_coef_])

    def objective(t):
        eta = D @ t
        return float(np.dot(w, np.logaddexp(0.0, eta) - s * eta) + alpha * np.dot(t, t))

    h = 1e-5
    grad = np.array([(objective(theta + h * e) - objective(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])
    penalty_grad = 2 * alpha * np.abs(theta).max()  # the size of the penalty's pull at the fit
    assert penalty_grad > 0.1  # the penalty matters here: a wrong penalty gradient moves the fit visibly
    assert np.abs(grad).max() < 1e-5 * penalty_grad


def test_sandwich_covariance_from_the_definition_with_weights():
    """H^+ G H^+ with H = sum_t f_t w_t p_t (1 - p_t) x_t x_t^T and G = sum_t f_t w_t^2 (y_t - p_t)^2 x_t x_t^T:
    f_t the frequency weight (f identical battles), w_t the normalised inverse sampling probability."""
    X, y = _data(n=600, seed=2)
    rng = np.random.default_rng(3)
    f = rng.integers(1, 4, size=len(y)).astype(float)
    prob = rng.uniform(0.2, 1.0, size=len(y))
    r = BradleyTerryRanker().fit(X, y, sample_weight=f, sampling_proba=prob)
    D, s = _design(r, X), _result(y)
    w = (1 / prob) / (np.dot(f, 1 / prob) / f.sum())
    p = 1 / (1 + np.exp(-(D @ r.scores_)))
    H = (D * (f * w * p * (1 - p))[:, None]).T @ D
    G = (D * (f * w ** 2 * (s - p) ** 2)[:, None]).T @ D
    Hp = np.linalg.pinv(H)
    V = Hp @ G @ Hp
    np.testing.assert_allclose(r.covariance_, V, rtol=1e-8, atol=1e-12 * np.abs(V).max())
    # the frequency weight is a count: the same as repeating the battles
    rep = BradleyTerryRanker().fit(np.repeat(X, f.astype(int), axis=0), np.repeat(y, f.astype(int)),
                                   sampling_proba=np.repeat(prob, f.astype(int)))
    np.testing.assert_allclose(rep.covariance_, r.covariance_, rtol=1e-8, atol=1e-12 * np.abs(V).max())
