"""The constrained Gumbel sampler and the smooth loss of Liu et al. (ICML 2024), vectorised per topological level.

The released code writes one Python line per node and per edge. Here the nodes
are renumbered by longest-path level, so each level is a contiguous slice whose
parents all lie in earlier slices; a level is sampled with a handful of tensor
operations, its parents' stage CDFs read with one padded index gather. The cost
per epoch is a few kernels per level, whatever the number of nodes.
"""

import math

import numpy as np


class LevelPlan:
    """Index arrays of a problem renumbered by level: the parents of each level padded into a matrix.

    Positions follow ``problem.topological_order``; position ``n_nodes`` is a
    sentinel whose stage CDF is all ones (no constraint), used as padding.
    """

    def __init__(self, problem):
        order = problem.topological_order
        n = problem.n_nodes
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        self.order, self.position = order, position
        levels = problem.levels[order]
        self.bounds = np.searchsorted(levels, np.arange(problem.n_levels + 1))
        src, dst = position[problem.edges[:, 0]], position[problem.edges[:, 1]]
        by_child = np.lexsort((src, dst))
        src, dst = src[by_child], dst[by_child]
        self.n_parents = np.bincount(dst, minlength=n)
        first = np.searchsorted(dst, np.arange(n))
        rank = np.arange(len(dst)) - first[dst]
        self.parents = []  # per level: (k, max_parents) positions, padded with the sentinel n
        for lo, hi in zip(self.bounds[:-1], self.bounds[1:]):
            width = int(self.n_parents[lo:hi].max()) if hi > lo else 0
            pad = np.full((hi - lo, width), n, dtype=np.int64)
            inside = (dst >= lo) & (dst < hi)
            pad[dst[inside] - lo, rank[inside]] = src[inside]
            self.parents.append(pad)
        data = problem.data_edges
        self.data_src, self.data_dst = position[data[:, 0]], position[data[:, 1]]
        self.edge_src, self.edge_dst = position[problem.edges[:, 0]], position[problem.edges[:, 1]]
        self.weight = problem.node_weight[order]


