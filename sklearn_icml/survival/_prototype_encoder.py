"""PANTHER prototype encoding of bags (MMP's histology tokens): K-means prototypes + per-bag MAP-EM."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..utils._random import draw_seed
from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import to_numpy, to_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import check_value_range, square_safe_max
from ._bags import input_feature_names, padded_batch, validate_bags

__all__ = ["PrototypeEncoder"]

#: Variances are floored at this fraction of ``var_init`` (E[x^2] - mu^2 can cancel to <= 0).
_VAR_FLOOR = 1e-6


def map_em(x, mask, prototypes, prior_var, tau, n_iter):
    """Batched MAP-EM of a diagonal Gaussian mixture with a Dirichlet-NIW prior centred on the prototypes.

    ``x``: (B, L, d) padded instances, ``mask``: (B, L) 1 for real instances,
    ``prototypes`` and ``prior_var``: (K, d). Starts from the prior's mode
    (uniform weights, means = prototypes, variances = prior_var) and runs
    ``n_iter`` E and M steps. Returns ``pi`` (B, K), ``mu`` and ``var`` (B, K, d).
    """
    import torch

    B, _, d = x.shape
    K = prototypes.shape[0]
    log_2pi = math.log(2 * math.pi)
    pi = torch.full((B, K), 1.0 / K, dtype=x.dtype, device=x.device)
    mu = prototypes.expand(B, K, d)
    var = prior_var.expand(B, K, d)
    x2 = x * x
    m = prototypes.unsqueeze(0)
    second_prior = (prior_var + prototypes * prototypes).unsqueeze(0)
    floor = _VAR_FLOOR * float(prior_var.min())
    for _ in range(n_iter):
        inv = 1.0 / var
        # log N(x_n; mu_k, diag var_k) + log pi_k, expanded so that it is a pair of batched matmuls
        jll = -0.5 * (d * log_2pi + torch.log(var).sum(-1).unsqueeze(1)
                      + x2 @ inv.transpose(1, 2) - 2.0 * (x @ (mu * inv).transpose(1, 2))
                      + (mu * mu * inv).sum(-1).unsqueeze(1)) + torch.log(pi).unsqueeze(1)
        q = torch.softmax(jll, dim=-1) * mask.unsqueeze(-1)
        qt = q.transpose(1, 2)
        weight = q.sum(1) + tau                                   # (B, K)
        pi = weight / weight.sum(-1, keepdim=True)
        mu = (qt @ x + tau * m) / weight.unsqueeze(-1)
        var = ((qt @ x2 + tau * second_prior) / weight.unsqueeze(-1) - mu * mu).clamp_min(floor)
    return pi, mu, var


class PrototypeEncoder(TransformerMixin, TorchEstimatorMixin, BaseEstimator):
    """Condense each bag of instances onto cohort prototypes: per-bag mixture weights, means and variances.

    Read more in the :ref:`User Guide <survival>`.

    The histology encoder of MMP (Song et al., 2024), PANTHER's aggregation.
    ``fit`` finds ``n_prototypes`` morphological prototypes by K-means on
    instances pooled from the training bags (sub-sampled to
    ``max_fit_instances``). ``transform`` fits, for every bag on its own, a
    diagonal Gaussian mixture whose prior is centred on the prototypes (a
    Dirichlet-Normal-Inverse-Wishart prior of strength ``tau``), by
    ``em_iter`` MAP-EM steps started at the prior's mode. A bag of thousands
    of instances becomes ``n_prototypes`` tokens ``[pi_k, mu_k, var_k]``:
    how much of the bag looks like prototype k, and where and how spread its
    instances around it are. The EM runs batched in torch on ``device``.

    Parameters
    ----------
    n_prototypes : int, default=16
        Number of prototypes K (mixture components).
    n_init : int, default=3
        K-means restarts.
    max_fit_instances : int, default=100_000
        At most this many training instances, drawn uniformly without
        replacement, go into K-means.
    em_iter : int, default=1
        MAP-EM iterations per bag.
    tau : float, default=1.0
        Prior strength: pseudo-count added to every component's weight, and
        weight of the prototype and prior variance in the means and
        variances.
    var_init : float, default=1.0
        Prior variance (every dimension, every component): the spread the E
        step assumes around each prototype. Choose it on the scale of the
        instance features.
    output : {"allcat", "pi_mu", "pi"}, default="allcat"
        Per prototype, in prototype order: ``[pi_k, mu_k, var_k]`` (``1 + 2d``
        numbers), ``[pi_k, mu_k]`` (``1 + d``), or ``pi_k`` alone.
    batch_size : int, default=64
        Bags per EM batch (bags of similar size are batched together; memory
        grows with ``batch_size`` times the largest bag of the batch).
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the EM runs. K-means runs on the CPU (scikit-learn).
    random_state : int, RandomState instance or None, default=None
        Seeds the instance sub-sample and K-means.
    verbose : int, default=0
        Print progress when positive.

    Attributes
    ----------
    prototypes_ : ndarray of shape (n_prototypes, n_features)
        The K-means prototypes (prior means).
    prior_var_ : ndarray of shape (n_prototypes, n_features)
        Prior variances (``var_init`` everywhere).
    n_fit_instances_ : int
        Number of instances K-means was fitted on.
    device_ : str
        Where the EM of :meth:`transform` runs (``device`` resolved at fit).
    mean_bag_size_ : float
        Mean number of instances per training bag; ``mean_bag_size_ /
        n_prototypes`` is the compression ratio.
    n_features_in_ : int
        Instance dimension ``d`` seen in fit.
    feature_names_in_ : ndarray of shape (n_features,)
        Feature names, when fitted on a DataFrame of plain rows (bags of one).

    See Also
    --------
    BagPooler : Mean / max pooling, the baseline.
    PrototypeSurvival : The MMP fusion network on these tokens and pathway tokens.
    CoxSurvival : A Cox head for the flat features.

    Notes
    -----
    Bags come as a list (or object array, or pandas Series) of ``(n_i, d)``
    arrays, a 3-D array padded with all-NaN rows, or a 2-D array read as bags
    of one instance each. With the mixture ``pi, mu, var`` started at
    ``(1/K, prototypes, var_init)``, one iteration is: responsibilities
    ``q_nk`` of every instance (E step), then, with ``N_k = sum_n q_nk``,
    ``pi_k = (N_k + tau) / sum_j (N_j + tau)``,
    ``mu_k = (sum_n q_nk x_n + tau m_k) / (N_k + tau)`` and
    ``var_k = (sum_n q_nk x_n^2 + tau (V_k + m_k^2)) / (N_k + tau) - mu_k^2``
    (M step), as in the official code (``em_iter=1``, ``tau=1``; its prior
    variance ``eps`` is our ``var_init``; the prototypes are frozen). We
    floor the variances at ``1e-6 * var_init``. The output is ordered by
    prototype (token-major), so reshaping to ``(n_bags, K, -1)`` gives the
    tokens; the official "allcat" lists all weights, then all means, then all
    variances, the same numbers in another order. K-means is scikit-learn's
    (the official code also offers FAISS on GPU). ``output="pi"`` is the
    better input for a linear head on a small cohort: "allcat" has
    ``K (1 + 2d)`` columns.

    The tokens' variances are second moments of the instances, so instance
    features must be small enough for their squares to be finite in the bags'
    dtype: up to about 1e151 in float64 and 1e16 in float32. Larger values
    are refused with a ``ValueError`` in :meth:`fit` and :meth:`transform`
    (rescale the features, and ``var_init`` with them).

    References
    ----------
    .. [1] Song, A. H., Chen, R. J., Jaume, G., Vaidya, A. J., Baras, A. S. and
       Mahmood, F. "Multimodal Prototyping for cancer survival prediction",
       Proceedings of the 41st International Conference on Machine Learning
       (ICML), PMLR 235, 2024.
    .. [2] Song, A. H., Chen, R. J., Ding, T., Williamson, D. F. K., Jaume, G.
       and Mahmood, F. "Morphological prototyping for unsupervised slide
       representation learning in computational pathology" (PANTHER), CVPR 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.survival import PrototypeEncoder
    >>> rng = np.random.RandomState(0)
    >>> bags = [np.vstack([rng.normal(0, 0.1, (20 - k, 2)), rng.normal(5, 0.1, (k, 2))]) for k in (2, 10, 18)]
    >>> enc = PrototypeEncoder(n_prototypes=2, output="pi", random_state=0).fit(bags)
    >>> np.round(np.sort(enc.transform(bags), axis=1), 2)
    array([[0.14, 0.86],
           [0.5 , 0.5 ],
           [0.14, 0.86]])
    """

    _parameter_constraints = {
        "n_prototypes": [Interval(Integral, 1, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "max_fit_instances": [Interval(Integral, 1, None, closed="left")],
        "em_iter": [Interval(Integral, 1, None, closed="left")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "var_init": [Interval(Real, 0, None, closed="neither")],
        "output": [StrOptions({"allcat", "pi_mu", "pi"})],
        "random_state": ["random_state"],
    }

    def __init__(self, n_prototypes=16, *, n_init=3, max_fit_instances=100_000, em_iter=1, tau=1.0,
                 var_init=1.0, output="allcat", batch_size=64, device="cpu", random_state=None, verbose=0):
        self.n_prototypes = n_prototypes
        self.n_init = n_init
        self.max_fit_instances = max_fit_instances
        self.em_iter = em_iter
        self.tau = tau
        self.var_init = var_init
        self.output = output
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Find the prototypes by K-means on (sub-sampled) training instances.

        Parameters
        ----------
        X : list of ndarray, ndarray of shape (n_bags, max_len, d) or (n_samples, d)
            Training bags (see :func:`as_bags`).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        with self._torch_fit_context():  # device resolved first and recorded; K-means is numpy
            bags = self._validate(X, reset=True)
            name = type(self).__name__
            flat = bags.flat
            n_instances = flat.shape[0]
            if n_instances < self.n_prototypes:
                raise ValueError(f"{name}: n_prototypes={self.n_prototypes} needs at least as many training "
                                 f"instances; got {n_instances} instance(s) in {bags.n_bags} bag(s) "
                                 f"({n_instances} sample(s)).")
            rng = check_random_state(self.random_state)
            if n_instances > self.max_fit_instances:
                idx = np.sort(rng.choice(n_instances, size=self.max_fit_instances, replace=False))
                sample = flat[idx]
            else:
                sample = flat
            km = KMeans(n_clusters=self.n_prototypes, n_init=self.n_init,
                        random_state=draw_seed(rng)).fit(sample)
            self.prototypes_ = km.cluster_centers_.astype(np.float64)
            self.prior_var_ = np.full_like(self.prototypes_, float(self.var_init))
            self.n_fit_instances_ = int(sample.shape[0])
            self.mean_bag_size_ = float(n_instances / bags.n_bags)
            self._bag_input = bags.kind != "rows"
            if self.verbose:
                print(f"[{name}] K-means on {sample.shape[0]} instances: inertia {km.inertia_:.4g}")
        return self

    def _validate(self, X, reset):
        """The bags, refused when their squares would overflow the float dtype the EM runs in."""
        bags = validate_bags(self, X, reset=reset, ensure_min_bags=1)
        dtype = bags.flat.dtype
        check_value_range(bags.flat, name=type(self).__name__, limit=square_safe_max(dtype),
                          reason=f"K-means and the MAP-EM form squares of the instance features, in {dtype}")
        return bags

    def _encode(self, bags):
        import torch

        flat = bags.flat
        dtype = torch.float32 if flat.dtype == np.float32 else torch.float64
        K, d = self.prototypes_.shape
        width = {"pi": 1, "pi_mu": 1 + d, "allcat": 1 + 2 * d}[self.output]
        out = np.empty((bags.n_bags, K, width), dtype=flat.dtype)
        order = np.argsort(bags.lengths, kind="stable")
        with self._torch_context() as ctx, torch.no_grad():
            device = ctx.device
            protos = to_tensor(self.prototypes_, device, dtype)
            prior_var = to_tensor(self.prior_var_, device, dtype)
            for start in range(0, bags.n_bags, self.batch_size):
                index = order[start:start + self.batch_size]
                x, mask = padded_batch(flat, bags.offsets, index)
                xt = to_tensor(x, device, dtype)
                mt = to_tensor(mask, device, dtype)
                pi, mu, var = map_em(xt, mt, protos, prior_var, float(self.tau), self.em_iter)
                parts = [pi.unsqueeze(-1)]
                if self.output != "pi":
                    parts.append(mu)
                if self.output == "allcat":
                    parts.append(var)
                out[index] = to_numpy(torch.cat(parts, dim=-1))
                if self.verbose > 1:
                    print(f"[{type(self).__name__}] encoded {min(start + self.batch_size, bags.n_bags)}"
                          f"/{bags.n_bags} bags")
        return out.reshape(bags.n_bags, K * width)

    def transform(self, X):
        """Encode every bag by MAP-EM around the prototypes.

        Parameters
        ----------
        X : list of ndarray, ndarray of shape (n_bags, max_len, d) or (n_samples, d)
            Bags (see :func:`as_bags`).

        Returns
        -------
        X_tokens : ndarray of shape (n_bags, n_prototypes * width)
            Per prototype ``[pi_k, mu_k, var_k]`` (width ``1 + 2d``),
            ``[pi_k, mu_k]`` (``1 + d``) or ``pi_k`` (1), in the bags' float dtype.
        """
        check_is_fitted(self)
        return self._encode(self._validate(X, reset=False))

    def get_feature_names_out(self, input_features=None):
        """Output names: ``proto<k>_pi``, ``proto<k>_mu<j>``, ``proto<k>_var<j>``.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Only validated (one name, a bag column, is also accepted); the output
            names use the instance feature index ``j``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            Output names, in the column order of :meth:`transform`.
        """
        check_is_fitted(self)
        input_feature_names(self, input_features, bag_column=self._bag_input)
        K, d = self.prototypes_.shape
        names = []
        for k in range(K):
            names.append(f"proto{k}_pi")
            if self.output != "pi":
                names.extend(f"proto{k}_mu{j}" for j in range(d))
            if self.output == "allcat":
                names.extend(f"proto{k}_var{j}" for j in range(d))
        return np.array(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
