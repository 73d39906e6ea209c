"""Fixtures shared by the test modules of every family."""

import pytest


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request):
    """The ``device`` a torch test runs with: ``"cpu"``, then ``"cuda"`` (marked ``cuda``: skipped without a GPU)."""
    return request.param


@pytest.fixture(autouse=True)
def _global_generators_seeded():
    """Every test starts from the same global numpy and torch generator state.

    A test that builds a torch module with default initialisation (or draws from ``np.random``)
    then sees the same numbers whichever tests ran before it, so its outcome does not depend on
    the order or the selection of tests (a ``-m "not slow"`` run, a single file, ``-k``).
    The estimators themselves never read these generators: they draw from ``random_state``.
    """
    import numpy as np
    import torch

    np.random.seed(0)
    torch.manual_seed(0)
    yield
