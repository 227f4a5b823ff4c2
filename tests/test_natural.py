"""Natural noise as challenge sets (core.datasets.natural), the natural_Q step of the spec language and
the disfluency_Q perturbation: on hand-built files, and on the shipped HeySQuAD / Disfl-QA files."""
from __future__ import annotations

import json
import random

import pytest

from core.datasets import DatasetError, load_dataset
from core.datasets import natural as nat
from core.perturb import registry
from core.perturb.compose import build
from core.perturb.spec import parse_spec, parse_specs
from core.types import Answer, QAExample


def _squad(path, questions: dict[str, str], context="Normandy is a region in France. Norse people settled there."):
    qas = [{"id": qid, "question": q, "answers": [{"text": "France", "answer_start": context.index("France")}]}
           for qid, q in questions.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"data": [{"title": "N", "paragraphs": [{"context": context, "qas": qas}]}]}))


@pytest.fixture
def natural_dir(tmp_path):
    """A data directory with a two-question HeySQuAD, a Disfl-QA dev split with one unanswerable id,
    SQuAD dev holding the answerable ones, and an XQuAD file holding the paragraph of one of them."""
    root = tmp_path / "data"
    typed = {"q1": "Where is Normandy?", "q2": "Who settled in Normandy?"}
    _squad(root / "natural/heysquad/dev-common-original-1002.json", typed)
    _squad(root / "natural/heysquad/dev-common-machine-transcribed-1002.json",
           {"q1": "where is normandy", "q2": "who settled in normandy"})
    _squad(root / "natural/heysquad/dev-common-human-transcribed-1002.json",
           {"q1": "where is norman d", "q2": "who settled in normandy"})
    _squad(root / "squad/dev-v1.1.json", typed)
    _squad(root / "xquad/xquad.en.json", {"x": "Other?"}, context="A different paragraph about France.")
    disfl = {"q1": {"original": "Where is Normandy?", "disfluent": "Where is Norse no wait Normandy?"},
             "v2only": {"original": "Who owns the moon?", "disfluent": "Who uh owns the moon?"}}
    (root / "natural/disfl-qa").mkdir(parents=True)
    (root / "natural/disfl-qa/dev.json").write_text(json.dumps(disfl))
    nat._heysquad.cache_clear(), nat._disfl_qa.cache_clear(), nat._questions.cache_clear()
    nat._squad_dev.cache_clear(), nat._xquad_contexts.cache_clear()
    yield root
    nat._heysquad.cache_clear(), nat._disfl_qa.cache_clear(), nat._questions.cache_clear()
    nat._squad_dev.cache_clear(), nat._xquad_contexts.cache_clear()


def test_heysquad_pairs_by_id_across_its_three_files(natural_dir):
    found = nat.heysquad(natural_dir)
    assert [ex.question for ex in found.original.examples] == ["Where is Normandy?", "Who settled in Normandy?"]
    assert [n.question for _, n in found.pairs("asr_human")] == ["where is norman d", "who settled in normandy"]
    assert found.report == ["asr_tts: paired by id: 2 paired, 0 mismatched, 0 unpaired",
                            "asr_human: paired by id: 2 paired, 0 mismatched, 0 unpaired"]


def test_disfl_qa_takes_squad_contexts_and_drops_unanswerable_ids(natural_dir):
    found = nat.disfl_qa("dev", natural_dir)
    assert [ex.id for ex in found.original.examples] == ["q1"]
    assert found.original.examples[0].answers[0].text == "France"
    assert found.noisy["disfluent"].examples[0].question == "Where is Norse no wait Normandy?"
    assert "1 dropped (SQuAD v2 unanswerable: not in v1.1 dev, first v2only)" in found.report[0]
    assert found.original.stats == {"paired": 1, "unanswerable_dropped": 1}


