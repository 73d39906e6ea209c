"""MetaBayesianOptimizer and LikelihoodFreeOptimizer: ask/tell, minimize, the zero-shot query, the residual."""

import numpy as np
import pytest
from scipy.optimize import OptimizeResult
from sklearn.base import clone
from sklearn.ensemble import GradientBoostingClassifier

from sklearn_icml.datasets import make_forrester_tasks
from sklearn_icml.optimize import LikelihoodFreeOptimizer, MetaBayesianOptimizer, MetaLFBOClassifier


def _sphere(x):
    return float(np.sum((np.asarray(x) - 0.3) ** 2))


@pytest.fixture(scope="module")
def forrester(forrester_meta):
    clf, meta = forrester_meta
    targets = make_forrester_tasks(6, 0, random_state=1)
    # the classifier is meta-trained already: fit() without tasks reuses it
    opt = MetaBayesianOptimizer(bounds=[(0.0, 1.0)], n_candidates=1024, random_state=0, classifier=clf)
    return opt.fit(), meta, targets


def test_meta_learning_beats_lfbo_and_random_search_on_held_out_forrester_tasks(forrester):
    opt, _, targets = forrester
    lfbo = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)], n_candidates=1024, random_state=0)
    rng = np.random.RandomState(0)
    regret = {"malibo": [], "lfbo": [], "random": []}
    for f in targets.functions:
        regret["malibo"].append(opt.minimize(f, 8).fun - f.minimum)
        regret["lfbo"].append(lfbo.minimize(f, 8).fun - f.minimum)
        regret["random"].append(min(f(x) for x in rng.uniform(size=(8, 1))) - f.minimum)
    med = {k: np.median(v) for k, v in regret.items()}
    assert med["malibo"] < 0.3, med
    assert med["malibo"] < 0.5 * med["lfbo"] and med["malibo"] < 0.5 * med["random"]


def test_zero_shot_first_query_maximises_the_meta_prior(forrester):
    opt, _, targets = forrester
    res = opt.minimize(targets.functions[0], 1)
    grid = np.linspace(0, 1, 2001)[:, None]
    prior = opt.classifier_.predict_proba(grid)[:, 1]
    assert abs(res.x_iters[0, 0] - grid[np.argmax(prior), 0]) < 0.01
    # no earlier tasks and an untrained classifier: the prior is flat and the first query random
    fresh = MetaBayesianOptimizer(bounds=[(0.0, 1.0)], n_candidates=64, classifier=MetaLFBOClassifier(n_features=4))
    firsts = {round(float(fresh.set_params(random_state=s).fit().suggest()[0, 0]), 6) for s in range(3)}
    assert len(firsts) == 3 and fresh.model_ is None


def test_gradient_boosting_residual_starts_once_both_classes_hold_two_points(forrester):
    opt, _, targets = forrester
    f = targets.functions[1]
    opt.fit()  # a new run (fit without tasks keeps the meta-trained classifier)
    sizes = []
    for x in np.linspace(0.05, 0.95, 7):
        opt.observe([[x]], [f([x])])
        sizes.append(opt.n_estimators_)
        below = np.sum(opt.y_obs_ < opt.threshold_) if np.isfinite(opt.threshold_) else 0
        if below >= 2 and opt.y_obs_.size - below >= 2:
            assert isinstance(opt.model_, GradientBoostingClassifier) and opt.n_estimators_ >= 1
            assert opt.model_.init_.n_meta_tasks_ == 48  # the meta-learned classifier is its init
        else:
            assert opt.n_estimators_ == 0
    assert sizes[0] == 0 and sizes[-1] > 0
    no_residual = clone(opt).set_params(residual=False).fit()
    no_residual.observe(opt.X_obs_, opt.y_obs_)
    assert isinstance(no_residual.model_, MetaLFBOClassifier) and no_residual.n_estimators_ == 0


def test_minimize_result_reproducibility_x0_and_callback():
    opt = LikelihoodFreeOptimizer(bounds=[(-1.0, 1.0)] * 2, n_candidates=256, random_state=0)
    res = opt.minimize(_sphere, 12)
    assert isinstance(res, OptimizeResult) and res.success
    assert res.x_iters.shape == (12, 2) and res.func_vals.shape == (12,) and res.nfev == 12
    assert res.fun == res.func_vals.min() and np.array_equal(res.x, res.x_iters[np.argmin(res.func_vals)])
    np.testing.assert_array_equal(res.x_iters, opt.minimize(_sphere, 12).x_iters)  # each run restarts the seed
    other = LikelihoodFreeOptimizer(bounds=[(-1.0, 1.0)] * 2, n_candidates=256, random_state=1).minimize(_sphere, 12)
    assert not np.array_equal(res.x_iters, other.x_iters)
    assert np.all(np.abs(res.x_iters) <= 1.0)
    calls = []
    res = opt.minimize(lambda x: calls.append(x) or _sphere(x), 3, x0=[[0.3, 0.3], [0.0, 0.0]])
    assert len(calls) == 5 and res.fun == 0.0 and res.nfev == 5
    res = opt.minimize(_sphere, 3, x0=[[0.3, 0.3]], y0=[0.0])
    assert res.nfev == 3 and res.func_vals[0] == 0.0
    res = opt.minimize(_sphere, 10, callback=lambda r: len(r.func_vals) >= 4)
    assert res.func_vals.size == 4 and "callback" in res.message


