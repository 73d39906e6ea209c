"""Tour entries of the optimize family: meta-learned BO (MALIBO) against LFBO on held-out shifted Forrester tasks;
differentiable stage scheduling (GumbelScheduler) against the greedy split on a generated DAG."""

from ._base import TourEntry, TourResult, fit_timed


def _run_malibo(device="cpu", quick=False):
    import numpy as np

    from ..datasets import make_forrester_tasks
    from ..optimize import LikelihoodFreeOptimizer, MetaBayesianOptimizer, MetaLFBOClassifier

    meta = make_forrester_tasks(48 if quick else 64, 32, family="shifted", random_state=0)
    # 24 held-out tasks: the median regret after 8 evaluations over only 8 of them turns on which tasks were drawn
    targets = make_forrester_tasks(5 if quick else 24, 0, family="shifted", random_state=1)
    classifier = MetaLFBOClassifier(max_iter=150) if quick else None  # the default network
    common = dict(bounds=[(0.0, 1.0)], n_candidates=1024, random_state=0)
    malibo, seconds = fit_timed(MetaBayesianOptimizer(classifier=classifier, device=device, **common), meta.tasks)
    lfbo = LikelihoodFreeOptimizer(**common)
    n_iter = 8
    ours = np.median([malibo.minimize(f, n_iter).fun - f.minimum for f in targets.functions])
    base = np.median([lfbo.minimize(f, n_iter).fun - f.minimum for f in targets.functions])
    return TourResult(metric=f"regret after {n_iter} evals", score=float(ours),
                      baseline="plain LFBO", baseline_score=float(base), fit_seconds=seconds,
                      higher_is_better=False)


def _run_gumbel_scheduling(device="cpu", quick=False):
    from ..datasets import make_scheduling_dag
    from ..optimize import GreedyStageScheduler, GumbelScheduler, StageSchedulingProblem

    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(1000, n_stages=10, random_state=0))
    gumbel, seconds = fit_timed(GumbelScheduler(batch_size=16, max_iter=10 if quick else 50, device=device,
                                                random_state=0), problem)
    greedy = GreedyStageScheduler().fit(problem)
    return TourResult(metric="gap to lower bound", score=float(gumbel.gap_),
                      baseline="greedy split", baseline_score=float(greedy.gap_), fit_seconds=seconds,
                      higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("MetaBayesianOptimizer", "S13", "minimise new shifted-Forrester tasks after meta-training",
              _run_malibo, uses_device=True),
    TourEntry("GumbelScheduler", "S14", "cut a generated DAG into pipeline stages (memory + communication)",
              _run_gumbel_scheduling, uses_device=True),
]
