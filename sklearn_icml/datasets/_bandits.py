"""Logged duels of a generalized linear dueling bandit, for the bandits family."""

from numbers import Integral, Real

from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, validate_params

__all__ = ["make_glm_duels"]


@validate_params(
    {
        "n_duels": [Interval(Integral, 1, None, closed="left")],
        "n_items": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "link": [StrOptions({"logistic", "probit", "linear"})],
        "scale": [Interval(Real, 0, None, closed="neither"), None],
        "item_features": ["boolean"],
        "return_env": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_glm_duels(n_duels=1000, n_items=20, n_features=4, *, link="logistic", scale=None, item_features=False,
                   return_env=False, random_state=None):
    """Generate duels between random pairs of items under a generalized linear preference model.

    A random :class:`~sklearn_icml.bandits.GLMDuelingEnv` is drawn
    (:meth:`~sklearn_icml.bandits.GLMDuelingEnv.random_instance`: unit pair
    features, or item features with ``phi_ij = x_i - x_j``, and ``theta`` of
    norm ``scale``), then ``n_duels`` ordered pairs of distinct items are
    drawn uniformly and played: the first item wins with probability
    ``mu(phi_ij . theta)``.

    Parameters
    ----------
    n_duels : int, default=1000
        Number of duels.
    n_items : int, default=20
        Number of items.
    n_features : int, default=4
        Dimension of the pair features.
    link : {"logistic", "probit", "linear"}, default="logistic"
        The link ``mu``.
    scale : float, default=None
        Norm of ``theta`` (2 for the logistic and probit links, 1/2 for the
        linear link).
    item_features : bool, default=False
        Use item features (``phi_ij = x_i - x_j``) instead of free pair features.
    return_env : bool, default=False
        Also return the item pairs and the environment (which holds ``theta``).
    random_state : int, RandomState instance or None, default=None
        Seeds the environment and the duels.

    Returns
    -------
    X : ndarray of shape (n_duels, n_features)
        Pair features ``phi_ij`` of the duels (the input of
        :class:`~sklearn_icml.bandits.PairwiseGLMClassifier`).
    y : ndarray of shape (n_duels,)
        1 where the first item won, 0 otherwise.
    pairs : ndarray of shape (n_duels, 2)
        Item indices of the duels (the input of the agents); only with
        ``return_env=True``.
    env : GLMDuelingEnv
        The environment; only with ``return_env=True``.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_glm_duels
    >>> X, y, pairs, env = make_glm_duels(n_duels=5, n_items=4, n_features=2, return_env=True, random_state=0)
    >>> X.shape, y.shape, pairs.shape, env.n_items
    ((5, 2), (5,), (5, 2), 4)
    """
    from ..bandits import GLMDuelingEnv

    rng = check_random_state(random_state)
    env = GLMDuelingEnv.random_instance(n_items, n_features, link, scale=scale, item_features=item_features,
                                        random_state=rng)
    pairs, y = env.sample_duels(n_duels, random_state=rng)
    features = env._actions.rows(pairs[:, 0], pairs[:, 1])
    if return_env:
        return features, y, pairs, env
    return features, y
