"""Stage scheduling of a DAG: the problem, its exact objective, bound and graph I/O (S14).

A DAG's nodes get stages ``s_v`` in ``{0, ..., D - 1}`` with ``s_u <= s_v`` on
every edge. The objective of Liu et al. (ICML 2024, as released) is

    J(s) = mem_weight * max_d sum_{v: s_v = d} m_v
           + comm_weight * sum_{(u, v): w_uv > 0} #{k : s_u <= k < s_v},

peak stage memory plus the stage boundaries crossed by data-carrying edges.
Given ``s_u <= s_v`` the boundary count of an edge is ``s_v - s_u``.
"""

import hashlib
import math
from numbers import Integral, Real

import numpy as np

__all__ = ["StageSchedulingProblem"]


def _levels_kahn(n_nodes, sources, targets):
    """Longest-path level of each node (roots at 0), by level-synchronous Kahn; -1 on nodes left by a cycle."""
    order = np.argsort(sources, kind="stable")
    starts = np.searchsorted(sources[order], np.arange(n_nodes + 1))
    children = targets[order]
    indegree = np.bincount(targets, minlength=n_nodes)
    level = np.full(n_nodes, -1, dtype=np.intp)
    frontier = np.flatnonzero(indegree == 0)
    depth = 0
    while frontier.size:
        level[frontier] = depth
        counts = starts[frontier + 1] - starts[frontier]
        if counts.sum() == 0:
            break
        idx = np.repeat(starts[frontier] - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
        hit = children[idx]
        np.subtract.at(indegree, hit, 1)
        touched = np.unique(hit)
        frontier = touched[indegree[touched] == 0]
        depth += 1
    return level


def _node_on_cycle(n_nodes, sources, targets, left):
    """A node on a cycle among the nodes Kahn's algorithm could not order."""
    inside = np.zeros(n_nodes, dtype=bool)
    inside[left] = True
    parent = {}
    for u, v in zip(sources.tolist(), targets.tolist()):
        if inside[u] and inside[v]:
            parent.setdefault(v, u)
    node, seen = int(left[0]), set()
    while node not in seen:  # every remaining node has a remaining parent, so this walk must repeat
        seen.add(node)
        node = parent[node]
    return node


#: Largest total of node (or edge) weights: the objective squares stage loads, so totals stay below sqrt(float max).
_MAX_TOTAL_WEIGHT = 1e150


def _as_weights(values, n, what, name="StageSchedulingProblem"):
    try:
        arr = np.array(values, dtype=np.float64)  # a copy: the caller's array is never kept
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: {what} must be numeric; got {values!r:.80}.") from exc
    if arr.shape != (n,):
        raise ValueError(f"{name}: {what} must have shape ({n},); got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: {what} must be finite; got a non-finite value at index "
                         f"{int(np.flatnonzero(~np.isfinite(arr))[0])}.")
    if np.any(arr < 0):
        i = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name}: {what} must be non-negative; got {float(arr[i])!r} at index {i}.")
    with np.errstate(over="ignore"):
        total = float(np.sum(arr))
    if not total <= _MAX_TOTAL_WEIGHT:
        raise ValueError(f"{name}: the entries of {what} add up to {total:g}; the objective squares stage loads, which "
                         f"overflows float64 beyond a total of {_MAX_TOTAL_WEIGHT:g}. Rescale the weights (scaling "
                         "every node and edge weight by one factor leaves the best schedule unchanged).")
    return arr


def _check_scalar(value, name, low, integral=False):
    kind = Integral if integral else Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"StageSchedulingProblem: {name} must be {'an int' if integral else 'a real number'}; "
                        f"got {value!r}.")
    if not value >= low or (not integral and not math.isfinite(value)):
        raise ValueError(f"StageSchedulingProblem: {name} must be >= {low} (and finite); got {value!r}.")
    return int(value) if integral else float(value)


