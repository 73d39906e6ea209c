"""Tour entry of the ranking family: Bradley-Terry ratings against online Elo on held-out battles."""

import numpy as np

from ._base import TourEntry, TourResult, fit_timed


def _battle_log_loss(estimator, X, y):
    """Held-out log loss of the first competitor's result, a tie counting half (the BT likelihood)."""
    tie_classes = list(getattr(estimator, "tie_classes_", []))
    decisive = [c for c in estimator.classes_ if c not in tie_classes]  # sorted, as classes_
    decision = estimator.decision_function(X)  # logit of the larger decisive label
    p = estimator._decision_to_proba(decision if estimator.first_wins_label_ == decisive[1] else -decision)
    p = np.clip(p, 1e-12, 1 - 1e-12)
    s = np.where(y == "model_a", 1.0, np.where(y == "model_b", 0.0, 0.5))
    return float(-np.mean(s * np.log(p) + (1 - s) * np.log(1 - p)))


def _run_bradley_terry(device="cpu", quick=False):
    from ..datasets import make_arena_battles
    from ..ranking import BradleyTerryRanker, EloRater

    n = 3000 if quick else 20000
    X, y = make_arena_battles(n_battles=n + 5000, n_competitors=20, tie_proba=0.1, random_state=0)
    X_train, y_train, X_test, y_test = X[:n], y[:n], X[n:], y[n:]
    ranker, seconds = fit_timed(BradleyTerryRanker(), X_train, y_train)
    elo = EloRater().fit(X_train, y_train)
    return TourResult(metric="held-out log loss", score=_battle_log_loss(ranker, X_test, y_test),
                      baseline="online Elo (K=4)", baseline_score=_battle_log_loss(elo, X_test, y_test),
                      fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("BradleyTerryRanker", "S17", "rate 20 chatbots from pairwise votes", _run_bradley_terry),
]
