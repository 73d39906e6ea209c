"""The house checks: scikit-learn's estimator checks plus the rules every sklearn-icml estimator keeps.

Like :mod:`imblearn.utils.estimator_checks` for imbalanced-learn, this module
publishes the checks the collection runs on its own estimators, so a new
estimator, or a third-party estimator built on sklearn-icml, runs them from
its first commit::

    from sklearn_icml.utils.estimator_checks import parametrize_with_checks

    @parametrize_with_checks([MyEstimator(max_iter=5)])
    def test_sklearn_icml_compatible(estimator, check):
        check(estimator)

:func:`parametrize_with_checks` (and :func:`estimator_checks_generator`, which
it wraps) yields scikit-learn's own checks
(:func:`sklearn.utils.estimator_checks.estimator_checks_generator`), the
checks scikit-learn keeps for its own test suite (parameter validation,
DataFrame column names, ``get_feature_names_out`` and ``set_output`` of
transformers), and these:

* :func:`check_fitted_state_holds_no_tensor`: fitted attributes are numpy
  arrays or CPU torch modules, never tensors;
* :func:`check_pickle_loads_without_gpu`: a pickled fitted estimator loads in
  a fresh process where CUDA is hidden and reproduces every output;
* :func:`check_no_input_mutation`: ``fit`` and the output methods leave the
  caller's ``X`` and ``y`` unchanged;
* :func:`check_device_rule` (estimators with a ``device`` parameter):
  ``device="cuda"`` without a GPU raises a ``ValueError`` at ``fit`` before any
  work, and a fitted ``device_`` says where the work ran;
* :func:`check_thread_rule`: every torch call of ``fit`` and ``predict``
  runs with the configured threads (``sklearn_icml.set_config(n_threads=...)``),
  and torch's global thread count is the same afterwards as before;
* :func:`check_feature_names`: fitted on a DataFrame, the estimator records
  its column names and refuses a DataFrame with other names.

An estimator whose input is not a feature matrix (a DAG, token sequences,
texts) declares it with scikit-learn's input tags (``two_d_array=False`` and
the tag of its kind, as scikit-learn's own text and graph estimators do).
scikit-learn's data checks feed random real matrices and do not apply to it;
its API checks (clone, repr, tags, ``get_params``/``set_params``, parameter
validation) still run, and these house checks run the rest of the contract on
the estimator's own input (``fit_data``):

* :func:`check_fit_returns_self_on_own_input`: ``fit`` returns ``self`` and
  leaves the constructor parameters unchanged;
* :func:`check_unfitted_raises_on_own_input`: output methods raise
  ``NotFittedError`` before ``fit``;
* :func:`check_fit_is_deterministic_on_own_input`: two fits with the same
  parameters, and a refit, give the same outputs;

with the pickle, input-mutation, device and thread checks above.

The house checks fit each estimator on small demo data: by default
:func:`sklearn.datasets.make_classification` for classifiers,
:func:`~sklearn.datasets.make_regression` for regressors and
:func:`~sklearn.datasets.make_blobs` (``y=None``) otherwise. An estimator with
another data contract (survival targets, battles, duels, ...) passes
``fit_data``, a callable ``estimator -> (X, y)``.
"""

import copy
import os
import pickle
import select
import struct
import subprocess
import sys
import textwrap
import time
import warnings
from functools import partial, wraps
from unittest import SkipTest

import numpy as np
from sklearn.base import clone, is_classifier, is_regressor

from ._torch import is_torch_tensor

__all__ = [
    "check_device_rule",
    "check_estimator",
    "check_feature_names",
    "check_fit_is_deterministic_on_own_input",
    "check_fit_returns_self_on_own_input",
    "check_fitted_state_holds_no_tensor",
    "check_no_input_mutation",
    "check_pickle_loads_without_gpu",
    "check_thread_rule",
    "check_unfitted_raises_on_own_input",
    "default_fit_data",
    "estimator_checks_generator",
    "parametrize_with_checks",
    "tensors_in_fitted_state",
]

#: The methods whose outputs the house checks compare (after a pickle round trip, for input mutation).
OUTPUT_METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples")


# --------------------------------------------------------------------------------------------------
# demo data and small helpers


