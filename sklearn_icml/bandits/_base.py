"""What every dueling-bandit agent shares: the online and offline faces and the duel bookkeeping.

Agents are scikit-learn classifiers of duel outcomes with two faces. The
offline face follows the paper's model, where a duel between items i and j is
a feature vector ``phi(i, j)`` and ``P(i wins) = mu(phi(i, j) . theta)``:
``fit``, ``predict_proba``, ``decision_function``, ``predict`` and ``score``
take real-valued duel rows ``phi(i, j)`` (one-hot differences ``e_i - e_j``
for the feature-free baselines), so an agent can sit in a Pipeline. The online
face works on item indices: ``select()`` proposes the next pair and
``update(i, j, outcome)`` reports one result or a batch played while the
policy was held fixed (the pairs of one ``select(n_pairs)`` call);
``duel_rows(pairs)`` turns index pairs into duel rows. Per-round randomness
comes from the fitted ``random_state_``.
"""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import validate_data

from ..utils._classifier import BinaryDecisionMixin
from ..utils._repr import summarized_repr
from ..utils._sklearn_private import Interval, _fit_context
from ..utils._torch import as_numpy
from ..utils._validation import check_test_data
from ._action_set import ActionSet
from ._links import get_link

__all__ = []


class _BaseAgent(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
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

    def _borda_estimate(self):
        """Current estimate of the Borda scores, shape (n_items,)."""
        return np.divide(self._won, self._played, out=np.full(self.n_items_, 0.5), where=self._played > 0)

    def _refresh(self):
        self.borda_scores_ = self._borda_estimate()
        self.best_item_ = int(np.argmax(self.borda_scores_))
        self._refresh_coef()

    def _refresh_coef(self):
        """Set ``coef_``, the duel model of the online state (hook)."""

    # ---- shared state ------------------------------------------------------------------------
    def _start(self, n_items=None):
        K = self._n_items_from_params()
        if K is None:
            if n_items is None:
                raise ValueError(f"{type(self).__name__} does not know its items yet: set n_items (simulate sets "
                                 "it from the environment).")
            K = int(n_items)
        if K < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 items; got {K}.")
        self.n_items_ = K
        self.__dict__.pop("feature_names_in_", None)
        self.n_features_in_ = self._known_dim()  # the duel rows of this agent's items
        self.classes_ = np.array([0, 1])
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

    # ---- the offline face: duel rows -------------------------------------------------------------
    def _known_dim(self):
        """Columns of the duel rows of the agent's items (d, or K one-hot), or None when it has no items."""
        raise NotImplementedError

    def _fit_rows(self, X, y):
        """The duel model's coefficients from logged duel rows X and 0/1 outcomes y (hook)."""
        raise NotImplementedError

    def _rows_link(self):
        return "linear"

    def _borda_from_coef(self, coef):
        """Borda scores of the agent's items under the duel model ``coef`` (hook)."""
        raise NotImplementedError

    def duel_rows(self, pairs):
        """Duel rows ``phi(i, j)`` of item-index pairs: the offline face's ``X``.

        Turns the pairs of the online face (as returned by :meth:`select`
        or :meth:`GLMDuelingEnv.sample_duels`) into the real-valued rows
        that :meth:`fit`, :meth:`predict_proba`, :meth:`decision_function`
        and :meth:`score` take.

        Parameters
        ----------
        pairs : array-like of shape (n_duels, 2)
            Integer item indices ``(i, j)`` of each duel.

        Returns
        -------
        rows : ndarray of shape (n_duels, n_features)
            The pair features ``phi_ij`` (feature agents) or the one-hot
            differences ``e_i - e_j`` (feature-free agents).
        """
        pairs = self._check_pairs(pairs, "duel_rows")
        return self._pair_rows(pairs)

    def _check_pairs(self, pairs, what):
        name = type(self).__name__
        pairs = np.asarray(as_numpy(pairs))
        K = self.n_items_ if self._started() else self._n_items_from_params()
        if K is None and hasattr(self, "n_items_"):
            K = self.n_items_
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iuf" or len(pairs) == 0:
            raise ValueError(f"{name}.{what}: pairs must be an array of shape (n_duels, 2) of item indices; got "
                             f"shape {pairs.shape} and dtype {pairs.dtype}.")
        if not np.all(pairs == np.round(pairs)) or pairs.min() < 0 or (K is not None and pairs.max() >= K):
            bound = f"[0, {K})" if K is not None else "[0, n_items)"
            raise ValueError(f"{name}.{what}: pairs must hold integer item indices in {bound}; got values in "
                             f"[{pairs.min()!r}, {pairs.max()!r}].")
        return pairs.astype(np.intp)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the duel model from logged duels given as duel rows (the offline face).

        Each row of ``X`` is the feature vector ``phi(i, j)`` of one duel
        (see :meth:`duel_rows`); any real matrix is accepted, so the agent
        can sit in a :class:`~sklearn.pipeline.Pipeline` behind a
        transformer. Item indices are not duel rows: given to an agent that
        knows its items, an integer array of two columns (the form of the
        pairs that :meth:`select` and :meth:`GLMDuelingEnv.sample_duels`
        return) is refused with a ``ValueError``, unless its rows are
        one-hot differences ``e_i - e_j`` of two items; :meth:`duel_rows`
        turns pairs into rows and checks that they are integers in
        ``[0, n_items)``. When the agent knows its items and the rows have their
        dimension, the fit also gives the items' Borda scores. The online
        state (:meth:`select`, :meth:`update`) is not touched by the fit:
        the online face starts afresh.

        Parameters
        ----------
        X : array-like of shape (n_duels, n_features)
            Duel rows ``phi(i, j)``.
        y : array-like of shape (n_duels,)
            Two labels; the larger one (``classes_[1]``) means the first item won.

        Returns
        -------
        self : object
            The fitted agent.
        """
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("__")]:
            delattr(self, attr)
        for attr in ("n_duels_", "_won", "_played"):
            self.__dict__.pop(attr, None)
        name = type(self).__name__
        X = as_numpy(X)
        self._refuse_item_pairs(X)
        X, y = validate_data(self, X, as_numpy(y), dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self.classes_, y01 = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            kind = "binary" if len(self.classes_) < 2 else type_of_target(y, input_name="y")
            raise ValueError(f"Only binary classification is supported. {name} models whether the first item of a "
                             f"duel wins; the target is {kind} with {len(self.classes_)} class(es): "
                             f"{self.classes_.tolist()!r}.")
        dim = self._known_dim()
        if dim is not None and X.shape[1] != dim:
            raise ValueError(f"X has {X.shape[1]} feature(s), but {name} expects duel rows of its items' "
                             f"dimension {dim} (turn item-index pairs into rows with {name}.duel_rows).")
        with np.errstate(over="ignore"):
            if not np.isfinite(np.einsum("ij,ij->", X, X)):
                raise ValueError(f"{name}: the duel rows are too large to square in float64 (largest |x| = "
                                 f"{np.abs(X).max():.3g}); rescale X.")
        self.coef_ = self._fit_rows(X.astype(np.float64), y01.astype(np.float64))
        if dim is not None or hasattr(self, "n_items_"):  # the rows are those of known items
            self.borda_scores_ = self._borda_from_coef(self.coef_)
            self.best_item_ = int(np.argmax(self.borda_scores_))
        return self

    def _refuse_item_pairs(self, X):
        """Refuse item-index pairs (integers, two columns) where an agent that knows its items expects duel rows:
        fit would read them as two real features (silently, for items whose duel rows have two features)."""
        K = self.n_items_ if self._started() else None
        if K is None and self._known_dim() is not None:
            K = self._n_items_from_params()
        if K is None:  # an agent without items takes any real matrix (its columns define the duel rows)
            return
        try:
            A = np.asarray(X)
        except Exception:  # noqa: BLE001 - validate_data gives the error of an X that is no array
            return
        if A.dtype.kind not in "biu" or A.ndim != 2 or A.shape[1] != 2 or A.shape[0] == 0:
            return
        A = A.astype(np.int64)
        if np.all(np.abs(A) <= 1) and np.all(A.sum(axis=1) == 0) and np.all(A.any(axis=1)):
            return  # one-hot differences e_i - e_j of two items: duel rows
        name = type(self).__name__
        where = f"[{A.min()}, {A.max()}]"
        if A.min() < 0 or A.max() >= K:
            where += f", outside the items [0, {K}) of this agent"
        raise ValueError(f"{name}.fit: X is an integer array of shape {A.shape} (values in {where}), the form of "
                         "item-index pairs (what select() and sample_duels() return), but fit takes duel rows "
                         f"phi(i, j). Turn pairs into duel rows with {name}.duel_rows(pairs), which checks that "
                         "they are integers in [0, n_items), or pass real-valued duel rows as floats.")

    def decision_function(self, X):
        """The duel model's score of each duel row: positive where the first item is predicted to win.

        ``phi . theta_hat`` for a logistic or probit link; for the linear
        link of the adversarial setting, ``P_hat(first wins) - 1/2``
        (``phi . theta_hat`` clipped to ``[-1/2, 1/2]``).

        Parameters
        ----------
        X : array-like of shape (n_duels, n_features)
            Duel rows (see :meth:`duel_rows`).

        Returns
        -------
        scores : ndarray of shape (n_duels,)
            Positive where the first item is predicted to win.
        """
        X = check_test_data(self, X)
        z = X.astype(np.float64) @ self.coef_
        return np.clip(z, -0.5, 0.5) if self._rows_link() == "linear" else z

    def _decision_to_proba(self, decision):
        """Estimated ``P(first item wins) = mu(phi . theta_hat)`` (``1/2 + z`` for the linear link)."""
        link = self._rows_link()
        return 0.5 + decision if link == "linear" else get_link(link).proba(decision)

    def score(self, X, y, sample_weight=None):
        """Accuracy of the predicted duel outcomes on duel rows.

        This rates the learned preference model on logged duels. It does not
        rate an agent's exploration: to tune hyper-parameters by regret, pass
        ``scoring=simulation_scorer(env, horizon)`` to
        :class:`~sklearn.model_selection.GridSearchCV`.

        Parameters
        ----------
        X : array-like of shape (n_duels, n_features)
            Duel rows (see :meth:`duel_rows`).
        y : array-like of shape (n_duels,)
            Observed outcomes.
        sample_weight : array-like of shape (n_duels,), default=None
            Weights of the duels.

        Returns
        -------
        score : float
            Fraction of duels whose outcome is predicted.
        """
        return super().score(X, y, sample_weight=sample_weight)

    # ---- the online face: item indices -----------------------------------------------------------
    def select(self, n_pairs=None):
        """Propose the next pair to duel (or ``n_pairs`` pairs under the current policy).

        Starts the agent on first use (afresh after :meth:`fit`). Draws its
        randomness from ``random_state_``, so calling it advances the
        agent's random stream.

        Parameters
        ----------
        n_pairs : int, default=None
            Number of pairs to propose at once, all under the current policy
            (report their outcomes together with one :meth:`update` call).

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
        """Report the outcome of one duel, or of a batch of duels played under a fixed policy.

        A batch is typically the pairs of one ``select(n_pairs)`` call:
        ``agent.update(pairs[:, 0], pairs[:, 1], outcomes)``. The first call
        starts the agent when :meth:`select` has not.

        Parameters
        ----------
        i, j : int or array-like of int
            The two items of each duel, in the order of the duel.
        outcome : {0, 1} or array-like of {0, 1}
            1 where item ``i`` won.

        Returns
        -------
        self : object
            The updated agent.
        """
        name = type(self).__name__
        if not self._started():
            self._validate_params()
            self._start()
        K = self.n_items_
        if np.ndim(i) == 0 and np.ndim(j) == 0 and np.ndim(outcome) == 0:
            # the online hot path: scalar checks
            for item in (i, j):
                if not isinstance(item, (Integral, np.integer)) or isinstance(item, bool) or not 0 <= item < K:
                    raise ValueError(f"{name}.update: items must be integers in [0, {K}); got ({i!r}, {j!r}).")
            if outcome not in (0, 1):  # also accepts True/False and 0.0/1.0
                raise ValueError(f"{name}.update: outcome must be 1 (i won) or 0; got {outcome!r}.")
            pairs, outcomes = np.array([[i, j]], dtype=np.intp), np.array([float(outcome)])
        else:
            i, j, outcome = (np.atleast_1d(np.asarray(as_numpy(a))) for a in (i, j, outcome))
            if not (i.ndim == j.ndim == outcome.ndim == 1 and len(i) == len(j) == len(outcome)):
                raise ValueError(f"{name}.update: i, j and outcome must be scalars or 1-d arrays of one length; "
                                 f"got shapes {i.shape}, {j.shape}, {outcome.shape}.")
            try:
                pairs = self._check_pairs(np.column_stack([i, j]), "update")
            except ValueError as exc:
                raise ValueError(str(exc).replace("pairs must hold integer item indices",
                                                  "items must be integers")) from None
            if outcome.dtype.kind not in "biuf" or not np.all((outcome == 0) | (outcome == 1)):
                raise ValueError(f"{name}.update: outcome must be 1 (i won) or 0; got values "
                                 f"{np.unique(outcome)[:5].tolist()!r}.")
            outcomes = outcome.astype(np.float64)
        self._observe(pairs, outcomes)
        self._refresh()
        return self

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

    def _known_dim(self):
        if self.pair_features is None and self.item_features is None:
            return None
        return int(np.shape(self.pair_features if self.pair_features is not None else self.item_features)[-1])

    def _pair_rows(self, pairs):
        actions = self._actions if self._started() else self._action_set()
        return actions.rows(pairs[:, 0], pairs[:, 1])

    def _known_actions(self):
        actions = self._action_set()
        self.n_items_ = actions.n_items
        return actions


class _FeatureFreeAgent(_BaseAgent):
    """An agent that only knows how many items there are."""

    _parameter_constraints = {
        **_BaseAgent._parameter_constraints,
        "n_items": [Interval(Integral, 2, None, closed="left"), None],
    }

    def _n_items_from_params(self):
        return None if self.n_items is None else int(self.n_items)

    def _known_dim(self):
        if self._started():
            return self.n_items_
        return self._n_items_from_params()

    def _pair_rows(self, pairs):
        K = self.n_items_ if self._started() else self._n_items_from_params()
        K = int(pairs.max()) + 1 if K is None else K
        rows = np.zeros((len(pairs), K))
        np.add.at(rows, (np.arange(len(pairs)), pairs[:, 0]), 1.0)
        np.add.at(rows, (np.arange(len(pairs)), pairs[:, 1]), -1.0)
        return rows

    def _fit_rows(self, X, y):
        # the Borda counts of one-hot duel rows e_i - e_j, for any real rows: each column k is an item,
        # won where x_k > 0 and the first item won or x_k < 0 and it lost, weighted by |x_k|
        played = np.abs(X).sum(axis=0)
        advantage = (y - 0.5) @ X  # won - played / 2
        self.n_items_ = X.shape[1]
        return np.divide(advantage, played, out=np.zeros(X.shape[1]), where=played > 0)

    def _borda_from_coef(self, coef):
        return 0.5 + coef

    def _refresh_coef(self):
        self.coef_ = self.borda_scores_ - 0.5


def _check_horizon(agent, what):
    if agent.horizon is None:
        raise ValueError(f"{type(agent).__name__} needs the horizon T for {what}: set horizon=T (simulate() sets "
                         "it from its own horizon argument when the agent has none).")
    return int(agent.horizon)