def test_natural_sets_load_by_name_and_are_discovered(natural_dir):
    assert len(load_dataset("natural:heysquad", natural_dir)) == 2
    assert load_dataset("natural:heysquad/asr_tts", natural_dir).examples[0].question == "where is normandy"
    assert load_dataset("natural:disfl-qa/dev/disfluent", natural_dir).examples[0].id == "q1"
    with pytest.raises(DatasetError, match="no natural set 'mystery'"):
        load_dataset("natural:mystery", natural_dir)
    names = {(i.name, i.role) for i in nat.discover_natural(natural_dir)}
    assert names == {("natural:heysquad", "eval"), ("natural:heysquad/asr_tts", "challenge"),
                     ("natural:heysquad/asr_human", "challenge"), ("natural:disfl-qa/dev", "eval"),
                     ("natural:disfl-qa/dev/disfluent", "challenge")}


def test_a_missing_file_is_one_clear_message(tmp_path):
    (tmp_path / "natural").mkdir()
    with pytest.raises(DatasetError, match="HeySQuAD: no file natural/heysquad/dev-common-original-1002.json"):
        nat.heysquad(tmp_path)


def test_xquad_subset_is_matched_by_context(natural_dir):
    examples = nat.heysquad(natural_dir).original.examples
    assert nat.xquad_ids(examples, natural_dir) == frozenset()
    _squad(natural_dir / "xquad/xquad.en.json", {"x": "Other?"})   # now the paragraph HeySQuAD's are on
    nat._xquad_contexts.cache_clear()
    assert nat.xquad_ids(examples, natural_dir) == {"q1", "q2"}


def test_natural_spec_replaces_the_question_by_id(natural_dir, monkeypatch):
    monkeypatch.setenv("QAX_DATA_DIR", str(natural_dir))
    spec = parse_spec("natural:asr_human")
    assert (spec.id, spec.params_dict) == ("natural_Q", {"source": "asr_human"})
    assert [s.params_dict["source"] for s in parse_specs("natural:asr_human|asr_tts")] == ["asr_human", "asr_tts"]
    p, params = build(spec)
    ex = nat.heysquad(natural_dir).original.examples[0]
    variant = p.apply(ex, random.Random(5), **params)[0]
    assert variant.text == "where is norman d" and variant.example.answers == ex.answers
    assert p.apply(ex, random.Random(99), **params)[0].text == variant.text    # deterministic
    other = QAExample("q1", "A different question?", ex.context, ex.answers)
    assert "is another question" in p.why_not(other, params)
    assert p.why_not(QAExample("zz", "Where?", ex.context, ex.answers), params) == \
        "HeySQuAD has no natural version of question 'zz'"


# ----------------------------------------------------------------------------------- disfluency

CONTEXT = "Normandy is a region in France. The Norse people settled there in the tenth century under Rollo."
EXAMPLE = QAExample("d1", "Which people settled in Normandy?", CONTEXT, (Answer("Norse", CONTEXT.index("Norse")),))


@pytest.mark.parametrize("kind", ["correction", "restart", "filler"])
def test_disfluency_kinds_insert_before_words_and_keep_the_question(kind):
    p = registry.get("disfluency_Q")
    for seed in range(6):
        v = p.apply(EXAMPLE, random.Random(seed), kind=kind, n=1)[0]
        record = v.meta["disfluencies"][0]
        assert record["kind"] == kind
        assert all(e.start == e.end for e in v.edits)          # only insertions: the question stays whole
        assert v.text.replace(v.edits[0].replacement, "", 1) == EXAMPLE.question
        if kind == "correction":
            assert f"{record['distractor']} {record['cue']} {record['target']}" in v.text
            assert record["distractor"].lower() not in {"which", "people", "settled", "normandy", "norse"}
            assert record["distractor"] in CONTEXT
        if kind == "restart":
            assert v.text.endswith(f"{record['cue']} {EXAMPLE.question}")


def test_disfluency_is_seeded_and_n_counts_disfluencies():
    p = registry.get("disfluency_Q")
    a = p.apply(EXAMPLE, random.Random(3), kind="any", n=3)[0]
    assert a.text == p.apply(EXAMPLE, random.Random(3), kind="any", n=3)[0].text
    assert len(a.meta["disfluencies"]) == 3 and len({e.start for e in a.edits}) == 3
    assert sum(r["kind"] == "restart" for r in a.meta["disfluencies"]) <= 1
    texts = {p.apply(EXAMPLE, random.Random(s), kind="any", n=1)[0].text for s in range(10)}
    assert len(texts) > 5


