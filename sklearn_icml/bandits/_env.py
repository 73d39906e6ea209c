"""Simulated generalized linear dueling bandits: preferences, Borda scores, Borda regret."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..datasets import make_glm_instance
from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ._action_set import ActionSet
from ._links import LINKS, get_link

__all__ = ["GLMDuelingEnv"]


class _Oracle:
    """Draws duel outcomes for :func:`simulate`, from one random stream, round by round or in blocks."""

    def __init__(self, env, rng):
        self.env = env
        self.rng = rng
        self.P = env._P
        self.phase_length = env.phase_length

    def _phase(self, t):
        if self.phase_length is None:
            return 0 if np.isscalar(t) else np.zeros(np.shape(t), dtype=int)
        return (np.asarray(t) // self.phase_length) % self.P.shape[0]

    def outcomes(self, pairs, t0):
        """Outcomes of the duels ``pairs`` played in rounds ``t0, t0 + 1, ...``."""
        n = len(pairs)
        u = self.rng.random_sample(n)
        phases = self._phase(t0 + np.arange(n))
        return (u < self.P[phases, pairs[:, 0], pairs[:, 1]]).astype(np.float64)

    def uniforms(self, n):
        """The next ``n`` uniforms of the outcome stream (the same numbers :meth:`outcomes` would use)."""
        return self.rng.random_sample(n)

    def phases(self, t0, n):
        """Phase index of rounds ``t0 .. t0 + n - 1``."""
        return self._phase(t0 + np.arange(n))


class GLMDuelingEnv:
    """A generalized linear dueling bandit: items, pair features, a link and a hidden ``theta``.

    Item ``i`` beats item ``j`` with probability ``p_ij = mu(phi_ij . theta)``,
    where the pair features are antisymmetric (``phi_ji = -phi_ij``) and the
    link satisfies ``mu(x) + mu(-x) = 1``. The Borda score of an item is its
    probability of beating an opponent drawn uniformly from all items,
    ``B(i) = (1/K) sum_j p_ij`` (``p_ii = 1/2``); the Borda winner has the
    largest. Playing the pair ``(i_t, j_t)`` costs the Borda regret
    ``2 B(i*) - B(i_t) - B(j_t)``. General pair features allow intransitive
    preferences without a Condorcet winner, while the Borda winner always
    exists.

    With ``theta`` of shape ``(n_phases, n_features)`` the environment is
    adversarial (the paper's linear adversarial setting, with a drifting
    ``theta_t``): round ``t`` uses ``theta[(t // phase_length) % n_phases]``
    and the regret is measured against the best fixed item in hindsight.

    This is a simulator, not an estimator: agents (:class:`BordaETC`,
    :class:`BordaEXP3`, ...) play against it through :func:`simulate`, and
    :meth:`sample_duels` logs uniformly random duels (item-index pairs, which
    an agent's ``duel_rows`` turns into the rows of its offline ``fit``).

    Read more in the :ref:`User Guide <bandits>`.

    Parameters
    ----------
    pair_features : array-like of shape (n_items, n_items, n_features)
        Antisymmetric pair features ``phi_ij``.
    theta : array-like of shape (n_features,) or (n_phases, n_features)
        The hidden parameter, or one per phase of an adversarial drift.
    link : {"logistic", "probit", "linear"}, default="logistic"
        The link ``mu``. The linear link ``mu(x) = 1/2 + x`` needs
        ``|phi_ij . theta| <= 1/2``.
    phase_length : int, default=None
        Rounds per phase when ``theta`` has several rows (required then).
    random_state : int, RandomState instance or None, default=None
        Seeds the outcomes drawn by :meth:`duel`.

    Attributes
    ----------
    n_items : int
        Number of items ``K``.
    n_features : int
        Dimension ``d`` of the pair features.
    n_phases : int
        Number of rows of ``theta`` (1 in the stochastic setting).
    item_features : ndarray of shape (n_items, n_features) or None
        The item features when the environment was built by
        :meth:`from_item_features`.

    See Also
    --------
    simulate : Play an agent against the environment and record its regret.
    BordaETC : Explore-then-commit agent for the stochastic setting.
    BordaEXP3 : Exponential-weights agent for the adversarial linear setting.

    Notes
    -----
    :meth:`hard_instance` follows the construction of the paper's lower bound
    (reconstructed, see its docstring): only duels between a "good" and a
    "bad" item reveal ``theta`` and each costs constant regret. The paper's
    assumptions ``|phi_ij| <= 1`` and ``|theta| <= 1`` are not enforced.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", Proceedings of the
       41st International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn_icml.bandits import GLMDuelingEnv
    >>> env = GLMDuelingEnv.hard_instance(d=2, random_state=0)
    >>> env.n_items, env.n_features
    (8, 3)
    >>> env.borda_scores().round(3)
    array([0.375, 0.675, 0.575, 0.375, 0.375, 0.625, 0.625, 0.375])
    >>> env.borda_winner()
    1
    >>> env.regret([[1, 1], [0, 5]]).round(3)
    array([0.  , 0.35])
    """

    def __init__(self, pair_features, theta, link="logistic", *, phase_length=None, random_state=None):
        self._init(ActionSet(pair_features=pair_features, name=type(self).__name__), theta, link,
                   phase_length, random_state)

    def _init(self, action_set, theta, link, phase_length, random_state):
        name = type(self).__name__
        self._actions = action_set
        self.link = get_link(link).name
        theta = np.array(theta, dtype=np.float64)
        if theta.ndim == 1:
            theta = theta[None, :]
        if theta.ndim != 2 or theta.shape[1] != action_set.dim or not np.all(np.isfinite(theta)):
            raise ValueError(f"{name}: theta must be finite with shape ({action_set.dim},) or "
                             f"(n_phases, {action_set.dim}); got shape {np.shape(theta)}.")
        if theta.shape[0] > 1 and (phase_length is None or int(phase_length) < 1):
            raise ValueError(f"{name}: theta has {theta.shape[0]} phases; give phase_length, a positive number "
                             f"of rounds per phase (got {phase_length!r}).")
        self.theta = theta if theta.shape[0] > 1 else theta[0]
        self.phase_length = None if theta.shape[0] == 1 else int(phase_length)
        self.random_state = random_state
        self.n_items = action_set.n_items
        self.n_features = action_set.dim
        self.n_phases = theta.shape[0]
        self.item_features = action_set.items
        mu = get_link(self.link)
        scores = np.stack([action_set.linear_scores(th) for th in theta])
        P = mu.mu(scores)
        if np.any(P < -1e-12) or np.any(P > 1 + 1e-12):
            raise ValueError(f"{name}: with the linear link every |phi_ij . theta| must be at most 1/2 so that "
                             f"p_ij = 1/2 + phi_ij . theta is a probability; the largest is "
                             f"{np.abs(scores).max():.3g}.")
        self._P = np.clip(P, 0.0, 1.0)
        self._borda = self._P.mean(axis=2)
        self._rng = None

    # ---- constructors ------------------------------------------------------------------------
    @classmethod
    def from_item_features(cls, item_features, theta, link="logistic", *, phase_length=None, random_state=None):
        """An environment with pair features ``phi_ij = x_i - x_j`` (the linear-stochastic-transitivity case).

        With the logistic link this is the Bradley-Terry-Luce model with
        item utilities ``x_i . theta``. Agents given ``item_features`` never
        build the ``(K, K, d)`` pair-feature array.

        Parameters
        ----------
        item_features : array-like of shape (n_items, n_features)
            Feature vector ``x_i`` of every item.
        theta : array-like of shape (n_features,) or (n_phases, n_features)
            The hidden parameter (one row per phase for a drift).
        link : {"logistic", "probit", "linear"}, default="logistic"
            The link ``mu``.
        phase_length : int, default=None
            Rounds per phase when ``theta`` has several rows.
        random_state : int, RandomState instance or None, default=None
            Seeds the outcomes drawn by :meth:`duel`.

        Returns
        -------
        env : GLMDuelingEnv
            The environment.
        """
        env = cls.__new__(cls)
        env._init(ActionSet(item_features=item_features, name=cls.__name__), theta, link, phase_length,
                  random_state)
        return env

    @classmethod
    def hard_instance(cls, d=4, delta=0.05, link="linear", *, n_phases=1, phase_length=None, shuffle=True,
                      random_state=None):
        """The hard instance of the paper's lower bound: informative duels are the expensive ones.

        There are ``K = 2^(d+1)`` items: ``2^d`` "good" items, one for each
        sign vector ``v`` in ``{-1, +1}^d``, and ``2^d`` "bad" items. The pair
        features live in ``R^(d+1)``: ``phi(good v, bad) = (v, 1)`` (and its
        negative for the reverse order); duels between two good or two bad
        items have ``phi = 0`` and are fair coin flips. With
        ``theta = (delta u, mu^{-1}(3/4))`` for a hidden sign vector ``u``,
        a good item beats a bad one with probability about 3/4, the Borda
        winner is the good item ``v = u``, the runner-up differs by
        ``delta`` (linear link), and only good-versus-bad duels, each
        costing constant regret, reveal ``u``. Hence the
        ``Omega(d^{2/3} T^{2/3})`` lower bound.

        Parameters
        ----------
        d : int, default=4
            Number of hidden bits; ``K = 2^(d+1)`` items and ``d + 1`` features.
        delta : float, default=0.05
            Per-bit signal. The linear link needs ``delta <= 1 / (4 d)``.
        link : {"logistic", "probit", "linear"}, default="linear"
            The link ``mu``.
        n_phases : int, default=1
            Draw this many hidden sign vectors ``u``, one per phase of an
            adversarial drift (requires ``phase_length`` when above 1).
        phase_length : int, default=None
            Rounds per phase.
        shuffle : bool, default=True
            Put the items in random order (so no agent is favoured by ties
            broken towards low indices).
        random_state : int, RandomState instance or None, default=None
            Draws ``u``, the order of the items, and seeds :meth:`duel`.

        Returns
        -------
        env : GLMDuelingEnv
            The environment.

        Notes
        -----
        Reconstructed from the paper's lower-bound proof (good and bad items
        on the hypercube, good-good duels uninformative); the exact scaling
        constants of the paper may differ. The good-versus-bad win
        probability of about 3/4 is our choice (``mu^{-1}(3/4)`` is 1/4 for
        the linear link, ``log 3`` for the logistic link).
        """
        _check_hard(d=d, delta=delta, link=link, n_phases=n_phases, phase_length=phase_length, shuffle=shuffle,
                    random_state=random_state)
        mu = get_link(link)
        if link == "linear" and delta * d > 0.25 + 1e-12:
            raise ValueError(f"GLMDuelingEnv.hard_instance: with the linear link delta * d must be at most 1/4 "
                             f"(probabilities 1/2 + delta <v, u> + 1/4 <= 1); got delta={delta}, d={d}.")
        rng = check_random_state(random_state)
        n_good = 2 ** d
        K = 2 * n_good
        bits = ((np.arange(n_good)[:, None] >> np.arange(d)[None, :]) & 1) * 2.0 - 1.0
        good_feat = np.column_stack([bits, np.ones(n_good)])
        pair = np.zeros((K, K, d + 1))
        pair[:n_good, n_good:] = good_feat[:, None, :]
        pair[n_good:, :n_good] = -good_feat[None, :, :]
        u = rng.choice([-1.0, 1.0], size=(n_phases, d))
        theta = np.column_stack([delta * u, np.full(n_phases, float(mu.inverse(0.75)))])
        if shuffle:
            perm = rng.permutation(K)
            pair = pair[np.ix_(perm, perm)]
        return cls(pair, theta if n_phases > 1 else theta[0], link, phase_length=phase_length, random_state=rng)

    @classmethod
    def random_instance(cls, n_items=32, n_features=4, link="logistic", *, scale=None, item_features=False,
                        n_phases=1, phase_length=None, random_state=None):
        """A random instance: unit pair (or item) features and a random ``theta``.

        With ``item_features=False`` every unordered pair gets its own
        feature vector, drawn uniformly on the unit sphere (``phi_ji =
        -phi_ij``): preferences are in general intransitive. With
        ``item_features=True`` each item gets a vector uniform on the sphere
        of radius 1/2 and ``phi_ij = x_i - x_j`` (transitive, BTL-like).
        ``theta`` is uniform on the sphere of radius ``scale``.

        Parameters
        ----------
        n_items : int, default=32
            Number of items ``K``.
        n_features : int, default=4
            Dimension ``d``.
        link : {"logistic", "probit", "linear"}, default="logistic"
            The link ``mu``.
        scale : float, default=None
            Norm of ``theta``: 2 for the logistic and probit links, 1/2 for the
            linear link (its largest value keeping probabilities in [0, 1]).
        item_features : bool, default=False
            Build the instance from item features.
        n_phases : int, default=1
            Draw this many independent ``theta``, one per phase of an
            adversarial drift (requires ``phase_length`` when above 1).
        phase_length : int, default=None
            Rounds per phase.
        random_state : int, RandomState instance or None, default=None
            Draws the features and ``theta``, and seeds :meth:`duel`.

        Returns
        -------
        env : GLMDuelingEnv
            The environment.
        """
        _check_random(n_items=n_items, n_features=n_features, link=link, scale=scale, item_features=item_features,
                      n_phases=n_phases, phase_length=phase_length, random_state=random_state)
        rng = check_random_state(random_state)
        if link == "linear" and scale is not None and scale > 0.5 + 1e-12:
            raise ValueError(f"GLMDuelingEnv.random_instance: with the linear link scale must be at most 1/2 "
                             f"(unit features, |phi . theta| <= 1/2); got scale={scale}.")
        features, theta = make_glm_instance(n_items, n_features, link=link, scale=scale, item_features=item_features,
                                            n_phases=n_phases, random_state=rng)
        if item_features:
            return cls.from_item_features(features, theta, link, phase_length=phase_length, random_state=rng)
        return cls(features, theta, link, phase_length=phase_length, random_state=rng)

    # ---- properties --------------------------------------------------------------------------
    @property
    def pair_features(self):
        """The pair features ``phi_ij``, an array of shape (n_items, n_items, n_features).

        Built on each access for environments made from item features.
        """
        if self._actions.pair is not None:
            return self._actions.pair
        X = self._actions.items
        return X[:, None, :] - X[None, :, :]

    @property
    def action_set(self):
        """The keyword arguments that hand this environment's items to an agent.

        ``{"item_features": ...}`` for environments made from item features,
        ``{"pair_features": ...}`` otherwise, so ``BordaETC(**env.action_set)``
        builds an agent for these items.
        """
        if self._actions.items is not None:
            return {"item_features": self._actions.items}
        return {"pair_features": self._actions.pair}

    # ---- ground truth ------------------------------------------------------------------------
    def _phase_of(self, t):
        t = np.asarray(t)
        if self.phase_length is None:
            return np.zeros(t.shape, dtype=int)
        return (t // self.phase_length) % self.n_phases

    def preference_matrix(self, t=0):
        """The matrix ``p_ij = P(i beats j)`` in round ``t``.

        Parameters
        ----------
        t : int, default=0
            Round (only matters when ``theta`` drifts).

        Returns
        -------
        P : ndarray of shape (n_items, n_items)
            Preference probabilities, ``P + P.T = 1``.
        """
        return self._P[int(self._phase_of(t))].copy()

    def borda_scores(self, t=0):
        """The Borda scores ``B(i) = (1/K) sum_j p_ij`` in round ``t``.

        Parameters
        ----------
        t : int, default=0
            Round (only matters when ``theta`` drifts).

        Returns
        -------
        scores : ndarray of shape (n_items,)
            Borda scores; they average to 1/2.
        """
        return self._borda[int(self._phase_of(t))].copy()

    def _cumulative_borda(self, horizon):
        if self.phase_length is None:
            return horizon * self._borda[0]
        per_phase = np.bincount(self._phase_of(np.arange(horizon)), minlength=self.n_phases)
        return per_phase @ self._borda

    def borda_winner(self, horizon=None):
        """The item with the largest Borda score (over ``horizon`` rounds when ``theta`` drifts).

        Parameters
        ----------
        horizon : int, default=None
            With a drifting ``theta``, the best fixed item in hindsight over
            rounds ``0 .. horizon - 1`` (default: one full cycle of phases).
            Ignored otherwise.

        Returns
        -------
        winner : int
            Index of the Borda winner (the lowest index among ties).
        """
        if self.phase_length is None:
            return int(np.argmax(self._borda[0]))
        horizon = self.phase_length * self.n_phases if horizon is None else int(horizon)
        return int(np.argmax(self._cumulative_borda(horizon)))

    def regret(self, pairs, *, start=0, horizon=None):
        """Per-round Borda regret ``2 B_t(i*) - B_t(i_t) - B_t(j_t)`` of a sequence of duels.

        Parameters
        ----------
        pairs : array-like of shape (n_rounds, 2)
            The pairs ``(i_t, j_t)`` played in rounds ``start, start + 1, ...``.
        start : int, default=0
            Round of the first pair.
        horizon : int, default=None
            Horizon defining the best fixed item ``i*`` when ``theta``
            drifts (default ``start + n_rounds``).

        Returns
        -------
        regret : ndarray of shape (n_rounds,)
            Regret of each round (its cumulative sum is the regret curve).
        """
        pairs = self._check_pairs(pairs)
        t = start + np.arange(len(pairs))
        phases = self._phase_of(t)
        best = self.borda_winner(start + len(pairs) if horizon is None else horizon)
        B = self._borda
        return 2.0 * B[phases, best] - B[phases, pairs[:, 0]] - B[phases, pairs[:, 1]]

    # ---- drawing duels -----------------------------------------------------------------------
    def _check_pairs(self, pairs):
        pairs = np.asarray(pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"{type(self).__name__}: pairs must have shape (n, 2); got {pairs.shape}.")
        if pairs.size and (not np.all(pairs == np.round(pairs)) or pairs.min() < 0 or pairs.max() >= self.n_items):
            raise ValueError(f"{type(self).__name__}: item indices must be integers in [0, {self.n_items}).")
        return pairs.astype(np.intp)

    def duel(self, i, j, t=0):
        """Play one duel and return 1 if item ``i`` wins, 0 otherwise.

        Parameters
        ----------
        i, j : int
            The two items (``i == j`` is a fair coin flip).
        t : int, default=0
            Round (only matters when ``theta`` drifts).

        Returns
        -------
        outcome : int
            1 if ``i`` won.
        """
        pair = self._check_pairs([[i, j]])[0]
        if self._rng is None:
            self._rng = check_random_state(self.random_state)
        return int(self._rng.random_sample() < self._P[int(self._phase_of(t)), pair[0], pair[1]])

    def sample_duels(self, n_duels, *, random_state=None):
        """Log ``n_duels`` duels between uniformly random distinct items (the offline data of the agents).

        Parameters
        ----------
        n_duels : int
            Number of duels.
        random_state : int, RandomState instance or None, default=None
            Draws the pairs and the outcomes.

        Returns
        -------
        X : ndarray of shape (n_duels, 2)
            Item indices ``(i, j)`` of each duel (an agent's
            ``duel_rows(X)`` gives the duel rows its ``fit`` takes).
        y : ndarray of shape (n_duels,)
            1 where ``i`` won, 0 otherwise.
        """
        if not isinstance(n_duels, Integral) or n_duels < 1:
            raise ValueError(f"{type(self).__name__}.sample_duels: n_duels must be a positive integer; got "
                             f"{n_duels!r}.")
        rng = check_random_state(random_state)
        i = rng.randint(self.n_items, size=n_duels)
        j = (i + rng.randint(1, self.n_items, size=n_duels)) % self.n_items
        X = np.column_stack([i, j])
        y = _Oracle(self, rng).outcomes(X, 0).astype(np.int64)
        return X, y

    def __repr__(self):
        kind = "item features" if self._actions.items is not None else "pair features"
        drift = f", {self.n_phases} phases of {self.phase_length} rounds" if self.phase_length else ""
        return (f"{type(self).__name__}(n_items={self.n_items}, n_features={self.n_features}, {kind}, "
                f"link={self.link!r}{drift})")


def _hard_params(d, delta, link, n_phases, phase_length, shuffle, random_state):
    """Signature whose validation reports bad GLMDuelingEnv.hard_instance arguments."""


_hard_params.__qualname__ = "GLMDuelingEnv.hard_instance"
_check_hard = validate_params(
    {
        "d": [Interval(Integral, 1, 12, closed="both")],
        "delta": [Interval(Real, 0, None, closed="neither")],
        "link": [StrOptions(set(LINKS))],
        "n_phases": [Interval(Integral, 1, None, closed="left")],
        "phase_length": [Interval(Integral, 1, None, closed="left"), None],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)(_hard_params)


def _random_params(n_items, n_features, link, scale, item_features, n_phases, phase_length, random_state):
    """Signature whose validation reports bad GLMDuelingEnv.random_instance arguments."""


_random_params.__qualname__ = "GLMDuelingEnv.random_instance"
_check_random = validate_params(
    {
        "n_items": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "link": [StrOptions(set(LINKS))],
        "scale": [Interval(Real, 0, None, closed="neither"), None],
        "item_features": ["boolean"],
        "n_phases": [Interval(Integral, 1, None, closed="left")],
        "phase_length": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)(_random_params)
