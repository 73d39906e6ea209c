"""DAGs for stage scheduling (S14): a generator with the released graphs' statistics, and the two released graphs.

Both return a :class:`~sklearn.utils.Bunch` of plain arrays (edges, node and
edge weights) and suggested settings; the optimisation family builds its
problem object from it
(:meth:`sklearn_icml.optimize.StageSchedulingProblem.from_dataset`), so this
module knows no estimator. The two graphs in ``data/`` come unchanged from the public release of
"Differentiable Combinatorial Scheduling at Scale" (Liu et al., ICML 2024),
under the MIT licence reproduced in ``data/LICENSE_dcs_graphs``.
"""

from importlib import resources

import numpy as np
from sklearn.utils import Bunch, check_random_state

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
        Suggested number of stages (``data.n_stages``); ``None``: ``depth``.
    mem_weight : float, default=100.0
        Suggested weight of the peak stage memory (the release's "ratio").
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    data : Bunch
        ``edges`` (ndarray of shape (n_edges, 2)), ``node_weight`` (shape
        (n_nodes,)), ``edge_weight`` (shape (n_edges,)), ``levels`` (the
        longest-path level of each node), ``n_stages`` and ``mem_weight``.
        :meth:`sklearn_icml.optimize.StageSchedulingProblem.from_dataset`
        turns it into a problem.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_scheduling_dag
    >>> data = make_scheduling_dag(300, random_state=0)
    >>> data.edges.shape[1], len(data.node_weight), int(data.levels.max()) + 1
    (2, 300, 15)
    """

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
    return Bunch(edges=edges, node_weight=node_weight.astype(np.float64), edge_weight=edge_weight.astype(np.float64),
                 levels=level, n_stages=depth if n_stages is None else n_stages, mem_weight=float(mem_weight))


def load_dcs_graph(name, *, n_stages=None, mem_weight=100.0):
    """One of the two DAGs released with "Differentiable Combinatorial Scheduling at Scale".

    ``"rand_graph_1000_1"`` (949 nodes, 2730 edges, longest path 15 nodes)
    and ``"rand_graph_sparse_1000_1"`` (810 nodes, 946 edges, longest path 9),
    shipped with the package (MIT licence, copyright Cunxi Yu). The release's
    example run uses ``n_stages=10`` and ``mem_weight=100``.

    Parameters
    ----------
    name : {"rand_graph_1000_1", "rand_graph_sparse_1000_1"}
        Which graph.
    n_stages : int, default=None
        Suggested number of stages (``data.n_stages``; ``None`` leaves the
        problem's default, the longest path).
    mem_weight : float, default=100.0
        Suggested weight of the peak stage memory.

    Returns
    -------
    data : Bunch
        ``edges``, ``node_weight``, ``edge_weight`` (the file's
        ``parameter`` attributes), ``node_labels`` (the file's labels),
        ``n_stages`` and ``mem_weight``;
        :meth:`sklearn_icml.optimize.StageSchedulingProblem.from_dataset`
        turns it into a problem.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_dcs_graph
    >>> data = load_dcs_graph("rand_graph_sparse_1000_1", n_stages=10)
    >>> len(data.node_weight), len(data.edges), data.n_stages
    (810, 946, 10)
    """
    import networkx as nx

    if name not in DCS_GRAPHS:
        raise ValueError(f"load_dcs_graph: unknown graph {name!r}; choose one of {DCS_GRAPHS}.")
    with resources.as_file(resources.files(__package__).joinpath("data", f"{name}.gml")) as path:
        G = nx.read_gml(str(path))
    labels = list(G.nodes)
    index = {label: i for i, label in enumerate(labels)}
    node_weight = np.array([float(d["parameter"]) for _, d in G.nodes(data=True)])
    edges = np.array([(index[u], index[v]) for u, v in G.edges()], dtype=np.int64).reshape(-1, 2)
    edge_weight = np.array([float(d["parameter"]) for _, _, d in G.edges(data=True)])
    return Bunch(edges=edges, node_weight=node_weight, edge_weight=edge_weight, node_labels=labels,
                 n_stages=n_stages, mem_weight=float(mem_weight))
