"""The Dynamic Agreement algorithm's state and updates, apart from the estimator's input handling.

:class:`DynamicAgreement` holds everything that changes along a vertex stream:
the graph (:class:`~sklearn_icml.cluster._vertex_stream.VertexStream`, which
counts the queries), and per vertex its heaviness, anchor status and coin, the
degree at its last evaluation, the anchors it links to in the sparse graph
``H`` and the anchors known to be adjacent. Its methods are the paper's
procedures (ProbabilisticAgreement, Heavy, Anchor, Connect, Notify, lazy Clean)
and the two updates; :class:`~sklearn_icml.cluster.DynamicCorrelationClustering`
turns features or signed rows into '+' neighbours and calls :meth:`insert`,
:meth:`delete` and :meth:`labels`. The mechanics are documented in the Notes of
that estimator.
"""

import math

import numpy as np
import scipy.sparse as sp

from ..utils._random import SEED_MAX
from ._h_components import HComponents
from ._signed_graph import agreement_state, components
from ._vertex_stream import StreamState

__all__ = ["DynamicAgreement"]


class DynamicAgreement(StreamState):
    """State of Dynamic Agreement on a vertex stream.

    Parameters
    ----------
    beta, lam, n_samples, anchor_rate, drift, notify_hops, exact
        As in :class:`~sklearn_icml.cluster.DynamicCorrelationClustering`.
    seed : int
        Seeds every random choice (see ``StreamState``); the vectorised
        draws of :meth:`load` come from a ``RandomState`` seeded from it.
    """

    def __init__(self, *, beta, lam, n_samples, anchor_rate, drift, notify_hops, exact, seed):
        self.beta = beta
        self.lam = lam
        self.n_samples = n_samples
        self.anchor_rate = anchor_rate
        self.drift = drift
        self.notify_hops = notify_hops
        self.exact = exact
        super().__init__(seed)
        self.heavy = []
        self.anchor = []
        self.coin = []
        self.d0 = []  # degree at the last evaluation
        self.links = []  # anchors this vertex is linked to in H
        self.anchor_nbrs = []  # anchors known to be adjacent
        self.h = HComponents(self)  # the components of H, kept along the stream

    # -- sizes and sampling rates ----------------------------------------------------------------
    def _samples(self):
        if self.n_samples == "auto":
            return max(8, math.ceil(math.log2(self.graph.n_alive + 1)))
        return int(self.n_samples)

    def _anchor_prob(self, degree):
        if self.exact:
            return 1.0
        return min(1.0, self.anchor_rate * math.log2(self.graph.n_alive + 1) / (degree + 1))

    # -- the initial load ------------------------------------------------------------------------
    def load(self, A):
        """Initial state of a whole graph, evaluated exactly and vectorised.

        Its work is counted apart, in ``n_load_queries``: every vertex lists its
        neighbourhood once (``2 m`` queries) and every edge's agreement reads the
        two neighbourhoods (``sum over edges of deg(u) + deg(v)``, that is
        ``sum_v deg(v)^2``), as a query-model run of the static algorithm would.
        """
        A = sp.csr_array(A)
        A.sort_indices()
        self.graph.load(A)
        n = A.shape[0]
        rows, cols, agree, light, _ = agreement_state(A, self.beta, self.lam)
        deg = np.diff(A.indptr)
        self.n_load_queries = int(deg.sum() + np.sum(deg.astype(np.int64) ** 2))
        heavy = ~light
        rng = np.random.RandomState(self.rng.randrange(SEED_MAX))
        coin = rng.random_sample(n)
        if self.exact:
            anchor = heavy.copy()
        else:
            prob = np.minimum(1.0, self.anchor_rate * math.log2(n + 1) / (deg + 1))
            anchor = heavy & (coin < prob)
        self.heavy = heavy.tolist()
        self.anchor = anchor.tolist()
        self.coin = coin.tolist()
        self.d0 = deg.tolist()
        # directed view of the agreeing edges towards anchors: source -> anchor target
        src = np.r_[rows, cols]
        dst = np.r_[cols, rows]
        ag = np.r_[agree, agree]
        to_anchor = anchor[dst]
        self.anchor_nbrs = _group_sets(n, src[to_anchor], dst[to_anchor]) if not self.exact \
            else [set() for _ in range(n)]
        link = to_anchor & ag
        s, d = src[link], dst[link]
        if not self.exact:  # at most n_samples links per vertex, a random subset
            cap = max(8, math.ceil(math.log2(n + 1))) if self.n_samples == "auto" else int(self.n_samples)
            perm = rng.permutation(len(s))
            s, d = s[perm], d[perm]
            order = np.argsort(s, kind="stable")
            s, d = s[order], d[order]
            first = np.searchsorted(s, s, side="left")
            keep = (np.arange(len(s)) - first) < cap
            s, d = s[keep], d[keep]
        self.links = _group_sets(n, s, d)
        self.h.load()
        self._labels = None

    # -- ProbabilisticAgreement, Heavy, Anchor, Connect, Notify ----------------------------------
    def _missing_fraction(self, u, v, du, s):
        """Fraction of N[u] outside N[v] (u, v adjacent), exact or from s samples."""
        g = self.graph
        pos_v = g.pos[v]
        if self.exact or s >= du + 1:
            g.n_queries += 2 * du  # list N(u), one adjacency query each
            miss = sum(1 for x in g.nbrs[u] if x != v and x not in pos_v)
            return miss / (du + 1)
        # s uniform members of N[u] = {u} ∪ N(u): index du stands for u itself (no query needed);
        # a neighbour costs a random-neighbour query, and an adjacency query unless it is v
        lst, rnd = g.nbrs[u], self.rng.random
        miss = queries = 0
        for _ in range(s):
            j = int(rnd() * (du + 1))
            if j < du:
                x = lst[j]
                if x == v:
                    queries += 1
                else:
                    queries += 2
                    if x not in pos_v:
                        miss += 1
        g.n_queries += queries
        return miss / s

    def _agree(self, u, v, du=None, dv=None):
        memo = getattr(self, "_memo", None)
        if memo is not None:  # exact refresh: each edge is computed once per update
            key = (u, v) if u < v else (v, u)
            if key not in memo:
                memo[key] = self._agree_now(u, v, du, dv)
            return memo[key]
        return self._agree_now(u, v, du, dv)

    def _agree_now(self, u, v, du, dv):
        s = self._samples()
        du = self.graph.degree(u) if du is None else du
        dv = self.graph.degree(v) if dv is None else dv
        sym = (du + 1) * self._missing_fraction(u, v, du, s) + (dv + 1) * self._missing_fraction(v, u, dv, s)
        return sym <= self.beta * max(du + 1, dv + 1)

    def _heavy_test(self, v, d):
        """Heavy(v); also returns the tested neighbours with their agreement."""
        if d == 0:
            return True, []
        g = self.graph
        s = self._samples()
        if self.exact or s >= d:
            g.n_queries += d
            tested = list(g.nbrs[v])
        else:
            tested = [g.random_neighbor(v) for _ in range(s)]
        results = [(u, self._agree(v, u, d)) for u in tested]
        disagree = sum(1 for _, a in results if not a)
        return d * disagree / len(results) <= self.lam * (d + 1), results

    def _set_anchor(self, v, d):
        want = self.heavy[v] and self.coin[v] < self._anchor_prob(d)
        if want and not self.anchor[v] and not self.exact:
            self.graph.n_queries += d  # the new anchor lists itself at its neighbours
            for u in self.graph.nbrs[v]:
                self.anchor_nbrs[u].add(v)
        if want != self.anchor[v]:
            self.anchor[v] = want
            self.h.anchor_changed(v)

    def _connect(self, v, d, tested):
        """Connect(v): link v to agreeing anchors among at most n_samples candidates."""
        g = self.graph
        if self.exact:
            g.n_queries += d
            self._set_links(v, {u for u in g.nbrs[v] if self.anchor[u] and self._agree(v, u, d)})
            return
        s = self._samples()
        links = set()
        known = self.anchor_nbrs[v]
        # Clean: drop anchors that are gone or demoted
        stale = [a for a in known if g.nbrs[a] is None or not self.anchor[a]]
        known.difference_update(stale)
        done = set()
        for u, agrees in tested:
            if self.anchor[u]:
                known.add(u)
                done.add(u)
                if agrees:
                    links.add(u)
        if len(known) < s:  # discover anchors two hops away, through the tested neighbours' links
            pos_v = g.pos[v]
            for u, agrees in tested:
                if not agrees:
                    continue
                for a in sorted(self.links[u]):
                    if a != v and a not in known and g.nbrs[a] is not None and self.anchor[a]:
                        g.n_queries += 1
                        if a in pos_v:
                            known.add(a)
                if len(known) >= s:
                    break
        candidates = sorted(a for a in known if a not in done)  # sorted: runs do not depend on set layout
        budget = s - len(links)
        if len(candidates) > budget:
            candidates = self.rng.sample(candidates, max(budget, 0))
        for a in candidates:
            if self._agree(v, a, d):
                links.add(a)
        self._set_links(v, links)

    def _set_links(self, v, links):
        old = self.links[v]
        self.links[v] = links
        if links != old:
            self.h.links_changed(v, old)

    def _evaluate(self, v):
        """Heavy, Anchor and Connect for one vertex (sampled mode)."""
        d = self.graph.degree(v)
        self.d0[v] = d
        heavy, tested = self._heavy_test(v, d)
        self.heavy[v] = heavy
        self._set_anchor(v, d)
        self._connect(v, d, tested)

    def _notify(self, around):
        """Notify: re-evaluate a random few vertices near an update; ``around`` lists the touched neighbours."""
        if not around:
            return
        g = self.graph
        k = math.ceil(1.0 / self.drift)
        hop1 = []
        for _ in range(k):
            g.n_queries += 1
            u = around[int(self.rng.random() * len(around))]
            if g.nbrs[u] is None:
                continue
            p = len(around) / (k * self.drift * max(self.d0[u], 1))
            if self.rng.random() < p:
                hop1.append(u)
        for u in hop1:
            self._evaluate(u)
        if self.notify_hops >= 2:
            for u in hop1:
                if g.nbrs[u] and self.rng.random() < self.drift:
                    self._evaluate(g.random_neighbor(u))

    def _exact_refresh(self, around):
        """Exact mode: re-evaluate every vertex whose state can have changed."""
        self._memo = {}
        try:
            self._exact_refresh_ball(around)
        finally:
            del self._memo

    def _exact_refresh_ball(self, around):
        g = self.graph
        ball2 = set(around)
        for u in around:
            ball2.update(g.nbrs[u])
        ball2 = [u for u in ball2 if g.nbrs[u] is not None]
        for u in ball2:
            d = g.degree(u)
            self.d0[u] = d
            self.heavy[u] = self._heavy_test(u, d)[0]
            self._set_anchor(u, d)
        ball3 = set(ball2)
        for u in ball2:
            ball3.update(g.nbrs[u])
        for u in ball3:
            self._connect(u, g.degree(u), None)

    # -- updates ---------------------------------------------------------------------------------
    def insert(self, nbrs):
        """Insert a vertex with its alive '+' neighbours (storing the edges is not a query); returns its id."""
        v = self.graph.add(nbrs)
        self.heavy.append(True)
        self.anchor.append(False)
        self.coin.append(self.rng.random())
        self.d0.append(len(nbrs))
        self.links.append(set())
        self.anchor_nbrs.append(set())
        self.h.add_vertex()
        self.n_updates += 1
        self._labels = None
        if self.exact:
            self._exact_refresh([v] + list(nbrs))
        else:
            self._evaluate(v)
            self._notify(nbrs)
        return v

    def delete(self, v):
        """Delete the alive vertex ``v``."""
        nbrs = self.graph.remove(v)
        old_links = self.links[v]
        self.links[v] = set()
        self.anchor_nbrs[v] = set()
        self.anchor[v] = False
        self.heavy[v] = False
        self.h.vertex_deleted(v, old_links)
        self.n_updates += 1
        self._labels = None
        if self.exact:
            self._exact_refresh(nbrs)
        else:
            self._notify(nbrs)

    # -- output ----------------------------------------------------------------------------------
    def _compute_labels(self):
        """Connected components of H over the alive vertices; -1 for deleted ids (kept by ``self.h``)."""
        return self.h.labels()

    def labels_from_scratch(self):
        """The same labels recomputed from the links in O(n + |H|): the oracle of the kept components."""
        g = self.graph
        n_seen = g.n_seen
        labels = np.full(n_seen, -1, dtype=np.int64)
        alive = g.alive_ids()
        if alive.size == 0:
            return labels
        anchor, nbrs = self.anchor, g.nbrs
        src, dst = [], []
        for v in alive.tolist():
            for a in self.links[v]:
                if nbrs[a] is not None and anchor[a]:
                    src.append(v)
                    dst.append(a)
        index = np.full(n_seen, -1, dtype=np.int64)
        index[alive] = np.arange(alive.size)
        comp = components(alive.size, index[np.asarray(src, dtype=np.int64)],
                          index[np.asarray(dst, dtype=np.int64)])
        labels[alive] = comp
        return labels


def _group_sets(n, src, dst):
    """List of n sets: the dst values of each src."""
    out = [set() for _ in range(n)]
    if len(src) == 0:
        return out
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    bounds = np.searchsorted(src, np.arange(n + 1))
    dl = dst.tolist()
    for v in np.flatnonzero(np.diff(bounds)).tolist():
        out[v] = set(dl[bounds[v]:bounds[v + 1]])
    return out
