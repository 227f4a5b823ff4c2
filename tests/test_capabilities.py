"""The capability test set (assets/behaviour/capabilities_en.toml, issue 31): its families and
cases, minilm-squad's answers on hand-checked cases, and ``python -m core.behaviour --card``
writing failure rates per family into a model card (a tmp copy; the shipped cards are never
touched here) that the Models page shows."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from core.behaviour.__main__ import main
from core.behaviour.spec import expand, load

REPO = Path(__file__).resolve().parents[1]
CAPS = REPO / "assets" / "behaviour" / "capabilities_en.toml"
FAMILIES = {"animal vs vehicle": 160, "profession vs nationality": 160, "attributes": 150, "comparisons": 150,
            "negation": 150, "coreference": 160, "temporal order": 160}


@pytest.fixture(scope="module")
def cases():
    bfile = load(CAPS)
    return {t.name: (t, expand(t, bfile.seed)) for t in bfile.tests}


def test_families_counts_and_every_answer_unambiguous(cases):
    counts: dict[str, int] = {}
    for test, cs in cases.values():
        assert test.kind == "MFT"
        counts[test.family_name] = counts.get(test.family_name, 0) + len(cs)
        assert len({(c.context, c.question) for c in cs}) == len(cs)          # no case twice
        for c in cs:
            # the expected answer is one span of its context, and it occurs exactly once
            assert len(re.findall(rf"\b{re.escape(c.expect)}\b", c.context)) == 1, (test.name, c)
    assert counts == FAMILIES
    assert CAPS.stat().st_size < 20_000   # templates, not expanded cases


# (test, context, question, expected answer): read and checked by hand
HAND_CHECKED = [
    ("animal vs vehicle: vehicle asked, vehicle first", "Olga has a car and a goat.", "What vehicle does Olga have?",
     "car"),
    ("animal vs vehicle: animal asked, vehicle first", "Kenji has a bike and a goat.", "What animal does Kenji have?",
     "goat"),
    ("profession vs nationality: job asked", "Pedro is a Brazilian plumber.", "What is Pedro's job?", "plumber"),
    ("profession vs nationality: nationality asked", "David is a Peruvian painter.", "What is David's nationality?",
     "Peruvian"),
    ("attributes: shape", "There is a big oval blue lamp in the room.", "What shape is the lamp?", "oval"),
    ("negation: the person who is not", "Olga is not a baker. Maria is.", "Who is a baker?", "Maria"),
    ("temporal order: job now", "Kenji used to be a journalist, but now is a baker.", "What is Kenji's job now?",
     "baker"),
    ("temporal order: before, who first", "David arrived at the party before Olga.", "Who arrived first?", "David"),
    ("comparisons: more, asked less", "Maria is more creative than Tiffany.", "Who is less creative?", "Tiffany"),
    ("coreference: his job, she first", "Fatima and David are friends. She is a dentist, and he is a nurse.",
     "What is David's job?", "nurse"),
]


def test_hand_checked_cases_are_in_the_file(cases):
    for name, context, question, expect in HAND_CHECKED:
        found = [c for c in cases[name][1] if c.context == context and c.question == question]
        assert len(found) == 1 and found[0].expect == expect, name


@pytest.fixture(scope="module")
def minilm():
    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine

    # the weights' own answers (hand-checked with torch); minilm-squad's default backend is int8,
    # which answers some cases with another span
    return load_engine("minilm-squad", EngineSettings(backend="torch"))


def test_minilm_squad_answers_the_hand_checked_cases(minilm):
    preds = minilm.predict([q for _, _, q, _ in HAND_CHECKED], [c for _, c, _, _ in HAND_CHECKED], n_best=3)
    top = {name: [s.text for s in p.nbest] for (name, *_), p in zip(HAND_CHECKED, preds)}
    # the over-long span wins, the right one is second (issue 31's finding)
    assert top["animal vs vehicle: animal asked, vehicle first"][:2] == ["bike and a goat", "goat"]
    assert top["animal vs vehicle: vehicle asked, vehicle first"][0] == "car and a goat"
    assert top["attributes: shape"][:2] == ["oval blue", "oval"]
    # the wrong person: the negated one, the one compared against
    assert top["negation: the person who is not"][0] == "Olga"
    assert top["comparisons: more, asked less"][0] == "Maria"
    # and right where the answer is a single word in a plain position
    assert top["profession vs nationality: job asked"][0] == "plumber"
    assert top["profession vs nationality: nationality asked"][0] == "Peruvian"
    assert top["temporal order: job now"][0] == "baker"
    assert top["temporal order: before, who first"][0] == "David"


SMALL = '''
name = "small capabilities"
seed = 3
[[test]]
name = "animal asked"
family = "types"
type = "MFT"
context = "{first} has a {vehicle} and a {animal}."
question = "What animal does {first} have?"
expect = "{animal}"
fill.first = ["Kenji"]
fill.vehicle = ["bike"]
fill.animal = ["goat"]

[[test]]
name = "job asked"
family = "types"
type = "MFT"
context = "{first} is a {nat} {prof}."
question = "What is {first}'s job?"
expect = "{prof}"
fill.first = ["Pedro"]
fill.nat = ["Brazilian"]
fill.prof = ["plumber"]

[[test]]
name = "who first"
type = "MFT"
context = "{a} arrived at the party before {b}."
question = "Who arrived first?"
expect = "{a}"
fill.a = ["David"]
fill.b = ["Olga"]
'''


@pytest.fixture
def card_copy(tmp_path, monkeypatch):
    """minilm-squad registered from a tmp folder: its weights linked, its card copied."""
    src = REPO / "assets" / "models" / "minilm-squad"
    d = tmp_path / "minilm-copy"
    d.mkdir()
    for f in src.iterdir():
        if f.name in ("model_card.json", "README.md"):
            shutil.copy(f, d / f.name)
        else:
            (d / f.name).symlink_to(f)
    reg = tmp_path / "models.toml"
    reg.write_text(f'[[model]]\nname = "minilm-copy"\npath = "{d}"\nlanguages = ["en"]\n\n'
                   '[[model]]\nname = "hub"\nhf_id = "deepset/roberta-base-squad2"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(reg))
    return d


def test_card_flag_writes_failure_rates_per_family(card_copy, tmp_path, capsys):
    shipped = (REPO / "assets" / "models" / "minilm-squad" / "model_card.json").read_bytes()
    before = json.loads((card_copy / "model_card.json").read_text())
    small = tmp_path / "small.toml"
    small.write_text(SMALL)
    assert main([str(small), "--model", "minilm-copy", "--backend", "torch", "--card"]) == 0
    assert "minilm-copy: failure rates per family written to" in capsys.readouterr().out
    card = json.loads((card_copy / "model_card.json").read_text())
    entry = card["capabilities"][small.resolve().as_posix()]
    # Kenji's goat fails ("bike and a goat"), Pedro's job and David pass (hand-checked above)
    assert entry["families"] == {"types": {"n": 2, "failed": 1, "failure_rate": 50.0},
                                 "who first": {"n": 1, "failed": 0, "failure_rate": 0.0}}
    assert entry["tests"]["animal asked"] == {"family": "types", "type": "MFT", "n": 1, "failed": 1,
                                              "failure_rate": 100.0}
    assert (entry["n"], entry["seed"], entry["name"]) == (3, 3, "small capabilities")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", entry["date"]) and len(entry["file_sha256"]) == 64
    rest = {k: v for k, v in card.items() if k != "capabilities"}
    assert rest == {k: v for k, v in before.items() if k != "capabilities"}   # nothing else changed
    others = {k: v for k, v in card["capabilities"].items() if k != small.resolve().as_posix()}
    assert others == before.get("capabilities", {})   # other files' entries are kept
    readme = (card_copy / "README.md").read_text()
    assert "| types | 2 | 1 | 50.0 |" in readme and "| who first | 1 | 0 | 0.0 |" in readme
    # a second run of the same file replaces its entry; the shipped card is untouched
    assert main([str(small), "--model", "minilm-copy", "--backend", "torch", "--card"]) == 0
    again = json.loads((card_copy / "model_card.json").read_text())["capabilities"]
    assert len(again) == len(before.get("capabilities", {})) + 1
    assert (REPO / "assets" / "models" / "minilm-squad" / "model_card.json").read_bytes() == shipped


def test_card_flag_refuses_hub_models_and_broken_cards(card_copy, tmp_path, capsys):
    small = tmp_path / "small.toml"
    small.write_text(SMALL)
    assert main([str(small), "--model", "hub", "--card"]) == 2
    assert "hub model has no local model card" in capsys.readouterr().err
    (card_copy / "model_card.json").write_text("{broken")
    assert main([str(small), "--model", "minilm-copy", "--card"]) == 2
    assert "model card cannot be read" in capsys.readouterr().err
    assert (card_copy / "model_card.json").read_text() == "{broken"


def test_models_page_shows_the_capability_matrix(card_copy, tmp_path):
    from streamlit.testing.v1 import AppTest

    small = tmp_path / "small.toml"
    small.write_text(SMALL)
    assert main([str(small), "--model", "minilm-copy", "--backend", "torch", "--card"]) == 0
    at = AppTest.from_file("../pages/models.py", default_timeout=60).run()
    assert not at.exception, at.exception
    # the copied card also holds the shipped capability run: one file per entry, picked in a box
    box = at.selectbox(key="models_cap_file")
    assert box.options == ["assets/behaviour/capabilities_en.toml", small.resolve().as_posix()]
    box.set_value(small.resolve().as_posix()).run()
    # models as rows, families as columns, figures as the page shows them (one decimal)
    matrix = [d.value for d in at.dataframe if "minilm-copy" in d.value.index and "types" in d.value.columns]
    assert len(matrix) == 1
    assert matrix[0].loc["minilm-copy", "types"] == "50.0" and matrix[0].loc["minilm-copy", "who first"] == "0.0"
    assert "⬇ CSV (failure-rate matrix)" in [b.label for b in at.get("download_button")]


def test_models_page_shows_the_shipped_cards_capabilities():
    from streamlit.testing.v1 import AppTest

    from core.qa import registry

    at = AppTest.from_file("../pages/models.py", default_timeout=60).run()
    assert not at.exception, at.exception
    matrix = [d.value for d in at.dataframe if "animal vs vehicle" in d.value.columns]   # models as rows
    assert len(matrix) == 1
    english = ["minilm-squad", "minilm-squad-noise", "minilm-squad-lora", "mpnet-squad-lora"]
    assert set(english) <= set(matrix[0].index) and list(matrix[0].columns) == list(FAMILIES)
    for name in english:
        card = registry.get_entry(name).model_card()["capabilities"]["assets/behaviour/capabilities_en.toml"]
        assert card["n"] == 1090 and {f: v["n"] for f, v in card["families"].items()} == FAMILIES
        for family, v in card["families"].items():
            assert matrix[0].loc[name, family] == f"{v['failure_rate']:.1f}"
    # measured with the shipped weights (docs/results/training-diary.md): the MiniLM baseline fails most type cases
    assert matrix[0].loc["minilm-squad", "animal vs vehicle"] == "85.6"
