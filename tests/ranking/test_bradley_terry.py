"""BradleyTerryRanker: the paper's estimator, its intervals, ranks, reweighting, and its data contract."""

import math
import warnings

import joblib
import numpy as np
import pytest
from scipy import stats
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_arena_battles
from sklearn_icml.ranking import BradleyTerryRanker

ELO = 400 / math.log(10)


def _battles(n=4000, M=8, seed=0, **kw):
    return make_arena_battles(n_battles=n, n_competitors=M, string_ids=False, return_truth=True, random_state=seed,
                              **kw)


def test_recovers_true_scores_within_their_intervals():
    X, y, truth = _battles(n=20000, M=10, tie_proba=0.0)
    r = BradleyTerryRanker().fit(X, y)
    se = np.sqrt(np.diag(r.covariance_))[:10]
    assert np.all(np.abs(r.scores_ - truth["scores"]) < 4 * se)
    np.testing.assert_allclose(r.ratings_, ELO * r.scores_ + 1000)
    assert abs(r.scores_.mean()) < 1e-12 and abs(r.ratings_.mean() - 1000) < 1e-9
    assert r.n_iter_ < 15 and r.mle_exists_


def test_aggregated_counts_equal_repeated_and_shuffled_battles():
    X, y, _ = _battles(n=600, M=6)
    rng = np.random.RandomState(0)
    w = rng.randint(1, 4, size=len(y))
    weighted = BradleyTerryRanker().fit(X, y, sample_weight=w)
    repeated = BradleyTerryRanker().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    order = rng.permutation(len(y))
    shuffled = BradleyTerryRanker().fit(X[order], y[order], sample_weight=w[order])
    np.testing.assert_allclose(weighted.ratings_, repeated.ratings_, atol=1e-9)
    np.testing.assert_allclose(weighted.ratings_, shuffled.ratings_, atol=1e-9)
    np.testing.assert_allclose(weighted.rating_intervals_, repeated.rating_intervals_, atol=1e-9)
    np.testing.assert_allclose(weighted.n_battles_, repeated.n_battles_)


def test_ties_half_and_drop():
    X, y, _ = _battles(n=3000, M=6, tie_proba=0.3)
    drop = BradleyTerryRanker(ties="drop").fit(X, y)
    decisive = y != "tie"
    np.testing.assert_allclose(drop.ratings_, BradleyTerryRanker().fit(X[decisive], y[decisive]).ratings_, atol=1e-9)
    half = BradleyTerryRanker(ties="half").fit(X, y)
    # ties at a constant rate pull the half-win scores towards each other
    assert np.ptp(half.scores_) < np.ptp(drop.scores_)
    # a pair that only ties ends up level
    Xt = np.array([["a", "b"], ["b", "c"], ["c", "b"], ["a", "c"], ["c", "a"]], dtype=object)
    yt = np.array(["tie", "model_a", "model_a", "model_a", "model_a"])
    r = BradleyTerryRanker().fit(Xt, yt)
    assert r.ratings_[0] == pytest.approx(r.ratings_[1], abs=1e-8)


def test_custom_tie_labels_and_numeric_outcomes():
    X, y, _ = _battles(n=1500, M=5, tie_proba=0.2)
    code = np.where(y == "model_a", 1, np.where(y == "model_b", 0, 2))
    ref = BradleyTerryRanker().fit(X, y)
    r = BradleyTerryRanker(tie_labels=(2,)).fit(X, code)
    np.testing.assert_allclose(r.ratings_, ref.ratings_, atol=1e-9)
    assert r.first_wins_label_ == 1 and list(r.classes_) == [0, 1, 2] and list(r.tie_classes_) == [2]
    # the tie class is the same model under either coding: the columns of model_b, model_a, tie
    np.testing.assert_allclose(r.predict_proba(X), ref.predict_proba(X)[:, [1, 0, 2]], rtol=1e-9)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        BradleyTerryRanker().fit(X, code)  # 2 is not a tie label by default


