"""Ratings against reference implementations: choix, evalica and FastChat's logistic-regression design."""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from sklearn_icml.datasets import make_arena_battles
from sklearn_icml.ranking import BradleyTerryRanker, EloRater

pytestmark = pytest.mark.peers


def _battles(n, M, tie_proba, seed=0):
    X, y = make_arena_battles(n_battles=n, n_competitors=M, tie_proba=tie_proba, string_ids=False,
                              random_state=seed)
    return X, y


def _winner_loser(X, y):
    return [(a, b) if o == "model_a" else (b, a) for (a, b), o in zip(X.tolist(), y.tolist())]


def test_choix_ilsr_pairwise_equals_the_mle():
    choix = pytest.importorskip("choix")
    X, y = _battles(4000, 10, 0.0)
    ours = BradleyTerryRanker(tol=1e-12).fit(X, y).scores_
    theirs = choix.ilsr_pairwise(10, _winner_loser(X, y), alpha=0.0, max_iter=1000, tol=1e-14)
    np.testing.assert_allclose(ours, theirs - theirs.mean(), atol=1e-8)


def test_choix_opt_pairwise_equals_the_penalized_fit():
    choix = pytest.importorskip("choix")
    X, y = _battles(600, 6, 0.0)
    for alpha in (1e-6, 0.5):
        ours = BradleyTerryRanker(alpha=alpha, tol=1e-12).fit(X, y).scores_
        theirs = choix.opt_pairwise(6, _winner_loser(X, y), alpha=alpha, tol=1e-12)
        np.testing.assert_allclose(ours, theirs - theirs.mean(), atol=1e-8)


def test_evalica_bradley_terry_with_ties_equals_ties_as_half():
    evalica = pytest.importorskip("evalica")
    X, y = _battles(5000, 8, 0.15)
    ours = BradleyTerryRanker(tol=1e-12).fit(X, y).scores_
    winner = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    res = evalica.bradley_terry(X[:, 0].tolist(), X[:, 1].tolist(), [winner[v] for v in y.tolist()],
                                tolerance=1e-14, limit=100000)
    theirs = np.log(res.scores.sort_index().to_numpy())
    np.testing.assert_allclose(ours, theirs - theirs.mean(), atol=1e-8)


def test_evalica_elo_equals_online_elo():
    evalica = pytest.importorskip("evalica")
    X, y = _battles(20000, 12, 0.1)
    ours = EloRater().fit(X, y).ratings_
    winner = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    res = evalica.elo(X[:, 0].tolist(), X[:, 1].tolist(), [winner[v] for v in y.tolist()], k=4.0)
    np.testing.assert_allclose(ours, res.scores.sort_index().to_numpy(), atol=1e-9, rtol=0)


def test_fastchat_logistic_regression_design_gives_the_same_ratings():
    """FastChat's compute_mle_elo: +ln(10) / -ln(10) design, every battle twice, a tie as one win each way.

    The design's columns sum to zero on every row, so an unpenalised fit is identified only up to a constant
    (its Hessian is singular). As FastChat anchors one model, one competitor's column is dropped (its rating
    held at 0) and the fit is repeated with each competitor as the anchor: after centring, every anchor must
    give the same ratings, and they must equal ours.
    """
    X, y = _battles(3000, 8, 0.1)
    n, M = len(y), 8
    design = np.zeros((2 * n, M))
    rows = np.arange(n)
    for half in (0, n):
        design[half + rows, X[:, 0]] = math.log(10)
        design[half + rows, X[:, 1]] = -math.log(10)
    target = np.r_[(y == "model_a") | (y == "tie"), y == "model_a"].astype(int)
    ours = BradleyTerryRanker(tol=1e-12).fit(X, y).ratings_
    for anchor in range(M):
        free = np.delete(np.arange(M), anchor)
        lr = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cholesky", tol=1e-12,
                                max_iter=1000).fit(design[:, free], target)
        theirs = np.zeros(M)
        theirs[free] = 400 * lr.coef_[0]
        np.testing.assert_allclose(ours, theirs - theirs.mean() + 1000, atol=1e-6, rtol=0,
                                   err_msg=f"anchor {anchor}")
