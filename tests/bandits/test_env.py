"""GLMDuelingEnv: preferences, Borda scores, Borda regret, the hard instance, drift."""

import pickle

import numpy as np
import pytest

from sklearn_icml.bandits import GLMDuelingEnv


@pytest.mark.parametrize("link", ["linear", "logistic", "probit"])
def test_preferences_are_consistent(link):
    env = GLMDuelingEnv.random_instance(n_items=12, n_features=3, link=link, random_state=0)
    P = env.preference_matrix()
    np.testing.assert_allclose(P + P.T, 1.0)
    np.testing.assert_allclose(np.diag(P), 0.5)
    B = env.borda_scores()
    np.testing.assert_allclose(B, P.mean(axis=1))
    assert np.isclose(B.mean(), 0.5)
    assert env.borda_winner() == np.argmax(B)


def test_hard_instance_structure():
    d, delta = 4, 0.05
    env = GLMDuelingEnv.hard_instance(d=d, delta=delta, link="linear", random_state=1)
    K = 2 ** (d + 1)
    assert (env.n_items, env.n_features) == (K, d + 1)
    phi = env.pair_features
    np.testing.assert_allclose(phi, -phi.transpose(1, 0, 2))
    informative = np.any(phi != 0, axis=2)
    assert informative.sum() == 2 * (K // 2) ** 2  # only good-versus-bad duels carry features
    B = np.sort(env.borda_scores())
    # winner 1/2 + (delta d + 1/4) / 2, runner-up delta below, bad items 1/2 - 1/8
    assert np.isclose(B[-1], 0.5 + (delta * d + 0.25) / 2)
    assert np.isclose(B[-1] - B[-2], delta)
    assert np.isclose(B[0], 0.375)
    # the winner is a good item: it has informative duels; uniform play costs 2 (B* - 1/2) per round
    winner = env.borda_winner()
    assert informative[winner].any()
    pairs = np.random.RandomState(0).randint(K, size=(20000, 2))
    assert abs(env.regret(pairs).mean() - 2 * (B[-1] - 0.5)) < 0.01
    # the logistic variant: good beats bad with probability ~3/4 (log 3 offset), runner-up gap ~0.0087
    logistic = np.sort(GLMDuelingEnv.hard_instance(d=4, link="logistic", random_state=1).borda_scores())
    assert abs(logistic[-1] - logistic[-2] - 0.0087) < 5e-4


def test_hard_instance_validation():
    with pytest.raises(ValueError, match="delta"):
        GLMDuelingEnv.hard_instance(d=4, delta=0.1, link="linear")
    GLMDuelingEnv.hard_instance(d=4, delta=0.1, link="logistic")  # any delta for the logistic link
    with pytest.raises(ValueError, match="phase_length"):
        GLMDuelingEnv.hard_instance(n_phases=2)


def test_regret_is_zero_for_the_winner_and_positive_otherwise():
    env = GLMDuelingEnv.random_instance(n_items=10, n_features=3, random_state=2)
    w = env.borda_winner()
    pairs = np.array([[w, w], [w, (w + 1) % 10], [(w + 1) % 10, (w + 2) % 10]])
    r = env.regret(pairs)
    assert r[0] == 0 and np.all(r[1:] > 0)
    with pytest.raises(ValueError, match="integers"):
        env.regret([[0, 10]])


def test_item_features_are_differences():
    rng = np.random.RandomState(0)
    X, theta = rng.standard_normal((6, 3)), rng.standard_normal(3)
    env = GLMDuelingEnv.from_item_features(X, theta, link="logistic")
    assert env.action_set.keys() == {"item_features"}
    np.testing.assert_allclose(env.pair_features[2, 4], X[2] - X[4])
    # BTL: transitive, the Borda order is the utility order
    assert np.array_equal(np.argsort(env.borda_scores()), np.argsort(X @ theta))
    full = GLMDuelingEnv(env.pair_features, theta)
    np.testing.assert_allclose(full.preference_matrix(), env.preference_matrix())


def test_random_pair_features_can_be_intransitive():
    env = GLMDuelingEnv.random_instance(n_items=20, n_features=3, random_state=0)
    beats = env.preference_matrix() > 0.5
    # a 3-cycle exists: i beats j, j beats k, k beats i
    assert np.trace(beats.astype(int) @ beats @ beats) > 0


def test_drift_and_best_item_in_hindsight():
    env = GLMDuelingEnv.random_instance(n_items=8, n_features=2, link="linear", n_phases=3, phase_length=10,
                                        random_state=0)
    assert env.n_phases == 3 and env.theta.shape == (3, 2)
    np.testing.assert_allclose(env.borda_scores(t=25), env.borda_scores(t=25 + 30))
    assert not np.allclose(env.borda_scores(t=25), env.borda_scores(t=5))
    B = np.stack([env.borda_scores(t) for t in range(45)])
    assert env.borda_winner(horizon=45) == np.argmax(B.sum(axis=0))
    pairs = np.random.RandomState(0).randint(8, size=(45, 2))
    best = env.borda_winner(horizon=45)
    np.testing.assert_allclose(env.regret(pairs), 2 * B[:, best] - B[np.arange(45), pairs[:, 0]]
                               - B[np.arange(45), pairs[:, 1]])


def test_linear_link_must_give_probabilities():
    with pytest.raises(ValueError, match="at most 1/2"):
        GLMDuelingEnv(np.array([[[0.0], [1.0]], [[-1.0], [0.0]]]), [1.0], link="linear")
    with pytest.raises(ValueError, match="scale"):
        GLMDuelingEnv.random_instance(link="linear", scale=1.0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="antisymmetric"):
        GLMDuelingEnv(np.ones((3, 3, 2)), [1.0, 0.0])
    with pytest.raises(ValueError, match="theta"):
        GLMDuelingEnv(np.zeros((3, 3, 2)), [1.0])
    with pytest.raises(ValueError, match="link"):
        GLMDuelingEnv(np.zeros((3, 3, 2)), [1.0, 0.0], link="cauchit")


def test_duels_are_seeded_and_pickle():
    env = GLMDuelingEnv.random_instance(n_items=5, n_features=2, random_state=0)
    X1, y1 = env.sample_duels(200, random_state=3)
    X2, y2 = pickle.loads(pickle.dumps(env)).sample_duels(200, random_state=3)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert np.all(X1[:, 0] != X1[:, 1])
    a = [GLMDuelingEnv.random_instance(n_items=5, n_features=2, random_state=0).duel(0, 1) for _ in range(2)]
    assert a[0] == a[1]
    # frequencies follow the preference matrix
    P = env.preference_matrix()
    X, y = env.sample_duels(40000, random_state=0)
    assert abs(y.mean() - P[X[:, 0], X[:, 1]].mean()) < 0.01


def test_make_glm_instance_draws_the_documented_instance():
    from sklearn_icml.datasets import make_glm_instance

    pair, theta = make_glm_instance(6, 3, random_state=0)
    iu = np.triu_indices(6, k=1)
    np.testing.assert_allclose(pair, -pair.transpose(1, 0, 2))  # phi_ji = -phi_ij
    np.testing.assert_allclose(np.linalg.norm(pair[iu], axis=-1), 1.0)  # unit pair features
    assert np.allclose(np.linalg.norm(theta), 2.0)  # the default scale of the logistic link
    items, thetas = make_glm_instance(6, 3, link="linear", item_features=True, n_phases=4, random_state=0)
    np.testing.assert_allclose(np.linalg.norm(items, axis=1), 0.5)
    np.testing.assert_allclose(np.linalg.norm(thetas, axis=1), 0.5)
    assert thetas.shape == (4, 3)
    with pytest.raises(ValueError, match="make_glm_instance: with the linear link scale must be at most 1/2"):
        make_glm_instance(link="linear", scale=1.0)
    # the environment is built from the same draws
    env = GLMDuelingEnv.random_instance(n_items=6, n_features=3, random_state=0)
    np.testing.assert_array_equal(env.pair_features, pair)
