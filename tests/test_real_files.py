"""Real files that should load, load (issue 57, item 6a and 6b).

(a) A gzip-compressed SQuAD file (``SQuAD_it-test.json.gz``) is read from the data directory and as
    an upload; a binary file is refused with what it is (zip, bzip2, a NUL byte), not "not UTF-8";
    a gzip that unpacks past the limit is refused before it is unpacked whole.
(b) ARCD's test file has answers that differ from their context only in whitespace (a
    non-breaking space or a double space where the answer has a plain space): they are matched
    modulo whitespace, repaired to the context's text and reported like the other offset repairs;
    a question none of whose answers is in the context is left out and named in the report,
    unless ``on_unscorable="error"`` asks for the file to be refused.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import zipfile

import pytest

from core import cli
from core.datasets import DatasetError, discover_datasets, load_dataset, load_squad
from core.types import Answer

IT_DOC = {"version": "1.1", "data": [{"title": "Roma", "paragraphs": [{
    "context": "Il Trattato di Roma fu firmato nel 1957 da sei paesi.",
    "qas": [{"id": "it1", "question": "Quando fu firmato il Trattato di Roma?",
             "answers": [{"text": "1957", "answer_start": 35}]},
            {"id": "it2", "question": "Da quanti paesi?", "answers": [{"text": "sei paesi", "answer_start": 43}]}]}]}]}


def gz(doc: dict) -> bytes:
    return gzip.compress(json.dumps(doc, ensure_ascii=False).encode("utf-8"))


class Upload(io.BytesIO):
    """What Streamlit's uploader hands the picker: bytes with the visitor's file name."""

    def __init__(self, data: bytes, name: str):
        super().__init__(data)
        self.name = name


# --------------------------------------------------------------------------------- (a) gzip, binary


def test_gzip_squad_loads_from_the_data_directory(tmp_path):
    (tmp_path / "xquad").mkdir()
    (tmp_path / "xquad" / "xquad.it.json.gz").write_bytes(gz(IT_DOC))
    [info] = discover_datasets(tmp_path)
    assert (info.name, info.lang, info.role) == ("xquad/xquad.it", "it", "eval")
    ds = load_dataset("xquad/xquad.it", tmp_path, confined=True)
    assert (ds.name, ds.lang, len(ds)) == ("xquad/xquad.it", "it", 2)
    assert ds.examples[0].answers == (Answer("1957", 35),)
    assert load_dataset("file:xquad/xquad.it.json.gz", tmp_path).examples == ds.examples


def test_gzip_squad_loads_as_an_upload():
    ds = load_squad(Upload(gz(IT_DOC), "SQuAD_it-test.json.gz"), name="SQuAD_it-test.json.gz")
    sei = IT_DOC["data"][0]["paragraphs"][0]["context"].index("sei paesi")
    assert len(ds) == 2 and ds.examples[1].answers == (Answer("sei paesi", sei),) and sei == 43
    named = load_squad(Upload(gz(IT_DOC), "SQuAD_it-test.json.gz"))   # named after the file, both suffixes off
    assert (named.name, named.lang) == ("SQuAD_it-test", "it")


def test_gzip_file_path_gets_its_name_without_both_suffixes(tmp_path):
    path = tmp_path / "SQuAD_it-test.json.gz"
    path.write_bytes(gz(IT_DOC))
    ds = load_squad(path)
    assert ds.name == "SQuAD_it-test" and ds.lang == "it" and ds.lang_source == "from the file name"


def _zip(doc: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("data.json", json.dumps(doc))
    return buf.getvalue()


@pytest.mark.parametrize("payload, message", [
    (_zip(IT_DOC), "x.json: a zip archive, not JSON: unzip it and give the JSON file inside"),
    (bz2.compress(json.dumps(IT_DOC).encode()), "x.json: bzip2-compressed, not JSON: decompress it first"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "x.json: a binary file, not JSON text (a NUL byte at byte 8)"),
    (gzip.compress(b"\x00\x01\x02 binary", mtime=0), "x.json: a binary file, not JSON text (a NUL byte at byte 0)"),
    (b"\x1f\x8b\x08\x00garbage", "x.json: a damaged gzip file"),
    ("{\"data\": [\"caf\xe9\"]}".encode("latin-1"), "x.json: not UTF-8 text (byte 14 cannot be decoded"),
])
def test_a_binary_file_is_named_for_what_it_is(tmp_path, payload, message):
    path = tmp_path / "x.json"
    path.write_bytes(payload)
    with pytest.raises(DatasetError) as e:
        load_squad(path)
    assert str(e.value).replace(str(tmp_path) + "/", "").startswith(message), str(e.value)


def test_an_uploaded_gzip_unpacks_no_further_than_the_upload_limit(monkeypatch):
    monkeypatch.setenv("QAX_MAX_UPLOAD_MB", "1")
    bomb = gzip.compress(b" " * (3 * 1024 * 1024))   # 3 MB of spaces in about 3 KB
    assert len(bomb) < 10_000
    with pytest.raises(DatasetError, match=r"bomb.json.gz: gzip-compressed JSON that unpacks to more than 1 MB, "
                                           r"the limit"):
        load_squad(Upload(bomb, "bomb.json.gz"))


# ------------------------------------------------------------------- (b) whitespace, dropped questions

ARCD_CONTEXT = "تأسست جامعة القاهرة\u00a0عام 1908 في  مدينة الجيزة، وهي ثاني أقدم جامعة مصرية."


def arcd_doc(*qas) -> dict:
    return {"version": "1.1", "data": [{"title": "جامعة", "paragraphs": [{"context": ARCD_CONTEXT, "qas": list(qas)}]}]}


def qa(qid: str, text: str, start: int) -> dict:
    return {"id": qid, "question": "سؤال؟", "answers": [{"text": text, "answer_start": start}]}


def test_answers_that_differ_only_in_whitespace_are_repaired_and_reported(tmp_path):
    path = tmp_path / "arcd-test.json"
    nbsp_at = ARCD_CONTEXT.index("القاهرة\u00a0عام")
    double_at = ARCD_CONTEXT.index("في  مدينة")
    path.write_text(json.dumps(arcd_doc(
        qa("a1", "جامعة القاهرة عام 1908", 6),             # a plain space where the context has an NBSP
        qa("a2", "في مدينة الجيزة", double_at),             # one space where the context has two
        qa("a3", "1908", ARCD_CONTEXT.index("1908")),       # exact: untouched
        qa("a4", "القاهرة\u3000عام", -1),                   # an ideographic space, offset unknown
    ), ensure_ascii=False), encoding="utf-8")
    ds = load_squad(path)
    got = {ex.id: ex.answers for ex in ds.examples}
    assert got["a1"] == (Answer("جامعة القاهرة\u00a0عام 1908", 6),)
    assert got["a2"] == (Answer("في  مدينة الجيزة", double_at),)
    assert got["a3"] == (Answer("1908", ARCD_CONTEXT.index("1908")),)
    assert got["a4"] == (Answer("القاهرة\u00a0عام", nbsp_at),)
    for ex in ds.examples:   # every answer is a span of its context again
        assert all(ex.context[a.answer_start:a.answer_start + len(a.text)] == a.text for a in ex.answers)
    assert ds.stats == {"whitespace_repaired": 3}
    assert ds.report[0] == ("3 answers that differ from the context only in whitespace (a non-breaking, double "
                            "or other Unicode space), set to the context's text; question ids: a1, a2, a4")
    assert "repaired: 3 answers matched modulo whitespace" in ds.load_line()


def test_answers_in_another_unicode_form_than_the_context_are_matched(tmp_path):
    """A file written on macOS keeps its answers decomposed (NFD: 'e' + U+0301) while the context is
    composed (NFC), or the other way round: the answer is found and set to the context's own text."""
    import unicodedata

    composed = "Le peintre Ren\u00e9e Duval v\u00e9cut \u00e0 Arles, puis Ren\u00e9e partit."
    decomposed = unicodedata.normalize("NFD", composed)
    doc = {"data": [{"title": "t", "paragraphs": [
        {"context": composed, "qas": [{"id": "nfd", "question": "Qui?",
                                       "answers": [{"text": unicodedata.normalize("NFD", "Ren\u00e9e Duval"),
                                                    "answer_start": 11}]}]},
        {"context": decomposed, "qas": [{"id": "nfc", "question": "O\u00f9?",
                                         "answers": [{"text": "v\u00e9cut \u00e0 Arles", "answer_start": -1}]}]}]}]}
    path = tmp_path / "peintres.fr.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    ds = load_squad(path)
    got = {ex.id: ex.answers for ex in ds.examples}
    assert got["nfd"] == (Answer("Ren\u00e9e Duval", 11),)
    at = decomposed.index("ve\u0301cut")
    assert got["nfc"] == (Answer(unicodedata.normalize("NFD", "v\u00e9cut \u00e0 Arles"), at),)
    assert ds.stats == {"unicode_repaired": 2}
    assert "repaired: 2 answers matched modulo Unicode form (NFC/NFD)" in ds.load_line()