def default_fit_data(estimator, random_state=0):
    """Small demo data ``(X, y)`` for an estimator with the plain tabular contract.

    Parameters
    ----------
    estimator : estimator object
        The estimator the data is for.
    random_state : int, default=0
        Seed of the data.

    Returns
    -------
    X : ndarray of shape (60, 4)
        Features.
    y : ndarray of shape (60,) or None
        Three classes for a classifier, real targets for a regressor, None
        otherwise (three blobs in ``X``).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_icml.utils.estimator_checks import default_fit_data
    >>> X, y = default_fit_data(LogisticRegression())
    >>> X.shape, sorted(set(y.tolist()))
    ((60, 4), [0, 1, 2])
    """
    from sklearn.datasets import make_blobs, make_classification, make_regression

    if is_classifier(estimator):
        return make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                                   random_state=random_state)
    if is_regressor(estimator):
        return make_regression(n_samples=60, n_features=4, random_state=random_state)
    X, _ = make_blobs(n_samples=60, n_features=4, centers=3, random_state=random_state)
    return X, None


def _data(estimator, fit_data):
    return (fit_data or default_fit_data)(estimator)


def _output_calls(estimator, X, y):
    """``[(method, args, kwargs)]``: the output methods on ``X``; else ``sample`` and ``score`` (generative models)."""
    import inspect

    calls = [(m, (X,), {}) for m in OUTPUT_METHODS if hasattr(estimator, m)]
    if not calls and hasattr(estimator, "sample"):
        seeded = "random_state" in inspect.signature(estimator.sample).parameters
        calls.append(("sample", (), {"random_state": 0} if seeded else {}))
    if not calls and hasattr(estimator, "score"):
        calls.append(("score", (X, y), {}))
    return calls


def _import_torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a dependency of sklearn-icml
        raise SkipTest("torch is not installed") from exc
    return torch


def _has_device_param(estimator):
    return "device" in estimator.get_params(deep=False)


def _walk(obj, path, seen, packages):
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if is_torch_tensor(obj):
        yield path, f"torch.Tensor on {obj.device}"
        return
    if any(k.__module__.startswith("torch.nn") and k.__name__ == "Module" for k in type(obj).__mro__):
        devices = {t.device.type for t in list(obj.parameters()) + list(obj.buffers())}
        if devices - {"cpu"}:
            yield path, f"torch module with tensors on {sorted(devices)}"
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{path}[{k!r}]", seen, packages)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]", seen, packages)
    elif isinstance(obj, np.ndarray) and obj.dtype == object:
        for i, v in enumerate(obj.ravel()):
            yield from _walk(v, f"{path}.flat[{i}]", seen, packages)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and type(obj).__module__.split(".")[0] in packages:
        for k, v in vars(obj).items():
            yield from _walk(v, f"{path}.{k}", seen, packages)


def tensors_in_fitted_state(estimator):
    """List ``(attribute path, what)`` for every tensor (or non-CPU module) in fitted state.

    Fitted state is every attribute ending in ``_`` (not ``__``), searched
    recursively through containers, object arrays and the objects of
    scikit-learn, sklearn-icml and the estimator's own package (nested
    estimators, result objects). Plain tensors are not allowed at all; a
    torch module is allowed only with all its tensors on the CPU.

    Parameters
    ----------
    estimator : estimator object
        A fitted estimator.

    Returns
    -------
    found : list of tuple of (str, str)
        Empty when the fitted state holds no tensor.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_icml.utils.estimator_checks import tensors_in_fitted_state
    >>> tensors_in_fitted_state(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]))
    []
    """
    packages = {"sklearn_icml", "sklearn", type(estimator).__module__.split(".")[0]}
    found, seen = [], set()
    for key, value in vars(estimator).items():
        if key.endswith("_") and not key.endswith("__"):
            found.extend(_walk(value, key, seen, packages))
    return found


def _assert_unchanged(before, after, what):
    """Assert that ``after`` still equals the deep copy ``before`` (arrays, frames, containers, plain objects)."""
    if isinstance(before, np.ndarray):
        np.testing.assert_array_equal(after, before, err_msg=what)
    elif hasattr(before, "equals") and hasattr(before, "columns"):  # a DataFrame
        assert before.equals(after), what
    elif isinstance(before, (list, tuple)):
        assert len(before) == len(after), what
        for b, a in zip(before, after):
            _assert_unchanged(b, a, what)
    elif isinstance(before, dict):
        assert before.keys() == after.keys(), what
        for key in before:
            _assert_unchanged(before[key], after[key], what)
    elif hasattr(before, "__dict__") and not isinstance(before, type):
        _assert_unchanged(vars(before), vars(after), what)
    else:
        assert bool(np.all(before == after)), what


# --------------------------------------------------------------------------------------------------
# the house checks: check_<rule>(name, estimator_orig, fit_data=None), as scikit-learn's checks


