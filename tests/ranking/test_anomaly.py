"""RaterAnomalyDetector: the paper's p-value, the randomized one, Fisher at random looks, and their power."""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.datasets import make_arena_battles
from sklearn_icml.ranking import RaterAnomalyDetector

M = 6


@pytest.fixture(scope="module")
def history():
    X, y, truth = make_arena_battles(n_battles=20000, n_competitors=M, tie_proba=0.1, string_ids=False,
                                     return_truth=True, random_state=0)
    return X, y, truth["scores"]


def _voters(kind, scores, n_voters=150, n_votes=100, seed=1):
    rng = np.random.RandomState(seed)
    n = n_voters * n_votes
    a = rng.randint(M, size=n)
    b = (a + 1 + rng.randint(M - 1, size=n)) % M
    if kind == "honest":
        first = rng.rand(n) < 1 / (1 + np.exp(-(scores[a] - scores[b])))
        y = np.where(rng.rand(n) < 0.1, "tie", np.where(first, "model_a", "model_b"))
    elif kind == "weaker":  # always backs the weaker competitor
        y = np.where(scores[a] < scores[b], "model_a", "model_b")
    else:  # coin flips
        y = np.where(rng.rand(n) < 0.5, "model_a", "model_b")
    return np.column_stack([a, b]), y, np.repeat(np.arange(n_voters), n_votes)


def test_paper_pvalue_by_hand():
    X = np.array([["a", "b"]] * 10)
    y = np.array(["model_a"] * 6 + ["model_b"] * 3 + ["tie"])  # H (second wins): 0 x6, 1 x3, 1/2 x1
    det = RaterAnomalyDetector().fit(X, y)
    votes = np.array([["a", "b"], ["b", "a"], ["a", "b"], ["a", "c"]])
    p = det.vote_pvalues(votes, np.array(["model_b", "model_a", "tie", "model_a"]))
    # b won (H=1): 1 + #{h >= 1} = 4, in either column order; tie: 1 + #{h >= 1/2} = 5; no history: p = 1
    np.testing.assert_allclose(p, [4 / 11, 4 / 11, 5 / 11, 1.0])
    # a won (H=0): every historical vote is >= 0, so the one-sided p-value is 1
    assert det.vote_pvalues(votes[:1], np.array(["model_a"]))[0] == 1.0
    assert det.history_counts_[0, 1].tolist() == [6, 1, 3]


def test_randomized_pvalues_are_uniform_for_exchangeable_votes(history):
    X, y, _ = history
    det = RaterAnomalyDetector(pvalue="randomized", random_state=0).fit(X[:15000], y[:15000])
    p = det.vote_pvalues(X[15000:], y[15000:])
    assert stats.kstest(p, "uniform").pvalue > 0.01
    paper = RaterAnomalyDetector().fit(X[:15000], y[:15000]).vote_pvalues(X[15000:], y[15000:])
    assert paper.mean() > 0.6  # conservative: many votes get p = 1


@pytest.mark.parametrize("pvalue", ["paper", "randomized"])
def test_false_positive_rate_is_at_most_alpha(history, pvalue):
    X, y, scores = history
    det = RaterAnomalyDetector(alpha=0.1, pvalue=pvalue, random_state=0).fit(X, y)
    report = det.test(*_voters("honest", scores))
    assert report["flagged"].mean() <= 0.1 + 2 * np.sqrt(0.1 * 0.9 / 150)


def test_randomized_pvalue_has_power_where_the_papers_has_little(history):
    X, y, scores = history
    rates = {}
    for pvalue in ("paper", "randomized"):
        det = RaterAnomalyDetector(alpha=0.1, pvalue=pvalue, random_state=0).fit(X, y)
        for kind in ("weaker", "coin"):
            rates[pvalue, kind] = det.test(*_voters(kind, scores))["flagged"].mean()
    assert rates["randomized", "weaker"] >= 0.9 and rates["randomized", "coin"] >= 0.9
    assert rates["paper", "coin"] <= 0.05  # one-sided: a vote for the first of the sorted pair gets p = 1
    assert rates["paper", "weaker"] < rates["randomized", "weaker"] - 0.3


def test_report_fields_and_random_looks(history):
    X, y, scores = history
    det = RaterAnomalyDetector(n_looks=5, max_votes=100, pvalue="randomized", random_state=0).fit(X, y)
    Xv, yv, g = _voters("weaker", scores, n_voters=20, n_votes=30)
    report = det.test(Xv, yv, g)
    assert list(report.dtype.names) == ["group", "n_votes", "n_looks", "flagged", "look", "statistic", "threshold"]
    assert np.all(report["n_votes"] == 30) and np.all(report["n_looks"] <= 5)
    flagged = report["flagged"]
    assert np.all(report["look"][flagged] >= 1) and np.all(report["look"][flagged] <= 30)
    assert np.all(report["statistic"][flagged] >= report["threshold"][flagged])
    np.testing.assert_allclose(report["threshold"][flagged],
                               stats.chi2.ppf(1 - 0.1 / 5, 2 * report["look"][flagged]))
    assert len(set(report["look"][flagged].tolist())) > 1  # looks differ between voters
    # a voter with fewer votes than every look is not tested
    few = det.test(Xv[:1], yv[:1], [7])
    assert few["n_looks"][0] in (0, 1) and (few["n_looks"][0] == 1 or not few["flagged"][0])


def test_errors():
    with pytest.raises(ValueError, match="alpha"):
        RaterAnomalyDetector(alpha=1.5).fit([[0, 1]], [1])
    with pytest.raises(ValueError, match="pvalue"):
        RaterAnomalyDetector(pvalue="evalue").fit([[0, 1]], [1])
    det = RaterAnomalyDetector(win_labels=(1, 0)).fit([[0, 1], [1, 0]], [1, 1])
    with pytest.raises(ValueError, match="groups"):
        det.test([[0, 1]], [1], groups=[1, 2])
    with pytest.raises(AttributeError, match="not fitted"):
        RaterAnomalyDetector().vote_pvalues([[0, 1]], [1])