def test_orientation_of_classes_and_probabilities():
    X, y, _ = _battles(n=2000, M=5, tie_proba=0.0)
    r = BradleyTerryRanker().fit(X, y)
    assert list(r.classes_) == ["model_a", "model_b"] and r.first_wins_label_ == "model_a"
    codes = np.searchsorted(r.items_, X[:5])
    eta = r.scores_[codes[:, 0]] - r.scores_[codes[:, 1]]
    np.testing.assert_allclose(r.predict_proba(X[:5])[:, 0], 1 / (1 + np.exp(-eta)))
    np.testing.assert_allclose(r.decision_function(X[:5]), -eta)  # positive favours classes_[1] = model_b
    # numeric labels: 1 (the positive class) means that the first competitor won
    r01 = BradleyTerryRanker().fit(X, (y == "model_a").astype(int))
    np.testing.assert_allclose(r01.ratings_, r.ratings_, atol=1e-9)
    np.testing.assert_allclose(r01.decision_function(X[:5]), eta)


def test_winner_loser_rows_need_explicit_win_labels():
    X, y, _ = _battles(n=2000, M=5, tie_proba=0.0)
    winner_first = np.where((y == "model_a")[:, None], X, X[:, ::-1])
    ones = np.ones(len(y), dtype=int)
    with pytest.raises(ValueError, match="1 class"):
        BradleyTerryRanker().fit(winner_first, ones)
    r = BradleyTerryRanker(win_labels=(1, 0)).fit(winner_first, ones)
    np.testing.assert_allclose(r.ratings_, BradleyTerryRanker().fit(X, y).ratings_, atol=1e-9)
    assert list(r.classes_) == [0, 1]


@pytest.mark.parametrize("kind", ["int", "str", "object_mixed", "frame"])
def test_id_types_give_the_same_ratings(kind):
    X, y, _ = _battles(n=1500, M=6)
    ref = BradleyTerryRanker().fit(X, y)
    if kind == "int":
        Xk = X.astype(np.int32)
    elif kind == "str":
        Xk = np.array([f"m{i}" for i in range(6)])[X]
    elif kind == "object_mixed":  # ids 0..2 as ints, 3..5 as strings: orderable by (type, repr)
        names = np.array([0, 1, 2, "x3", "x4", "x5"], dtype=object)
        Xk = names[X]
    else:
        pd = pytest.importorskip("pandas")
        Xk = pd.DataFrame({"model_a": np.array([f"m{i}" for i in range(6)])[X[:, 0]],
                           "model_b": np.array([f"m{i}" for i in range(6)])[X[:, 1]]})
    r = BradleyTerryRanker().fit(Xk, y)
    order = np.argsort([str(v) if not isinstance(v, (int, np.integer)) else f"{v:05d}" for v in r.items_])
    np.testing.assert_allclose(np.sort(r.ratings_), np.sort(ref.ratings_), atol=1e-9)
    np.testing.assert_allclose(r.predict_proba(Xk), ref.predict_proba(X), atol=1e-9)
    assert len(order) == 6
    if kind == "frame":
        assert list(r.feature_names_in_) == ["model_a", "model_b"]


def test_list_input_with_strings_and_numbers_keeps_numbers():
    X = [["a", "b", 0.5], ["b", "a", -0.5], ["a", "b", 1.0], ["b", "a", 0.0]]
    y = ["model_a", "model_a", "model_b", "model_b"]
    r = BradleyTerryRanker(alpha=0.1).fit(X, y)
    assert r.covariate_coef_.shape == (1,) and np.isfinite(r.covariate_coef_).all()
    assert list(r.items_) == ["a", "b"]


