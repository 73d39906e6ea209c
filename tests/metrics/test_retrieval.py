"""recall_at_k: against a brute-force ranking by cosine similarity, ties, distractors and bad input."""

import numpy as np
import pytest

from sklearn_icml.metrics import recall_at_k


def _brute_force(queries, gallery, k):
    """Rank of each match by a stable sort of cosine similarities, ties placed before the match."""
    hits = 0
    for i, q in enumerate(queries):
        sims = [float(np.dot(q, g) / (np.linalg.norm(q) * np.linalg.norm(g))) for g in gallery]
        better = sum(1 for j, s in enumerate(sims) if j != i and s >= sims[i])
        hits += better < k
    return hits / len(queries)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_recall_matches_brute_force(k):
    rng = np.random.RandomState(0)
    gallery = rng.normal(size=(60, 5))
    queries = gallery[:40] + rng.normal(scale=1.0, size=(40, 5))
    assert recall_at_k(queries, gallery, k=k) == pytest.approx(_brute_force(queries, gallery, k))


def test_recall_uses_cosine_not_dot_product():
    gallery = np.array([[1.0, 0.0], [10.0, 1.0]])
    queries = np.array([[1.0, 0.0], [0.0, 1.0]])
    # by dot product query 0 would pick the long row 1; by cosine it picks its match
    assert recall_at_k(queries, gallery) == 1.0


def test_recall_ties_count_against_the_query():
    same = np.ones((5, 3))
    assert recall_at_k(same, same, k=1) == 0.0
    assert recall_at_k(same, same, k=5) == 1.0


def test_recall_blocks_agree_with_one_pass(monkeypatch):
    from sklearn_icml.utils._distances import _retrieval

    rng = np.random.RandomState(1)
    gallery = rng.normal(size=(50, 4))
    queries = gallery + rng.normal(scale=0.8, size=gallery.shape)
    full = recall_at_k(queries, gallery)
    monkeypatch.setattr(_retrieval, "_BLOCK", 7)
    assert recall_at_k(queries, gallery) == full


def test_recall_perfect_and_bad_input():
    X = np.random.RandomState(2).normal(size=(20, 4))
    assert recall_at_k(X, X) == 1.0
    with pytest.raises(ValueError, match="features"):
        recall_at_k(X, X[:, :3])
    with pytest.raises(ValueError, match="gallery must hold"):
        recall_at_k(X, X[:10])
    with pytest.raises(ValueError, match="k"):
        recall_at_k(X, X, k=0)