def test_unscorable_questions_are_left_out_and_each_named_unless_error_is_asked(tmp_path):
    path = tmp_path / "arcd-test.json"
    path.write_text(json.dumps(arcd_doc(
        qa("ok", "1908", ARCD_CONTEXT.index("1908")),
        qa("gone1", "جامعة الإسكندرية", 0),
        qa("ok2", "مدينة الجيزة", ARCD_CONTEXT.index("مدينة")),
        qa("gone2", "1909", 30),
    ), ensure_ascii=False), encoding="utf-8")
    ds = load_squad(path)
    assert [ex.id for ex in ds.examples] == ["ok", "ok2"]
    assert ds.stats == {"questions_dropped": 2}
    assert [line for line in ds.report if line.startswith("left out")] == [
        "left out: data[0].paragraphs[0].qas[1] (question id 'gone1'): no answer text occurs in the context "
        "(first answer: 'جامعة الإسكندرية')",
        "left out: data[0].paragraphs[0].qas[3] (question id 'gone2'): no answer text occurs in the context "
        "(first answer: '1909')"]
    assert "dropped: 2 questions whose answers are not in the context (question ids gone1, gone2)" in ds.load_line()
    with pytest.raises(DatasetError, match=r"qas\[1\] \(question id 'gone1'\): no answer text occurs in the context"):
        load_squad(path, on_unscorable="error")
    with pytest.raises(ValueError, match="on_unscorable must be one of drop, error"):
        load_squad(path, on_unscorable="skip")
    assert [ex.id for ex in load_dataset(str(path)).examples] == ["ok", "ok2"]
    with pytest.raises(DatasetError, match="gone1"):
        load_dataset(str(path), on_unscorable="error")


