"""Feature-free baselines: uniform pairs, explore-then-commit on empirical Borda scores, and DEXP3."""

import math
from numbers import Integral, Real

import numpy as np

from ..utils._sklearn_private import Interval, StrOptions
from ._base import _check_horizon, _FeatureFreeAgent
from ._borda_exp3 import _draw, _exp_weights

__all__ = ["DEXP3", "ETCBorda", "UniformDueling"]


class UniformDueling(_FeatureFreeAgent):
    """Duel uniformly random pairs forever (the no-learning baseline).

    Every round draws both items independently and uniformly, so the Borda
    regret grows linearly, ``T (2 B(i*) - 1)``. The agent still estimates
    the Borda scores empirically (each item's share of wins against its
    uniformly drawn opponents), which is a consistent estimate for a final
    recommendation.

    Read more in the :ref:`User Guide <bandits>`.

    Parameters
    ----------
    n_items : int, default=None
        Number of items ``K``; :func:`simulate` takes it from the environment,
        :meth:`fit` from the width of the one-hot duel rows when None.
    random_state : int, RandomState instance or None, default=None
        Seeds the pairs (``random_state_``).

    Attributes
    ----------
    n_items_ : int
        Number of items.
    borda_scores_ : ndarray of shape (`n_items_`,)
        Empirical Borda scores (1/2 for items never played).
    best_item_ : int
        The item with the largest empirical Borda score.
    duel_counts_ : ndarray of shape (`n_items_`, `n_items_`)
        Number of duels observed for each ordered pair.
    duel_wins_ : ndarray of shape (`n_items_`, `n_items_`)
        Wins of the first item for each ordered pair.
    n_duels_ : int
        Duels observed.
    random_state_ : numpy.random.RandomState
        The agent's random stream.
    n_features_in_ : int
        Width of the duel rows: ``n_items_`` (one-hot rows ``e_i - e_j``).
    classes_ : ndarray of shape (2,)
        The two outcome labels (``[0, 1]`` online; the labels of ``y`` after :meth:`fit`).
    coef_ : ndarray of shape (`n_features_in_`,)
        The duel model ``B_hat - 1/2`` per item: ``P(i beats j) = 1/2 + coef_[i] - coef_[j]``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when X had string column names.

    See Also
    --------
    ETCBorda : Explore uniformly, then commit.
    BordaETC : Explore-then-commit with pair features.

    Notes
    -----
    Item ``i`` is credited with ``r`` when it played first and ``1 - r`` when
    it played second; with uniform opponents (self-duels included) both are
    unbiased samples of ``B(i)``.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", Proceedings of the
       41st International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn_icml.bandits import GLMDuelingEnv, UniformDueling, simulate
    >>> env = GLMDuelingEnv.hard_instance(d=3, random_state=0)
    >>> result = simulate(UniformDueling(random_state=0), env, horizon=1000, random_state=0)
    >>> round(float(result.regret[-1]))
    399
    """

    def __init__(self, n_items=None, *, random_state=None):
        self.n_items = n_items
        self.random_state = random_state

    def _select_pairs(self, n):
        return self._uniform_pairs(n)

    def _fixed_rounds(self):
        return np.inf


