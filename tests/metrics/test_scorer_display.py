"""Calibration scorers in model selection, and the LS reliability display."""

import matplotlib
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.metrics import (
    LSReliabilityDisplay,
    binned_ece,
    binned_ece_scorer,
    ls_ece,
    ls_ece_logit_scorer,
    ls_ece_scorer,
    make_calibration_scorer,
)

matplotlib.use("Agg")


def test_scorer_is_minus_the_metric_binary_and_multiclass():
    for X, y in (load_breast_cancer(return_X_y=True), load_iris(return_X_y=True)):
        est = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
        P = est.predict_proba(X)
        P = P[:, 1] if P.shape[1] == 2 else P
        assert ls_ece_scorer(est, X, y) == pytest.approx(-ls_ece(y, P))
        assert binned_ece_scorer(est, X, y) == pytest.approx(-binned_ece(y, P))
        logits = est.decision_function(X)
        assert ls_ece_logit_scorer(est, X, y) == pytest.approx(-ls_ece(y, logits, response="logits"))


def test_scorer_matches_columns_to_classes_when_a_fold_lacks_a_class():
    X, y = load_iris(return_X_y=True)
    est = LogisticRegression(max_iter=500).fit(X, y)
    keep = y != 1
    P = est.predict_proba(X[keep])
    value = ls_ece_scorer(est, X[keep], y[keep])
    assert value == pytest.approx(-ls_ece(y[keep], P, labels=[0, 1, 2]))


def test_scorer_uses_the_estimators_positive_class_with_string_labels():
    X, y = load_breast_cancer(return_X_y=True)
    ys = np.where(y == 1, "benign", "malignant")
    est = GaussianNB().fit(X, ys)
    p_pos = est.predict_proba(X)[:, 1]
    assert ls_ece_scorer(est, X, ys) == pytest.approx(-ls_ece(ys, p_pos, pos_label=est.classes_[1]))


