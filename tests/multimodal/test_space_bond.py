"""SpaceBond: projectors against their closed forms, transform against FreeBind's formulas, the data contract."""

import pickle
import warnings

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_icml.datasets import make_multimodal_embeddings
from sklearn_icml.metrics import recall_at_k
from sklearn_icml.multimodal import SpaceBond


def _unit(Z):
    return Z / np.sqrt((Z ** 2).sum(axis=1))[:, None]


def _paired(n=40, d_u=6, d_e=6, n_missing=5, seed=0):
    """Random [u | e] rows, e a noisy nonlinear map of u; the last n_missing rows lack the expert."""
    rng = np.random.RandomState(seed)
    u = rng.normal(size=(n, d_u))
    e = np.tanh(u @ rng.normal(size=(d_u, d_e))) + 0.1 * rng.normal(size=(n, d_e))
    X = np.hstack([u, e])
    X[n - n_missing:, d_u:] = np.nan
    return X, u, e


def _project(bond, Z):
    """normalize(mean_j normalize(Z_unit @ coef_j + intercept_j)) from the fitted linear projectors."""
    Zn = _unit(Z)
    outs = [_unit(Zn @ p.coef + p.intercept) for p in bond.projectors_]
    return _unit(np.mean(outs, axis=0))


def test_procrustes_equals_scipy_for_equal_widths():
    X, u, e = _paired(d_u=5, d_e=5, n_missing=0)
    for bond in ("combination", "displacement"):
        fitted = SpaceBond(bond, n_base_features=5, projector="procrustes").fit(X)
        source, target = (e, u) if bond == "combination" else (u, e)
        R, _ = orthogonal_procrustes(_unit(source), _unit(target))
        np.testing.assert_allclose(fitted.projectors_[0].coef, R, atol=1e-10)
        np.testing.assert_array_equal(fitted.projectors_[0].intercept, 0.0)


def test_procrustes_for_unequal_widths_reaches_scipy_optimum_on_padded_data():
    X, u, e = _paired(d_u=6, d_e=4, n_missing=0)
    A, B = _unit(e), _unit(u)
    R = SpaceBond(n_base_features=6, projector="procrustes").fit(X).projectors_[0].coef
    np.testing.assert_allclose(R @ R.T, np.eye(4), atol=1e-10)  # isometric embedding of the 4-d expert space
    A_pad = np.hstack([A, np.zeros((A.shape[0], 2))])
    R_pad, _ = orthogonal_procrustes(A_pad, B)
    assert np.linalg.norm(A @ R - B) == pytest.approx(np.linalg.norm(A_pad @ R_pad - B), rel=1e-10)


def test_default_projector_is_the_angle_preserving_procrustes_map():
    # the default keeps the expert's angles: an isometry of the (narrower) expert space, no offset
    X, u, e = _paired(d_u=6, d_e=4, n_missing=3)
    bond = SpaceBond(n_base_features=6).fit(X)
    assert bond.projector == "procrustes"
    R, b = bond.projectors_[0].coef, bond.projectors_[0].intercept
    np.testing.assert_allclose(R @ R.T, np.eye(4), atol=1e-10)
    np.testing.assert_array_equal(b, 0.0)
    E = _unit(e[:5])
    np.testing.assert_allclose((E @ R) @ (E @ R).T, E @ E.T, atol=1e-10)


@pytest.mark.parametrize("alpha", [1e-2, 3.0, 0.0])
def test_ridge_equals_sklearn_ridge_on_normalised_pairs(alpha):
    X, u, e = _paired(n_missing=6)
    bond = SpaceBond(n_base_features=6, projector="ridge", ridge_alpha=alpha).fit(X)
    ref = Ridge(alpha=alpha, solver="svd").fit(_unit(e[:-6]), _unit(u[:-6]))
    np.testing.assert_allclose(bond.projectors_[0].coef, ref.coef_.T, atol=1e-8)
    np.testing.assert_allclose(bond.projectors_[0].intercept, ref.intercept_, atol=1e-8)
    assert bond.n_pairs_ == 34 and bond.n_base_features_ == 6 and bond.n_expert_features_ == 6


@pytest.mark.parametrize("projector", ["ridge", "procrustes"])
@pytest.mark.parametrize("n_projectors", [1, 3])
def test_combination_transform_follows_the_formula(projector, n_projectors):
    X, u, e = _paired()
    bond = SpaceBond(n_base_features=6, projector=projector, n_projectors=n_projectors, mixing=0.3,
                     random_state=0).fit(X)
    assert len(bond.projectors_) == n_projectors
    Z = bond.transform(X)
    have = ~np.isnan(X[:, 6])
    expected = _unit(0.3 * _project(bond, e[have]) + 0.7 * _unit(u[have]))
    np.testing.assert_allclose(Z[have], expected, atol=1e-12)
    np.testing.assert_allclose(Z[~have], _unit(u[~have]), atol=1e-12)
    assert Z.shape == (40, 6)


