"""The torch estimator base: the device, thread and seed preamble written once.

Every estimator with a ``device`` parameter derives from
:class:`TorchEstimatorMixin` (left of :class:`~sklearn.base.BaseEstimator`, as
scikit-learn's mixins go) and runs the torch work of its methods inside the
context the mixin hands out, in the spirit of scikit-learn's
``BaseMultilayerPerceptron``::

    class MyNet(RegressorMixin, TorchEstimatorMixin, BaseEstimator):
        _parameter_constraints = {"hidden": [Interval(Integral, 1, None, closed="left")],
                                  "random_state": ["random_state"]}  # device, max_iter, ... merged

        @_fit_context(prefer_skip_nested_validation=True)
        def fit(self, X, y):
            with self._torch_fit_context() as ctx:   # device resolved, device_ set, threads scoped
                X, y = validate_data(self, X, y)
                net = build(X.shape[1], self.hidden, ctx.generator).to(ctx.device)
                ...
            return self

        def predict(self, X):
            check_is_fitted(self)
            X = validate_data(self, X, reset=False)
            with self._torch_context() as ctx:        # threads scoped
                ...

What the base does:

* **constraints**: at class creation, the shared training constraints
  (:data:`~sklearn_icml.utils._training.TRAINING_PARAMETER_CONSTRAINTS`:
  ``max_iter``, ``batch_size``, ``learning_rate``, ``early_stopping``,
  ``validation_fraction``, ``n_iter_no_change``, ``tol``, ``verbose``) and
  :data:`~sklearn_icml.utils._torch.DEVICE_CONSTRAINT` are merged into the
  class's ``_parameter_constraints`` for the parameters its ``__init__``
  has; an entry the class writes itself wins (a ``max_iter`` that may be 0, a
  ``batch_size`` that may be None);
* **device**: :meth:`TorchEstimatorMixin._torch_fit_context` resolves
  ``device`` on entry, before any work (``"cuda"`` without a GPU raises a
  ``ValueError`` then), and sets ``device_`` to the resolved device as a
  string (``"cpu"``, ``"cuda"``, ``"cuda:1"``); a fit that raises leaves
  ``device_`` as it was;
* **threads**: both contexts scope torch's intra-op threads with
  :func:`~sklearn_icml.utils._torch.torch_threads` and restore them on exit,
  exceptions included;
* **seed**: ``ctx.generator`` is a CPU :class:`torch.Generator` seeded from
  ``random_state`` (built on first use, once per context), so CPU and GPU
  runs draw the same numbers.
"""

from ._docstrings import fill_doc
from ._torch import DEVICE_CONSTRAINT, resolve_device, torch_generator, torch_threads
from ._training import TRAINING_PARAMETER_CONSTRAINTS

__all__ = ["TorchContext", "TorchEstimatorMixin"]

_UNSET = object()


@fill_doc
class TorchContext:
    """The context of one torch ``fit`` or ``predict``: device, threads, generator.

    Made by :meth:`TorchEstimatorMixin._torch_fit_context` and
    :meth:`TorchEstimatorMixin._torch_context`; a ``with`` statement enters it.

    Parameters
    ----------
    estimator : estimator object
        The estimator whose ``device`` and ``random_state`` are read.
    fit : bool
        Resolve the device on entry and record it in ``device_`` (a fit);
        otherwise the device is resolved on first use of :attr:`device`.
    {{torch_n_threads}}

    Attributes
    ----------
    n_threads : int
        Torch intra-op threads in force inside the block.
    """

    def __init__(self, estimator, *, fit, n_threads=None):
        self._estimator = estimator
        self._fit = fit
        self._n_threads = n_threads
        self._device = None
        self._generator = None
        self._threads = None
        self._previous_device = _UNSET
        self.n_threads = None

    @property
    def device(self):
        """torch.device: the resolved ``device`` of the estimator."""
        if self._device is None:
            self._device = resolve_device(self._estimator.device)
        return self._device

    @property
    def generator(self):
        """torch.Generator: a CPU generator seeded from the estimator's ``random_state``.

        Built on first use and then shared by the whole block (a
        ``RandomState`` instance advances once per context).
        """
        if self._generator is None:
            self._generator = torch_generator(getattr(self._estimator, "random_state", None))
        return self._generator

    def __enter__(self):
        if self._fit:
            device = self.device  # before any work: a CUDA device without a GPU raises here
            self._previous_device = vars(self._estimator).get("device_", _UNSET)
            self._estimator.device_ = str(device)
        self._threads = torch_threads(self._n_threads)
        self.n_threads = self._threads.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._threads.__exit__(exc_type, exc, tb)
        finally:
            if exc_type is not None and self._fit:
                if self._previous_device is _UNSET:
                    vars(self._estimator).pop("device_", None)
                else:
                    self._estimator.device_ = self._previous_device
        return False


class TorchEstimatorMixin:
    """Mixin of the estimators that compute with torch.

    Merges the ``device`` and shared training constraints into the class's
    ``_parameter_constraints`` (see the module docstring) and hands out the
    context of the torch work: :meth:`_torch_fit_context` in ``fit``,
    :meth:`_torch_context` in the other methods.

    Examples
    --------
    >>> import torch
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn_icml.utils._torch_base import TorchEstimatorMixin
    >>> class Tiny(TorchEstimatorMixin, BaseEstimator):
    ...     _parameter_constraints = {"random_state": ["random_state"]}
    ...     def __init__(self, max_iter=10, device="cpu", random_state=None):
    ...         self.max_iter, self.device, self.random_state = max_iter, device, random_state
    ...     def fit(self, X=None, y=None):
    ...         with self._torch_fit_context() as ctx:
    ...             self.draw_ = float(torch.rand(1, generator=ctx.generator))
    ...         return self
    >>> sorted(Tiny._parameter_constraints)
    ['device', 'max_iter', 'random_state']
    >>> Tiny(random_state=0).fit().device_
    'cpu'
    >>> Tiny(random_state=0).fit().draw_ == Tiny(random_state=0).fit().draw_
    True
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_parameter_constraints")
        if own is None:
            return  # inherited, already merged in the class that wrote it
        params = set(cls._get_param_names()) if hasattr(cls, "_get_param_names") else set()
        shared = {**TRAINING_PARAMETER_CONSTRAINTS, "device": DEVICE_CONSTRAINT}
        merged = dict(own)
        for name, constraint in shared.items():
            if name in params and name not in merged:
                merged[name] = constraint
        cls._parameter_constraints = merged

    @fill_doc
    def _torch_fit_context(self, n_threads=None):
        """The context of ``fit``: device resolved and recorded in ``device_``, threads scoped.

        Parameters
        ----------
        {{torch_n_threads}}

        Returns
        -------
        TorchContext
            Enter it with ``with``; it yields itself (``ctx.device``,
            ``ctx.generator``, ``ctx.n_threads``).
        """
        return TorchContext(self, fit=True, n_threads=n_threads)

    @fill_doc
    def _torch_context(self, n_threads=None):
        """The context of ``predict``, ``transform``, ...: threads scoped, device resolved on use.

        Parameters
        ----------
        {{torch_n_threads}}

        Returns
        -------
        TorchContext
            Enter it with ``with``; ``device_`` is left alone.
        """
        return TorchContext(self, fit=False, n_threads=n_threads)
