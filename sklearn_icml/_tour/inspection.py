"""Tour entry of the inspection family."""

from ._base import TourEntry, TourResult, fit_timed


def _run_attribution_combiner(device="cpu", quick=False):
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from ..datasets import make_attribution_task
    from ..inspection import AttributionCombiner

    X, y = make_attribution_task(n_samples=300 if quick else 600, n_features=8, random_state=0)
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0)
    n_explain = 10 if quick else 40
    comb = AttributionCombiner(make_pipeline(StandardScaler(), SVC()), criterion="faithfulness",
                               n_faithfulness_samples=200, random_state=0)
    comb, seconds = fit_timed(comb, X_train, y_train)
    # held-out infidelity (fresh ablations) of every base method and of the combination; the model is a
    # scikit-learn black box, so `device` does not apply
    quality = comb.evaluate(X_test[:n_explain], metrics=("infidelity",))
    k = len(comb.method_names_)
    singles = quality.infidelity[:, :k].mean(axis=0)
    best = int(np.argmin(singles))
    return TourResult(metric="held-out infidelity",
                      score=float(quality.infidelity[:, k].mean()),
                      baseline=f"best single: {comb.method_names_[best]}",
                      baseline_score=float(singles[best]), fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("AttributionCombiner", "S10", "faithfulness-optimal combination of feature attributions",
              _run_attribution_combiner),
]
