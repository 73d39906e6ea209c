import sys
import types

import pytest
from sklearn.base import BaseEstimator

import sklearn_icml
from sklearn_icml.utils.discovery import all_displays, all_estimators, all_functions

from .._reference import ReferenceProjection, ReferenceTorchClassifier


@pytest.fixture
def fake_family(monkeypatch):
    """A family subpackage exporting the reference estimators, a display and a function."""
    module = types.ModuleType("sklearn_icml.fakefamily")

    class FakeDisplay:
        pass

    def make_fake():
        return 1

    module.ReferenceTorchClassifier = ReferenceTorchClassifier
    module.ReferenceProjection = ReferenceProjection
    module.FakeDisplay = FakeDisplay
    module.make_fake = make_fake
    module.NotExported = ReferenceTorchClassifier
    module.__all__ = ["ReferenceTorchClassifier", "ReferenceProjection", "FakeDisplay", "make_fake"]
    monkeypatch.setitem(sys.modules, "sklearn_icml.fakefamily", module)
    monkeypatch.setattr(sklearn_icml, "_SUBMODULES", [*sklearn_icml._SUBMODULES, "fakefamily"])
    return module


def test_all_estimators_reads_family_all(fake_family):
    names = dict(all_estimators())
    assert names["ReferenceTorchClassifier"] is ReferenceTorchClassifier
    assert "NotExported" not in names
    assert list(names) == sorted(names)


def test_type_filter(fake_family):
    assert dict(all_estimators("classifier")) .get("ReferenceProjection") is None
    assert "ReferenceTorchClassifier" in dict(all_estimators("classifier"))
    assert "ReferenceProjection" in dict(all_estimators(["transformer", "regressor"]))
    with pytest.raises(ValueError, match="type_filter"):
        all_estimators("nonsense")


def test_displays_and_functions(fake_family):
    assert [n for n, _ in all_displays()].count("FakeDisplay") == 1
    assert "make_fake" in dict(all_functions())


def test_real_collection_is_consistent():
    for name, cls in all_estimators():
        assert issubclass(cls, BaseEstimator)
        module = cls.__module__.split(".")
        assert module[0] == "sklearn_icml" and module[-1].startswith("_"), (name, cls.__module__)
