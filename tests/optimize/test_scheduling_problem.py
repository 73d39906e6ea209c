"""StageSchedulingProblem: the objective against a brute-force boundary count, the bound, graph I/O, bad input."""

import itertools

import numpy as np
import pytest

from sklearn_icml.datasets import load_dcs_graph, make_scheduling_dag
from sklearn_icml.optimize import StageSchedulingProblem

nx = pytest.importorskip("networkx")


def _brute_force_objective(edges, node_weight, edge_weight, D, mem_weight, comm_weight, stages):
    """The released ``legal_check`` loop: per edge and boundary k, count [s_u <= k][s_v >= k + 1]."""
    for u, v in edges:
        if stages[u] > stages[v]:
            return np.inf
    if any(s < 0 or s >= D for s in stages):
        return np.inf
    comm = 0
    for (u, v), w in zip(edges, edge_weight):
        for k in range(D - 1):
            if w > 0 and stages[u] <= k and stages[v] >= k + 1:
                comm += 1
    loads = [sum(m for m, s in zip(node_weight, stages) if s == d) for d in range(D)]
    return mem_weight * max(loads) + comm_weight * comm


def _random_dag(rng, n, p=0.3):
    order = rng.permutation(n)
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.rand() < p]
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("seed", range(6))
def test_objective_equals_brute_force_boundary_count(seed):
    rng = np.random.RandomState(seed)
    n, D = 7, 4
    edges = _random_dag(rng, n)
    node_weight = rng.randint(0, 5, size=n)
    edge_weight = rng.randint(0, 3, size=len(edges))
    problem = StageSchedulingProblem(edges, node_weight, edge_weight, n_stages=D, mem_weight=3.0, comm_weight=2.0)
    schedules = rng.randint(0, D, size=(200, n))
    values = problem.objective(schedules)
    for s, value in zip(schedules, values):
        expected = _brute_force_objective(edges, node_weight, edge_weight, D, 3.0, 2.0, s)
        assert value == expected
        assert problem.is_feasible(s) == np.isfinite(expected)
        assert problem.objective(s) == expected  # 1-D path too


def test_lower_bound_below_every_legal_schedule_exhaustively():
    rng = np.random.RandomState(0)
    n, D = 6, 3
    edges = _random_dag(rng, n, p=0.25)
    problem = StageSchedulingProblem(edges, rng.randint(0, 7, size=n), n_stages=D)
    values = problem.objective(np.array(list(itertools.product(range(D), repeat=n))))
    best = values[np.isfinite(values)].min()
    assert problem.lower_bound() <= best
    assert problem.lower_bound() == 100.0 * max(np.ceil(problem.node_weight.sum() / D), problem.node_weight.max())


def test_levels_order_and_default_stages():
    edges = [(0, 1), (1, 2), (0, 2), (3, 2)]
    problem = StageSchedulingProblem(edges, [1, 1, 1, 1])
    np.testing.assert_array_equal(problem.levels, [0, 1, 2, 0])
    assert problem.n_stages == problem.n_levels == 3  # the longest path's node count
    position = np.empty(4, dtype=int)
    position[problem.topological_order] = np.arange(4)
    assert all(position[u] < position[v] for u, v in edges)


def test_stage_loads_and_parts():
    problem = StageSchedulingProblem([(0, 1), (1, 2)], [2.0, 3.0, 5.0], [1.0, 0.0], n_stages=3)
    s = np.array([0, 2, 2])
    np.testing.assert_array_equal(problem.stage_loads(s), [2.0, 0.0, 8.0])
    assert problem.peak_memory(s) == 8.0
    assert problem.comm_cost(s) == 2.0  # the second edge carries no data
    assert problem.objective(s) == 802.0


def test_gml_round_trip(tmp_path):
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(120, depth=6, n_stages=5, random_state=3))
    path = tmp_path / "dag.gml"
    problem.write_gml(path)
    again = StageSchedulingProblem.from_gml(path, n_stages=5)

    def rows(p):
        return sorted(zip(p.edges[:, 0].tolist(), p.edges[:, 1].tolist(), p.edge_weight.tolist()))

    assert rows(again) == rows(problem)
    np.testing.assert_array_equal(again.node_weight, problem.node_weight)
    assert again.digest() == problem.digest()
    s = np.minimum(problem.levels, 4)
    assert again.objective(s) == problem.objective(s)


def test_released_graphs_match_their_published_statistics():
    dense = StageSchedulingProblem.from_dataset(load_dcs_graph("rand_graph_1000_1", n_stages=10))
    sparse = StageSchedulingProblem.from_dataset(load_dcs_graph("rand_graph_sparse_1000_1"))
    assert (dense.n_nodes, dense.n_edges, dense.n_levels, dense.n_stages) == (949, 2730, 15, 10)
    assert (sparse.n_nodes, sparse.n_edges, sparse.n_levels, sparse.n_stages) == (810, 946, 9, 9)
    assert int((dense.levels == 0).sum()) == 202
    G = nx.DiGraph(dense.edges.tolist())
    assert nx.dag_longest_path_length(G) + 1 == dense.n_levels  # networkx's own longest path
    with pytest.raises(ValueError, match="unknown graph 'nope'"):
        StageSchedulingProblem.from_dataset(load_dcs_graph("nope"))


