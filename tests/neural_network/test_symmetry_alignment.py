"""Canonical forms per activation, the tree cut and filtering, unit_alignment: against the symmetries' definitions."""

import itertools

import numpy as np
import pytest
import torch

from sklearn_icml.neural_network import unit_alignment
from sklearn_icml.neural_network._clustering import cluster_units, cut_tree, median_angle
from sklearn_icml.neural_network._symmetry import ACTIVATIONS, activate, canonical_units

_TORCH = {
    "relu": torch.relu, "leaky_relu": lambda z: torch.nn.functional.leaky_relu(z, 0.01), "tanh": torch.tanh,
    "identity": lambda z: z, "sigmoid": torch.sigmoid, "softplus": torch.nn.functional.softplus,
    "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
}


def _layer_output(W, b, A, c, activation, X):
    """a @ act(W x + b) + c, computed with torch's own activation (independent of the library's numpy one)."""
    z = torch.as_tensor(X @ W.T + b)
    return _TORCH[activation](z).numpy() @ A.T + c


def _twin(W, b, A, c, activation, rng):
    """The same function with every unit replaced by a symmetric twin, built from the symmetry's definition."""
    kind = ACTIVATIONS[activation]
    W2, b2, A2, c2 = W.copy(), b.copy(), A.copy(), c.copy()
    for j in range(len(b)):
        if kind == "scale":
            s = rng.uniform(0.2, 5.0)
            W2[j], b2[j], A2[:, j] = s * W[j], s * b[j], A[:, j] / s
            continue
        W2[j], b2[j] = -W[j], -b[j]
        if kind == "odd" or activation == "identity":
            A2[:, j] = -A[:, j]                     # act(-z) = -act(z)
        elif kind == "odd_constant":
            A2[:, j] = -A[:, j]                     # sigma(z) = 1 - sigma(-z)
            c2 = c2 + A[:, j]
    return W2, b2, A2, c2


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_canonical_form_maps_twins_to_one_vector(activation):
    rng = np.random.RandomState(1)
    W, b, A, c = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(2, 4)), rng.normal(size=2)
    X = rng.normal(size=(50, 3))
    W2, b2, A2, c2 = _twin(W, b, A, c, activation, rng)
    if ACTIVATIONS[activation] != "even_linear":  # the twin is an exact symmetry of the layer
        np.testing.assert_allclose(_layer_output(W2, b2, A2, c2, activation, X),
                                   _layer_output(W, b, A, c, activation, X), atol=1e-10)
    V1, A1, aff1, _ = canonical_units(W, b, A, activation)
    V2, _, _, _ = canonical_units(W2, b2, A2, activation)
    np.testing.assert_allclose(V1, V2, atol=1e-12)
    # the canonical units plus the affine term the next layer absorbs compute the original layer
    Xt = np.column_stack([X, np.ones(len(X))])
    canonical = _layer_output(V1[:, :-1], V1[:, -1], A1, c, activation, X) + Xt @ aff1.T
    np.testing.assert_allclose(canonical, _layer_output(W, b, A, c, activation, X), atol=1e-10)


def test_even_linear_twin_differs_by_a_linear_term():
    """softplus(z) - softplus(-z) = z: the flipped unit plus a linear term is the unit."""
    z = np.linspace(-5, 5, 11)
    for activation in ("softplus", "gelu", "silu"):
        np.testing.assert_allclose(activate(activation, z) - activate(activation, -z), z, atol=1e-12)


def test_numpy_activations_match_torch():
    z = np.linspace(-4, 4, 17)
    for activation, fn in _TORCH.items():
        np.testing.assert_allclose(activate(activation, z), fn(torch.as_tensor(z)).numpy(), atol=1e-12)


def test_cut_counts_students_not_units():
    """Three unit directions found by every student, plus one student's four copies of a fourth direction."""
    rng = np.random.RandomState(0)
    centers = np.eye(4) * 5
    rows, students = [], []
    for s in range(5):
        for k in range(3):
            rows.append(centers[k] + 0.01 * rng.normal(size=4))
            students.append(s)
    for _ in range(4):  # one student's duplicates, far from the rest (they merge last)
        rows.append(4 * centers[3] + 0.01 * rng.normal(size=4))
        students.append(0)
    V, ids = np.array(rows), np.array(students)
    by_students = cluster_units(V, ids, 5, gamma=0.8, beta=np.pi / 6, count="students")
    assert len(by_students.members) == 3
    assert sorted(by_students.sizes) == [5, 5, 5]
    by_units = cluster_units(V, ids, 5, gamma=0.8, beta=np.pi / 6, count="units")
    assert len(by_units.members) == 4  # the four duplicates pass a unit count of 4 >= 0.8 * 5


def test_cut_height_is_last_of_first_run_of_maxima():
    from scipy.cluster.hierarchy import linkage

    # 1-D points: pairs {0, 0.1}, {1, 1.1}, each pair from students 0 and 1; the pairs merge at 1.0 (average)
    V = np.array([[0.0], [0.1], [1.0], [1.1]])
    ids = np.array([0, 1, 0, 1])
    Z = linkage(V, method="average")
    height, labels, best = cut_tree(Z, ids, threshold=2)
    assert best == 2
    # maxima from the merge at 0.1 until the pairs merge; the last height of that run is 0.1 (both pair merges)
    assert height == pytest.approx(0.1)
    assert len(set(labels)) == 2


