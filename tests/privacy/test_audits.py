"""Empirical privacy audits of every noisy release, each shown to have power by a planted 2x overspend.

For each release: many seeded runs on the worst-case neighbouring pair (the pair its sensitivity is derived
from), a lower confidence bound on the privacy loss they show, and the same audit run on a planted version of
that very release that spends twice its budget (patched inside the test), which the audit must catch.

* Laplace releases (pure DP): the Clopper-Pearson bound on ``log(P_D1(E) / P_D(E))`` for the event ``E`` that
  achieves the privacy loss (``_audit_epsilon`` of ``test_privacy``): rigorous at confidence 95%.
* the exponential mechanism: the same bound on the event "the candidate the added record penalises is chosen".
* Gaussian releases: the shift of the worst pair over the noise's spread, ``mu``, with a lower confidence bound,
  turned into the epsilon at the release's delta by the Gaussian's exact privacy curve (the outputs' Gaussian
  shape is checked against the exact pmf in ``test_noise``).

Seeds are fixed, so every audit is deterministic; the run counts put the honest estimates well below the claimed
epsilon and the planted ones well above it.
"""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

import sklearn_icml.cluster._private_kmeans as pkm
import sklearn_icml.generative._pe_voting as pe_voting
import sklearn_icml.privacy._continual as continual
import sklearn_icml.privacy._quadtree as quadtree
import sklearn_icml.privacy._sums as sums_module
from sklearn_icml.cluster import PrivateKMeans
from sklearn_icml.generative import PrivateEvolution
from sklearn_icml.privacy import (
    ContinualQuadtreeHistogram,
    gaussian_delta,
    noisy_group_sums,
    private_quadtree_histogram,
)
from sklearn_icml.utils._cells import pack_keys

from .test_privacy import _audit_epsilon


def _gaussian_audit_epsilon(t_d, t_d1, delta, alpha=0.05):
    """Lower confidence bound on epsilon at ``delta`` from Gaussian outputs on a neighbouring pair.

    ``mu = |mean1 - mean0| / sd`` (pooled), its one-sided lower bound at level ``alpha`` (normal approximation,
    standard error ``sqrt(1/n0 + 1/n1 + mu**2 / (2 (n0 + n1)))``), then the epsilon at which a Gaussian of
    sensitivity 1 and noise ``1 / mu`` has exactly ``delta``.
    """
    t_d, t_d1 = np.asarray(t_d, float), np.asarray(t_d1, float)
    n0, n1 = len(t_d), len(t_d1)
    sd = math.sqrt((t_d.var(ddof=1) * (n0 - 1) + t_d1.var(ddof=1) * (n1 - 1)) / (n0 + n1 - 2))
    mu = abs(t_d1.mean() - t_d.mean()) / sd
    se = math.sqrt(1 / n0 + 1 / n1 + mu ** 2 / (2 * (n0 + n1)))
    mu_low = mu - stats.norm.ppf(1 - alpha) * se
    if mu_low <= 0 or gaussian_delta(1 / mu_low, 0.0) <= delta:
        return 0.0
    return brentq(lambda e: gaussian_delta(1 / mu_low, e) - delta, 0.0, 100.0)


# ------------------------------------------------------------------------------------------------
# tree counts (private_quadtree_histogram, central)


def _tree_corner_hits(X, seeds, epsilon):
    """One level: the far corner's noisy count; the event "count >= 1" carries the whole epsilon."""
    hits = 0
    for seed in seeds:
        hist = private_quadtree_histogram(X, bounds=(0, 1), n_levels=1, epsilon=epsilon, threshold=np.inf,
                                          random_state=seed)
        corner = (hist.cells[:, 0] == 1) & (hist.cells[:, 1] == 1)
        hits += int(hist.counts[corner][0] >= 1.0)
    return hits


