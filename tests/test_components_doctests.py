"""Doctests of the reusable renderers (escaping, span marks, edit marks, figures) and of the
model registry's default choice run with the suite."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["components.highlight", "components.edits", "components.text", "components.sweep_figures", "core.csv_export", "core.translate",
                                    "core.qa.registry"])
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), verbose=False)
    assert result.attempted > 0, f"{module} has no doctests"
    assert result.failed == 0
