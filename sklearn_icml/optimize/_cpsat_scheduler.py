"""CPSATScheduler: stage scheduling with OR-tools CP-SAT, on a compact model or the paper's expanded one (S14)."""

import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ..utils._sklearn_private import HasMethods, Interval, StrOptions, _fit_context
from ._scheduling_base import StageSchedulerMixin
from ._scheduling_greedy import greedy_split


def _import_cp_model():
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise ImportError("CPSATScheduler needs the 'ortools' package (CP-SAT): pip install ortools, or install "
                          "sklearn-icml[peers].") from exc
    return cp_model


#: CP-SAT works in 64-bit integers: the weights' total (and the sums built from it) must stay well inside.
_MAX_CPSAT_TOTAL = 2.0 ** 52


def _integer_weights(weights):
    """Node weights as integers for CP-SAT's linear constraints (scaled by 1000 when fractional)."""
    scale = 1.0 if np.all(weights == np.round(weights)) else 1000.0
    if float(np.sum(weights)) * scale > _MAX_CPSAT_TOTAL:
        kind = " (fractional weights are scaled by 1000)" if scale > 1 else ""
        raise ValueError(f"CPSATScheduler: the node weights add up to {float(np.sum(weights)):g}, too large for "
                         f"CP-SAT's 64-bit integer model (at most {_MAX_CPSAT_TOTAL / scale:g}{kind}); rescale them "
                         "(one factor for every weight leaves the best schedule unchanged).")
    return np.round(weights * scale).astype(np.int64), scale


class _Model:
    """The CP-SAT model of a problem: variables kept for hints and decoding."""

    def __init__(self, problem, kind, cp_model):
        D, n = problem.n_stages, problem.n_nodes
        m = cp_model.CpModel()
        weights, self.scale = _integer_weights(problem.node_weight)
        self.stage = [m.NewIntVar(int(problem.earliest[v]), int(problem.latest[v]), f"s{v}") for v in range(n)]
        one_hot_nodes = np.flatnonzero(weights > 0) if kind == "compact" else np.arange(n)
        self.one_hot = {}
        for v in one_hot_nodes.tolist():
            xs = [m.NewBoolVar(f"x{v}_{d}") for d in range(D)]
            m.AddExactlyOne(xs)
            m.Add(self.stage[v] == sum(d * x for d, x in enumerate(xs)))
            self.one_hot[v] = xs
        self.peak = m.NewIntVar(int(weights.max(initial=0)), int(weights.sum()), "peak")
        for d in range(D):
            m.Add(sum(int(weights[v]) * self.one_hot[v][d] for v in self.one_hot if weights[v] > 0) <= self.peak)
        for (u, v), lag in zip(problem.edges.tolist(), problem.edge_lag.tolist()):
            m.Add(self.stage[v] - self.stage[u] >= lag)
        if problem.stage_capacity is not None:
            cap = int(np.floor(problem.stage_capacity * self.scale + 1e-9))
            for d in range(D):
                m.Add(sum(int(weights[v]) * self.one_hot[v][d] for v in self.one_hot if weights[v] > 0) <= cap)
        if len(problem.b_ub):
            A, b = problem.A_ub, problem.b_ub
            if np.any(A != np.round(A)) or np.any(b != np.round(b)):
                raise ValueError("CPSATScheduler: A_ub and b_ub must hold integers for CP-SAT; scale the rows.")
            for row, rhs in zip(A.astype(np.int64), b.astype(np.int64)):
                nz = np.flatnonzero(row)
                m.Add(sum(int(row[v]) * self.stage[v] for v in nz.tolist()) <= int(rhs))
        self.crossings = []
        if kind == "compact":
            comm = sum(self.stage[v] - self.stage[u] for u, v in problem.data_edges.tolist())
        else:  # the paper's model: per data edge and boundary, [s_u <= k] + [s_v >= k + 1] - 1 <= crossing
            comm = 0
            for u, v in problem.data_edges.tolist():
                for k in range(D - 1):
                    a, b, c = m.NewBoolVar(""), m.NewBoolVar(""), m.NewBoolVar("")
                    m.Add(a == sum(self.one_hot[u][: k + 1]))
                    m.Add(b == sum(self.one_hot[v][k + 1:]))
                    m.Add(c >= a + b - 1)
                    self.crossings.append((u, v, k, a, b, c))
                    comm = comm + c
        mem = problem.mem_weight / self.scale
        if float(mem).is_integer() and float(problem.comm_weight).is_integer():
            m.Minimize(int(mem) * self.peak + int(problem.comm_weight) * comm)
        else:
            m.Minimize(mem * self.peak + problem.comm_weight * comm)
        self.model, self.weights = m, weights

    def hint(self, schedule, problem):
        m = self.model
        for v, s in enumerate(schedule.tolist()):
            m.AddHint(self.stage[v], s)
        for v, xs in self.one_hot.items():
            for d, x in enumerate(xs):
                m.AddHint(x, int(schedule[v] == d))
        loads = np.bincount(schedule, weights=self.weights, minlength=problem.n_stages)
        m.AddHint(self.peak, int(loads.max()))
        for u, v, k, a, b, c in self.crossings:
            m.AddHint(a, int(schedule[u] <= k))
            m.AddHint(b, int(schedule[v] >= k + 1))
            m.AddHint(c, int(schedule[u] <= k < schedule[v]))


