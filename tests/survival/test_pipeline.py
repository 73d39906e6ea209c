"""make_multimodal_survival and the whole MMP pipeline under GridSearchCV."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_multimodal_survival
from sklearn_icml.survival import (
    BagPooler,
    CoxSurvival,
    PathwayEncoder,
    PrototypeEncoder,
    PrototypeSurvival,
    concordance_index,
)
from sklearn_icml.survival._target import check_survival_target


def test_generator_hides_the_aggressive_fraction_from_the_bag_mean():
    bags, genes, y, info = make_multimodal_survival(400, return_info=True, random_state=0)
    assert len(bags) == 400 and genes.shape == (400, 40) and y.dtype.names == ("event", "time")
    assert all(60 <= len(b) <= 200 and b.shape[1] == 16 for b in bags)
    np.testing.assert_allclose(info.centers[0], 0.5 * (info.centers[1] + info.centers[2]))
    assert 0.3 < 1 - y["event"].mean() < 0.5
    means = np.array([b.mean(0) for b in bags])
    # the aggressive fraction is (nearly) linearly invisible in the bag mean, unlike morphology 3
    r2 = {}
    for k in (0, 3):
        target = info.proportions[:, k]
        design = np.c_[np.ones(400), means]
        fitted = design @ np.linalg.lstsq(design, target, rcond=None)[0]
        r2[k] = 1 - np.var(target - fitted) / np.var(target)
    assert r2[0] < 0.15 and r2[3] > 0.8
    # the generator is deterministic
    again = make_multimodal_survival(400, random_state=0)
    np.testing.assert_array_equal(again[2], y)
    assert concordance_index(y, info.risk) > 0.75
    with pytest.raises(ValueError, match="bag_size"):
        make_multimodal_survival(10, bag_size=(5, 2))


def test_distinct_aggressive_center_makes_the_bag_mean_informative():
    blind = make_multimodal_survival(400, return_info=True, random_state=0)
    seen = make_multimodal_survival(400, aggressive_center="distinct", return_info=True, random_state=0)
    info = seen[3]
    assert np.linalg.norm(info.centers[0] - 0.5 * (info.centers[1] + info.centers[2])) > 1.0
    # everything but the position of morphology 0 is shared by the two regimes
    np.testing.assert_array_equal(info.proportions, blind[3].proportions)
    np.testing.assert_array_equal(info.centers[1:], blind[3].centers[1:])
    np.testing.assert_array_equal(seen[1], blind[1])
    np.testing.assert_array_equal(seen[2], blind[2])
    means = np.array([b.mean(0) for b in seen[0]])
    design = np.c_[np.ones(400), means]
    target = info.proportions[:, 0]
    fitted = design @ np.linalg.lstsq(design, target, rcond=None)[0]
    assert 1 - np.var(target - fitted) / np.var(target) > 0.8
    # so a Cox model on the bag means now ranks patients well (on the default regime it cannot)
    c = {}
    for name, (bags, _genes, y, _) in (("blind", blind), ("seen", seen)):
        X = np.array([b.mean(0) for b in bags])
        c[name] = CoxSurvival().fit(X[:250], y[:250]).score(X[250:], y[250:])
    assert c["seen"] > c["blind"] + 0.1, c
    with pytest.raises(ValueError, match="aggressive_center"):
        make_multimodal_survival(10, aggressive_center="apart")


def test_grid_search_over_the_multimodal_pipeline():
    frame, y, info = make_multimodal_survival(150, bag_size=(20, 40), as_frame=True, return_info=True,
                                              random_state=0)
    genes = [c for c in frame.columns if c != "bag"]
    features = ColumnTransformer([
        ("histo", PrototypeEncoder(8, output="pi", n_init=1, random_state=0), "bag"),
        ("omics", PathwayEncoder(info.pathways), genes),
    ])
    pipe = make_pipeline(features, StandardScaler(), CoxSurvival(alpha=1.0))
    search = GridSearchCV(pipe, {"columntransformer__histo__n_prototypes": [2, 8]},
                          cv=KFold(3, shuffle=True, random_state=0)).fit(frame, y)
    # the aggressive morphology needs its own prototype: 8 beats 2
    assert search.best_params_ == {"columntransformer__histo__n_prototypes": 8}
    pooled = ColumnTransformer([("histo", BagPooler(), "bag"), ("omics", PathwayEncoder(info.pathways), genes)])
    baseline = make_pipeline(pooled, StandardScaler(), CoxSurvival(alpha=1.0))
    base_score = cross_val_score(baseline, frame, y, cv=KFold(3, shuffle=True, random_state=0)).mean()
    assert search.best_score_ > base_score + 0.03


def test_fusion_network_behind_the_encoders():
    frame, y, info = make_multimodal_survival(80, bag_size=(10, 20), n_genes=8, n_pathways=2, as_frame=True,
                                              return_info=True, random_state=1)
    genes = [c for c in frame.columns if c != "bag"]
    pathways = PathwayEncoder(info.pathways, summary="none")
    features = ColumnTransformer([("histo", PrototypeEncoder(4, random_state=0), "bag"), ("omics", pathways, genes)])
    net = PrototypeSurvival(4, pathway_sizes=[4, 4], embed_dim=8, id_embed_dim=2, max_iter=3, random_state=0)
    pipe = make_pipeline(features, StandardScaler(), net).fit(frame, y)
    risk = pipe.predict(frame)
    # the steps fitted one after the other, with the same seeds, give the same risks
    Xt = StandardScaler().fit_transform(clone(features).fit_transform(frame, y))
    np.testing.assert_allclose(clone(net).fit(Xt, y).predict(Xt), risk, rtol=1e-6, atol=1e-9)
    assert np.std(risk) > 0  # the network tells the patients apart
    # the pipeline's score is Harrell's C of those risks, counted pair by pair
    event, time = check_survival_target(y)
    num = den = 0.0
    for i in np.flatnonzero(event):
        later = (time > time[i]) | ((time == time[i]) & ~event)
        den += later.sum()
        num += (risk[i] - risk[later] > 1e-8).sum() + 0.5 * (np.abs(risk[i] - risk[later]) <= 1e-8).sum()
    assert pipe.score(frame, y) == pytest.approx(num / den, rel=1e-12)