def check_fitted_state_holds_no_tensor(name, estimator_orig, fit_data=None):
    """Fitted attributes hold no torch tensor and no module with tensors off the CPU.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        Naming every offending attribute path.
    """
    X, y = _data(estimator_orig, fit_data)
    found = tensors_in_fitted_state(clone(estimator_orig).fit(X, y))
    assert not found, f"{name}: fitted state must be numpy arrays or CPU torch modules; found {found}"


_LOADER = textwrap.dedent(
    """
    import os, pickle, struct, sys
    import numpy as np

    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever an estimator prints goes to stderr; stdout carries the replies only
    sys.stdout = sys.stderr
    import torch
    if torch.cuda.is_available():
        replies.write("REPLY ERROR CUDA is visible to the loader\\n")
        replies.flush()
        sys.exit(1)
    replies.write("REPLY READY\\n")
    replies.flush()
    stdin = sys.stdin.buffer

    def same(got, want):
        if isinstance(want, tuple):
            return isinstance(got, tuple) and len(got) == len(want) and all(map(same, got, want))
        want, got = np.asarray(want), np.asarray(got)
        if want.dtype.kind in "fc":
            return got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True)
        return np.array_equal(got, want)

    while True:
        header = stdin.read(8)
        if len(header) < 8:
            break
        payload = stdin.read(struct.unpack("<Q", header)[0])
        try:
            estimator, expected = pickle.loads(payload)
            bad = []
            for method, args, kwargs, want in expected:
                if not same(getattr(estimator, method)(*args, **kwargs), want):
                    bad.append(method)
            reply = "MISMATCH " + " ".join(bad) if bad else "OK"
        except Exception as exc:
            reply = "ERROR " + repr(exc).replace("\\n", " ")
        replies.write("REPLY " + reply + "\\n")
        replies.flush()
    """
)


class _GpuFreeLoader:
    """One long-lived Python process with CUDA hidden that unpickles fitted estimators and runs them.

    Starting a process that imports torch takes seconds; the process is shared
    by all the pickle checks of a session and stopped at exit.
    """

    _instance = None

    def __init__(self):
        import atexit
        import tempfile

        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._proc = subprocess.Popen([sys.executable, "-c", _LOADER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr, env=env, bufsize=0)
        self._buffer = b""
        atexit.register(self.close)
        reply = self._reply(timeout=600)
        if reply != "READY":
            self.close()
            raise RuntimeError(f"the GPU-free loader did not start: {reply}")

    @classmethod
    def get(cls):
        if cls._instance is None or cls._instance._proc.poll() is not None:
            cls._instance = cls()
        return cls._instance

    def _stderr_tail(self):
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-3000:]

    def _reply(self, timeout):
        deadline = time.monotonic() + timeout
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                return f"ERROR no answer within {timeout} s"
            chunk = os.read(fd, 65536)
            if not chunk:
                return f"ERROR the loader exited ({self._proc.wait()}): {self._stderr_tail()}"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode().removeprefix("REPLY ")

    def load(self, payload, timeout=600):
        try:
            self._proc.stdin.write(struct.pack("<Q", len(payload)) + payload)
            self._proc.stdin.flush()
        except BrokenPipeError:
            return f"ERROR the loader exited: {self._stderr_tail()}"
        return self._reply(timeout)

    def close(self):
        if self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()


def check_pickle_loads_without_gpu(name, estimator_orig, fit_data=None):
    """A pickled fitted estimator loads where CUDA is hidden and reproduces its outputs.

    The estimator is fitted here, pickled, and unpickled in another Python
    process started with ``CUDA_VISIBLE_DEVICES=""``, which runs every output
    method (``predict``, ``predict_proba``, ``decision_function``,
    ``transform``, ``score_samples``; for a generative model without them,
    ``sample(random_state=0)`` and ``score``) and compares with the outputs here. With
    ``device="cuda"`` on a GPU machine this shows the fitted state holds
    nothing that needs the GPU; everywhere it shows that nothing the outputs
    need lives outside the pickle.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        When the estimator has no output method, does not unpickle, or an
        output differs.
    """
    X, y = _data(estimator_orig, fit_data)
    fitted = clone(estimator_orig).fit(X, y)
    calls = _output_calls(fitted, X, y)
    assert calls, f"{name} has none of the output methods {OUTPUT_METHODS}, nor sample or score"
    expected = [(method, args, kwargs, getattr(fitted, method)(*args, **kwargs)) for method, args, kwargs in calls]
    reply = _GpuFreeLoader.get().load(pickle.dumps((fitted, expected)))
    assert reply == "OK", f"{name}: reloaded without a GPU in a fresh process: {reply}"


