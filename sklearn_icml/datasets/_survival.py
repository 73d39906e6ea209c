"""Synthetic multimodal survival data: bags of instance embeddings, genes grouped in pathways, censored times."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..utils._sklearn_private import Interval, StrOptions, validate_params

__all__ = ["make_multimodal_survival"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_morphologies": [Interval(Integral, 4, None, closed="left")],
        "bag_size": [tuple],
        "n_genes": [Interval(Integral, 1, None, closed="left")],
        "n_pathways": [Interval(Integral, 1, None, closed="left")],
        "censoring": [Interval(Real, 0, 1, closed="left")],
        "noise": [Interval(Real, 0, None, closed="neither")],
        "aggressive_center": [StrOptions({"midpoint", "distinct"})],
        "as_frame": ["boolean"],
        "return_info": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multimodal_survival(n_samples=500, *, n_features=16, n_morphologies=8, bag_size=(60, 200), n_genes=40,
                             n_pathways=4, censoring=0.4, noise=0.5, aggressive_center="midpoint", as_frame=False,
                             return_info=False, random_state=None):
    """Generate patients with a bag of instance embeddings, gene expression and a censored survival time.

    Each patient's bag holds ``bag_size`` instances (patch embeddings) drawn
    around ``n_morphologies`` morphology centres in ``n_features``
    dimensions. Morphology 0 is aggressive. A patient's combined share ``s``
    of morphologies 0, 1 and 2 and its aggressive share ``pi_0`` are drawn
    independently, the rest of ``s`` going in equal parts to 1 and 2. With
    ``aggressive_center="midpoint"`` (the default), morphology 0 sits exactly
    at the midpoint of the benign morphologies 1 and 2, so the **bag mean is
    independent of the aggressive fraction**: a mean-pooled summary is blind
    to the main risk term by construction, and only a summary that tells
    instances apart (such as :class:`~sklearn_icml.survival.PrototypeEncoder`
    or attention pooling) sees it. With ``"distinct"``, morphology 0 has a
    centre of its own and the bag mean moves linearly with ``pi_0``: the
    mean is informative too. The two regimes share every other draw (same
    proportions, bags up to the position of morphology 0, genes and times).
    Genes load on
    ``n_pathways`` latent pathway activities. The log-hazard is
    ``eta = 16 pi_0 - 4 pi_3 + z_0``: aggressive fraction, a protective
    morphology 3 (which a mean does see) and pathway 0's activity. Event times
    are exponential with rate ``exp(eta)``, censored by independent
    exponential times so that about ``censoring`` of the patients are censored.

    Parameters
    ----------
    n_samples : int, default=500
        Number of patients.
    n_features : int, default=16
        Instance dimension.
    n_morphologies : int, default=8
        Number of morphology centres (at least 4).
    bag_size : tuple of (int, int), default=(60, 200)
        Inclusive range of the number of instances per bag.
    n_genes : int, default=40
        Number of genes, split evenly over the pathways.
    n_pathways : int, default=4
        Number of pathways (at most ``n_genes``).
    censoring : float, default=0.4
        Target censoring fraction, in [0, 1).
    noise : float, default=0.5
        Standard deviation of the instances around their morphology centre.
    aggressive_center : {"midpoint", "distinct"}, default="midpoint"
        Where the aggressive morphology sits: at the midpoint of morphologies
        1 and 2 (the bag mean carries no information on its share), or at a
        random centre of its own, drawn like the others (the bag mean does).
    as_frame : bool, default=False
        Return one DataFrame: a ``"bag"`` column holding the bags, and the genes
        as columns ``gene0, gene1, ...``.
    return_info : bool, default=False
        Also return the ground truth (see Returns).
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    bags : list of ndarray of shape (n_i, n_features)
        The bags (not returned when ``as_frame=True``).
    genes : ndarray of shape (n_samples, n_genes)
        Gene expression (not returned when ``as_frame=True``).
    frame : pandas.DataFrame
        With ``as_frame=True``, instead of ``bags`` and ``genes``.
    y : ndarray of shape (n_samples,)
        Structured survival target with fields ``event`` (bool) and ``time``.
    info : Bunch
        With ``return_info=True``: ``risk`` (the log-hazard), ``proportions``
        (n_samples, n_morphologies), ``centers`` (n_morphologies,
        n_features), ``aggressive`` (0), ``pathways`` (name -> gene indices,
        or gene names with ``as_frame``) and ``pathway_activity``
        (n_samples, n_pathways).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_multimodal_survival
    >>> bags, genes, y = make_multimodal_survival(n_samples=50, random_state=0)
    >>> len(bags), bags[0].shape[1], genes.shape, y.dtype.names
    (50, 16, (50, 40), ('event', 'time'))
    """
    low, high = bag_size if len(bag_size) == 2 else (None, None)
    if not (isinstance(low, Integral) and isinstance(high, Integral) and 1 <= low <= high):
        raise ValueError(f"make_multimodal_survival: bag_size must be a pair (low, high) of integers with "
                         f"1 <= low <= high; got {bag_size!r}.")
    if n_pathways > n_genes:
        raise ValueError(f"make_multimodal_survival: n_pathways={n_pathways} exceeds n_genes={n_genes}.")
    rng = check_random_state(random_state)
    M = n_morphologies
    centers = rng.normal(scale=1.5, size=(M, n_features))
    if aggressive_center == "midpoint":
        centers[0] = 0.5 * (centers[1] + centers[2])

    # proportions: the mass s of morphologies {0, 1, 2} and the aggressive share pi_0 are drawn independently,
    # with pi_1 = pi_2: the bag mean moves with s only, so it carries no information on pi_0
    s = rng.uniform(0.3, 0.6, size=n_samples)
    props = np.zeros((n_samples, M))
    props[:, 0] = rng.uniform(0.0, 0.3, size=n_samples)
    props[:, 1] = props[:, 2] = 0.5 * (s - props[:, 0])
    props[:, 3:] = (1.0 - s)[:, None] * rng.dirichlet(np.ones(M - 3), size=n_samples)

    sizes = rng.randint(low, high + 1, size=n_samples)
    bags = []
    for i in range(n_samples):
        counts = rng.multinomial(sizes[i], props[i])
        labels = np.repeat(np.arange(M), counts)
        bags.append(centers[labels] + noise * rng.normal(size=(sizes[i], n_features)))

    activity = rng.normal(size=(n_samples, n_pathways))
    membership = np.arange(n_genes) % n_pathways
    loadings = rng.uniform(0.5, 1.5, size=n_genes)
    genes = activity[:, membership] * loadings + rng.normal(size=(n_samples, n_genes))

    risk = 16.0 * props[:, 0] - 4.0 * props[:, 3] + activity[:, 0]
    rate = np.exp(risk - risk.mean())
    event_time = rng.exponential(1.0 / rate)
    if censoring > 0:
        # choose the censoring rate c so that the mean of c / (rate + c) is the target fraction
        lo, hi = 1e-8, 1e8
        for _ in range(100):
            c = np.sqrt(lo * hi)
            lo, hi = (c, hi) if np.mean(c / (rate + c)) < censoring else (lo, c)
        censor_time = rng.exponential(1.0 / c, size=n_samples)
    else:
        censor_time = np.full(n_samples, np.inf)
    event = event_time <= censor_time
    y = np.empty(n_samples, dtype=[("event", bool), ("time", np.float64)])
    y["event"] = event
    y["time"] = np.minimum(event_time, censor_time)

    pathways = {f"pathway{p}": np.flatnonzero(membership == p).tolist() for p in range(n_pathways)}
    info = Bunch(risk=risk, proportions=props, centers=centers, aggressive=0, pathways=pathways,
                 pathway_activity=activity)
    if as_frame:
        import pandas as pd

        names = [f"gene{j}" for j in range(n_genes)]
        frame = pd.DataFrame(genes, columns=names)
        frame.insert(0, "bag", pd.Series(bags, dtype=object))
        info.pathways = {p: [names[j] for j in idx] for p, idx in pathways.items()}
        return (frame, y, info) if return_info else (frame, y)
    return (bags, genes, y, info) if return_info else (bags, genes, y)
