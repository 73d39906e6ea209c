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

from sklearn_icml.cluster import CorrelationClustering, PrivateKMeans
from sklearn_icml.finetune import DoRAClassifier
from sklearn_icml.ranking import BradleyTerryRanker

from ._reference import ReferenceProjection, ReferenceTorchClassifier

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(600)]


def _classification():
    return make_classification(n_samples=90, n_features=5, n_informative=3, n_redundant=0,
                               n_classes=3, random_state=0)


def _arena_battles():
    from sklearn_icml.datasets import make_arena_battles

    # string competitor ids in columns 0-1, two style covariates; decisive outcomes only, for neg_log_loss
    return make_arena_battles(n_battles=150, n_competitors=8, tie_proba=0.0, n_covariates=2, random_state=0)


def _ls_ece_scorer():
    from sklearn_icml.metrics import ls_ece_scorer

    return ls_ece_scorer


def _blobs():
    from sklearn.datasets import make_blobs

    return make_blobs(n_samples=90, n_features=2, centers=3, random_state=0)


def _bounded_blobs():
    from sklearn_icml.datasets import make_bounded_blobs

    X, _, _ = make_bounded_blobs(300, centers=3, random_state=0)
    return X, None


def _ranking_pipeline():
    from sklearn.compose import ColumnTransformer

    style = ColumnTransformer([("ids", "passthrough", [0, 1]), ("style", StandardScaler(), [2, 3])])
    return make_pipeline(style, BradleyTerryRanker(alpha=1.0))


def _multimodal_survival():
    from sklearn_icml.datasets import make_multimodal_survival

    # a DataFrame: a column of bags (5-10 instances) and 8 gene columns; a structured (event, time) y
    return make_multimodal_survival(90, bag_size=(5, 10), n_genes=8, n_pathways=2, as_frame=True, random_state=0)


def _survival_pipeline():
    from sklearn.compose import ColumnTransformer

    from sklearn_icml.survival import CoxSurvival, PathwayEncoder, PrototypeEncoder

    genes = [f"gene{j}" for j in range(8)]
    features = ColumnTransformer([("histo", PrototypeEncoder(2, output="pi", n_init=1, random_state=0), "bag"),
                                  ("omics", PathwayEncoder({"p0": genes[::2], "p1": genes[1::2]}), genes)])
    return make_pipeline(features, StandardScaler(), CoxSurvival(alpha=1.0))


def _attribution_pipeline():
    from sklearn.linear_model import LogisticRegression

    from sklearn_icml.inspection import AttributionCombiner

    return make_pipeline(StandardScaler(), AttributionCombiner(
        LogisticRegression(), methods=("saliency", ("integrated_gradients", {"n_steps": 4}), "feature_ablation"),
        criterion="both", n_robustness_samples=4, n_faithfulness_samples=10, random_state=0))


# id -> (pipeline factory, grid over the pipeline's parameters, data factory, scoring)
def _glm_duels():
    from sklearn_icml.datasets import make_glm_duels

    return make_glm_duels(n_duels=2_000, n_items=30, n_features=5, random_state=0)


def _pairwise_glm():
    from sklearn_icml.bandits import PairwiseGLMClassifier

    return PairwiseGLMClassifier()


def _duel_env():
    from sklearn_icml.bandits import GLMDuelingEnv

    return GLMDuelingEnv.hard_instance(d=3, link="linear", random_state=0)


def _borda_etc_agent():
    from sklearn_icml.bandits import BordaETC

    return BordaETC(**_duel_env().action_set, horizon=2000, link="linear")


def _simulation_scorer():
    from sklearn_icml.bandits import simulation_scorer

    return simulation_scorer(_duel_env(), 2000, n_repeats=2, random_state=0)


def _binary_classification():
    return make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0, random_state=0)


def _synthetic_data_classifier():
    from sklearn_icml.generative import PrivateEvolution, SyntheticDataClassifier

    # the two labels are public knowledge (90 rows are too few to release the label set privately)
    return SyntheticDataClassifier(PrivateEvolution(n_iterations=3, bounds=(-4.0, 4.0), classes=[0, 1],
                                                    random_state=0))


def _lorenz_pairs():
    from sklearn_icml.datasets import make_lorenz63
    from sklearn_icml.dynamics import make_rollout_dataset

    return make_rollout_dataset(make_lorenz63(6, 30, random_state=0))


def _dyslim_scorer():
    from sklearn_icml.datasets import make_lorenz63
    from sklearn_icml.dynamics import invariant_measure_scorer

    return invariant_measure_scorer(make_lorenz63(4, 50, random_state=1).reshape(-1, 3), n_steps=20, burn_in=0.5)


def _dyslim():
    from sklearn_icml.dynamics import DySLIMRegressor

    return DySLIMRegressor(hidden_layer_sizes=(8,), max_iter=10, random_state=0)


