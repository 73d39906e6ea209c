"""DAGs for stage scheduling (S14): a generator with the released graphs' statistics, and the two released graphs.

The two graphs in ``data/`` come unchanged from the public release of
"Differentiable Combinatorial Scheduling at Scale" (Liu et al., ICML 2024),
under the MIT licence reproduced in ``data/LICENSE_dcs_graphs``.
"""

from importlib import resources

import numpy as np
from sklearn.utils import check_random_state

DCS_GRAPHS = ("rand_graph_1000_1", "rand_graph_sparse_1000_1")


def make_scheduling_dag(n_nodes, *, depth=15, n_stages=None, mem_weight=100.0, random_state=None):
    """A random layered DAG with the statistics of the released scheduling graphs.

    About 20% of the nodes are roots; the others are spread over
    ``depth - 1`` further levels, each with one parent on the level just
    above (so the longest path has exactly ``depth`` nodes) and on average
    2.65 more parents from any earlier level (the dense released graph has
    2.9 edges per node). About 60% of node weights and 60% of edge weights
    are 0, the others uniform integers in ``[1, 5000]``, as released.

    Parameters
    ----------
    n_nodes : int
        Number of nodes, at least ``depth``.
    depth : int, default=15
        Node count of the longest path (the released graphs: 15 and 9).
    n_stages : int, default=None
        Stages of the returned problem; ``None``: ``depth``.
    mem_weight : float, default=100.0
        Weight of the peak stage memory (the release's "ratio").
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    problem : StageSchedulingProblem
        The DAG with its weights, ``comm_weight=1``.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scheduling_dag
    >>> problem = make_scheduling_dag(300, random_state=0)
    >>> problem.n_nodes, problem.n_levels
    (300, 15)
    """
    from ..optimize import StageSchedulingProblem

    if isinstance(n_nodes, bool) or not isinstance(n_nodes, (int, np.integer)) or n_nodes < 1:
        raise ValueError(f"make_scheduling_dag: n_nodes must be a positive int; got {n_nodes!r}.")
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 1 <= depth <= n_nodes:
        raise ValueError(f"make_scheduling_dag: depth must be an int in [1, n_nodes={n_nodes}]; got {depth!r}.")
    rng = check_random_state(random_state)
    n_roots = max(1, int(round(0.2 * n_nodes))) if depth > 1 else n_nodes
    n_roots = min(n_roots, n_nodes - (depth - 1))
    rest = n_nodes - n_roots
    level = np.zeros(n_nodes, dtype=np.int64)
    if depth > 1:
        # one node per level guaranteed, the rest uniform over levels 1..depth-1
        extra = rng.randint(1, depth, size=rest - (depth - 1))
        level[n_roots:] = np.sort(np.r_[np.arange(1, depth), extra])
    starts = np.searchsorted(level, np.arange(depth + 1))
    edges = []
    for v in range(n_roots, n_nodes):
        lv = level[v]
        above = rng.randint(starts[lv - 1], starts[lv])  # the parent one level up fixes v's level
        n_more = min(rng.poisson(2.65), starts[lv])
        more = rng.choice(starts[lv], size=n_more, replace=False) if n_more else np.zeros(0, dtype=np.int64)
        for u in np.unique(np.r_[above, more]):
            edges.append((int(u), v))
    node_weight = np.where(rng.rand(n_nodes) < 0.6, 0, rng.randint(1, 5001, size=n_nodes))
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    edge_weight = np.where(rng.rand(len(edges)) < 0.6, 0, rng.randint(1, 5001, size=len(edges)))
    return StageSchedulingProblem(edges, node_weight, edge_weight, n_stages=n_stages, mem_weight=mem_weight)


def load_dcs_graph(name, **kw):
    """One of the two DAGs released with "Differentiable Combinatorial Scheduling at Scale".

    ``"rand_graph_1000_1"`` (949 nodes, 2730 edges, longest path 15 nodes)
    and ``"rand_graph_sparse_1000_1"`` (810 nodes, 946 edges, longest path 9),
    shipped with the package (MIT licence, copyright Cunxi Yu). The release's
    example run uses ``n_stages=10`` and ``mem_weight=100``.

    Parameters
    ----------
    name : {"rand_graph_1000_1", "rand_graph_sparse_1000_1"}
        Which graph.
    **kw : dict
        ``n_stages``, ``mem_weight``, ``comm_weight`` of
        :class:`~sklearn_icml.optimize.StageSchedulingProblem`.

    Returns
    -------
    problem : StageSchedulingProblem
        The graph; node labels are the file's.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_dcs_graph
    >>> problem = load_dcs_graph("rand_graph_sparse_1000_1", n_stages=10)
    >>> problem.n_nodes, problem.n_edges, problem.n_levels
    (810, 946, 9)
    """
    from ..optimize import StageSchedulingProblem

    if name not in DCS_GRAPHS:
        raise ValueError(f"load_dcs_graph: unknown graph {name!r}; choose one of {DCS_GRAPHS}.")
    with resources.as_file(resources.files(__package__).joinpath("data", f"{name}.gml")) as path:
        return StageSchedulingProblem.from_gml(path, **kw)
