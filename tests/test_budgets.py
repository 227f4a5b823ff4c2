"""Budgets (issue 46): each request is refused with a clear message before its work or memory is
spent, and each budget is declared once (core/budgets.py) and set by its environment variable."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from core import budgets

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_SPEC = "DCRQ:n_chars=1..4:zz=1..2000:n_words=1..1000"   # 8,000,000 specs once multiplied out


@pytest.fixture(autouse=True)
def _default_budgets(monkeypatch):
    for b in budgets.BUDGETS:
        monkeypatch.delenv(b.env, raising=False)


# ------------------------------------------------------------------------------ declarations


def test_every_budget_has_a_default_an_env_var_and_a_row_in_security_md():
    doc = (ROOT / "docs" / "SECURITY.md").read_text()
    envs = [b.env for b in budgets.BUDGETS]
    assert len(set(envs)) == len(envs) and all(e.startswith("QAX_") for e in envs)
    for b in budgets.BUDGETS:
        assert b.value() >= 1
        assert f"`{b.env}`" in doc, b.env
    assert "`QAX_MAX_UPLOAD_MB`" in doc


def test_a_budget_is_overridden_by_its_env_var_and_a_bad_value_names_it(monkeypatch):
    assert budgets.MAX_SPECS.value() == 1000
    monkeypatch.setenv("QAX_MAX_SPECS", "5000")
    assert budgets.MAX_SPECS.value() == 5000
    monkeypatch.setenv("QAX_MAX_SPECS", "lots")
    with pytest.raises(ValueError, match="QAX_MAX_SPECS='lots': expected a positive whole number"):
        budgets.MAX_SPECS.value()
    assert budgets.MAX_RAY_WORKERS.value() == (os.cpu_count() or 1)


# --------------------------------------------------------------------- finding 2: spec expansion


def test_spec_expansion_is_counted_before_expanding():
    from core.perturb.spec import SpecError, parse_specs

    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(SpecError) as e:
        parse_specs(HOSTILE_SPEC)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ("would expand to 8,000,000 perturbation specs; the limit is 1,000 (the server's QAX_MAX_SPECS)"
            in str(e.value))
    assert elapsed < 1.0 and peak < 5_000_000, (elapsed, peak)
    # a range far too wide to build is refused by its count alone
    with pytest.raises(SpecError, match="would expand to 10,000,000,000,000"):
        parse_specs("DCRQ:n_chars=1..10000000000000")


def test_spec_expansion_counts_lists_families_and_chains_together(monkeypatch):
    from core.perturb.spec import SpecError, parse_specs

    assert len(parse_specs("DCRQ:n_chars=1..4:n_words=1..250")) == 1000   # at the limit: fine
    for text, n in [("DCRQ:n_chars=1..4:n_words=1..251", "1,004"),
                    ("TLQ, DCRQ:n_chars=1..4:n_words=1..250", "1,001"),
                    ("DCRQ:n_chars=1..40:n_words=1..30+DPQ", "1,200"),
                    ("DCRQ:n_chars=1..20+DRQ:n_words=1..60", "1,200")]:
        with pytest.raises(SpecError, match=f"would expand to {n} perturbation specs"):
            parse_specs(text)
    monkeypatch.setenv("QAX_MAX_SPECS", "5000")
    assert len(parse_specs("DCRQ:n_chars=1..4:n_words=1..1000")) == 4000


def test_the_sweeps_page_refuses_the_hostile_spec_at_once(monkeypatch, tiny_registry, tmp_path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_SWEEP_DB", str(tmp_path / "sweeps.sqlite"))
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=120).run()
    t0 = time.perf_counter()
    at.text_input(key="sw_spec_text").set_value(HOSTILE_SPEC).run()
    assert time.perf_counter() - t0 < 20
    assert not at.exception, at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("8,000,000 perturbation specs; the limit is 1,000 (the server's QAX_MAX_SPECS)" in e
               for e in errors), errors
    assert at.button(key="sw_start").disabled


def test_repeats_over_the_budget_are_refused_by_the_cli_and_the_sweep(tmp_path, tiny_registry):
    from core.datasets import demo_dataset
    from core.sweeps.config import SweepConfig, SweepError
    from core.sweeps.plan import resolve_inputs

    with pytest.raises(SweepError, match=r"asks for 101 repeats; the limit is 100 \(the server's QAX_MAX_REPEATS\)"):
        resolve_inputs(SweepConfig("demo", ["TUQ"], ["tiny-a"], repeats=101), dataset=demo_dataset("en"))
    env = {**os.environ, "QAX_MODELS_TOML": str(tiny_registry), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    env.pop("QAX_DEBUG", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "core.sweeps", "--dataset", "demo.en", "--perturbations", "TUQ",
                           "--models", "tiny-a", "--repeats", "1000000000", "--db", str(tmp_path / "s.sqlite")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("--repeats asks for 1,000,000,000 repeats; the limit is 100 (the server's QAX_MAX_REPEATS)"
            in proc.stderr), proc.stderr
    assert time.perf_counter() - t0 < 60
    assert not (tmp_path / "s.sqlite").exists()
