"""GumbelScheduler, GreedyStageScheduler, CPSATScheduler and tune_scheduler: legality, oracles, warm starts, errors."""

import itertools
import math

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_icml.datasets import make_scheduling_dag
from sklearn_icml.optimize import (
    CPSATScheduler,
    GreedyStageScheduler,
    GumbelScheduler,
    StageSchedulingProblem,
    tune_scheduler,
)

torch = pytest.importorskip("torch")


def _random_dag(seed, n=None):
    """A random DAG of a random shape: layered, chains, or a random order with random density."""
    rng = np.random.RandomState(seed)
    n = n or rng.randint(5, 60)
    order = rng.permutation(n)
    p = rng.uniform(0.02, 0.4)
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.rand() < p]
    node_weight = np.where(rng.rand(n) < 0.5, 0, rng.randint(1, 100, size=n))
    edge_weight = rng.randint(0, 3, size=len(edges))
    D = rng.randint(1, 7)
    return StageSchedulingProblem(np.array(edges, dtype=np.int64).reshape(-1, 2), node_weight, edge_weight,
                                  n_stages=D, mem_weight=float(rng.choice([1.0, 100.0])))


def _exhaustive_optimum(problem):
    grid = np.array(list(itertools.product(range(problem.n_stages), repeat=problem.n_nodes)))
    return problem.objective(grid).min()


# ------------------------------------------------------------------ legality and bounds
@pytest.mark.parametrize("constraint", ["paper", "mask"])
@pytest.mark.parametrize("init", ["greedy", "stage0", "asap"])
def test_every_sample_is_legal(init, constraint, device):
    from sklearn_icml.optimize._gumbel_sampler import GumbelModel, LevelPlan

    for seed in range(8):
        problem = _random_dag(seed)
        scheduler = GumbelScheduler(batch_size=6, max_iter=8, init=init, constraint=constraint, device=device,
                                    random_state=seed).fit(problem)
        assert problem.is_feasible(scheduler.schedule_)
        assert scheduler.objective_ == problem.objective(scheduler.schedule_)
        assert scheduler.lower_bound_ <= scheduler.objective_ + 1e-9
        # every candidate the sampler draws is legal, not only the best one kept
        plan = LevelPlan(problem)
        model = GumbelModel(plan, problem, torch.device(device), constraint, 50.0)
        gen = torch.Generator().manual_seed(seed)
        logits = torch.randn(16, problem.n_nodes, problem.n_stages, generator=gen) * 30
        noise = -torch.log(-torch.log(torch.rand(logits.shape, generator=gen).clamp(1e-10, 1 - 1e-7)))
        _, _, stages = model.sample(logits.to(device), noise.to(device))
        schedules = np.empty((16, problem.n_nodes), dtype=np.int64)
        schedules[:, plan.order] = stages.cpu().numpy()
        assert np.all(problem.is_feasible(schedules))


@pytest.mark.parametrize("scheduler", [GreedyStageScheduler(),
                                       GumbelScheduler(batch_size=4, max_iter=10, random_state=0)],
                         ids=["greedy", "gumbel"])
def test_bound_below_objective_on_many_dags(scheduler):
    for seed in range(10):
        problem = _random_dag(100 + seed)
        fitted = clone(scheduler).fit(problem)
        assert problem.lower_bound() <= fitted.objective_
        assert fitted.gap_ == pytest.approx(fitted.objective_ / fitted.lower_bound_ - 1.0) or fitted.lower_bound_ == 0


