"""The task families of the optimize benchmarks: Forrester, shifted Forrester and the HPO family."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_forrester_tasks, make_hpo_tasks


def test_forrester_tasks_are_reproducible_and_their_minima_exact():
    a = make_forrester_tasks(20, 5, random_state=0)
    b = make_forrester_tasks(20, 5, random_state=0)
    np.testing.assert_array_equal(a.params, b.params)
    np.testing.assert_array_equal(a.tasks[3][0], b.tasks[3][0])
    grid = np.linspace(0, 1, 100001)[:, None]
    for f, m, x in zip(a.functions, a.minima, a.argmins):
        assert f(grid).min() >= m - 1e-9  # nothing on a fine grid beats the reported minimum
        assert f(np.array([x])) == pytest.approx(m)
    X, y = a.tasks[0]
    np.testing.assert_allclose(y, a.functions[0](X))
    assert a.bounds == [(0.0, 1.0)]


def test_plain_family_shares_its_optimum_and_the_shifted_one_moves_it():
    plain = make_forrester_tasks(200, 0, random_state=0)
    shifted = make_forrester_tasks(200, 0, family="shifted", random_state=0)
    assert np.mean(np.abs(plain.argmins - 0.76) < 0.05) > 0.7
    assert np.mean(np.abs(shifted.argmins - 0.76) < 0.05) < 0.3
    assert np.all(plain.params[:, 3] == 0) and np.all((shifted.params[:, 3] >= 0) & (shifted.params[:, 3] <= 0.5))


def test_noise_only_touches_the_observations():
    clean = make_forrester_tasks(2, 10, random_state=0)
    noisy = make_forrester_tasks(2, 10, noise=0.5, random_state=0)
    assert not np.allclose(clean.tasks[0][1], noisy.tasks[0][1])
    np.testing.assert_allclose(clean.minima, noisy.minima)


def test_hpo_tasks():
    data = make_hpo_tasks(5, n_samples=60, grid_size=4, label_noise=0.1, random_state=0)
    assert data.names == ["breast_cancer", "digits", "iris", "wine", "breast_cancer"]
    for X, y in data.datasets:
        assert X.shape[0] == 60 and len(np.unique(y)) >= 2
    assert data.datasets[0][1].shape == (60,) and data.datasets[0][0].shape[1] >= 15
    assert {k: len(v) for k, v in data.param_grid.items()} == {"svc__C": 4, "svc__gamma": 4}
    again = make_hpo_tasks(5, n_samples=60, grid_size=4, label_noise=0.1, random_state=0)
    np.testing.assert_array_equal(data.datasets[2][0], again.datasets[2][0])
    assert data.estimator.fit(*data.datasets[2]).score(*data.datasets[2]) > 0.8
