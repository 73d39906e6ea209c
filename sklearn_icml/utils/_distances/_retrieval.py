"""Cross-modal retrieval: recall at k of paired queries and gallery items, by cosine similarity."""

from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_array

from .._sklearn_private import Interval, validate_params
from .._torch import as_numpy

__all__ = ["recall_at_k"]

#: Query rows scored at once (bounds the similarity block to this many rows of the gallery).
_BLOCK = 1024


@validate_params(
    {
        "queries": ["array-like"],
        "gallery": ["array-like"],
        "k": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def recall_at_k(queries, gallery, k=1):
    """Share of queries whose match is among the ``k`` most similar gallery items.

    Query ``i`` matches gallery item ``i`` (an audio clip and its caption, an
    image and its text); the gallery may hold more rows than there are
    queries (extra distractors). Items are compared by cosine similarity
    (rows are L2-normalised; a zero row has similarity 0 with everything).

    Parameters
    ----------
    queries : array-like of shape (n_queries, n_features)
        Query embeddings.
    gallery : array-like of shape (n_gallery, n_features)
        Gallery embeddings, ``n_gallery >= n_queries``; row ``i`` is the
        match of query ``i``.
    k : int, default=1
        Cut-off rank.

    Returns
    -------
    float
        Recall at ``k`` in [0, 1].

    See Also
    --------
    sklearn_icml.multimodal.SpaceBond : Binds embedding spaces; scored by this metric.

    Notes
    -----
    Ties are counted against the query: the rank of the match is one plus the
    number of *other* gallery items whose similarity is at least the match's,
    so a degenerate embedding (all rows equal) scores ``k / n_gallery`` rather
    than 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import recall_at_k
    >>> gallery = np.eye(3)
    >>> queries = np.array([[1.0, 0.1, 0.0], [0.0, 0.2, 1.0], [0.0, 0.0, 1.0]])
    >>> recall_at_k(queries, gallery, k=1), recall_at_k(queries, gallery, k=2)
    (0.6666666666666666, 1.0)
    """
    queries = check_array(as_numpy(queries), dtype=np.float64, input_name="queries")
    gallery = check_array(as_numpy(gallery), dtype=np.float64, input_name="gallery")
    if queries.shape[1] != gallery.shape[1]:
        raise ValueError(f"recall_at_k: queries have {queries.shape[1]} features but gallery has "
                         f"{gallery.shape[1]}.")
    n = queries.shape[0]
    if gallery.shape[0] < n:
        raise ValueError(f"recall_at_k: the gallery must hold the match of every query ({n} queries) but has "
                         f"{gallery.shape[0]} rows.")
    q = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), np.finfo(float).tiny)
    g = gallery / np.maximum(np.linalg.norm(gallery, axis=1, keepdims=True), np.finfo(float).tiny)
    hits = 0
    for lo in range(0, n, _BLOCK):
        sims = q[lo:lo + _BLOCK] @ g.T
        rows = np.arange(sims.shape[0])
        match = sims[rows, lo + rows]
        # other items at least as similar as the match (the match itself is counted once, then removed)
        rank = (sims >= match[:, None]).sum(axis=1)
        hits += int(np.sum(rank <= k))
    return hits / n