class GumbelModel:
    """Tensors of a :class:`LevelPlan` on a device, the sampler and the exact objective."""

    def __init__(self, plan, problem, device, constraint, tau):
        import torch

        self.torch = torch
        self.plan, self.device, self.constraint, self.tau = plan, device, constraint, float(tau)
        self.D, self.n = problem.n_stages, problem.n_nodes
        self.mem_weight, self.comm_weight = problem.mem_weight, problem.comm_weight

        def long(a):
            return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.long, device=device)

        self.parents = [long(p) for p in plan.parents]
        self.n_parents = [torch.as_tensor(plan.n_parents[lo:hi], dtype=torch.float32, device=device)
                          for lo, hi in zip(plan.bounds[:-1], plan.bounds[1:])]
        self.data_src, self.data_dst = long(plan.data_src), long(plan.data_dst)
        self.edge_src, self.edge_dst = long(plan.edge_src), long(plan.edge_dst)
        self.weight = torch.as_tensor(plan.weight, dtype=torch.float32, device=device)
        self.total = float(plan.weight.sum())
        # the release's bias b_k = log(D + 1 - k): favours early stages, > 0 everywhere
        self.log_bias = torch.log(torch.log(torch.arange(self.D + 1, 1, -1, dtype=torch.float32, device=device)))

    def sample(self, logits, noise):
        """Straight-through one-hot stages of every node, level by level; returns (Y, CDF, stages)."""
        torch = self.torch
        B, n, D = logits.shape
        cdf = torch.ones(B, n + 1, D, device=logits.device, dtype=logits.dtype)  # sentinel row n stays ones
        stages = torch.empty(B, n, dtype=torch.long, device=logits.device)
        ys = []
        bounds = self.plan.bounds
        for level, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
            z = (logits[:, lo:hi] + noise[:, lo:hi]) / self.tau
            parents = self.parents[level]
            if parents.shape[1] == 0:
                y_soft = torch.softmax(z, dim=-1)
            elif self.constraint == "paper":
                # g <- softmax(z) * prod_p (b * CDF_p): zero below the latest parent, strictly positive above
                g = torch.softmax(z, dim=-1) * torch.exp(self.n_parents[level][:, None] * self.log_bias)
                k, width = parents.shape
                gathered = cdf.index_select(1, parents.reshape(-1)).view(B, k, width, D)
                for rank in range(width):  # a product by rank: cheaper to differentiate than prod() over zeros
                    g = g * gathered[:, :, rank]
                y_soft = torch.softmax(g, dim=-1)
            else:  # "mask": -inf below the latest parent
                latest = stages.new_zeros(B, hi - lo)
                if parents.shape[1]:
                    padded = torch.cat([stages[:, :lo], stages.new_zeros(B, n + 1 - lo)], dim=1)
                    latest = padded[:, parents].amax(dim=2)
                allowed = torch.arange(D, device=logits.device) >= latest[..., None]
                y_soft = torch.softmax(z.masked_fill(~allowed, -math.inf), dim=-1)
            if self.constraint == "paper" and parents.shape[1]:
                index = g.argmax(dim=-1)
            else:
                index = y_soft.argmax(dim=-1)
            y_hard = torch.zeros_like(y_soft).scatter_(-1, index[..., None], 1.0)
            y = y_hard - y_soft.detach() + y_soft
            stages[:, lo:hi] = index
            cdf[:, lo:hi] = torch.cumsum(y, dim=-1)
            ys.append(y)
        return torch.cat(ys, dim=1), cdf[:, :n], stages

    def loss(self, y, cdf):
        """The release's loss: comm_weight * mean boundary probability + mem_weight * negative load entropy."""
        torch = self.torch
        loads = torch.einsum("bnd,n->bd", y, self.weight)
        if self.total > 0:
            p = loads / self.total
            mem = (p * torch.log(p.clamp_min(1e-12))).sum(dim=-1)  # 0 log 0 = 0, finite gradient
        else:
            mem = loads.sum(dim=-1) * 0.0
        if len(self.data_src):
            head = cdf.index_select(1, self.data_src)[..., :-1]
            crossed = head * (1.0 - cdf.index_select(1, self.data_dst)[..., :-1])
            comm = crossed.sum(dim=(1, 2)) / len(self.data_src)
        else:
            comm = mem * 0.0
        return (self.comm_weight * comm + self.mem_weight * mem).mean()

    def objective(self, stages):
        """Exact objective of each sampled schedule (``inf`` where illegal); no gradient."""
        torch = self.torch
        B = stages.shape[0]
        loads = torch.zeros(B, self.D, dtype=torch.float64, device=stages.device)
        loads.scatter_add_(1, stages, self.weight.to(torch.float64).expand(B, -1))
        comm = (stages[:, self.data_dst] - stages[:, self.data_src]).sum(dim=1).to(torch.float64)
        value = self.mem_weight * loads.amax(dim=1) + self.comm_weight * comm
        legal = (stages[:, self.edge_src] <= stages[:, self.edge_dst]).all(dim=1)
        return torch.where(legal, value, torch.full_like(value, math.inf))