class CPSATScheduler(StageSchedulerMixin, BaseEstimator):
    """Stage scheduling with OR-tools CP-SAT under a time limit, optionally warm-started.

    The exact baseline of the scheduling paper, on the same objective as
    :class:`GumbelScheduler`. The "compact" model has an integer stage per
    node, one-hot stage indicators only for nodes with memory (for the
    per-stage load constraints) and the communication term as the linear
    ``sum (s_v - s_u)``; the "expanded" model is the paper's (one-hot for
    every node, and per data edge and stage boundary the indicator variables
    ``[s_u <= k]``, ``[s_v >= k + 1]`` and their conjunction), about
    ``3 |E_w| (D - 1)`` extra Booleans. Lags, the stage capacity and the
    rows ``A_ub @ s <= b_ub`` (integer coefficients) are added as linear
    constraints; a proof that none can hold raises ``ValueError``. A hint fills every variable, which
    CP-SAT then repairs and improves: "Gumbel then CP-SAT" is the authors'
    follow-up hybrid.

    Needs the ``ortools`` package (``pip install ortools``, or the ``peers``
    extra).

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    time_limit : float, default=10.0
        Solver wall-clock limit in seconds.
    n_workers : int, default=1
        CP-SAT search workers. With 1, a fit is deterministic under
        ``random_state`` when CP-SAT proves optimality within ``time_limit``;
        when the wall-clock limit stops it first, the incumbent depends on the
        machine's speed and load (``status_`` is then ``"FEASIBLE"``).
    hint : None, "greedy", array-like of shape (n_nodes,) or fitted scheduler, default=None
        Warm start: the greedy split, a legal schedule, or any fitted
        scheduler's ``schedule_`` (e.g. a :class:`GumbelScheduler`).
    model : {"compact", "expanded"}, default="compact"
        Formulation.
    random_state : int, RandomState instance or None, default=0
        Seed of the solver.

    Attributes
    ----------
    schedule_ : ndarray of shape (n_nodes,) or None
        Best schedule found; ``None`` when none was found in time.
    objective_ : float
        Its objective (``inf`` without a schedule).
    peak_memory_ : float
        Its largest stage load.
    comm_cost_ : float
        Stage boundaries it crosses on data edges.
    stage_loads_ : ndarray of shape (n_stages,) or None
        Its stage loads.
    lower_bound_ : float
        :meth:`StageSchedulingProblem.lower_bound`.
    gap_ : float
        ``objective_ / lower_bound_ - 1``.
    status_ : str
        CP-SAT's status ("OPTIMAL", "FEASIBLE", "UNKNOWN", ...).
    solver_bound_ : float
        CP-SAT's proven lower bound on the objective (in the problem's units).
    wall_time_ : float
        Seconds spent building and solving.
    n_nodes_ : int
        Nodes of the fitted problem.
    n_stages_ : int
        Stages of the fitted problem.
    problem_digest_ : str
        Hash of the fitted problem (``predict`` and ``score`` accept only it).

    See Also
    --------
    GumbelScheduler : The differentiable scheduler of the paper.
    GreedyStageScheduler : The greedy split.

    Notes
    -----
    Fractional node weights are scaled by 1000 and rounded for the load
    constraints; the reported objective is always recomputed exactly by
    :meth:`StageSchedulingProblem.objective`. Without a solution in time no
    exception is raised: ``status_`` says why and ``objective_`` is ``inf``.

    References
    ----------
    .. [1] M. Liu, Y. Li, J. Yin, Z. Zhang and C. Yu, "Differentiable
       Combinatorial Scheduling at Scale", ICML 2024.
    .. [2] L. Perron and F. Didier, "CP-SAT", Google OR-Tools,
       https://developers.google.com/optimization/.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scheduling_dag
    >>> from sklearn_icml.optimize import CPSATScheduler, StageSchedulingProblem
    >>> problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(30, depth=4, random_state=0))
    >>> solver = CPSATScheduler(time_limit=5.0, hint="greedy").fit(problem)  # doctest: +SKIP
    >>> solver.status_ in ("OPTIMAL", "FEASIBLE")  # doctest: +SKIP
    True
    """

    _parameter_constraints = {
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "n_workers": [Interval(Integral, 1, None, closed="left")],
        "hint": [None, StrOptions({"greedy"}), "array-like", HasMethods(["fit", "predict"])],
        "model": [StrOptions({"compact", "expanded"})],
        "random_state": ["random_state"],
    }

    def __init__(self, *, time_limit=10.0, n_workers=1, hint=None, model="compact", random_state=0):
        self.time_limit = time_limit
        self.n_workers = n_workers
        self.hint = hint
        self.model = model
        self.random_state = random_state

    def _hint_schedule(self, problem):
        name = type(self).__name__
        if self.hint is None:
            return None
        if isinstance(self.hint, str):
            return greedy_split(problem)
        if hasattr(self.hint, "fit"):
            schedule = getattr(self.hint, "schedule_", None)
            if schedule is None:
                raise ValueError(f"{name}: hint is a scheduler without a schedule_; fit it on this problem first.")
        else:
            schedule = self.hint
        schedule = np.asarray(schedule)
        if schedule.shape != (problem.n_nodes,) or not problem.is_feasible(schedule):
            raise ValueError(f"{name}: hint must be a legal schedule of shape ({problem.n_nodes},); got shape "
                             f"{schedule.shape}" + ("" if schedule.shape != (problem.n_nodes,) else
                                                    " with an illegal stage or edge") + ".")
        return schedule.astype(np.int64)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Build the model of ``X`` and solve it within ``time_limit``.

        Parameters
        ----------
        X : StageSchedulingProblem, networkx.DiGraph or list of them
            The DAG to schedule, or a list of DAGs.
        y : None
            Ignored.

        Returns
        -------
        self : CPSATScheduler
            Fitted scheduler.
        """
        return self._fit_any(X)

    def _fit_one(self, problem):
        cp_model = _import_cp_model()
        start = time.perf_counter()
        hint = self._hint_schedule(problem)
        built = _Model(problem, self.model, cp_model)
        if hint is not None:
            built.hint(hint, problem)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = float(self.time_limit)
        solver.parameters.num_workers = int(self.n_workers)
        solver.parameters.random_seed = int(check_random_state(self.random_state).randint(2**31 - 1))
        status = solver.Solve(built.model)
        self.status_ = solver.StatusName(status)
        if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
            raise ValueError(f"CPSATScheduler: CP-SAT proved that no legal schedule exists ({self.status_}): the "
                             "lags, stage capacity and rows A_ub of this problem contradict each other.")
        schedule = None
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            schedule = np.array([solver.Value(s) for s in built.stage], dtype=np.int64)
            self.solver_bound_ = float(solver.BestObjectiveBound())
        else:
            self.solver_bound_ = -np.inf
        self._set_result(problem, schedule)
        self.wall_time_ = time.perf_counter() - start
        return self