def test_make_scheduling_dag_statistics():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(2000, random_state=0))
    assert problem.n_levels == 15
    assert 0.15 < (problem.levels == 0).mean() < 0.25
    assert 0.5 < (problem.node_weight == 0).mean() < 0.7
    assert 0.5 < (problem.edge_weight == 0).mean() < 0.7
    assert 2.4 < problem.n_edges / problem.n_nodes < 3.4
    again = StageSchedulingProblem.from_dataset(make_scheduling_dag(2000, random_state=0))
    np.testing.assert_array_equal(problem.edges, again.edges)


def test_from_networkx_labels_and_attributes():
    G = nx.DiGraph()
    G.add_node("a", parameter=2)
    G.add_node("b", parameter=0)
    G.add_edge("a", "b", parameter=7)
    problem = StageSchedulingProblem.from_networkx(G, n_stages=2)
    assert problem.node_labels == ["a", "b"]
    np.testing.assert_array_equal(problem.edges, [[0, 1]])
    G.add_node("c")
    with pytest.raises(ValueError, match="node 'c' has no 'parameter'"):
        StageSchedulingProblem.from_networkx(G)
    G.nodes["c"]["parameter"] = 1
    G.add_edge("b", "c")
    with pytest.raises(ValueError, match="some edges carry"):
        StageSchedulingProblem.from_networkx(G)
    with pytest.raises(ValueError, match=r"edge \('b', 'c'\) has no 'parameter'"):
        StageSchedulingProblem.from_networkx(G, edge_attr="parameter")
    assert StageSchedulingProblem.from_networkx(G, edge_attr=None).n_edges == 2
    with pytest.raises(TypeError, match="undirected"):
        StageSchedulingProblem.from_networkx(nx.Graph(G))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(edges=[(0, 1), (1, 2), (2, 0)], node_weight=[1, 1, 1]), ValueError, "cycle through node [012]"),
    (dict(edges=[(0, 1), (1, 1)], node_weight=[1, 1]), ValueError, "self-loop on node 1"),
    (dict(edges=[(0, 5)], node_weight=[1, 1]), ValueError, r"edge 0 = \(0, 5\) names an unknown node"),
    (dict(edges=[(0, 1)], node_weight=[1, -2]), ValueError, "node_weight must be non-negative; got -2.0"),
    (dict(edges=[(0, 1)], node_weight=[1, 2], edge_weight=[-1]), ValueError, "edge_weight must be non-negative"),
    (dict(edges=[(0, 1)], node_weight=[1, 2], n_stages=0), ValueError, "n_stages must be >= 1"),
    (dict(edges=[(0, 1)], node_weight=[1, 2], n_stages=2.5), TypeError, "n_stages must be an int"),
    (dict(edges=[(0, 1, 2)], node_weight=[1, 2, 3]), ValueError, r"shape \(n_edges, 2\)"),
    (dict(edges=[], node_weight=[]), ValueError, "no node"),
    (dict(edges=[(0, 1)], node_weight=[1, np.nan]), ValueError, "finite"),
    (dict(edges=[(0, 1)], node_weight=[1, 2], mem_weight=-1.0), ValueError, "mem_weight must be >= 0"),
])
def test_bad_input_gets_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        StageSchedulingProblem(**kwargs)


def test_cycle_error_names_a_node_on_the_cycle():
    # 0 -> 1 -> 2 -> 3 -> 1 : nodes 1, 2, 3 are on the cycle, 0 and 4 are not
    with pytest.raises(ValueError, match="cycle through node [123];"):
        StageSchedulingProblem([(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)], [1] * 5)


def test_stages_input_errors_and_no_mutation():
    problem = StageSchedulingProblem([(0, 1)], [1, 1], n_stages=2)
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        problem.objective([0, 1, 1])
    with pytest.raises(ValueError, match="integers"):
        problem.objective([0, 0.5])
    assert problem.objective([0, 2]) == np.inf  # out of range
    weights = np.array([1.0, 1.0])
    problem = StageSchedulingProblem(np.array([[0, 1]]), weights)
    problem.node_weight[0] = 9.0
    assert weights[0] == 1.0  # a private copy


def test_replace_keeps_graph():
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(50, depth=5, random_state=0))
    other = problem.replace(n_stages=3, mem_weight=1.0)
    assert other.n_stages == 3 and other.mem_weight == 1.0
    np.testing.assert_array_equal(other.edges, problem.edges)
    with pytest.raises(TypeError, match="unknown keyword"):
        problem.replace(depth=3)
