"""What every stage scheduler shares: problem input, fitted result attributes, predict / score (S14).

A scheduler's ``X`` is a :class:`StageSchedulingProblem` (or a networkx
``DiGraph``), not a feature matrix: ``fit`` solves that one instance,
``predict`` returns its schedule and ``score`` its negated objective (higher
is better). ``X`` may also be a list of problems, the samples of a
scikit-learn model selection: ``fit`` solves each, ``predict`` returns one
schedule per problem (solving the ones it was not fitted on), and ``score``
is minus the mean gap to the problems' lower bounds, so ``GridSearchCV`` and
``cross_validate`` run over a list of problems (as does
:func:`tune_scheduler`).
"""

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ._scheduling_problem import StageSchedulingProblem


def as_problem(X, name):
    """Turn a scheduler's ``X`` into a :class:`StageSchedulingProblem` (a DiGraph through ``from_networkx``)."""
    if isinstance(X, StageSchedulingProblem):
        return X
    if isinstance(X, dict) and "edges" in X and "node_weight" in X:  # a dataset Bunch
        return StageSchedulingProblem.from_dataset(X)
    if type(X).__module__.startswith("networkx") and hasattr(X, "is_directed"):
        return StageSchedulingProblem.from_networkx(X)
    raise TypeError(f"{name}: X must be a StageSchedulingProblem or a networkx DiGraph (a DAG to schedule), "
                    f"or a list of them, not a feature matrix; got {type(X).__name__}. For a parameter search over "
                    "several problems pass a list to GridSearchCV, or use tune_scheduler.")


def as_problem_list(X, name):
    """``(problems, True)`` for a list / tuple / 1-D object array of problems, else ``([problem], False)``."""
    if isinstance(X, (list, tuple)) or (isinstance(X, np.ndarray) and X.dtype == object and X.ndim == 1):
        if len(X) == 0:
            raise ValueError(f"{name}: X is an empty list of problems.")
        if all(isinstance(p, (StageSchedulingProblem, dict)) or type(p).__module__.startswith("networkx")
               for p in X):
            return [as_problem(p, name) for p in X], True
    return [as_problem(X, name)], False


