"""Tour entry of the scaling family: an adaptive-shape schedule against the best static shape."""

from ._base import TourEntry, TourResult, fit_timed


def _run_adaptive_shapes(device="cpu", quick=False):
    from ..datasets import make_scaling_runs
    from ..scaling import AdaptiveShapeScheduler, ScalingLawRegressor

    X, y = make_scaling_runs(n_shapes=3 if quick else 5, n_runs=30, noise=0.01, random_state=0)
    law = ScalingLawRegressor(shape_column=1, n_restarts=4 if quick else 8, random_state=0)
    scheduler, seconds = fit_timed(AdaptiveShapeScheduler(law), X, y)
    target = 1.25 * min(p["c"] for p in scheduler.law_.params_.values()) + 0.002
    return TourResult(metric="predicted compute to the target loss", score=scheduler.predicted_compute(target),
                      baseline="best static shape", baseline_score=scheduler.static_compute(target),
                      fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("AdaptiveShapeScheduler", "S19", "schedule model shapes along fitted scaling laws",
              _run_adaptive_shapes),
]
