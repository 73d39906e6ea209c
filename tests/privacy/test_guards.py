"""Every public release guards itself: values beyond a declared sensitivity are clipped or refused, and the
extremes of the private estimators' parameters get clear ValueErrors."""

import numpy as np
import pytest


@pytest.mark.parametrize("delta", [1e-6, 0.0])
def test_continual_sums_clip_values_beyond_the_declared_sensitivity(delta):
    from sklearn_icml.privacy import ContinualQuadtreeHistogram
    from sklearn_icml.utils._cells import pack_keys, unit_cells

    U = np.array([[0.1, 0.1], [0.9, 0.9]])
    values = np.array([[1e6, 0.0], [0.3, -0.4]])  # the first is 1e6 times its declared bound
    stream = ContinualQuadtreeHistogram(2, 2, 4, epsilon=1e3, seed=0, sums=True, sum_epsilon=1e4, sum_delta=delta,
                                        sum_sensitivity=1.0, sum_l1_sensitivity=1.0, n_values=2)
    stream.add_step(U, values)
    keys = pack_keys(unit_cells(U, 2), 2)
    got = stream.sums(2, keys)
    # independent derivation: each row scaled to L2 <= 1 then L1 <= 1: [1, 0] and [0.3, -0.4] (L1 0.7) unchanged
    np.testing.assert_allclose(got, [[1.0, 0.0], [0.3, -0.4]], atol=0.05)
    # pre-summed tables that clipped values cannot give are refused
    tables = stream._steps[0]
    fresh = ContinualQuadtreeHistogram(2, 2, 4, epsilon=1.0, seed=0, sums=True, sum_epsilon=1.0, sum_delta=delta,
                                       sum_sensitivity=1.0, sum_l1_sensitivity=1.0, n_values=2)
    fresh.add_step_tables(*tables)
    inflated = [None] + [(k, v * 10.0) for k, v in tables[1][1:]]
    with pytest.raises(ValueError, match="exceeds its count times the declared per-record bound"):
        fresh.add_step_tables(tables[0], inflated)


# ------------------------------------------------------------------------------------------------
# extremes: booleans are not budgets, one epsilon range for every private estimator, clear accountant errors


def _estimators():
    from sklearn_icml.cluster import PrivateKMeans
    from sklearn_icml.generative import PrivateEvolution, PrivateEvolutionText

    return [PrivateKMeans(2, bounds=(-1, 1)), PrivateEvolution(4, n_iterations=2, bounds=(-1, 1)),
            PrivateEvolutionText(4, n_iterations=1, initial_population=["a b", "c d"])]


@pytest.mark.parametrize("epsilon", [True, False, np.bool_(True), 1e-300, 5e-4, 1e6 * (1 + 1e-12), 1e300,
                                     float("inf"), float("nan")])
def test_every_private_estimator_refuses_the_same_epsilons(epsilon):
    from sklearn.utils._param_validation import InvalidParameterError

    X = np.zeros((10, 2))
    for est in _estimators():
        with pytest.raises(InvalidParameterError, match=r"'epsilon' parameter of \w+ must be a float in the range "
                                                        r"\[0.001, 1000000.0\]"):
            est.set_params(epsilon=epsilon).fit(X if "Text" not in type(est).__name__ else ["a b"] * 10)


def test_the_range_ends_are_accepted():
    from sklearn_icml.cluster import PrivateKMeans
    from sklearn_icml.generative import PrivateEvolution

    X = np.random.RandomState(0).uniform(-1, 1, (50, 2))
    for epsilon in (1e-3, 1e6):
        assert PrivateKMeans(2, epsilon=epsilon, bounds=(-1, 1), random_state=0).fit(X).epsilon_spent_ <= epsilon
        pe = PrivateEvolution(4, n_iterations=2, epsilon=epsilon, bounds=(-1, 1), random_state=0).fit(X)
        assert pe.epsilon_spent_ <= epsilon


def test_booleans_are_not_budgets_in_the_toolkit():
    from sklearn.utils._param_validation import InvalidParameterError

    from sklearn_icml.privacy import Accountant, ledger_entry, private_bounds, split_budget

    for call in (lambda: private_bounds(np.zeros((3, 1)), True), lambda: split_budget(True, [1, 1]),
                 lambda: Accountant(epsilon=True), lambda: Accountant().spend(True),
                 lambda: ledger_entry("x", "laplace", epsilon=True, sensitivity=1.0, scale=1.0)):
        with pytest.raises(InvalidParameterError, match="epsilon|total"):
            call()


def test_accountant_extremes_name_the_parameter_and_the_range_that_works():
    from sklearn_icml.generative import PrivateEvolution
    from sklearn_icml.privacy import gaussian_rounds_epsilon, gaussian_rounds_noise_multiplier

    for accountant in ("pld", "rdp"):
        with pytest.raises(ValueError, match=r"noise_multiplier=1e-200 over 11 rounds .* range that works is "
                                             r"noise_multiplier >= 3.32e-150"):
            gaussian_rounds_epsilon(1e-200, 11, 1e-6, accountant=accountant)
    with pytest.raises(ValueError, match=r"PrivateEvolution: noise_multiplier=1e-300 .* range that works"):
        PrivateEvolution(noise_multiplier=1e-300, bounds=(-1, 1)).fit(np.zeros((10, 2)))
    with pytest.raises(ValueError, match=r"noise_multiplier=0.0001 spends epsilon=.* beyond the private "
                                         r"estimators' cap of 1e\+06; the range that works is "
                                         r"noise_multiplier >= "):
        PrivateEvolution(noise_multiplier=1e-4, bounds=(-1, 1)).fit(np.zeros((10, 2)))
    # small epsilons the PLD accountant used to miss by its discretisation are certified: the multiplier returned
    # spends at most epsilon by the same accountant, and by the exact analytic Gaussian of the composition
    import dp_accounting

    for epsilon in (1e-6, 2.7e-4):
        sigma = gaussian_rounds_noise_multiplier(epsilon, 1e-6, 11)
        assert gaussian_rounds_epsilon(sigma, 11, 1e-6) <= epsilon
        assert dp_accounting.get_epsilon_gaussian(sigma / np.sqrt(11), 1e-6) <= epsilon
