"""Fixtures shared by the test modules of every family."""

import pytest


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request):
    """The ``device`` a torch test runs with: ``"cpu"``, then ``"cuda"`` (marked ``cuda``: skipped without a GPU)."""
    return request.param
