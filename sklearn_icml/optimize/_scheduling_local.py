"""Local repair of a legal schedule: move single nodes to another legal stage while the objective improves.

A move of node ``v`` from stage ``s`` to ``t`` changes two stage loads and the
communication term by ``comm_weight * (t - s) * data_coef[v]`` (the term is
linear in the stages). Every pass scores all moves at once (the new peak from
a table of the largest load outside two stages), then applies the best ones
in order, re-checking each exactly against the loads and stages it meets, and
never two moves next to each other in the same pass. A move is taken when it
lowers the objective, or keeps it and lowers the sum of squared loads (which
breaks ties between several stages at the peak); the objective never rises.

A node inside a chain cannot move alone: its parent and child pin it. A
chain move shifts a node by one stage together with every node that an edge
at its minimum distance (``s_w - s_u = lag``, "tight") forces along:
descendants for a move later, ancestors for a move earlier. The closures
form a dense Boolean matrix built in one sweep over the tight edges (graphs
up to ``_MAX_CHAIN`` nodes; larger ones get single moves only).
"""

import time

import numpy as np

#: Candidate moves re-checked per pass (the best ones first).
_MOVES_PER_PASS = 512
#: Largest graph for which chain moves are scored (a dense n x n closure).
_MAX_CHAIN = 2000


