"""What every dueling-bandit agent shares: the online and offline interface and the duel bookkeeping.

Agents are scikit-learn estimators (``get_params``, ``set_params``, ``clone``,
pickling, parameter validation) whose data are duels: ``X`` holds the item
indices ``(i, j)`` of each duel in its two columns, ``y`` is 1 where the first
item won. Online, ``select()`` proposes the next pair and ``update(i, j,
outcome)`` reports the result; ``partial_fit`` takes a batch of duels played
while the policy was held fixed (the pairs of one ``select(n_pairs)`` call);
``fit`` starts afresh on logged duels (the offline case). Per-round
randomness comes from the fitted ``random_state_``.
"""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ..utils._repr import summarized_repr
from ..utils._sklearn_private import Interval, _fit_context
from ..utils._torch import as_numpy
from ._action_set import ActionSet

__all__ = []


class _BaseAgent(BaseEstimator):
    """Base class of the agents (not public): subclasses implement the policy hooks."""

    _parameter_constraints = {
        "random_state": ["random_state"],
    }

    # ---- hooks for the subclasses ------------------------------------------------------------
    def _n_items_from_params(self):
        """Number of items the parameters fix, or None when it must come from the data."""
        raise NotImplementedError

    def _init_policy(self):
        """Set the policy's fitted state (called once per start, after the common state)."""

    def _select_pairs(self, n):
        """``n`` pairs drawn under the current policy, shape (n, 2)."""
        raise NotImplementedError

    def _update_policy(self, pairs, outcomes):
        """Learn from a batch of duels played under the current policy (counts already updated)."""

    def _fixed_rounds(self):
        """How many more rounds the policy stays fixed whatever the outcomes (at least 1)."""
        return 1

    def _finish_offline(self):
        """End of :meth:`fit` on logged duels (e.g. commit to the estimated Borda winner)."""

    def _borda_estimate(self):
        """Current estimate of the Borda scores, shape (n_items,)."""
        return np.divide(self._won, self._played, out=np.full(self.n_items_, 0.5), where=self._played > 0)

    def _refresh(self):
        self.borda_scores_ = self._borda_estimate()
        self.best_item_ = int(np.argmax(self.borda_scores_))

    # ---- shared state ------------------------------------------------------------------------
    def _start(self, n_items=None):
        K = self._n_items_from_params()
        if K is None:
            if n_items is None:
                raise ValueError(f"{type(self).__name__} does not know its items yet: set n_items, or start it with "
                                 "fit/partial_fit on logged duels.")
            K = int(n_items)
        if K < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 items; got {K}.")
        self.n_items_ = K
        self.random_state_ = check_random_state(self.random_state)
        self.duel_counts_ = np.zeros((K, K))
        self.duel_wins_ = np.zeros((K, K))
        self._won = np.zeros(K)  # wins of each item in either position, and its duels: O(K) Borda counts
        self._played = np.zeros(K)
        self.n_duels_ = 0
        self._init_policy()
        self._refresh()

    def _record(self, pairs, outcomes):
        """Add duels to the counts (nothing else)."""
        i, j = pairs[:, 0], pairs[:, 1]
        np.add.at(self.duel_counts_, (i, j), 1.0)
        np.add.at(self.duel_wins_, (i, j), outcomes)
        np.add.at(self._won, i, outcomes)
        np.add.at(self._won, j, 1.0 - outcomes)
        np.add.at(self._played, i, 1.0)
        np.add.at(self._played, j, 1.0)
        self.n_duels_ += len(pairs)

    def _observe(self, pairs, outcomes):
        self._record(pairs, outcomes)
        self._update_policy(pairs, outcomes)

    def _started(self):
        return hasattr(self, "n_duels_")

    def _validate_duels(self, X, y, reset):
        name = type(self).__name__
        X, y = validate_data(self, as_numpy(X), as_numpy(y), reset=reset, dtype="numeric", y_numeric=True)
        if X.shape[1] != 2:
            raise ValueError(f"X has {X.shape[1]} feature(s), but {name} expects 2 columns: the item indices "
                             "(i, j) of each duel.")
        K = self.n_items_ if self._started() else self._n_items_from_params()
        if not np.all(X == np.round(X)) or X.min() < 0 or (K is not None and X.max() >= K):
            bound = f"[0, {K})" if K is not None else "[0, n_items)"
            raise ValueError(f"{name}: X must hold integer item indices in {bound}; got values in "
                             f"[{X.min()!r}, {X.max()!r}].")
        y = column_or_1d(y).astype(np.float64)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError(f"{name}: y must hold duel outcomes, 1 where the first item won and 0 otherwise; "
                             f"got values {np.unique(y)[:5].tolist()!r}.")
        return X.astype(np.intp), y

    # ---- public interface --------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Start afresh and learn from logged duels (the offline case).

        When ``horizon`` is None, the number of logged duels stands in for
        the horizon ``T`` in the automatic parameters.

        Parameters
        ----------
        X : array-like of shape (n_duels, 2)
            Item indices ``(i, j)`` of each duel.
        y : array-like of shape (n_duels,)
            1 where item ``i`` won, 0 otherwise.

        Returns
        -------
        self : object
            The fitted agent.
        """
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("__")]:
            delattr(self, attr)
        X, y = self._validate_duels(X, y, reset=True)
        self._offline_horizon = len(X)
        try:
            self._start(n_items=X.max() + 1)
        finally:
            del self._offline_horizon
        self._observe(X, y)
        self._finish_offline()
        self._refresh()
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y):
        """Learn from a batch of duels played while the policy was held fixed.

        The batch is typically the pairs returned by one ``select(n_pairs)``
        call with their outcomes. The first call starts the agent (when
        :meth:`select` has not already).

        Parameters
        ----------
        X : array-like of shape (n_duels, 2)
            Item indices ``(i, j)`` of each duel.
        y : array-like of shape (n_duels,)
            1 where item ``i`` won, 0 otherwise.

        Returns
        -------
        self : object
            The updated agent.
        """
        X, y = self._validate_duels(X, y, reset=not hasattr(self, "n_features_in_"))
        if not self._started():
            self._start(n_items=X.max() + 1)
        self._observe(X, y)
        self._refresh()
        return self

    def select(self, n_pairs=None):
        """Propose the next pair to duel (or ``n_pairs`` pairs under the current policy).

        Starts the agent on first use. Draws its randomness from
        ``random_state_``, so calling it advances the agent's random stream.

        Parameters
        ----------
        n_pairs : int, default=None
            Number of pairs to propose at once, all under the current policy
            (report their outcomes together with :meth:`partial_fit`).

        Returns
        -------
        pair : tuple of two int, or ndarray of shape (n_pairs, 2)
            ``(i, j)`` when ``n_pairs`` is None, otherwise one row per pair.
        """
        if n_pairs is not None and (not isinstance(n_pairs, Integral) or isinstance(n_pairs, bool) or n_pairs < 1):
            raise ValueError(f"{type(self).__name__}.select: n_pairs must be None or a positive integer; got "
                             f"{n_pairs!r}.")
        if not self._started():
            self._validate_params()
            self._start()
        pairs = self._select_pairs(1 if n_pairs is None else int(n_pairs))
        if n_pairs is None:
            return int(pairs[0, 0]), int(pairs[0, 1])
        return pairs

    def update(self, i, j, outcome):
        """Report the outcome of one duel.

        Parameters
        ----------
        i, j : int
            The two items, in the order of the duel.
        outcome : {0, 1}
            1 if item ``i`` won.

        Returns
        -------
        self : object
            The updated agent.
        """
        # the online hot path: scalar checks instead of validate_data (which partial_fit runs)
        if not self._started():
            return self.partial_fit(np.array([[i, j]]), np.array([outcome]))
        name = type(self).__name__
        K = self.n_items_
        for item in (i, j):
            if not isinstance(item, (Integral, np.integer)) or isinstance(item, bool) or not 0 <= item < K:
                raise ValueError(f"{name}.update: items must be integers in [0, {K}); got ({i!r}, {j!r}).")
        if outcome not in (0, 1):  # also accepts True/False and 0.0/1.0
            raise ValueError(f"{name}.update: outcome must be 1 (i won) or 0; got {outcome!r}.")
        self._observe(np.array([[i, j]], dtype=np.intp), np.array([float(outcome)]))
        self._refresh()
        return self

    def decision_function(self, X):
        """Estimated Borda-score difference ``B_hat(i) - B_hat(j)`` of each pair.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2)
            Item indices ``(i, j)``.

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
            Positive where the agent ranks ``i`` above ``j``.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype="numeric")
        X = np.asarray(X)
        if not np.all(X == np.round(X)) or X.min() < 0 or X.max() >= self.n_items_:
            raise ValueError(f"{type(self).__name__}: X must hold integer item indices in [0, {self.n_items_}).")
        X = X.astype(np.intp)
        return self.borda_scores_[X[:, 0]] - self.borda_scores_[X[:, 1]]

    def score(self, X=None, y=None):
        """Not defined: an agent is rated by simulating it, with :func:`simulation_scorer`.

        A dueling-bandit agent's hyper-parameters trade exploration against
        regret, which no held-out set of logged duels measures (fitted
        offline, candidates differing only in exploration settings would all
        tie). Tune them with
        ``GridSearchCV(agent, grid, scoring=simulation_scorer(env, horizon))``;
        to rate the Borda ranking learned from logged duels, score
        :meth:`decision_function` (e.g. ``scoring="roc_auc"``).

        Parameters
        ----------
        X : array-like, default=None
            Ignored.
        y : array-like, default=None
            Ignored.

        Raises
        ------
        TypeError
            Always, naming :func:`simulation_scorer`.
        """
        name = type(self).__name__
        raise TypeError(f"{name} has no data-based score: its hyper-parameters trade exploration against regret, "
                        "which only a simulation measures. Pass scoring=simulation_scorer(env, horizon) (from "
                        f"sklearn_icml.bandits) to GridSearchCV/cross_validate, or score {name}.decision_function "
                        "on held-out duels (scoring='roc_auc') to rate the learned Borda ranking.")

    def __repr__(self, N_CHAR_MAX=700):
        # pair/item features are large arrays: show their shape, not their values
        return summarized_repr(self, N_CHAR_MAX=N_CHAR_MAX)

    # ---- simulation --------------------------------------------------------------------------
    def _run(self, n_rounds, oracle):
        """Play ``n_rounds`` rounds against ``oracle``; return (pairs, outcomes)."""
        pairs_out = np.empty((n_rounds, 2), dtype=np.intp)
        outcomes_out = np.empty(n_rounds)
        t = 0
        while t < n_rounds:
            m = int(min(n_rounds - t, max(1, self._fixed_rounds())))
            pairs = self._select_pairs(m)
            outcomes = oracle.outcomes(pairs, t)
            self._observe(pairs, outcomes)
            pairs_out[t:t + m] = pairs
            outcomes_out[t:t + m] = outcomes
            t += m
        self._refresh()
        return pairs_out, outcomes_out

    def _uniform_pairs(self, n):
        return self.random_state_.randint(self.n_items_, size=(n, 2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


class _FeatureAgent(_BaseAgent):
    """An agent that knows the pair features of its items."""

    _parameter_constraints = {
        **_BaseAgent._parameter_constraints,
        "pair_features": ["array-like", None],
        "item_features": ["array-like", None],
    }

    def _action_set(self):
        if self.pair_features is None and self.item_features is None:
            raise ValueError(f"{type(self).__name__} needs its items' features: give pair_features "
                             "(n_items, n_items, n_features) or item_features (n_items, n_features), for "
                             "example BordaETC(**env.action_set).")
        return ActionSet(pair_features=self.pair_features, item_features=self.item_features,
                         name=type(self).__name__)

    def _n_items_from_params(self):
        if self.pair_features is None and self.item_features is None:
            self._action_set()  # raises the explanatory error
        shape = np.shape(self.pair_features if self.pair_features is not None else self.item_features)
        return int(shape[0])

    def _start(self, n_items=None):
        self._actions = self._action_set()
        self.n_features_ = self._actions.dim
        super()._start(n_items)


class _FeatureFreeAgent(_BaseAgent):
    """An agent that only knows how many items there are."""

    _parameter_constraints = {
        **_BaseAgent._parameter_constraints,
        "n_items": [Interval(Integral, 2, None, closed="left"), None],
    }

    def _n_items_from_params(self):
        return None if self.n_items is None else int(self.n_items)


def _check_horizon(agent, what):
    if agent.horizon is None and getattr(agent, "_offline_horizon", None) is not None:
        return agent._offline_horizon  # fit on logged duels: the log's length stands in for T
    if agent.horizon is None:
        raise ValueError(f"{type(agent).__name__} needs the horizon T for {what}: set horizon=T (simulate() sets "
                         "it from its own horizon argument when the agent has none).")
    return int(agent.horizon)