def check_no_input_mutation(name, estimator_orig, fit_data=None):
    """``fit`` and every output method leave the caller's ``X`` and ``y`` unchanged.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        Naming the method that modified ``X`` or ``y``.
    """
    X, y = _data(estimator_orig, fit_data)
    X_before, y_before = copy.deepcopy(X), copy.deepcopy(y)
    estimator = clone(estimator_orig).fit(X, y)
    _assert_unchanged(X_before, X, f"{name}.fit modified X")
    _assert_unchanged(y_before, y, f"{name}.fit modified y")
    for method, args, kwargs in _output_calls(estimator, X, y):
        getattr(estimator, method)(*args, **kwargs)
        _assert_unchanged(X_before, X, f"{name}.{method} modified X")
        _assert_unchanged(y_before, y, f"{name}.{method} modified y")


class _Watched:
    """Wraps fit data and records every read, to show that ``fit`` refused ``device="cuda"`` before any work."""

    def __init__(self, data, label):
        self._data, self._label, self.reads = data, label, []

    def _read(self, what):
        self.reads.append(f"{self._label}{what}")

    def __array__(self, dtype=None, copy=None):
        self._read(".__array__()")
        return np.asarray(self._data, dtype=dtype)

    def __len__(self):
        self._read(".__len__()")
        return len(self._data)

    def __iter__(self):
        self._read(".__iter__()")
        return iter(self._data)

    def __getitem__(self, key):
        self._read("[...]")
        return self._data[key]

    def __getattr__(self, attr):
        if attr.startswith("__"):  # protocol probes (array API, DataFrame interchange) are not reads
            raise AttributeError(attr)
        self._read(f".{attr}")
        return getattr(self._data, attr)


def check_device_rule(name, estimator_orig, fit_data=None):
    """The ``device`` rule: where the work runs is decided first, checked, and recorded.

    For an estimator with a ``device`` parameter:

    * ``device="cpu"``: ``fit`` sets ``device_ = "cpu"``;
    * ``device="auto"``: ``device_`` is ``"cuda"`` when torch sees a GPU, else ``"cpu"``;
    * ``device="cuda"``: without a GPU, ``fit`` raises a ``ValueError`` that names cuda
      before it reads ``X`` or ``y`` or sets any fitted attribute; with one,
      ``device_`` starts with ``"cuda"``.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        Naming the part of the rule that is broken.
    """
    torch = _import_torch()
    if not _has_device_param(estimator_orig):
        raise SkipTest(f"{name} has no device parameter")
    X, y = _data(estimator_orig, fit_data)
    fitted = clone(estimator_orig).set_params(device="cpu").fit(X, y)
    assert getattr(fitted, "device_", None) == "cpu", (
        f"{name}(device='cpu').fit must set device_='cpu'; got {getattr(fitted, 'device_', '<no device_>')!r}"
    )
    gpu = torch.cuda.is_available()
    fitted = clone(estimator_orig).set_params(device="auto").fit(X, y)
    where = str(getattr(fitted, "device_", "<no device_>"))
    assert where.split(":")[0] == ("cuda" if gpu else "cpu"), (
        f"{name}(device='auto').fit must record where it ran in device_ ({'cuda' if gpu else 'cpu'}); got {where!r}"
    )
    estimator = clone(estimator_orig).set_params(device="cuda")
    if gpu:
        where = str(getattr(estimator.fit(X, y), "device_", "<no device_>"))
        assert where.startswith("cuda"), f"{name}(device='cuda').fit must set device_='cuda'; got {where!r}"
        return
    Xw, yw = _Watched(X, "X"), None if y is None else _Watched(y, "y")
    attributes = set(vars(estimator))
    try:
        estimator.fit(Xw, yw)
    except ValueError as exc:
        assert "cuda" in str(exc).lower(), (
            f"{name}(device='cuda').fit without a GPU raised a ValueError that does not name the device: {exc}"
        )
    else:
        raise AssertionError(f"{name}(device='cuda').fit ran without a GPU; it must raise a ValueError")
    reads = Xw.reads + ([] if yw is None else yw.reads)
    assert not reads, (
        f"{name}(device='cuda').fit read the data ({', '.join(dict.fromkeys(reads))}) before refusing the "
        "missing GPU: resolve the device first thing in fit"
    )
    new = sorted(set(vars(estimator)) - attributes)
    assert not new, f"{name}(device='cuda').fit set {new} before refusing the missing GPU"