def test_a_command_line_drops_unscorable_questions_unless_on_unscorable_error(tmp_path, capsys):
    """Every command that loads data takes --on-unscorable (core.cli.add_loader_options)."""
    from core.models.evaluate import main

    path = tmp_path / "arcd-test.json"
    path.write_text(json.dumps(arcd_doc(
        qa("ok", "1908", ARCD_CONTEXT.index("1908")), qa("gone1", "جامعة الإسكندرية", 0),
    ), ensure_ascii=False), encoding="utf-8")
    ap = cli.ArgumentParser(prog="p")
    cli.add_loader_options(ap)
    assert cli.loader_kwargs(ap.parse_args([]))["on_unscorable"] == "drop"
    assert [ex.id for ex in load_dataset(str(path), **cli.loader_kwargs(ap.parse_args([]))).examples] == ["ok"]
    assert main(["--model", "minilm-squad", "--dataset", str(path), "--on-unscorable", "error"]) == 2
    err = capsys.readouterr().err.strip()
    assert "gone1" in err and "no answer text occurs in the context" in err and "\n" not in err


def test_a_file_with_no_scorable_question_is_refused(tmp_path):
    path = tmp_path / "none.json"
    path.write_text(json.dumps(arcd_doc(qa("gone", "غير موجود", 0)), ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"none.json: no question can be scored; the first: .*'gone'"):
        load_squad(path)


def test_the_uploader_takes_gzip_files_and_offers_error(monkeypatch, tiny_registry):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file("../pages/variants.py", default_timeout=180).run()
    assert not at.exception, at.exception
    [uploader] = at.get("file_uploader")
    assert list(uploader.proto.type) == [".json", ".gz"]
    choice = at.selectbox(key="var_on_unscorable")
    assert choice.options == ["leave it out, load the rest (each one named)", "refuse the file"]
    assert choice.value == "drop"