def test_lfbo_improves_on_random_search_in_2d():
    rng = np.random.RandomState(0)
    ours, rand = [], []
    for seed in range(3):
        res = LikelihoodFreeOptimizer(bounds=[(-1.0, 1.0)] * 2, n_candidates=512, random_state=seed).minimize(
            _sphere, 24)
        ours.append(res.fun)
        rand.append(min(_sphere(x) for x in rng.uniform(-1, 1, size=(24, 2))))
    assert np.median(ours) < np.median(rand)


def test_ask_tell_pool_mode_and_duplicate_guard():
    opt = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)], random_state=0).fit()
    pool = np.linspace(0, 1, 11)[:, None]
    X = opt.suggest(3, candidates=pool)
    assert X.shape == (3, 1) and all(x in pool for x in X[:, 0]) and len(set(X[:, 0])) == 3
    opt.observe(pool[:10], [_sphere(x) for x in pool[:10]])
    # only the last pool point is new: it is chosen whatever its acquisition value
    np.testing.assert_array_equal(opt.suggest(1, candidates=pool), pool[10:])
    with pytest.raises(ValueError, match="only 1 of the 11 candidates are new"):
        opt.suggest(2, candidates=pool)
    assert opt.set_params(n_candidates=4).suggest(6).shape == (6, 1)  # more suggestions than candidates
    # box mode: a proposal equal to an observed point is replaced by a random point
    opt.set_params(n_candidates=1)
    twin = np.random.RandomState()
    twin.set_state(opt._rng.get_state())
    opt.X_obs_ = np.vstack([opt.X_obs_, twin.uniform(size=(1, 1))])  # the one candidate is already observed
    x = opt.suggest(1)
    assert not np.any(np.abs(opt.X_obs_ - x) < 1e-12)


def test_fit_accepts_tasks_in_three_forms_and_infers_bounds():
    data = make_forrester_tasks(3, 8, random_state=0)
    params = dict(n_candidates=32, random_state=0, classifier=MetaLFBOClassifier(
        n_features=4, n_hidden=8, n_layers=2, max_iter=2, random_state=0))
    a = MetaBayesianOptimizer(**params).fit(data.tasks)
    b = MetaBayesianOptimizer(**params).fit({i: t for i, t in enumerate(data.tasks)})
    X = np.concatenate([t[0] for t in data.tasks])
    y = np.concatenate([t[1] for t in data.tasks])
    c = MetaBayesianOptimizer(**params).fit(X, y, groups=np.repeat([0, 1, 2], 8))
    np.testing.assert_allclose(a.bounds_, [[X.min(), X.max()]])
    for other in (b, c):
        np.testing.assert_allclose(a.bounds_, other.bounds_)
        np.testing.assert_allclose(a.classifier_.task_embeddings_, other.classifier_.task_embeddings_)
    np.testing.assert_array_equal(a.suggest(2), b.suggest(2))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="give bounds"):
        LikelihoodFreeOptimizer().fit()
    with pytest.raises(ValueError, match="low < high"):
        LikelihoodFreeOptimizer(bounds=[(1.0, 0.0)]).fit()
    with pytest.raises(ValueError, match="bounds has 2 dimensions"):
        LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)] * 2).fit(np.zeros((4, 1)), np.arange(4.0))
    with pytest.raises(ValueError, match="requires y"):
        LikelihoodFreeOptimizer().fit(np.zeros((4, 1)))
    opt = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)]).fit()
    with pytest.raises(ValueError, match="expecting 1 features"):
        opt.observe(np.zeros((1, 2)), [0.0])
    with pytest.raises(ValueError, match="n_suggestions"):
        opt.suggest(0)
    with pytest.raises(TypeError, match="callable"):
        opt.minimize("not a function", 2)
    with pytest.raises(ValueError, match="func returned nan"):
        opt.minimize(lambda x: np.nan, 2)
    with pytest.raises(ValueError, match="NaN"):
        opt.observe([[0.5]], [np.nan])