def test_displacement_transform_follows_the_formula():
    X, u, e = _paired()
    bond = SpaceBond("displacement", n_base_features=6, n_projectors=2, mixing=0.2, random_state=0).fit(X)
    Z = bond.transform(X)
    have = ~np.isnan(X[:, 6])
    p = _project(bond, u)
    np.testing.assert_allclose(Z[have], _unit(0.2 * p[have] + 0.8 * _unit(e[have])), atol=1e-12)
    np.testing.assert_allclose(Z[~have], p[~have], atol=1e-12)
    assert Z.shape == (40, 6)
    assert list(bond.get_feature_names_out()) == [f"spacebond{i}" for i in range(6)]


def test_mixing_zero_keeps_the_base_space():
    X, u, e = _paired()
    have = ~np.isnan(X[:, 6])
    Z = SpaceBond(n_base_features=6, mixing=0.0).fit(X).transform(X)
    np.testing.assert_allclose(Z, _unit(u), atol=1e-12)
    Z = SpaceBond("displacement", n_base_features=6, mixing=0.0).fit(X).transform(X)
    np.testing.assert_allclose(Z[have], _unit(e[have]), atol=1e-12)


def test_set_params_mixing_needs_no_refit():
    X, _, _ = _paired()
    bond = SpaceBond(n_base_features=6, mixing=0.5, random_state=0).fit(X)
    state = pickle.dumps({k: v for k, v in vars(bond).items() if k.endswith("_")})
    before = bond.transform(X)
    after = bond.set_params(mixing=0.9).transform(X)
    assert pickle.dumps({k: v for k, v in vars(bond).items() if k.endswith("_")}) == state
    assert not np.allclose(before, after)
    again = SpaceBond(n_base_features=6, mixing=0.9, random_state=0).fit(X).transform(X)
    np.testing.assert_allclose(after, again, atol=1e-12)


def test_dict_mixing_gives_each_group_its_factor():
    X, _, _ = _paired()
    groups = np.array(["audio", "text"] * 20)
    bond = SpaceBond(n_base_features=6, mixing={"audio": 0.5, "text": 0.1}).fit(X)
    Z = bond.transform(X, groups=groups)
    for g, f in (("audio", 0.5), ("text", 0.1)):
        np.testing.assert_allclose(Z[groups == g], bond.set_params(mixing=f).transform(X[groups == g]), atol=1e-12)


def test_groups_in_fit_give_one_projector_per_group():
    X, u, e = _paired(n_missing=0)
    groups = np.repeat([0, 1, 2], [10, 15, 15])
    bond = SpaceBond(n_base_features=6, projector="ridge").fit(X, groups=groups)
    assert len(bond.projectors_) == 3
    rows = groups == 1
    ref = Ridge(alpha=1e-2, solver="svd").fit(_unit(e[rows]), _unit(u[rows]))
    np.testing.assert_allclose(bond.projectors_[1].coef, ref.coef_.T, atol=1e-8)


