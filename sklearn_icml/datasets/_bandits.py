"""Logged duels of a generalized linear dueling bandit, for the bandits family.

A generator of the ground: it draws plain arrays (pair or item features,
``theta``, duels) and knows no estimator; :class:`~sklearn_icml.bandits.GLMDuelingEnv`
builds its environments from the same draws (:func:`make_glm_instance`).
"""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit, ndtr
from sklearn.utils import check_random_state

from ..utils._sklearn_private import Interval, StrOptions, validate_params

__all__ = ["make_glm_duels", "make_glm_instance"]

#: ``mu`` of each link: ``P(i beats j) = mu(phi_ij . theta)``.
_LINK_MU = {"logistic": expit, "probit": ndtr, "linear": lambda x: 0.5 + np.asarray(x, dtype=float)}


def _draw_instance(n_items, n_features, link, scale, item_features, n_phases, rng, name):
    """The draws of :func:`make_glm_instance` from ``rng`` (advanced in place); ``name`` for the errors."""
    if scale is None:
        scale = 0.5 if link == "linear" else 2.0
    if link == "linear" and scale > 0.5 + 1e-12:
        raise ValueError(f"{name}: with the linear link scale must be at most 1/2 "
                         f"(unit features, |phi . theta| <= 1/2); got scale={scale}.")

    def sphere(size):
        z = rng.standard_normal(size)
        return z / np.linalg.norm(z, axis=-1, keepdims=True)

    theta = scale * sphere((n_phases, n_features))
    theta = theta if n_phases > 1 else theta[0]
    if item_features:
        return 0.5 * sphere((n_items, n_features)), theta
    iu, ju = np.triu_indices(n_items, k=1)
    pair = np.zeros((n_items, n_items, n_features))
    pair[iu, ju] = sphere((len(iu), n_features))
    pair[ju, iu] = -pair[iu, ju]
    return pair, theta



@validate_params(
    {
        "n_items": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "link": [StrOptions({"logistic", "probit", "linear"})],
        "scale": [Interval(Real, 0, None, closed="neither"), None],
        "item_features": ["boolean"],
        "n_phases": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_glm_instance(n_items=20, n_features=4, *, link="logistic", scale=None, item_features=False, n_phases=1,
                      random_state=None):
    """Draw a random generalized linear dueling instance: the features and ``theta``.

    Unit pair features uniform on the sphere for every unordered pair
    (``phi_ji = -phi_ij``), or item features uniform on the sphere of radius
    1/2 (``item_features=True``, ``phi_ij = x_i - x_j``), and ``theta``
    uniform on the sphere of radius ``scale`` (one per phase). Item ``i``
    beats item ``j`` with probability ``mu(phi_ij . theta)``;
    :meth:`~sklearn_icml.bandits.GLMDuelingEnv.random_instance` builds its
    environment from these draws.

    Parameters
    ----------
    n_items : int, default=20
        Number of items ``K``.
    n_features : int, default=4
        Dimension ``d`` of the features.
    link : {"logistic", "probit", "linear"}, default="logistic"
        The link ``mu``; it sets the default ``scale`` and bounds it for
        "linear" (probabilities need ``|phi . theta| <= 1/2``).
    scale : float, default=None
        Norm of ``theta``: 2 for the logistic and probit links, 1/2 for the
        linear link (at most 1/2 there).
    item_features : bool, default=False
        Draw item features instead of pair features.
    n_phases : int, default=1
        Number of independent ``theta`` (a non-stationary instance).
    random_state : int, RandomState instance or None, default=None
        Seeds the draws (a ``RandomState`` is advanced in place).

    Returns
    -------
    features : ndarray of shape (K, d) or (K, K, d)
        Item features, or antisymmetric pair features.
    theta : ndarray of shape (d,) or (n_phases, d)
        The hidden parameter (2-D only with several phases).

    See Also
    --------
    make_glm_duels : Duels played on such an instance.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.datasets import make_glm_instance
    >>> pair, theta = make_glm_instance(3, 2, random_state=0)
    >>> pair.shape, bool(np.allclose(pair, -pair.transpose(1, 0, 2))), round(float(np.linalg.norm(theta)), 6)
    ((3, 3, 2), True, 2.0)
    """
    return _draw_instance(n_items, n_features, link, scale, item_features, n_phases, check_random_state(random_state),
                          "make_glm_instance")


@validate_params(
    {
        "n_duels": [Interval(Integral, 1, None, closed="left")],
        "n_items": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "link": [StrOptions({"logistic", "probit", "linear"})],
        "scale": [Interval(Real, 0, None, closed="neither"), None],
        "item_features": ["boolean"],
        "return_instance": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_glm_duels(n_duels=1000, n_items=20, n_features=4, *, link="logistic", scale=None, item_features=False,
                   return_instance=False, random_state=None):
    """Generate duels between random pairs of items under a generalized linear preference model.

    A random instance is drawn (:func:`make_glm_instance`, the draws of
    :meth:`~sklearn_icml.bandits.GLMDuelingEnv.random_instance`: unit pair
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
    return_instance : bool, default=False
        Also return the item pairs, ``theta`` and the item or pair features:
        :class:`~sklearn_icml.bandits.GLMDuelingEnv` builds the environment
        from them (``GLMDuelingEnv(features, theta, link)`` for pair features,
        ``GLMDuelingEnv.from_item_features(features, theta, link)`` for item
        features).
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
        ``return_instance=True``.
    theta : ndarray of shape (n_features,)
        The hidden parameter; only with ``return_instance=True``.
    features : ndarray of shape (n_items, n_features) or (n_items, n_items, n_features)
        Item features (``item_features=True``) or pair features; only with
        ``return_instance=True``.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_glm_duels
    >>> X, y, pairs, theta, features = make_glm_duels(n_duels=5, n_items=4, n_features=2, return_instance=True,
    ...                                               random_state=0)
    >>> X.shape, y.shape, pairs.shape, theta.shape, features.shape
    ((5, 2), (5,), (5, 2), (2,), (4, 4, 2))
    """
    rng = check_random_state(random_state)
    features, theta = _draw_instance(n_items, n_features, link, scale, item_features, 1, rng, "make_glm_duels")
    if item_features:
        s = features @ theta
        scores = s[:, None] - s[None, :]
    else:
        scores = features @ theta
    P = np.clip(_LINK_MU[link](scores), 0.0, 1.0)
    i = rng.randint(n_items, size=n_duels)
    j = (i + rng.randint(1, n_items, size=n_duels)) % n_items
    pairs = np.column_stack([i, j])
    y = (rng.random_sample(n_duels) < P[i, j]).astype(np.int64)
    X = features[i] - features[j] if item_features else features[i, j]
    if return_instance:
        return X, y, pairs, theta, features
    return X, y
