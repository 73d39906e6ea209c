"""The scheduling search and its constraints, against brute force: strict improvement, polish, legality, sklearn."""

import itertools

import numpy as np
import pytest

from sklearn_icml.optimize import (
    CPSATScheduler,
    GreedyStageScheduler,
    GumbelScheduler,
    StageSchedulingProblem,
)
from sklearn_icml.optimize._gumbel_sampler import MaskedSampler
from sklearn_icml.optimize._scheduling_local import LocalRepair

pytest.importorskip("torch")


def _tiny_dag(seed, n=7, D=3, p=0.3, **constraints):
    rng = np.random.RandomState(seed)
    order = rng.permutation(n)
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.rand() < p]
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    node_weight = rng.randint(1, 10, size=n)
    return StageSchedulingProblem(edges, node_weight, rng.randint(0, 2, size=len(edges)), n_stages=D,
                                  mem_weight=10.0, **constraints)


def _all_schedules(problem):
    return np.array(list(itertools.product(range(problem.n_stages), repeat=problem.n_nodes)))


def _brute_legal(problem, s):
    """The constraints by their definitions, one schedule at a time."""
    if any(x < 0 or x >= problem.n_stages for x in s):
        return False
    for (u, v), lag in zip(problem.edges, problem.edge_lag):
        if s[v] - s[u] < lag:
            return False
    if problem.stage_capacity is not None:
        for d in range(problem.n_stages):
            if sum(m for m, x in zip(problem.node_weight, s) if x == d) > problem.stage_capacity:
                return False
    for row, rhs in zip(problem.A_ub, problem.b_ub):
        if sum(a * x for a, x in zip(row, s)) > rhs + 1e-9:
            return False
    return True


# ------------------------------------------------------------------ the search leaves a poor start
@pytest.mark.parametrize("seed", [1, 2, 3, 5])
@pytest.mark.parametrize("polish", [True, False], ids=["polish", "sampling-only"])
def test_search_strictly_improves_a_poor_start(seed, polish):
    problem = _tiny_dag(seed)
    values = problem.objective(_all_schedules(problem))
    optimum = values.min()
    start = np.zeros(problem.n_nodes, dtype=np.int64)  # legal (every node in stage 0) and far from optimal
    assert problem.is_feasible(start) and problem.objective(start) > optimum
    fitted = GumbelScheduler(init=start, polish=polish, max_iter=200, batch_size=32, random_state=seed).fit(problem)
    assert fitted.initial_objective_ == problem.objective(start)
    assert fitted.objective_ < problem.objective(start)  # the start is never what comes back
    assert np.any(fitted.schedule_ != start)
    assert problem.is_feasible(fitted.schedule_) and fitted.objective_ >= optimum
    if polish:  # with the polish, a 7-node DAG is solved to its brute-force optimum
        assert fitted.objective_ == optimum


def test_polish_ends_in_a_local_optimum_checked_move_by_move():
    for seed in range(6):
        problem = _tiny_dag(seed, n=9, D=4, edge_lag=None)
        start = GreedyStageScheduler().fit(problem).schedule_
        polished, _ = LocalRepair(problem, chains=False).polish(start)
        assert problem.is_feasible(polished)
        value = problem.objective(polished)
        assert value <= problem.objective(start)
        for v in range(problem.n_nodes):  # no single move lowers the objective
            for d in range(problem.n_stages):
                moved = polished.copy()
                moved[v] = d
                assert problem.objective(moved) >= value


def test_greedy_plus_polish_beats_greedy_on_a_layered_dag():
    from sklearn_icml.datasets import make_scheduling_dag

    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(400, n_stages=10, random_state=0))
    greedy = GreedyStageScheduler().fit(problem)
    gumbel = GumbelScheduler(max_iter=5, random_state=0).fit(problem)
    assert gumbel.initial_objective_ == greedy.objective_
    assert gumbel.objective_ < greedy.objective_


# ------------------------------------------------------------------ constraints against brute force
def _constrained(seed, kind):
    rng = np.random.RandomState(seed)
    base = _tiny_dag(seed, n=6, D=4)
    if kind == "lag":
        return base.replace(edge_lag=rng.randint(0, 2, size=base.n_edges))
    if kind == "capacity":
        return base.replace(stage_capacity=float(max(base.node_weight.max(), np.ceil(base.node_weight.sum() / 3))))
    a, b = rng.choice(base.n_nodes, size=2, replace=False)
    A = np.zeros((3, base.n_nodes))
    A[0, a], A[0, b], A[1, a], A[1, b] = 1, -1, -1, 1  # a and b share a stage
    A[2, rng.randint(base.n_nodes)] = 1  # and one node in the first two stages
    return base.replace(A_ub=A, b_ub=[0, 0, 1])


@pytest.mark.parametrize("kind", ["lag", "capacity", "rows"])
def test_constraints_legality_matches_brute_force_and_every_scheduler_is_legal(kind):
    pytest.importorskip("ortools")
    for seed in range(5):
        try:
            problem = _constrained(seed, kind)
        except ValueError as exc:
            assert "no legal schedule exists" in str(exc)
            continue
        grid = _all_schedules(problem)
        legal = np.array([_brute_legal(problem, s) for s in grid])
        np.testing.assert_array_equal(problem.is_feasible(grid), legal)
        if not legal.any():
            with pytest.raises(ValueError, match="no legal schedule"):
                CPSATScheduler(time_limit=120).fit(problem)
            continue
        optimum = problem.objective(grid[legal]).min()
        cpsat = CPSATScheduler(time_limit=120).fit(problem)
        assert cpsat.status_ == "OPTIMAL" and cpsat.objective_ == optimum
        try:
            greedy = GreedyStageScheduler().fit(problem)
            assert problem.is_feasible(greedy.schedule_)
            init = "greedy"
        except ValueError as exc:  # the greedy placement may dead-end under capacity or rows
            assert "no legal schedule" in str(exc)
            init = cpsat.schedule_
        gumbel = GumbelScheduler(init=init, max_iter=20, random_state=seed).fit(problem)
        assert problem.is_feasible(gumbel.schedule_) and gumbel.objective_ >= optimum


