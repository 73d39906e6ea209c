"""Bag input forms, BagPooler, PathwayEncoder, and their composition with ColumnTransformer."""

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

from sklearn_icml.survival import BagPooler, PathwayEncoder, PrototypeEncoder, as_bags, pad_bags


def _bags(rng, n=5, d=3):
    return [rng.normal(size=(rng.randint(1, 7), d)) for _ in range(n)]


def test_the_three_input_forms_agree():
    rng = np.random.RandomState(0)
    bags = _bags(rng)
    padded, mask = pad_bags(bags)
    assert padded.shape == (5, max(len(b) for b in bags), 3)
    np.testing.assert_array_equal(mask.sum(1), [len(b) for b in bags])
    obj = np.empty(5, dtype=object)
    obj[:] = bags
    pd = pytest.importorskip("pandas")
    for form in (bags, tuple(bags), obj, padded, pd.Series(bags), pd.DataFrame({"bag": bags})):
        got = as_bags(form)
        assert len(got) == 5
        for a, b in zip(got, bags):
            np.testing.assert_array_equal(a, b)
    # padding anywhere in a bag, not only at its end
    shuffled = padded[:, ::-1]
    for a, b in zip(as_bags(shuffled), bags):
        np.testing.assert_array_equal(a, b[::-1])
    # plain rows are bags of one
    X = rng.normal(size=(4, 3))
    assert [b.shape for b in as_bags(X)] == [(1, 3)] * 4
    zero_padded, _ = pad_bags(bags, fill_value=0.0)
    assert not np.isnan(zero_padded).any()


@pytest.mark.parametrize("make, match", [
    (lambda: [np.ones((2, 3)), np.ones((0, 3))], "bag 1 is empty"),
    (lambda: [np.ones((2, 3)), np.ones((2, 4))], "share their instance dimension"),
    (lambda: np.array([[[1.0, np.nan], [1.0, 2.0]]]), "partly NaN"),
    (lambda: np.full((2, 2, 3), np.nan), "bag 0 is empty"),
    (lambda: [np.ones((2, 3)), np.array([[1.0, np.nan, 0.0]])], "NaN"),
    (lambda: [np.ones((2, 3)), np.ones(3)], "2-D"),
])
def test_bad_bags(make, match):
    with pytest.raises(ValueError, match=match):
        as_bags(make())
    with pytest.raises(ValueError, match=match):
        BagPooler().fit(make())


def test_bag_pooler_statistics_and_names():
    rng = np.random.RandomState(1)
    bags = _bags(rng)
    for stat, fn in [("mean", lambda b: b.mean(0)), ("max", lambda b: b.max(0)),
                     ("meanstd", lambda b: np.r_[b.mean(0), b.std(0)])]:
        out = BagPooler(stat=stat).fit(bags).transform(bags)
        np.testing.assert_allclose(out, np.array([fn(b) for b in bags]), atol=1e-12)
    pooler = BagPooler(stat="meanstd").fit(bags)
    assert list(pooler.get_feature_names_out()) == ["mean_x0", "mean_x1", "mean_x2", "std_x0", "std_x1", "std_x2"]
    # a single name is the name of the bag column (what ColumnTransformer passes) when fitted on bags
    assert len(pooler.get_feature_names_out(["bag"])) == 6
    rows = BagPooler().fit(rng.normal(size=(5, 3)))
    with pytest.raises(ValueError, match="length equal"):
        rows.get_feature_names_out(["bag"])
    # float32 bags stay float32
    assert BagPooler().fit_transform([b.astype(np.float32) for b in bags]).dtype == np.float32
    with pytest.raises(ValueError, match="expecting 3 features"):
        pooler.transform([np.ones((2, 4))])


