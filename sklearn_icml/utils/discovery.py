"""Discover the public estimators, displays and functions of sklearn-icml.

Like :mod:`sklearn.utils.discovery`, but over this collection: every family
subpackage is imported and its ``__all__`` read, so a class counts as public
exactly when its family re-exports it.
"""

import importlib
import inspect
from operator import itemgetter

__all__ = ["all_displays", "all_estimators", "all_functions"]

# Subpackages that hold no estimators of their own.
_NOT_FAMILIES = {"utils"}

_TYPE_FILTERS = ("classifier", "regressor", "transformer", "cluster")


def _public_objects():
    import sklearn_icml

    for family in sklearn_icml._SUBMODULES:
        if family in _NOT_FAMILIES:
            continue
        module = importlib.import_module(f"sklearn_icml.{family}")
        for name in getattr(module, "__all__", ()):
            yield name, getattr(module, name)


def _unique_sorted(pairs):
    seen = {}
    for name, obj in pairs:
        seen.setdefault(name, obj)
    return sorted(seen.items(), key=itemgetter(0))


def all_estimators(type_filter=None):
    """Get a list of all public estimators of sklearn-icml.

    Parameters
    ----------
    type_filter : {"classifier", "regressor", "cluster", "transformer"} \
            or list of those, default=None
        Which kind of estimators to return; all of them when None.

    Returns
    -------
    estimators : list of tuples
        ``(name, class)`` pairs sorted by name.

    Examples
    --------
    >>> from sklearn_icml.utils.discovery import all_estimators
    >>> estimators = all_estimators()
    >>> all(isinstance(name, str) for name, _ in estimators)
    True
    """
    from sklearn.base import (
        BaseEstimator,
        ClassifierMixin,
        ClusterMixin,
        RegressorMixin,
        TransformerMixin,
    )

    mixins = {
        "classifier": ClassifierMixin,
        "regressor": RegressorMixin,
        "transformer": TransformerMixin,
        "cluster": ClusterMixin,
    }
    if type_filter is not None:
        filters = [type_filter] if isinstance(type_filter, str) else list(type_filter)
        unknown = [f for f in filters if f not in mixins]
        if unknown:
            raise ValueError(
                f"type_filter must be None or among {_TYPE_FILTERS}; got {type_filter!r}."
            )
    estimators = [
        (name, obj)
        for name, obj in _public_objects()
        if inspect.isclass(obj)
        and issubclass(obj, BaseEstimator)
        and not inspect.isabstract(obj)
        and not name.startswith("_")
    ]
    if type_filter is not None:
        estimators = [
            (name, cls)
            for name, cls in estimators
            if any(issubclass(cls, mixins[f]) for f in filters)
        ]
    return _unique_sorted(estimators)


def all_displays():
    """Get a list of all public displays (plotting helpers) of sklearn-icml.

    Returns
    -------
    displays : list of tuples
        ``(name, class)`` pairs sorted by name.

    Examples
    --------
    >>> from sklearn_icml.utils.discovery import all_displays
    >>> isinstance(all_displays(), list)
    True
    """
    return _unique_sorted(
        (name, obj)
        for name, obj in _public_objects()
        if inspect.isclass(obj) and name.endswith("Display")
    )


def all_functions():
    """Get a list of all public functions of sklearn-icml (metrics, generators, ...).

    Returns
    -------
    functions : list of tuples
        ``(name, function)`` pairs sorted by name.

    Examples
    --------
    >>> from sklearn_icml.utils.discovery import all_functions
    >>> isinstance(all_functions(), list)
    True
    """
    return _unique_sorted(
        (name, obj)
        for name, obj in _public_objects()
        if inspect.isfunction(obj) and not name.startswith("_")
    )
