"""The earlier floating-point noise path, emulated, to time the exact samplers against it.

Before the exact discrete samplers, every release added numpy's floating-point Laplace and Gaussian draws
(``RandomState.laplace`` / ``normal``) to floating-point values, and the boosting step drew its choice with
``RandomState.choice`` on float probabilities. :func:`float_noise` patches the library's noise calls back to
those draws (same scales, same number of draws), so that a benchmark can time a fit with the secure sampler,
the seeded exact sampler and the float path in one process. Benchmarks only: the float path is not private
(its reachable outputs depend on the input).
"""

import contextlib

import numpy as np

import sklearn_icml.cluster._private_kmeans as _pkm
import sklearn_icml.generative._pe_voting as _pe_voting
import sklearn_icml.privacy._continual as _continual
import sklearn_icml.privacy._mechanisms as _mechanisms
import sklearn_icml.privacy._quadtree as _quadtree
import sklearn_icml.privacy._sums as _sums
from sklearn_icml.privacy._discrete import CounterDraws

_MODULES = (_mechanisms, _quadtree, _sums, _continual, _pkm, _pe_voting)


def _rng(source):
    if isinstance(source, CounterDraws):  # counter-based streams: one float generator per read
        return np.random.RandomState(int(source.keys[0] % (1 << 32)) if source.keys.size else 0)
    return source


def _float_add_noise(value, noise, source):
    value = np.asarray(value, dtype=np.float64)
    rng = _rng(source)
    draw = rng.laplace if noise.kind == "laplace" else rng.normal
    return value + draw(0.0, noise.scale, size=value.shape)


def _float_noise_integers(noise, size, source):
    draw = _rng(source).laplace if noise.kind == "laplace" else _rng(source).normal
    return np.rint(draw(0.0, noise.scale / noise.grid, size=size)).astype(np.int64)


def _float_choice(costs, sensitivity, epsilon, rng):
    costs = np.asarray(costs, dtype=np.float64)
    logits = -epsilon * (costs - costs.min()) / sensitivity
    p = np.exp(logits - logits.max())
    return int(rng.choice(len(costs), p=p / p.sum())), sensitivity


@contextlib.contextmanager
def float_noise():
    """Within the block, every release of the library draws floating-point noise (the earlier path)."""
    saved = []
    try:
        for module in _MODULES:
            if hasattr(module, "add_noise"):
                saved.append((module, "add_noise", module.add_noise))
                module.add_noise = _float_add_noise
        saved.append((_sums, "grid_noise_integers", _sums.grid_noise_integers))
        _sums.grid_noise_integers = _float_noise_integers
        saved.append((_pkm, "exponential_choice", _pkm.exponential_choice))
        _pkm.exponential_choice = _float_choice
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)
