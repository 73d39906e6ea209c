"""Session-wide test configuration (applies to tests/ and to the doctests of sklearn_icml/).

* ``SCIPY_ARRAY_API=1`` is set before scipy or scikit-learn is imported, so
  scikit-learn's ``check_array_api_input`` common check runs instead of skipping.
* torch gets one intra-op thread: CI has 2 cores and joblib/Dask workers share
  them. This is test configuration; the library never changes torch's threads.
* Items marked ``cuda`` are skipped when torch sees no CUDA device.
* The configuration in ``pyproject.toml``'s ``[tool.pytest]`` table (markers,
  warnings as errors, doctests) must be in force: pytest < 9 ignores that table
  and would run a silently weaker suite, so the session stops with a usage error.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _check_configuration_is_read(config):
    # The markers are declared only in [tool.pytest]: without them that table was not read at all.
    if not any(line.startswith("cuda:") for line in config.getini("markers")):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} did not read the [tool.pytest] table of pyproject.toml, so its "
            "markers, warnings-as-errors and doctests would be off; the tests need pytest>=9: "
            'python -m pip install -c .ci/constraints.txt -e ".[test]"'
        )


def pytest_configure(config):
    _check_configuration_is_read(config)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="torch sees no CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
