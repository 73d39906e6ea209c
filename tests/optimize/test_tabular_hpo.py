"""make_tabular_hpo_tasks: the shipped table is what the code computes; lookups by the definition."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_tabular_hpo_tasks
from sklearn_icml.datasets._tabular_hpo import SPACE, _design, _task_data, _validation_loss, decode


def test_shipped_table_matches_a_recomputation_of_some_entries():
    data = make_tabular_hpo_tasks(n_samples=None, random_state=0)
    assert data.losses.shape == (12, 512) and data.design.shape == (512, 4)
    np.testing.assert_allclose(data.design, _design(512, 0))  # the scrambled Sobol design of seed 0
    tasks, names = _task_data(0)
    assert names == data.names
    rng = np.random.RandomState(0)
    for t, i in zip(rng.randint(12, size=4), rng.randint(512, size=4)):
        params = decode(data.design[i])[0]
        assert _validation_loss(tasks[t], params) == pytest.approx(data.losses[t, i], rel=1e-6, abs=1e-9)


def test_decode_maps_the_unit_cube_onto_the_space():
    low, high = decode(np.zeros(4))[0], decode(np.ones(4))[0]
    assert low == pytest.approx({"alpha": 1e-6, "l1_ratio": 0.0, "eta0": 1e-4, "power_t": 0.05})
    assert high == pytest.approx({"alpha": 1.0, "l1_ratio": 1.0, "eta0": 1.0, "power_t": 0.95})
    assert decode([[0.5, 0.5, 0.5, 0.5]])[0]["alpha"] == pytest.approx(1e-3)
    assert [s[0] for s in SPACE] == ["alpha", "l1_ratio", "eta0", "power_t"]


def test_lookups_by_brute_force():
    data = make_tabular_hpo_tasks(n_samples=16, random_state=1)
    idw = make_tabular_hpo_tasks(n_samples=16, lookup="idw", random_state=1)
    design, losses = data.design, data.losses
    rng = np.random.RandomState(0)
    Q = rng.uniform(size=(20, 4))
    for t in (0, 7):
        f, g = data.functions[t], idw.functions[t]
        for q in Q:
            d2 = ((design - q) ** 2).sum(axis=1)
            assert f(q) == losses[t, np.argmin(d2)]
            near = np.argsort(d2)[:8]
            w = 1 / d2[near]
            assert g(q) == pytest.approx(np.sum(w * losses[t, near]) / np.sum(w))
        np.testing.assert_allclose(f(Q), [f(q) for q in Q])
        # both are exact at the design points and never below the table's minimum
        np.testing.assert_array_equal(g(design[:50]), losses[t, :50])
        assert f(data.argmins[t]) == data.minima[t] == losses[t].min()
        assert g(Q).min() >= data.minima[t]
    # the observed meta-data are rows of the table
    X, y = data.tasks[3]
    rows = [int(np.flatnonzero((design == x).all(axis=1))[0]) for x in X]
    np.testing.assert_array_equal(y, losses[3, rows])
    assert X.shape == (16, 4) and len(set(rows)) == 16


def test_tasks_are_related_but_shifted():
    data = make_tabular_hpo_tasks(n_samples=None)
    L = data.losses
    corr = np.corrcoef(L)
    same = [corr[i, j] for i in range(12) for j in range(i + 1, 12) if data.names[i] == data.names[j]]
    assert np.mean(same) > 0.5  # variants of one dataset rank the settings alike
    best = np.argmin(L, axis=1)
    assert len(set(best.tolist())) > 4  # but their best settings differ
