"""Sensitivities found by brute force over neighbouring pairs, independently of the code under test.

For every release the test computes the *exact* (noise-free) released vector itself, from the
definition of the query, on a small grid of records (corners, centre, points outside the box), and
takes the largest change over all neighbouring pairs: a record added (central model) or one record's
message replaced by any other (local model). The sensitivity the code calibrates its noise to (read
from the ledger it returns) must be at least that large.
"""

import itertools
import math

import numpy as np
import pytest

from sklearn_icml.privacy import gaussian_noise_scale, noisy_group_sums

LOWER, UPPER = np.array([-1.0, 0.0]), np.array([1.0, 3.0])
N_GROUPS = 3


def _grid_records():
    """Records (x, group): every coordinate at a bound, the centre, or outside the box."""
    values = [(LOWER[j] - 0.5, LOWER[j], (LOWER[j] + UPPER[j]) / 2, UPPER[j], UPPER[j] + 0.7) for j in range(2)]
    return [(np.array(x), g) for x in itertools.product(*values) for g in range(N_GROUPS)]


def _exact_group_release(records):
    """The query of ``noisy_group_sums`` from its definition: group sizes and sums of clip(x) - centre."""
    counts = np.zeros(N_GROUPS)
    sums = np.zeros((N_GROUPS, 2))
    centre = (LOWER + UPPER) / 2
    for x, g in records:
        counts[g] += 1
        sums[g] += np.clip(x, LOWER, UPPER) - centre
    return counts, sums


def _ledger(model, delta):
    X = np.array([[0.2, 1.0], [-0.5, 2.5]])
    _, _, _, ledger = noisy_group_sums(X, [0, 1], N_GROUPS, bounds=(LOWER, UPPER), epsilon_count=0.5,
                                       epsilon_sum=0.5, delta=delta, model=model, random_state=0)
    return {e["label"].split(" (")[0]: e for e in ledger}


def _central_worst_case():
    base = [(np.array([0.3, 0.4]), 0), (np.array([-0.9, 2.0]), 2)]
    c0, s0 = _exact_group_release(base)
    worst = {"counts": 0.0, "sums_l1": 0.0, "sums_l2": 0.0}
    for record in _grid_records():
        c1, s1 = _exact_group_release(base + [record])
        worst["counts"] = max(worst["counts"], np.abs(c1 - c0).sum())
        worst["sums_l1"] = max(worst["sums_l1"], np.abs(s1 - s0).sum())
        worst["sums_l2"] = max(worst["sums_l2"], np.linalg.norm(s1 - s0))
    return worst


def _local_worst_case():
    """A record's message is its own (counts, sums) contribution; any record may replace any other."""
    messages = [_exact_group_release([r]) for r in _grid_records()]
    worst = {"counts": 0.0, "sums_l1": 0.0, "sums_l2": 0.0}
    for (ca, sa), (cb, sb) in itertools.combinations(messages, 2):
        worst["counts"] = max(worst["counts"], np.abs(ca - cb).sum())
        worst["sums_l1"] = max(worst["sums_l1"], np.abs(sa - sb).sum())
        worst["sums_l2"] = max(worst["sums_l2"], np.linalg.norm(sa - sb))
    return worst