def test_pathway_encoder_mean_pca_none():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(50, 6)) * [1, 2, 3, 4, 5, 6] + 10
    enc = PathwayEncoder({"a": [0, 1, 2], "b": [2, 3, 4, 5]}).fit(X)
    Z = (X - X.mean(0)) / X.std(0)
    np.testing.assert_allclose(enc.transform(X), np.c_[Z[:, :3].mean(1), Z[:, 2:].mean(1)])
    np.testing.assert_array_equal(enc.pathway_sizes_, [3, 4])
    # statistics come from the training split only
    X_test = X[:5] + 100
    np.testing.assert_allclose(enc.transform(X_test)[:, 0], ((X_test - X.mean(0)) / X.std(0))[:, :3].mean(1))
    none = PathwayEncoder({"a": [0, 1, 2], "b": [2, 3, 4, 5]}, summary="none").fit(X)
    np.testing.assert_allclose(none.transform(X), np.c_[Z[:, :3], Z[:, 2:]])
    assert list(none.get_feature_names_out())[:4] == ["a__x0", "a__x1", "a__x2", "b__x2"]
    pca = PathwayEncoder({"a": [0, 1, 2]}, summary="pca1").fit(X)
    score = pca.transform(X)[:, 0]
    u, s, vt = np.linalg.svd(Z[:, :3], full_matrices=False)
    assert abs(np.corrcoef(score, Z[:, :3] @ vt[0])[0, 1]) == pytest.approx(1.0)
    assert np.var(score) == pytest.approx(s[0] ** 2 / 50)
    assert np.corrcoef(score, Z[:, :3].mean(1))[0, 1] > 0  # sign follows the pathway mean


@pytest.mark.parametrize("summary", ["mean", "pca1", "none"])
def test_pathway_encoder_z_scores_do_not_see_a_1e300_unit(summary):
    X = np.random.RandomState(0).normal(size=(30, 5)) * [1, 2, 3, 4, 5]
    pathways = {"a": [0, 1, 2], "b": [2, 3, 4]}
    ref = PathwayEncoder(pathways, summary=summary).fit(X).transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        out = PathwayEncoder(pathways, summary=summary).fit(X * 1e300).transform(X * 1e300)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)


def test_pathway_encoder_gene_names_and_missing_genes():
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    frame = pd.DataFrame(rng.normal(size=(20, 3)), columns=["TP53", "MYC", "EGFR"])
    enc = PathwayEncoder({"p": ["TP53", "MYC"]}, summary="none").fit(frame)
    assert list(enc.get_feature_names_out()) == ["p__TP53", "p__MYC"]
    with pytest.raises(ValueError, match="not in X"):
        PathwayEncoder({"p": ["TP53", "KRAS"]}).fit(frame)
    ok = PathwayEncoder({"p": ["TP53", "KRAS"]}, missing_genes="ignore").fit(frame)
    np.testing.assert_array_equal(ok.pathway_indices_[0], [0])
    with pytest.raises(ValueError, match="no gene present"):
        PathwayEncoder({"p": ["KRAS"]}, missing_genes="ignore").fit(frame)
    with pytest.raises(ValueError, match="no column names"):
        PathwayEncoder({"p": ["TP53"]}).fit(frame.to_numpy())
    with pytest.raises(TypeError, match="column indices"):
        PathwayEncoder({"p": [1.5]}).fit(frame.to_numpy())
    with pytest.raises(ValueError, match="empty dict"):
        PathwayEncoder({}).fit(frame)


def test_column_transformer_on_a_dataframe_with_a_bag_column():
    pd = pytest.importorskip("pandas")
    from sklearn_icml.datasets import make_multimodal_survival

    frame, y, info = make_multimodal_survival(40, bag_size=(5, 10), n_genes=8, n_pathways=2, as_frame=True,
                                              return_info=True, random_state=0)
    assert isinstance(frame, pd.DataFrame) and frame.columns[0] == "bag"
    genes = [c for c in frame.columns if c != "bag"]
    ct = ColumnTransformer([
        ("histo", PrototypeEncoder(3, output="pi", random_state=0), "bag"),
        ("pooled", BagPooler(), "bag"),
        ("omics", PathwayEncoder(info.pathways), genes),
    ])
    out = ct.fit_transform(frame)
    assert out.shape == (40, 3 + 16 + 2)
    names = ct.get_feature_names_out()
    assert list(names[:3]) == ["histo__proto0_pi", "histo__proto1_pi", "histo__proto2_pi"]
    assert list(names[-2:]) == ["omics__pathway0", "omics__pathway1"]
    np.testing.assert_allclose(out[:, :3].sum(1), 1.0)
    # the same through a pipeline on a subset of rows
    pipe = make_pipeline(ct).fit(frame.iloc[:30])
    np.testing.assert_allclose(pipe.transform(frame.iloc[30:]), ct.fit(frame.iloc[:30]).transform(frame.iloc[30:]))