#: torch calls at the boundary of an estimator, which move or describe data and compute nothing: the thread rule
#: does not ask for them to run inside ``torch_threads``.
_BOUNDARY_CALLS = frozenset({
    "__get__", "device", "dtype", "shape", "size", "dim", "numel", "is_floating_point", "is_complex", "element_size",
    "tensor", "as_tensor", "asarray", "from_numpy", "to", "cpu", "cuda", "numpy", "detach", "tolist", "item",
    "__float__", "__int__", "__bool__", "__index__", "__len__", "__array__", "__repr__", "__format__",
    "requires_grad_", "contiguous", "data_ptr", "type",
})


def _thread_watch(torch):
    """A torch function mode recording the torch calls that computed with more than one intra-op thread."""
    from torch.overrides import TorchFunctionMode

    class ThreadWatch(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.n_calls, self.over = 0, {}

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.n_calls += 1
            name, n_threads = getattr(func, "__name__", repr(func)), torch.get_num_threads()
            if n_threads > 1 and name not in _BOUNDARY_CALLS:
                self.over.setdefault(name, n_threads)
            return func(*args, **(kwargs or {}))

    return ThreadWatch()


def check_thread_rule(name, estimator_orig, fit_data=None):
    """The thread rule: torch computes with the configured threads, and the global count is left as it was.

    torch's process-wide intra-op thread count is set to 3, then the estimator
    is fitted and every output method run under
    ``sklearn_icml.config_context(n_threads=1)``, with every torch call
    watched (a :class:`torch.overrides.TorchFunctionMode`). Every torch call
    that computes must run with 1 thread (the work is inside
    ``torch_threads``); conversions and metadata at the boundary (tensor from
    numpy and back, ``.to(device)``, ``.shape``, ``.item()``, ...) may run
    outside. After each method torch's count must be 3 again. An estimator
    that makes no torch call passes the first part trivially.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        When torch ran with more threads than configured, or the global count changed.
    """
    torch = _import_torch()
    from .._config import config_context

    X, y = _data(estimator_orig, fit_data)
    estimator = clone(estimator_orig)
    before, outside = torch.get_num_threads(), 3
    changed, watch = [], _thread_watch(torch)
    torch.set_num_threads(outside)
    try:
        with config_context(n_threads=1):
            with watch:
                estimator.fit(X, y)
            if torch.get_num_threads() != outside:
                changed.append(f"fit left {torch.get_num_threads()}")
                torch.set_num_threads(outside)
            for method in OUTPUT_METHODS:
                if hasattr(estimator, method):
                    with watch:
                        getattr(estimator, method)(X)
                    if torch.get_num_threads() != outside:
                        changed.append(f"{method} left {torch.get_num_threads()}")
                        torch.set_num_threads(outside)
    finally:
        torch.set_num_threads(before)
    assert not watch.over, (
        f"{name} ran torch calls with more threads than sklearn_icml.config_context(n_threads=1) allows "
        f"(torch's global count was {outside}): {dict(list(watch.over.items())[:8])}. Run the torch work of "
        "fit/predict inside sklearn_icml.utils._torch.torch_threads()"
    )
    assert not changed, (
        f"{name} changed torch's global thread count (set to {outside} before the call): {'; '.join(changed)}. "
        "Run the torch work inside sklearn_icml.utils._torch.torch_threads(), which restores it"
    )


def check_feature_names(name, estimator_orig, fit_data=None):
    """Fitted on a DataFrame, the estimator records the column names and refuses others.

    On the demo data as a DataFrame with string column names: ``fit`` sets
    ``feature_names_in_`` to the columns and ``n_features_in_`` to their
    number; every output method raises a ``ValueError`` that mentions feature
    names when given a DataFrame whose column names differ; a transformer's
    ``get_feature_names_out()`` has one name per output column. Skipped when
    the demo ``X`` is not a 2-D table or pandas is missing.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        Naming the part of the contract that is broken.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise SkipTest("pandas is not installed") from exc
    X, y = _data(estimator_orig, fit_data)
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.shape[1] < 2:
        raise SkipTest(f"{name}: the demo X is not a 2-D array of at least 2 columns")
    columns = [f"feature_{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns)
    estimator = clone(estimator_orig).fit(frame, y)
    names = getattr(estimator, "feature_names_in_", None)
    assert names is not None and list(names) == columns, (
        f"{name}.fit on a DataFrame must set feature_names_in_ to its columns {columns}; got {names!r}"
    )
    assert getattr(estimator, "n_features_in_", None) == X.shape[1], f"{name}: n_features_in_ is not {X.shape[1]}"
    renamed = frame.rename(columns={c: c.upper() for c in columns})
    for method in OUTPUT_METHODS:
        if not hasattr(estimator, method):
            continue
        try:
            getattr(estimator, method)(renamed)
        except ValueError as exc:
            assert "feature names" in str(exc).lower(), (
                f"{name}.{method} refused other column names with a message that does not say so: {exc}"
            )
        else:
            raise AssertionError(f"{name}.{method} accepted a DataFrame whose column names differ from fit's")
    if hasattr(estimator, "transform") and hasattr(estimator, "get_feature_names_out"):
        n_out = np.asarray(estimator.transform(frame)).shape[1]
        assert len(estimator.get_feature_names_out()) == n_out, (
            f"{name}.get_feature_names_out() must give one name per output column ({n_out})"
        )


# --------------------------------------------------------------------------------------------------
# the API contract on the estimator's own kind of input (estimators whose X is not a feature matrix)


def _takes_feature_matrix(estimator):
    """Whether scikit-learn's data checks apply: the estimator's input tags declare a 2-D feature matrix."""
    from sklearn.utils import get_tags

    return bool(get_tags(estimator).input_tags.two_d_array)


def _outputs(estimator, calls):
    return [getattr(estimator, method)(*args, **kwargs) for method, args, kwargs in calls]


def _assert_same_outputs(got, want, what):
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            _assert_same_outputs(g, w, what)
            continue
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-12, err_msg=what)
        else:
            assert np.array_equal(g, w), what


def check_fit_returns_self_on_own_input(name, estimator_orig, fit_data=None):
    """On its own kind of input, ``fit`` returns the estimator itself and leaves its parameters unchanged.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        When ``fit`` returns another object or changes a constructor parameter.
    """
    import joblib

    X, y = _data(estimator_orig, fit_data)
    estimator = clone(estimator_orig)
    before = {k: joblib.hash(v) for k, v in estimator.get_params(deep=False).items()}
    assert estimator.fit(X, y) is estimator, f"{name}.fit must return self"
    after = {k: joblib.hash(v) for k, v in estimator.get_params(deep=False).items()}
    changed = sorted(k for k in before if before[k] != after[k])
    assert not changed, f"{name}.fit changed its constructor parameters {changed}"


def check_unfitted_raises_on_own_input(name, estimator_orig, fit_data=None):
    """Before ``fit``, every output method raises scikit-learn's ``NotFittedError``.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        Naming the method that ran, or raised something else, before ``fit``.
    """
    from sklearn.exceptions import NotFittedError

    X, y = _data(estimator_orig, fit_data)
    estimator = clone(estimator_orig)
    calls = [(m, (X,), {}) for m in OUTPUT_METHODS if hasattr(type(estimator), m)]
    if hasattr(type(estimator), "score"):
        calls.append(("score", (X, y), {}))
    for method, args, kwargs in calls:
        try:
            getattr(estimator, method)(*args, **kwargs)
        except NotFittedError:
            continue
        except AttributeError:  # a method available only once fitted (available_if)
            continue
        except Exception as exc:  # noqa: BLE001 - the point is to name what it raised
            raise AssertionError(f"{name}.{method} before fit raised {type(exc).__name__}, not "
                                 f"NotFittedError: {exc}") from exc
        raise AssertionError(f"{name}.{method} ran before fit; it must raise NotFittedError")


def check_fit_is_deterministic_on_own_input(name, estimator_orig, fit_data=None):
    """On its own kind of input, two fits with the same parameters give the same outputs, and a refit too.

    Two clones (same ``random_state``) are fitted on the same data, and the
    first is fitted again: every output (``predict``, ``transform``, ...; for
    a generative model ``sample(random_state=0)`` or ``score``) must agree.
    Skipped for estimators tagged ``non_deterministic``.

    Parameters
    ----------
    name : str
        Name of the estimator, for messages.
    estimator_orig : estimator object
        The estimator to check (cloned, never fitted in place).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.

    Raises
    ------
    AssertionError
        Naming the output that differs.
    """
    from sklearn.utils import get_tags

    if get_tags(estimator_orig).non_deterministic:
        raise SkipTest(f"{name} is tagged non_deterministic")
    X, y = _data(estimator_orig, fit_data)
    first = clone(estimator_orig).fit(X, y)
    calls = _output_calls(first, X, y)
    assert calls, f"{name} has none of the output methods {OUTPUT_METHODS}, nor sample or score"
    want = _outputs(first, calls)
    _assert_same_outputs(_outputs(clone(estimator_orig).fit(X, y), calls), want,
                         f"{name}: two fits with the same parameters and data differ")
    _assert_same_outputs(_outputs(first.fit(X, y), calls), want, f"{name}: a second fit of the same instance differs")


def _data_free_sklearn_checks():
    """scikit-learn's checks of the API itself: none of them fits on generated data (parameter validation
    fails before the data are read)."""
    from sklearn.utils import estimator_checks as ec

    return (ec.check_estimator_cloneable, ec.check_estimator_tags_renamed, ec.check_valid_tag_types,
            ec.check_estimator_repr, ec.check_no_attributes_set_in_init,
            ec.check_do_not_raise_errors_in_init_or_set_params, ec.check_mixin_order,
            ec.check_parameters_default_constructible, ec.check_get_params_invariance, ec.check_set_params,
            ec.check_param_validation)


# --------------------------------------------------------------------------------------------------
# generators


def _quiet_feature_name_warnings(check):
    # scikit-learn's set_output checks fit on a DataFrame and transform an array on purpose
    # (its _output_from_fit_transform), which warns by design.
    @wraps(check)
    def wrapped(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="X does not have valid feature names", category=UserWarning)
            warnings.filterwarnings("ignore", message="X has feature names, but", category=UserWarning)
            return check(*args, **kwargs)

    return wrapped


def _sklearn_suite_checks(estimator):
    """The checks scikit-learn runs in its own test suite but not in ``estimator_checks_generator``."""
    from sklearn.utils import estimator_checks as ec

    yield ec.check_param_validation
    yield ec.check_dataframe_column_names_consistency
    if hasattr(estimator, "transform"):
        yield ec.check_transformer_get_feature_names_out
        yield ec.check_transformer_get_feature_names_out_pandas
        yield _quiet_feature_name_warnings(ec.check_set_output_transform)
        yield _quiet_feature_name_warnings(ec.check_set_output_transform_pandas)
        yield _quiet_feature_name_warnings(ec.check_global_output_transform_pandas)


def _house_checks(estimator):
    if not _takes_feature_matrix(estimator):
        yield check_fit_returns_self_on_own_input
        yield check_unfitted_raises_on_own_input
        yield check_fit_is_deterministic_on_own_input
    yield check_fitted_state_holds_no_tensor
    yield check_pickle_loads_without_gpu
    yield check_no_input_mutation
    if _has_device_param(estimator):
        yield check_device_rule
    yield check_thread_rule
    if _takes_feature_matrix(estimator):
        yield check_feature_names


def _check_name(check):
    while isinstance(check, partial):
        check = check.func
    return getattr(check, "__name__", repr(check))


def _all_checks(estimator, *, fit_data=None, legacy=True):
    """``(estimator, check)`` pairs, unmarked: scikit-learn's, its test-suite extras, then the house checks."""
    from sklearn.utils.estimator_checks import estimator_checks_generator as sklearn_generator

    name = type(estimator).__name__
    if _takes_feature_matrix(estimator):
        yield from sklearn_generator(estimator, legacy=legacy, mark=None)
        for check in _sklearn_suite_checks(estimator):
            yield estimator, partial(check, name)
    else:
        # X is not a feature matrix (a DAG, token sequences, texts, ...): scikit-learn's data checks, which feed
        # random real matrices, do not apply; its API checks do, and the house checks below run the rest of the
        # contract on the estimator's own kind of input (fit_data)
        for check in _data_free_sklearn_checks():
            yield estimator, partial(check, name)
    for check in _house_checks(estimator):
        yield estimator, partial(check, name, fit_data=fit_data)