def test_bootstrap_mixture_is_deterministic_under_random_state():
    X, _, _ = _paired()
    a = SpaceBond(n_base_features=6, n_projectors=4, random_state=3).fit(X).transform(X)
    b = SpaceBond(n_base_features=6, n_projectors=4, random_state=3).fit(X).transform(X)
    c = SpaceBond(n_base_features=6, n_projectors=4, random_state=4).fit(X).transform(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_mixing_curve_matches_transform_then_recall():
    data = make_multimodal_embeddings(300, random_state=0)
    train, test = data.item < 200, data.item >= 200
    bond = SpaceBond(n_base_features=64).fit(data.X[train])
    Xt, mt = data.X[test], data.modality[test]
    values = [0.0, 0.5, 1.0, {"audio": 0.5, "text": 0.2, "image": 0.0}]
    curve = bond.mixing_curve(Xt[mt == "audio"], Xt[mt == "text"], values,
                              groups_query=mt[mt == "audio"], groups_gallery=mt[mt == "text"])
    for value, got in zip(values, curve):
        bond.set_params(mixing=value)
        Z = bond.transform(Xt, groups=mt)
        assert got == recall_at_k(Z[mt == "audio"], Z[mt == "text"])
    assert curve[1] > curve[0] + 0.3  # the expert's audio-text knowledge lifts A->T


def test_bond_lifts_audio_text_retrieval_on_synthetic_embeddings():
    data = make_multimodal_embeddings(900, random_state=1)
    train, test = data.item < 600, data.item >= 600
    Z = SpaceBond(n_base_features=64).fit(data.X[train]).transform(data.X[test])
    m = data.modality[test]
    base = recall_at_k(data.unified_audio[600:], data.unified_text[600:])
    assert recall_at_k(Z[m == "audio"], Z[m == "text"]) >= base + 0.5
    np.testing.assert_allclose(Z[m == "image"], _unit(data.unified_image[600:]), atol=1e-12)


def test_grid_search_over_projector_and_ridge_alpha_with_recall_scorer():
    data = make_multimodal_embeddings(150, random_state=0)
    n = 150
    # rows interleaved audio_0, text_0, audio_1, text_1, ...: unshuffled folds keep whole pairs in order
    order = np.ravel(np.column_stack([np.arange(n), n + np.arange(n)]))
    X, y = data.X[order], (data.modality[order] == "text").astype(int)

    def r_at_1(estimator, X, y):
        Z = estimator.transform(X)
        return recall_at_k(Z[y == 0], Z[y == 1])

    search = GridSearchCV(SpaceBond(n_base_features=64),
                          {"projector": ["ridge", "procrustes"], "ridge_alpha": [1e-2, 10.0]},
                          scoring=r_at_1, cv=KFold(3)).fit(X, y)
    for params, mean in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
        scores = [r_at_1(SpaceBond(n_base_features=64, **params).fit(X[tr]), X[te], y[te])
                  for tr, te in KFold(3).split(X)]
        assert mean == pytest.approx(np.mean(scores))
    assert search.best_score_ == max(search.cv_results_["mean_test_score"]) > 0.5


@pytest.mark.parametrize("bad, match", [
    (lambda X: np.where(np.arange(X.shape[1]) == 0, np.nan, X), "NaN in the base"),
    (lambda X: np.where(np.arange(X.shape[1]) == 7, np.nan, X), "partly NaN"),
])
def test_nan_outside_whole_expert_part_is_refused(bad, match):
    X, _, _ = _paired()
    with pytest.raises(ValueError, match=match):
        SpaceBond(n_base_features=6).fit(bad(X))
    bond = SpaceBond(n_base_features=6).fit(X)
    with pytest.raises(ValueError, match=match):
        bond.transform(bad(X))


def test_bad_input_messages():
    X, _, _ = _paired()
    with pytest.raises(ValueError, match="n_base_features=12 leaves no expert"):
        SpaceBond(n_base_features=12).fit(X)
    bond = SpaceBond(n_base_features=6).fit(X)
    with pytest.raises(ValueError, match="features"):
        bond.transform(X[:, :11])
    with pytest.raises(ValueError, match="needs groups"):
        bond.set_params(mixing={"audio": 0.5}).transform(X)
    with pytest.raises(ValueError, match="group 'text' has no factor"):
        bond.transform(X, groups=["audio", "text"] * 20)
    with pytest.raises(ValueError, match=r"mixing\['audio'\] must be a float in \[0, 1\]"):
        bond.set_params(mixing={"audio": 2.0}).transform(X, groups=["audio"] * 40)
    X_none = X.copy()
    X_none[:, 6:] = np.nan
    with pytest.raises(ValueError, match="no row of X has an expert part"):
        SpaceBond(n_base_features=6).fit(X_none)
    with pytest.raises(ValueError, match="n_projectors must be 1"):
        SpaceBond(n_base_features=6, n_projectors=2).fit(X, groups=np.arange(40) % 2)
    with pytest.raises(ValueError, match="1 feature"):
        SpaceBond().fit(np.ones((5, 1)))


def test_a_guessed_split_is_said_aloud():
    X, _, _ = _paired(d_u=4, d_e=8, n_missing=0)  # the halves are not the embeddings
    with pytest.warns(UserWarning, match=r"SpaceBond: n_base_features is None, .* widths \[6, 6\] .*pass "
                                         "n_base_features"):
        guessed = SpaceBond().fit(X)
    assert guessed.n_base_features_ == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SpaceBond(n_base_features=4).fit(X).n_base_features_ == 4


def test_input_is_not_modified():
    X, _, _ = _paired()
    X0 = X.copy()
    SpaceBond(n_base_features=6, n_projectors=2, random_state=0).fit(X).transform(X)
    np.testing.assert_array_equal(X, X0)


def test_float32_input_stays_float32():
    X, _, _ = _paired()
    Z64 = SpaceBond(n_base_features=6, n_projectors=2, random_state=0).fit(X).transform(X)
    bond = SpaceBond(n_base_features=6, n_projectors=2, random_state=0).fit(X.astype(np.float32))
    assert bond.projectors_[0].coef.dtype == np.float32
    Z32 = bond.transform(X.astype(np.float32))
    assert Z32.dtype == np.float32
    np.testing.assert_allclose(Z32, Z64, atol=1e-4)