class StageSchedulingProblem:
    """A DAG to cut into stages: nodes with memory, data edges, and the released objective.

    Every node ``v`` gets a stage ``s_v`` in ``{0, ..., n_stages - 1}`` with
    ``s_u <= s_v`` on every edge ``(u, v)``. A schedule costs
    ``mem_weight * peak stage memory + comm_weight * boundaries crossed``,
    where the peak is ``max_d sum_{s_v = d} node_weight[v]`` and an edge with
    ``edge_weight > 0`` (a data edge; the size itself is not used, as in the
    release) crosses ``s_v - s_u`` stage boundaries.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    edges : array-like of shape (n_edges, 2)
        Directed edges ``(u, v)`` as node indices in ``[0, n_nodes)``.
    node_weight : array-like of shape (n_nodes,)
        Non-negative memory of each node; its length sets ``n_nodes``.
    edge_weight : array-like of shape (n_edges,), default=None
        Non-negative data size of each edge; only ``> 0`` matters. ``None``:
        every edge carries data.
    n_stages : int, default=None
        Number of stages ``D``; ``None`` takes the node count of the longest
        path (the release's default).
    mem_weight : float, default=100.0
        Weight of the peak stage memory (the release's "ratio").
    comm_weight : float, default=1.0
        Weight of the boundary-crossing count.
    edge_lag : array-like of shape (n_edges,), default=None
        Minimum stage distance of each edge, ``s_v - s_u >= edge_lag[e]``
        (non-negative integers; ``None``: all 0, plain precedence).
    stage_capacity : float, default=None
        Hard cap on the memory of every stage, ``sum_{s_v = d} m_v <=
        stage_capacity``; ``None``: no cap.
    A_ub : array-like of shape (n_rows, n_nodes), default=None
        Rows of general linear constraints ``A_ub @ s <= b_ub`` over the
        stage indices (for example ``s_a - s_b <= 0`` and ``s_b - s_a <= 0``:
        nodes ``a`` and ``b`` share a stage).
    b_ub : array-like of shape (n_rows,), default=None
        Right-hand sides of ``A_ub``.

    Attributes
    ----------
    n_nodes : int
        Number of nodes.
    n_edges : int
        Number of edges.
    edges : ndarray of shape (n_edges, 2)
        The edges (a private copy).
    node_weight, edge_weight : ndarray
        The weights (private copies).
    node_labels : list
        A label per node (from the graph file or networkx graph; indices by default).
    n_stages : int
        The resolved number of stages.
    levels : ndarray of shape (n_nodes,)
        Longest-path level of each node (roots at 0): its earliest stage
        when stages are unlimited.
    topological_order : ndarray of shape (n_nodes,)
        Nodes sorted by level (ties by index): a topological order.
    n_levels : int
        Node count of the longest path.
    data_edges : ndarray of shape (n_data_edges, 2)
        The edges with ``edge_weight > 0``.
    edge_lag : ndarray of shape (n_edges,)
        The lags (zeros without lags).
    earliest, latest : ndarray of shape (n_nodes,)
        Earliest and latest stage of each node allowed by the lags and the
        stage count (longest lag path from a root, and to a leaf).
    has_side_constraints : bool
        Whether a stage capacity or rows ``A_ub`` are set (constraints that
        couple nodes beyond their edges).

    See Also
    --------
    GumbelScheduler : The differentiable scheduler of the paper.
    GreedyStageScheduler : Topological split into equal-weight chunks.
    CPSATScheduler : OR-tools CP-SAT on a compact or the paper's model.
    sklearn_icml.datasets.make_scheduling_dag : Random DAGs like the released ones.
    sklearn_icml.datasets.load_dcs_graph : The two released graphs.

    Notes
    -----
    The objective is the released scripts' (``legal_check`` and the reported
    ``ratio * max memory + communication``): equal stages on an edge are
    allowed, and the boundary count ``sum_k [s_u <= k][s_v >= k + 1]`` equals
    ``s_v - s_u`` on a legal schedule. :meth:`lower_bound` is
    ``mem_weight * max(ceil(sum m / D), max m)`` (the ceiling only for
    integer weights), the communication term being at least 0.

    References
    ----------
    .. [1] M. Liu, Y. Li, J. Yin, Z. Zhang and C. Yu, "Differentiable
       Combinatorial Scheduling at Scale", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.optimize import StageSchedulingProblem
    >>> problem = StageSchedulingProblem([(0, 1), (0, 2), (1, 3), (2, 3)], [4, 2, 2, 4], n_stages=3)
    >>> problem.objective([0, 1, 1, 2])
    404.0
    >>> problem.objective([1, 0, 0, 2])  # an edge goes backwards
    inf
    >>> problem.lower_bound()
    400.0
    """

    def __init__(self, edges, node_weight, edge_weight=None, *, n_stages=None, mem_weight=100.0, comm_weight=1.0,
                 edge_lag=None, stage_capacity=None, A_ub=None, b_ub=None):
        name = "StageSchedulingProblem"
        n = len(node_weight) if np.ndim(node_weight) == 1 else -1
        if n < 0:
            raise ValueError(f"{name}: node_weight must be 1-D (one weight per node); got shape "
                             f"{np.shape(node_weight)}.")
        if n == 0:
            raise ValueError(f"{name}: the graph has no node (node_weight is empty).")
        self.node_weight = _as_weights(node_weight, n, "node_weight")
        if edges is None or np.size(edges) == 0:
            edges_arr = np.zeros((0, 2), dtype=np.intp)
        else:
            try:
                edges_f = np.array(edges, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name}: edges must be integer node indices; got {edges!r:.80}.") from exc
            if edges_f.ndim != 2 or edges_f.shape[1] != 2:
                raise ValueError(f"{name}: edges must have shape (n_edges, 2); got {edges_f.shape}.")
            if not np.all(np.isfinite(edges_f)) or np.any(edges_f != np.round(edges_f)):
                raise ValueError(f"{name}: edges must hold integer node indices.")
            edges_arr = edges_f.astype(np.intp)
            bad = np.flatnonzero((edges_arr < 0).any(axis=1) | (edges_arr >= n).any(axis=1))
            if bad.size:
                u, v = edges_arr[bad[0]]
                raise ValueError(f"{name}: edge {bad[0]} = ({u}, {v}) names an unknown node; nodes are "
                                 f"0..{n - 1} (one per node_weight entry).")
            loops = np.flatnonzero(edges_arr[:, 0] == edges_arr[:, 1])
            if loops.size:
                raise ValueError(f"{name}: self-loop on node {int(edges_arr[loops[0], 0])} (edge {loops[0]}); "
                                 "a DAG has none.")
        self.edges = edges_arr
        self.n_nodes, self.n_edges = n, len(edges_arr)
        self.edge_weight = (np.ones(self.n_edges) if edge_weight is None
                            else _as_weights(edge_weight, self.n_edges, "edge_weight"))
        self.mem_weight = _check_scalar(mem_weight, "mem_weight", 0.0)
        self.comm_weight = _check_scalar(comm_weight, "comm_weight", 0.0)
        sources, targets = edges_arr[:, 0], edges_arr[:, 1]
        levels = _levels_kahn(n, sources, targets)
        if np.any(levels < 0):
            node = _node_on_cycle(n, sources, targets, np.flatnonzero(levels < 0))
            raise ValueError(f"{name}: the graph has a cycle through node {node}; stages need a DAG.")
        self.levels = levels
        self.topological_order = np.lexsort((np.arange(n), levels))
        self.n_levels = int(levels.max()) + 1
        self.n_stages = self.n_levels if n_stages is None else _check_scalar(n_stages, "n_stages", 1, True)
        self.data_edges = edges_arr[self.edge_weight > 0]
        self.node_labels = list(range(n))
        self._set_constraints(edge_lag, stage_capacity, A_ub, b_ub)

    def _set_constraints(self, edge_lag, stage_capacity, A_ub, b_ub):
        """Validate the side constraints and refuse a set that no schedule can satisfy."""
        name, n, D = "StageSchedulingProblem", self.n_nodes, self.n_stages
        if edge_lag is None:
            lag = np.zeros(self.n_edges, dtype=np.int64)
        else:
            lag_f = _as_weights(edge_lag, self.n_edges, "edge_lag")
            if np.any(lag_f != np.round(lag_f)):
                raise ValueError(f"{name}: edge_lag must hold integers (stage distances).")
            lag = lag_f.astype(np.int64)
        self.edge_lag = lag
        self.stage_capacity = None if stage_capacity is None else _check_scalar(stage_capacity, "stage_capacity", 0.0)
        if (A_ub is None) != (b_ub is None):
            raise ValueError(f"{name}: A_ub and b_ub go together; got only one of them.")
        if A_ub is None:
            self.A_ub, self.b_ub = np.zeros((0, n)), np.zeros(0)
        else:
            try:
                A = np.array(A_ub, dtype=np.float64)
                b = np.array(b_ub, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name}: A_ub and b_ub must be numeric.") from exc
            A = A.reshape(1, -1) if A.ndim == 1 else A
            if A.ndim != 2 or A.shape[1] != n or A.shape[0] != b.shape[0]:
                raise ValueError(f"{name}: A_ub must have shape (n_rows, {n}) and b_ub shape (n_rows,); got "
                                 f"{A.shape} and {b.shape}.")
            if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
                raise ValueError(f"{name}: A_ub and b_ub must be finite.")
            self.A_ub, self.b_ub = A, b
        self.has_side_constraints = self.stage_capacity is not None or len(self.b_ub) > 0
        # earliest / latest stage from the longest lag paths, level by level
        src, dst = self.edges[:, 0], self.edges[:, 1]
        earliest = np.zeros(n, dtype=np.int64)
        tail = np.zeros(n, dtype=np.int64)  # longest lag path from the node to a leaf
        by_level = [np.flatnonzero(self.levels[dst] == k) for k in range(self.n_levels)]
        for k in range(1, self.n_levels):
            e = by_level[k]
            np.maximum.at(earliest, dst[e], earliest[src[e]] + lag[e])
        for k in range(self.n_levels - 1, 0, -1):
            e = by_level[k]
            np.maximum.at(tail, src[e], tail[dst[e]] + lag[e])
        self.earliest, self.latest = earliest, D - 1 - tail
        bad = np.flatnonzero(self.earliest > self.latest)
        if bad.size:
            v = int(bad[0])
            raise ValueError(f"{name}: no legal schedule exists: node {v} needs stage >= {int(earliest[v])} after "
                             f"its ancestors' lags and <= {int(self.latest[v])} before its descendants' lags, with "
                             f"n_stages={D}.")
        if self.stage_capacity is not None:
            cap = self.stage_capacity
            if self.node_weight.max() > cap or self.node_weight.sum() > cap * D * (1 + 1e-12):
                raise ValueError(f"{name}: no legal schedule exists: stage_capacity={cap:g} is below the largest "
                                 f"node ({self.node_weight.max():g}) or {D} stages cannot hold the total memory "
                                 f"({self.node_weight.sum():g}).")
        if len(self.b_ub):
            lo = np.minimum(self.A_ub * self.earliest, self.A_ub * self.latest).sum(axis=1)
            row = np.flatnonzero(lo > self.b_ub + 1e-9)
            if row.size:
                r = int(row[0])
                raise ValueError(f"{name}: no legal schedule exists: row {r} of A_ub @ s <= b_ub needs at least "
                                 f"{lo[r]:g} > b_ub[{r}] = {self.b_ub[r]:g} within the stages the lags allow.")
        in_deg = np.bincount(self.data_edges[:, 1], minlength=n)
        out_deg = np.bincount(self.data_edges[:, 0], minlength=n)
        self.data_coef = (in_deg - out_deg).astype(np.float64)  # comm = data_coef @ s on a legal schedule

    def constraint_kwargs(self):
        """The side constraints as constructor keywords (``edge_lag``, ``stage_capacity``, ``A_ub``, ``b_ub``).

        Returns
        -------
        dict
            Copies of the constraints; empty values for the ones not set.
        """
        rows = len(self.b_ub) > 0
        return dict(edge_lag=self.edge_lag.copy() if self.edge_lag.any() else None,
                    stage_capacity=self.stage_capacity,
                    A_ub=self.A_ub.copy() if rows else None, b_ub=self.b_ub.copy() if rows else None)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_networkx(cls, G, node_attr="auto", edge_attr="auto", **kw):
        """Build the problem from a networkx ``DiGraph``.

        Parameters
        ----------
        G : networkx.DiGraph
            The DAG. Nodes may carry any hashable label; they are numbered in
            ``G.nodes`` order and their labels kept in ``node_labels``.
        node_attr : str, default="auto"
            Node attribute holding the memory weight; every node must have
            it. "auto": ``"weight"`` (networkx's usual name) when every node
            has it, else ``"parameter"`` (the released graphs' name).
        edge_attr : str or None, default="auto"
            Edge attribute holding the data size; ``None``: every edge carries
            data. Every edge must have a named attribute. "auto":
            ``"weight"`` when every edge has it, else ``"parameter"`` when
            every edge has it, else ``None`` when no edge has either.
        **kw : dict
            ``n_stages``, ``mem_weight``, ``comm_weight`` and the side
            constraints of the constructor.

        Returns
        -------
        StageSchedulingProblem
            The problem.
        """
        if not (hasattr(G, "is_directed") and hasattr(G, "nodes") and hasattr(G, "edges")):
            raise TypeError(f"StageSchedulingProblem.from_networkx: G must be a networkx DiGraph; got "
                            f"{type(G).__name__}.")
        if not G.is_directed():
            raise TypeError("StageSchedulingProblem.from_networkx: G is undirected; stage scheduling needs a "
                            "directed graph (networkx.DiGraph).")
        labels = list(G.nodes)
        index = {label: i for i, label in enumerate(labels)}
        if node_attr == "auto":
            node_attr = "weight" if all("weight" in d for _, d in G.nodes(data=True)) else "parameter"
        if edge_attr == "auto":
            edge_attr = None
            for key in ("weight", "parameter"):
                if all(key in d for _, _, d in G.edges(data=True)):
                    edge_attr = key
                    break
            else:
                if any("weight" in d or "parameter" in d for _, _, d in G.edges(data=True)):
                    raise ValueError("StageSchedulingProblem.from_networkx: some edges carry a 'weight' or "
                                     "'parameter' attribute and others not; name edge_attr, or None for every "
                                     "edge carrying data.")
        weights = []
        for label, data in G.nodes(data=True):
            if node_attr not in data:
                raise ValueError(f"StageSchedulingProblem.from_networkx: node {label!r} has no {node_attr!r} "
                                 "attribute (node_attr).")
            weights.append(data[node_attr])
        edges, edge_weight = [], []
        for u, v, data in G.edges(data=True):
            edges.append((index[u], index[v]))
            if edge_attr is not None:
                if edge_attr not in data:
                    raise ValueError(f"StageSchedulingProblem.from_networkx: edge ({u!r}, {v!r}) has no "
                                     f"{edge_attr!r} attribute (edge_attr).")
                edge_weight.append(data[edge_attr])
        problem = cls(np.array(edges, dtype=np.intp).reshape(-1, 2), weights,
                      None if edge_attr is None else edge_weight, **kw)
        problem.node_labels = labels
        return problem

    @classmethod
    def from_dataset(cls, data, **kw):
        """Build the problem from a dataset Bunch of the scheduling generators.

        The Bunch is what :func:`~sklearn_icml.datasets.make_scheduling_dag` and
        :func:`~sklearn_icml.datasets.load_dcs_graph` return.

        Parameters
        ----------
        data : Bunch or dict
            ``edges``, ``node_weight``, ``edge_weight``, and optionally
            ``n_stages``, ``mem_weight`` (the dataset's suggested settings) and
            ``node_labels``.
        **kw : dict
            Constructor keywords; they override the suggested settings.

        Returns
        -------
        StageSchedulingProblem
            The problem.

        Examples
        --------
        >>> from sklearn_icml.datasets import make_scheduling_dag
        >>> from sklearn_icml.optimize import StageSchedulingProblem
        >>> problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(300, random_state=0))
        >>> problem.n_nodes, problem.n_levels
        (300, 15)
        """
        try:
            args = {"edges": data["edges"], "node_weight": data["node_weight"],
                    "edge_weight": data.get("edge_weight")}
        except (KeyError, TypeError) as exc:
            raise TypeError("StageSchedulingProblem.from_dataset: data must be a Bunch with edges, node_weight and "
                            f"edge_weight; got {type(data).__name__}.") from exc
        settings = {key: data[key] for key in ("n_stages", "mem_weight") if data.get(key) is not None}
        settings.update(kw)
        problem = cls(args["edges"], args["node_weight"], args["edge_weight"], **settings)
        if data.get("node_labels") is not None:
            problem.node_labels = list(data["node_labels"])
        return problem

    @classmethod
    def from_gml(cls, path, **kw):
        """Read a graph in the released GML format (``parameter`` on nodes and edges).

        Parameters
        ----------
        path : str or path-like
            The ``.gml`` file.
        **kw : dict
            ``node_attr``, ``edge_attr`` of :meth:`from_networkx` and
            ``n_stages``, ``mem_weight``, ``comm_weight`` of the constructor.

        Returns
        -------
        StageSchedulingProblem
            The problem; node labels are the file's labels.
        """
        import networkx as nx

        G = nx.read_gml(str(path))
        if not G.is_directed():
            raise ValueError(f"StageSchedulingProblem.from_gml: {path} holds an undirected graph (no "
                             "'directed 1'); stage scheduling needs a DAG.")
        return cls.from_networkx(G, **kw)

    def write_gml(self, path):
        """Write the graph in the released GML format (``parameter`` on nodes and edges).

        Parameters
        ----------
        path : str or path-like
            Destination file.
        """
        import networkx as nx

        G = nx.DiGraph()

        def _num(x):
            return int(x) if float(x).is_integer() else float(x)

        labels = [str(label) for label in self.node_labels]
        if len(set(labels)) != self.n_nodes:
            labels = [str(i) for i in range(self.n_nodes)]
        for label, w in zip(labels, self.node_weight):
            G.add_node(label, parameter=_num(w))
        for (u, v), w in zip(self.edges, self.edge_weight):
            G.add_edge(labels[u], labels[v], parameter=_num(w))
        nx.write_gml(G, str(path))

    def replace(self, **kw):
        """A copy with other ``n_stages``, ``mem_weight``, ``comm_weight`` or side constraints.

        Parameters
        ----------
        **kw : dict
            Constructor keywords to change.

        Returns
        -------
        StageSchedulingProblem
            The new problem (same graph and labels).
        """
        unknown = set(kw) - {"n_stages", "mem_weight", "comm_weight", "edge_lag", "stage_capacity", "A_ub", "b_ub"}
        if unknown:
            raise TypeError(f"StageSchedulingProblem.replace: unknown keyword(s) {sorted(unknown)}.")
        args = dict(n_stages=self.n_stages, mem_weight=self.mem_weight, comm_weight=self.comm_weight,
                    **self.constraint_kwargs())
        args.update(kw)
        problem = type(self)(self.edges, self.node_weight, self.edge_weight, **args)
        problem.node_labels = list(self.node_labels)
        return problem

    # ------------------------------------------------------------------ evaluation
    def _stages(self, stages, name):
        try:
            arr = np.asarray(stages, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"StageSchedulingProblem.{name}: stages must be integers; got {stages!r:.80}.") from exc
        if arr.shape[-1:] != (self.n_nodes,) or arr.ndim not in (1, 2):
            raise ValueError(f"StageSchedulingProblem.{name}: stages must have shape ({self.n_nodes},) or "
                             f"(n_schedules, {self.n_nodes}); got {arr.shape}.")
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"StageSchedulingProblem.{name}: stages must hold integers.")
        return arr.astype(np.int64)

    def _legal(self, s):
        in_range = ((s >= 0) & (s < self.n_stages)).all(axis=-1)
        ordered = (s[..., self.edges[:, 1]] - s[..., self.edges[:, 0]] >= self.edge_lag).all(axis=-1)
        legal = in_range & ordered
        if self.stage_capacity is not None:
            s2 = np.atleast_2d(np.clip(s, 0, self.n_stages - 1))
            flat = (s2 + self.n_stages * np.arange(len(s2))[:, None]).ravel()
            loads = np.bincount(flat, weights=np.tile(self.node_weight, len(s2)),
                                minlength=self.n_stages * len(s2)).reshape(len(s2), self.n_stages)
            fits = loads.max(axis=1) <= self.stage_capacity * (1 + 1e-12)
            legal = legal & (fits[0] if s.ndim == 1 else fits)
        if len(self.b_ub):
            slack = self.b_ub + 1e-9 * (1.0 + np.abs(self.b_ub))
            legal = legal & (s @ self.A_ub.T <= slack).all(axis=-1)
        return legal

    def is_feasible(self, stages):
        """Whether every stage is in range, ``s_v - s_u >= edge_lag`` on every edge and the side constraints hold.

        Parameters
        ----------
        stages : array-like of shape (n_nodes,) or (n_schedules, n_nodes)
            Integer stages.

        Returns
        -------
        bool or ndarray of bool
            One answer per schedule.
        """
        legal = self._legal(self._stages(stages, "is_feasible"))
        return bool(legal) if legal.ndim == 0 else legal

    def stage_loads(self, stages):
        """Memory of each stage, ``sum_{s_v = d} m_v``.

        Parameters
        ----------
        stages : array-like of shape (n_nodes,) or (n_schedules, n_nodes)
            Integer stages in ``[0, n_stages)``.

        Returns
        -------
        ndarray of shape (n_stages,) or (n_schedules, n_stages)
            The loads.
        """
        s = self._stages(stages, "stage_loads")
        if np.any((s < 0) | (s >= self.n_stages)):
            raise ValueError(f"StageSchedulingProblem.stage_loads: stages must lie in [0, {self.n_stages}).")
        s2 = np.atleast_2d(s)
        flat = (s2 + self.n_stages * np.arange(len(s2))[:, None]).ravel()
        loads = np.bincount(flat, weights=np.tile(self.node_weight, len(s2)),
                            minlength=self.n_stages * len(s2)).reshape(len(s2), self.n_stages)
        return loads[0] if s.ndim == 1 else loads

    def peak_memory(self, stages):
        """Largest stage load (``inf`` for an illegal schedule); see :meth:`stage_loads`.

        Parameters
        ----------
        stages : array-like of shape (n_nodes,) or (n_schedules, n_nodes)
            Integer stages.

        Returns
        -------
        float or ndarray
            The peak stage memory.
        """
        return self._split(stages, "peak_memory")[0]

    def comm_cost(self, stages):
        """Stage boundaries crossed by data edges, ``sum (s_v - s_u)`` (``inf`` if illegal).

        Parameters
        ----------
        stages : array-like of shape (n_nodes,) or (n_schedules, n_nodes)
            Integer stages.

        Returns
        -------
        float or ndarray
            The unweighted communication count.
        """
        return self._split(stages, "comm_cost")[1]

    def _split(self, stages, name):
        s = self._stages(stages, name)
        legal = self._legal(s)
        s2 = np.atleast_2d(np.clip(s, 0, self.n_stages - 1))
        peak = np.atleast_2d(self.stage_loads(s2)).max(axis=1)
        comm = (s2[:, self.data_edges[:, 1]] - s2[:, self.data_edges[:, 0]]).sum(axis=1).astype(np.float64)
        legal2 = np.atleast_1d(legal)
        peak = np.where(legal2, peak, np.inf)
        comm = np.where(legal2, comm, np.inf)
        if s.ndim == 1:
            return float(peak[0]), float(comm[0])
        return peak, comm

    def objective(self, stages):
        """``mem_weight * peak memory + comm_weight * boundaries crossed``; ``inf`` if illegal.

        Parameters
        ----------
        stages : array-like of shape (n_nodes,) or (n_schedules, n_nodes)
            Integer stages.

        Returns
        -------
        float or ndarray
            The objective (lower is better).
        """
        peak, comm = self._split(stages, "objective")
        return self.mem_weight * peak + self.comm_weight * comm

    def lower_bound(self):
        """``mem_weight * max(ceil(sum m / D), max m)``: no schedule costs less.

        Returns
        -------
        float
            The bound (the ceiling is taken for integer weights only).
        """
        total, D = self.node_weight.sum(), self.n_stages
        per_stage = total / D
        if np.all(self.node_weight == np.round(self.node_weight)):
            per_stage = math.ceil(round(per_stage, 9))
        return float(self.mem_weight * max(per_stage, self.node_weight.max()))

    def gap(self, objective):
        """Relative gap ``objective / lower_bound - 1`` (``inf`` when the bound is 0 and the objective not).

        Parameters
        ----------
        objective : float
            An objective value.

        Returns
        -------
        float
            The gap.
        """
        bound = self.lower_bound()
        if bound > 0:
            return float(objective / bound - 1.0)
        return 0.0 if objective <= 0 else math.inf

    def digest(self):
        """A short hash of the graph, weights and objective settings (equal problems share it, whatever the edge order).

        Returns
        -------
        str
            Hex digest.
        """
        h = hashlib.sha1()
        order = np.lexsort((self.edges[:, 1], self.edges[:, 0]))  # edge order does not matter
        for arr in (self.edges[order].astype(np.int64), self.node_weight, self.edge_weight[order] > 0,
                    self.edge_lag[order], self.A_ub, self.b_ub):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(repr(self.stage_capacity).encode())
        h.update(repr((self.n_nodes, self.n_stages, self.mem_weight, self.comm_weight)).encode())
        return h.hexdigest()[:16]

    def __repr__(self):
        return (f"StageSchedulingProblem(n_nodes={self.n_nodes}, n_edges={self.n_edges}, "
                f"n_data_edges={len(self.data_edges)}, n_stages={self.n_stages}, n_levels={self.n_levels}, "
                f"mem_weight={self.mem_weight:g}, comm_weight={self.comm_weight:g})")
