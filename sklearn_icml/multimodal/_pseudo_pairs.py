"""Pseudo pairs by retrieval: an expert embedding for items that the expert space does not cover.

FreeBind trains its projectors on pseudo datasets built from unimodal data (the
C-MCR / Ex-MCR construction): an item of a modality both spaces cover gives a
direct pair; an item of a modality the expert lacks (an image for an
audio-text expert) is paired with the expert embeddings of the semantically
nearest items that the expert does cover, retrieved in the space the item
lives in and averaged with softmax weights.
"""

import numpy as np

from ._layout import l2_normalize

__all__ = ["pseudo_expert_embeddings"]


def pseudo_expert_embeddings(u_query, u_anchor, e_anchor, *, n_neighbors, temperature, chunk_size=2048):
    """Pseudo expert embeddings of query items, by retrieval among anchor pairs.

    For each query row ``q`` (L2-normalised), the ``n_neighbors`` anchors with
    the largest cosine similarity ``s_j = <q, a_j>`` between ``q`` and their
    normalised unified part ``a_j`` are retrieved; the output row is
    ``sum_j w_j normalize(e_j)`` over them, with ``w = softmax(s / temperature)``.

    Parameters
    ----------
    u_query : ndarray of shape (n_queries, n_base)
        Unified embeddings of the items without an expert embedding.
    u_anchor : ndarray of shape (n_anchors, n_base)
        Unified embeddings of the paired items.
    e_anchor : ndarray of shape (n_anchors, n_expert)
        Expert embeddings of the same paired items.
    n_neighbors : int
        Anchors averaged per query (at most ``n_anchors``).
    temperature : float
        Softmax temperature over the cosine similarities of the retrieved
        anchors; small values approach the nearest anchor alone.
    chunk_size : int, default=2048
        Query rows per similarity block (bounds the memory to
        ``chunk_size * n_anchors`` floats).

    Returns
    -------
    pseudo : ndarray of shape (n_queries, n_expert)
        The weighted means (not normalised), in the dtype of ``e_anchor``.
    """
    q = l2_normalize(u_query)
    a = l2_normalize(u_anchor)
    E = l2_normalize(e_anchor)
    k = int(n_neighbors)
    out = np.empty((q.shape[0], E.shape[1]), dtype=E.dtype)
    for lo in range(0, q.shape[0], chunk_size):
        S = q[lo:lo + chunk_size] @ a.T
        idx = np.argpartition(-S, k - 1, axis=1)[:, :k] if k < S.shape[1] else np.broadcast_to(
            np.arange(S.shape[1]), S.shape)
        s = np.take_along_axis(S, idx, axis=1) / temperature
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        out[lo:lo + chunk_size] = np.einsum("ik,ikd->id", w.astype(E.dtype, copy=False), E[idx])
    return out
