"""The challenge-set CLI (python -m core.perturb.make_challenge)."""
from __future__ import annotations

import json

import pytest

from core.datasets import load_squad
from core.perturb import make_challenge

SQUAD = {"version": "1.1", "data": [{"title": "T", "paragraphs": [
    {"context": "Homer wrote the Iliad in 750 BC.",
     "qas": [{"id": "a", "question": "Who wrote it?", "answers": [{"text": "Homer", "answer_start": 0}]},
             {"id": "b", "question": "Tell me the year.", "answers": [{"text": "750 BC", "answer_start": 25}]}]},
]}]}


@pytest.fixture()
def squad_file(tmp_path):
    path = tmp_path / "mini.en.json"
    path.write_text(json.dumps(SQUAD), encoding="utf-8")
    return path


def test_drop_qmark_challenge_set_and_table3_summary(squad_file, tmp_path, capsys):
    out = tmp_path / "challenge.json"
    assert make_challenge.main(["--input", str(squad_file), "--perturbation", "drop_qmark_Q",
                                "--seed", "3", "--output", str(out)]) == 0
    challenge = load_squad(out)
    original = load_squad(squad_file)
    assert [e.id for e in challenge.examples] == ["a", "b"]
    assert [e.question for e in challenge.examples] == ["Who wrote it", "Tell me the year."]
    # only the question changed: same contexts, answers, titles
    for o, c in zip(original.examples, challenge.examples):
        assert (o.context, o.answers, o.title) == (c.context, c.answers, c.title)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == ("mini.en: SQuAD v1.1, 2 questions; language en (from the file name); "
                          "nothing repaired, guessed or dropped")
    assert printed[2] == "examples: 2 | perturbed: 1 | unchanged by chance: 0 | not applicable: 1 | incompatible: 0"
    # Table 3 as the paper computes it ignores punctuation: a dropped "?" costs no CER or WER
    assert printed[5].split()[3:5] == ["0.0", "0.0"]
    # raw, all: 1 char edit over 13 + 17 = 30 chars (3.3 %); 1 of 3 + 4 = 7 words (14.3 %)
    assert printed[5].split()[-2:] == ["3.3", "14.3"]
    # with a variant (only "a"): 1/13 chars, 1/3 words
    assert printed[6].split()[-2:] == ["7.7", "33.3"]


def test_only_perturbed_and_limit(squad_file, tmp_path, capsys):
    out = tmp_path / "c.json"
    make_challenge.main(["--input", str(squad_file), "--perturbation", "drop_qmark_Q", "--output", str(out),
                         "--only-perturbed"])
    assert [e.id for e in load_squad(out).examples] == ["a"]
    make_challenge.main(["--input", str(squad_file), "--perturbation", "drop_qmark_Q", "--output", str(out),
                         "--limit", "1"])
    assert [e.question for e in load_squad(out).examples] == ["Who wrote it"]


def test_chain_with_step_parameter_is_seeded_per_example(squad_file, tmp_path):
    out1, out2 = tmp_path / "1.json", tmp_path / "2.json"
    args = ["--input", str(squad_file), "--perturbation", "TLQ+keyboard_Q", "--param", "keyboard_Q.p=1.0",
            "--seed", "0"]
    make_challenge.main(args + ["--output", str(out1)])
    make_challenge.main(args + ["--output", str(out2), "--limit", "1"])
    first = load_squad(out1).examples
    assert first[0].question == load_squad(out2).examples[0].question   # independent of the other examples
    # lower-cased, then one row-wise neighbour per word: h->g, w->e, t->r
    assert first[0].question == "wgo erote ir?"
    # the spec language says the same: the parameter written in the spec instead of --param
    out3 = tmp_path / "3.json"
    make_challenge.main(["--input", str(squad_file), "--perturbation", "TLQ+keyboard_Q:p=1.0", "--seed", "0",
                         "--output", str(out3)])
    assert [e.question for e in load_squad(out3).examples] == [e.question for e in first]
    # each example draws from rng_for(seed, example, spec, 0): a sweep's repeat 0 and the Variants page's
    from core.perturb.compose import Composite
    from core.perturb.spec import rng_for

    original = load_squad(squad_file).examples[0]
    chain = Composite(["TLQ", "keyboard_Q"], {"keyboard_Q": {"p": 1.0}})
    assert chain.apply(original, rng_for(0, original, "TLQ+keyboard_Q:p=1.0", 0))[0].text == first[0].question


def test_context_perturbation_keeps_answer_offsets(squad_file, tmp_path):
    out = tmp_path / "c.json"
    make_challenge.main(["--input", str(squad_file), "--perturbation", "DRC", "--seed", "1", "--output", str(out)])
    for e in load_squad(out).examples:      # load_squad re-checks every offset against the text
        for a in e.answers:
            assert e.context[a.answer_start:a.answer_start + len(a.text)] == a.text


def test_bad_arguments_exit_2(squad_file, tmp_path, capsys):
    base = ["--input", str(squad_file), "--output", str(tmp_path / "x.json")]
    assert make_challenge.main(base + ["--perturbation", "no_such_id"]) == 2
    assert "unknown perturbation id" in capsys.readouterr().err
    assert make_challenge.main(base + ["--perturbation", "keyboard_Q", "--param", "p=7"]) == 2
    assert make_challenge.main(base + ["--perturbation", "keyboard_Q", "--param", "nonsense"]) == 2
    assert make_challenge.main(base + ["--perturbation", "TLQ+keyboard_Q", "--param", "p=1"]) == 2
    assert make_challenge.parse_params(["p=0.5", "style=tag", "keyboard_Q.p=1"]) == (
        {"p": 0.5, "style": "tag"}, {"keyboard_Q": {"p": 1}})
