"""MetaBayesSearchCV: a drop-in search CV that learns from earlier searches."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from sklearn_icml.datasets import make_hpo_tasks
from sklearn_icml.optimize import LikelihoodFreeOptimizer, MetaBayesianOptimizer, MetaBayesSearchCV, MetaLFBOClassifier
from sklearn_icml.optimize._search import _SearchSpace


def _tiny(n_candidates=256):
    return MetaBayesianOptimizer(n_candidates=n_candidates, classifier=MetaLFBOClassifier(
        n_features=8, n_hidden=16, n_layers=2, max_iter=60, random_state=0))


def _data():
    return make_classification(n_samples=120, n_features=5, n_informative=3, random_state=0)


def test_drop_in_for_grid_search_results_and_refit():
    X, y = _data()
    grid = {"max_depth": [1, 2, 3, 4, 6, 8], "criterion": ["gini", "entropy"]}
    cv = KFold(3, shuffle=True, random_state=0)
    search = MetaBayesSearchCV(DecisionTreeClassifier(random_state=0), grid, n_iter=5, cv=cv, random_state=0,
                               optimizer=_tiny(), return_train_score=True).fit(X, y)
    res = search.cv_results_
    assert len(res["params"]) == 5 and "mean_train_score" in res
    assert len({tuple(sorted(p.items())) for p in res["params"]}) == 5  # never the same setting twice
    assert search.best_score_ == res["mean_test_score"].max()
    assert search.best_params_ == res["params"][search.best_index_]
    assert search.best_estimator_.get_params()["max_depth"] == search.best_params_["max_depth"]
    assert search.predict(X).shape == (120,) and search.score(X, y) > 0.8
    # the same settings give the same scores as GridSearchCV on the same folds
    full = GridSearchCV(DecisionTreeClassifier(random_state=0), grid, cv=cv).fit(X, y)
    lookup = {tuple(sorted(p.items())): s for p, s in zip(full.cv_results_["params"],
                                                          full.cv_results_["mean_test_score"])}
    for p, s in zip(res["params"], res["mean_test_score"]):
        assert s == pytest.approx(lookup[tuple(sorted(p.items()))])


def test_finite_space_runs_out_and_n_points_batches():
    X, y = _data()
    search = MetaBayesSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3]}, n_iter=10,
                               n_points=2, cv=3, optimizer=_tiny(), random_state=0).fit(X, y)
    assert sorted(p["max_depth"] for p in search.cv_results_["params"]) == [1, 2, 3]


def test_continuous_log_and_integer_spaces():
    X, y = load_iris(return_X_y=True)
    spaces = {"min_impurity_decrease": (1e-4, 1e-1, "log-uniform"), "max_depth": (1, 8)}
    search = MetaBayesSearchCV(DecisionTreeClassifier(random_state=0), spaces, n_iter=6, cv=3, random_state=0,
                               optimizer=LikelihoodFreeOptimizer(n_candidates=64)).fit(X, y)
    alphas = np.array([p["min_impurity_decrease"] for p in search.cv_results_["params"]])
    depths = [p["max_depth"] for p in search.cv_results_["params"]]
    assert np.all((alphas >= 1e-4) & (alphas <= 1e-1))
    assert np.median(alphas) < 10 ** -2.5 * 3  # log-uniform draws: most below the arithmetic midpoint 0.05
    assert all(isinstance(d, int) and 1 <= d <= 8 for d in depths)
    assert search.best_score_ > 0.9


def test_search_space_encoding():
    space = _SearchSpace({"a": [0.01, 0.1, 1.0], "b": ["x", "y", "z"], "c": (1.0, 100.0, "log-uniform"),
                          "d": (0, 10)}, "test")
    assert space.n_columns == 1 + 3 + 1 + 1
    np.testing.assert_allclose(space.encode({"a": 0.1, "b": "z", "c": 10.0, "d": 5}), [0.5, 0, 0, 1, 0.5, 0.5])
    assert space.encode({"a": 0.5, "b": "z", "c": 10.0, "d": 5}) is None  # not on the grid
    assert space.encode({"a": 0.1, "b": "z", "c": 1000.0, "d": 5}) is None  # out of range
    assert space.encode({"a": 0.1, "b": "z", "c": 10.0}) is None  # missing
    for bad in ({"a": (1, 0)}, {"a": (0.0, 1.0, "normal")}, {"a": (0.0, 1.0, "log-uniform")}, {"a": []}, {}):
        with pytest.raises(ValueError, match="search"):
            _SearchSpace(bad, "MetaBayesSearchCV")


def test_learns_from_earlier_searches_on_the_hpo_family():
    data = make_hpo_tasks(5, n_samples=90, grid_size=5, random_state=0)
    cv = KFold(3, shuffle=True, random_state=0)
    grids = [GridSearchCV(data.estimator, data.param_grid, cv=cv).fit(X, y) for X, y in data.datasets]
    target = 4  # digits... the base datasets cycle, so tasks 0 and 4 share one
    X, y = data.datasets[target]
    best = grids[target].cv_results_["mean_test_score"].max()
    earlier = [g for i, g in enumerate(grids) if i != target]
    search = MetaBayesSearchCV(data.estimator, data.param_grid, n_iter=4, meta_results=earlier, cv=cv,
                               random_state=0, optimizer=_tiny()).fit(X, y)
    assert search.n_meta_tasks_ == 4
    assert search.best_score_ >= best - 0.02  # close to the full grid's best within 4 of its 25 settings
    # earlier results as dicts or DataFrames are read the same way
    for form in ([g.cv_results_ for g in earlier], [pd.DataFrame(g.cv_results_) for g in earlier]):
        again = MetaBayesSearchCV(data.estimator, data.param_grid, n_iter=4, meta_results=form, cv=cv,
                                  random_state=0, optimizer=_tiny()).fit(X, y)
        assert again.cv_results_["params"] == search.cv_results_["params"]
    # no worse than random search on average over its seeds at the same budget
    rand = [RandomizedSearchCV(data.estimator, data.param_grid, n_iter=4, cv=cv, random_state=s).fit(X, y)
            .best_score_ for s in range(5)]
    assert search.best_score_ >= np.mean(rand)


def test_multimetric_pipeline_and_errors():
    X, y = _data()
    pipe = make_pipeline(StandardScaler(), LogisticRegression())
    search = MetaBayesSearchCV(pipe, {"logisticregression__C": [0.01, 0.1, 1.0, 10.0]}, n_iter=3, cv=3,
                               scoring=["accuracy", "neg_log_loss"], refit="neg_log_loss", optimizer=_tiny(),
                               random_state=0).fit(X, y)
    assert search.best_score_ == search.cv_results_["mean_test_neg_log_loss"].max()
    with pytest.raises(ValueError, match="refit must name the metric"):
        MetaBayesSearchCV(pipe, {"logisticregression__C": [0.1, 1.0]}, n_iter=2, cv=3,
                          scoring=["accuracy", "neg_log_loss"], refit=False, optimizer=_tiny()).fit(X, y)
    with pytest.raises(ValueError, match="search_spaces"):
        MetaBayesSearchCV(pipe).fit(X, y)
    with pytest.raises(ValueError, match="requires y"):
        MetaBayesSearchCV(pipe, {"logisticregression__C": [0.1]}).fit(X)
    with pytest.raises(ValueError, match="meta_results\\[0\\]"):
        MetaBayesSearchCV(pipe, {"logisticregression__C": [0.1, 1.0]}, meta_results=[{"x": 1}],
                          optimizer=_tiny()).fit(X, y)


def test_tags_follow_the_estimator():
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import Ridge
    from sklearn.utils import get_tags

    assert get_tags(MetaBayesSearchCV(HistGradientBoostingClassifier(), {"max_depth": [2, 3]})).input_tags.allow_nan
    assert not get_tags(MetaBayesSearchCV(LogisticRegression(), {"C": [1.0]})).input_tags.allow_nan
    assert get_tags(MetaBayesSearchCV(Ridge(), {"alpha": [1.0]})).estimator_type == "regressor"


def test_verbose_prints_each_round_with_the_best_score_so_far(capsys):
    X, y = _data()
    search = MetaBayesSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3, 4, 6]}, n_iter=4,
                               cv=3, optimizer=_tiny(), random_state=0, verbose=1).fit(X, y)
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[MetaBayesSearchCV] round")]
    assert len(out) == 4
    scores = search.cv_results_["mean_test_score"]
    for k, line in enumerate(out, start=1):
        assert f"round {k}: {k}/4 settings evaluated" in line
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(scores[:k].max(), rel=1e-5)


def test_device_and_random_state_reach_the_classifier(monkeypatch):
    import torch

    X, y = _data()
    grid = {"max_depth": [1, 2, 3, 4]}
    search = MetaBayesSearchCV(DecisionTreeClassifier(random_state=0), grid, n_iter=2, cv=3, optimizer=_tiny(),
                               device="cpu", random_state=3).fit(X, y)
    assert search.device_ == "cpu" and search.optimizer_.device == "cpu"
    assert search.optimizer_.classifier_.device == "cpu"
    # no seed of its own: one drawn from the search's random_state, so two searches agree
    unseeded = MetaBayesianOptimizer(n_candidates=64, classifier=MetaLFBOClassifier(n_features=4, n_hidden=8,
                                                                                    n_layers=2, max_iter=2))
    a, b = (MetaBayesSearchCV(DecisionTreeClassifier(random_state=0), grid, n_iter=2, cv=3, optimizer=unseeded,
                              random_state=3).fit(X, y) for _ in range(2))
    assert a.optimizer_.random_state == b.optimizer_.random_state is not None
    assert a.optimizer_.classifier_.random_state == b.optimizer_.classifier_.random_state is not None
    # "cuda" without a GPU: a clear error before any cross-validation fit
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    fitted = []

    class Spy(DecisionTreeClassifier):
        def fit(self, X, y, **kw):
            fitted.append(1)
            return super().fit(X, y, **kw)

    with pytest.raises(ValueError, match="device='cuda'"):
        MetaBayesSearchCV(Spy(), grid, n_iter=2, cv=3, optimizer=_tiny(), device="cuda").fit(X, y)
    assert not fitted


@pytest.mark.parametrize("given", [{}, {"estimator": LogisticRegression()}, {"search_spaces": {"C": [0.1, 1.0]}}])
def test_estimator_and_search_spaces_are_required_at_fit(given):
    """As scikit-learn's meta-estimators with a ``None`` default: the parameters validate, fit names what is missing."""
    X, y = load_iris(return_X_y=True)
    search = MetaBayesSearchCV(**given, device="cuda:0")
    search._validate_params()  # None is the default, and a device string is a device string
    missing = [name for name in ("estimator", "search_spaces") if name not in given]
    with pytest.raises(ValueError, match=f"MetaBayesSearchCV: {' and '.join(missing)} must be given"):
        search.set_params(device="cpu").fit(X, y)
    assert not hasattr(search, "cv_results_")
