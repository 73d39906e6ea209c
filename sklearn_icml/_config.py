"""Global configuration of sklearn-icml: :func:`set_config`, :func:`get_config`, :func:`config_context`.

Mirrors :func:`sklearn.set_config`: the settings are per thread (each thread
starts from the global defaults) and :func:`config_context` changes them for a
``with`` block only. Importing this module does not import torch.

Settings
--------
n_threads : int >= 1 or None
    How many intra-op threads torch may use inside the ``fit``/``predict`` of
    the library's torch estimators (see
    :func:`sklearn_icml.utils._torch.torch_threads`). ``None`` (the default)
    means automatic: no more than torch's current setting and the CPUs the
    process's affinity allows; one inside a joblib (loky, multiprocessing)
    or Dask worker, where the workers already share the machine, and one on
    a machine whose 1-minute load average is at least its CPUs plus one
    (torch's threads would wait for each other's time slices).
"""

import threading
from contextlib import contextmanager
from numbers import Integral

__all__ = ["config_context", "get_config", "set_config"]

_global_config = {"n_threads": None}
_threadlocal = threading.local()


class _Unchanged:
    """Sentinel default of :func:`set_config`: leave the setting as it is."""

    def __repr__(self):
        return "<unchanged>"


_UNCHANGED = _Unchanged()


def _get_threadlocal_config():
    if not hasattr(_threadlocal, "config"):
        _threadlocal.config = _global_config.copy()
    return _threadlocal.config


def get_config():
    """Retrieve the current sklearn-icml configuration.

    Returns
    -------
    config : dict
        Keys are the parameter names of :func:`set_config`.

    See Also
    --------
    set_config : Change the configuration.
    config_context : Change the configuration for a ``with`` block.

    Examples
    --------
    >>> import sklearn_icml
    >>> sklearn_icml.get_config()["n_threads"] is None
    True
    """
    return _get_threadlocal_config().copy()


def _check_n_threads(n_threads):
    if n_threads is None:
        return None
    if isinstance(n_threads, bool) or not isinstance(n_threads, Integral) or n_threads < 1:
        raise ValueError(f"sklearn_icml.set_config: n_threads must be None or an int >= 1; got {n_threads!r}.")
    return int(n_threads)


def set_config(n_threads=_UNCHANGED):
    """Set sklearn-icml's configuration for the current thread.

    Parameters
    ----------
    n_threads : int >= 1 or None, default=<unchanged>
        Intra-op threads torch may use inside the ``fit``/``predict`` of the
        library's torch estimators; restored to its previous value afterwards.
        ``None`` restores the automatic rule: no more than torch's current
        setting and the CPUs the process's affinity allows, and one inside a
        joblib or Dask worker or on an oversubscribed machine (load average
        at least the CPUs plus one). Leaving the argument out keeps the
        current value.

    See Also
    --------
    get_config : Read the configuration.
    config_context : Change the configuration for a ``with`` block.

    Examples
    --------
    >>> import sklearn_icml
    >>> sklearn_icml.set_config(n_threads=1)
    >>> sklearn_icml.get_config()["n_threads"]
    1
    >>> sklearn_icml.set_config(n_threads=None)
    """
    config = _get_threadlocal_config()
    if n_threads is not _UNCHANGED:
        config["n_threads"] = _check_n_threads(n_threads)


@contextmanager
def config_context(*, n_threads=_UNCHANGED):
    """Context manager changing sklearn-icml's configuration inside a ``with`` block.

    Parameters
    ----------
    n_threads : int >= 1 or None, default=<unchanged>
        See :func:`set_config`.

    Yields
    ------
    None

    See Also
    --------
    set_config : Change the configuration.
    get_config : Read the configuration.

    Examples
    --------
    >>> import sklearn_icml
    >>> with sklearn_icml.config_context(n_threads=2):
    ...     sklearn_icml.get_config()["n_threads"]
    2
    >>> sklearn_icml.get_config()["n_threads"] is None
    True
    """
    old = get_config()
    set_config(n_threads=n_threads)
    try:
        yield
    finally:
        set_config(**old)
