"""core.translate.natural_mt: XQuAD-style natural MT challenge sets (human X question -> MT -> English)."""
from __future__ import annotations

import json

import pytest

from core.datasets import Dataset, load_squad
from core.sweeps.analysis.sweep_cells import cells
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.translate import natural_mt, translators
from core.types import Answer, Prediction, QAExample, Span

CTX1 = "Paris is the capital of France."
CTX2 = "The tower was built by Gustave Eiffel."


def ex(qid, question, context, answer, lang):
    return QAExample(id=qid, title="T", context=context, question=question,
                     answers=[Answer(answer, context.index(answer))], lang=lang)


def english() -> Dataset:
    return Dataset("xquad.en", "en", [ex("q1", "What is the capital of France?", CTX1, "Paris", "en"),
                                      ex("q2", "Who built the tower?", CTX2, "Gustave Eiffel", "en"),
                                      ex("q3", "When was it built?", CTX2, "Gustave Eiffel", "en")])


def spanish() -> Dataset:
    # q3 has no Spanish partner; q9 has no English one. Contexts are the Spanish ones in XQuAD.
    return Dataset("xquad.es", "es", [
        ex("q2", "¿Quién construyó la torre?", "La torre fue construida por Eiffel.", "Eiffel", "es"),
        ex("q1", "¿Cuál es la capital de Francia?", "París es la capital de Francia.", "París", "es"),
        ex("q9", "¿Qué?", "Nada.", "Nada", "es")])


TABLE = translators.MappingTranslator({("es", "en"): {
    "¿Cuál es la capital de Francia?": "Which is the capital of France?",
    "¿Quién construyó la torre?": "Who built the tower?"}})


def test_build_replaces_only_the_question_and_pairs_by_id():
    result = natural_mt.build_natural_mt(english(), spanish(), TABLE, "es")
    ds = result.dataset
    assert ds.name == "xquad.en-natural-mt-es" and ds.lang == "en"
    assert [(e.id, e.question, e.context, e.answers[0].text) for e in ds.examples] == [
        ("q1", "Which is the capital of France?", CTX1, "Paris"),
        ("q2", "Who built the tower?", CTX2, "Gustave Eiffel")]
    assert result.sources == ["¿Cuál es la capital de Francia?", "¿Quién construyó la torre?"]
    assert result.unmatched == ["q3"]


def test_summary_is_noiseqa_table3_against_the_english_questions():
    s = natural_mt.build_natural_mt(english(), spanish(), TABLE, "es").summary()
    # By hand: WER 1 substitution (What -> Which) over 6 + 4 words; CER "What" -> "Which" is 3
    # edits over 30 + 20 characters; BLEU: n-gram precisions 11/12, 9/10, 7/8, 5/6, no brevity
    # penalty: (11/12 * 9/10 * 7/8 * 5/6) ** 0.25 = 0.88068.
    assert s["examples"] == 2 and s["unmatched_original"] == 1 and s["translator"] == "mapping"
    assert s["wer"] == pytest.approx(10.0)
    assert s["cer"] == pytest.approx(6.0)
    assert s["bleu"] == pytest.approx(100 * (11 / 12 * 9 / 10 * 7 / 8 * 5 / 6) ** 0.25, abs=1e-6)
    assert natural_mt.build_natural_mt(english(), spanish(), TABLE, "es", limit=1).summary()["examples"] == 1


def test_refusals_name_the_problem():
    with pytest.raises(natural_mt.NaturalMTError,
                       match=r"no machine translation German -> English: mapping has no de->en pair"):
        natural_mt.build_natural_mt(english(), spanish(), TABLE, "de")
    renamed = Dataset("other", "es", [ex("x1", "¿Cuál es la capital de Francia?", CTX1, "Paris", "es")])
    with pytest.raises(natural_mt.NaturalMTError, match="no question id in common"):
        natural_mt.build_natural_mt(english(), renamed, TABLE, "es")
    with pytest.raises(natural_mt.NaturalMTError, match="both 'en'"):
        natural_mt.build_natural_mt(english(), spanish(), TABLE, "en")


class FakeEngine:
    """Answers "Paris" to the English question only (so MT noise costs it the answer)."""

    fingerprint = "fake-natural-mt"

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        out = []
        for q, c in zip(questions, contexts):
            out.append(Prediction([Span("Paris", c.index("Paris"), c.index("Paris") + 5, 1.0)])
                       if q == "What is the capital of France?" else Prediction())
        return out


def test_cli_with_apertium_writes_a_file_the_sweep_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QAX_EXTRA_ROOTS", str(tmp_path / "out"))   # file: specs are read only inside the roots
    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    english().to_squad_json(data / "xquad" / "xquad.en.json")
    spanish().to_squad_json(data / "xquad" / "xquad.es.json")
    out = tmp_path / "out" / "nmt-es.json"
    summary = tmp_path / "summary.json"
    assert natural_mt.main(["--lang", "es", "--data-dir", str(data), "--output", str(out),
                            "--summary-json", str(summary)]) == 0
    printed = capsys.readouterr().out
    assert f"file:{out.resolve()}" in printed and "natural MT Spanish -> English with apertium: 2 questions" in printed
    written = load_squad(out)
    assert [(e.id, e.question) for e in written.examples] == [
        ("q1", "Which is the capital of France?"), ("q2", "Who built the tower?")]
    assert json.loads(summary.read_text())[0]["wer"] == pytest.approx(10.0)

    run = run_sweep(SweepConfig("xquad/xquad.en", [f"file:{out}"], ["fake"]), {"fake": FakeEngine()},
                    tmp_path / "s.sqlite", data_dir=data)
    assert run.status == "done"
    [cell] = cells(tmp_path / "s.sqlite", run.name)
    # Clean: q1 right (100), q2 and q3 wrong (0). Natural MT: q1 asked as "Which is ..." -> 0; q3 n/a.
    assert (cell.n, cell.n_not_applicable) == (2, 1)
    assert cell.clean_f1 == pytest.approx(50.0) and cell.f1 == pytest.approx(0.0)


def test_cli_explains_missing_mt(tmp_path, capsys):
    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    english().to_squad_json(data / "xquad" / "xquad.en.json")
    assert natural_mt.main(["--lang", "de", "--data-dir", str(data), "--output", str(tmp_path / "x.json")]) == 2
    assert "no machine translation German -> English: apertium has no de->en pair" in capsys.readouterr().err
    assert natural_mt.main(["--lang", "all", "--data-dir", str(data), "--output", str(tmp_path / "x.json")]) == 2
    assert "give --output-dir" in capsys.readouterr().err