def _expand_cluster():
    from sklearn_icml.neural_network import ExpandAndCluster

    # tiny students: the grid compares the clustering rules on the rebuilt network's score, so the check against
    # the best student (which returns that student with a warning) is off
    return ExpandAndCluster(n_students=3, student_width=4, student_max_iter=150, student_lr=3e-2,
                            finetune_max_iter=20, beta=np.pi, polish=None, prune=False, fallback_ratio=np.inf,
                            random_state=0)


def _tanh_teacher():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 2))
    return X, np.tanh(X @ np.array([[1.5, -1.0], [0.5, 2.0]]) + [0.3, -0.2]) @ np.array([1.0, -1.0])


def _swiss_roll():
    from sklearn_icml.datasets import make_swiss_roll_2d

    return make_swiss_roll_2d(120, random_state=0)[0], None


def _left_invertible_wgan():
    from sklearn_icml.generative import LeftInvertibleWGAN

    return LeftInvertibleWGAN(hidden_layer_sizes=(8,), max_iter=5, n_critic=1, batch_size=32, random_state=0)


def _meta_lfbo_pipeline():
    from sklearn_icml.optimize import MetaLFBOClassifier

    return make_pipeline(StandardScaler(), MetaLFBOClassifier(n_features=8, n_hidden=8, n_layers=2, random_state=0))


