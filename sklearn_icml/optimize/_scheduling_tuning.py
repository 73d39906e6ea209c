"""tune_scheduler: a parameter grid over several scheduling problems, scored by minus the mean gap (S14)."""

import time

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import Bunch
from sklearn.utils.parallel import Parallel, delayed

from ._scheduling_base import as_problem


def _fit_one(scheduler, params, problem):
    start = time.perf_counter()
    fitted = clone(scheduler).set_params(**params).fit(problem)
    return float(fitted.gap_), float(fitted.objective_), time.perf_counter() - start


def tune_scheduler(scheduler, param_grid, problems, *, n_jobs=None):
    """Grid search of a stage scheduler's parameters over several problems.

    A scheduler solves one instance, so there are no cross-validation splits:
    each parameter combination is fitted on every problem and scored by minus
    the mean relative gap to the problems' lower bounds (higher is better).
    The fits run through :class:`sklearn.utils.parallel.Parallel`, so an outer
    joblib backend (Dask's ``distributed``, Ray) takes them over.

    Parameters
    ----------
    scheduler : estimator
        A stage scheduler, e.g. :class:`GumbelScheduler` (cloned, never fitted).
    param_grid : dict or list of dicts
        As for :class:`~sklearn.model_selection.ParameterGrid`.
    problems : list of StageSchedulingProblem or networkx.DiGraph
        The instances.
    n_jobs : int, default=None
        Parallel fits; ``None`` means 1 unless in a joblib backend context.

    Returns
    -------
    result : Bunch
        ``best_params_`` (dict), ``best_score_`` (minus the best mean gap),
        ``best_index_`` and ``results_``, a dict of ``params`` (list),
        ``gaps`` and ``objectives`` (arrays of shape (n_candidates,
        n_problems)), ``mean_gap``, ``score`` and ``mean_fit_time`` (arrays of
        shape (n_candidates,)), and ``rank`` (1 is best; ties share the lower
        rank).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scheduling_dag
    >>> from sklearn_icml.optimize import GumbelScheduler, tune_scheduler
    >>> problems = [make_scheduling_dag(60, depth=5, random_state=s) for s in range(2)]
    >>> result = tune_scheduler(GumbelScheduler(batch_size=4, max_iter=5, random_state=0),
    ...                         {"init": ["stage0", "greedy"]}, problems)
    >>> sorted(result.results_)
    ['gaps', 'mean_fit_time', 'mean_gap', 'objectives', 'params', 'rank', 'score']
    """
    if not hasattr(scheduler, "fit") or not hasattr(scheduler, "get_params"):
        raise TypeError(f"tune_scheduler: scheduler must be a scikit-learn style scheduler; got "
                        f"{type(scheduler).__name__}.")
    if isinstance(problems, (str, bytes)) or not hasattr(problems, "__len__") or len(problems) == 0:
        raise ValueError("tune_scheduler: problems must be a non-empty list of StageSchedulingProblem.")
    problems = [as_problem(p, "tune_scheduler") for p in problems]
    candidates = list(ParameterGrid(param_grid))
    jobs = [(params, problem) for params in candidates for problem in problems]
    out = Parallel(n_jobs=n_jobs)(delayed(_fit_one)(scheduler, params, problem) for params, problem in jobs)
    out = np.asarray(out, dtype=np.float64).reshape(len(candidates), len(problems), 3)
    mean_gap = out[..., 0].mean(axis=1)
    score = -mean_gap
    best = int(np.argmax(score))
    rank = np.searchsorted(np.sort(-score), -score) + 1
    results = {"params": candidates, "gaps": out[..., 0], "objectives": out[..., 1], "mean_gap": mean_gap,
               "score": score, "mean_fit_time": out[..., 2].mean(axis=1), "rank": rank}
    return Bunch(best_params_=candidates[best], best_score_=float(score[best]), best_index_=best,
                 results_=results)