def test_vectorised_sampler_equals_a_per_node_loop():
    """Same logits and noise: the level-vectorised sampler gives the stages, loss and gradient of a per-node loop."""
    from sklearn_icml.optimize._gumbel_sampler import GumbelModel, LevelPlan

    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(60, depth=6, n_stages=5, random_state=1))
    plan = LevelPlan(problem)
    B, n, D, tau = 3, problem.n_nodes, problem.n_stages, 50.0
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(B, n, D, generator=gen) * 20
    noise = -torch.log(-torch.log(torch.rand(B, n, D, generator=gen)))

    logits = base.clone().requires_grad_(True)
    model = GumbelModel(plan, problem, torch.device("cpu"), "paper", tau)
    y, cdf, stages = model.sample(logits, noise)
    loss = model.loss(y, cdf)
    loss.backward()

    # reference in node numbering: logits row of node v is row position[v]
    ref_logits = base.clone().requires_grad_(True)
    bias = torch.log(torch.arange(D + 1, 1, -1, dtype=torch.float32))
    parents = {v: [] for v in range(n)}
    for u, v in problem.edges.tolist():
        parents[v].append(u)
    ys, cdfs, ref_stages = {}, {}, np.zeros((B, n), dtype=np.int64)
    for v in problem.topological_order.tolist():
        row = plan.position[v]
        z = (ref_logits[:, row] + noise[:, row]) / tau
        g = torch.softmax(z, -1)
        if parents[v]:
            for p in parents[v]:
                g = g * bias * cdfs[p]
            soft = torch.softmax(g, -1)
        else:
            soft = g
        index = soft.argmax(-1)
        hard = torch.nn.functional.one_hot(index, D).float()
        ys[v] = hard - soft.detach() + soft
        cdfs[v] = ys[v].cumsum(-1)
        ref_stages[:, v] = index.numpy()
    m = torch.as_tensor(problem.node_weight, dtype=torch.float32)
    loads = sum(ys[v] * m[v] for v in range(n))
    p = loads / m.sum()
    mem = (p * torch.log(p.clamp_min(1e-12))).sum(-1)
    data = problem.data_edges.tolist()
    comm = sum((cdfs[u][:, :-1] * (1 - cdfs[v][:, :-1])).sum(-1) for u, v in data) / len(data)
    ref_loss = (comm + problem.mem_weight * mem).mean()
    ref_loss.backward()

    got = np.empty((B, n), dtype=np.int64)
    got[:, plan.order] = stages.numpy()
    np.testing.assert_array_equal(got, ref_stages)
    assert float(loss.detach()) == pytest.approx(float(ref_loss.detach()), rel=1e-5)
    np.testing.assert_allclose(logits.grad.numpy(), ref_logits.grad.numpy(), rtol=1e-4, atol=1e-7)


# ------------------------------------------------------------------ Gumbel behaviour
def test_greedy_init_never_worse_than_greedy_and_history_monotone():
    for seed in range(5):
        problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(150, depth=8, n_stages=6, random_state=seed))
        greedy = GreedyStageScheduler().fit(problem)
        gumbel = GumbelScheduler(batch_size=8, max_iter=15, random_state=seed).fit(problem)
        assert gumbel.initial_objective_ == greedy.objective_
        assert gumbel.objective_ <= greedy.objective_
        best = gumbel.history_[:, 2]
        assert np.all(np.diff(best) <= 0)
        assert best[-1] == gumbel.objective_
        assert np.all(np.diff(gumbel.history_[:, 1]) >= 0)
        assert gumbel.history_.shape == (gumbel.n_iter_ + 1, 3)
        assert gumbel.n_iter_ == 15 or gumbel.stop_reason_ == "lower_bound"
        assert len(gumbel.loss_curve_) == gumbel.n_iter_


def test_stage0_improves_on_the_release_start():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(200, random_state=0)).replace(n_stages=10)
    gumbel = GumbelScheduler(batch_size=16, max_iter=30, init="stage0", random_state=0).fit(problem)
    assert gumbel.initial_objective_ == problem.mem_weight * problem.node_weight.sum()
    assert gumbel.objective_ < 0.5 * gumbel.initial_objective_


def test_array_init_and_asap():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(80, depth=6, random_state=0))
    asap = GumbelScheduler(batch_size=2, max_iter=0, init="asap", polish=False).fit(problem)
    np.testing.assert_array_equal(asap.schedule_, problem.levels)  # n_stages = depth: ASAP levels themselves
    start = np.full(problem.n_nodes, problem.n_stages - 1)
    start[problem.levels == 0] = 0
    given = GumbelScheduler(batch_size=2, max_iter=0, init=start, polish=False).fit(problem)
    assert given.initial_objective_ == problem.objective(start)
    np.testing.assert_array_equal(given.schedule_, start)