class MaskedSampler:
    """The constrained Gumbel-max sampler with every constraint of the problem as a mask (numpy, no gradient).

    Nodes are visited in blocks: the nodes of a longest-path level that no
    capacity or row constraint touches form one block, sampled at once; a node
    that such a constraint touches forms a block of its own, so that the loads
    and row sums it sees include every node sampled before it. A node's stage
    is the argmax of ``logits / tau + Gumbel noise`` over its allowed stages:

    * ``>= max_p (s_p + lag_pv)`` over its parents and ``<= latest[v]`` (the
      longest lag path to a leaf): every lag holds, and a node never leaves
      its descendants without room;
    * ``load[t] + m_v <= stage_capacity``;
    * for each row, ``A_rv t + (sum over sampled nodes) + (least the nodes
      still to come can add within [earliest, latest]) <= b_r``.

    Lags alone can never leave a node without an allowed stage, so every
    sample is legal. Capacity and rows are checked forward only (a legal
    schedule under them is an NP-hard question in general): a sample that
    meets a node with no allowed stage is flagged, and the final legality
    check decides.
    """

    def __init__(self, problem):
        n, D = problem.n_nodes, problem.n_stages
        self.n, self.D = n, D
        cap = problem.stage_capacity
        touched = np.zeros(n, dtype=bool)
        if cap is not None:
            touched |= problem.node_weight > 0
        if len(problem.b_ub):
            touched |= (problem.A_ub != 0).any(axis=0)
        order = np.lexsort((np.arange(n), touched, problem.levels))
        self.order = order
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        self.position = position
        lev, tch = problem.levels[order], touched[order]
        self.blocks = []
        start = 0
        while start < n:
            stop = start + 1
            if not tch[start]:
                while stop < n and lev[stop] == lev[start] and not tch[stop]:
                    stop += 1
            self.blocks.append((start, stop))
            start = stop
        src, dst = position[problem.edges[:, 0]], position[problem.edges[:, 1]]
        by_child = np.lexsort((src, dst))
        src, dst, lag = src[by_child], dst[by_child], problem.edge_lag[by_child]
        first = np.searchsorted(dst, np.arange(n))
        rank = np.arange(len(dst)) - first[dst]
        n_par = np.bincount(dst, minlength=n)
        self.parents, self.lags = [], []
        for lo, hi in self.blocks:
            width = int(n_par[lo:hi].max())
            pad = np.full((hi - lo, width), n, dtype=np.int64)  # sentinel n: stage -1, lag 0 (no bound)
            lpad = np.zeros((hi - lo, width), dtype=np.int64)
            inside = (dst >= lo) & (dst < hi)
            pad[dst[inside] - lo, rank[inside]] = src[inside]
            lpad[dst[inside] - lo, rank[inside]] = lag[inside]
            self.parents.append(pad)
            self.lags.append(lpad)
        self.latest = problem.latest[order]
        self.weight = problem.node_weight[order]
        self.cap = None if cap is None else cap * (1 + 1e-12)
        self.A = problem.A_ub[:, order]
        self.b = problem.b_ub + 1e-9 * (1.0 + np.abs(problem.b_ub))
        if len(self.b):
            earliest = problem.earliest[order]
            self.least = np.minimum(self.A * earliest, self.A * self.latest)  # (R, n): least each node adds
        self.touched = tch

    def sample(self, scores):
        """Stages (position order) of ``scores.shape[0]`` samples; ``scores`` (B, n, D) are logits/tau + noise.

        Returns ``stages`` (B, n), ``allowed`` (B, n, D) and ``complete`` (B,):
        False where a node found no allowed stage (capacity or rows only).
        """
        B = scores.shape[0]
        n, D = self.n, self.D
        T = np.arange(D)
        stages = np.full((B, n + 1), -1, dtype=np.int64)  # column n: the sentinel parent
        allowed = np.zeros((B, n, D), dtype=bool)
        complete = np.ones(B, dtype=bool)
        loads = np.zeros((B, D)) if self.cap is not None else None
        rows = self.least.sum(axis=1)[None, :].repeat(B, axis=0) if len(self.b) else None
        for (lo, hi), parents, lags in zip(self.blocks, self.parents, self.lags):
            if parents.shape[1]:
                lower = np.maximum((stages[:, parents] + lags).max(axis=2), 0)
            else:
                lower = np.zeros((B, hi - lo), dtype=np.int64)
            ok = (T >= lower[..., None]) & (T <= self.latest[lo:hi, None])
            if self.touched[lo]:  # a block of one node
                if loads is not None:
                    ok[:, 0] &= loads + self.weight[lo] <= self.cap
                if rows is not None:
                    a = self.A[:, lo]
                    base = rows - self.least[:, lo]  # (B, R): without this node's least share
                    ok[:, 0] &= (base[:, :, None] + a[None, :, None] * T[None, None, :]
                                 <= self.b[None, :, None]).all(axis=1)
                dead = ~ok[:, 0].any(axis=1)
                if dead.any():
                    complete &= ~dead
                    ok[dead, 0] = T == np.minimum(lower[dead, 0], D - 1)[:, None]
            pick = np.where(ok, scores[:, lo:hi], -np.inf).argmax(axis=2)
            stages[:, lo:hi] = pick
            allowed[:, lo:hi] = ok
            if self.touched[lo]:
                if loads is not None:
                    loads[np.arange(B), pick[:, 0]] += self.weight[lo]
                if rows is not None:
                    rows += self.A[:, lo][None, :] * pick[:, 0:1] - self.least[:, lo][None, :]
        return stages[:, :n], allowed, complete
