"""GumbelScheduler: differentiable stage scheduling with the constrained Gumbel trick (Liu et al., ICML 2024).

Why its loop stands apart from the shared training layer: there is no data to
batch and no target. The parameters are one logit row per node; every epoch
draws ``batch_size`` legal schedules from them at once (each node's Gumbel
noise masked to the stages its constraints allow), keeps the best legal one,
repairs it locally, descends a smooth surrogate of the objective by
straight-through gradients, and restarts from the best schedule when the
search stalls (an anytime search, with a wall-clock ``time_limit``). It still
speaks the layer's vocabulary and uses its helpers: the device and thread
rules of the torch estimator base (``device_``, the fit context), the
progress reporter under ``verbose``, and ``max_iter``, ``n_iter_``,
``loss_curve_`` and ``history_``.
"""

import math
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import resolve_device
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._training import ProgressReporter
from ._gumbel_sampler import GumbelModel, LevelPlan, MaskedSampler
from ._scheduling_base import StageSchedulerMixin
from ._scheduling_greedy import greedy_schedule
from ._scheduling_local import LocalRepair

#: Polish passes spent on each sample (the initial schedule gets as many as it needs).
_POLISH_PASSES = 25
#: Seconds between progress lines under ``verbose=1`` (improvements are always printed).
_REPORT_EVERY = 1.0