def test_deterministic_under_random_state_and_time_limit_is_anytime():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(100, depth=6, random_state=0))
    a = GumbelScheduler(batch_size=4, max_iter=10, init="stage0", random_state=3).fit(problem)
    b = GumbelScheduler(batch_size=4, max_iter=10, init="stage0", random_state=3).fit(problem)
    np.testing.assert_array_equal(a.schedule_, b.schedule_)
    assert a.loss_curve_ == b.loss_curve_
    quick = GumbelScheduler(batch_size=4, max_iter=10**6, time_limit=0.5, random_state=0).fit(problem)
    assert quick.n_iter_ < 10**6 and quick.history_[-1, 1] < 30
    assert problem.is_feasible(quick.schedule_)


def test_networkx_input_predict_score_and_fit_predict():
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph()
    for i, w in enumerate([3, 1, 4, 1, 5]):
        G.add_node(i, parameter=w)
    for u, v in [(0, 1), (1, 2), (0, 3), (3, 4)]:
        G.add_edge(u, v, parameter=1)
    scheduler = GumbelScheduler(batch_size=4, max_iter=5, random_state=0)
    stages = scheduler.fit_predict(G)
    problem = StageSchedulingProblem.from_networkx(G)
    np.testing.assert_array_equal(scheduler.predict(problem), stages)
    assert scheduler.score(problem) == -problem.objective(stages)
    other = StageSchedulingProblem.from_dataset(make_scheduling_dag(30, depth=3, random_state=0))
    with pytest.raises(ValueError, match="not the problem this scheduler was fitted on"):
        scheduler.predict(other)


@pytest.mark.parametrize("scheduler", [GreedyStageScheduler(), GumbelScheduler(), CPSATScheduler()],
                         ids=lambda s: type(s).__name__)
def test_feature_matrix_is_rejected(scheduler):
    with pytest.raises(TypeError, match=f"{type(scheduler).__name__}: X must be a StageSchedulingProblem"):
        scheduler.fit(np.zeros((5, 3)))


def test_bad_init_and_device():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(30, depth=3, random_state=0))
    with pytest.raises(ValueError, match=r"init must be .* shape \(30,\); got an array of shape \(3,\)"):
        GumbelScheduler(init=[0, 0, 0], max_iter=1).fit(problem)
    illegal = np.zeros(30, dtype=int)
    illegal[problem.edges[0, 0]] = 2
    with pytest.raises(ValueError, match="init schedule is illegal"):
        GumbelScheduler(init=illegal, max_iter=1).fit(problem)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda'"):
            GumbelScheduler(device="cuda").fit(problem)


def test_fit_does_not_modify_the_problem():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(60, depth=5, random_state=0))
    before = (problem.edges.copy(), problem.node_weight.copy(), problem.edge_weight.copy(), problem.digest())
    GumbelScheduler(batch_size=2, max_iter=3, random_state=0).fit(problem)
    np.testing.assert_array_equal(problem.edges, before[0])
    np.testing.assert_array_equal(problem.node_weight, before[1])
    assert problem.digest() == before[3]


def test_verbose_prints_progress(capsys):
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(40, depth=4, random_state=0))
    GumbelScheduler(batch_size=2, max_iter=4, random_state=0).fit(problem)
    assert capsys.readouterr().out == ""
    GumbelScheduler(batch_size=2, max_iter=4, random_state=0, verbose=1).fit(problem)
    assert "GumbelScheduler" in capsys.readouterr().out


# ------------------------------------------------------------------ CP-SAT
def test_cpsat_matches_exhaustive_optimum_both_models():
    pytest.importorskip("ortools")
    for seed in range(3):
        rng = np.random.RandomState(seed)
        n = 7
        order = rng.permutation(n)
        edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.rand() < 0.3]
        problem = StageSchedulingProblem(np.array(edges).reshape(-1, 2), rng.randint(0, 6, size=n),
                                         rng.randint(0, 2, size=len(edges)), n_stages=3, mem_weight=2.0)
        best = _exhaustive_optimum(problem)
        for model in ("compact", "expanded"):
            solver = CPSATScheduler(time_limit=120.0, model=model).fit(problem)
            assert solver.status_ == "OPTIMAL"
            assert solver.objective_ == best