def test_unknown_competitors_are_average_warn_or_error():
    X, y, _ = _battles(n=1500, M=6)
    r = BradleyTerryRanker().fit(X, y)
    new = np.array([[99, 0], [1, 99]])
    d = r.decision_function(new)
    np.testing.assert_allclose(-d, [0 - r.scores_[0], r.scores_[1] - 0])  # unknown scores 0 = mean score
    with pytest.warns(UserWarning, match="not seen in fit"):
        r.set_params(handle_unknown="warn").predict(new)
    with pytest.raises(ValueError, match="99"):
        r.set_params(handle_unknown="error").predict(new)
    # with an anchor, an unknown competitor is still the average one
    a = BradleyTerryRanker(anchor=(3, 1114.0)).fit(X, y)
    np.testing.assert_allclose(a.decision_function(new), d, atol=1e-12)


def test_anchor_shifts_ratings_and_widens_nothing_but_the_gap():
    X, y, _ = _battles(n=3000, M=6)
    free = BradleyTerryRanker().fit(X, y)
    anchored = BradleyTerryRanker(anchor=(2, 1114.0)).fit(X, y)
    assert anchored.ratings_[2] == pytest.approx(1114.0)
    np.testing.assert_allclose(np.diff(anchored.ratings_), np.diff(free.ratings_), atol=1e-9)
    width = np.diff(anchored.rating_intervals_, axis=1).ravel()
    assert width[2] == pytest.approx(0.0, abs=1e-9)
    # the others' intervals are now intervals for the gap to the anchor: var(x_m - x_2)
    V = free.covariance_[:6, :6]
    gap_se = np.sqrt(V.diagonal() + V[2, 2] - 2 * V[:, 2])
    np.testing.assert_allclose(width, 2 * stats.norm.ppf(0.975) * ELO * gap_se, rtol=1e-9)
    with pytest.raises(ValueError, match="anchor competitor 42"):
        BradleyTerryRanker(anchor=(42, 1000.0)).fit(X, y)


def test_style_covariates_recover_their_effect():
    X, y, truth = _battles(n=20000, M=6, tie_proba=0.0, n_covariates=2)
    r = BradleyTerryRanker().fit(X, y)
    se = np.sqrt(np.diag(r.covariance_))
    np.testing.assert_array_less(np.abs(r.covariate_coef_ - truth["covariate_coef"]), 4 * se[6:])
    np.testing.assert_array_less(np.abs(r.scores_ - truth["scores"]), 4 * se[:6])
    assert r.covariance_.shape == (8, 8)


def test_style_control_removes_a_confounded_advantage():
    # competitor 0 is no stronger, but writes longer answers; voters like length
    rng = np.random.RandomState(0)
    n, M = 20000, 5
    a = rng.randint(M, size=n)
    b = (a + 1 + rng.randint(M - 1, size=n)) % M
    length = rng.randn(n) + 1.5 * ((a == 0).astype(float) - (b == 0))
    first = rng.rand(n) < 1 / (1 + np.exp(-0.8 * length))
    y = first.astype(int)
    plain = BradleyTerryRanker().fit(np.column_stack([a, b]), y)
    styled = BradleyTerryRanker().fit(np.column_stack([a, b, length]), y)
    assert plain.scores_[0] > 0.5
    assert abs(styled.scores_[0]) < 0.1 and styled.covariate_coef_[0] == pytest.approx(0.8, abs=0.05)


def test_penalty_shrinks_and_stays_finite_on_degenerate_graphs():
    X, y, _ = _battles(n=800, M=6)
    norms = [np.linalg.norm(BradleyTerryRanker(alpha=alpha).fit(X, y).scores_) for alpha in (0, 1, 10, 100)]
    assert norms == sorted(norms, reverse=True)
    # a competitor that never loses, two disconnected groups, one battle
    undefeated = (np.array([["a", "b"], ["a", "c"], ["b", "c"], ["c", "b"]]), np.array(["model_a"] * 4))
    disconnected = (np.array([["a", "b"], ["b", "a"], ["c", "d"], ["d", "c"]]), np.array(["model_a"] * 4))
    one = (np.array([["a", "b"]]), np.array(["model_a"]))
    for (Xd, yd), match in [(undefeated, "never lose"), (disconnected, "disconnected"), (one, "never lose")]:
        kw = {"win_labels": ("model_a", "model_b")}
        with pytest.raises(ValueError, match=match):
            BradleyTerryRanker(**kw).fit(Xd, yd)
        r = BradleyTerryRanker(alpha=1.0, **kw).fit(Xd, yd)
        assert np.all(np.isfinite(r.ratings_)) and np.all(np.isfinite(r.rating_intervals_)) and not r.mle_exists_
    # the disconnected groups are each centred by the penalty: mean 0 per group
    r = BradleyTerryRanker(alpha=1.0, win_labels=("model_a", "model_b")).fit(*disconnected)
    assert r.scores_[:2].sum() == pytest.approx(0, abs=1e-9) and r.scores_[2:].sum() == pytest.approx(0, abs=1e-9)


