"""GumbelScheduler: differentiable stage scheduling with the constrained Gumbel trick (Liu et al., ICML 2024).

Why its loop stands apart from the shared training layer: there is no data to
batch and no target. The parameters are one logit row per node for each of
``batch_size`` candidate schedules; every epoch draws fresh Gumbel noise,
samples legal schedules level by level, descends the smooth loss once, and
decodes every candidate exactly to keep the best legal schedule seen (an
anytime search, with a wall-clock ``time_limit``). It still speaks the layer's
vocabulary and uses its helpers: the seeded CPU generator
(:func:`~sklearn_icml.utils._torch.torch_generator`), the device and thread
rules of the torch estimator base (``device_``, the fit context), the
progress reporter under ``verbose``, and ``max_iter``, ``n_iter_``,
``loss_curve_`` and ``history_``.
"""

import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import torch_generator
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._training import ProgressReporter
from ._gumbel_sampler import GumbelModel, LevelPlan, _init_logits
from ._scheduling_base import StageSchedulerMixin
from ._scheduling_greedy import greedy_split

#: Cosine schedule of the release: ``CosineAnnealingLR(T_max=50, eta_min=1e-7)`` stepped every epoch.
_T_MAX, _ETA_MIN = 50, 1e-7
#: Logit scale of the initial one-hot rows: the release's stage-0 start (1, and 10 on roots); warm starts (10).
_STAGE0_SCALE, _STAGE0_ROOT_SCALE, _WARM_SCALE = 1.0, 10.0, 10.0