class ETCBorda(_FeatureFreeAgent):
    """Explore uniformly, then commit to the empirical Borda winner (feature-free ETC).

    The agent duels uniformly random pairs for ``n_explore`` rounds,
    estimates each item's Borda score as its share of wins against its
    uniformly drawn opponents, and then plays ``(i_hat, i_hat)`` for the
    rest of the horizon. With ``n_explore`` of order
    ``(K log K)^{1/3} T^{2/3}`` the regret is ``O~(K^{1/3} T^{2/3})``: the
    baseline that ignores features, against which :class:`BordaETC` trades
    ``K`` for the feature dimension ``d``.

    Read more in the :ref:`User Guide <bandits>`.

    Parameters
    ----------
    n_items : int, default=None
        Number of items ``K``; :func:`simulate` takes it from the environment,
        :meth:`fit` from the width of the one-hot duel rows when None.
    horizon : int, default=None
        The horizon ``T``, needed by ``n_explore="auto"``.
    n_explore : "auto" or int, default="auto"
        Exploration rounds; ``"auto"`` is
        ``ceil(c_explore (K log K)^{1/3} T^{2/3})`` (capped at ``T``).
    c_explore : float, default=1.0
        The constant of the automatic exploration length.
    random_state : int, RandomState instance or None, default=None
        Seeds the exploration pairs (``random_state_``).

    Attributes
    ----------
    n_items_ : int
        Number of items.
    n_explore_ : int
        Exploration rounds.
    phase_ : {"explore", "commit"}
        Where the agent stands.
    borda_scores_ : ndarray of shape (`n_items_`,)
        Empirical Borda scores (1/2 for items never played).
    best_item_ : int
        The estimated Borda winner (the committed item after the commit).
    duel_counts_ : ndarray of shape (`n_items_`, `n_items_`)
        Number of duels observed for each ordered pair.
    duel_wins_ : ndarray of shape (`n_items_`, `n_items_`)
        Wins of the first item for each ordered pair.
    n_duels_ : int
        Duels observed.
    random_state_ : numpy.random.RandomState
        The agent's random stream.
    n_features_in_ : int
        Width of the duel rows: ``n_items_`` (one-hot rows ``e_i - e_j``).
    classes_ : ndarray of shape (2,)
        The two outcome labels (``[0, 1]`` online; the labels of ``y`` after :meth:`fit`).
    coef_ : ndarray of shape (`n_features_in_`,)
        The duel model ``B_hat - 1/2`` per item: ``P(i beats j) = 1/2 + coef_[i] - coef_[j]``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when X had string column names.

    See Also
    --------
    BordaETC : The same scheme with pair features and a GLM estimate.
    DEXP3 : Feature-free exponential weights.

    Notes
    -----
    The feature-free explore-then-commit baseline of the paper's experiments
    (after Saha et al., 2021). Assumption: the exploration length
    ``(K log K)^{1/3} T^{2/3}`` with constant 1 (the order of the
    ``K``-armed lower bound); exploration pairs are uniform over ``[K]^2``.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", Proceedings of the
       41st International Conference on Machine Learning (ICML), PMLR 235, 2024.
    .. [2] A. Saha, T. Koren and Y. Mansour, "Adversarial Dueling Bandits",
       ICML 2021.

    Examples
    --------
    >>> from sklearn_icml.bandits import ETCBorda, GLMDuelingEnv, simulate
    >>> env = GLMDuelingEnv.hard_instance(d=3, random_state=0)
    >>> result = simulate(ETCBorda(random_state=0), env, horizon=5000, random_state=0)
    >>> result.agent.n_explore_
    1036
    """

    _parameter_constraints = {
        **_FeatureFreeAgent._parameter_constraints,
        "horizon": [Interval(Integral, 1, None, closed="left"), None],
        "n_explore": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "c_explore": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, n_items=None, *, horizon=None, n_explore="auto", c_explore=1.0, random_state=None):
        self.n_items = n_items
        self.horizon = horizon
        self.n_explore = n_explore
        self.c_explore = c_explore
        self.random_state = random_state

    def _init_policy(self):
        K = self.n_items_
        if self.n_explore == "auto":
            T = _check_horizon(self, 'n_explore="auto"')
            n = math.ceil(self.c_explore * (K * math.log(K)) ** (1 / 3) * T ** (2 / 3))
        else:
            n = int(self.n_explore)
        self.n_explore_ = n if self.horizon is None else min(n, int(self.horizon))
        self.phase_ = "explore"

    def _select_pairs(self, n):
        if self.phase_ == "commit":
            return np.full((n, 2), self.best_item_, dtype=np.intp)
        return self._uniform_pairs(n)

    def _fixed_rounds(self):
        return np.inf if self.phase_ == "commit" else max(1, self.n_explore_ - self.n_duels_)

    def _update_policy(self, pairs, outcomes):
        if self.phase_ == "explore" and self.n_duels_ >= self.n_explore_:
            self._commit()

    def _commit(self):
        self._committed_scores = self._borda_estimate()
        self.phase_ = "commit"
        self.best_item_ = int(np.argmax(self._committed_scores))

    def _borda_estimate(self):
        # frozen at the commit: the (i_hat, i_hat) duels that follow carry no information
        if getattr(self, "phase_", "explore") == "commit":
            return self._committed_scores
        return super()._borda_estimate()