class StageSchedulerMixin:
    """``fit_predict``, ``predict``, ``score`` and the result attributes of a stage scheduler."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.target_tags.required = False
        # X is a StageSchedulingProblem (a DAG with node memory), not a feature matrix: scikit-learn's data checks
        # do not apply; its API checks and the house checks run on real problems
        tags.input_tags.two_d_array = False
        tags.non_deterministic = False
        return tags

    def _problem(self, X):
        return as_problem(X, type(self).__name__)

    def _fit_any(self, X):
        """Solve one problem (``_fit_one``), or each problem of a list with a clone of this scheduler."""
        problems, many = as_problem_list(X, type(self).__name__)
        if not many:
            self.schedules_ = self.problem_digests_ = None
            return self._fit_one(problems[0])
        fits = [clone(self)._fit_one(problem) for problem in problems]
        self.schedules_ = [None if f.schedule_ is None else f.schedule_.copy() for f in fits]
        self.objectives_ = np.array([f.objective_ for f in fits], dtype=np.float64)
        self.gaps_ = np.array([f.gap_ for f in fits], dtype=np.float64)
        self.problem_digests_ = [f.problem_digest_ for f in fits]
        self.problem_digest_ = None
        self.schedule_ = None
        self.objective_ = float(self.objectives_.mean())
        self.gap_ = float(self.gaps_.mean())
        return self

    def _solve_list(self, problems):
        """Schedules and gaps of a list of problems: stored where fitted on them, solved by a clone otherwise."""
        stored = {}
        if getattr(self, "problem_digests_", None):
            stored = {d: (s, g) for d, s, g in zip(self.problem_digests_, self.schedules_, self.gaps_)}
        out = []
        for problem in problems:
            digest = problem.digest()
            if digest in stored:
                out.append(stored[digest])
            else:
                fitted = clone(self)._fit_one(problem)
                out.append((fitted.schedule_, fitted.gap_))
        return out

    def _set_result(self, problem, schedule):
        """Fill the fitted attributes shared by every scheduler from a legal schedule (or None)."""
        self.n_nodes_ = problem.n_nodes
        self.n_stages_ = problem.n_stages
        self.problem_digest_ = problem.digest()
        self.lower_bound_ = problem.lower_bound()
        if schedule is None:
            self.schedule_ = None
            self.objective_ = self.peak_memory_ = self.comm_cost_ = np.inf
            self.stage_loads_ = None
            self.gap_ = np.inf
            return self
        schedule = np.asarray(schedule, dtype=np.int64).copy()
        if not problem.is_feasible(schedule):
            raise RuntimeError(f"{type(self).__name__}: internal error, the schedule found is illegal.")
        self.schedule_ = schedule
        self.peak_memory_ = problem.peak_memory(schedule)
        self.comm_cost_ = problem.comm_cost(schedule)
        self.objective_ = problem.objective(schedule)
        self.stage_loads_ = problem.stage_loads(schedule)
        self.gap_ = problem.gap(self.objective_)
        return self

    def _check_same_problem(self, X, method):
        check_is_fitted(self)
        problem = self._problem(X)
        if self.problem_digest_ is None:
            raise ValueError(f"{type(self).__name__}.{method}: this scheduler was fitted on a list of problems; "
                             "pass a list of problems.")
        if problem.digest() != self.problem_digest_:
            raise ValueError(f"{type(self).__name__}.{method}: X is not the problem this scheduler was fitted on "
                             f"({problem!r}); a scheduler solves one instance, call fit_predict(X) for a new one.")
        return problem

    def predict(self, X):
        """The fitted schedule (``X`` must be the fitted problem).

        Parameters
        ----------
        X : StageSchedulingProblem, networkx.DiGraph or list of them
            The problem given to ``fit``, or a list of problems (each one not
            fitted on is solved with this scheduler's parameters).

        Returns
        -------
        ndarray of shape (n_nodes,) or None, or a list of them
            Stage of each node; ``None`` when no schedule was found.
        """
        check_is_fitted(self)
        problems, many = as_problem_list(X, type(self).__name__)
        if many:
            return [None if s is None else np.array(s) for s, _ in self._solve_list(problems)]
        self._check_same_problem(X, "predict")
        return None if self.schedule_ is None else self.schedule_.copy()

    def fit_predict(self, X, y=None):
        """Schedule ``X`` and return the stages.

        Parameters
        ----------
        X : StageSchedulingProblem, networkx.DiGraph or list of them
            The DAG to schedule, or a list of DAGs.
        y : None
            Ignored.

        Returns
        -------
        ndarray of shape (n_nodes,) or None, or a list of them
            Stage of each node.
        """
        self.fit(X, y)
        if self.problem_digest_ is None:
            return [None if s is None else s.copy() for s in self.schedules_]
        return None if self.schedule_ is None else self.schedule_.copy()

    def score(self, X, y=None):
        """Negated objective of the fitted schedule, or minus the mean gap over a list (higher is better).

        Parameters
        ----------
        X : StageSchedulingProblem, networkx.DiGraph or list of them
            The problem given to ``fit``, or a list of problems.
        y : None
            Ignored.

        Returns
        -------
        float
            ``-objective_`` (``-inf`` when no schedule was found); for a list,
            minus the mean gap to the lower bounds (each problem not fitted
            on is solved with this scheduler's parameters).
        """
        check_is_fitted(self)
        problems, many = as_problem_list(X, type(self).__name__)
        if many:
            return -float(np.mean([g for _, g in self._solve_list(problems)]))
        self._check_same_problem(X, "score")
        return -float(self.objective_)