def test_tiny_penalty_on_an_undefeated_competitor_warns():
    X = np.array([["a", "b"]] * 50 + [["b", "c"], ["c", "b"]] * 10)
    y = np.array(["model_a"] * 70)
    with pytest.warns(UserWarning, match="penalty alone holds"):
        BradleyTerryRanker(alpha=1e-8).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BradleyTerryRanker(alpha=1.0).fit(X, y)


def test_self_battles_are_refused_with_their_rows():
    """A row that pits a competitor against itself is no comparison: refused, the estimator and the rows named,
    with or without covariates; zero-weight rows are not fitted and so not refused."""
    X, y, _ = _battles(n=200, M=5)
    rows = [3, 150]
    Xs = X.copy()
    Xs[rows, 1] = Xs[rows, 0]
    for data in (Xs, np.column_stack([Xs, np.random.RandomState(0).randn(len(Xs))])):
        with pytest.raises(ValueError, match=r"BradleyTerryRanker: .*2 row\(s\) of X pit a competitor against "
                                             r"itself \(row\(s\) 3, 150"):
            BradleyTerryRanker().fit(data, y)
    weight = np.ones(len(X))
    weight[rows] = 0.0
    fitted = BradleyTerryRanker().fit(Xs, y, sample_weight=weight)
    keep = weight > 0
    np.testing.assert_allclose(fitted.ratings_, BradleyTerryRanker().fit(X[keep], y[keep]).ratings_, atol=1e-9)


def test_sandwich_coverage_in_simulation():
    """Paper Fig. 6 setting in small: 95 % sandwich intervals cover the true scores 92-97 % of the time."""
    hits, joint_sim = [], []
    for trial in range(120):
        X, y, truth = _battles(n=3000, M=10, seed=100 + trial, tie_proba=0.0)
        true = ELO * truth["scores"] + 1000
        r = BradleyTerryRanker().fit(X, y)
        lo, hi = r.rating_intervals_.T
        hits.append((lo <= true) & (true <= hi))
        lo, hi = BradleyTerryRanker(simultaneous=True).fit(X, y).rating_intervals_.T
        joint_sim.append(np.all((lo <= true) & (true <= hi)))
    coverage = np.mean(hits)
    assert 0.92 <= coverage <= 0.97, coverage
    assert np.mean(joint_sim) >= 0.95  # simultaneous intervals: all ten at once
    assert np.mean(np.all(hits, axis=1)) < 0.8  # per-coordinate ones are not simultaneous


def test_simultaneous_intervals_use_the_chi_square_projection():
    X, y, _ = _battles(n=2000, M=7)
    a = BradleyTerryRanker().fit(X, y)
    b = BradleyTerryRanker(simultaneous=True, confidence_level=0.9).fit(X, y)
    ratio = np.diff(b.rating_intervals_, axis=1) / np.diff(a.rating_intervals_, axis=1)
    np.testing.assert_allclose(ratio, math.sqrt(stats.chi2.ppf(0.9, 6)) / stats.norm.ppf(0.975))


