"""ExpandAndCluster: batched students, recovery of a small teacher, fitted network layout, pruning, errors."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPRegressor

from sklearn_icml.neural_network import ExpandAndCluster, unit_alignment
from sklearn_icml.neural_network._students import (
    batched_module,
    fit_students,
    init_students,
    polish_students,
    student_losses,
)

_TORCH = {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid, "softplus": torch.nn.functional.softplus}

#: small and fast settings shared by the fits of this module
_FAST = dict(n_students=4, student_width=4, student_max_iter=600, student_lr=3e-2, student_polish_max_iter=100,
             finetune_max_iter=50, random_state=0)
#: tiny fits that test the plumbing, not the recovery (beta=pi keeps every cluster over the count threshold)
_TINY = dict(n_students=3, student_width=3, student_polish_max_iter=0, finetune_max_iter=5, beta=np.pi, random_state=0)


def _teacher(seed=0, d=2, h=2, n=300, activation="tanh"):
    rng = np.random.RandomState(seed)
    W = np.array([[1.5, -1.0], [0.5, 2.0]]) if (d, h) == (2, 2) else rng.normal(size=(d, h))
    b, a = np.array([0.3, -0.2])[:h] if h == 2 else rng.normal(size=h) * 0.3, rng.choice([-1.0, 1.0], size=(h, 1))
    X = rng.normal(size=(n, d))
    fn = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0)}[activation]
    return X, (fn(X @ W + b) @ a).ravel(), (W, b, a)


@pytest.mark.parametrize("activation", ["tanh", "relu", "softplus"])
def test_batched_module_matches_per_student_autograd(activation):
    """Outputs, hidden activations and gradients of the fused batched layers equal a plain per-student MLP."""
    rng = np.random.RandomState(1)
    act = _TORCH[activation]
    for widths, n_out in (([4], 1), ([5, 3], 2)):
        sizes = [3, *widths, n_out]
        W = [rng.normal(size=(3, o, i)) for i, o in zip(sizes[:-1], sizes[1:])]
        B = [rng.normal(size=(3, o)) for o in sizes[1:]]
        batch = batched_module(W, B, activation, dtype="float64")
        X = torch.tensor(rng.normal(size=(9, 3)))
        (batch(X) ** 3).sum().backward()
        Wr = [torch.tensor(w, requires_grad=True) for w in W]
        Br = [torch.tensor(b, requires_grad=True) for b in B]
        outs, hidden = [], []
        for s in range(3):
            h = X
            for layer in range(len(Wr)):
                h = h @ Wr[layer][s].T + Br[layer][s]
                if layer < len(Wr) - 1:
                    h = act(h)
                    if layer == 0:
                        hidden.append(h)
            outs.append(h)
        (torch.stack(outs) ** 3).sum().backward()
        np.testing.assert_allclose(batch(X).detach(), torch.stack(outs).detach(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(batch(X, n_layers=1).detach(), torch.stack(hidden).detach(), rtol=1e-12,
                                   atol=1e-12)
        for p, q in zip([*batch.weights, *batch.biases], [*Wr, *Br]):
            np.testing.assert_allclose(p.grad, q.grad, rtol=1e-10, atol=1e-10)
        # frozen lower layers: the upper layers' gradients are unchanged, the frozen ones get none
        batch.zero_grad()
        batch.freeze(1)
        (batch(X) ** 3).sum().backward()
        assert batch.weights[0].grad is None
        np.testing.assert_allclose(batch.weights[-1].grad, Wr[-1].grad, rtol=1e-10, atol=1e-10)


def test_batched_students_equal_separately_trained_ones():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3))
    Y = np.sin(X[:, :1]) + X[:, 1:2] ** 2
    batch = init_students(3, 3, [4], 1, "tanh", torch.Generator().manual_seed(0))
    initial = [p.detach().clone() for p in batch.parameters()]
    batch = fit_students(batch, X, Y, steps=60, learning_rate=1e-2, batch_size=None, device="cpu",
                         random_state=0, verbose=0, name="t").module
    for s in range(3):
        single = init_students(1, 3, [4], 1, "tanh", torch.Generator().manual_seed(1))
        with torch.no_grad():
            for p, p0 in zip(single.parameters(), initial):
                p.copy_(p0[s:s + 1])
        single = fit_students(single, X, Y, steps=60, learning_rate=1e-2, batch_size=None, device="cpu",
                              random_state=0, verbose=0, name="t").module
        for p, q in zip(single.parameters(), batch.parameters()):
            np.testing.assert_allclose(p.detach().numpy()[0], q.detach().numpy()[s], rtol=1e-4, atol=1e-5)
        # and the students did train
        assert not torch.allclose(initial[0][s], batch.weights[0][s])


def test_student_polish_takes_every_student_to_near_zero_loss():
    """The joint L-BFGS of the batch lowers each student's own loss (none is traded for another's)."""
    X, y, _ = _teacher(n=200)
    Y = y[:, None]
    batch = init_students(3, 2, [3], 1, "tanh", torch.Generator().manual_seed(0))
    batch = fit_students(batch, X, Y, steps=100, learning_rate=3e-2, batch_size=None, device="cpu",
                         random_state=0, verbose=0, name="t").module
    before = student_losses(batch, X, Y)
    polished = polish_students(batch, X, Y, max_iter=150, device="cpu", random_state=0, name="t")
    assert polished.weights[0].dtype == torch.float64
    after = student_losses(polished, X, Y)
    assert np.all(after <= before) and after.min() < 1e-3 * before.min()


def test_recovers_a_two_unit_tanh_teacher(device):
    X, y, (W, b, a) = _teacher()
    ec = ExpandAndCluster(**_FAST, device=device).fit(X, y)
    assert ec.device_ == device
    assert ec.hidden_layer_sizes_ == (2,)
    scores = unit_alignment([W, a], [b, np.zeros(1)], ec.coefs_, ec.intercepts_, "tanh")[0]
    assert scores.min() > 0.99
    # held-out probes: the recovered network is the teacher's function
    Xt, yt, _ = _teacher(seed=5)
    Xt = np.random.RandomState(5).normal(size=(200, 2))
    yt = (np.tanh(Xt @ W + b) @ a).ravel()
    assert np.mean((ec.predict(Xt) - yt) ** 2) < 1e-6
    assert len(ec.cluster_sizes_) == 1 and np.all(ec.cluster_sizes_[0] >= 0.8 * 4)
    assert np.all(ec.cluster_median_angle_[0] <= np.pi / 6)
    assert ec.student_losses_.shape == (4,)
    assert ec.loss_ <= ec.student_losses_.min()
    assert ec.recovered_ and ec.rebuilt_loss_ == ec.loss_  # (a fallback would also have warned, an error here)


def test_student_timings_count_the_polish_within_its_budget():
    """student_timings_: the polish's iterations within student_polish_max_iter, none without a polish."""
    X, y, _ = _teacher(n=200)
    ec = ExpandAndCluster(**{**_TINY, "student_polish_max_iter": 7}, student_max_iter=20).fit(X, y)
    t = ec.student_timings_
    assert 1 <= t["polish_n_iter"] <= 7 and t["polish_n_evaluations"] >= t["polish_n_iter"]
    assert all(t[k] >= 0 for k in ("adam_seconds", "adam_cpu_seconds", "polish_seconds", "polish_cpu_seconds"))
    t = ExpandAndCluster(**_TINY, student_max_iter=20, polish=None).fit(X, y).student_timings_
    assert (t["polish_n_iter"], t["polish_n_evaluations"], t["polish_seconds"]) == (0, 0, 0.0)


