"""Warnings of the privacy toolkit."""

__all__ = ["PrivacyLeakWarning"]


class PrivacyLeakWarning(UserWarning):
    """A differentially private computation was asked to do something that leaks.

    Raised, for example, on every fit of
    :class:`sklearn_icml.cluster.PrivateKMeans` with ``bounds="data"``: the
    bounds are then read from the private data itself, which no
    differential-privacy guarantee covers. Pass public bounds, or
    ``bounds=None`` for a private box, to remove the leak (and the warning).

    Examples
    --------
    >>> import warnings
    >>> from sklearn_icml.privacy import PrivacyLeakWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("bounds computed from the data", PrivacyLeakWarning)
    >>> caught[0].category.__name__
    'PrivacyLeakWarning'
    """
