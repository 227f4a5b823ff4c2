"""Fixtures for the doctests that pytest collects from core/ and components/ (--doctest-modules,
pyproject.toml); the tests' own fixtures are in tests/conftest.py."""
import pytest
from _pytest.doctest import DoctestItem


@pytest.fixture(autouse=True)
def _doctest_defaults(request, monkeypatch):
    """Doctests show the defaults: a server's own setting (the upload limit) must not change them."""
    if isinstance(request.node, DoctestItem):
        monkeypatch.delenv("QAX_MAX_UPLOAD_MB", raising=False)
