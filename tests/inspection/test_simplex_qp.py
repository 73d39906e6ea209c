"""The exact simplex QP solver against brute force and its optimality certificate."""

import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_icml.inspection._simplex_qp import MAX_METHODS, solve_simplex_qp


def _random_psd(rng, k, rank=None):
    rank = k if rank is None else rank
    A = rng.standard_normal((rank, k)) + 2.0 * rng.standard_normal((1, k))
    return A.T @ A


def _assert_kkt(G, w, value, tol=1e-8):
    """KKT certificate of optimality: (G w)_j >= w'Gw for all j, with equality on the support."""
    grad = G @ w
    scale = max(1.0, np.abs(G).max())
    assert w.min() >= 0 and abs(w.sum() - 1) < 1e-12
    assert value == pytest.approx(w @ G @ w, rel=1e-10, abs=1e-12 * scale)
    assert np.all(grad >= value - tol * scale)
    assert np.all(np.abs(grad[w > 1e-9] - value) <= tol * scale)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_agrees_with_brute_force_on_small_k(k):
    rng = np.random.RandomState(k)
    for _trial in range(10):
        G = _random_psd(rng, k, rank=rng.randint(1, k + 2))
        w, value = solve_simplex_qp(G)
        _assert_kkt(G, w, value)
        # brute force: a dense random cover of the simplex, plus SLSQP from several starts
        W = rng.dirichlet(np.ones(k), 20000)
        brute = np.einsum("ni,ij,nj->n", W, G, W).min()
        for _ in range(2):
            sol = minimize(lambda x, G=G: x @ G @ x, rng.dirichlet(np.ones(k)), method="SLSQP",
                           bounds=[(0, 1)] * k, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}])
            x = np.clip(sol.x, 0, None) / np.clip(sol.x, 0, None).sum()  # back onto the simplex exactly
            brute = min(brute, x @ G @ x)
        assert value <= brute + 1e-9 * max(1.0, np.abs(G).max())
        # the combination is never worse than the best vertex (best single method)
        assert value <= np.diag(G).min() + 1e-12


def test_k3_matches_an_exhaustive_grid():
    rng = np.random.RandomState(0)
    step = 1 / 200
    grid = np.array([(a, b, 1 - a - b) for a in np.arange(0, 1 + step / 2, step)
                     for b in np.arange(0, 1 - a + step / 2, step)])
    grid = np.clip(grid, 0, None)
    for _ in range(10):
        G = _random_psd(rng, 3)
        _, value = solve_simplex_qp(G)
        assert value <= np.einsum("ni,ij,nj->n", grid, G, grid).min() + 1e-12
        assert value >= np.einsum("ni,ij,nj->n", grid, G, grid).min() - 1e-2 * np.abs(G).max()


def test_degenerate_matrices():
    # identical methods: any split is optimal, the value is that of one of them
    G = np.array([[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 2.0]])
    w, value = solve_simplex_qp(G)
    _assert_kkt(G, w, value)
    # a zero matrix (all maps perfect): value 0, the first vertex
    w, value = solve_simplex_qp(np.zeros((4, 4)))
    assert value == 0 and w[0] == 1
    # a null direction inside the simplex: value 0 reached by a mixture
    a = np.array([[1.0, -1.0, 0.0]])
    G = a.T @ a + np.diag([0, 0, 5.0])
    w, value = solve_simplex_qp(G)
    assert value == pytest.approx(0, abs=1e-12)
    np.testing.assert_allclose(w, [0.5, 0.5, 0], atol=1e-9)


def test_known_two_method_solution():
    # independent errors of variances 1 and 4: inverse-variance weights 0.8 / 0.2, value 0.8
    w, value = solve_simplex_qp(np.diag([1.0, 4.0]))
    np.testing.assert_allclose(w, [0.8, 0.2])
    assert value == pytest.approx(0.8)


def test_batched_equals_one_by_one():
    rng = np.random.RandomState(3)
    G = np.stack([_random_psd(rng, 5, rank=rng.randint(1, 6)) for _ in range(30)])
    W, values = solve_simplex_qp(G)
    for i in range(30):
        w, v = solve_simplex_qp(G[i])
        np.testing.assert_allclose(W[i], w, atol=1e-12)
        assert values[i] == pytest.approx(v)


def test_bad_input():
    with pytest.raises(ValueError, match="at most"):
        solve_simplex_qp(np.eye(MAX_METHODS + 1))
    with pytest.raises(ValueError, match="shape"):
        solve_simplex_qp(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="non-finite"):
        solve_simplex_qp(np.full((2, 2), np.nan))