@pytest.mark.parametrize("scorer", [ls_ece_scorer, ls_ece_logit_scorer])
@pytest.mark.parametrize("dataset", [load_breast_cancer, load_iris])
def test_grid_search_with_calibration_scorers(scorer, dataset):
    X, y = dataset(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    search = GridSearchCV(pipe, {"logisticregression__C": [0.01, 1.0, 100.0]},
                          scoring={"ls_ece": scorer, "nll": "neg_log_loss"}, refit="ls_ece", cv=3)
    search.fit(X, y)
    scores = search.cv_results_["mean_test_ls_ece"]
    assert np.all(scores <= 0) and np.all(np.isfinite(scores))
    assert search.best_index_ == int(np.argmax(scores))


def test_cross_validate_passes_sample_weight():
    X, y = load_breast_cancer(return_X_y=True)
    est = GaussianNB().fit(X, y)
    w = np.random.RandomState(0).uniform(0, 2, len(y))
    assert ls_ece_scorer(est, X, y, sample_weight=w) == pytest.approx(
        -ls_ece(y, est.predict_proba(X)[:, 1], sample_weight=w))
    out = cross_validate(GaussianNB(), X, y, scoring=ls_ece_scorer, cv=3)
    assert out["test_score"].shape == (3,)


def test_make_calibration_scorer_options_and_errors():
    X, y = load_iris(return_X_y=True)
    est = GaussianNB().fit(X, y)
    s = make_calibration_scorer("ls_ece", sigma=0.5, noise="uniform", multiclass="classwise")
    expected = ls_ece(y, est.predict_proba(X), sigma=0.5, noise="uniform", multiclass="classwise")
    assert s(est, X, y) == pytest.approx(-expected)
    assert "sigma=0.5" in repr(s)
    with pytest.raises(ValueError, match="metric must be one of"):
        make_calibration_scorer("brier")
    with pytest.raises(ValueError, match="set by the scorer"):
        make_calibration_scorer(labels=[0, 1])
    with pytest.raises(ValueError, match="response_method"):
        make_calibration_scorer(response_method="predict")
    with pytest.raises(AttributeError, match="decision_function"):
        make_calibration_scorer(response_method="decision_function")(est, X, y)


def test_display_from_estimator_and_from_predictions():
    import matplotlib.pyplot as plt

    X, y = load_breast_cancer(return_X_y=True)
    est = GaussianNB().fit(X, y)
    disp = LSReliabilityDisplay.from_estimator(est, X, y, sigma=0.2, n_bins=10)
    p = est.predict_proba(X)[:, 1]
    assert disp.ls_ece == pytest.approx(ls_ece(y, p, sigma=0.2))
    assert disp.binned_ece == pytest.approx(binned_ece(y, p, n_bins=10))
    assert disp.line_.get_label().startswith("GaussianNB: LS-ECE")
    assert len(disp.binned_prob_pred) <= 10 and disp.binned_line_ is not None
    assert disp.ax_.get_xlabel().startswith("predicted probability")
    fig, ax = plt.subplots()
    disp2 = LSReliabilityDisplay.from_predictions(y, p, sigma=0.2, ax=ax, name="nb", show_binned=False)
    assert disp2.ax_ is ax and disp2.binned_line_ is None
    np.testing.assert_allclose(disp2.prob_true, disp.prob_true)
    plt.close("all")


def test_display_multiclass_is_top_label():
    import matplotlib.pyplot as plt

    X, y = load_iris(return_X_y=True)
    est = LogisticRegression(max_iter=500).fit(X, y)
    disp = LSReliabilityDisplay.from_estimator(est, X, y, response_method="decision_function")
    assert disp.ls_ece == pytest.approx(ls_ece(y, est.decision_function(X), response="logits"))
    assert disp.prob_pred.min() >= 1 / 3 - 0.05  # top-label confidences
    with pytest.raises(ValueError, match="response_method"):
        LSReliabilityDisplay.from_estimator(est, X, y, response_method="predict")
    plt.close("all")


def test_scorer_routes_sample_weight_when_requested():
    """A weighted LS-ECE inside cross_validate(params={"sample_weight": w}) equals the weighted metric per fold."""
    import sklearn
    from sklearn.exceptions import UnsetMetadataPassedError
    from sklearn.model_selection import KFold

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    w = np.random.RandomState(0).uniform(0.1, 3.0, size=len(y))
    cv = KFold(3, shuffle=True, random_state=0)
    est = LogisticRegression()
    expected, unweighted = [], []
    for train, test in cv.split(X):
        p = est.fit(X[train], y[train]).predict_proba(X[test])[:, 1]
        expected.append(-ls_ece(y[test], p, sample_weight=w[test]))
        unweighted.append(-ls_ece(y[test], p))
    with sklearn.config_context(enable_metadata_routing=True):
        est = LogisticRegression().set_fit_request(sample_weight=False)
        scorer = make_calibration_scorer("ls_ece")
        assert scorer.set_score_request(sample_weight=True) is scorer
        res = cross_validate(est, X, y, cv=cv, scoring=scorer, params={"sample_weight": w})
        np.testing.assert_allclose(res["test_score"], expected, rtol=1e-10)
        assert not np.allclose(res["test_score"], unweighted)
        # several metrics at once (scikit-learn's multimetric scorer routes to each)
        both = cross_validate(est, X, y, cv=cv, params={"sample_weight": w},
                              scoring={"ls": scorer, "binned": make_calibration_scorer(
                                  "binned_ece").set_score_request(sample_weight=False)})
        np.testing.assert_allclose(both["test_ls"], expected, rtol=1e-10)
        # an alias: the metadata named "w" is routed as sample_weight
        aliased = make_calibration_scorer("ls_ece").set_score_request(sample_weight="w")
        res = cross_validate(est, X, y, cv=cv, scoring=aliased, params={"w": w})
        np.testing.assert_allclose(res["test_score"], expected, rtol=1e-10)
        # not requested: scikit-learn's error naming the scorer
        with pytest.raises(UnsetMetadataPassedError, match="make_calibration_scorer"):
            cross_validate(est, X, y, cv=cv, scoring=make_calibration_scorer(), params={"sample_weight": w})
        with pytest.raises(ValueError, match="alias"):
            make_calibration_scorer().set_score_request(sample_weight=3)
    with pytest.raises(RuntimeError, match="enable_metadata_routing"):
        make_calibration_scorer().set_score_request(sample_weight=True)
    # the module-level scorer is left untouched by requests on a scorer of one's own
    assert ls_ece_scorer.get_metadata_routing().score.requests == {"sample_weight": None}
