"""BETC-GLM: Borda explore-then-commit for generalized linear dueling bandits (Wu et al., ICML 2024)."""

import math
from numbers import Integral, Real

import numpy as np

from ..utils._sklearn_private import Interval, StrOptions
from ._base import _check_horizon, _FeatureAgent
from ._design import g_optimal_design
from ._glm import fit_glm
from ._links import LINKS, get_link

__all__ = ["BordaETC"]


class BordaETC(_FeatureAgent):
    """Borda explore-then-commit for generalized linear dueling bandits (BETC-GLM).

    The agent explores for ``n_explore`` rounds, fits the GLM estimate
    ``theta_hat`` of the preference model ``P(i beats j) = mu(phi_ij . theta)``
    on the exploration duels, computes the plug-in Borda scores
    ``B_hat(i) = (1/K) sum_j mu(phi_ij . theta_hat)`` and then commits to the
    estimated Borda winner ``i_hat``, playing ``(i_hat, i_hat)`` for the rest
    of the horizon. With ``n_explore`` of order ``d^{2/3} T^{2/3}`` its Borda
    regret is ``O~(d^{2/3} T^{2/3})``, matching the paper's lower bound.

    Exploration is uniform over all ordered pairs (``exploration="uniform"``)
    or, with ``exploration="g_optimal"``, a uniform burn-in followed by duels
    allocated by a G-optimal design over the pair features (the paper's
    refinement phase), which spends no duels on uninformative pairs.

    Online, duels are item-index pairs (:meth:`select`, :meth:`update`);
    offline, :meth:`fit`, :meth:`predict_proba` and :meth:`score` take duel
    rows ``phi_ij`` (:meth:`duel_rows` turns pairs into rows), as
    :class:`PairwiseGLMClassifier` does.

    Read more in the :ref:`User Guide <bandits>`.

    Parameters
    ----------
    pair_features : array-like of shape (n_items, n_items, n_features), default=None
        Antisymmetric pair features ``phi_ij`` of the items. Give this or
        ``item_features``; :func:`simulate` takes them from the environment
        when both are None.
    item_features : array-like of shape (n_items, n_features), default=None
        Item features ``x_i``, meaning ``phi_ij = x_i - x_j`` (nothing of size
        ``K^2 d`` is built, except the candidate pairs of the G-optimal design).
    horizon : int, default=None
        The horizon ``T`` (known in advance, as in the paper). Needed for
        ``n_explore="auto"``.
    n_explore : "auto" or int, default="auto"
        Exploration rounds; ``"auto"`` is ``ceil(c_explore * d^{2/3} T^{2/3})``
        (capped at ``T``).
    c_explore : float, default=1.0
        The constant of the automatic exploration length.
    exploration : {"uniform", "g_optimal"}, default="uniform"
        How exploration pairs are drawn.
    burn_in : float, default=0.2
        With ``exploration="g_optimal"``, the fraction of the exploration
        rounds spent on uniform pairs before the design.
    link : {"logistic", "probit", "linear"}, default="logistic"
        The link ``mu`` of the model the agent fits.
    alpha : float, default=1e-4
        Ridge penalty of the GLM estimate (keeps it finite on separable duels).
    random_state : int, RandomState instance or None, default=None
        Seeds the exploration pairs (``random_state_``).

    Attributes
    ----------
    n_items_ : int
        Number of items ``K``.
    n_features_ : int
        Dimension ``d`` of the pair features.
    n_explore_ : int
        Exploration rounds.
    exploration_pairs_ : ndarray of shape (`n_explore_`, 2)
        The planned exploration duels, in order.
    design_ : ndarray of shape (n_distinct,) or None
        With ``exploration="g_optimal"``, the G-optimal design over the
        distinct pair features (up to sign).
    phase_ : {"explore", "commit"}
        Where the agent stands.
    coef_ : ndarray of shape (`n_features_`,)
        The GLM estimate ``theta_hat`` (zeros before the commit online; from
        the logged duel rows after :meth:`fit`).
    n_iter_ : int
        Newton steps of the last GLM fit.
    borda_scores_ : ndarray of shape (`n_items_`,)
        The plug-in Borda scores ``B_hat`` (1/2 everywhere before the commit).
    best_item_ : int
        The estimated Borda winner (the committed item after the commit).
    duel_counts_ : ndarray of shape (`n_items_`, `n_items_`)
        Number of duels observed for each ordered pair.
    duel_wins_ : ndarray of shape (`n_items_`, `n_items_`)
        Wins of the first item for each ordered pair.
    n_duels_ : int
        Duels observed.
    n_selected_ : int
        Pairs proposed by :meth:`select`.
    random_state_ : numpy.random.RandomState
        The agent's random stream.
    n_features_in_ : int
        Width of the duel rows (``n_features_``, or the columns of ``X`` given to :meth:`fit`).
    classes_ : ndarray of shape (2,)
        The two outcome labels (``[0, 1]`` online; the labels of ``y`` after :meth:`fit`).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when X had string column names.

    See Also
    --------
    BordaEXP3 : Exponential-weights agent for the adversarial linear setting.
    ETCBorda : The feature-free explore-then-commit baseline.
    PairwiseGLMClassifier : The GLM estimate alone, as a classifier on pair features.
    simulate : Run an agent against a :class:`GLMDuelingEnv`.

    Notes
    -----
    Reconstructed from the paper (Algorithm 1, BETC-GLM): uniform exploration,
    an optional G-optimal refinement, the GLM estimate of Eq. (4.1) on all
    exploration duels (solved by Newton steps, with a small ridge ``alpha``),
    plug-in Borda scores, and commitment. Assumptions: exploration draws
    ordered pairs uniformly from ``[K]^2`` (self-duels included, as in the
    definition of ``lambda_0``); the G-optimal variant splits the same total
    ``n_explore`` into ``burn_in`` uniform rounds and design rounds (counts
    by largest-remainder rounding of ``N pi``, each spread uniformly over the
    pairs sharing a feature vector, in random order), instead of the paper's
    ``ceil(d pi / epsilon^2)`` counts; ``"auto"`` uses ``c = 1`` without the
    logarithmic and ``1/kappa`` factors of the theory. :meth:`fit` (offline) is
    the GLM estimate on the logged duel rows (with the plug-in Borda scores
    when the agent knows its items); online, the agent commits as soon as
    ``n_explore`` duels have been reported.

    References
    ----------
    .. [1] Y. Wu, T. Jin, Q. Di, H. Lou, F. Farnoud and Q. Gu, "Borda Regret
       Minimization for Generalized Linear Dueling Bandits", Proceedings of the
       41st International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn_icml.bandits import BordaETC, GLMDuelingEnv, simulate
    >>> env = GLMDuelingEnv.hard_instance(d=3, random_state=0)
    >>> agent = BordaETC(horizon=5000, random_state=0)
    >>> result = simulate(agent, env, horizon=5000, random_state=0)
    >>> result.agent.n_explore_, result.agent.best_item_ == env.borda_winner()
    (737, True)
    >>> round(float(result.regret[-1]))
    292
    """

    _parameter_constraints = {
        **_FeatureAgent._parameter_constraints,
        "horizon": [Interval(Integral, 1, None, closed="left"), None],
        "n_explore": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "c_explore": [Interval(Real, 0, None, closed="neither")],
        "exploration": [StrOptions({"uniform", "g_optimal"})],
        "burn_in": [Interval(Real, 0, 1, closed="both")],
        "link": [StrOptions(set(LINKS))],
        "alpha": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, pair_features=None, item_features=None, *, horizon=None, n_explore="auto", c_explore=1.0,
                 exploration="uniform", burn_in=0.2, link="logistic", alpha=1e-4, random_state=None):
        self.pair_features = pair_features
        self.item_features = item_features
        self.horizon = horizon
        self.n_explore = n_explore
        self.c_explore = c_explore
        self.exploration = exploration
        self.burn_in = burn_in
        self.link = link
        self.alpha = alpha
        self.random_state = random_state

    # ---- policy ------------------------------------------------------------------------------
    def _exploration_length(self):
        if self.n_explore == "auto":
            T = _check_horizon(self, 'n_explore="auto"')
            n = math.ceil(self.c_explore * self.n_features_ ** (2 / 3) * T ** (2 / 3))
        else:
            n = int(self.n_explore)
        return n if self.horizon is None else min(n, int(self.horizon))

    def _init_policy(self):
        self.n_explore_ = self._exploration_length()
        self.phase_ = "explore"
        self.coef_ = np.zeros(self.n_features_)
        self.n_iter_ = 0
        self.n_selected_ = 0
        self.design_ = None
        rng = self.random_state_
        if self.exploration == "uniform":
            self.exploration_pairs_ = self._uniform_pairs(self.n_explore_)
            return
        n_burn = int(round(self.burn_in * self.n_explore_))
        burn = self._uniform_pairs(n_burn)
        features, pairs, group = self._actions.distinct_pairs()
        weights, _ = g_optimal_design(features, tol=1e-2)
        self.design_ = weights
        n_design = self.n_explore_ - n_burn
        # largest-remainder rounding of n_design * weights
        raw = n_design * weights
        counts = np.floor(raw).astype(int)
        short = n_design - counts.sum()
        if short > 0:
            counts[np.argsort(-(raw - counts), kind="stable")[:short]] += 1
        # each design point's duels go to uniformly chosen pairs carrying it, in random orientation
        order = np.argsort(group, kind="stable")
        starts = np.searchsorted(group[order], np.arange(len(features)))
        sizes = np.bincount(group, minlength=len(features))
        point = np.repeat(np.arange(len(features)), counts)
        member = order[starts[point] + (rng.random_sample(len(point)) * sizes[point]).astype(int)]
        design_pairs = pairs[member]
        flip = rng.random_sample(len(point)) < 0.5
        design_pairs[flip] = design_pairs[flip][:, ::-1]
        design_pairs = design_pairs[rng.permutation(len(design_pairs))]
        self.exploration_pairs_ = np.vstack([burn, design_pairs]).astype(np.intp)

    def _select_pairs(self, n):
        if self.phase_ == "commit":
            self.n_selected_ += n
            return np.full((n, 2), self.best_item_, dtype=np.intp)
        planned = self.exploration_pairs_[self.n_selected_:self.n_selected_ + n]
        extra = n - len(planned)
        if extra > 0:  # outcomes of the planned duels are pending: keep exploring uniformly
            planned = np.vstack([planned, self._uniform_pairs(extra)])
        self.n_selected_ += n
        return planned

    def _fixed_rounds(self):
        if self.phase_ == "commit":
            return np.inf
        return max(1, self.n_explore_ - self.n_duels_)

    def _update_policy(self, pairs, outcomes):
        if self.phase_ == "explore" and self.n_duels_ >= self.n_explore_:
            self._commit()

    def _commit(self):
        i, j = np.nonzero(self.duel_counts_)
        counts = self.duel_counts_[i, j]
        rows = self._actions.rows(i, j)
        theta, self.n_iter_, _ = fit_glm(rows, self.duel_wins_[i, j] / counts, counts, link=self.link,
                                         alpha=self.alpha, theta0=self.coef_)
        self.coef_ = theta
        self.phase_ = "commit"
        self._plugin_scores = self._actions.borda(theta, get_link(self.link))
        self.best_item_ = int(np.argmax(self._plugin_scores))

    def _borda_estimate(self):
        if self.phase_ != "commit":
            return np.full(self.n_items_, 0.5)
        return self._plugin_scores

    # ---- the offline face --------------------------------------------------------------------
    def _fit_rows(self, X, y):
        theta, self.n_iter_, _ = fit_glm(X, y, link=self.link, alpha=self.alpha)
        return theta

    def _rows_link(self):
        return self.link

    def _borda_from_coef(self, coef):
        return self._known_actions().borda(coef, get_link(self.link))
