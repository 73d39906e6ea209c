"""Simulated Chatbot-Arena battles for the ranking family."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..utils._sklearn_private import HasMethods, Interval, validate_params

__all__ = ["make_arena_battles", "simulate_sampled_battles"]


@validate_params(
    {
        "n_battles": [Interval(Integral, 1, None, closed="left")],
        "n_competitors": [Interval(Integral, 2, None, closed="left")],
        "tie_proba": [Interval(Real, 0, 1, closed="left")],
        "n_covariates": [Interval(Integral, 0, None, closed="left")],
        "score_scale": [Interval(Real, 0, None, closed="left")],
        "string_ids": ["boolean"],
        "pair_proba": ["array-like", None],
        "return_truth": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_arena_battles(n_battles=2000, n_competitors=10, *, tie_proba=0.1, n_covariates=0, score_scale=1.0,
                       string_ids=True, pair_proba=None, return_truth=False, random_state=None):
    """Pairwise battles between competitors with Bradley-Terry outcomes.

    Competitor ``m`` has a score ``xi_m ~ N(0, score_scale^2)`` (centred). A
    battle draws a pair, puts it in random order, and the first competitor
    wins with probability ``1 / (1 + exp(-(xi_first - xi_second + z . gamma)))``
    where ``z`` are standard-normal battle covariates; with probability
    ``tie_proba`` the battle is a tie instead.

    Parameters
    ----------
    n_battles : int, default=2000
        Number of battles.
    n_competitors : int, default=10
        Number of competitors.
    tie_proba : float, default=0.1
        Probability that a battle is a tie, whatever the scores.
    n_covariates : int, default=0
        Number of battle covariates appended to ``X`` (with coefficients
        ``gamma ~ N(0, 0.5^2)``).
    score_scale : float, default=1.0
        Standard deviation of the true scores (logit scale; 1 is 174 Elo points).
    string_ids : bool, default=True
        Ids ``"model-00"``, ``"model-01"``, ... (an object array) instead of ints.
    pair_proba : array-like of shape (n_competitors * (n_competitors - 1) / 2,), default=None
        Sampling probabilities of the unordered pairs ``(i, j), i < j`` in
        lexicographic order; uniform when None.
    return_truth : bool, default=False
        Also return the true scores and coefficients.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_battles, 2 + n_covariates)
        Ids of the first and second competitor, then the covariates.
    y : ndarray of shape (n_battles,)
        ``"model_a"`` (first won), ``"model_b"`` (second won) or ``"tie"``.
    truth : dict
        Only with ``return_truth=True``: ``"items"`` (the ids), ``"scores"``
        (true centred scores), ``"covariate_coef"`` and ``"pair_index"``
        (index of each battle's unordered pair).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_arena_battles
    >>> X, y = make_arena_battles(n_battles=5, n_competitors=3, random_state=0)
    >>> X.shape, sorted(str(v) for v in set(y) - {"tie"})
    ((5, 2), ['model_a', 'model_b'])
    """
    rng = check_random_state(random_state)
    M = n_competitors
    scores = score_scale * rng.standard_normal(M)
    scores -= scores.mean()
    gamma = 0.5 * rng.standard_normal(n_covariates)
    ii, jj = np.triu_indices(M, k=1)
    if pair_proba is None:
        pair = rng.randint(len(ii), size=n_battles)
    else:
        prob = np.asarray(pair_proba, dtype=np.float64)
        if prob.shape != (len(ii),) or np.any(prob < 0) or prob.sum() <= 0:
            raise ValueError(f"make_arena_battles: pair_proba must hold {len(ii)} non-negative numbers; "
                             f"got shape {prob.shape}.")
        pair = rng.choice(len(ii), size=n_battles, p=prob / prob.sum())
    flip = rng.rand(n_battles) < 0.5
    a = np.where(flip, jj[pair], ii[pair])
    b = np.where(flip, ii[pair], jj[pair])
    Z = rng.standard_normal((n_battles, n_covariates))
    eta = scores[a] - scores[b] + Z @ gamma
    first = rng.rand(n_battles) < 1.0 / (1.0 + np.exp(-eta))
    tie = rng.rand(n_battles) < tie_proba
    y = np.where(tie, "tie", np.where(first, "model_a", "model_b"))
    if string_ids:
        items = np.array([f"model-{m:02d}" for m in range(M)], dtype=object)
        X = np.empty((n_battles, 2 + n_covariates), dtype=object)
        X[:, 0], X[:, 1] = items[a], items[b]
        X[:, 2:] = Z
    else:
        items = np.arange(M)
        X = np.column_stack([a, b, Z]) if n_covariates else np.column_stack([a, b])
    if return_truth:
        return X, y, {"items": items, "scores": scores, "covariate_coef": gamma, "pair_index": pair}
    return X, y


@validate_params(
    {
        "sampler": [HasMethods(["sample", "partial_fit"])],
        "scores": ["array-like"],
        "n_battles": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def simulate_sampled_battles(sampler, scores, n_battles, *, batch_size=100, random_state=None):
    """Simulate battles chosen by an active pair sampler, decided by Bradley-Terry with true ``scores``.

    The sampler draws ``batch_size`` pairs at a time and learns the outcomes
    (``partial_fit``) before the next batch, so later pairs follow its
    updated probabilities, as in an arena that samples actively. The first
    competitor of a pair wins with probability
    ``1 / (1 + exp(-(scores[i] - scores[j])))``. The probabilities the pairs
    were drawn with are returned for the estimators that reweight by them
    (``sampling_proba``).

    Parameters
    ----------
    sampler : fitted ActivePairSampler or object with ``sample`` and ``partial_fit``
        Its items must be the integer codes ``0..len(scores) - 1``; it is
        updated in place.
    scores : array-like of shape (n_competitors,)
        True Bradley-Terry scores of the competitors.
    n_battles : int
        Number of battles; the last batch is smaller when ``batch_size`` does
        not divide it.
    batch_size : int, default=100
        Pairs drawn between two updates of the sampler.
    random_state : int, RandomState instance or None, default=None
        Seeds the outcomes (the sampler draws the pairs from its own).

    Returns
    -------
    X : ndarray of shape (n_battles, 2)
        Integer competitor codes (first, second).
    y : ndarray of shape (n_battles,)
        1 where the first competitor won, else 0.
    proba : ndarray of shape (n_battles,)
        Probability with which each battle's pair was drawn, at the time it
        was drawn.

    See Also
    --------
    make_arena_battles : Battles of pairs drawn without a sampler.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.datasets import simulate_sampled_battles
    >>> from sklearn_icml.ranking import ActivePairSampler
    >>> sampler = ActivePairSampler(items=np.arange(4), random_state=0).fit()
    >>> X, y, proba = simulate_sampled_battles(sampler, [1.0, 0.5, 0.0, -0.5], 250, random_state=0)
    >>> X.shape, y.shape, bool(np.all((proba > 0) & (proba <= 1)))
    ((250, 2), (250,), True)
    """
    rng = check_random_state(random_state)
    scores = np.asarray(scores, dtype=np.float64)
    Xs, ys, ps = [], [], []
    sizes = [batch_size] * (n_battles // batch_size) + ([n_battles % batch_size] if n_battles % batch_size else [])
    for size in sizes:
        X, p = sampler.sample(size)
        X = X.astype(int)
        y = (rng.rand(size) < 1 / (1 + np.exp(-(scores[X[:, 0]] - scores[X[:, 1]])))).astype(int)
        sampler.partial_fit(X, y)
        Xs.append(X), ys.append(y), ps.append(p)
    return np.vstack(Xs), np.concatenate(ys), np.concatenate(ps)
