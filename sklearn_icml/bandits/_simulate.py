"""Play an agent against a simulated dueling bandit; score agents' hyper-parameters by simulation."""

import time
from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.utils import Bunch, check_random_state

from ..utils._pipeline import final_step
from ..utils._sklearn_private import Interval, validate_params
from ._base import _BaseAgent, _FeatureAgent, _FeatureFreeAgent
from ._env import GLMDuelingEnv, _Oracle

__all__ = ["simulate", "simulation_scorer"]


def _prepare(agent, env, horizon, rng):
    """A clone of ``agent`` given the environment's items, the horizon and a seed where it has none."""
    if not isinstance(agent, _BaseAgent):
        raise TypeError(f"simulate: agent must be one of the dueling agents of sklearn_icml.bandits (BordaETC, "
                        f"BordaEXP3, ETCBorda, DEXP3, UniformDueling); got {type(agent).__name__}.")
    agent = clone(agent)
    params = agent.get_params(deep=False)
    new = {}
    if isinstance(agent, _FeatureAgent):
        if params["pair_features"] is None and params["item_features"] is None:
            new.update(env.action_set)
    elif isinstance(agent, _FeatureFreeAgent) and params["n_items"] is None:
        new["n_items"] = env.n_items
    if "horizon" in params and params["horizon"] is None:
        new["horizon"] = horizon
    seed = rng.randint(np.iinfo(np.int32).max)
    if params.get("random_state") is None:
        new["random_state"] = seed
    agent.set_params(**new)
    agent._validate_params()
    agent._start()
    if agent.n_items_ != env.n_items:
        raise ValueError(f"simulate: the agent has {agent.n_items_} items but the environment has {env.n_items}.")
    if isinstance(agent, _FeatureAgent) and agent.n_features_ != env.n_features:
        raise ValueError(f"simulate: the agent's pair features have {agent.n_features_} dimensions but the "
                         f"environment's have {env.n_features}.")
    return agent


