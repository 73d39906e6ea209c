"""The items of a dueling problem and their pair features, with the few operations the agents need.

Pair features are given either in full (``pair_features`` of shape (K, K, d),
antisymmetric) or through item features (``phi_ij = x_i - x_j``), in which case
nothing of size ``K^2 d`` is ever materialised by the agents: the Borda
averages, the second moments of the sampling distribution and the rows of
played pairs all have closed forms in ``x``.
"""

import numpy as np

__all__ = ["ActionSet", "check_pair_features"]

# Precompute vec(phi phi^T) for all pairs (K^2 x d^2 floats) below this many entries.
_PSI_MAX_ENTRIES = 4_000_000


def check_pair_features(pair_features, name):
    """Validate an antisymmetric (K, K, d) array of pair features and return it as float64."""
    P = np.asarray(pair_features, dtype=np.float64)
    if P.ndim != 3 or P.shape[0] != P.shape[1] or P.shape[0] < 2 or P.shape[2] < 1:
        raise ValueError(f"{name}: pair_features must have shape (n_items, n_items, n_features) with at least "
                         f"2 items; got shape {P.shape}.")
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name}: pair_features contain NaN or infinity.")
    if not np.allclose(P, -P.transpose(1, 0, 2), atol=1e-10 * max(1.0, np.abs(P).max())):
        raise ValueError(f"{name}: pair_features must be antisymmetric, phi[j, i] = -phi[i, j] (so that "
                         "P(j beats i) = 1 - P(i beats j)).")
    return P


def check_item_features(item_features, name):
    """Validate a (K, d) array of item features and return it as float64."""
    X = np.asarray(item_features, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"{name}: item_features must have shape (n_items, n_features) with at least 2 items; "
                         f"got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name}: item_features contain NaN or infinity.")
    return X


class ActionSet:
    """Pair features of K items, from a full (K, K, d) array or from (K, d) item features."""

    def __init__(self, pair_features=None, item_features=None, *, name="ActionSet"):
        if (pair_features is None) == (item_features is None):
            raise ValueError(f"{name}: give exactly one of pair_features (n_items, n_items, n_features) and "
                             "item_features (n_items, n_features).")
        if pair_features is not None:
            self.pair = check_pair_features(pair_features, name)
            self.items = None
            self.n_items, _, self.dim = self.pair.shape
        else:
            self.items = check_item_features(item_features, name)
            self.pair = None
            self.n_items, self.dim = self.items.shape
        self._psi = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_psi"] = None  # a cache of up to 32 MB: rebuilt on demand, never pickled
        return state

    # ---- rows and averages -------------------------------------------------------------------
    def rows(self, i, j):
        """Pair features of the duels (i[t], j[t]), shape (n, d)."""
        if self.pair is not None:
            return self.pair[i, j]
        return self.items[i] - self.items[j]

    def row(self, i, j):
        """Pair feature of one duel, shape (d,)."""
        if self.pair is not None:
            return self.pair[i, j]
        return self.items[i] - self.items[j]

    def mean_rows(self):
        """``(1/K) sum_j phi_ij`` for every item i, shape (K, d): the linear Borda score is ``. theta``."""
        if self.pair is not None:
            return self.pair.mean(axis=1)
        return self.items - self.items.mean(axis=0)

    def linear_scores(self, theta):
        """``phi_ij . theta`` for all pairs, shape (K, K)."""
        if self.pair is not None:
            return self.pair @ theta
        s = self.items @ theta
        return s[:, None] - s[None, :]

    def borda(self, theta, link):
        """Borda scores ``(1/K) sum_j mu(phi_ij . theta)`` of every item, shape (K,)."""
        return link.proba(self.linear_scores(theta)).mean(axis=1)

    # ---- second moments ----------------------------------------------------------------------
    def second_moment(self, q):
        """``sum_ij q_i q_j phi_ij phi_ij^T`` for a probability vector q, shape (d, d)."""
        if self.items is not None:
            m = q @ self.items
            return 2.0 * ((self.items * q[:, None]).T @ self.items - np.outer(m, m))
        K, d = self.n_items, self.dim
        if K * K * d * d <= _PSI_MAX_ENTRIES:
            if self._psi is None:
                flat = self.pair.reshape(K * K, d)
                self._psi = np.einsum("ak,al->akl", flat, flat).reshape(K * K, d * d)
            return (np.outer(q, q).reshape(-1) @ self._psi).reshape(d, d)
        flat = self.pair.reshape(K * K, d)
        w = np.outer(q, q).reshape(-1)
        return (flat * w[:, None]).T @ flat

    def uniform_lambda_min(self):
        """``lambda_min((1/K^2) sum_ij phi_ij phi_ij^T)``, the paper's ``lambda_0``."""
        Q = self.second_moment(np.full(self.n_items, 1.0 / self.n_items))
        return float(np.linalg.eigvalsh(Q)[0])

    # ---- distinct pairs, for the design ------------------------------------------------------
    def distinct_pairs(self):
        """Distinct non-zero pair features up to sign, and the unordered pairs carrying each.

        Returns ``(features (m, d), pairs (n_pairs, 2) with i < j, group (n_pairs,))`` where pair
        ``p`` has feature ``+-features[group[p]]``.
        """
        K = self.n_items
        iu, ju = np.triu_indices(K, k=1)
        rows = self.rows(iu, ju)
        keep = np.any(rows != 0, axis=1)
        iu, ju, rows = iu[keep], ju[keep], rows[keep]
        if rows.shape[0] == 0:
            raise ValueError("every pair feature is zero: the duels carry no information about theta.")
        # canonical sign: first non-zero coordinate positive, so phi and -phi are one design point
        first = np.argmax(rows != 0, axis=1)
        sign = np.sign(rows[np.arange(len(rows)), first])
        canon = np.ascontiguousarray(np.round(rows * sign[:, None], 12) + 0.0)  # + 0.0 turns -0.0 into 0.0
        # distinct rows through a byte view: each row one opaque key, cheaper to sort than np.unique(axis=0)'s
        # column-by-column order
        keys = canon.view(np.dtype((np.void, canon.dtype.itemsize * canon.shape[1]))).ravel()
        _, first_of, group = np.unique(keys, return_index=True, return_inverse=True)
        return canon[first_of], np.column_stack([iu, ju]), group.reshape(-1)
