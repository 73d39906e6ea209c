"""Fixed-rule aggregation of attribution maps: the paper's AGG_mean and AGG_var baselines (S10)."""

from numbers import Real

import numpy as np

from ..utils._sklearn_private import Interval, StrOptions, validate_params
from ..utils._torch import as_numpy

#: The constant added to the per-feature variance by the official AGG_var code.
AGG_VAR_OFFSET = 0.226


def _inverse_variance(maps, offset):
    """AGG_var on maps of shape (..., k, d): ``(1/k) sum_i phi_i / (var_i(phi_i) + offset)``, per feature."""
    k = maps.shape[-2]
    var = maps.var(axis=-2, ddof=1) if k > 1 else np.zeros(maps.shape[:-2] + maps.shape[-1:])
    return maps.sum(axis=-2) / (k * (var + offset))


@validate_params(
    {
        "attributions": ["array-like"],
        "method": [StrOptions({"mean", "variance"})],
        "variance_offset": [Interval(Real, 0, None, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def aggregate_attributions(attributions, *, method="mean", variance_offset=AGG_VAR_OFFSET):
    """Aggregate several attribution maps of each input with a fixed rule (AGG_mean, AGG_var).

    Read more in the :ref:`User Guide <inspection>`.

    The two baselines of Decker et al. (2024) against which the optimised
    combinations of :class:`AttributionCombiner` are compared:

    * ``"mean"`` (AGG_mean): the plain average of the ``k`` maps;
    * ``"variance"`` (AGG_var): each feature's attributions averaged and
      divided by their variance across the methods plus a constant,
      ``(1/k) sum_i phi_i[j] / (Var_i(phi_i[j]) + c)``, so that features
      on which the methods disagree are damped.

    Parameters
    ----------
    attributions : array-like of shape (n_samples, n_methods, n_features)
        The maps of every method for every input (e.g. the base maps that
        :meth:`AttributionCombiner.explain` returns).
    method : {"mean", "variance"}, default="mean"
        AGG_mean or AGG_var.
    variance_offset : float, default=0.226
        The constant ``c`` of AGG_var (the official code's value).

    Returns
    -------
    aggregated : ndarray of shape (n_samples, n_features)
        One map per input.

    See Also
    --------
    AttributionCombiner : The optimal per-input convex combination.

    Notes
    -----
    AGG_var follows the official code: the variance across methods has
    ``ddof=1`` (0 with a single method), and the weights
    ``1 / (k (Var + c))`` differ per feature and do not sum to one, so the
    result is not a convex combination and its scale depends on ``c`` and on
    the scale of the maps (compare it with scale-free criteria: optimally
    rescaled infidelity, or sensitivity relative to the map's norm).

    References
    ----------
    .. [1] Decker, T., Bhattarai, A. R., Gu, J., Tresp, V. and Buettner, F.
       "Provably Better Explanations with Optimized Aggregation of Feature
       Attributions". Proceedings of the 41st International Conference on
       Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.inspection import aggregate_attributions
    >>> maps = np.array([[[1.0, 0.0], [1.0, 1.0]]])  # one input, two methods, two features
    >>> aggregate_attributions(maps)
    array([[1. , 0.5]])
    >>> aggregate_attributions(maps, method="variance").round(3)
    array([[4.425, 0.689]])
    """
    maps = np.asarray(as_numpy(attributions), dtype=np.float64)
    if maps.ndim != 3 or maps.shape[1] == 0:
        raise ValueError("aggregate_attributions: attributions must have shape (n_samples, n_methods, n_features) "
                         f"with at least one method; got shape {maps.shape}.")
    if not np.all(np.isfinite(maps)):
        raise ValueError("aggregate_attributions: attributions contain NaN or infinity.")
    if method == "mean":
        return maps.mean(axis=1)
    return _inverse_variance(maps, variance_offset)