CASES = {
    "reference": (
        lambda: make_pipeline(StandardScaler(), ReferenceProjection(n_components=3, random_state=0),
                              ReferenceTorchClassifier(max_iter=20, random_state=0)),
        {"referencetorchclassifier__alpha": [1e-3, 1e-1], "referenceprojection__n_components": [2, 3]},
        _classification,
        "accuracy",
    ),
    "metrics_ls_ece_scorer": (
        lambda: make_pipeline(StandardScaler(), ReferenceTorchClassifier(max_iter=20, random_state=0)),
        {"referencetorchclassifier__alpha": [1e-3, 1e-1], "referencetorchclassifier__max_iter": [10, 20]},
        _classification,
        _ls_ece_scorer(),
    ),
    "finetune_dora": (
        lambda: make_pipeline(StandardScaler(), DoRAClassifier(hidden_layer_sizes=(8,), max_iter=5,
                                                               learning_rate=1e-2, random_state=0)),
        {"doraclassifier__method": ["dora", "lora"], "doraclassifier__r": [1, 4]},
        _classification,
        "accuracy",
    ),
    "ranking_bradley_terry": (
        _ranking_pipeline,
        {"bradleyterryranker__alpha": [0.1, 10.0], "columntransformer__style__with_std": [True, False]},
        _arena_battles,
        "neg_log_loss",
    ),
    "cluster_correlation": (
        lambda: make_pipeline(StandardScaler(), CorrelationClustering(random_state=0)),
        {"correlationclustering__beta": [0.4, 0.8], "correlationclustering__gamma": [0.5, 2.0]},
        _blobs,
        None,  # the estimator's score: minus the held-out disagreements
    ),
    "cluster_private_kmeans": (
        lambda: make_pipeline(PrivateKMeans(bounds=(-12.0, 12.0), n_init=2, random_state=0)),
        {"privatekmeans__epsilon": [0.5, 4.0], "privatekmeans__n_clusters": [3, 4]},
        _bounded_blobs,
        None,  # the estimator's score: minus the held-out k-means cost
    ),
    "survival_prototypes": (
        _survival_pipeline,
        {"columntransformer__histo__n_prototypes": [2, 4], "coxsurvival__alpha": [0.1, 10.0]},
        _multimodal_survival,
        None,  # the estimator's score: Harrell's concordance index
    ),
    "inspection_attribution_combiner": (
        _attribution_pipeline,
        {"attributioncombiner__lambda_robust": [0.2, 0.8], "attributioncombiner__noise_level": [0.05, 0.2]},
        _classification,
        None,  # the estimator's score: minus the held-out quality of the combined attributions
    ),
    "generative_synthetic_data_classifier": (
        lambda: make_pipeline(StandardScaler(), _synthetic_data_classifier()),
        {"syntheticdataclassifier__generator__epsilon": [0.5, 4.0],
         "syntheticdataclassifier__n_synthetic_per_class": [20, 40]},
        _classification,
        "accuracy",
    ),
    "generative_left_invertible_wgan": (
        _left_invertible_wgan,
        {"inverse_penalty": [0.0, 2.0], "architecture": ["mlp", "injective_mlp"]},
        _swiss_roll,
        None,  # the estimator's score: minus W1 between its samples and the held-out fold
    ),
    "bandits_pairwise_glm": (
        lambda: make_pipeline(_pairwise_glm()),
        {"pairwiseglmclassifier__link": ["logistic", "probit"], "pairwiseglmclassifier__alpha": [1e-4, 10.0]},
        _glm_duels,
        "neg_log_loss",
    ),
    "optimize_meta_lfbo_classifier": (
        _meta_lfbo_pipeline,
        {"metalfboclassifier__prior_precision": [0.1, 10.0], "metalfboclassifier__n_features": [4, 8]},
        _binary_classification,
        "neg_log_loss",
    ),
    "dynamics_dyslim_invariant_measure": (  # S4: lambda chosen on long-run statistics of each fold's rollouts
        _dyslim,
        {"lambda_uncond": [0.0, 1.0], "lambda_cond": [0.0, 1.0]},
        _lorenz_pairs,
        _dyslim_scorer(),
    ),
    "neural_network_expand_cluster": (  # S18: the clustering rule chosen on held-out R2 of the recovered network
        _expand_cluster,
        {"gamma": [0.5, 0.8], "count": ["students", "units"]},
        _tanh_teacher,
        None,  # the estimator's score: R2
    ),
    "bandits_agent_simulation_scorer": (  # an agent tuned against a simulator (the scorer ignores the folds)
        lambda: _borda_etc_agent(),
        {"c_explore": [0.3, 1.0], "exploration": ["uniform", "g_optimal"]},
        lambda: (lambda X, y: (_borda_etc_agent().duel_rows(X), y))(*_duel_env().sample_duels(30, random_state=0)),
        _simulation_scorer(),
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


def _assert_ran_on_the_workers(stream, client):
    # joblib's dask backend batches fast fits into one task, so the task count can be below the number
    # of fits, and a short search may land on one worker only: assert that the fits ran on the cluster
    workers = {task["worker"] for task in stream.data}
    assert workers and workers <= set(client.scheduler_info()["workers"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_grid_search_on_dask_equals_sequential(client, case):
    make_est, grid, make_data, scoring = CASES[case]
    X, y = make_data()
    sequential = GridSearchCV(make_est(), grid, cv=3, n_jobs=1, scoring=scoring).fit(X, y)
    with distributed.get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        on_dask = GridSearchCV(make_est(), grid, cv=3, n_jobs=-1, scoring=scoring).fit(X, y)
    _assert_ran_on_the_workers(stream, client)
    assert sequential.best_params_ == on_dask.best_params_
    np.testing.assert_allclose(sequential.cv_results_["mean_test_score"], on_dask.cv_results_["mean_test_score"])
    np.testing.assert_allclose(sequential.cv_results_["std_test_score"], on_dask.cv_results_["std_test_score"])


def test_meta_bayes_search_cv_on_dask_equals_sequential(client):
    """MetaBayesSearchCV (S13) spreads each round's settings x folds over the workers like GridSearchCV."""
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_icml.optimize import LikelihoodFreeOptimizer, MetaBayesSearchCV

    X, y = _classification()

    def search(n_jobs):
        return MetaBayesSearchCV(DecisionTreeClassifier(random_state=0),
                                 {"max_depth": [1, 2, 3, 4, 5, 6], "criterion": ["gini", "entropy"]}, n_iter=6,
                                 n_points=2, cv=3, n_jobs=n_jobs, random_state=0,
                                 optimizer=LikelihoodFreeOptimizer(n_candidates=64))

    sequential = search(1).fit(X, y)
    with distributed.get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        on_dask = search(-1).fit(X, y)
    assert len(stream.data) >= 3  # at least one Dask task per round (joblib may batch a round's 2 x 3 fits)
    _assert_ran_on_the_workers(stream, client)
    assert sequential.cv_results_["params"] == on_dask.cv_results_["params"]
    np.testing.assert_allclose(sequential.cv_results_["mean_test_score"], on_dask.cv_results_["mean_test_score"])
    assert sequential.best_params_ == on_dask.best_params_


def test_tune_scheduler_on_dask_equals_sequential(client):
    """tune_scheduler (S14) sends each setting x problem fit through sklearn.utils.parallel to the workers."""
    from sklearn_icml.datasets import make_scheduling_dag
    from sklearn_icml.optimize import GumbelScheduler, tune_scheduler

    problems = [make_scheduling_dag(80, depth=5, random_state=s) for s in range(2)]
    grid = {"init": ["stage0", "greedy"], "constraint": ["paper", "mask"]}
    scheduler = GumbelScheduler(batch_size=4, max_iter=5, random_state=0)
    sequential = tune_scheduler(scheduler, grid, problems, n_jobs=1)
    with distributed.get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        on_dask = tune_scheduler(scheduler, grid, problems, n_jobs=-1)
    _assert_ran_on_the_workers(stream, client)
    assert sequential.best_params_ == on_dask.best_params_
    np.testing.assert_array_equal(sequential.results_["objectives"], on_dask.results_["objectives"])
