"""sklearn-icml: methods of nineteen ICML 2024 papers as scikit-learn estimators.

The subpackages group the methods by task family, the way scikit-learn groups
its own (``sklearn_icml.metrics``, ``sklearn_icml.ranking``, ...). They are
imported on first access, so ``import sklearn_icml`` stays light: it imports
neither torch nor POT.
"""

import importlib
import pkgutil

from ._config import config_context, get_config, set_config
from ._version import __version__


def _public_submodules():
    # A directory listing only: nothing is imported here.
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


_SUBMODULES = _public_submodules()

__all__ = [*_SUBMODULES, "__version__", "config_context", "get_config", "set_config"]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sklearn_icml' has no attribute {name!r}")


def __dir__():
    return __all__
