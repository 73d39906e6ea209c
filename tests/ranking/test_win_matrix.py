"""WinMatrixEstimator: the paper's inverse-probability win matrix, its CLT intervals and their coverage."""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.datasets import simulate_sampled_battles
from sklearn_icml.ranking import ActivePairSampler, WinMatrixEstimator


def _bt_truth(xi):
    return 1 / (1 + np.exp(-(xi[:, None] - xi[None, :])))


def test_per_pair_means_and_their_intervals_by_hand():
    X = np.array([["a", "b"]] * 4 + [["b", "a"]] * 2 + [["a", "c"]])
    y = np.array(["model_a", "model_a", "model_b", "tie", "model_a", "model_b", "model_b"])
    est = WinMatrixEstimator(confidence_level=0.9, items=["a", "b", "c", "d"]).fit(X, y)
    # a's results against b: 1, 1, 0, 0.5 (first four), 0 (b won), 1 (a won as second)
    h = np.array([1, 1, 0, 0.5, 0, 1])
    assert est.win_matrix_[0, 1] == pytest.approx(h.mean())
    assert est.win_matrix_[1, 0] == pytest.approx(1 - h.mean())
    se = np.sqrt(h.var() / 6)
    assert est.win_matrix_se_[0, 1] == pytest.approx(se)
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(est.win_matrix_intervals_[0, 1], [h.mean() - z * se, h.mean() + z * se])
    assert est.win_matrix_[0, 2] == 0 and est.win_matrix_[2, 0] == 1
    assert np.isnan(est.win_matrix_[0, 3]) and np.isnan(est.win_matrix_[2, 3]) and np.isnan(est.win_matrix_[1, 1])
    assert est.n_battles_.tolist() == [[0, 6, 1, 0], [6, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    assert est.n_total_ == 7 and not est.weighted_
    table = est.pair_table()
    assert len(table) == 4 and table[0]["item"] == "a" and table[0]["opponent"] == "b"


def test_inverse_probability_estimate_matches_the_definition():
    rng = np.random.RandomState(0)
    M, T = 4, 300
    pairs = [(i, j) for i in range(M) for j in range(i + 1, M)]
    X = np.array([pairs[k] for k in rng.randint(len(pairs), size=T)])
    flip = rng.rand(T) < 0.5
    X[flip] = X[flip][:, ::-1]
    y = rng.choice([0, 1, "tie"], size=T)
    p = rng.uniform(0.05, 0.5, size=T)
    est = WinMatrixEstimator().fit(X, np.asarray(y, dtype=object), sampling_proba=p)
    score = np.where(y == "1", 1.0, np.where(y == "0", 0.0, 0.5))  # first competitor's result (1 = first won)
    z = stats.norm.ppf(0.975)
    for i in range(M):
        for j in range(M):
            if i == j:
                continue
            # X_t = H_t 1{A_t = {i, j}} / P_t with H_t = i's result in battle t (paper Section 4.1)
            Xt = np.zeros(T)
            as_first = (X[:, 0] == i) & (X[:, 1] == j)
            as_second = (X[:, 0] == j) & (X[:, 1] == i)
            Xt[as_first] = score[as_first] / p[as_first]
            Xt[as_second] = (1 - score[as_second]) / p[as_second]
            theta = Xt.mean()
            sigma = np.mean((Xt - theta) ** 2)
            assert est.win_matrix_[i, j] == pytest.approx(theta)
            assert est.win_matrix_se_[i, j] == pytest.approx(np.sqrt(sigma / T))
            lo, hi = est.win_matrix_intervals_[i, j]
            assert lo == pytest.approx(max(theta - z * np.sqrt(sigma / T), 0.0))
            assert hi == pytest.approx(min(theta + z * np.sqrt(sigma / T), 1.0))
    assert est.weighted_


def test_uniform_probabilities_scale_the_pair_sums():
    # with P_t = 1 / K for all t the estimate is K * (wins on the pair) / T
    X = np.array([[0, 1], [1, 0], [0, 2], [1, 2], [0, 1], [2, 1]])
    y = np.array([1, 1, 0, 1, 0, 0])
    est = WinMatrixEstimator().fit(X, y, sampling_proba=np.full(6, 1 / 3))
    wins_0_over_1 = 1 + 0 + 0  # battles 0, 1, 4: 0 won, 1 won, 1 won
    assert est.win_matrix_[0, 1] == pytest.approx(3 * wins_0_over_1 / 6)
    assert est.win_matrix_[1, 0] == pytest.approx(3 * 2 / 6)


def test_errors_name_the_estimator_and_the_value():
    X, y = np.array([[0, 1], [1, 2]]), np.array([1, 0])
    with pytest.raises(ValueError, match="WinMatrixEstimator: sampling_proba"):
        WinMatrixEstimator().fit(X, y, sampling_proba=[0.5, 0.0])
    with pytest.raises(ValueError, match="sampling_proba"):
        WinMatrixEstimator().fit(X, y, sampling_proba=[0.5])
    with pytest.raises(ValueError, match="itself"):
        WinMatrixEstimator().fit(np.array([[0, 0], [0, 1]]), np.array([1, 0]))
    with pytest.raises(ValueError, match="confidence_level"):
        WinMatrixEstimator(confidence_level=1.5).fit(X, y)
    with pytest.raises(AttributeError, match="not fitted"):
        WinMatrixEstimator().pair_table()
    X_copy, y_copy = X.copy(), y.copy()
    WinMatrixEstimator().fit(X, y, sampling_proba=np.array([0.5, 0.5]))
    np.testing.assert_array_equal(X, X_copy), np.testing.assert_array_equal(y, y_copy)


def _active_trial(seed, M, T, batch=100, uniform_mix=0.1, weighted=True):
    """One simulated arena sampled by ActivePairSampler: the fraction of true win rates (i < j) covered."""
    rng = np.random.RandomState(seed)
    xi = rng.standard_normal(M)
    sampler = ActivePairSampler(items=np.arange(M), uniform_mix=uniform_mix, random_state=seed).fit()
    X, y, p = simulate_sampled_battles(sampler, xi, T, batch_size=batch, random_state=rng)
    est = WinMatrixEstimator(items=np.arange(M)).fit(X, y, sampling_proba=p if weighted else None)
    iu = np.triu_indices(M, 1)
    truth = _bt_truth(xi)[iu]
    lo, hi = est.win_matrix_intervals_[..., 0][iu], est.win_matrix_intervals_[..., 1][iu]
    return np.mean((lo <= truth) & (truth <= hi))


def test_coverage_under_active_sampling_small():
    # 80 arenas x 10 pairs, 2000 actively sampled votes each: nominal 0.95
    coverage = np.mean([_active_trial(seed, M=5, T=2000) for seed in range(80)])
    assert 0.92 <= coverage <= 0.97, coverage


def test_coverage_of_the_per_pair_means_under_fixed_unequal_sampling():
    rng = np.random.RandomState(1)
    M = 5
    iu = np.triu_indices(M, 1)
    hits = []
    for _ in range(200):
        xi = rng.standard_normal(M)
        q = rng.dirichlet(np.full(len(iu[0]), 5.0))
        k = rng.choice(len(q), size=1500, p=q)
        X = np.column_stack([iu[0][k], iu[1][k]])
        y = (rng.rand(len(k)) < _bt_truth(xi)[X[:, 0], X[:, 1]]).astype(int)
        est = WinMatrixEstimator(items=np.arange(M)).fit(X, y)
        lo, hi = est.win_matrix_intervals_[..., 0][iu], est.win_matrix_intervals_[..., 1][iu]
        hits.append(np.mean((lo <= _bt_truth(xi)[iu]) & (_bt_truth(xi)[iu] <= hi)))
    assert 0.92 <= np.mean(hits) <= 0.97, np.mean(hits)


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [True, False])
def test_coverage_under_active_sampling_large(weighted):
    # 200 arenas x 28 pairs, 5000 votes each
    coverage = np.mean([_active_trial(seed, M=8, T=5000, weighted=weighted) for seed in range(200)])
    assert 0.92 <= coverage <= 0.97, coverage


def test_simulate_sampled_battles_serves_every_battle_and_follows_the_scores():
    sampler = ActivePairSampler(items=np.arange(3), uniform_mix=1.0, random_state=0).fit()
    X, y, p = simulate_sampled_battles(sampler, [30.0, 0.0, -30.0], 250, batch_size=100, random_state=0)
    assert X.shape == (250, 2) and y.shape == p.shape == (250,)  # the last batch holds the remaining 50
    stronger_first = X[:, 0] < X[:, 1]  # scores decrease with the code, so the lower code is the stronger
    np.testing.assert_array_equal(y, stronger_first.astype(int))  # a 30-point gap decides every battle
    with pytest.raises(ValueError, match="sampler"):
        simulate_sampled_battles(object(), [0.0, 1.0], 10)
