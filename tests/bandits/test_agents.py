"""The dueling-bandit agents: the paper's BordaETC and BordaEXP3, the feature-free baselines, simulate."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.bandits import (
    DEXP3,
    BordaETC,
    BordaEXP3,
    ETCBorda,
    GLMDuelingEnv,
    PairwiseGLMClassifier,
    UniformDueling,
    simulate,
    simulation_scorer,
)

AGENTS = [
    BordaETC(link="linear"),
    BordaETC(link="linear", exploration="g_optimal"),
    BordaEXP3(),
    ETCBorda(),
    DEXP3(),
    UniformDueling(),
]


def _id(agent):
    return type(agent).__name__ + ("-g" if getattr(agent, "exploration", "") == "g_optimal" else "")


@pytest.fixture(scope="module")
def hard():
    return GLMDuelingEnv.hard_instance(d=4, delta=0.05, link="linear", random_state=0)


def _with_items(agent, env, horizon):
    params = agent.get_params()
    new = {"n_items": env.n_items} if "n_items" in params else dict(env.action_set)
    if "horizon" in params:
        new["horizon"] = horizon
    return clone(agent).set_params(**new)


# ---- the paper's estimates ----------------------------------------------------------------------------------
def test_bexp3_theta_estimate_is_unbiased_under_a_fixed_sampling_distribution():
    env = GLMDuelingEnv.random_instance(n_items=10, n_features=3, link="linear", random_state=0)
    agent = BordaEXP3(**env.action_set, eta=0.05, gamma=0.3, random_state=0)
    logged, outcomes = env.sample_duels(300, random_state=1)
    agent.update(logged[:, 0], logged[:, 1], outcomes)  # one batch, as if drawn from the uniform q_1
    q = agent.sampling_proba_.copy()
    assert np.abs(q - 0.1).max() > 0.02  # a sampling distribution far from uniform
    n = 100_000
    pairs = agent.select(n)
    r = (np.random.RandomState(2).random_sample(n) < env.preference_matrix()[pairs[:, 0], pairs[:, 1]]) * 1.0
    # the estimate, computed here from the definitions
    phi = env.pair_features
    Q = np.einsum("i,j,ijk,ijl->kl", q, q, phi, phi)
    per_round = np.linalg.solve(Q, (phi[pairs[:, 0], pairs[:, 1]] * r[:, None]).T).T
    mean, se = per_round.mean(axis=0), per_round.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(mean - env.theta) <= 3 * se), (mean, env.theta, se)
    # the agent's own batch estimate is the same sum, formed with q held fixed during the batch (coef_ is the
    # average of the per-round estimates over all duels)
    before = agent.coef_ * agent.n_duels_
    agent.update(pairs[:, 0], pairs[:, 1], r)
    np.testing.assert_allclose(agent.coef_ * agent.n_duels_ - before, per_round.sum(axis=0), rtol=1e-8)
    assert not np.allclose(agent.sampling_proba_, q)


def test_betc_fit_on_logged_duels_recovers_theta_and_the_winner(hard):
    pairs, y = hard.sample_duels(20_000, random_state=0)
    agent = BordaETC(**hard.action_set, link="linear")
    X = agent.duel_rows(pairs)
    np.testing.assert_array_equal(X, hard.pair_features[pairs[:, 0], pairs[:, 1]])
    agent.fit(X, y)
    assert np.abs(agent.coef_ - hard.theta).max() <= 0.05
    assert agent.best_item_ == hard.borda_winner()
    assert np.abs(agent.borda_scores_ - hard.borda_scores()).max() < 0.02
    # the linear model of the paper: P(i beats j) = 1/2 + phi_ij . theta
    proba = agent.predict_proba(X[:5])
    np.testing.assert_allclose(proba[:, 1], 0.5 + hard.pair_features[pairs[:5, 0], pairs[:5, 1]] @ agent.coef_)
    np.testing.assert_allclose(agent.decision_function(X[:5]), proba[:, 1] - 0.5)
    assert agent.score(X, y) == np.mean((proba_all := agent.predict_proba(X)[:, 1] > 0.5) == y)
    assert not hasattr(agent, "n_duels_") and proba_all.any()  # the online state is untouched


def test_feature_free_estimates_from_logged_duels(hard):
    pairs, y = hard.sample_duels(40_000, random_state=1)
    K = hard.n_items
    X = UniformDueling(n_items=K).duel_rows(pairs)  # one-hot rows e_i - e_j
    np.testing.assert_array_equal(X, np.eye(K)[pairs[:, 0]] - np.eye(K)[pairs[:, 1]])
    # the Borda counts, brute force: wins of each item in either position over its duels
    won = np.array([np.sum(y[pairs[:, 0] == k]) + np.sum(1 - y[pairs[:, 1] == k]) for k in range(K)])
    played = np.array([np.sum(pairs[:, 0] == k) + np.sum(pairs[:, 1] == k) for k in range(K)])
    for agent in (ETCBorda(), UniformDueling(), DEXP3(horizon=40_000)):
        fitted = clone(agent).fit(X, y)
        assert fitted.n_items_ == K  # one column per item
        np.testing.assert_allclose(fitted.borda_scores_, won / played)
        np.testing.assert_allclose(fitted.decision_function(X[:50]),
                                   (won / played)[pairs[:50, 0]] - (won / played)[pairs[:50, 1]])
    etc = ETCBorda().fit(X, y)
    assert np.abs(etc.borda_scores_ - hard.borda_scores()).max() < 0.03
    with pytest.raises(ValueError, match="dimension 5"):
        ETCBorda(n_items=5).fit(X, y)


# ---- explore-then-commit -----------------------------------------------------------------------------------
def test_betc_explores_then_commits(hard):
    T = 10_000
    agent = BordaETC(**hard.action_set, horizon=T, link="linear", random_state=0)
    pairs = agent.select(50)
    assert agent.n_explore_ == int(np.ceil(5 ** (2 / 3) * T ** (2 / 3)))
    np.testing.assert_array_equal(pairs, agent.exploration_pairs_[:50])
    res = simulate(agent, hard, T, random_state=0)
    fitted = res.agent
    n = fitted.n_explore_
    assert fitted.phase_ == "commit"
    assert np.all(res.pairs[n:] == fitted.best_item_)
    assert fitted.best_item_ == hard.borda_winner()
    assert not np.all(res.pairs[:n, 0] == res.pairs[:n, 1])


def test_g_optimal_exploration_only_plays_informative_pairs(hard):
    agent = BordaETC(**hard.action_set, horizon=20_000, exploration="g_optimal", burn_in=0.0, random_state=0)
    agent.select()
    pairs = agent.exploration_pairs_
    phi = hard.pair_features[pairs[:, 0], pairs[:, 1]]
    assert np.all(np.any(phi != 0, axis=1))
    # the rounded design is still G-optimal: under the empirical second moment of the exploration duels no
    # pair feature has leverage above d = 5 (a half-fraction of the hypercube is as good as all of it)
    A = phi.T @ phi / len(phi)
    everything = hard.pair_features.reshape(-1, 5)
    assert np.einsum("ij,jk,ik->i", everything, np.linalg.inv(A), everything).max() <= 5 * 1.01
    with_burn_in = BordaETC(**hard.action_set, horizon=20_000, exploration="g_optimal", burn_in=0.5,
                            random_state=0)
    with_burn_in.select()
    assert with_burn_in.design_.shape == (16,) and np.isclose(with_burn_in.design_.sum(), 1.0)


def test_online_batches_equal_one_offline_fit(hard):
    pairs, y = hard.sample_duels(3000, random_state=2)
    offline = BordaETC(**hard.action_set, link="linear")
    offline.fit(offline.duel_rows(pairs), y)
    online = BordaETC(**hard.action_set, link="linear", n_explore=3000)
    for start in range(0, 3000, 700):
        batch = pairs[start:start + 700]
        online.update(batch[:, 0], batch[:, 1], y[start:start + 700])
    assert online.phase_ == "commit" and online.n_duels_ == 3000
    np.testing.assert_allclose(online.coef_, offline.coef_, rtol=1e-6)
    assert online.select() == (offline.best_item_, offline.best_item_)


# ---- the common interface ----------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", AGENTS, ids=_id)
def test_simulate_plays_exactly_the_select_update_loop(agent):
    env = GLMDuelingEnv.hard_instance(d=2, link="linear", random_state=0)
    T = 300
    res = simulate(clone(agent).set_params(random_state=5), env, T, random_state=7)
    manual = _with_items(agent, env, T).set_params(random_state=5)
    rng = np.random.RandomState(7)
    rng.randint(np.iinfo(np.int32).max)  # simulate draws a seed for seedless agents first
    P = env.preference_matrix()
    played = []
    for _ in range(T):
        i, j = manual.select()
        manual.update(i, j, int(rng.random_sample() < P[i, j]))
        played.append((i, j))
    np.testing.assert_array_equal(res.pairs, played)
    np.testing.assert_allclose(res.regret, np.cumsum(env.regret(np.array(played))))
    np.testing.assert_allclose(res.agent.borda_scores_, manual.borda_scores_)


@pytest.mark.parametrize("agent", AGENTS, ids=_id)
def test_seeded_clone_pickle_and_resume(agent, hard):
    a = _with_items(agent, hard, 2000).set_params(random_state=3)
    b = clone(a)
    assert not hasattr(b, "n_duels_")
    assert a.get_params()["random_state"] == 3
    first = a.select(100)
    np.testing.assert_array_equal(first, b.select(100))
    y = (np.arange(100) % 2).astype(float)
    a.update(first[:, 0], first[:, 1], y)
    b.update(first[:, 0], first[:, 1], y)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.select(50), c.select(50))
    rows = a.duel_rows(first)
    np.testing.assert_allclose(a.decision_function(rows), c.decision_function(rows))
    np.testing.assert_allclose(a.decision_function(rows), b.decision_function(rows))


def test_regret_bars_on_the_hard_instance(hard):
    # the bars at T = 10^4 (2 seeds here; 5 seeds and T up to 3 * 10^4 in benchmarks/bench_dueling.py)
    T = 10_000

    def final(agent):
        return np.mean([simulate(agent, hard, T, random_state=s).regret[-1] for s in range(2)])

    uniform, etc_borda = final(UniformDueling()), final(ETCBorda())
    betc = final(BordaETC(link="linear"))
    assert betc <= 0.2 * uniform and betc <= 0.8 * etc_borda
    # the exponential-weights agents update every round: one seed at T = 5000 keeps the test short
    bexp3, dexp3, uniform = (simulate(agent, hard, 5000, random_state=0).regret[-1]
                             for agent in (BordaEXP3(), DEXP3(), UniformDueling()))
    assert bexp3 <= 0.6 * uniform and bexp3 <= 0.9 * dexp3


def test_betc_regret_grows_like_t_to_the_two_thirds(hard):
    # the bar: log-log slope of the regret against T within [0.55, 0.75] (mean of 8 seeds)
    horizons = [1000, 3000, 10_000, 30_000]
    for exploration in ("uniform", "g_optimal"):
        agent = BordaETC(link="linear", exploration=exploration)
        regret = [np.mean([simulate(agent, hard, T, random_state=s).regret[-1] for s in range(8)]) for T in horizons]
        slope = np.polyfit(np.log(horizons), np.log(regret), 1)[0]
        assert 0.55 <= slope <= 0.75, (exploration, slope)


def test_bexp3_tracks_a_drifting_theta():
    env = GLMDuelingEnv.hard_instance(d=3, delta=0.08, link="linear", n_phases=2, phase_length=2500,
                                      random_state=0)
    T = 5000
    ours = simulate(BordaEXP3(eta_scale=4.0), env, T, random_state=0).regret[-1]
    uniform = simulate(UniformDueling(), env, T, random_state=0).regret[-1]
    assert ours < 0.8 * uniform


def test_large_number_of_items_with_item_features():
    env = GLMDuelingEnv.random_instance(n_items=1000, n_features=5, item_features=True, random_state=0)
    etc = simulate(BordaETC(), env, 100_000, random_state=0)
    assert etc.regret[-1] < 0.3 * 100_000 * (2 * env.borda_scores().max() - 1)
    exp3 = simulate(BordaEXP3(), env, 500, random_state=0)
    assert exp3.pairs.max() < 1000 and exp3.agent.sampling_proba_.shape == (1000,)


def test_grid_search_tunes_the_exploration_constant_against_the_simulator(hard):
    pairs, y = hard.sample_duels(60, random_state=0)
    scorer = simulation_scorer(hard, 5000, n_repeats=2, random_state=0)
    agent = BordaETC(**hard.action_set, horizon=5000, link="linear")
    X = agent.duel_rows(pairs)
    search = GridSearchCV(agent, {"c_explore": [0.02, 1.0]}, scoring=scorer, cv=2).fit(X, y)
    assert search.best_params_ == {"c_explore": 1.0}
    # common random numbers: the score of a candidate is the same in every split
    assert search.cv_results_["std_test_score"].max() == 0
    assert scorer(agent) == -np.mean([simulate(agent, hard, 5000, random_state=s).regret[-1]
                                      for s in np.random.RandomState(0).randint(np.iinfo(np.int32).max, size=2)])


def test_simulation_scorer_rates_a_pipelines_agent_as_the_bare_agent(hard):
    pairs, y = hard.sample_duels(60, random_state=0)
    scorer = simulation_scorer(hard, 3000, n_repeats=2, random_state=0)
    agent = BordaETC(**hard.action_set, horizon=3000, link="linear")
    X = agent.duel_rows(pairs)
    grid = [0.02, 1.0]
    bare = GridSearchCV(agent, {"c_explore": grid}, scoring=scorer, cv=2).fit(X, y)
    piped = GridSearchCV(make_pipeline(StandardScaler(), clone(agent)), {"bordaetc__c_explore": grid},
                         scoring=scorer, cv=2).fit(X, y)
    assert np.all(np.isfinite(piped.cv_results_["mean_test_score"]))
    seeds = np.random.RandomState(0).randint(np.iinfo(np.int32).max, size=2)
    for j, c in enumerate(grid):  # the direct computation: minus the mean final regret of the same simulations
        direct = -np.mean([simulate(clone(agent).set_params(c_explore=c), hard, 3000, random_state=s).regret[-1]
                           for s in seeds])
        assert piped.cv_results_["split0_test_score"][j] == direct
    np.testing.assert_array_equal(piped.cv_results_["mean_test_score"], bare.cv_results_["mean_test_score"])


@pytest.mark.parametrize("agent", AGENTS, ids=_id)
def test_an_agent_behind_a_scaler_in_a_pipeline_fits_and_scores_logged_duels(agent, hard):
    """The offline face: duel rows through a StandardScaler, scored by the accuracy of the predicted outcomes."""
    pairs, y = hard.sample_duels(2000, random_state=0)
    X = _with_items(agent, hard, 2000).duel_rows(pairs)
    train, test = slice(0, 1500), slice(1500, None)
    pipe = make_pipeline(StandardScaler(), clone(agent)).fit(X[train], y[train])
    Z = StandardScaler().fit(X[train]).transform(X[test])
    fitted = pipe[-1]
    # the score is the accuracy of sign(decision) as outcome, computed here from the fitted model
    expected = np.mean((Z @ fitted.coef_ > 0).astype(int) == y[test])
    assert pipe.score(X[test], y[test]) == pytest.approx(expected)
    assert expected > 0.55  # the hard instance's duels are nearly fair, yet the model beats a coin
    # without scoring=..., grid search rates candidates by this accuracy; simulation_scorer rates regret
    search = GridSearchCV(make_pipeline(StandardScaler(), clone(agent)), {}, cv=2).fit(X, y)
    assert 0.5 < search.best_score_ <= 1


def test_the_glm_agent_and_the_glm_classifier_agree_on_duel_rows(hard):
    pairs, y = hard.sample_duels(2000, random_state=3)
    agent = BordaETC(**hard.action_set)
    X = agent.duel_rows(pairs)
    peer = PairwiseGLMClassifier().fit(X, y)
    agent.fit(X, y)
    np.testing.assert_allclose(agent.coef_, peer.coef_[0], rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(agent.predict_proba(X), peer.predict_proba(X), rtol=1e-6)
    assert agent.score(X, y) == peer.score(X, y)


def test_repr_summarises_the_features_and_get_params_keeps_them():
    env = GLMDuelingEnv.hard_instance(d=5, random_state=0)  # 64 items, (64, 64, 6) pair features
    agent = BordaETC(**env.action_set, c_explore=2.0)
    text = repr(agent)
    assert text == "BordaETC(c_explore=2.0, pair_features=<array of shape (64, 64, 6), float64>)"
    assert str(agent) == text and len(text) < 120
    assert agent.get_params()["pair_features"] is env.action_set["pair_features"]
    np.testing.assert_array_equal(clone(agent).pair_features, env.action_set["pair_features"])
    # small arrays are still printed in full
    small = BordaEXP3(item_features=[[0.0, 1.0], [1.0, 0.0]])
    assert repr(small) == "BordaEXP3(item_features=[[0.0, 1.0], [1.0, 0.0]])"
    # the HTML repr of notebooks uses the same text fallback
    assert "(64, 64, 6)" in agent._repr_html_() and "-1., " not in agent._repr_html_()


# ---- errors ------------------------------------------------------------------------------------------------
def test_errors(hard):
    with pytest.raises(ValueError, match="pair_features"):
        BordaETC(horizon=10).select()
    with pytest.raises(ValueError, match="horizon"):
        BordaETC(**hard.action_set).select()
    with pytest.raises(ValueError, match="horizon"):
        BordaEXP3(**hard.action_set).select()
    with pytest.raises(ValueError, match="n_items"):
        DEXP3(horizon=10).select()
    agent = BordaETC(**hard.action_set, horizon=100)
    with pytest.raises(ValueError, match="duel_rows"):
        agent.fit(np.zeros((5, 3)), [0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="item indices"):
        agent.duel_rows([[0, 40]])
    with pytest.raises(ValueError, match="item indices"):
        agent.duel_rows([[0.5, 1]])
    with pytest.raises(ValueError, match="binary"):
        agent.fit(agent.duel_rows([[0, 1], [1, 2]]), [2, 2])
    with pytest.raises(ValueError, match="integers"):
        agent.update([0, 1], [1, 40], [1, 0])
    with pytest.raises(ValueError, match="outcome"):
        agent.update([0, 1], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="n_pairs"):
        agent.select(0)
    agent.select()
    with pytest.raises(ValueError, match="integers"):
        agent.update(0, 32, 1)
    with pytest.raises(ValueError, match="outcome"):
        agent.update(0, 1, 0.5)
    assert agent.update(0, 1, True).n_duels_ == 1
    with pytest.raises(ValueError, match="items"):
        simulate(ETCBorda(n_items=5), hard, 10)
    with pytest.raises(ValueError, match="agent"):
        simulate("agent", hard, 10)
    with pytest.raises(ValueError, match="exploration"):
        BordaETC(**hard.action_set, exploration="optimal").select()
    with pytest.raises(ValueError, match="antisymmetric"):
        BordaEXP3(pair_features=np.ones((3, 3, 2)), horizon=5).select()


# ---- BordaEXP3's constants ---------------------------------------------------------------------------------
def test_bexp3_tuned_constants_are_the_documented_multipliers_of_the_theory_formulas():
    env = GLMDuelingEnv.random_instance(n_items=32, n_features=4, link="logistic", random_state=0)
    T, K, d = 10_000, 32, 4
    theory = BordaEXP3(**env.action_set, horizon=T)
    tuned = BordaEXP3(**env.action_set, horizon=T, constants="tuned")
    theory.select()
    tuned.select()
    # the formulas, from the definitions: lambda_0 of the uniform design, eta, gamma
    phi = env.pair_features.reshape(-1, d)
    lambda0 = np.linalg.eigvalsh(phi.T @ phi / K ** 2)[0]
    eta = np.log(K) ** (2 / 3) * d ** (-1 / 3) * T ** (-2 / 3)
    assert theory.lambda0_ == pytest.approx(lambda0)
    assert theory.eta_ == pytest.approx(eta) and theory.gamma_ == pytest.approx(np.sqrt(eta * d / lambda0))
    assert tuned.eta_ == pytest.approx(10 * eta)
    assert tuned.gamma_ == pytest.approx(0.3 * np.sqrt(10 * eta * d / lambda0))
    # multipliers act on top, and explicit eta / gamma are left alone
    both = BordaEXP3(**env.action_set, horizon=T, constants="tuned", eta_scale=2.0)
    both.select()
    assert both.eta_ == pytest.approx(20 * eta)
    explicit = BordaEXP3(**env.action_set, eta=0.01, gamma=0.2, constants="tuned")
    explicit.select()
    assert (explicit.eta_, explicit.gamma_) == (0.01, 0.2)
    # why the theory constants are loose here: the exponent eta T (B* - mean B) stays small
    B = env.borda_scores()
    assert eta * T * (B.max() - B.mean()) < 3.5


def test_bexp3_tuned_constants_beat_the_theory_constants_on_the_random_logistic_instance():
    env = GLMDuelingEnv.random_instance(n_items=32, n_features=4, link="logistic", random_state=0)
    T = 5000
    regret = {name: np.mean([simulate(agent, env, T, random_state=s).regret[-1] for s in range(2)])
              for name, agent in [("theory", BordaEXP3()), ("tuned", BordaEXP3(constants="tuned")),
                                  ("uniform", UniformDueling())]}
    assert regret["theory"] > 0.7 * regret["uniform"]  # the loose constants stay near uniform play
    assert regret["tuned"] <= 0.6 * regret["uniform"]


@pytest.mark.parametrize("agent", AGENTS, ids=_id)
def test_item_index_pairs_given_to_fit_are_refused_by_an_agent_that_knows_its_items(agent):
    """Items in the plane give duel rows of two features, the shape of item-index pairs: the integer pairs of
    sample_duels (in range or not) are refused with the way to rows named; the same pairs through duel_rows fit."""
    items = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0], [2.0, 1.0]])
    env = GLMDuelingEnv.from_item_features(items, [0.5, -0.3])
    pairs, y = env.sample_duels(60, random_state=0)
    params = agent.get_params()
    fitted = clone(agent).set_params(**({"n_items": 2} if "n_items" in params else {"item_features": items}))
    if "n_items" in params:  # two items: their duel rows e_i - e_j have two columns too
        pairs = pairs % 2
        pairs[pairs[:, 0] == pairs[:, 1], 1] ^= 1
    rows = fitted.duel_rows(pairs)
    assert rows.shape == pairs.shape and rows.dtype.kind == "f"
    for bad, where in ((pairs, r"values in \[0, \d\]\)"), (np.vstack([pairs, [[0, 99]]]), r"outside the items")):
        with pytest.raises(ValueError, match=rf"{type(agent).__name__}\.fit: .*{where}.*duel_rows\(pairs\)"):
            clone(fitted).fit(bad, np.resize(y, len(bad)))
    reference = clone(fitted).fit(rows, y)
    if "n_items" in params:  # integer one-hot rows are duel rows, the same fit as their floats
        np.testing.assert_array_equal(clone(fitted).fit(rows.astype(int), y).coef_, reference.coef_)
    with pytest.raises(ValueError, match="item indices"):
        fitted.duel_rows([[0, 99]])
    with pytest.raises(ValueError, match="item indices"):
        fitted.duel_rows([[0.5, 1.0]])