def test_cpsat_hint_from_a_fitted_scheduler_and_no_solution_case():
    pytest.importorskip("ortools")
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(60, depth=5, random_state=0))
    greedy = GreedyStageScheduler().fit(problem)
    hinted = CPSATScheduler(time_limit=5.0, hint=greedy).fit(problem)
    assert hinted.schedule_ is not None and hinted.objective_ <= greedy.objective_ + 1e-9
    assert CPSATScheduler(time_limit=5.0, hint="greedy").fit(problem).objective_ <= greedy.objective_ + 1e-9
    with pytest.raises(ValueError, match="hint must be a legal schedule"):
        CPSATScheduler(hint=np.zeros(3)).fit(problem)
    with pytest.raises(ValueError, match="without a schedule_"):
        CPSATScheduler(hint=GreedyStageScheduler()).fit(problem)
    big = StageSchedulingProblem.from_dataset(make_scheduling_dag(800, random_state=0)).replace(n_stages=10)
    none = CPSATScheduler(time_limit=1e-3, model="expanded").fit(big)
    assert none.status_ == "UNKNOWN" and none.schedule_ is None
    assert none.objective_ == math.inf and none.gap_ == math.inf
    assert none.predict(big) is None


def test_cpsat_import_error_names_ortools(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    monkeypatch.setitem(sys.modules, "ortools", None)
    with pytest.raises(ImportError, match="'ortools'"):
        CPSATScheduler().fit(StageSchedulingProblem.from_dataset(make_scheduling_dag(20, depth=3, random_state=0)))


# ------------------------------------------------------------------ tuning
def test_tune_scheduler_scores_by_mean_gap():
    problems = [StageSchedulingProblem.from_dataset(make_scheduling_dag(60, depth=5, random_state=s)) for s in range(3)]
    grid = {"init": ["stage0", "greedy"], "batch_size": [2]}
    result = tune_scheduler(GumbelScheduler(max_iter=3, random_state=0), grid, problems)
    gaps = np.array([[GumbelScheduler(max_iter=3, random_state=0, **params).fit(p).gap_ for p in problems]
                     for params in result.results_["params"]])
    np.testing.assert_allclose(result.results_["gaps"], gaps)
    assert result.best_score_ == pytest.approx(-gaps.mean(axis=1).min())
    assert result.best_params_ == result.results_["params"][int(np.argmin(gaps.mean(axis=1)))]
    assert sorted(result.results_["rank"]) == [1, 2] or list(result.results_["rank"]) == [1, 1]
    with pytest.raises(ValueError, match="non-empty list"):
        tune_scheduler(GumbelScheduler(), grid, [])


def test_depth_first_order_is_topological_and_keeps_chains_together():
    from sklearn_icml.optimize._scheduling_greedy import depth_first_order

    for seed in range(20):
        problem = _random_dag(seed)
        order = depth_first_order(problem)
        assert sorted(order.tolist()) == list(range(problem.n_nodes))
        position = np.empty(problem.n_nodes, dtype=int)
        position[order] = np.arange(problem.n_nodes)
        assert all(position[u] < position[v] for u, v in problem.edges)
        stages = GreedyStageScheduler(order="depth_first").fit(problem).schedule_
        assert all(stages[u] <= stages[v] for u, v in problem.edges)
    # four parallel chains of four unit nodes in four stages: cutting the level order puts one level per
    # stage (every edge crosses a boundary: 4 chains x 3 edges); the depth-first order puts one chain per
    # stage (no edge crosses) at the same peak memory of 4
    edges = [(4 * c + i, 4 * c + i + 1) for c in range(4) for i in range(3)]
    problem = StageSchedulingProblem(edges, np.ones(16), n_stages=4)
    for order, crossings in (("level", 12), ("depth_first", 0)):
        stages = GreedyStageScheduler(order=order).fit(problem).schedule_
        assert sum(stages[v] - stages[u] for u, v in edges) == crossings
        assert np.bincount(stages, minlength=4).max() == 4
