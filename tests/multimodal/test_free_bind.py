"""FreeBind: sequential chains and parallel experts against hand-composed SpaceBonds and the official formula."""

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_icml.multimodal import FreeBind, SpaceBond


def _unit(Z):
    return Z / np.sqrt((Z ** 2).sum(axis=1))[:, None]


def _three_spaces(n=60, seed=0):
    """[u (6) | e1 (4) | e2 (5)]: two experts seeing parts of u; e1 missing on the first 8 rows, e2 on the last 6."""
    rng = np.random.RandomState(seed)
    u = rng.normal(size=(n, 6))
    e1 = np.tanh(u[:, :4] @ rng.normal(size=(4, 4))) + 0.1 * rng.normal(size=(n, 4))
    e2 = u[:, 2:] @ rng.normal(size=(4, 5)) + 0.1 * rng.normal(size=(n, 5))
    X = np.hstack([u, e1, e2])
    X[:8, 6:10] = np.nan
    X[-6:, 10:] = np.nan
    return X


def test_one_bond_equals_the_bond_alone():
    X = _three_spaces()[:, :10]
    bond = SpaceBond(n_projectors=2, random_state=0, mixing=0.4)
    fb = FreeBind([("clap", bond)], expert_widths=[4]).fit(X)
    np.testing.assert_array_equal(fb.transform(X), clone(bond).set_params(n_base_features=6).fit(X).transform(X))
    assert fb.block_widths_ == [6, 4]
    assert fb.bonds_[0][1] is not bond and bond.n_base_features is None  # cloned, the given bond untouched


def test_sequential_chain_displace_then_combine():
    X = _three_spaces()
    first = SpaceBond("displacement", mixing=0.2, random_state=0)
    second = SpaceBond(mixing=0.5, random_state=0)
    fb = FreeBind([("internvl", first), ("clap", second)], expert_widths=[4, 5]).fit(X)
    # by hand: displace the unified space by expert 1 (the base becomes 4 wide), then combine expert 2 into it
    b1 = clone(first).set_params(n_base_features=6).fit(X[:, :10])
    base = b1.transform(X[:, :10])
    b2 = clone(second).set_params(n_base_features=4).fit(np.hstack([base, X[:, 10:]]))
    want = b2.transform(np.hstack([base, X[:, 10:]]))
    np.testing.assert_allclose(fb.transform(X), want, atol=1e-12)
    assert fb.transform(X).shape == (60, 4) and len(fb.get_feature_names_out()) == 4


def test_parallel_experts_average_all_projectors():
    X = _three_spaces()
    fb = FreeBind([("general", SpaceBond(n_projectors=3, random_state=0)),
                   ("music", SpaceBond(n_projectors=2, random_state=1))], mode="parallel",
                  expert_widths=[4, 5], mixing=0.6).fit(X)
    u, e1, e2 = X[:, :6], X[:, 6:10], X[:, 10:]
    have1, have2 = ~np.isnan(e1[:, 0]), ~np.isnan(e2[:, 0])
    total, count = np.zeros_like(u), np.zeros(60)
    for (_, bond), e, have in ((fb.bonds_[0], e1, have1), (fb.bonds_[1], e2, have2)):
        for p in bond.projectors_:
            total[have] += _unit(_unit(e[have]) @ p.coef + p.intercept)
            count[have] += 1
    assert count.max() == 5  # 3 + 2 projectors for rows with both experts
    mixed = count > 0
    want = _unit(u)
    proj = _unit(total[mixed] / count[mixed, None])
    want[mixed] = _unit(0.6 * proj + 0.4 * _unit(u[mixed]))
    np.testing.assert_allclose(fb.transform(X), want, atol=1e-12)


def test_mixing_of_the_bonds_is_read_at_transform_time():
    X = _three_spaces()
    fb = FreeBind([("a", SpaceBond(mixing=0.5)), ("b", SpaceBond(mixing=0.5))], mode="parallel",
                  expert_widths=[4, 5]).fit(X)
    fitted = [b for _, b in fb.bonds_]
    before = fb.transform(X)
    fb.set_params(a__mixing=0.9, b__mixing=0.9)
    assert fb.get_params()["a__mixing"] == 0.9 and [b for _, b in fb.bonds_] == fitted
    after = fb.transform(X)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, fb.set_params(a__mixing=0.5, b__mixing=0.5, mixing=0.9).transform(X),
                               atol=1e-12)
    with pytest.raises(ValueError, match="share one mixing factor"):
        fb.set_params(mixing=None, a__mixing=0.1).transform(X)


def test_dict_mixing_in_a_chain_uses_groups():
    X = _three_spaces()
    groups = np.array(["audio", "text"] * 30)
    fb = FreeBind([("a", SpaceBond(mixing={"audio": 0.5, "text": 0.1})), ("b", SpaceBond(mixing=0.3))],
                  expert_widths=[4, 5]).fit(X, groups=groups)
    Z = fb.transform(X, groups=groups)
    assert Z.shape == (60, 6)
    with pytest.raises(ValueError, match="needs groups"):
        fb.transform(X)


def test_bad_compositions_are_refused():
    X = _three_spaces()
    with pytest.raises(ValueError, match="every bond must be a combination bond"):
        FreeBind([("a", SpaceBond("displacement")), ("b", SpaceBond())], mode="parallel",
                 expert_widths=[4, 5]).fit(X)
    with pytest.raises(ValueError, match="expert_widths has 1 entries for 2 bond"):
        FreeBind([("a", SpaceBond()), ("b", SpaceBond())], expert_widths=[4]).fit(X)
    with pytest.raises(ValueError, match="has n_base_features=5 but its base is 6 wide"):
        FreeBind([("a", SpaceBond(n_base_features=5)), ("b", SpaceBond())], expert_widths=[4, 5]).fit(X)
    with pytest.raises(TypeError, match="must be a SpaceBond"):
        FreeBind([("a", "ridge")]).fit(X)
    with pytest.raises(ValueError, match="unique"):
        FreeBind([("a", SpaceBond()), ("a", SpaceBond())], expert_widths=[4, 5]).fit(X)
    X_bad = X.copy()
    X_bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN in the base"):
        FreeBind([("a", SpaceBond()), ("b", SpaceBond())], expert_widths=[4, 5]).fit(X_bad)


def test_parallel_experts_on_synthetic_embeddings():
    from sklearn_icml.datasets import make_multimodal_embeddings
    from sklearn_icml.metrics import recall_at_k

    one = make_multimodal_embeddings(300, random_state=0)
    two = make_multimodal_embeddings(300, n_experts=2, random_state=0)
    np.testing.assert_array_equal(two.X[:, :96], one.X)  # the first expert does not depend on the second
    assert two.X.shape == (900, 128) and np.isnan(two.X[two.modality == "image", 64:]).all()
    train, test = two.item < 200, two.item >= 200
    fb = FreeBind([("general", SpaceBond()), ("music", SpaceBond())], mode="parallel",
                  expert_widths=[32, 32]).fit(two.X[train])
    Z, m = fb.transform(two.X[test]), two.modality[test]
    base = recall_at_k(two.unified_audio[200:], two.unified_text[200:])
    assert recall_at_k(Z[m == "audio"], Z[m == "text"]) >= base + 0.4