def test_coefs_reproduce_predict_transform_and_mlp_regressor():
    X, y, _ = _teacher()
    Y = np.column_stack([y, np.sin(X[:, 0])])
    ec = ExpandAndCluster(**_TINY, student_max_iter=40, prune=False).fit(X, Y)
    assert [c.shape for c in ec.coefs_] == [(2, ec.hidden_layer_sizes_[0]), (ec.hidden_layer_sizes_[0], 2)]
    h = torch.tanh(torch.as_tensor(X) @ torch.as_tensor(ec.coefs_[0]) + torch.as_tensor(ec.intercepts_[0]))
    out = (h @ torch.as_tensor(ec.coefs_[1]) + torch.as_tensor(ec.intercepts_[1])).numpy()
    np.testing.assert_allclose(ec.predict(X), out, atol=1e-10)
    np.testing.assert_allclose(ec.transform(X), h.numpy(), atol=1e-12)
    mlp = ec.to_mlp_regressor()
    assert isinstance(mlp, MLPRegressor)
    np.testing.assert_allclose(mlp.predict(X), ec.predict(X), atol=1e-10)
    assert ec.n_outputs_ == 2 and ec.predict(X).shape == (len(X), 2)


def test_pruning_removes_a_split_unit():
    """A teacher unit split in two halves (same incoming vector) is one unit too many: the pruning merges it."""
    X, y, (W, b, a) = _teacher()
    coefs = [np.column_stack([W, W[:, 0]]), np.vstack([a[:1] / 2, a[1:], a[:1] / 2])]
    intercepts = [np.append(b, b[0]), np.zeros(1)]
    ec = ExpandAndCluster(random_state=0)
    ec.student_losses_ = np.array([1e-8])
    coefs, intercepts, n_pruned = ec._prune(coefs, intercepts, X, y[:, None], "cpu", torch.Generator(), "t")
    assert n_pruned == 1 and coefs[0].shape == (2, 2)
    assert unit_alignment([W, a], [b, np.zeros(1)], coefs, intercepts, "tanh")[0].min() > 0.9999
    # a right-sized network loses accuracy with any unit removed: nothing pruned
    _, _, kept = ec._prune([W, a], [b, np.zeros(1)], X, y[:, None], "cpu", torch.Generator(), "t")
    assert kept == 0