def estimator_checks_generator(estimator, *, fit_data=None, legacy=True, expected_failed_checks=None,
                               mark=None, xfail_strict=None):
    """Yield every ``(estimator, check)`` of scikit-learn and of the house for one estimator.

    Parameters
    ----------
    estimator : estimator object
        An instance (small, seeded parameters keep the checks fast).
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``, the demo data of the house checks;
        :func:`default_fit_data` when None.
    legacy : bool, default=True
        Include scikit-learn's legacy checks.
    expected_failed_checks : dict, default=None
        ``{check name: reason}`` or ``{check name: (reason, exception)}`` of
        the checks expected to fail; with an exception class (or a tuple of
        them), the ``xfail`` mark has ``raises=`` and any other exception fails.
    mark : {"xfail"} or None, default=None
        With ``"xfail"``, the expected failures come as ``pytest.param``
        marked ``xfail`` with their reason.
    xfail_strict : bool, default=None
        ``strict`` of those marks (None: pytest's configuration decides).

    Yields
    ------
    estimator_check : tuple or pytest.param
        ``(estimator, check)``; ``check(estimator)`` runs the check.

    See Also
    --------
    parametrize_with_checks : The same checks as a pytest decorator.
    """
    expected = expected_failed_checks or {}
    for est, check in _all_checks(estimator, fit_data=fit_data, legacy=legacy):
        reason, raises = _expectation(expected.get(_check_name(check)))
        if reason and mark == "xfail":
            import pytest

            kwargs = {} if xfail_strict is None else {"strict": xfail_strict}
            if raises is not None:
                kwargs["raises"] = raises
            yield pytest.param(est, check, marks=pytest.mark.xfail(reason=reason, **kwargs))
        else:
            yield est, check


