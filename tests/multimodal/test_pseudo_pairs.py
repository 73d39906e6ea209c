"""Pseudo pairs by retrieval (FreeBind's pseudo dataset) against a brute-force derivation."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from sklearn_icml.multimodal import SpaceBond
from sklearn_icml.multimodal._pseudo_pairs import pseudo_expert_embeddings


def _unit(Z):
    return Z / np.sqrt((Z ** 2).sum(axis=1))[:, None]


def _brute_force(u_query, u_anchor, e_anchor, k, temperature):
    """Loop over queries: cosine to every anchor, sort, softmax over the top k, weighted mean of unit e."""
    out = []
    for q in u_query:
        sims = [float(np.dot(q, a) / (np.linalg.norm(q) * np.linalg.norm(a))) for a in u_anchor]
        top = sorted(range(len(sims)), key=lambda j: -sims[j])[:k]
        w = np.exp(np.array([sims[j] for j in top]) / temperature)
        w /= w.sum()
        out.append(sum(wj * e_anchor[j] / np.linalg.norm(e_anchor[j]) for wj, j in zip(w, top)))
    return np.array(out)


def _data(seed=0, n=60, n_missing=15, d_u=5, d_e=4):
    rng = np.random.RandomState(seed)
    u = rng.normal(size=(n, d_u)) * rng.uniform(0.5, 3.0, size=(n, 1))  # rows of different scales
    e = np.tanh(u @ rng.normal(size=(d_u, d_e))) + 0.1 * rng.normal(size=(n, d_e))
    X = np.hstack([u, e])
    X[n - n_missing:, d_u:] = np.nan
    return X, u, e, n - n_missing


def _buggy_euclidean(u_query, u_anchor, e_anchor, k, temperature):
    """A planted bug: neighbours by Euclidean distance of the raw (unnormalised) unified parts."""
    d = ((u_query[:, None, :] - u_anchor[None]) ** 2).sum(-1)
    out = []
    for i, row in enumerate(d):
        top = np.argsort(row)[:k]
        s = np.array([np.dot(_unit(u_query[i:i + 1])[0], _unit(u_anchor[j:j + 1])[0]) for j in top])
        w = np.exp(s / temperature)
        w /= w.sum()
        out.append((w[:, None] * _unit(e_anchor[top])).sum(0))
    return np.array(out)


@pytest.mark.parametrize("k, temperature", [(1, 0.05), (4, 0.05), (7, 1.0), (45, 0.2)])
def test_pseudo_embeddings_match_brute_force(k, temperature):
    X, u, e, n_pairs = _data()
    got = pseudo_expert_embeddings(u[n_pairs:], u[:n_pairs], e[:n_pairs], n_neighbors=k, temperature=temperature,
                                   chunk_size=4)  # several chunks
    want = _brute_force(u[n_pairs:], u[:n_pairs], e[:n_pairs], k, temperature)
    np.testing.assert_allclose(got, want, atol=1e-12)
    if k == 1:  # the nearest pair's unit expert embedding itself
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-12)


def test_brute_force_comparison_catches_a_planted_bug():
    # the comparison above must tell cosine retrieval from Euclidean retrieval on rows of different scales
    X, u, e, n_pairs = _data()
    got = pseudo_expert_embeddings(u[n_pairs:], u[:n_pairs], e[:n_pairs], n_neighbors=4, temperature=0.05)
    buggy = _buggy_euclidean(u[n_pairs:], u[:n_pairs], e[:n_pairs], 4, 0.05)
    assert not np.allclose(got, buggy, atol=1e-6)
    np.testing.assert_allclose(got, _brute_force(u[n_pairs:], u[:n_pairs], e[:n_pairs], 4, 0.05), atol=1e-12)


@pytest.mark.parametrize("bond", ["combination", "displacement"])
def test_bond_trains_on_direct_and_pseudo_pairs(bond):
    X, u, e, n_pairs = _data(seed=1)
    X_before = X.copy()
    fitted = SpaceBond(bond, n_base_features=5, projector="ridge", pseudo_pairs="retrieval", n_neighbors=3,
                       pseudo_temperature=0.1).fit(X)
    np.testing.assert_array_equal(X, X_before)  # the caller's NaN rows are not filled in
    assert (fitted.n_pairs_, fitted.n_pseudo_pairs_) == (n_pairs, 15)
    e_all = np.vstack([e[:n_pairs], _brute_force(u[n_pairs:], u[:n_pairs], e[:n_pairs], 3, 0.1)])
    source, target = (e_all, u) if bond == "combination" else (u, e_all)
    ref = Ridge(alpha=1e-2, solver="svd").fit(_unit(source), _unit(target))
    np.testing.assert_allclose(fitted.projectors_[0].coef, ref.coef_.T, atol=1e-8)
    np.testing.assert_allclose(fitted.projectors_[0].intercept, ref.intercept_, atol=1e-8)
    # without the option the rows without an expert part are skipped
    plain = SpaceBond(bond, n_base_features=5, projector="ridge").fit(X)
    assert plain.n_pseudo_pairs_ == 0 and not np.allclose(plain.projectors_[0].coef, fitted.projectors_[0].coef)


def test_pseudo_pairs_keep_their_group_and_get_their_own_projector():
    X, u, e, n_pairs = _data(seed=2)
    groups = np.array(["audio"] * 20 + ["text"] * (n_pairs - 20) + ["image"] * 15)
    fitted = SpaceBond(n_base_features=5, projector="procrustes", pseudo_pairs="retrieval", n_neighbors=2).fit(
        X, groups=groups)
    assert len(fitted.projectors_) == 3  # one per group value, sorted: audio, image, text
    pseudo = _brute_force(u[n_pairs:], u[:n_pairs], e[:n_pairs], 2, 0.05)
    A, B = _unit(pseudo), _unit(u[n_pairs:])
    U, _, Vt = np.linalg.svd(A.T @ B, full_matrices=False)
    np.testing.assert_allclose(fitted.projectors_[1].coef, U @ Vt, atol=1e-8)


def test_pseudo_pairs_are_a_no_op_when_every_row_is_paired():
    X, _, _, n_pairs = _data(n_missing=0)
    a = SpaceBond(n_base_features=5, pseudo_pairs="retrieval").fit(X)
    b = SpaceBond(n_base_features=5).fit(X)
    assert a.n_pseudo_pairs_ == 0
    np.testing.assert_array_equal(a.projectors_[0].coef, b.projectors_[0].coef)


def test_too_many_neighbours_and_bad_values_are_refused():
    X, _, _, n_pairs = _data(n=12, n_missing=4)
    with pytest.raises(ValueError, match=r"SpaceBond: n_neighbors=9 exceeds the 8 direct pair"):
        SpaceBond(n_base_features=5, pseudo_pairs="retrieval", n_neighbors=9).fit(X)
    with pytest.raises(ValueError, match="pseudo_pairs"):
        SpaceBond(n_base_features=5, pseudo_pairs="knn").fit(X)
    with pytest.raises(ValueError, match="pseudo_temperature"):
        SpaceBond(n_base_features=5, pseudo_pairs="retrieval", pseudo_temperature=0.0).fit(X)
