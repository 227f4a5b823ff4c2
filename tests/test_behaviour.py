"""Behaviour tests (core.behaviour): the file format, expansion, and a run on minilm-squad whose
pass/fail per case was read and checked by hand (tests/behaviour_minilm.toml)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.behaviour.__main__ import main
from core.behaviour.run import case_rows, results_rows, run_file
from core.behaviour.spec import BehaviourError, expand, load, loads

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FILE = HERE / "behaviour_minilm.toml"


@pytest.fixture(scope="module")
def minilm():
    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine

    # the weights' own answers (hand-checked with torch); minilm-squad's default backend is int8,
    # which answers some cases with another span
    return load_engine("minilm-squad", EngineSettings(backend="torch"))


def test_expansion_is_seeded_complete_and_distinct():
    f = load(FILE)
    (comparison, year, typos, city) = f.tests
    cases = expand(comparison, f.seed)
    # 3 x 3 names minus the 3 where a == b, in order
    assert [c.context for c in cases] == [
        "Anna is taller than John.", "Anna is taller than Maria.", "John is taller than Anna.",
        "John is taller than Maria.", "Maria is taller than Anna.", "Maria is taller than John."]
    assert [c.expect for c in cases] == ["John", "Maria", "Anna", "Maria", "Anna", "John"]
    assert [c.context_after for c in expand(city, 0)] == [
        "Anna Novak lives in the city of Lima and works as a nurse."] * 2
    big = loads('[[test]]\ntype = "MFT"\ncontext = "{a} {b} {c}"\nquestion = "q"\nexpect = "{a}"\nn = 5\n'
                'fill.a = ["1", "2", "3", "4"]\nfill.b = ["1", "2", "3", "4"]\nfill.c = ["1", "2", "3", "4"]')
    first, again = expand(big.tests[0], 0), expand(big.tests[0], 0)
    assert len(first) == 5 and first == again and first != expand(big.tests[0], 1)


@pytest.mark.parametrize("text, message", [
    ("not toml [", "not valid TOML"),
    ('lang = "en"', "no tests"),
    ('[[test]]\ntype = "XYZ"\nquestion = "q"\ncontext = "c"', "'type' must be one of MFT, INV, DIR"),
    ('[[test]]\ntype = "MFT"\nquestion = "q"\ncontext = "c"', "missing 'expect'"),
    ('[[test]]\ntype = "MFT"\nquestion = "{x}"\ncontext = "c"\nexpect = "c"', "no word list for placeholder(s) ['x']"),
    ('[[test]]\ntype = "INV"\nquestion = "q"\ncontext = "c"', "missing 'perturb'"),
    ('[[test]]\ntype = "DIR"\nquestion = "q"\ncontext = "c"', "needs replace"),
    ('[[test]]\ntype = "MFT"\nquestion = "q"\ncontext = "c"\nexpect = "c"\ncolour = 1', "unknown key(s) ['colour']"),
    ('[[test]]\ntype = "MFT"\nquestion = "q"\ncontext = "c"\nexpect = "c"\nmax_failure_rate = 2', "from 0 to 1"),
])
def test_malformed_files_are_refused_with_the_reason(text, message):
    with pytest.raises(BehaviourError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        loads(text)


def test_files_with_too_many_cases_are_refused():
    test = ('[[test]]\nname = "t{i}"\ntype = "MFT"\ncontext = "{{a}} {{b}}"\nquestion = "q"\nexpect = "{{a}}"\n'
            'n = 2000\nfill.a = [{words}]\nfill.b = [{words}]\n')
    words = ", ".join(f'"w{k}"' for k in range(50))   # 2,500 combinations, 2,000 cases per test
    loads("\n".join(test.format(i=i, words=words) for i in range(10)))   # 20,000: the limit
    with pytest.raises(BehaviourError, match="at most 20,000 per file"):
        loads("\n".join(test.format(i=i, words=words) for i in range(11)))


def test_expected_answer_must_be_in_the_context():
    f = loads('[[test]]\ntype = "MFT"\nquestion = "q"\ncontext = "Anna sings."\nexpect = "Ben"')
    with pytest.raises(BehaviourError, match="not in the context"):
        expand(f.tests[0])


def test_run_on_minilm_squad_pass_fail_per_case(minilm):
    results = run_file(load(FILE), {"minilm-squad": minilm})
    status = {r.name: [c.status for c in r.cases] for r in results}
    # comparison: minilm answers "Who is shorter?" with the second name (right) except for
    # "Anna is taller than John.", where it returns the whole clause
    assert status["comparison"] == ["fail", "pass", "pass", "pass", "pass", "pass"]
    (comparison, year, typos, city) = results
    assert comparison.cases[0].answer.text == "Anna is taller than John"
    # "ten years after work began": the Tagus context draws "ten years", the Rhine one "1966"
    assert status["which year"] == ["fail", "pass"] and year.cases[0].answer.text == "ten years"
    # keyboard_Q at p=0.5: case 1 comes out unchanged (skipped); the other two change the answer
    assert status["typos"] == ["fail", "skip", "fail"]
    assert typos.cases[0].question_after == "Wgere foes Jenji Smuth work ss a pilot?"
    assert (typos.cases[0].answer.text, typos.cases[0].answer_after.text) == ("Nairobi", "Kenji Smith lives in Nairobi")
    # the answer moves to the new city, but as "city of Lima", not the expected "Lima"
    assert status["new city"] == ["fail", "fail"] and city.cases[0].answer_after.text == "city of Lima"
    summary = {r["test"]: (r["passed"], r["failed"], r["skipped"], r["failure rate %"]) for r in results_rows(results)}
    assert summary == {"comparison": (5, 1, 0, 16.7), "which year": (1, 1, 0, 50.0), "typos": (0, 2, 1, 100.0),
                       "new city": (0, 2, 0, 100.0)}
    row = [r for r in case_rows(results, only_failures=True) if r["test"] == "comparison"][0]
    assert (row["answer text"], row["answer span"]) == ("Anna is taller than John", "0-24")


def test_cli_exit_status(minilm, tmp_path, capsys):
    out = tmp_path / "r.json"
    # no threshold: report only
    assert main([str(FILE), "--model", "minilm-squad", "--backend", "torch", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["summary"][0]["failed"] == 1
    capsys.readouterr()
    # typos and new city fail 100% > 50%; which year fails exactly 50%, not over
    assert main([str(FILE), "--model", "minilm-squad", "--backend", "torch", "--max-failure-rate", "0.5"]) == 1
    assert "2 test(s) over their failure-rate threshold" in capsys.readouterr().err
    assert main([str(FILE), "--model", "minilm-squad", "--backend", "torch", "--max-failure-rate", "1"]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text('[[test]]\ntype = "INV"\nquestion = "q"\ncontext = "c"\nperturb = "no_such_Q"\n')
    capsys.readouterr()
    assert main([str(bad), "--model", "minilm-squad"]) == 2
    assert "unknown perturbation id 'no_such_Q'" in capsys.readouterr().err
    assert main([str(FILE), "--model", "no-such-model"]) == 2
    assert main([str(tmp_path / "absent.toml"), "--model", "minilm-squad"]) == 2


@pytest.mark.parametrize("name", ["en", "de", "zh"])
def test_shipped_examples_expand(name):
    f = load(REPO / "assets" / "behaviour" / f"{name}.toml")
    assert f.lang == name and {t.kind for t in f.tests} == {"MFT", "INV", "DIR"}
    for t in f.tests:
        assert expand(t, f.seed)


def test_the_chinese_file_perturbs_every_invariance_case():
    """zh.toml's INV perturbations (drop punctuation, insert one, say it twice) change every
    Chinese question they are given, so no case is skipped as unchanged."""
    import random

    from core.perturb import registry
    from core.types import QAExample

    f = load(REPO / "assets" / "behaviour" / "zh.toml")
    inv = [t for t in f.tests if t.kind == "INV"]
    assert {t.perturb for t in inv} == {"DPQ", "IPQ", "repeat_question"}
    for t in inv:
        for case in expand(t, f.seed):
            ex = QAExample("c", case.question, case.context, lang="zh")
            (variant,) = registry.get(t.perturb).apply(ex, random.Random(0))
            assert variant.text != case.question