def test_cosine_distance_keeps_a_unit_held_at_two_scales_in_one_cluster():
    """Every student holds teacher unit 0 as two parallel units of different norms (planted): the default cosine
    distance keeps one cluster per teacher unit; the Euclidean distance, which compares norms, splits it."""
    from sklearn_icml.neural_network._clustering import cluster_units

    rng = np.random.RandomState(0)
    T = rng.normal(size=(4, 5))
    T *= np.sign(T[:, :1])  # canonical orientation (first weight positive)
    rows, owners, teacher_of = [], [], []
    for s in range(10):
        for t in range(4):
            scales = (rng.uniform(0.55, 0.8), rng.uniform(1.0, 1.3)) if t == 0 else (rng.uniform(0.9, 1.1),)
            for r in scales:
                rows.append(r * T[t] + 1e-3 * rng.normal(size=5))
                owners.append(s)
                teacher_of.append(t)
    V, owners, teacher_of = np.array(rows), np.array(owners), np.array(teacher_of)
    assert ExpandAndCluster().distance == "cosine"
    clusters = cluster_units(V, owners, 10, gamma=0.8, beta=np.pi / 6, count="students", distance="cosine")
    assert len(clusters.members) == 4 and np.all(clusters.sizes == 10)
    # each cluster is exactly the rows of one teacher unit (brute force over the planted labels)
    assert sorted(tuple(sorted(set(teacher_of[m]))) for m in clusters.members) == [(0,), (1,), (2,), (3,)]
    assert sorted(len(m) for m in clusters.members) == [10, 10, 10, 20]
    split = cluster_units(V, owners, 10, gamma=0.8, beta=np.pi / 6, count="students", distance="l2")
    assert len(split.members) == 5


def test_count_units_rule_and_no_cluster_fallback():
    X, y, _ = _teacher()
    units = ExpandAndCluster(**_TINY, student_max_iter=40, count="units", gamma=0.5, prune=False).fit(X, y)
    assert len(units.cluster_sizes_[0]) == units.hidden_layer_sizes_[0]
    assert np.all(units.cluster_sizes_[0] >= 1.5)
    # beta = 0 drops every cluster of two or more members: the best student comes back, with a warning
    with pytest.warns(ConvergenceWarning, match="best student"):
        ec = ExpandAndCluster(n_students=2, student_width=3, student_max_iter=20, student_polish_max_iter=0,
                              gamma=1.0, beta=0.0, random_state=0).fit(X, y)
    assert ec.hidden_layer_sizes_ == (3,) and not ec.recovered_ and np.isnan(ec.rebuilt_loss_)
    best = int(np.argmin(ec.student_losses_))
    assert ec.loss_ == pytest.approx(ec.student_losses_[best], rel=1e-4)