@pytest.mark.parametrize("kind", ["lag", "capacity", "rows"])
def test_every_complete_sample_is_legal(kind):
    rng = np.random.RandomState(0)
    for seed in range(6):
        try:
            problem = _constrained(seed, kind)
        except ValueError:
            continue
        sampler = MaskedSampler(problem)
        scores = rng.randn(200, problem.n_nodes, problem.n_stages) * 3
        stages, allowed, complete = sampler.sample(scores)
        schedules = np.empty_like(stages)
        schedules[:, sampler.order] = stages
        assert np.all(problem.is_feasible(schedules[complete]))
        if kind == "lag":
            assert complete.all()  # lags alone never leave a node without a stage
        assert allowed[np.arange(200)[:, None], np.arange(problem.n_nodes)[None], stages].all()


def test_contradicting_constraints_raise():
    with pytest.raises(ValueError, match="no legal schedule exists: node 0 needs stage >= 0 .* <= -1"):
        StageSchedulingProblem([(0, 1), (1, 2)], [1, 1, 1], n_stages=3, edge_lag=[2, 1])
    with pytest.raises(ValueError, match="no legal schedule exists: stage_capacity"):
        StageSchedulingProblem([(0, 1)], [5, 5], n_stages=2, stage_capacity=4)
    with pytest.raises(ValueError, match="no legal schedule exists: row 0"):
        StageSchedulingProblem([(0, 1)], [1, 1], n_stages=3, edge_lag=[2], A_ub=[[0, 1]], b_ub=[1])
    with pytest.raises(ValueError, match="A_ub and b_ub go together"):
        StageSchedulingProblem([(0, 1)], [1, 1], A_ub=[[0, 1]])
    with pytest.raises(ValueError, match="GumbelScheduler: constraint='paper' handles plain precedence"):
        GumbelScheduler(constraint="paper", max_iter=1).fit(
            StageSchedulingProblem([(0, 1)], [1, 1], n_stages=3, edge_lag=[1]))


# ------------------------------------------------------------------ budget, progress, scikit-learn
def test_time_limit_is_used_as_a_budget_and_reported(capsys):
    from sklearn_icml.datasets import make_scheduling_dag

    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(300, n_stages=10, random_state=1))
    fitted = GumbelScheduler(max_iter=None, time_limit=1.5, random_state=0, verbose=1).fit(problem)
    out = capsys.readouterr().out
    assert fitted.stop_reason_ in ("time_limit", "lower_bound")
    if fitted.stop_reason_ == "time_limit":
        assert fitted.history_[-1, 1] >= 1.0  # it did not stop early
    assert "stop (" in out and "gap" in out
    with pytest.raises(ValueError, match="max_iter=None needs a time_limit"):
        GumbelScheduler(max_iter=None).fit(problem)


def test_grid_search_and_cross_validate_over_a_list_of_problems():
    from sklearn.model_selection import GridSearchCV, cross_validate

    from sklearn_icml.datasets import make_scheduling_dag

    data = [make_scheduling_dag(60, depth=5, n_stages=5, random_state=s) for s in range(4)]
    problems = [StageSchedulingProblem.from_dataset(d) for d in data]
    search = GridSearchCV(GumbelScheduler(max_iter=3, random_state=0), {"polish": [False, True]}, cv=2)
    search.fit(problems)
    gaps = {}
    for polish in (False, True):  # the score is minus the mean gap of that setting on the held-out problems
        fold_gaps = [GumbelScheduler(max_iter=3, random_state=0, polish=polish).fit(p).gap_ for p in problems]
        gaps[polish] = np.mean(fold_gaps)
    assert search.best_params_ == {"polish": gaps[True] <= gaps[False]}
    cv = cross_validate(GreedyStageScheduler(), problems, cv=2)
    expected = -np.mean([GreedyStageScheduler().fit(p).gap_ for p in problems[:2]])
    assert cv["test_score"][0] == pytest.approx(expected)
    fitted = GreedyStageScheduler().fit(problems)
    assert len(fitted.predict(problems)) == 4 and fitted.gaps_.shape == (4,)
    np.testing.assert_array_equal(GreedyStageScheduler().fit(data).gaps_, fitted.gaps_)  # dataset Bunches too
    with pytest.raises(ValueError, match="fitted on a list of problems"):
        fitted.predict(problems[0])


def test_from_networkx_reads_weight_by_default():
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph()
    G.add_node("a", weight=3)
    G.add_node("b", weight=4)
    G.add_edge("a", "b", weight=0)
    problem = StageSchedulingProblem.from_networkx(G, n_stages=2)
    np.testing.assert_array_equal(problem.node_weight, [3, 4])
    assert len(problem.data_edges) == 0  # the edge's weight 0 was read: no data crosses
    G.add_node("c", weight=1)
    G.add_edge("b", "c")
    with pytest.raises(ValueError, match="some edges carry"):
        StageSchedulingProblem.from_networkx(G)