def test_approximate_ranks_follow_the_intervals():
    X, y, _ = _battles(n=3000, M=8, score_scale=2.0)
    r = BradleyTerryRanker().fit(X, y)
    lo, hi = r.rating_intervals_.T
    expected = [1 + sum(lo[j] > hi[i] for j in range(8)) for i in range(8)]
    assert r.ranks_.tolist() == expected
    best = np.argmax(r.ratings_)
    assert r.ranks_[best] == 1 and r.ranks_.max() > 1
    board = r.leaderboard()
    assert list(board.dtype.names) == ["item", "rating", "lower", "upper", "rank", "n_battles"]
    assert np.all(np.diff(board["rating"]) <= 0) and board["item"][0] == r.items_[best]
    assert np.all(board["lower"] <= board["rating"]) and np.all(board["rating"] <= board["upper"])


def test_leaderboard_as_frame():
    pd = pytest.importorskip("pandas")
    X, y = make_arena_battles(n_battles=500, n_competitors=4, random_state=0)
    board = BradleyTerryRanker().fit(X, y).leaderboard(as_frame=True)
    assert isinstance(board, pd.DataFrame) and board.shape == (4, 6)
    assert board["item"].iloc[0].startswith("model-")


def test_bootstrap_intervals_are_reproducible_parallel_and_close_to_sandwich():
    X, y, _ = _battles(n=5000, M=6)
    kw = dict(ci_method="bootstrap", n_bootstrap=60, random_state=0)
    seq = BradleyTerryRanker(**kw).fit(X, y)
    with joblib.parallel_config(backend="threading"):  # same chunks as worker processes, without their start-up
        par = BradleyTerryRanker(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(seq.bootstrap_ratings_, par.bootstrap_ratings_)
    np.testing.assert_array_equal(seq.rating_intervals_, BradleyTerryRanker(**kw).fit(X, y).rating_intervals_)
    sandwich = BradleyTerryRanker().fit(X, y)
    np.testing.assert_allclose(seq.ratings_, sandwich.ratings_)  # point estimate from the full fit
    ratio = np.diff(seq.rating_intervals_, axis=1) / np.diff(sandwich.rating_intervals_, axis=1)
    assert np.all((ratio > 0.6) & (ratio < 1.5)), ratio.ravel()
    boot_sd = seq.bootstrap_ratings_.std(axis=0, ddof=1)
    np.testing.assert_allclose(boot_sd, ELO * np.sqrt(np.diag(sandwich.covariance_)), rtol=0.3)
    pivot = BradleyTerryRanker(ci_method="bootstrap_pivot", n_bootstrap=60, random_state=0).fit(X, y)
    q = np.quantile(seq.bootstrap_ratings_, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(pivot.rating_intervals_, np.column_stack([2 * seq.ratings_ - q[1],
                                                                         2 * seq.ratings_ - q[0]]))
    assert seq.bootstrap_ratings_.shape == (60, 6)


def test_bootstrap_resamples_without_mle_are_left_out_with_a_warning():
    # competitor "d" plays three battles and wins two: resamples often give it no loss
    X = np.array([["a", "b"], ["b", "a"], ["b", "c"], ["c", "b"], ["a", "c"], ["c", "a"]] * 20
                 + [["d", "a"], ["d", "b"], ["c", "d"]])
    y = np.array(["model_a"] * 120 + ["model_a", "model_a", "model_a"])
    with pytest.warns(UserWarning, match="bootstrap resamples had no finite"):
        r = BradleyTerryRanker(ci_method="bootstrap", n_bootstrap=50, random_state=0).fit(X, y)
    bad = np.isnan(r.bootstrap_ratings_[:, 0])
    assert 0 < bad.sum() < 50 and np.all(np.isfinite(r.rating_intervals_))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BradleyTerryRanker(alpha=0.5, ci_method="bootstrap", n_bootstrap=20, random_state=0).fit(X, y)


def test_inverse_probability_weights_target_the_uniform_pair_estimand():
    """Paper Eq. 7: under a misspecified (intransitive) model and skewed pair sampling, 1/P weights recover the
    Bradley-Terry projection for uniform pair sampling; the unweighted fit converges elsewhere."""
    M = 4
    iu, ju = np.triu_indices(M, 1)
    theta = np.array([0.9, 0.2, 0.7, 0.8, 0.3, 0.6])  # P(first of the pair wins); 0 > 2 > ... but 1 > 2 > 0
    # population target: equal weight on every pair, expected outcomes as weights
    Xp = np.column_stack([np.r_[iu, iu], np.r_[ju, ju]])
    yp = np.r_[np.ones(6, int), np.zeros(6, int)]
    target = BradleyTerryRanker().fit(Xp, yp, sample_weight=np.r_[theta, 1 - theta]).scores_
    rng = np.random.RandomState(0)
    prob = np.array([0.4, 0.05, 0.05, 0.05, 0.05, 0.4])
    n = 100000
    k = rng.choice(6, size=n, p=prob)
    X = np.column_stack([iu[k], ju[k]])
    y = (rng.rand(n) < theta[k]).astype(int)
    weighted = BradleyTerryRanker().fit(X, y, sampling_proba=prob[k])
    plain = BradleyTerryRanker().fit(X, y)
    se = np.sqrt(np.diag(weighted.covariance_))
    assert np.all(np.abs(weighted.scores_ - target) < 4 * se)
    assert np.max(np.abs(plain.scores_ - target)) > 10 * np.max(se)
    # constant sampling probabilities change nothing
    np.testing.assert_allclose(BradleyTerryRanker().fit(X, y, sampling_proba=np.full(n, 0.3)).scores_,
                               plain.scores_, atol=1e-9)


def test_grid_search_tunes_alpha_with_neg_log_loss_in_a_style_pipeline():
    X, y, _ = _battles(n=600, M=12, tie_proba=0.0, n_covariates=2)
    pipe = make_pipeline(
        ColumnTransformer([("ids", "passthrough", [0, 1]), ("style", StandardScaler(), [2, 3])]),
        BradleyTerryRanker(alpha=1.0))
    grid = {"bradleyterryranker__alpha": [0.1, 3.0, 1000.0]}
    search = GridSearchCV(pipe, grid, scoring="neg_log_loss", cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert search.best_params_["bradleyterryranker__alpha"] != 1000.0  # the prior swamps the data
    assert scores[2] < scores[:2].max()
    assert search.predict_proba(X[:3]).shape == (3, 2)


def test_bad_inputs_raise_clear_errors():
    X, y, _ = _battles(n=200, M=4)
    with pytest.raises(ValueError, match="1 feature"):
        BradleyTerryRanker().fit(X[:, :1], y)
    Xs = np.column_stack([X, np.array(["long"] * len(y), dtype=object)]).astype(object)
    with pytest.raises(ValueError, match="covariates and must be numeric"):
        BradleyTerryRanker().fit(Xs, y)
    with pytest.raises(ValueError, match="sampling_proba"):
        BradleyTerryRanker().fit(X, y, sampling_proba=np.zeros(len(y)))
    with pytest.raises(ValueError, match="win_labels"):
        BradleyTerryRanker(win_labels=("model_a", "model_a")).fit(X, y)
    with pytest.raises(ValueError, match="neither win_labels"):
        BradleyTerryRanker(win_labels=(1, 0)).fit(X, y)
    with pytest.raises(ValueError, match="no battle is left"):
        BradleyTerryRanker(ties="drop", win_labels=("model_a", "model_b")).fit(X[:3], np.array(["tie"] * 3))
    with pytest.raises(ValueError, match="0 classes besides ties"):
        BradleyTerryRanker().fit(X[:3], np.array(["tie"] * 3))
    with pytest.raises(ValueError, match="Unknown label type"):
        BradleyTerryRanker().fit(X, np.linspace(0, 1, len(y)))


def test_verbose_prints_newton_iterations(capsys):
    X, y, _ = _battles(n=300, M=4)
    BradleyTerryRanker(verbose=1).fit(X, y)
    assert "Newton iter" in capsys.readouterr().out


def test_non_convergence_warns():
    X, y, _ = _battles(n=300, M=4)
    with pytest.warns(Warning, match="did not converge"):
        BradleyTerryRanker(max_iter=1).fit(X, y)