@pytest.mark.parametrize("model", ["central", "local"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_group_sums_sensitivity_covers_the_brute_force_worst_case(model, delta):
    worst = _central_worst_case() if model == "central" else _local_worst_case()
    ledger = _ledger(model, delta)
    assert ledger["group counts"]["sensitivity"] >= worst["counts"] - 1e-12
    key = "sums_l2" if delta > 0 else "sums_l1"
    assert ledger["group sums"]["mechanism"] == ("gaussian" if delta > 0 else "laplace")
    assert ledger["group sums"]["sensitivity"] >= worst[key] - 1e-12
    # and it is tight: the brute force reaches it, so the noise is no larger than needed; the sums' sensitivity
    # adds only their rounding onto the noise's power-of-two grid (one step, far below 1e-5 of it, per coordinate)
    assert ledger["group sums"]["sensitivity"] == pytest.approx(worst[key], rel=1e-5)
    assert ledger["group counts"]["sensitivity"] == pytest.approx(worst["counts"], rel=1e-12)  # integers: no rounding


def test_local_gaussian_sums_have_twice_the_half_diagonal():
    """The worst pair: two records of the same group at opposite corners of the box differ by 2h."""
    half = (UPPER - LOWER) / 2
    ledger = _ledger("local", 1e-6)
    sens = ledger["group sums"]["sensitivity"]
    assert 2 * np.linalg.norm(half) <= sens == pytest.approx(2 * np.linalg.norm(half), rel=1e-5)
    # the noise covers the sensitivity on the grid and is not larger than needed (within 0.1%)
    assert ledger["group sums"]["scale"] >= gaussian_noise_scale(0.5, 1e-6, sens)
    assert ledger["group sums"]["scale"] == pytest.approx(gaussian_noise_scale(0.5, 1e-6, 2 * np.linalg.norm(half)),
                                                          rel=1e-3)


def test_local_gaussian_sums_noise_has_the_calibrated_spread():
    """Every record adds Gaussian noise calibrated to 2 ||h||: the total has sd sigma * sqrt(n)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(LOWER, UPPER, size=(50, 2))
    groups = rng.randint(0, N_GROUPS, size=50)
    _, truth = _exact_group_release(list(zip(X, groups)))
    sigma = gaussian_noise_scale(0.5, 1e-6, 2 * np.linalg.norm((UPPER - LOWER) / 2))
    res = np.concatenate([
        (noisy_group_sums(X, groups, N_GROUPS, bounds=(LOWER, UPPER), epsilon_count=0.5, epsilon_sum=0.5,
                          delta=1e-6, model="local", random_state=s)[1] - truth).ravel() for s in range(300)])
    assert np.std(res) == pytest.approx(sigma * math.sqrt(50), rel=0.05)


def test_private_kmeans_local_model_spends_what_it_reports():
    """The lifted sums of PrivateKMeans(privacy="local") are calibrated to the replaced-record sensitivity."""
    from sklearn_icml.cluster import PrivateKMeans

    # 2-D: Laplace sums (more accurate there); 12-D: Gaussian sums (more accurate in high dimension)
    for d, mechanism in ((2, "laplace"), (12, "gaussian")):
        X = np.random.RandomState(1).uniform(-1, 1, size=(300, d))
        worst = 2.0 * (d if mechanism == "laplace" else math.sqrt(d))  # opposite corners of [-1, 1]^d
        for algorithm in ("greedy", "lloyd"):
            km = PrivateKMeans(2, epsilon=1.0, delta=1e-6, bounds=(-1, 1), privacy="local", algorithm=algorithm,
                               random_state=0).fit(X)
            sums = [e for e in km.privacy_ledger_ if "sums" in e["label"]]
            assert sums and all(e["mechanism"] == mechanism for e in sums)
            for e in sums:
                assert e["sensitivity"] >= worst - 1e-12
                eps, delta = e["epsilon"] / e["count"], e["delta"] / e["count"]
                if mechanism == "gaussian":
                    assert e["scale"] >= gaussian_noise_scale(eps, delta, worst) * (1 - 1e-12)
                else:
                    assert e["scale"] >= worst / eps * (1 - 1e-12)


# ------------------------------------------------------------------------------------------------
# histogram levels, continual counters, local hashing reports


def _level_count_vectors(points, n_levels):
    """Exact counts of every cell of every level 1..n_levels of the unit square, from the definition."""
    out = []
    for level in range(1, n_levels + 1):
        side = 2 ** level
        counts = np.zeros((side, side))
        for x, y in points:
            i, j = (min(int(np.floor(np.clip(v, 0, 1) * side)), side - 1) for v in (x, y))
            counts[i, j] += 1
        out.append(counts)
    return out


def test_tree_level_sensitivity_covers_the_brute_force_worst_case():
    from sklearn_icml.privacy import private_quadtree_histogram

    n_levels = 3
    D = [(0.1, 0.2), (0.8, 0.8), (0.55, 0.3)]
    grid = [(x, y) for x in (-0.2, 0.0, 0.3, 0.5, 0.99, 1.0, 1.4) for y in (0.0, 0.26, 0.5, 0.75, 1.0)]
    base = _level_count_vectors(D, n_levels)
    worst_level, worst_total = 0.0, 0.0
    for r in grid:
        new = _level_count_vectors(D + [r], n_levels)
        changes = [np.abs(a - b).sum() for a, b in zip(new, base)]
        worst_level, worst_total = max(worst_level, max(changes)), max(worst_total, sum(changes))
    hist = private_quadtree_histogram(np.array(D), bounds=(0, 1), n_levels=n_levels, epsilon=1.0, threshold=1.0,
                                      random_state=0)
    (entry,) = hist.ledger
    assert entry["sensitivity"] >= worst_level and entry["count"] == n_levels
    assert entry["sensitivity"] * entry["count"] >= worst_total
    assert entry["scale"] >= entry["sensitivity"] * entry["count"] / entry["epsilon"] * (1 - 1e-12)


def _prefix_nodes(t):
    """Aligned power-of-two blocks covering steps 0..t-1 (the dyadic decomposition, built independently)."""
    nodes, start = [], 0
    for height in range(64, -1, -1):
        size = 1 << height
        if start + size <= t and start % size == 0:
            nodes.append((height, start // size))
            start += size
    return nodes


@pytest.mark.parametrize("max_steps", [1, 5, 8, 13])
def test_continual_counter_sensitivity_covers_the_brute_force_worst_case(max_steps):
    from sklearn_icml.privacy import ContinualQuadtreeHistogram

    n_levels = 2
    released = {node for t in range(1, max_steps + 1) for node in _prefix_nodes(t)}
    # a record added at step s changes, at each of the n_levels + 1 levels, every released node containing s
    per_step = [sum(1 for h, i in released if i << h <= s < (i + 1) << h) for s in range(max_steps)]
    worst_counts = (n_levels + 1) * max(per_step)
    worst_sums_l1 = n_levels * max(per_step) * 3.0  # values with ||v||_1 <= 3, sums at levels 1..n_levels
    worst_sums_l2 = math.sqrt(n_levels * max(per_step)) * 2.0  # ||v||_2 <= 2
    for sum_delta, worst_sums in ((0.0, worst_sums_l1), (1e-6, worst_sums_l2)):
        stream = ContinualQuadtreeHistogram(2, n_levels, max_steps, 1.0, seed=0, sums=True, sum_epsilon=1.0,
                                            sum_delta=sum_delta, sum_sensitivity=2.0, sum_l1_sensitivity=3.0)
        counts, sums = stream.ledger
        assert counts["sensitivity"] >= worst_counts
        assert counts["scale"] >= counts["sensitivity"] / counts["epsilon"] * (1 - 1e-12)
        assert sums["sensitivity"] >= worst_sums * (1 - 1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 30.0])
def test_local_hashing_reports_are_epsilon_ldp(epsilon):
    """Each report keeps its bucket with probability p, else a uniform other bucket: ratio p (g-1) / (1-p)."""
    from sklearn_icml.privacy import olh_parameters
    from sklearn_icml.privacy._hashing import hash_np
    from sklearn_icml.privacy._local_hashing import olh_reports
    from sklearn_icml.utils._cells import pack_keys

    g, p = olh_parameters(epsilon)
    # the worst pair: two inputs whose hashes differ; the output is the bucket of one of them
    assert math.log(p / ((1 - p) / (g - 1))) <= epsilon * (1 + 1e-12)
    # the reports behave as stated: the same record reported 40000 times with fresh seeds and levels
    n_levels = 3
    Q = np.tile([[5, 2]], (40000, 1))
    level, seeds, buckets = olh_reports(Q, n_levels, epsilon, np.random.RandomState(0))
    keys = np.array([pack_keys(Q[:1] >> (n_levels - lv), lv)[0] for lv in level])
    true = hash_np(seeds, keys) % g
    kept = buckets == true
    assert abs(kept.mean() - p) < 4 * math.sqrt(p * (1 - p) / len(kept))
    if g <= 64 and (~kept).sum() > 1000:  # the others are uniform over the g - 1 other buckets
        shift = (buckets[~kept] - true[~kept]) % g
        freq = np.bincount(shift, minlength=g)[1:] / (~kept).sum()
        assert np.all(np.abs(freq - 1 / (g - 1)) < 5 * math.sqrt(1 / (g - 1) / (~kept).sum()) + 1e-3)
    assert np.all(np.bincount(level, minlength=n_levels + 1)[1:] > 12000)  # levels drawn independently of x