class GumbelScheduler(StageSchedulerMixin, TorchEstimatorMixin, BaseEstimator):
    """Differentiable stage scheduling of a DAG with the constrained Gumbel trick.

    Every node of the DAG gets a stage, with ``s_v - s_u >= lag`` on every
    edge and the problem's side constraints (stage capacity, rows ``A_ub @ s
    <= b_ub``), minimising ``mem_weight * peak stage memory + comm_weight *
    stage boundaries crossed by data edges`` (:class:`StageSchedulingProblem`).
    One logit row per node defines a distribution over schedules; each epoch
    samples ``batch_size`` schedules from it by the constrained Gumbel trick
    (nodes in topological order, each node's Gumbel-max restricted to the
    stages its parents and constraints leave, so that samples are legal),
    keeps the best legal sample, polishes it by single-node moves (see
    Notes), and takes one AdamW step on a straight-through surrogate of the
    objective. The logits start centred on the best schedule so far (a peak
    at each node's stage, falling off with the distance to it) and are
    re-centred on it after ``restart_after`` epochs without improvement;
    the sampling temperature anneals geometrically from ``tau`` to
    ``tau_final`` over the run.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    tau : float, default=2.0
        Starting temperature: a node's stage is drawn from
        ``softmax(logits / tau)`` over its allowed stages.
    tau_final : float or None, default=0.5
        Temperature at the end of the run (geometric annealing over
        ``max_iter`` epochs, or over ``time_limit`` seconds when
        ``max_iter`` is None); ``None``: ``tau`` throughout.
    move_probability : float or None, default=None
        Sets the height ``log((n_stages - 1) (1 - p) / p)`` of each node's
        logit at its stage in the best schedule: at temperature 1 a node
        would leave its stage with probability ``p`` if every other stage
        had logit 0. The adjacent stages have logit 0 and each stage beyond
        one less, so a node leaves less often than ``p``, mostly to an
        adjacent stage, and a node that its parents push past its stage
        lands near it (higher temperatures move more nodes). ``None``:
        ``min(0.05, 1 / n_nodes)``.
    learning_rate : float, default=0.1
        AdamW learning rate on the logits (0 turns the gradient off: a pure
        sampling search around the best schedule).
    batch_size : int, default=64
        Schedules sampled per epoch.
    max_iter : int or None, default=100
        Epochs; ``None``: until ``time_limit`` (which must then be set).
    init : {"greedy", "stage0", "asap"} or array-like of shape (n_nodes,), \
            default="greedy"
        Initial schedule: the greedy split (:class:`GreedyStageScheduler`),
        every node at its earliest stage (stage 0 without lags: the
        release's start), each node at its longest-path level (capped at its
        latest stage), or a legal schedule given.
    polish : bool, default=True
        Repair the best sample of each epoch (and the initial schedule) by
        single-node moves while the objective improves.
    restart_after : int or None, default=10
        Epochs without improvement after which the logits are re-centred on
        the best schedule and AdamW restarted; ``None``: never.
    n_iter_no_change : int or None, default=None
        Convergence rule: stop after this many epochs without improvement.
        The search also stops when the objective reaches
        :meth:`StageSchedulingProblem.lower_bound` (proven optimal).
    constraint : {"mask", "paper"}, default="mask"
        "mask": the sampler above, any constraint. "paper": the release's
        multiplicative masking (``softmax((logits + noise) / tau)`` times
        ``b_k = log(D + 1 - k)`` and each parent's stage CDF, a second
        softmax) and the release's entropy loss; plain precedence only.
    time_limit : float, default=None
        Wall-clock budget in seconds (checked every epoch and inside the
        polish); ``None``: run ``max_iter`` epochs, reproducibly.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the gradient step runs; resolved at the start of ``fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the Gumbel noise.
    verbose : int, default=0
        Progress lines (epoch, loss, best objective, gap to the bound,
        seconds): every improvement and about one a second with 1, every
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
        Objective of the initial schedule (before any polish).
    history_ : ndarray of shape (`n_iter_` + 1, 3)
        Rows ``(epoch, seconds since fit started, best objective so far)``;
        row 0 is the initial schedule after its polish.
    loss_curve_ : list of float
        Smooth loss of each epoch.
    n_iter_ : int
        Epochs run.
    n_restarts_ : int
        Times the logits were re-centred after ``restart_after`` idle epochs.
    n_polish_moves_ : int
        Single-node moves made by the polish.
    stop_reason_ : str
        "max_iter", "time_limit", "n_iter_no_change" or "lower_bound".
    n_nodes_ : int
        Nodes of the fitted problem.
    n_stages_ : int
        Stages of the fitted problem.
    problem_digest_ : str
        Hash of the fitted problem (``predict`` and ``score`` accept only it).
    device_ : str
        Device the gradient step ran on.

    See Also
    --------
    StageSchedulingProblem : The problem, its constraints and exact objective.
    GreedyStageScheduler : The greedy split, the default warm start.
    CPSATScheduler : OR-tools CP-SAT, optionally warm-started from this scheduler.
    tune_scheduler : Grid search over several graphs.

    Notes
    -----
    The released code samples with a fixed ``tau = 50`` from logits of scale
    1 to 10; at that temperature ``softmax((logits + noise) / tau)`` is nearly
    flat, so the multiplicative bias ``b_k`` and the parents' CDFs decide the
    argmax, samples pile up in early stages, and no sample beats a good warm
    start (the search returned its greedy start unchanged). This
    implementation samples ``argmax(logits / tau + noise)`` over the allowed
    stages, so the temperature sets how far samples stray from the logits'
    mode, and keeps the logits centred on the best schedule. The surrogate
    loss is the objective itself on straight-through one-hot samples, the
    peak replaced by a log-sum-exp over stage loads at a temperature of 5% of
    the mean load; the communication term is linear in the stages.

    The polish scores every single-node move to a stage its parents,
    children, capacity and rows allow, and applies improving ones (lower
    objective, or equal objective and lower sum of squared loads) until none
    is left or the time is up; when none is left it shifts a node by one
    stage together with the nodes that edges at their minimum distance drag
    along (graphs up to 2,000 nodes). The initial schedule is polished in
    full, each sample for at most 25 passes.

    ``constraint="paper"`` keeps the release's sampler and loss for
    comparison (with the shared logits, the annealing and the polish of this
    class unless turned off: ``tau=50, tau_final=None, learning_rate=1,
    polish=False, restart_after=None``).

    References
    ----------
    .. [1] M. Liu, Y. Li, J. Yin, Z. Zhang and C. Yu, "Differentiable
       Combinatorial Scheduling at Scale", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scheduling_dag
    >>> from sklearn_icml.optimize import GumbelScheduler, StageSchedulingProblem
    >>> problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(100, depth=6, random_state=0))
    >>> scheduler = GumbelScheduler(max_iter=20, random_state=0).fit(problem)
    >>> bool(problem.is_feasible(scheduler.schedule_))
    True
    >>> bool(scheduler.objective_ < scheduler.initial_objective_)
    True
    """

    #: Logit penalty per stage beyond the adjacent ones around each node's stage in the best schedule (0: every
    #: other stage level, as a plain one-hot; the benchmark's ablation sets it on an instance).
    _distance_slope = 1.0

    _parameter_constraints = {
        "tau": [Interval(Real, 0, None, closed="neither")],
        "tau_final": [Interval(Real, 0, None, closed="neither"), None],
        "move_probability": [Interval(Real, 0, 1, closed="neither"), None],
        # AdamW's steps are about learning_rate in size: beyond 1e30 the float32 logits overflow
        "learning_rate": [Interval(Real, 0, 1e30, closed="both")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left"), None],
        "init": [StrOptions({"greedy", "stage0", "asap"}), "array-like"],
        "polish": ["boolean"],
        "restart_after": [Interval(Integral, 1, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), None],
        "constraint": [StrOptions({"paper", "mask"})],
        "time_limit": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, *, tau=2.0, tau_final=0.5, move_probability=None, learning_rate=0.1, batch_size=64,
                 max_iter=100, init="greedy", polish=True, restart_after=10, n_iter_no_change=None,
                 constraint="mask", time_limit=None, device="cpu", random_state=None, verbose=0):
        self.tau = tau
        self.tau_final = tau_final
        self.move_probability = move_probability
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.init = init
        self.polish = polish
        self.restart_after = restart_after
        self.n_iter_no_change = n_iter_no_change
        self.constraint = constraint
        self.time_limit = time_limit
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _initial_schedule(self, problem):
        name = type(self).__name__
        if isinstance(self.init, str):
            if self.init == "greedy":
                return greedy_schedule(problem, name=name)
            if self.init == "stage0":
                start = problem.earliest.copy()
            else:
                start = np.clip(problem.levels, problem.earliest, problem.latest).astype(np.int64)
            if not problem.is_feasible(start):
                raise ValueError(f"{name}: init={self.init!r} breaks the problem's stage capacity or rows; use "
                                 "init='greedy' or give a legal schedule.")
            return start
        init = np.asarray(self.init)
        if init.shape != (problem.n_nodes,):
            raise ValueError(f"{name}: init must be 'greedy', 'stage0', 'asap' or a schedule of shape "
                             f"({problem.n_nodes},); got an array of shape {init.shape}.")
        if not problem.is_feasible(init):
            raise ValueError(f"{name}: the init schedule is illegal (a stage outside [0, {problem.n_stages}), "
                             "an edge's lag or a side constraint broken).")
        return init.astype(np.int64)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Search for a low-objective legal schedule of ``X``.

        Parameters
        ----------
        X : StageSchedulingProblem, networkx.DiGraph or list of them
            The DAG to schedule (a DiGraph is read with
            :meth:`StageSchedulingProblem.from_networkx`'s defaults). A list
            schedules every problem (see ``schedules_``).
        y : None
            Ignored.

        Returns
        -------
        self : GumbelScheduler
            Fitted scheduler.
        """
        with self._torch_fit_context():  # the device is resolved (a missing GPU refused) before X is read
            return self._fit_any(X)

    def _fit_one(self, problem):
        name = type(self).__name__
        if self.max_iter is None and self.time_limit is None:
            raise ValueError(f"{name}: max_iter=None needs a time_limit (the search would never stop).")
        if self.constraint == "paper" and (problem.edge_lag.any() or problem.has_side_constraints):
            raise ValueError(f"{name}: constraint='paper' handles plain precedence only; this problem has lags, a "
                             "stage capacity or rows A_ub. Use constraint='mask'.")
        device = resolve_device(self.device)
        self.device_ = str(device)
        start = time.perf_counter()
        initial = self._initial_schedule(problem)
        self.initial_objective_ = problem.objective(initial)
        rng = check_random_state(self.random_state)
        best = self._search(problem, initial, device, rng, start)
        return self._set_result(problem, best)

    @staticmethod
    def _candidates(schedules, values, best, polish, k=8):
        """The best legal samples (up to ``k`` that differ from ``best`` when polishing, else the best one)."""
        order = np.argsort(values, kind="stable")
        order = order[np.isfinite(values[order])]
        if not polish:
            return [schedules[i] for i in order[:1]]
        differ = [i for i in order.tolist() if np.any(schedules[i] != best)]
        return [schedules[i] for i in differ[:k]]

    def _tau(self, epoch, elapsed):
        if self.tau_final is None:
            return float(self.tau)
        if self.max_iter is not None:
            frac = (epoch - 1) / max(self.max_iter - 1, 1)
        else:
            frac = elapsed / self.time_limit
        frac = min(max(frac, 0.0), 1.0)
        return float(self.tau) * (float(self.tau_final) / float(self.tau)) ** frac

    def _search(self, problem, initial, device, rng, start):
        import torch

        n, D, B = problem.n_nodes, problem.n_stages, self.batch_size
        deadline = None if self.time_limit is None else start + float(self.time_limit)
        repair = LocalRepair(problem) if self.polish else None
        bound = problem.lower_bound()
        reporter = ProgressReporter(type(self).__name__, max_iter=self.max_iter, verbose=self.verbose)
        best = initial.copy()
        self.n_polish_moves_ = 0
        if repair is not None:
            best, moves = repair.polish(best, deadline=deadline)
            self.n_polish_moves_ += moves
        best_value = float(problem.objective(best))
        history, losses = [(0, time.perf_counter() - start, best_value)], []
        self.n_restarts_ = 0
        self.stop_reason_ = "max_iter"
        reporter.message(f"start  objective {best_value:.6g}  gap {problem.gap(best_value):.3%}  "
                         f"(initial {self.initial_objective_:.6g})")
        if self.constraint == "paper":
            plan = LevelPlan(problem)
            model = GumbelModel(plan, problem, device, "paper", 1.0)
            order = plan.order
        else:
            sampler = MaskedSampler(problem)
            order = sampler.order
        rho = self.move_probability if self.move_probability is not None else min(0.05, 1.0 / n)
        scale = math.log(max(D - 1, 1) * (1.0 - rho) / rho)
        # the logits of the best schedule: `scale` at its stage, 0 at the adjacent stages, minus _distance_slope
        # per stage beyond (a node that its parents push past its stage lands near it, not anywhere later)
        distance = np.abs(np.arange(D)[:, None] - np.arange(D)[None, :])
        penalty = -float(self._distance_slope) * np.maximum(distance - 1, 0)
        weight = torch.as_tensor(problem.node_weight[order], dtype=torch.float32, device=device)
        coef = torch.as_tensor(problem.data_coef[order], dtype=torch.float32, device=device)
        stage_index = torch.arange(D, dtype=torch.float32, device=device)
        smooth = max(0.05 * float(problem.node_weight.sum()) / D, 1e-9)
        norm = max(bound, 1.0)
        noise_rng = np.random.default_rng(rng.randint(2**31 - 1))

        def centred(schedule):
            logits = penalty[schedule[order]].astype(np.float32)
            logits[np.arange(n), schedule[order]] = scale
            return torch.nn.Parameter(torch.as_tensor(logits, device=device))

        logits = centred(best)
        optimizer = torch.optim.AdamW([logits], lr=self.learning_rate) if self.learning_rate > 0 else None
        stale, epoch, last_report = 0, 0, time.perf_counter()
        while True:
            now = time.perf_counter()
            if self.max_iter is not None and epoch >= self.max_iter:
                break
            if deadline is not None and now >= deadline:
                self.stop_reason_ = "time_limit"
                break
            if best_value <= bound * (1 + 1e-12):
                self.stop_reason_ = "lower_bound"
                break
            if self.n_iter_no_change is not None and stale >= self.n_iter_no_change:
                self.stop_reason_ = "n_iter_no_change"
                break
            epoch += 1
            tau = self._tau(epoch, now - start)
            gumbel = -np.log(-np.log(noise_rng.random((B, n, D), dtype=np.float32).clip(1e-10, 1 - 1e-7)))
            if self.constraint == "paper":
                noise = torch.as_tensor(gumbel, device=device)
                model.tau = tau
                y, cdf, stages_t = model.sample(logits[None].expand(B, n, D), noise)
                loss = model.loss(y, cdf)
                stages_pos = stages_t.detach().cpu().numpy()
            else:
                with torch.no_grad():
                    scores = (logits.detach()[None] / tau).cpu().numpy() + gumbel
                stages_pos, allowed, _ = sampler.sample(scores)
                z = logits[None] / tau + torch.as_tensor(gumbel, device=device)
                mask = torch.as_tensor(allowed, device=device)
                soft = torch.softmax(z.masked_fill(~mask, -math.inf), dim=-1)
                hard = torch.nn.functional.one_hot(torch.as_tensor(stages_pos, device=device), D).to(soft.dtype)
                y = hard - soft.detach() + soft
                loads = torch.einsum("bnd,n->bd", y, weight)
                peak = smooth * torch.logsumexp(loads / smooth, dim=-1)
                comm = (y * stage_index).sum(-1) @ coef
                loss = ((problem.mem_weight * peak + problem.comm_weight * comm) / norm).mean()
            if optimizer is not None:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            losses.append(float(loss.detach()))
            schedules = np.empty((B, n), dtype=np.int64)
            schedules[:, order] = stages_pos
            values = problem.objective(schedules)
            improved = False
            for candidate in self._candidates(schedules, values, best, repair is not None):
                if repair is not None:
                    candidate, moves = repair.polish(candidate, deadline=deadline, max_passes=_POLISH_PASSES)
                    self.n_polish_moves_ += moves
                value = float(problem.objective(candidate))
                if value < best_value:
                    best, best_value, improved = candidate, value, True
            stale = 0 if improved else stale + 1
            if ((improved and getattr(self, "_recentre", False))
                    or (self.restart_after is not None and stale and stale % self.restart_after == 0)):
                self.n_restarts_ += not improved
                logits = centred(best)
                if optimizer is not None:
                    optimizer = torch.optim.AdamW([logits], lr=self.learning_rate)
            elapsed = time.perf_counter() - start
            history.append((epoch, elapsed, best_value))
            if self.verbose and (improved or self.verbose >= 2 or time.perf_counter() - last_report >= _REPORT_EVERY):
                last_report = time.perf_counter()
                reporter.epoch(epoch, losses[-1], force=True, best_objective=f"{best_value:.6g}",
                               gap=f"{problem.gap(best_value):.3%}", tau=f"{tau:.3g}", seconds=f"{elapsed:.1f}")
        reporter.message(f"stop ({self.stop_reason_}) after {epoch} epochs, {time.perf_counter() - start:.1f} s: "
                         f"objective {best_value:.6g}  gap {problem.gap(best_value):.3%}  "
                         f"restarts {self.n_restarts_}")
        self.history_ = np.asarray(history, dtype=np.float64).reshape(-1, 3)
        self.loss_curve_ = losses
        self.n_iter_ = epoch
        return best
