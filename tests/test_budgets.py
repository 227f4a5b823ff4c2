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
    from core.sweeps.running.plan import resolve_inputs

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
    assert ("argument --repeats: 1,000,000,000 repeats is over the limit of 100 (set QAX_MAX_REPEATS to change it)"
            in proc.stderr), proc.stderr
    assert time.perf_counter() - t0 < 60
    assert not (tmp_path / "s.sqlite").exists()


# ------------------------------------------------------------- finding 8: stored text, sweeps


def test_names_are_normalised_and_bounded():
    from core.budgets import BudgetError, clean_name, clean_note

    assert clean_name("\u202eevil\u202c \u2066Ada\u2069\u200b\u200c\u200d\u2060\ufeff  Lovelace") == "evil Ada Lovelace"
    assert clean_name("Cafe\u0301") == "Caf\u00e9"   # NFC
    assert clean_note("line one\r\nline\u202e two") == "line one\nline two"
    with pytest.raises(BudgetError, match=r"the speaker label has 1,000,000 characters; the limit is 200 "
                                          r"\(the server's QAX_MAX_NAME_CHARS\)"):
        clean_name("x" * 1_000_000, "the speaker label")
    with pytest.raises(BudgetError, match="the notes has 2,001 characters; the limit is 2,000"):
        clean_note("n" * 2001, "the notes")


def test_a_megabyte_speaker_label_or_note_is_refused_and_names_are_stored_clean(tmp_path):
    from core.collect import trials
    from core.datasets import demo_dataset

    ds = demo_dataset("en")
    with pytest.raises(trials.TrialError, match="the speaker label has 1,048,576 characters"):
        trials.create_trial(trials.Speaker("s" * 2**20), ds, 2, 0, root=tmp_path)
    with pytest.raises(trials.TrialError, match="the notes has 1,048,576 characters"):
        trials.create_trial(trials.Speaker("ada", notes="n" * 2**20), ds, 2, 0, root=tmp_path)
    assert list(tmp_path.iterdir()) == []   # nothing stored
    trial = trials.create_trial(trials.Speaker("\u202eada\u202c\u200b", "fr\u2066", "usb\ufeff", "ok\u2060"),
                                ds, 2, 0, root=tmp_path)
    assert (trial.speaker.label, trial.speaker.accent, trial.speaker.microphone, trial.speaker.notes) == \
        ("ada", "fr", "usb", "ok")


def test_a_megabyte_sweep_name_or_beat_question_is_refused(tmp_path):
    from core.collect import beat, beat_store
    from core.datasets import demo_dataset
    from core.sweeps.config import SweepConfig, SweepError
    from core.sweeps.running.plan import resolve_inputs

    ds = demo_dataset("en")
    with pytest.raises(SweepError, match="the sweep name has 1,048,576 characters; the limit is 200"):
        resolve_inputs(SweepConfig("demo", ["TUQ"], ["tiny-a"], name="n" * 2**20), dataset=ds)
    inputs = resolve_inputs(SweepConfig("demo", ["TUQ"], ["tiny-a"], name="\u202emy\u200b sweep\u2069"), dataset=ds)
    assert inputs.config.name == "my sweep"
    passage = beat.passages(ds)[0]
    with beat_store.BeatStore(tmp_path / "beat.sqlite") as store:
        with pytest.raises(ValueError, match="the question has 1,048,576 characters; the limit is 2,000"):
            store.record_attempt(passage, "q" * 2**20, (0, 4), {"tiny-a": None}, user="ada", session="s")
        assert store.attempts() == []


class _Blocked:
    """SweepJob._run replaced: the job runs until ``release`` is set (or it is cancelled)."""

    def __init__(self):
        import threading

        self.release = threading.Event()

    def __call__(self, job):
        import time as _time

        while not self.release.is_set() and not job.cancel_requested:
            _time.sleep(0.01)
        job.finished_at = _time.monotonic()
        from core.sweeps.running import job as job_mod

        with job_mod._RUNNING_LOCK:
            job_mod._JOBS.discard(job)


def _job(owner):
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.job import SweepJob

    return SweepJob(SweepConfig("demo", ["TUQ"], ["tiny-a"]), {}, "unused.sqlite", owner=owner)


