"""What every stage scheduler shares: problem input, fitted result attributes, predict / score (S14).

A scheduler's ``X`` is a :class:`StageSchedulingProblem` (or a networkx
``DiGraph``, read with the released attribute names), not a feature matrix:
``fit`` solves that one instance. ``predict`` returns the schedule of the
fitted instance, and ``score`` its negated objective (higher is better), so
hyper-parameters tune with :func:`tune_scheduler`.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._scheduling_problem import StageSchedulingProblem


def as_problem(X, name):
    """Turn a scheduler's ``X`` into a :class:`StageSchedulingProblem` (a DiGraph through ``from_networkx``)."""
    if isinstance(X, StageSchedulingProblem):
        return X
    if type(X).__module__.startswith("networkx") and hasattr(X, "is_directed"):
        return StageSchedulingProblem.from_networkx(X)
    raise TypeError(f"{name}: X must be a StageSchedulingProblem or a networkx DiGraph (a DAG to schedule), "
                    f"not a feature matrix; got {type(X).__name__}.")


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
        if problem.digest() != self.problem_digest_:
            raise ValueError(f"{type(self).__name__}.{method}: X is not the problem this scheduler was fitted on "
                             f"({problem!r}); a scheduler solves one instance, call fit_predict(X) for a new one.")
        return problem

    def predict(self, X):
        """The fitted schedule (``X`` must be the fitted problem).

        Parameters
        ----------
        X : StageSchedulingProblem or networkx.DiGraph
            The problem given to ``fit``.

        Returns
        -------
        ndarray of shape (n_nodes,) or None
            Stage of each node; ``None`` when no schedule was found.
        """
        self._check_same_problem(X, "predict")
        return None if self.schedule_ is None else self.schedule_.copy()

    def fit_predict(self, X, y=None):
        """Schedule ``X`` and return the stages.

        Parameters
        ----------
        X : StageSchedulingProblem or networkx.DiGraph
            The DAG to schedule.
        y : None
            Ignored.

        Returns
        -------
        ndarray of shape (n_nodes,) or None
            Stage of each node.
        """
        self.fit(X, y)
        return None if self.schedule_ is None else self.schedule_.copy()

    def score(self, X, y=None):
        """Negated objective of the fitted schedule (higher is better).

        Parameters
        ----------
        X : StageSchedulingProblem or networkx.DiGraph
            The problem given to ``fit``.
        y : None
            Ignored.

        Returns
        -------
        float
            ``-objective_`` (``-inf`` when no schedule was found).
        """
        self._check_same_problem(X, "score")
        return -float(self.objective_)