class GumbelScheduler(StageSchedulerMixin, TorchEstimatorMixin, BaseEstimator):
    """Differentiable stage scheduling of a DAG with the constrained Gumbel trick.

    Every node of the DAG gets a stage with ``s_u <= s_v`` on every edge,
    minimising ``mem_weight * peak stage memory + comm_weight * stage
    boundaries crossed by data edges`` (:class:`StageSchedulingProblem`). Each
    of ``batch_size`` candidate schedules has one logit row per node; stages
    are sampled by straight-through Gumbel-softmax in topological order, each
    node's distribution masked by its parents' stage CDFs so that every sample
    is legal ("constrained Gumbel trick"). The smooth loss, mean boundary
    probability plus ``mem_weight`` times the negative entropy of the stage
    loads, is descended with AdamW under the release's cosine schedule, and the
    best legal schedule over all samples and epochs (the initial one included)
    is kept.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    tau : float, default=50.0
        Gumbel-softmax temperature, fixed as in the release.
    learning_rate : float, default=1.0
        AdamW learning rate (the release's example: 1).
    batch_size : int, default=64
        Candidate schedules trained at once (the release's example on GPU:
        250; 16-64 suit a CPU).
    max_iter : int, default=500
        Epochs (the release: 500).
    init : {"greedy", "stage0", "asap"} or array-like of shape (n_nodes,), \
            default="greedy"
        Initial schedule: the greedy topological split
        (:class:`GreedyStageScheduler`), every node at stage 0 (the release),
        each node at its longest-path level (capped at ``n_stages - 1``), or
        a legal schedule given. It sets the initial logits and is the first
        best-so-far schedule.
    constraint : {"paper", "mask"}, default="paper"
        "paper": the release's masking, ``softmax`` probabilities multiplied
        by ``b_k = log(D + 1 - k)`` and by each parent's stage CDF, then a
        second softmax; "mask": ``-inf`` logits below the latest parent's
        stage.
    time_limit : float, default=None
        Wall-clock seconds after which fitting stops (checked every epoch);
        ``None``: run ``max_iter`` epochs, reproducibly.
    device : {"cpu", "auto", "cuda"}, default="cpu"
        Where the tensors live; resolved at the start of ``fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the Gumbel noise (drawn on the CPU, then moved to the device).
    verbose : int, default=0
        Progress lines (loss, best objective, gap to the bound, seconds)
        through the shared progress reporter: about 20 per fit with 1, every
        epoch with 2.

    Attributes
    ----------
    schedule_ : ndarray of shape (n_nodes,)
        Best legal schedule found.
    objective_ : float
        Its objective.
    peak_memory_ : float
        Its largest stage load.
    comm_cost_ : float
        Stage boundaries it crosses on data edges.
    stage_loads_ : ndarray of shape (n_stages,)
        Its stage loads.
    lower_bound_ : float
        :meth:`StageSchedulingProblem.lower_bound`.
    gap_ : float
        ``objective_ / lower_bound_ - 1``.
    initial_objective_ : float
        Objective of the initial schedule.
    history_ : ndarray of shape (`n_iter_` + 1, 3)
        Rows ``(epoch, seconds since fit started, best objective so far)``;
        row 0 is the initial schedule.
    loss_curve_ : list of float
        Smooth loss of each epoch.
    n_iter_ : int
        Epochs run.
    n_nodes_ : int
        Nodes of the fitted problem.
    n_stages_ : int
        Stages of the fitted problem.
    problem_digest_ : str
        Hash of the fitted problem (``predict`` and ``score`` accept only it).
    device_ : str
        Device the work ran on.

    See Also
    --------
    StageSchedulingProblem : The problem and its exact objective.
    GreedyStageScheduler : The greedy split, the default warm start.
    CPSATScheduler : OR-tools CP-SAT, optionally warm-started from this scheduler.
    tune_scheduler : Grid search over several graphs.

    Notes
    -----
    Faithful to the released ``parse_graph_w_attr.py``: fixed ``tau``, AdamW
    with torch's default weight decay, ``CosineAnnealingLR(T_max=50,
    eta_min=1e-7)`` stepped each epoch (so the rate rises again every 100
    epochs), the same loss (the communication term averaged over data edges,
    the memory term scaled by ``mem_weight``), the "paper" masking. Choices of
    this implementation: the nodes are processed per longest-path level with
    index gathers instead of generated per-node code; every candidate of every
    epoch is decoded and scored exactly (the release scores the candidate of
    lowest loss); the initial schedule counts as a candidate; the release's
    stage-0 start puts logit 1 on stage 0 (10 on roots), and the other starts
    put logit 10 on their initial stage. The Gumbel noise is drawn on the CPU,
    so CPU and CUDA runs start from the same numbers (float rounding may make
    them part later).

    References
    ----------
    .. [1] M. Liu, Y. Li, J. Yin, Z. Zhang and C. Yu, "Differentiable
       Combinatorial Scheduling at Scale", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scheduling_dag
    >>> from sklearn_icml.optimize import GumbelScheduler
    >>> problem = make_scheduling_dag(100, depth=6, random_state=0)
    >>> scheduler = GumbelScheduler(batch_size=8, max_iter=20, random_state=0).fit(problem)
    >>> bool(problem.is_feasible(scheduler.schedule_))
    True
    >>> bool(scheduler.objective_ <= scheduler.initial_objective_)
    True
    """

    _parameter_constraints = {
        "tau": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "init": [StrOptions({"greedy", "stage0", "asap"}), "array-like"],
        "constraint": [StrOptions({"paper", "mask"})],
        "time_limit": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, *, tau=50.0, learning_rate=1.0, batch_size=64, max_iter=500, init="greedy",
                 constraint="paper", time_limit=None, device="cpu", random_state=None, verbose=0):
        self.tau = tau
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.init = init
        self.constraint = constraint
        self.time_limit = time_limit
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _initial_schedule(self, problem):
        name = type(self).__name__
        if isinstance(self.init, str):
            if self.init == "greedy":
                return greedy_split(problem)
            if self.init == "stage0":
                return np.zeros(problem.n_nodes, dtype=np.int64)
            return np.minimum(problem.levels, problem.n_stages - 1).astype(np.int64)
        init = np.asarray(self.init)
        if init.shape != (problem.n_nodes,):
            raise ValueError(f"{name}: init must be 'greedy', 'stage0', 'asap' or a schedule of shape "
                             f"({problem.n_nodes},); got an array of shape {init.shape}.")
        if not problem.is_feasible(init):
            raise ValueError(f"{name}: the init schedule is illegal (a stage outside [0, {problem.n_stages}) "
                             "or s_u > s_v on an edge).")
        return init.astype(np.int64)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Search for a low-objective legal schedule of ``X``.

        Parameters
        ----------
        X : StageSchedulingProblem or networkx.DiGraph
            The DAG to schedule (a DiGraph is read with
            :meth:`StageSchedulingProblem.from_networkx`'s defaults).
        y : None
            Ignored.

        Returns
        -------
        self : GumbelScheduler
            Fitted scheduler.
        """
        with self._torch_fit_context() as ctx:
            start = time.perf_counter()
            problem = self._problem(X)
            initial = self._initial_schedule(problem)
            self.initial_objective_ = problem.objective(initial)
            rng = check_random_state(self.random_state)
            best, history, losses = self._search(problem, initial, ctx.device, rng, start)
        self._set_result(problem, best)
        self.history_ = np.asarray(history, dtype=np.float64).reshape(-1, 3)
        self.loss_curve_ = losses
        self.n_iter_ = len(losses)
        return self

    def _search(self, problem, initial, device, rng, start):
        import torch

        plan = LevelPlan(problem)
        model = GumbelModel(plan, problem, device, self.constraint, self.tau)
        scale, root_scale = ((_STAGE0_SCALE, _STAGE0_ROOT_SCALE) if isinstance(self.init, str)
                             and self.init == "stage0" else (_WARM_SCALE, _WARM_SCALE))
        B, n, D = self.batch_size, problem.n_nodes, problem.n_stages
        logits = torch.nn.Parameter(torch.as_tensor(_init_logits(plan, problem, initial, B, scale, root_scale),
                                                    device=device))
        optimizer = torch.optim.AdamW([logits], lr=self.learning_rate)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=_T_MAX, eta_min=_ETA_MIN)
        generator = torch_generator(rng)
        best, best_value = initial.copy(), float(self.initial_objective_)
        history, losses = [(0, time.perf_counter() - start, best_value)], []
        bound = problem.lower_bound()
        reporter = ProgressReporter(type(self).__name__, max_iter=self.max_iter, verbose=self.verbose)
        for epoch in range(1, self.max_iter + 1):
            if self.time_limit is not None and time.perf_counter() - start >= self.time_limit:
                break
            uniform = torch.rand(B, n, D, generator=generator).clamp_(1e-10, 1.0 - 1e-7)
            noise = (-torch.log(-torch.log(uniform))).to(device)
            y, cdf, stages = model.sample(logits, noise)
            loss = model.loss(y, cdf)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            with torch.no_grad():
                values = model.objective(stages)
                value, which = torch.min(values, dim=0)
                value = float(value)
            if value < best_value:
                best_value = value
                best = np.empty(n, dtype=np.int64)
                best[plan.order] = stages[int(which)].cpu().numpy()
            losses.append(float(loss.detach()))
            history.append((epoch, time.perf_counter() - start, best_value))
            reporter.epoch(epoch, losses[-1], best_objective=f"{best_value:.6g}",
                           gap=f"{best_value / bound - 1 if bound > 0 else 0.0:.3%}",
                           seconds=f"{history[-1][1]:.1f}", force=epoch == self.max_iter)
        return best, history, losses
