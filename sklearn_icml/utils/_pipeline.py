"""The estimator a scorer should call, seen through a :class:`~sklearn.pipeline.Pipeline`."""

from sklearn.pipeline import Pipeline

__all__ = ["final_step"]


def final_step(estimator, X=None):
    """The last step of a (nested) fitted Pipeline and ``X`` carried through the steps before it.

    A scorer that calls a method only the library's estimator has
    (``invariant_measure_score``, an agent's simulation, ...) reaches that
    estimator through this helper, so it scores a
    ``Pipeline([..., ("model", estimator)])`` held by a search exactly as it
    scores the bare estimator on the transformed ``X``. Anything that is not
    a Pipeline is returned as it is, with ``X`` unchanged.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator or Pipeline (Pipelines nested as last steps are
        unwrapped in turn).
    X : array-like or None, default=None
        Input of the Pipeline; ``None`` when the scorer uses no data.

    Returns
    -------
    final : estimator
        The fitted final step.
    Xt : array-like or None
        ``X`` transformed by every step before it (``None`` stays ``None``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_icml.utils._pipeline import final_step
    >>> X = np.arange(8.0).reshape(4, 2)
    >>> pipe = make_pipeline(StandardScaler(), Ridge()).fit(X, [0, 1, 2, 3])
    >>> model, Xt = final_step(pipe, X)
    >>> type(model).__name__, bool(np.allclose(Xt, StandardScaler().fit_transform(X)))
    ('Ridge', True)
    """
    while isinstance(estimator, Pipeline):
        if X is not None and len(estimator) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator[-1]
    return estimator, X
