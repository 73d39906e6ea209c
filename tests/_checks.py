"""The harness's own checks, beyond scikit-learn's: written once, used by
``test_common.py`` over every estimator and by ``test_harness.py`` to show they
catch violations."""

import pickle
import subprocess
import sys
import textwrap

import numpy as np

from sklearn_icml.utils._torch import is_torch_tensor

#: Methods whose outputs a reloaded pickle must reproduce.
OUTPUT_METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples")


def _walk(obj, path, seen):
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
            yield from _walk(v, f"{path}[{k!r}]", seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]", seen)
    elif isinstance(obj, np.ndarray) and obj.dtype == object:
        for i, v in enumerate(obj.ravel()):
            yield from _walk(v, f"{path}.flat[{i}]", seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and type(obj).__module__.startswith(
        ("sklearn_icml", "sklearn", "tests")
    ):
        for k, v in vars(obj).items():
            yield from _walk(v, f"{path}.{k}", seen)


def tensors_in_fitted_state(estimator):
    """List ``(attribute path, what)`` for every tensor (or non-CPU module) in fitted state.

    Fitted state is every attribute ending in ``_`` (not ``__``), searched
    recursively through containers and nested estimators. Plain tensors are not
    allowed at all; a torch module is allowed only with all its tensors on CPU.
    """
    found = []
    seen = set()
    for key, value in vars(estimator).items():
        if key.endswith("_") and not key.endswith("__"):
            found.extend(_walk(value, key, seen))
    return found


def outputs_of(estimator, X):
    """{method: output} for every output method the fitted estimator has."""
    return {m: getattr(estimator, m)(X) for m in OUTPUT_METHODS if hasattr(estimator, m)}


_LOADER = textwrap.dedent(
    """
    import pickle, sys
    import numpy as np
    with open(sys.argv[1], "rb") as f:
        cases = pickle.load(f)
    import torch
    assert not torch.cuda.is_available(), "CUDA should be hidden"
    bad = []
    for name, est, X, expected in cases:
        for method, want in expected.items():
            got = getattr(est, method)(X)
            if np.asarray(want).dtype.kind in "fc":
                ok = np.allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True)
            else:
                ok = np.array_equal(got, want)
            if not ok:
                bad.append(f"{name}.{method}")
    print("MISMATCH " + " ".join(bad) if bad else "ALL OK %d" % len(cases))
    sys.exit(1 if bad else 0)
    """
)


def reload_without_gpu(cases, tmp_path):
    """Pickle ``[(name, fitted, X, outputs)]`` and reload it in a subprocess with CUDA hidden.

    Returns the subprocess's ``CompletedProcess``; it exits 0 when every output
    is reproduced.
    """
    path = tmp_path / "fitted.pkl"
    with open(path, "wb") as f:
        pickle.dump(cases, f)
    env = {"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    return subprocess.run([sys.executable, "-c", _LOADER, str(path)], env=env,
                          capture_output=True, text=True, timeout=600)


def assert_fit_does_not_modify_input(estimator, X, y):
    """Fit a clone of ``estimator`` and assert the caller's ``X`` and ``y`` are unchanged."""
    from sklearn.base import clone

    X_before = np.array(X, copy=True)
    y_before = None if y is None else np.array(y, copy=True)
    clone(estimator).fit(X, y)
    np.testing.assert_array_equal(X, X_before, err_msg=f"{type(estimator).__name__}.fit modified X")
    if y is not None:
        np.testing.assert_array_equal(y, y_before, err_msg=f"{type(estimator).__name__}.fit modified y")
