"""A small meta-trained classifier on Forrester tasks, shared by the family's tests (meta-training is the slow part)."""

import pytest

from sklearn_icml.datasets import make_forrester_tasks
from sklearn_icml.optimize import MetaLFBOClassifier


@pytest.fixture(scope="session")
def forrester_meta():
    """``(classifier meta-trained on 48 Forrester tasks x 24 points, the task data)``."""
    data = make_forrester_tasks(48, 24, random_state=0)
    clf = MetaLFBOClassifier(n_features=16, n_hidden=32, n_layers=3, max_iter=150, random_state=0)
    return clf.meta_fit(data.tasks), data
