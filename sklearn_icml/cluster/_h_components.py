"""The connected components of Dynamic Agreement's sparse graph ``H``, kept up to date along the stream.

``H`` links each alive vertex ``v`` to the alive anchors in its link set, and
the clusters are its connected components. Recomputing them on every read of
``labels_`` is O(n) Python work per update; :class:`HComponents` instead keeps
them under the state's changes, at a cost proportional to what changed:

* every vertex has a *star*: the alive anchors it links to, and itself when it
  is an alive anchor. All members of a star lie in one component, and a
  vertex's component is the component of any member of its star (a vertex
  with an empty star is a singleton). So the components of ``H`` are those of
  the *anchor graph*, which joins the first member of each star to the others;
* the anchor graph is a multigraph: ``pair_count`` counts the stars behind each
  edge. A new edge merges two components (the smaller is relabelled: O(log)
  amortised per anchor); an edge whose count drops to 0, or an anchor that
  leaves, may split one, which marks the components stale; they are rebuilt
  from the live edges at the next read, in O(anchors + edges) vectorised work;
* a link change re-derives one star (O(links)); an anchor flip or deletion
  re-derives the stars of the vertices linked to it (O(linked vertices)).

A read is then one vectorised pass: the component of each vertex's
representative anchor, relabelled 0..k-1 in order of first vertex.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ._signed_graph import canonical_labels

__all__ = ["HComponents"]


class HComponents:
    """Connected components of ``H`` under link, anchor and vertex updates.

    Parameters
    ----------
    state : DynamicAgreement
        The state whose ``links``, ``anchor`` and ``graph`` define ``H``; it
        calls :meth:`add_vertex`, :meth:`links_changed`, :meth:`anchor_changed`
        and :meth:`vertex_deleted` after each change.
    """

    def __init__(self, state):
        self.state = state
        self.star = []  # sorted tuple of the anchors of each vertex's star
        self.linked_by = []  # vertices whose link set holds this vertex
        self.pair_count = {}  # anchor-graph edge (first member, other member) -> stars behind it
        self.rep = np.full(16, -1, dtype=np.int64)  # first member of the star, -1 when empty
        self.comp = np.full(16, -1, dtype=np.int64)  # component id of an anchor (-1: on its own)
        self.alive = np.zeros(16, dtype=bool)
        self.members = {}  # component id -> its anchors
        self.stale = False

    # -- bookkeeping ----------------------------------------------------------------------------
    def _grow(self, n):
        if n > len(self.rep):
            size = max(n, 2 * len(self.rep))
            self.rep = np.r_[self.rep, np.full(size - len(self.rep), -1, dtype=np.int64)]
            self.comp = np.r_[self.comp, np.full(size - len(self.comp), -1, dtype=np.int64)]
            self.alive = np.r_[self.alive, np.zeros(size - len(self.alive), dtype=bool)]

    def _alive_anchor(self, a):
        return self.state.anchor[a] and self.state.graph.nbrs[a] is not None

    def _derive_star(self, v):
        if self.state.graph.nbrs[v] is None:
            return ()
        members = {a for a in self.state.links[v] if self._alive_anchor(a)}
        if self.state.anchor[v]:
            members.add(v)
        return tuple(sorted(members))

    def _refresh(self, v):
        """Re-derive the star of ``v`` and move its anchor-graph edges."""
        old, new = self.star[v], self._derive_star(v)
        if old == new:
            return
        counts = self.pair_count
        for a in old[1:]:
            key = (old[0], a)
            left = counts[key] - 1
            if left:
                counts[key] = left
            else:
                del counts[key]
                self.stale = True
        for a in new[1:]:
            key = (new[0], a)
            if key in counts:
                counts[key] += 1
            else:
                counts[key] = 1
                if not self.stale:
                    self._union(new[0], a)
        self.star[v] = new
        self.rep[v] = new[0] if new else -1

    def _union(self, a, b):
        comp, members = self.comp, self.members
        for x in (a, b):
            if comp[x] < 0:
                comp[x] = x
                members[x] = [x]
        ca, cb = comp[a], comp[b]
        if ca == cb:
            return
        if len(members[ca]) < len(members[cb]):
            ca, cb = cb, ca
        moved = members.pop(cb)
        comp[moved] = ca
        members[ca].extend(moved)

    def _rebuild(self):
        """Components of the anchor graph from its live edges (after a possible split)."""
        self.comp[:] = -1
        self.members = {}
        self.stale = False
        if not self.pair_count:
            return
        edges = np.array(list(self.pair_count), dtype=np.int64)
        nodes, inverse = np.unique(edges, return_inverse=True)
        inverse = inverse.reshape(edges.shape)
        k = len(nodes)
        graph = sp.csr_array((np.ones(len(edges), dtype=np.int8), (inverse[:, 0], inverse[:, 1])), shape=(k, k))
        _, lab = connected_components(graph, directed=False)
        # a component is named by its smallest anchor
        root = np.full(lab.max() + 1, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(root, lab, nodes)
        self.comp[nodes] = root[lab]
        order = np.argsort(lab, kind="stable")
        bounds = np.searchsorted(lab[order], np.arange(len(root) + 1))
        for c in range(len(root)):
            self.members[int(root[c])] = nodes[order[bounds[c]:bounds[c + 1]]].tolist()

    # -- the state's changes -------------------------------------------------------------------
    def load(self):
        """Derive every star of a freshly loaded state."""
        n = self.state.graph.n_seen
        self._grow(n)
        self.star = [()] * n
        self.linked_by = [set() for _ in range(n)]
        for v, links in enumerate(self.state.links):
            for a in links:
                self.linked_by[a].add(v)
        self.alive[:] = False
        self.alive[:n] = [nbrs is not None for nbrs in self.state.graph.nbrs]
        self.pair_count = {}
        self.stale = True  # built in one pass at the first read
        for v in range(n):
            self._refresh(v)

    def add_vertex(self):
        """A new vertex (no links yet): grow the per-vertex tables."""
        self.star.append(())
        self.linked_by.append(set())
        self._grow(len(self.star))
        self.alive[len(self.star) - 1] = True

    def links_changed(self, v, old):
        """``links[v]`` was ``old`` and has just been replaced."""
        new = self.state.links[v]
        for a in old - new:
            self.linked_by[a].discard(v)
        for a in new - old:
            self.linked_by[a].add(v)
        self._refresh(v)

    def anchor_changed(self, v):
        """``anchor[v]`` flipped: its own star and the stars linking to it change."""
        self._refresh(v)
        for u in self.linked_by[v]:
            self._refresh(u)

    def vertex_deleted(self, v, old_links):
        """``v`` was deleted (its links cleared, no longer an anchor)."""
        self.alive[v] = False
        for a in old_links:
            self.linked_by[a].discard(v)
        self.anchor_changed(v)

    # -- the read ------------------------------------------------------------------------------
    def labels(self):
        """Component label of every vertex id (0..k-1 by first vertex), -1 for deleted ids."""
        if self.stale:
            self._rebuild()
        n = len(self.star)
        labels = np.full(n, -1, dtype=np.int64)
        alive = np.flatnonzero(self.alive[:n])
        if alive.size == 0:
            return labels
        rep = self.rep[alive]
        comp = self.comp[np.maximum(rep, 0)]
        # a vertex with an empty star is a singleton: its own id, shifted past every anchor id
        raw = np.where(rep < 0, n + alive, np.where(comp >= 0, comp, rep))
        labels[alive] = canonical_labels(raw)
        return labels