class LocalRepair:
    """Index arrays of a problem for repeated polishing (built once per fit)."""

    def __init__(self, problem, chains=True):
        self.problem = problem
        self.chains = chains
        n = problem.n_nodes
        src, dst = problem.edges[:, 0], problem.edges[:, 1]
        self.src, self.dst, self.lag = src, dst, problem.edge_lag
        both = np.r_[src, dst]
        other = np.r_[dst, src]
        order = np.argsort(both, kind="stable")
        self.nb_start = np.searchsorted(both[order], np.arange(n + 1))
        self.nb = other[order]
        # parents / children with lags, per node, for the exact re-check
        by_dst = np.argsort(dst, kind="stable")
        self.in_start = np.searchsorted(dst[by_dst], np.arange(n + 1))
        self.in_src, self.in_lag = src[by_dst], self.lag[by_dst]
        by_src = np.argsort(src, kind="stable")
        self.out_start = np.searchsorted(src[by_src], np.arange(n + 1))
        self.out_dst, self.out_lag = dst[by_src], self.lag[by_src]
        self.m = problem.node_weight
        self.coef = problem.data_coef
        self.cap = np.inf if problem.stage_capacity is None else problem.stage_capacity * (1 + 1e-12)
        self.A, self.b = problem.A_ub, problem.b_ub + 1e-9 * (1.0 + np.abs(problem.b_ub))
        self.touch_rows = [np.flatnonzero(self.A[:, v]) for v in range(n)] if len(self.b) else None
        scale = max(problem.mem_weight * float(self.m.max(initial=0.0)), problem.comm_weight, 1.0)
        self.eps = 1e-9 * scale

    def _intervals(self, s):
        p = self.problem
        lo = np.zeros(p.n_nodes, dtype=np.int64)
        hi = np.full(p.n_nodes, p.n_stages - 1, dtype=np.int64)
        if len(self.src):
            np.maximum.at(lo, self.dst, s[self.src] + self.lag)
            np.minimum.at(hi, self.src, s[self.dst] - self.lag)
        return lo, hi

    def _peak_table(self, loads):
        """``table[a, b]``: the largest load outside stages ``a`` and ``b``."""
        D = len(loads)
        big = np.broadcast_to(loads, (D, D, D)).copy()
        idx = np.arange(D)
        big[idx, :, idx] = -np.inf
        big[:, idx, idx] = -np.inf
        return big.max(axis=2) if D > 2 else np.full((D, D), -np.inf)

    def _chain_pass(self, s, loads, rows):
        """One round of chain moves, never two next to each other; returns the number applied (s, loads updated)."""
        p = self.problem
        n, D, lam, cw, eps = p.n_nodes, p.n_stages, p.mem_weight, p.comm_weight, self.eps
        if not len(self.src) or n > _MAX_CHAIN:
            return 0, rows
        tight = s[self.dst] - s[self.src] == self.lag
        if not tight.any():
            return 0, rows
        reach = np.eye(n, dtype=bool)  # reach[v]: v and what a move of v later drags along
        ts, td = self.src[tight], self.dst[tight]
        for k in np.argsort(-p.levels[ts], kind="stable").tolist():  # children's closures first
            reach[ts[k]] |= reach[td[k]]
        onehot = np.zeros((n, D))
        onehot[np.arange(n), s] = self.m
        peak, sq = loads.max(), (loads ** 2).sum()
        # only chains that start in one of the two fullest stages can lower the peak or the squares much
        heavy = np.argsort(-loads, kind="stable")[:2]
        rows_of = np.flatnonzero(np.isin(s, heavy))
        cands = []
        for direction, full in ((1, reach), (-1, reach.T)):
            closure = full[rows_of]
            R = closure.astype(np.float64)
            mass = R @ onehot
            shifted = np.zeros_like(mass)
            if direction == 1:
                shifted[:, 1:] = mass[:, :-1]
                ok = ~(closure & (s == D - 1)[None, :]).any(axis=1)
            else:
                shifted[:, :-1] = mass[:, 1:]
                ok = ~(closure & (s == 0)[None, :]).any(axis=1)
            ok &= closure.sum(axis=1) > 1  # single nodes are the single moves' job
            new_loads = loads[None, :] - mass + shifted
            gain = lam * (new_loads.max(axis=1) - peak) + cw * direction * (R @ self.coef)
            d_sq = (new_loads ** 2).sum(axis=1) - sq
            ok &= (new_loads <= self.cap).all(axis=1)
            if rows is not None:
                ok &= (rows[None, :] + direction * (R @ self.A.T) <= self.b[None, :]).all(axis=1)
            good = np.flatnonzero(ok & ((gain < -eps) | ((gain <= eps) & (d_sq < -eps))))
            cands += [(gain[i], d_sq[i], direction, int(rows_of[i])) for i in good.tolist()]
        cands.sort()
        applied = 0
        dirty = np.zeros(n, dtype=bool)
        for _, _, direction, v in cands[:_MOVES_PER_PASS]:
            moved = np.flatnonzero(reach[v] if direction == 1 else reach[:, v])
            if dirty[moved].any():
                continue
            trial = loads.copy()
            np.add.at(trial, s[moved], -self.m[moved])
            np.add.at(trial, s[moved] + direction, self.m[moved])
            gain = lam * (trial.max() - loads.max()) + cw * direction * self.coef[moved].sum()
            d_sq = (trial ** 2).sum() - (loads ** 2).sum()
            if not (gain < -eps or (gain <= eps and d_sq < -eps)) or (trial > self.cap).any():
                continue
            if rows is not None:
                new_rows = rows + direction * self.A[:, moved].sum(axis=1)
                if (new_rows > self.b).any():
                    continue
                rows = new_rows
            s[moved] += direction
            loads[:] = trial
            dirty[moved] = True
            for w in moved.tolist():
                dirty[self.nb[self.nb_start[w]:self.nb_start[w + 1]]] = True
            applied += 1
        return applied, rows

    def polish(self, schedule, *, deadline=None, max_passes=None):
        """Improve a legal ``schedule`` (node order) by single-node moves; returns a new array and the move count."""
        p = self.problem
        D, lam, cw = p.n_stages, p.mem_weight, p.comm_weight
        s = np.asarray(schedule, dtype=np.int64).copy()
        if D < 2:
            return s, 0
        m, coef, eps = self.m, self.coef, self.eps
        loads = np.bincount(s, weights=m, minlength=D)
        rows = s @ self.A.T if len(self.b) else None
        stages = np.arange(D)
        n_moves, n_pass = 0, 0
        while max_passes is None or n_pass < max_passes:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            n_pass += 1
            lo, hi = self._intervals(s)
            movable = hi > lo
            if not movable.any():
                chained, rows = self._chain_pass(s, loads, rows) if self.chains else (0, rows)
                n_moves += chained
                if chained:
                    continue
                break
            nodes = np.flatnonzero(movable)
            sv, mv = s[nodes], m[nodes]
            peak = loads.max()
            table = self._peak_table(loads)
            new_peak = np.maximum(table[sv[:, None], stages[None, :]],
                                  np.maximum((loads[sv] - mv)[:, None], loads[None, :] + mv[:, None]))
            step = stages[None, :] - sv[:, None]
            d_obj = lam * (new_peak - peak) + cw * step * coef[nodes][:, None]
            d_sq = 2.0 * mv[:, None] * (loads[None, :] - loads[sv][:, None] + mv[:, None])
            ok = (stages[None, :] >= lo[nodes][:, None]) & (stages[None, :] <= hi[nodes][:, None]) & (step != 0)
            ok &= loads[None, :] + mv[:, None] <= self.cap
            if rows is not None:
                cols = self.A[:, nodes]  # (R, k)
                ok &= (rows[:, None, None] + cols[:, :, None] * step[None] <= self.b[:, None, None]).all(axis=0)
            good = ok & ((d_obj < -eps) | ((d_obj <= eps) & (d_sq < -eps)))
            cand_node, cand_stage = np.nonzero(good)
            if not len(cand_node):
                if self.chains:
                    chained, rows = self._chain_pass(s, loads, rows)
                    n_moves += chained
                    if chained:
                        continue
                break
            key_obj, key_sq = d_obj[cand_node, cand_stage], d_sq[cand_node, cand_stage]
            take = np.lexsort((key_sq, key_obj))[:_MOVES_PER_PASS]
            dirty = np.zeros(p.n_nodes, dtype=bool)
            applied = 0
            for i in take.tolist():
                v, t = int(nodes[cand_node[i]]), int(cand_stage[i])
                if dirty[v]:
                    continue
                a = int(s[v])
                w = float(m[v])
                # exact re-check with the current loads (the intervals of v are current: no neighbour moved)
                if loads[t] + w > self.cap:
                    continue
                if rows is not None:
                    r = self.touch_rows[v]
                    if r.size and np.any(rows[r] + self.A[r, v] * (t - a) > self.b[r]):
                        continue
                old_peak = loads.max()
                loads[a] -= w
                loads[t] += w
                gain = lam * (loads.max() - old_peak) + cw * (t - a) * coef[v]
                d_sq_now = 2.0 * w * (loads[t] - w - (loads[a] + w) + w)
                if not (gain < -eps or (gain <= eps and d_sq_now < -eps)):
                    loads[a] += w
                    loads[t] -= w
                    continue
                s[v] = t
                if rows is not None and self.touch_rows[v].size:
                    rows = rows + self.A[:, v] * (t - a)
                dirty[v] = True
                dirty[self.nb[self.nb_start[v]:self.nb_start[v + 1]]] = True
                applied += 1
            n_moves += applied
            if not applied:
                break
        return s, n_moves