def test_minimize_without_fit_and_score_samples():
    opt = MetaBayesianOptimizer(bounds=[(0.0, 1.0)], n_candidates=128, random_state=0, classifier=MetaLFBOClassifier(
        n_features=8, n_hidden=8, n_layers=2, random_state=0))
    res = opt.minimize(_sphere, 10)  # no earlier tasks: random-feature head, then the residual
    assert res.fun < 0.05
    grid = np.linspace(0, 1, 5)[:, None]
    acq = opt.score_samples(grid)
    # the same seeds give the same acquisition; it is the classifier's probability of "below the threshold"
    again = MetaBayesianOptimizer(bounds=[(0.0, 1.0)], n_candidates=128, random_state=0,
                                  classifier=MetaLFBOClassifier(n_features=8, n_hidden=8, n_layers=2, random_state=0))
    again.minimize(_sphere, 10)
    np.testing.assert_array_equal(again.score_samples(grid), acq)
    np.testing.assert_allclose(acq, opt.model_.predict_proba(grid)[:, 1])
    assert np.all((acq > 0) & (acq < 1))
    # the minimum of the sphere (0.3) is more likely below the threshold than the far end of the interval
    assert acq[1] > acq[4]
    # suggest maximises it over a pool
    assert opt.suggest(candidates=grid)[0, 0] == grid[int(np.argmax(acq)), 0]


def test_device_of_meta_training(device):
    data = make_forrester_tasks(4, 8, random_state=0)
    opt = MetaBayesianOptimizer(n_candidates=32, random_state=0, device=device, classifier=MetaLFBOClassifier(
        n_features=4, n_hidden=8, n_layers=2, max_iter=2))
    opt.fit(data.tasks)
    assert opt.device_ == device and opt.classifier_.device_ == device
    assert opt.classifier_.n_meta_iter_ == 2 == len(opt.classifier_.loss_curve_)
    assert all(isinstance(W, np.ndarray) for W in opt.classifier_.coefs_)


def test_minimize_with_no_evaluation_is_an_error_unless_x0_is_given():
    opt = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)], n_candidates=32, random_state=0)
    calls = []
    with pytest.raises(ValueError, match="n_iter=0 without x0"):
        opt.minimize(lambda x: calls.append(1) or _sphere(x), n_iter=0)
    assert not calls
    res = opt.minimize(_sphere, n_iter=0, x0=[[0.05], [0.5]])
    assert res.nfev == 2 and res.fun == pytest.approx(_sphere([0.5])) and _sphere([0.5]) < _sphere([0.05])
    np.testing.assert_allclose(res.x, [0.5])
    assert np.isfinite(res.fun) and res.success


def test_device_random_state_and_verbose_are_forwarded_to_the_classifier(capsys):
    data = make_forrester_tasks(4, 8, random_state=0)
    template = MetaLFBOClassifier(n_features=4, n_hidden=8, n_layers=2, max_iter=3)
    opt = MetaBayesianOptimizer(n_candidates=32, device="cpu", random_state=5, verbose=1, classifier=template)
    res = opt.fit(data.tasks).minimize(data.functions[0], n_iter=3)
    assert opt.device_ == "cpu" and opt.classifier_.device == "cpu"
    assert template.get_params()["random_state"] is None  # the template is not modified ...
    seed = opt.classifier_.random_state  # ... the clone gets a seed drawn from the optimiser's random_state
    assert seed is not None and clone(opt).fit(data.tasks).classifier_.random_state == seed
    out = capsys.readouterr().out
    assert "[MetaLFBOClassifier]" in out and "epoch" in out  # meta-training progress
    rounds = [line for line in out.splitlines() if line.startswith("[MetaBayesianOptimizer] evaluation")]
    assert len(rounds) == 3
    best = np.minimum.accumulate(res.func_vals)
    for line, b in zip(rounds, best):
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(b, rel=1e-5)
    # silent by default
    MetaBayesianOptimizer(n_candidates=32, random_state=5, classifier=template).fit(data.tasks).minimize(
        data.functions[0], n_iter=2)
    assert capsys.readouterr().out == ""


def test_cuda_without_gpu_raises_before_any_work(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    data = make_forrester_tasks(3, 8, random_state=0)
    opt = MetaBayesianOptimizer(n_candidates=32, device="cuda", classifier=MetaLFBOClassifier(
        n_features=4, n_hidden=8, n_layers=2, max_iter=2))
    with pytest.raises(ValueError, match="device='cuda'"):
        opt.fit(data.tasks)
    assert not hasattr(opt, "classifier_")
    calls = []
    with pytest.raises(ValueError, match="device='cuda'"):
        clone(opt).set_params(bounds=[(0.0, 1.0)]).minimize(lambda x: calls.append(1) or 0.0, n_iter=2)
    assert not calls