class DEXP3(_FeatureFreeAgent):
    """Dueling EXP3: exponential weights on importance-weighted Borda estimates (feature-free).

    Both items are drawn independently from ``q_t = (1 - gamma) q~_t +
    gamma / K`` with exponential weights ``q~_t(i) ~ exp(eta sum_{s<t}
    b_hat_s(i))``, and the winner of the duel is credited with the unbiased
    Borda estimate ``b_hat_t(i) = 1{i_t = i} r_t / (K q_t(i) q_t(j_t))``. Its
    regret is ``O~((K log K)^{1/3} T^{2/3})`` against an adaptive adversary:
    :class:`BordaEXP3` is the same loop with pair features.

    Read more in the :ref:`User Guide <bandits>`.

    Parameters
    ----------
    n_items : int, default=None
        Number of items ``K``; :func:`simulate` takes it from the environment,
        :meth:`fit` from the width of the one-hot duel rows when None.
    horizon : int, default=None
        The horizon ``T``, needed by ``eta="auto"``.
    eta : "auto" or float, default="auto"
        Learning rate; ``"auto"`` is ``(log K)^{2/3} K^{-1/3} T^{-2/3}``.
    gamma : "auto" or float, default="auto"
        Uniform-mixing weight; ``"auto"`` is ``sqrt(eta K)`` (capped at 1).
    eta_scale : float, default=1.0
        Multiplier applied to ``eta``.
    gamma_scale : float, default=1.0
        Multiplier applied to ``gamma`` (the result is capped at 1).
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling of the pairs (``random_state_``).

    Attributes
    ----------
    n_items_ : int
        Number of items.
    eta_ : float
        The learning rate used.
    gamma_ : float
        The uniform-mixing weight used.
    cumulative_scores_ : ndarray of shape (`n_items_`,)
        ``sum_s b_hat_s(i)``.
    sampling_proba_ : ndarray of shape (`n_items_`,)
        The current sampling distribution ``q_t``.
    borda_scores_ : ndarray of shape (`n_items_`,)
        Average estimated Borda scores, ``cumulative_scores_ / n_duels_``.
    best_item_ : int
        The item with the largest cumulative estimate.
    duel_counts_ : ndarray of shape (`n_items_`, `n_items_`)
        Number of duels observed for each ordered pair.
    duel_wins_ : ndarray of shape (`n_items_`, `n_items_`)
        Wins of the first item for each ordered pair.
    n_duels_ : int
        Duels observed.
    random_state_ : numpy.random.RandomState
        The agent's random stream.
    n_features_in_ : int
        Width of the duel rows: ``n_items_`` (one-hot rows ``e_i - e_j``).
    classes_ : ndarray of shape (2,)
        The two outcome labels (``[0, 1]`` online; the labels of ``y`` after :meth:`fit`).
    coef_ : ndarray of shape (`n_features_in_`,)
        The duel model ``B_hat - 1/2`` per item: ``P(i beats j) = 1/2 + coef_[i] - coef_[j]``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when X had string column names.

    See Also
    --------
    BordaEXP3 : The same loop with pair features.
    ETCBorda : Feature-free explore-then-commit.

    Notes
    -----
    Algorithm 1 of Saha, Koren and Mansour (2021) as recalled: parameters
    ``eta = (log K)^{2/3} K^{-1/3} T^{-2/3}`` and ``gamma = sqrt(eta K)``;
    the multipliers are ours. A batch given to :meth:`update` is treated
    as drawn from the current ``q_t`` held fixed.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", Proceedings of the
       41st International Conference on Machine Learning (ICML), PMLR 235, 2024.
    .. [2] A. Saha, T. Koren and Y. Mansour, "Adversarial Dueling Bandits",
       ICML 2021.

    Examples
    --------
    >>> from sklearn_icml.bandits import DEXP3, GLMDuelingEnv, simulate
    >>> env = GLMDuelingEnv.hard_instance(d=3, random_state=0)
    >>> result = simulate(DEXP3(horizon=2000, random_state=0), env, horizon=2000, random_state=0)
    >>> round(result.agent.eta_, 4), round(result.agent.gamma_, 3)
    (0.0049, 0.281)
    """

    _parameter_constraints = {
        **_FeatureFreeAgent._parameter_constraints,
        "horizon": [Interval(Integral, 1, None, closed="left"), None],
        "eta": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "gamma": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="right")],
        "eta_scale": [Interval(Real, 0, None, closed="neither")],
        "gamma_scale": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, n_items=None, *, horizon=None, eta="auto", gamma="auto", eta_scale=1.0, gamma_scale=1.0,
                 random_state=None):
        self.n_items = n_items
        self.horizon = horizon
        self.eta = eta
        self.gamma = gamma
        self.eta_scale = eta_scale
        self.gamma_scale = gamma_scale
        self.random_state = random_state

    def _init_policy(self):
        K = self.n_items_
        if self.eta == "auto":
            T = _check_horizon(self, 'eta="auto"')
            eta = math.log(K) ** (2 / 3) * K ** (-1 / 3) * T ** (-2 / 3)
        else:
            eta = float(self.eta)
        self.eta_ = eta * self.eta_scale
        gamma = math.sqrt(self.eta_ * K) if self.gamma == "auto" else float(self.gamma)
        self.gamma_ = min(1.0, gamma * self.gamma_scale)
        self.cumulative_scores_ = np.zeros(K)
        self.sampling_proba_ = np.full(K, 1.0 / K)

    def _select_pairs(self, n):
        u = self.random_state_.random_sample((n, 2))
        return np.column_stack([_draw(self.sampling_proba_, u[:, 0]), _draw(self.sampling_proba_, u[:, 1])])

    def _update_policy(self, pairs, outcomes):
        q = self.sampling_proba_
        credit = outcomes / (self.n_items_ * q[pairs[:, 0]] * q[pairs[:, 1]])
        np.add.at(self.cumulative_scores_, pairs[:, 0], credit)
        self.sampling_proba_ = _exp_weights(self.cumulative_scores_, self.eta_, self.gamma_)

    def _borda_estimate(self):
        if self.n_duels_ == 0:
            return np.full(self.n_items_, 0.5)
        return self.cumulative_scores_ / self.n_duels_

    def _run(self, n_rounds, oracle):
        # the generic one-round loop with uniforms drawn in bulk (same numbers, same order)
        K = self.n_items_
        U = self.random_state_.random_sample((n_rounds, 2))
        V = oracle.uniforms(n_rounds)
        phases = oracle.phases(0, n_rounds)
        P = oracle.P
        pairs = np.empty((n_rounds, 2), dtype=np.intp)
        outcomes = np.zeros(n_rounds)
        S, q, eta, gamma = self.cumulative_scores_.copy(), self.sampling_proba_, self.eta_, self.gamma_
        c = np.cumsum(q)
        for t in range(n_rounds):
            i = min(int(c.searchsorted(U[t, 0] * c[-1], side="right")), K - 1)
            j = min(int(c.searchsorted(U[t, 1] * c[-1], side="right")), K - 1)
            pairs[t, 0] = i
            pairs[t, 1] = j
            if V[t] < P[phases[t], i, j]:
                outcomes[t] = 1.0
                S[i] += 1.0 / (K * q[i] * q[j])
                q = _exp_weights(S, eta, gamma)
                c = np.cumsum(q)
        self.cumulative_scores_, self.sampling_proba_ = S, q
        self._record(pairs, outcomes)
        self._refresh()
        return pairs, outcomes
