"""GridSearchCV over the collection's estimators on a two-worker Dask cluster equals a sequential run.

Each estimator of the collection joins ``CASES`` with a small grid, its data and
a scorer. The cluster is a ``distributed.LocalCluster`` with two worker
processes bound to 127.0.0.1, so pickling across processes is exercised for real.
"""

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ._reference import ReferenceProjection, ReferenceTorchClassifier

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(600)]


def _classification():
    return make_classification(n_samples=90, n_features=5, n_informative=3, n_redundant=0,
                               n_classes=3, random_state=0)


# id -> (pipeline factory, grid over the pipeline's parameters, data factory, scoring)
CASES = {
    "reference": (
        lambda: make_pipeline(StandardScaler(), ReferenceProjection(n_components=3, random_state=0),
                              ReferenceTorchClassifier(max_iter=20, random_state=0)),
        {"referencetorchclassifier__alpha": [1e-3, 1e-1], "referenceprojection__n_components": [2, 3]},
        _classification,
        "accuracy",
    ),
}


@pytest.fixture(scope="module")
def client():
    import cloudpickle

    from . import _reference

    # workers import sklearn_icml by name (it is installed); the test-only reference
    # estimators travel by value
    cloudpickle.register_pickle_by_value(_reference)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None, memory_limit="2GiB")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()
    cloudpickle.unregister_pickle_by_value(_reference)


@pytest.mark.parametrize("case", sorted(CASES))
def test_grid_search_on_dask_equals_sequential(client, case):
    make_est, grid, make_data, scoring = CASES[case]
    X, y = make_data()
    sequential = GridSearchCV(make_est(), grid, cv=3, n_jobs=1, scoring=scoring).fit(X, y)
    with distributed.get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        on_dask = GridSearchCV(make_est(), grid, cv=3, n_jobs=-1, scoring=scoring).fit(X, y)
    n_fits = 3 * len(sequential.cv_results_["params"])
    assert len(stream.data) >= n_fits
    assert {task["worker"] for task in stream.data} == set(client.scheduler_info()["workers"])
    assert sequential.best_params_ == on_dask.best_params_
    np.testing.assert_allclose(sequential.cv_results_["mean_test_score"], on_dask.cv_results_["mean_test_score"])
    np.testing.assert_allclose(sequential.cv_results_["std_test_score"], on_dask.cv_results_["std_test_score"])