def _audit_tree_counts(n_runs=400, epsilon=1.0):
    D = np.random.RandomState(0).uniform(0.0, 0.4, size=(30, 2))
    D1 = np.vstack([D, [[0.9, 0.9]]])  # one record added in the empty corner
    return _audit_epsilon(_tree_corner_hits(D, range(n_runs), epsilon),
                          _tree_corner_hits(D1, range(n_runs, 2 * n_runs), epsilon), n_runs)


def test_audit_tree_counts_and_catch_a_2x_overspend(monkeypatch):
    assert _audit_tree_counts() <= 1.0
    # the planted bug: the counts drawn at twice the budget the ledger reports
    real = quadtree.noisy_tree_counts
    monkeypatch.setattr(quadtree, "noisy_tree_counts",
                        lambda exact, n_levels, epsilon, rng: real(exact, n_levels, 2 * epsilon, rng))
    assert _audit_tree_counts() > 1.0


# ------------------------------------------------------------------------------------------------
# group sums (noisy_group_sums, central; Laplace and Gaussian)


def _group_sum_outputs(X, seeds, delta):
    return np.array([noisy_group_sums(X, np.zeros(len(X), dtype=int), 1, bounds=(-1, 1), epsilon_count=0.05,
                                      epsilon_sum=1.0, delta=delta, random_state=s)[1][0, 0] for s in seeds])


def _audit_group_sums(delta, n_runs):
    D = np.zeros((20, 1))
    D1 = np.vstack([D, [[1.0]]])  # a record at the box's corner: the sum moves by the half-width 1
    t_d, t_d1 = _group_sum_outputs(D, range(n_runs), delta), _group_sum_outputs(D1, range(n_runs, 2 * n_runs), delta)
    if delta:
        return _gaussian_audit_epsilon(t_d, t_d1, delta)
    return _audit_epsilon(int(np.sum(t_d >= 1.0)), int(np.sum(t_d1 >= 1.0)), n_runs)


@pytest.mark.parametrize("delta, n_runs", [(0.0, 400), pytest.param(1e-5, 800, marks=pytest.mark.slow)])
def test_audit_group_sums_and_catch_a_2x_overspend(monkeypatch, delta, n_runs):
    assert _audit_group_sums(delta, n_runs) <= 1.0
    # the planted bug: the sums' sensitivity derived at half its value, so the noise is half what it should be
    real = sums_module.box_sum_sensitivity
    monkeypatch.setattr(sums_module, "box_sum_sensitivity", lambda half, norm, model: real(half, norm, model) / 2)
    assert _audit_group_sums(delta, n_runs) > 1.0


# ------------------------------------------------------------------------------------------------
# the boosting step's exponential mechanism (PrivateKMeans._select_run)


def _choice_hits(X, seeds, epsilon):
    """Four candidate runs of one centre: candidate 0 at one corner of the box, the others at the opposite one."""
    km = PrivateKMeans(1, bounds=(-1, 1), n_repeats=4)
    km.bounds_ = (np.full(2, -1.0), np.full(2, 1.0))
    candidates = [np.array([[-1.0, -1.0]])] + [np.array([[1.0, 1.0]])] * 3
    return sum(km._select_run(X, candidates, epsilon, np.random.RandomState(s))[0] == 0 for s in seeds)


def _audit_exponential_choice(n_runs=1200, epsilon=1.0):
    D = np.zeros((1, 2))  # every candidate costs 2 on D
    D1 = np.vstack([D, [[1.0, 1.0]]])  # the record adds the squared diameter 8 to candidate 0's cost only
    # the event "candidate 0 is chosen" is likelier on D (ratio (3 + exp(-eps)) / (4 exp(-eps)): 0.83 at eps = 1,
    # 1.76 at twice that)
    hits_d1 = _choice_hits(D1, range(n_runs), epsilon)
    hits_d = _choice_hits(D, range(n_runs, 2 * n_runs), epsilon)
    return _audit_epsilon(hits_d1, hits_d, n_runs)