def test_concurrent_sweeps_are_bounded_per_server_and_per_session(monkeypatch):
    from core.budgets import BudgetError
    from core.sweeps.running.job import SweepJob, running_jobs

    blocked = _Blocked()
    monkeypatch.setattr(SweepJob, "_run", lambda self: blocked(self))
    try:
        a1 = _job("session-a").start()
        with pytest.raises(BudgetError, match=r"with this one, your session would run 2 sweeps; the limit is 1 "
                                              r"\(the server's QAX_MAX_SWEEPS_PER_SESSION\)"):
            _job("session-a").start()
        _job("session-b").start()
        with pytest.raises(BudgetError, match=r"with this one, the server would run 3 sweeps; the limit is 2 "
                                              r"\(the server's QAX_MAX_SWEEPS\)"):
            _job("session-c").start()
        assert len(running_jobs()) == 2
        a1.cancel()
        assert a1.wait(5)
        _job("session-c").start()   # a slot is free again
    finally:
        blocked.release.set()
    for j in list(running_jobs()):
        j.wait(5)
    assert running_jobs() == []


def test_a_sweep_whose_sessions_have_gone_is_cancelled_after_the_grace_period(monkeypatch):
    from core.sweeps.running.job import SweepJob, reap_abandoned

    blocked = _Blocked()
    monkeypatch.setattr(SweepJob, "_run", lambda self: blocked(self))
    monkeypatch.setenv("QAX_SWEEP_GRACE_S", "30")
    active = {"tab-1", "tab-2"}
    gone, followed = _job("tab-1").start(), _job("tab-2").start()
    try:
        assert reap_abandoned(100.0, active.__contains__) == []
        active.clear()                                   # both tabs closed at t=100
        followed.follow("tab-3")                         # ...but tab-2's sweep is followed by a reloaded page
        active.add("tab-3")
        assert reap_abandoned(110.0, active.__contains__) == []
        assert reap_abandoned(139.0, active.__contains__) == []   # 29 s: still within the grace
        assert reap_abandoned(140.0, active.__contains__) == [gone]
        assert gone.cancel_requested and "no browser followed it for 30 s (the server's QAX_SWEEP_GRACE_S)" \
            in gone.cancel_reason
        assert not followed.cancel_requested
        assert gone.wait(5)
    finally:
        blocked.release.set()
        followed.wait(5)


# --------------------------------------------------------------- finding 7: behaviour TOML


def test_a_deeply_nested_toml_is_refused_before_parsing_not_with_a_recursion_error():
    from core.behaviour.spec import BehaviourError, loads

    text = "x = " + "[" * 8000 + "]" * 8000   # 16 KB: tomllib recursed until RecursionError
    with pytest.raises(BehaviourError, match=r"evil: its arrays and tables nest 8,000 levels; the limit is 16 "
                                             r"\(the server's QAX_MAX_TOML_DEPTH\)"):
        loads(text, "evil")
    # brackets in strings and comments are not nesting
    from core.behaviour.spec import toml_depth

    assert toml_depth('a = "[[[[" # [[[[\nb = \'[[[\'\nc = """\n[[[[\n"""\n[[test]]\nq = [1, [2]]') == 2


def test_a_toml_over_the_size_budget_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from core.behaviour.spec import BehaviourError, load, loads

    big = "# " + "x" * 300_000 + "\n"
    with pytest.raises(BehaviourError, match=r"big is 293 KB; the limit is 256 \(the server's QAX_MAX_TOML_KB\)"):
        loads(big, "big")
    path = tmp_path / "big.toml"
    path.write_text(big)
    with pytest.raises(BehaviourError, match="big.toml is 293 KB; the limit is 256"):
        load(path)
    monkeypatch.setenv("QAX_MAX_TOML_KB", "400")
    with pytest.raises(BehaviourError, match="no tests"):   # within the raised budget: parsed, then judged
        loads(big, "big")


def test_templates_that_amplify_are_refused_before_any_case_is_built():
    from core.behaviour.spec import BehaviourError, loads

    long = ", ".join(f'"{"w" * 2500}{i}"' for i in range(10))
    text = (f'[[test]]\nname = "amp"\ntype = "INV"\nquestion = "q {{b}}?"\ncontext = "{"{a}" * 20} {{b}}"\n'
            f'perturb = "TUQ"\nn = 100\nfill = {{ a = [{long}], b = ["1","2","3","4","5","6","7","8","9","10"] }}\n')
    assert len(text) < 30_000
    t0 = time.perf_counter()
    with pytest.raises(BehaviourError, match=r"amp: its templates could fill out to 5,\d{3},\d{3} characters; "
                                             r"the limit is 2,000,000 \(the server's QAX_MAX_BEHAVIOUR_CHARS\)"):
        loads(text, "amp")
    assert time.perf_counter() - t0 < 1


def test_the_shipped_behaviour_files_fit_the_budgets():
    from core.behaviour.spec import expand, load

    files = [*sorted((ROOT / "assets" / "behaviour").glob("*.toml")), ROOT / "tests" / "behaviour_minilm.toml"]
    assert len(files) >= 2
    for f in files:
        bfile = load(f)
        assert all(expand(t, bfile.seed) for t in bfile.tests)