def _expectation(entry):
    """``(reason, exception class or tuple or None)`` of an ``expected_failed_checks`` entry."""
    if entry is None or isinstance(entry, str):
        return entry, None
    reason, raises = entry
    return reason, raises


def parametrize_with_checks(estimators, *, fit_data=None, legacy=True, expected_failed_checks=None,
                            xfail_strict=None):
    """Pytest decorator running scikit-learn's checks and the house checks over estimators.

    The sklearn-icml counterpart of
    :func:`sklearn.utils.estimator_checks.parametrize_with_checks`: the same
    checks, the ones scikit-learn keeps for its own suite (parameter
    validation, DataFrame column names, transformers' feature names and
    ``set_output``), and the house checks of this module. Test ids are
    ``<class name>-<check name>``, so ``-k`` selects by either.

    Parameters
    ----------
    estimators : list of estimator objects
        Instances, not classes.
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``: demo data of the house checks for
        estimators whose data is not a plain table; :func:`default_fit_data`
        when None.
    legacy : bool, default=True
        Include scikit-learn's legacy checks.
    expected_failed_checks : callable, default=None
        ``expected_failed_checks(estimator) -> {check name: reason}`` (or
        ``(reason, exception)`` values); those checks are marked ``xfail`` with
        the reason, and with ``raises=exception`` when one is given.
    xfail_strict : bool, default=None
        Whether an expected failure that passes fails the test (None: pytest's
        configuration decides).

    Returns
    -------
    decorator : pytest.mark.parametrize
        Parametrizes the test's ``estimator`` and ``check`` arguments.

    See Also
    --------
    estimator_checks_generator : The ``(estimator, check)`` pairs, without pytest.
    check_estimator : Run them all outside pytest.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_icml.utils.estimator_checks import parametrize_with_checks
    >>> @parametrize_with_checks([LogisticRegression()])
    ... def test_sklearn_icml_compatible(estimator, check):
    ...     check(estimator)
    """
    import pytest

    if any(isinstance(est, type) for est in estimators):
        raise TypeError("parametrize_with_checks takes estimator instances, not classes.")
    params = []
    for estimator in estimators:
        expected = expected_failed_checks(estimator) if callable(expected_failed_checks) else None
        for item in estimator_checks_generator(estimator, fit_data=fit_data, legacy=legacy,
                                               expected_failed_checks=expected, mark="xfail",
                                               xfail_strict=xfail_strict):
            est, check = item.values if hasattr(item, "values") else item
            marks = item.marks if hasattr(item, "marks") else ()
            params.append(pytest.param(est, check, marks=marks, id=f"{type(est).__name__}-{_check_name(check)}"))
    return pytest.mark.parametrize("estimator, check", params)