def test_disfluency_declares_its_parameters_and_refuses_bad_ones():
    p = registry.get("disfluency_Q")
    assert p.default_params == {"kind": "any", "n": 1, "distractor": "passage"}
    with pytest.raises(ValueError, match="n"):
        p.resolve_params({"n": 9})
    assert "supports languages en" in p.why_not(QAExample("g", "Wer war das?", "Das war er.", lang="de"))


@pytest.mark.needs_data("natural/heysquad/dev-common-original-1002.json", "natural/disfl-qa/dev.json",
                        "squad/dev-v1.1.json", "xquad/xquad.en.json")
def test_the_shipped_natural_sets_pair_as_documented():
    nat._heysquad.cache_clear(), nat._disfl_qa.cache_clear(), nat._questions.cache_clear()
    hey = nat.heysquad()
    assert len(hey.original) == 1002 and all("1,002 paired, 0 mismatched" in line for line in hey.report)
    dev = nat.disfl_qa("dev")
    assert (len(dev.original), dev.original.stats["unanswerable_dropped"]) == (498, 502)
    assert len(nat.xquad_ids(hey.original.examples)) == 128


def test_make_challenge_measures_a_natural_condition_against_squad_dev(natural_dir, monkeypatch, capsys):
    from core.perturb.make_challenge import main

    monkeypatch.setenv("QAX_DATA_DIR", str(natural_dir))
    assert main(["--input", str(natural_dir / "squad/dev-v1.1.json"), "--challenge", "natural:asr_human"]) == 0
    out = capsys.readouterr().out
    assert "paired by id: 2 paired, 0 mismatched, 0 unpaired" in out
    assert "questions changed: 2 of 2" in out
    assert main(["--input", "natural:disfl-qa/dev", "--challenge", "natural:disfl-qa/dev/disfluent"]) == 0
    assert "1 dropped (SQuAD v2 unanswerable" in capsys.readouterr().out


class _FirstWordEngine:
    """Answers with the question's first word, so a question flips exactly when its first word changes."""

    def predict(self, questions, contexts, n_best=5, skip_invalid=False, progress=None):   # the protocol's
        from core.types import Prediction, Span

        return [Prediction([Span(q.split()[0] if q.split() else "", 0, 1, 1.0)]) for q in questions]


def test_agreement_runs_on_a_natural_set_with_flips_by_paragraph(natural_dir):
    from core.collect import flip_agreement as agreement
    from core.collect.agreement_natural import flip_rates_by_subset, natural_set_conditions

    examples, conditions, settings = natural_set_conditions("heysquad", sample=None, keyboard_p=None,
                                                            disfluency_n=None, data_dir=natural_dir)
    assert list(conditions) == ["natural:asr_human", "natural:asr_tts"]
    assert conditions["natural:asr_human"] == ["where is norman d", "who settled in normandy"]
    result = agreement.compare(examples, conditions, {"first": _FirstWordEngine()}, n_boot=50, settings=settings)
    # "Where" -> "where" and "Who" -> "who" differ only in case: SQuAD normalisation says no flip
    assert [r["flips"] for r in agreement.flip_rates(result)] == [0, 0]
    rows = flip_rates_by_subset(result)
    assert {(r["questions on"], r["questions"]) for r in rows} == {("xquad paragraphs", 0), ("rest of squad dev", 2)}
    with pytest.raises(agreement.AgreementError, match="no natural set 'nope'"):
        natural_set_conditions("nope", data_dir=natural_dir)


def test_the_agreement_command_runs_on_a_natural_set(natural_dir, monkeypatch, capsys, tmp_path):
    """``python -m core.collect.agreement --natural heysquad``: a run without --trial (it crashed in
    its output guard, which asked for the files of a trial that was not given)."""
    from core.collect.agreement import main

    monkeypatch.setenv("QAX_DATA_DIR", str(natural_dir))
    out = tmp_path / "agreement.json"
    assert main(["--natural", "heysquad", "--model", "minilm-squad-v2", "--disfluency-n", "0", "--n-boot", "20",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 questions of heysquad" in printed and "natural:asr_human" in printed
    assert "rest of squad dev" in printed and "None%" not in printed   # XQuAD's subset has none of the two
    assert {r["id"] for r in json.loads(out.read_text())["questions"]} == {"q1", "q2"}