@validate_params(
    {
        "agent": [_BaseAgent],
        "env": [GLMDuelingEnv],
        "horizon": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def simulate(agent, env, horizon, random_state=None):
    """Play a dueling-bandit agent against an environment for ``horizon`` rounds.

    A clone of ``agent`` is started (its fitted state, if any, is ignored),
    given the environment's items when it has none (``pair_features`` or
    ``item_features``, or ``n_items``), the horizon when its ``horizon`` is
    None, and a seed drawn from ``random_state`` when its ``random_state`` is
    None. It then plays: in each round it proposes a pair, the environment
    draws the outcome, and the agent learns from it. Rounds in which the
    policy cannot change (exploration schedules, commitment) are played in
    vectorised blocks, so explore-then-commit agents run ``T = 10^6`` in well
    under a second; the exponential-weights agents update every round.

    Parameters
    ----------
    agent : BordaETC, BordaEXP3, ETCBorda, DEXP3 or UniformDueling
        The agent (not modified).
    env : GLMDuelingEnv
        The environment.
    horizon : int
        Number of rounds ``T``.
    random_state : int, RandomState instance or None, default=None
        Seeds the outcomes (and the agent when it has no seed of its own).

    Returns
    -------
    result : :class:`~sklearn.utils.Bunch`
        With ``regret`` (ndarray of shape (horizon,), the cumulative Borda
        regret after each round), ``pairs`` (ndarray of shape (horizon, 2)),
        ``outcomes`` (ndarray of shape (horizon,), 1 where the first item
        won), ``agent`` (the played clone, fitted), ``best_item`` (the
        environment's Borda winner over the horizon) and ``seconds`` (wall
        time of the play).

    See Also
    --------
    simulation_scorer : A scorer running this simulation, for GridSearchCV.

    Examples
    --------
    >>> from sklearn_icml.bandits import BordaETC, GLMDuelingEnv, UniformDueling, simulate
    >>> env = GLMDuelingEnv.random_instance(n_items=16, n_features=3, random_state=0)
    >>> result = simulate(BordaETC(random_state=0), env, horizon=3000, random_state=0)
    >>> result.regret.shape, result.pairs.shape
    ((3000,), (3000, 2))
    >>> round(float(result.regret[-1])), round(float(simulate(UniformDueling(), env, 3000, random_state=0).regret[-1]))
    (210, 739)
    """
    rng = check_random_state(random_state)
    agent = _prepare(agent, env, horizon, rng)
    oracle = _Oracle(env, rng)
    start = time.perf_counter()
    pairs, outcomes = agent._run(int(horizon), oracle)
    seconds = time.perf_counter() - start
    regret = np.cumsum(env.regret(pairs, horizon=horizon))
    return Bunch(regret=regret, pairs=pairs, outcomes=outcomes, agent=agent,
                 best_item=env.borda_winner(horizon), seconds=seconds)


class _SimulationScorer:
    """Callable ``scorer(estimator, X=None, y=None)``: minus the mean final regret of simulations."""

    def __init__(self, env, horizon, n_repeats, random_state, normalize):
        self.env = env
        self.horizon = horizon
        self.n_repeats = n_repeats
        self.random_state = random_state
        self.normalize = normalize

    def __call__(self, estimator, X=None, y=None):
        seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max, size=self.n_repeats)
        agent, _ = final_step(estimator)  # the simulation uses no data: a Pipeline's agent is its last step
        finals = [simulate(agent, self.env, self.horizon, random_state=int(s)).regret[-1] for s in seeds]
        value = float(np.mean(finals))
        return -(value / self.horizon if self.normalize else value)

    def __repr__(self):
        return (f"simulation_scorer({self.env!r}, horizon={self.horizon}, n_repeats={self.n_repeats}, "
                f"random_state={self.random_state!r})")


@validate_params(
    {
        "env": [GLMDuelingEnv],
        "horizon": [Interval(Integral, 1, None, closed="left")],
        "n_repeats": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "normalize": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def simulation_scorer(env, horizon, *, n_repeats=1, random_state=0, normalize=False):
    """A scorer that rates an agent's hyper-parameters by simulating it against ``env``.

    The scorer ignores the data it is given: ``scorer(agent, X, y)`` runs
    :func:`simulate` ``n_repeats`` times (seeds drawn from ``random_state``,
    the same for every candidate, so candidates are compared on common
    random numbers) and returns minus the mean final Borda regret, so that
    higher is better. Use it with :class:`~sklearn.model_selection.GridSearchCV`
    to tune ``c_explore``, ``eta_scale``, ``gamma_scale``, ...: this tunes
    the agent **against a simulator**, not on logged data; the duels passed
    to ``GridSearchCV.fit`` only go through the agent's ``fit`` (which the
    simulation then ignores). A :class:`~sklearn.pipeline.Pipeline` is rated
    by simulating its last step.

    Parameters
    ----------
    env : GLMDuelingEnv
        The simulated environment.
    horizon : int
        Rounds per simulation.
    n_repeats : int, default=1
        Simulations per evaluation.
    random_state : int, RandomState instance or None, default=0
        Seeds of the simulations (an int keeps them equal across candidates).
    normalize : bool, default=False
        Divide the regret by ``horizon`` (average regret per round).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X=None, y=None) -> float``, minus the mean regret.

    See Also
    --------
    simulate : The simulation the scorer runs.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_icml.bandits import BordaETC, GLMDuelingEnv, simulation_scorer
    >>> env = GLMDuelingEnv.hard_instance(d=3, random_state=0)
    >>> agent = BordaETC(**env.action_set, horizon=3000)
    >>> pairs, y = env.sample_duels(40, random_state=0)  # the folds only satisfy the API
    >>> search = GridSearchCV(agent, {"c_explore": [0.1, 1.0]},
    ...                       scoring=simulation_scorer(env, 3000, n_repeats=2), cv=2)
    >>> search.fit(agent.duel_rows(pairs), y).best_params_
    {'c_explore': 1.0}
    """
    return _SimulationScorer(env, int(horizon), int(n_repeats), random_state, normalize)