def check_estimator(estimator, *, fit_data=None, legacy=True, expected_failed_checks=None, on_fail="raise"):
    """Run scikit-learn's checks and the house checks on one estimator, outside pytest.

    Parameters
    ----------
    estimator : estimator object
        An instance.
    fit_data : callable, default=None
        ``fit_data(estimator) -> (X, y)``; :func:`default_fit_data` when None.
    legacy : bool, default=True
        Include scikit-learn's legacy checks.
    expected_failed_checks : dict, default=None
        ``{check name: reason}`` of the checks expected to fail (not raised).
    on_fail : {"raise"} or None, default="raise"
        Raise the first unexpected failure, or only report it.

    Returns
    -------
    results : list of dict
        One per check: ``check_name``, ``status`` (``"passed"``, ``"failed"``,
        ``"xfail"`` or ``"skipped"``) and ``exception`` (None when passed).

    See Also
    --------
    parametrize_with_checks : The same checks as a pytest decorator.
    """
    expected = expected_failed_checks or {}
    results = []
    for est, check in _all_checks(estimator, fit_data=fit_data, legacy=legacy):
        check_name = _check_name(check)
        status, exception = "passed", None
        try:
            check(est)
        except SkipTest as exc:
            status, exception = "skipped", exc
        except Exception as exc:
            raises = _expectation(expected.get(check_name))[1]
            hit = check_name in expected and (raises is None or isinstance(exc, raises))
            status, exception = ("xfail" if hit else "failed"), exc
            if status == "failed" and on_fail == "raise":
                raise
        results.append({"check_name": check_name, "status": status, "exception": exception})
    return results