def test_unaligned_cluster_is_dropped():
    rng = np.random.RandomState(0)
    tight = np.array([30.0, 0.0, 0.0]) + 0.01 * rng.normal(size=(4, 3))
    loose = np.array([[0, 1.0, 0], [0, 0.7, 0.7], [0, 0, 1.0], [0, 0.7, -0.7]]) * 8
    V = np.vstack([tight, loose])
    ids = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    result = cluster_units(V, ids, 4, gamma=1.0, beta=np.pi / 6, count="students")
    # the tight group is kept; the loose one, present in every student, spreads by 45-90 degrees: dropped
    assert len(result.members) == 1 and sorted(result.members[0]) == [0, 1, 2, 3]
    assert result.n_dropped == 1
    assert result.median_angles[0] < 0.05
    # the official cut (count only) counts the loose group as a unit too
    _, _, best = cut_tree(result.linkage, ids, threshold=4)
    assert best == 2


def test_median_angle_is_the_median_over_distinct_pairs():
    """A fan at 0, 0.1, 0.3 and 0.7 rad: pairwise angles 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, median 0.35."""
    fan = 5.0 * np.column_stack([np.cos([0.0, 0.1, 0.3, 0.7]), np.sin([0.0, 0.1, 0.3, 0.7]), np.zeros(4)])
    assert median_angle(fan) == pytest.approx(0.35, abs=1e-12)
    far = np.array([0.0, 0.0, 40.0]) + 0.01 * np.random.RandomState(0).normal(size=(4, 3))
    V = np.vstack([fan, far])
    ids = np.tile(np.arange(4), 2)
    kept = cluster_units(V, ids, 4, gamma=1.0, beta=0.36, count="students")
    assert len(kept.members) == 2
    for rows, med in zip(kept.members, kept.median_angles):
        unit = V[rows] / np.linalg.norm(V[rows], axis=1, keepdims=True)
        pairs = [np.arccos(np.clip(unit[a] @ unit[b], -1, 1)) for a, b in itertools.combinations(range(len(rows)), 2)]
        assert med == pytest.approx(np.median(pairs), abs=1e-12)
    # beta just under the fan's median angle drops it (one student-complete cluster left)
    dropped = cluster_units(V, ids, 4, gamma=1.0, beta=0.34, count="students")
    assert len(dropped.members) == 1 and dropped.n_dropped == 1 and sorted(dropped.members[0]) == [4, 5, 6, 7]


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid", "softplus"])
def test_unit_alignment_perfect_for_an_equivalent_network(activation):
    """A permuted, sign-flipped or rescaled copy of a 2-hidden-layer teacher aligns at 1 in both layers."""
    rng = np.random.RandomState(0)
    W1, b1 = rng.normal(size=(3, 4)), rng.normal(size=4)
    W2, b2 = rng.normal(size=(4, 3)), rng.normal(size=3)
    W3, b3 = rng.normal(size=(3, 1)), rng.normal(size=1)
    perm = np.array([2, 0, 3, 1])
    kind = ACTIVATIONS[activation]
    # layer 1 twin: permute; flip (odd kinds) or scale (relu) each unit; fix layer 2 accordingly
    R1, c1, R2, c2 = W1[:, perm].copy(), b1[perm].copy(), W2[perm].copy(), b2.copy()
    for j in range(4):
        if kind == "scale":
            s = 0.5 + j
            R1[:, j], c1[j], R2[j] = s * R1[:, j], s * c1[j], R2[j] / s
        elif kind in ("odd", "odd_constant") and j % 2 == 0:
            R1[:, j], c1[j] = -R1[:, j], -c1[j]
            R2[j] = -R2[j]
            if kind == "odd_constant":
                c2 = c2 + W2[perm][j]
    X = rng.normal(size=(40, 3))
    if kind != "even_linear":
        def net(a, b_, c, d, e, f):
            return activate(activation, activate(activation, X @ a + b_) @ c + d) @ e + f
        np.testing.assert_allclose(net(R1, c1, R2, c2, W3, b3), net(W1, b1, W2, b2, W3, b3), atol=1e-10)
    scores = unit_alignment([W1, W2, W3], [b1, b2, b3], [R1, R2, W3], [c1, c2, b3], activation)
    assert len(scores) == 2
    np.testing.assert_allclose(scores[0], 1.0, atol=1e-10)
    np.testing.assert_allclose(scores[1], 1.0, atol=1e-10)


def test_unit_alignment_scores_a_wrong_unit_below_one():
    rng = np.random.RandomState(0)
    W, b = rng.normal(size=(3, 2)), rng.normal(size=2)
    other = W.copy()
    other[:, 1] = rng.normal(size=3)
    score = unit_alignment([W, np.ones((2, 1))], [b, np.zeros(1)], [other, np.ones((2, 1))],
                           [b, np.zeros(1)], "tanh")[0]
    assert score[0] == pytest.approx(1.0)
    assert score[1] < 0.99
    # relu units are identified up to a positive scale only: a flipped unit is not a match
    flipped = unit_alignment([W, np.ones((2, 1))], [b, np.zeros(1)], [-W, np.ones((2, 1))], [-b, np.zeros(1)],
                             "relu")[0]
    assert np.all(flipped < 0.99)


def test_unit_alignment_errors():
    W = np.ones((3, 2))
    with pytest.raises(ValueError, match="activation must be one of"):
        unit_alignment([W, W.T], [np.zeros(2), np.zeros(3)], [W, W.T], [np.zeros(2), np.zeros(3)], "swish")
    with pytest.raises(ValueError, match="output layer"):
        unit_alignment([W], [np.zeros(2)], [W], [np.zeros(2)], "tanh")
