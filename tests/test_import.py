"""`import sklearn_icml` stays light: no torch, no POT (checked in a fresh interpreter)."""

import subprocess
import sys

import pytest

import sklearn_icml


def _modules_after(code):
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=300)
    return set(out.stdout.split())


def test_import_loads_neither_torch_nor_pot():
    loaded = _modules_after("import sklearn_icml")
    assert "sklearn_icml" in loaded
    assert "torch" not in loaded
    assert "ot" not in loaded
    assert "dask" not in loaded  # Dask collections are recognised without importing dask


def test_subpackages_are_lazy():
    loaded = _modules_after("import sklearn_icml")
    families = [m for m in sklearn_icml._SUBMODULES if m not in ("utils",)]
    assert not [f for f in families if f"sklearn_icml.{f}" in loaded]


def test_version_is_a_string():
    assert isinstance(sklearn_icml.__version__, str) and sklearn_icml.__version__[0].isdigit()


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = sklearn_icml.no_such_thing


def test_dir_lists_subpackages():
    assert set(sklearn_icml._SUBMODULES) <= set(dir(sklearn_icml))
    assert "utils" in sklearn_icml._SUBMODULES and "datasets" in sklearn_icml._SUBMODULES