def test_fallback_at_a_deeper_layer_returns_the_best_student_as_trained(monkeypatch):
    """Layer 1 is recovered and collapsed, layer 2 has no cluster: the students as trained are what comes back."""
    import dataclasses

    from sklearn_icml.neural_network import _expand_cluster

    original, calls = _expand_cluster.cluster_units, []

    def second_layer_fails(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(out)
        return dataclasses.replace(out, members=[]) if len(calls) == 2 else out

    monkeypatch.setattr(_expand_cluster, "cluster_units", second_layer_fails)
    X, y, _ = _teacher()
    params = dict(_TINY, n_hidden_layers=2, student_width=4, student_max_iter=60, finetune_max_iter=30)
    with pytest.warns(ConvergenceWarning, match=r"no cluster of layer 2 .* layer\(s\) 1 to 1 recovered before it "
                                                r"are not used either; the best student is returned as it was"):
        ec = ExpandAndCluster(**params).fit(X, y)
    assert len(calls) == 2 and 1 <= len(calls[0].members)
    assert ec.hidden_layer_sizes_ == (4, 4) and not ec.recovered_
    best = int(np.argmin(ec.student_losses_))
    assert ec.loss_ == pytest.approx(ec.student_losses_[best], rel=1e-4)
    assert np.mean((ec.predict(X) - y) ** 2) == pytest.approx(ec.student_losses_[best], rel=1e-3)


def _drop_last_cluster(monkeypatch):
    """Plant a lost teacher unit: the clustering of layer 1 forgets its last kept cluster."""
    import dataclasses

    from sklearn_icml.neural_network import _expand_cluster

    original = _expand_cluster.cluster_units

    def forgetful(*args, **kwargs):
        out = original(*args, **kwargs)
        labels = np.where(out.labels == len(out.members) - 1, -1, out.labels)
        return dataclasses.replace(out, members=out.members[:-1], sizes=out.sizes[:-1],
                                   median_angles=out.median_angles[:-1], labels=labels)

    monkeypatch.setattr(_expand_cluster, "cluster_units", forgetful)


def test_a_rebuilt_network_worse_than_the_best_student_falls_back_with_a_warning(monkeypatch):
    """One of the two teacher units is lost: the best student comes back as trained, and the warning says so."""
    _drop_last_cluster(monkeypatch)
    X, y, _ = _teacher()
    with pytest.warns(ConvergenceWarning, match=r"rebuilt network \(hidden widths \(1,\)\) fits the probes worse than "
                                                r"the best student .* not recovered: layer 1 \(1 unit kept; [1-4] of "
                                                r"the best student's 4 units that carry output are in no kept cluster"):
        ec = ExpandAndCluster(**_FAST).fit(X, y)
    best = ec.student_losses_.min()
    assert not ec.recovered_ and ec.hidden_layer_sizes_ == (4,)
    assert ec.rebuilt_loss_ > 2 * best
    assert ec.loss_ == pytest.approx(best, rel=1e-4)
    assert np.mean((ec.predict(X) - y) ** 2) == pytest.approx(best, rel=1e-3)
    # with the check turned off the rebuilt one-unit network comes back, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        off = ExpandAndCluster(**_FAST, fallback_ratio=np.inf).fit(X, y)
    assert off.recovered_ and off.hidden_layer_sizes_ == (1,)
    assert off.loss_ == pytest.approx(ec.rebuilt_loss_) and off.loss_ > 2 * best


def test_deterministic_and_does_not_mutate():
    X, y, _ = _teacher()
    X0, y0 = X.copy(), y.copy()
    params = dict(_TINY, student_max_iter=30, random_state=3)
    p1 = ExpandAndCluster(**params).fit(X, y).predict(X)
    p2 = ExpandAndCluster(**params).fit(X, y).predict(X)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_from_teacher_callable_mlp_and_torch_module():
    X, y, (W, b, a) = _teacher()
    fast = dict(_TINY, student_max_iter=30)
    by_fn = ExpandAndCluster.from_teacher(lambda Z: (np.tanh(Z @ W + b) @ a).ravel(), X, **fast)
    assert by_fn.n_outputs_ == 1
    mlp = MLPRegressor(hidden_layer_sizes=(2,), activation="relu", max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y)
    by_mlp = ExpandAndCluster.from_teacher(mlp, X, **fast)
    assert by_mlp.activation == "relu" and by_mlp.n_hidden_layers == 1
    # the teacher's weights from a seeded generator, not torch's global one (whose state depends
    # on which tests ran before)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    by_module = ExpandAndCluster.from_teacher(net, X, **fast)
    with torch.no_grad():
        target = net(torch.as_tensor(X, dtype=torch.float32)).numpy().ravel()
    assert by_module.score(X, target) > 0.9
    with pytest.raises(TypeError, match="teacher must be a callable"):
        ExpandAndCluster.from_teacher("not a network", X)


def test_bad_input():
    X, y, _ = _teacher(n=30)
    with pytest.raises(ValueError, match="activation"):
        ExpandAndCluster(activation="swish").fit(X, y)
    with pytest.raises(ValueError, match="student_width"):
        ExpandAndCluster(student_width=0).fit(X, y)
    with pytest.raises(ValueError, match="one int >= 1 per hidden layer"):
        ExpandAndCluster(n_hidden_layers=2, student_width=[4]).fit(X, y)
    y_nan = y.copy()
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ExpandAndCluster().fit(X, y_nan)
    ec = ExpandAndCluster(activation="softplus", n_students=2, student_width=2, student_max_iter=5,
                          finetune_max_iter=2, beta=np.pi, polish=None, prune=False, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="no 'softplus' activation"):
        ec.to_mlp_regressor()


@pytest.mark.slow
def test_recovers_a_relu_teacher():
    """Positive-scaling canonical form: a 4-3-1 ReLU teacher's units come back up to a positive scale."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(1000, 4))
    W, b, a = rng.normal(size=(4, 3)), rng.normal(size=3) * 0.3, rng.normal(size=(3, 1))
    y = (np.maximum(X @ W + b, 0) @ a).ravel()
    ec = ExpandAndCluster(activation="relu", student_width=6, student_max_iter=1000, finetune_max_iter=300,
                          random_state=0).fit(X, y)
    assert ec.hidden_layer_sizes_ == (3,)
    assert unit_alignment([W, a], [b, np.zeros(1)], ec.coefs_, ec.intercepts_, "relu")[0].min() > 0.99


def test_two_hidden_layers_run_layer_by_layer():
    """The layer-by-layer loop: the second layer is clustered in the recovered first layer's units."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 2))
    y = np.tanh(np.tanh(X @ np.array([[1.5, -1.0], [0.5, 2.0]]) + [0.3, -0.2]) @ np.array([[1.0], [-0.5]])).ravel()
    deep = ExpandAndCluster(n_hidden_layers=2, **_TINY, student_max_iter=60, prune=False).fit(X, y)
    assert len(deep.linkage_matrices_) == 2 and len(deep.coefs_) == 3
    # the second layer's students' units live in the space of the recovered first layer (+ bias)
    assert deep.student_units_[1].shape == (3 * 3, deep.coefs_[0].shape[1] + 1)
    assert [c.shape[1] for c in deep.coefs_[:-1]] == list(deep.hidden_layer_sizes_)
    h = np.tanh(np.tanh(X @ deep.coefs_[0] + deep.intercepts_[0]) @ deep.coefs_[1] + deep.intercepts_[1])
    np.testing.assert_allclose(deep.predict(X), (h @ deep.coefs_[2] + deep.intercepts_[2]).ravel(), atol=1e-10)


@pytest.mark.parametrize("n_hidden_layers, steps, polish", [(1, 3000, 1000), (2, 6000, 3000), (3, 9000, 5000)])
def test_default_student_budgets_grow_with_depth(monkeypatch, n_hidden_layers, steps, polish):
    """student_max_iter=None and student_polish_max_iter=None: the documented depth-aware budgets reach the
    optimisers (captured at the calls); explicit values are passed through unchanged."""
    from sklearn_icml.neural_network import _students

    seen = {}

    class Stop(Exception):
        pass

    real_fit = _students.fit_students

    def fit_students(module, X, Y, *, steps, **kw):
        seen["steps"] = steps
        return real_fit(module, X, Y, steps=1, **kw)

    def polish_students(module, X, Y, *, max_iter, **kw):
        seen["polish"] = max_iter
        raise Stop

    monkeypatch.setattr(_students, "fit_students", fit_students)
    monkeypatch.setattr(_students, "polish_students", polish_students)
    X, y, _ = _teacher()
    for params, expected in (({}, (steps, polish)), (dict(student_max_iter=7, student_polish_max_iter=11), (7, 11))):
        seen.clear()
        with pytest.raises(Stop):
            ExpandAndCluster(n_hidden_layers=n_hidden_layers, n_students=2, student_width=2, **params).fit(X, y)
        assert (seen["steps"], seen["polish"]) == expected


def test_a_long_silent_fit_names_its_stages(monkeypatch, capsys):
    from sklearn_icml.utils import _training

    monkeypatch.setattr(_training, "SLOW_FIT_CPU_SECONDS", 0.0)  # every fit counts as long here
    X, y, _ = _teacher()
    ExpandAndCluster(**_TINY, student_max_iter=20).fit(X, y)
    out = capsys.readouterr().out
    assert "[ExpandAndCluster] still fitting: 3 students trained after " in out
    monkeypatch.setattr(_training, "SLOW_FIT_CPU_SECONDS", 1e9)
    ExpandAndCluster(**_TINY, student_max_iter=20).fit(X, y)
    assert capsys.readouterr().out == ""