def test_audit_boosting_choice_and_catch_a_2x_overspend(monkeypatch):
    assert _audit_exponential_choice() <= 1.0
    real = pkm.exponential_choice
    monkeypatch.setattr(pkm, "exponential_choice",
                        lambda costs, sensitivity, epsilon, rng: real(costs, sensitivity, 2 * epsilon, rng))
    assert _audit_exponential_choice() > 1.0


# ------------------------------------------------------------------------------------------------
# continual counters (ContinualQuadtreeHistogram)


def _continual_hits(batch, seeds, epsilon):
    """One step, one level: the root and the far cell each carry half the budget; the event that both noisy counts
    reach the added record's contribution carries it all."""
    far = pack_keys(np.array([[1, 1]]), 1)
    hits = 0
    for seed in seeds:
        stream = ContinualQuadtreeHistogram(2, n_levels=1, max_steps=1, epsilon=epsilon, seed=seed)
        stream.add_step(batch)
        root = stream.counts(0, np.zeros(1, dtype=np.int64))[0]
        hits += int(root >= 21.0 and stream.counts(1, far)[0] >= 1.0)
    return hits


def _audit_continual(n_runs=800, epsilon=1.0):
    D = np.random.RandomState(1).uniform(0.0, 0.4, size=(20, 2))
    D1 = np.vstack([D, [[0.9, 0.9]]])
    return _audit_epsilon(_continual_hits(D, range(n_runs), epsilon),
                          _continual_hits(D1, range(n_runs, 2 * n_runs), epsilon), n_runs)


@pytest.mark.slow
def test_audit_continual_counts_and_catch_a_2x_overspend(monkeypatch):
    assert _audit_continual() <= 1.0
    real = continual.continual_count_sensitivity
    monkeypatch.setattr(continual, "continual_count_sensitivity", lambda *args: real(*args) / 2)
    assert _audit_continual() > 1.0


# ------------------------------------------------------------------------------------------------
# Private Evolution's voting histogram


def _pe_outputs(X, seeds, sigma_eps, entry):
    out = []
    for seed in seeds:
        pe = PrivateEvolution(n_synthetic=1, n_iterations=1, epsilon=1.0, delta=1e-5, threshold=0.0, lookahead=1,
                              initial_population=np.zeros((1, 1)), bounds=(-1, 1), random_state=seed)
        pe._sigma = lambda *budget: sigma_eps  # the accountant's answers, computed once below (they read no data)
        pe._ledger = lambda *args: entry
        out.append(pe.fit(X).histograms_[0][0])
    return np.array(out)


def _audit_private_evolution(n_runs=500):
    probe = PrivateEvolution(n_iterations=1, epsilon=1.0, delta=1e-5, bounds=(-1, 1))
    sigma_eps = probe._sigma(1.0, 1e-5)
    entry = probe._ledger(sigma_eps[0], 1.0, sigma_eps[1], 1e-5)
    D = np.zeros((60, 1))  # every record votes for the one synthetic point: its count is 60, far from clipping
    D1 = np.vstack([D, [[0.0]]])
    t_d = _pe_outputs(D, range(n_runs), sigma_eps, entry)
    t_d1 = _pe_outputs(D1, range(n_runs, 2 * n_runs), sigma_eps, entry)
    assert min(t_d.min(), t_d1.min()) > 0  # no clipping: the outputs are the noisy counts themselves
    return _gaussian_audit_epsilon(t_d, t_d1, 1e-5)


@pytest.mark.slow
def test_audit_private_evolution_histogram_and_catch_a_2x_overspend(monkeypatch):
    assert _audit_private_evolution() <= 1.0
    real = pe_voting.gaussian_on_grid
    monkeypatch.setattr(pe_voting, "gaussian_on_grid", lambda sigma: real(sigma / 2))
    assert _audit_private_evolution() > 1.0
