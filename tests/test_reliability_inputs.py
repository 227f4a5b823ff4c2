"""Hostile input a demo server's visitors can send: uploads, audio, names. Each case asserts the
message the visitor reads and that nothing was written or lost (issue 23, items 4, 5 and 8).

Uploads go through the Beat-the-AI page (AppTest) and core.datasets; audio through the browser
recorder's path (core.speech.recorder) and a speech trial's store; names through core.collect.beat_store's
store and the page. ``BAD_UPLOADS``, ``BAD_AUDIO`` and ``BAD_IDENTITIES`` list the distinct bad
inputs.
"""
from __future__ import annotations

import io
import json
import re
import sqlite3
import time

import numpy as np
import pytest
import soundfile as sf
from rendered import shown
from streamlit.testing.v1 import AppTest

from core.collect import beat, beat_store, identity, trials
from core.datasets import Dataset, DatasetError, demo_dataset, load_squad
from core.io import safe_json
from core.speech import recorder, tts
from core.speech.audio import AudioError, to_wav_bytes
from core.types import Answer, QAExample

PAGE = "../pages/beat_the_ai.py"
LIGHT = beat.passages(demo_dataset("en"))[0]
DATE = (112, 127)  # "14 October 1871"
MD_IMAGE = "![x](http://127.0.0.1:9/p.png)"
MD_LINK = "[click](http://127.0.0.1:9/l)"


def squad(title="Doc", context="Alice lives in Paris.", qid="q1", question="Where?") -> dict:
    return {"version": "1.1", "data": [{"title": title, "paragraphs": [{"context": context, "qas": [
        {"id": qid, "question": question, "answers": [{"text": "Paris", "answer_start": 15}]}]}]}]}


def unescaped_markdown(at) -> list[str]:
    """Markdown elements (markdown, caption, alerts) holding an image or link that would render."""
    pattern = re.compile(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\((?:http|www)")
    values = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success")
              for e in getattr(at, kind)]
    return [v for v in values if pattern.search(v)]


@pytest.fixture
def beat_env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(safe_json.UPLOAD_ENV, raising=False)
    db = tmp_path / "beat.sqlite"
    monkeypatch.setenv("QAX_BEAT_DB", str(db))
    return db


def _page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


# ---------------------------------------------------------------------------------------------
# Uploads (item 5)

DEEP = b"[" * 100_000 + b"]" * 100_000  # 200 KB: a RecursionError traceback before the limit
BAD_UPLOADS = [
    ("deep.json", DEEP, "deep.json: the file is nested 100,000 levels deep; the limit is 64"),
    ("deep_object.json", b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
     "deep_object.json: the file is nested 5,000 levels deep"),
    ("latin1.json", json.dumps(squad(title="Zürich"), ensure_ascii=False).encode("latin-1"),
     "latin1.json: not UTF-8 text (byte "),
    ("broken.json", b'{"data": [', "broken.json: not valid JSON (Expecting value"),
    ("list.json", b"[1, 2, 3]", "list.json: top level should be an object with 'data', got list"),
    ("noqas.json", json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "c"}]}]}).encode(),
     "noqas.json: data[0].paragraphs[0] has no 'qas'"),
    ("empty.json", b"", "empty.json: not valid JSON"),
    # A string of escaped quotes never closed: quadratic for a naive string regex, linear here.
    ("quotes.json", b'["' + b'\\"' * 100_000, "quotes.json: not valid JSON"),
]


@pytest.mark.parametrize("name, payload, message", BAD_UPLOADS, ids=[b[0] for b in BAD_UPLOADS])
def test_bad_upload_gets_one_clear_message_and_loads_nothing(beat_env, name, payload, message):
    at = _page()
    options = list(at.selectbox(key="beat_dataset").options)
    started = time.perf_counter()
    at.file_uploader(key="beat_upload_0").set_value((name, payload, "application/json")).run()
    assert time.perf_counter() - started < 30
    assert not at.exception, at.exception
    errors = [shown(e.value) for e in at.error]  # md_escape'd: read as the visitor does
    assert len(errors) == 1 and errors[0].startswith("Not loaded: "), errors
    text = errors[0]
    assert message in text
    assert text.count(name) == 1  # the file name once, not "name: name: ..."
    assert list(at.selectbox(key="beat_dataset").options) == options  # nothing added
    assert at.session_state["uploaded_datasets"] == {}
    # The uploader was replaced: the refused bytes are no longer held by a live widget.
    assert [u.key for u in at.file_uploader] == ["beat_upload_1"]


def test_oversize_upload_is_refused_before_parsing(beat_env, monkeypatch):
    monkeypatch.setenv(safe_json.UPLOAD_ENV, "0.01")  # 10 KB
    at = _page()
    big = json.dumps(squad(context="Alice lives in Paris. " + "x" * 20_000)).encode()
    at.file_uploader(key="beat_upload_0").set_value(("big.json", big, "application/json")).run()
    assert not at.exception
    [error] = [shown(e.value) for e in at.error]
    assert error == ("Not loaded: big.json is 0.0 MB; uploads are limited to 0.01 MB (the "
                     "server's QAX_MAX_UPLOAD_MB)")
    assert at.session_state["uploaded_datasets"] == {}


def test_malformed_upload_limit_setting_is_named(beat_env, monkeypatch):
    monkeypatch.setenv(safe_json.UPLOAD_ENV, "lots")
    at = _page()
    assert any("QAX_MAX_UPLOAD_MB='lots': expected a positive number of megabytes"
               in shown(e.value) for e in at.error)
    assert not at.file_uploader  # no uploads while the limit is unknown


def test_upload_title_and_ids_are_shown_escaped_and_stats_stay_in_the_session(beat_env):
    at = _page()
    doc = squad(title=f"Title {MD_IMAGE} {MD_LINK}", qid="q`1", question="Where does Alice live?")
    name = '<a href="http://127.0.0.1:9/x">t</a>.json'  # a file name is visitor text too
    at.file_uploader(key="beat_upload_0").set_value((name, json.dumps(doc).encode(),
                                                     "application/json")).run()
    assert [shown(s.value) for s in at.success] == [f"Loaded 1 question from {name}."]
    at.selectbox(key="beat_dataset").set_value(f"upload:{name}").run()
    assert not at.exception
    assert any("Title \\!\\[x\\]" in c.value for c in at.caption)
    assert unescaped_markdown(at) == []
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert specs and not any("<a href" in spec for spec in specs)  # Plotly renders its own HTML
    assert any("&lt;a href" in spec for spec in specs)
    assert "beat_source_stats" in at.session_state  # per session, not a process-wide cache


def test_load_squad_refuses_deep_json_from_a_file(tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(DEEP)
    with pytest.raises(DatasetError, match=r"deep.json: the file is nested 100,000 levels deep"):
        load_squad(path)
    assert load_squad(io.BytesIO(json.dumps(squad()).encode()), name="ok").examples[0].id == "q1"


def test_nesting_depth_is_linear_on_hostile_strings():
    hostile = '["' + '\\"' * 1_000_000  # 2 MB of escaped quotes, never closed
    started = time.perf_counter()
    assert safe_json.nesting_depth(hostile) == 1
    assert safe_json.nesting_depth(hostile.encode()) == 1
    assert time.perf_counter() - started < 5


# ---------------------------------------------------------------------------------------------
# Audio (item 8)

RNG = np.random.default_rng(23)


def _random_bytes_wav(seconds: float) -> bytes:
    """A valid 16-bit 16 kHz WAV header followed by random bytes (what a hostile upload or a
    broken recorder sends)."""
    wav = bytearray(to_wav_bytes(np.zeros(int(seconds * 16000), dtype=np.float32), 16000))
    wav[44:] = RNG.integers(0, 256, len(wav) - 44, dtype=np.uint8).tobytes()
    return bytes(wav)


@pytest.fixture(scope="module")
def espeak_wav() -> bytes:
    samples, rate = tts.synthesize("What is the capital of France?", "espeak-ng:en-us")
    return to_wav_bytes(samples, rate)


def _truncated(wav: bytes) -> bytes:
    return wav[: len(wav) // 2]


BAD_AUDIO = [
    ("random bytes after a WAV header (0.06 s)", lambda w: _random_bytes_wav(0.0625),
     "the recording is too short: 0.06 s, a spoken question lasts at least 0.3 s"),
    ("random bytes after a WAV header (3 s)", lambda w: _random_bytes_wav(3.0),
     "the recording sounds like noise, not speech: its spectrum is flat"),
    ("white noise", lambda w: to_wav_bytes(RNG.uniform(-0.3, 0.3, 32000), 16000),
     "sounds like noise, not speech"),
    ("Gaussian noise at 44.1 kHz, stereo", lambda w: _stereo_noise(), "sounds like noise"),
    ("a WAV cut in its data", _truncated,
     "the recording is truncated: its header announces"),
    ("silence", lambda w: to_wav_bytes(np.zeros(16000, dtype=np.float32), 16000), "is silent"),
    ("a JPEG, not audio", lambda w: b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(500),
     "is not a readable audio file"),
    ("a click of 50 ms", lambda w: to_wav_bytes(np.r_[np.full(800, 0.5), np.zeros(8)], 16000),
     "too short: 0.05 s"),
]


def _stereo_noise() -> bytes:
    buf = io.BytesIO()
    sf.write(buf, RNG.normal(0, 0.1, (44100, 2)), 44100, format="WAV", subtype="PCM_16")
    return buf.getvalue()


@pytest.mark.parametrize("what, make, message", BAD_AUDIO, ids=[b[0] for b in BAD_AUDIO])
def test_bad_audio_is_refused_with_a_reason_and_not_stored(tmp_path, espeak_wav, what, make,
                                                           message):
    payload = make(espeak_wav)
    with pytest.raises(AudioError, match=re.escape(message)):
        recorder.from_audio_input(payload)  # the browser recorder's path (Ask page)
    ds = Dataset("toy", "en", [QAExample("q1", "What is the capital of France?", "Paris is.",
                                         (Answer("Paris", 0),), "t", "en")])
    trial = trials.create_trial(trials.Speaker("S"), ds, 1, seed=0, root=tmp_path, trial_id="t")
    with pytest.raises(AudioError, match=re.escape(message)):
        trial.add_recording("q1", payload)  # the speech trial's path
    assert trial.recordings() == [] and not list((tmp_path / "t").rglob("*.wav"))


@pytest.mark.parametrize("payload, message", [
    (_random_bytes_wav(0.0625), "is too short: 0.06 s"),
    (to_wav_bytes(RNG.normal(0, 0.1, 48000), 16000), "sounds like noise, not speech"),
], ids=["random bytes", "white noise"])
def test_the_ask_page_says_why_a_recording_is_refused(beat_env, payload, message):
    at = AppTest.from_file("../app.py", default_timeout=180).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input("paris is the capital of france .").run()
    at.text_area(key="ask_question").input("what is the capital ?").run()
    at.audio_input(key="ask_audio_0").set_value(("q.wav", payload, "audio/wav")).run()
    assert not at.exception
    errors = [shown(e.value) for e in at.error]
    assert any(e.startswith("The recording cannot be used: the recording ") and message in e
               for e in errors), errors
    assert at.text_area(key="ask_question").value == "what is the capital ?"  # untouched


def test_real_speech_still_passes(espeak_wav):
    audio = recorder.from_audio_input(espeak_wav)
    assert audio.seconds == pytest.approx(1.834, abs=0.01)
    # Speech in white noise at 0 dB SNR is still speech (voiced frames keep their harmonics).
    x, rate = sf.read(io.BytesIO(espeak_wav), dtype="float32")
    noisy = x + RNG.normal(0, np.sqrt(np.mean(x ** 2)), len(x)).astype(np.float32)
    assert recorder.from_audio_input(to_wav_bytes(noisy, rate)).sample_rate == rate


# ---------------------------------------------------------------------------------------------
# Identity on Beat the AI (item 4)

ALICE_TOKEN, OTHER_TOKEN = "a" * 32, "b" * 32
BAD_IDENTITIES = [  # (validator name, validator's browser token, message)
    ("a1ice", OTHER_TOKEN, "'a1ice' reads as 'Alice', who wrote question #1"),
    ("al\u200bice", OTHER_TOKEN, "'alice' wrote question #1: another person must validate it"),
    ("ＡＬＩＣＥ", OTHER_TOKEN, "'ALICE' wrote question #1"),
    ("\u0430lice", OTHER_TOKEN, "'аlice' reads as 'Alice'"),  # Cyrillic а
    ("A L I C E", OTHER_TOKEN, "'A L I C E' reads as 'Alice'"),
    ("@lícé", OTHER_TOKEN, "reads as 'Alice'"),
    ("Mallory", ALICE_TOKEN, "question #1 was written in this browser: another person must "
                             "validate it"),
    ("\u200b\u2060 ", OTHER_TOKEN, "a validation needs the validator's name"),
    ("-- ..", OTHER_TOKEN, "a validation needs the validator's name"),
]


def _count(db, table: str) -> int:
    with sqlite3.connect(db) as c:
        return c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


@pytest.mark.parametrize("name, token, message", BAD_IDENTITIES, ids=[repr(b[0]) for b in BAD_IDENTITIES])
def test_an_author_can_never_validate_their_own_question(tmp_path, name, token, message):
    db = tmp_path / "beat.sqlite"
    with beat_store.BeatStore(db) as store:
        a = store.record_attempt(LIGHT, "When was it first lit?", DATE, {"m": None},
                                 user="Alice", session="s1", browser=ALICE_TOKEN)
        before = (_count(db, "attempts"), _count(db, "validations"))
        with pytest.raises(ValueError, match=re.escape(message)):
            store.record_validation(a.id, name, DATE, session="s2", browser=token)
        assert store.validation_queue(name, browser=token) == []  # never even offered
        assert (_count(db, "attempts"), _count(db, "validations")) == before == (1, 0)


def test_one_validation_per_browser_and_per_name(tmp_path):
    with beat_store.BeatStore(tmp_path / "beat.sqlite") as store:
        a = store.record_attempt(LIGHT, "When was it first lit?", DATE, {"m": None},
                                 user="Alice", session="s1", browser=ALICE_TOKEN)
        store.record_validation(a.id, "Bob", DATE, session="s2", browser=OTHER_TOKEN)
        with pytest.raises(ValueError, match=r"this browser has already validated question #1 "
                                             r"\(as 'Bob'\)"):
            store.record_validation(a.id, "Carol", DATE, session="s2", browser=OTHER_TOKEN)
        with pytest.raises(ValueError, match=r"'B0B' has already validated question #1 "
                                             r"\(as 'Bob'\)"):
            store.record_validation(a.id, "B0B", DATE, session="s3", browser="c" * 32)
        assert [v.validator for v in store.validations()] == ["Bob"]
        assert store.validation_queue("Carol", browser=OTHER_TOKEN) == []
        assert [x.id for x in store.validation_queue("Carol", browser="c" * 32)] == [a.id]
        # What the store keeps of a token is its hash, and exports leave even that out.
        assert store.attempt(a.id).browser == identity.token_key(ALICE_TOKEN) != ALICE_TOKEN
        records = json.dumps(store.export_records())
        assert ALICE_TOKEN not in records and identity.token_key(ALICE_TOKEN) not in records


def test_a_schema_1_store_is_upgraded_and_its_rows_keep_working(tmp_path):
    db = tmp_path / "old.sqlite"
    old_schema = re.sub(r"\n\s*browser\s+TEXT NOT NULL DEFAULT '',[^\n]*", "", beat_store.SCHEMA)
    assert "browser" not in old_schema
    with sqlite3.connect(db) as c:
        c.executescript(old_schema)
        c.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        c.execute("INSERT INTO passages VALUES (?, ?)", (LIGHT.id, LIGHT.context))
        c.execute("INSERT INTO attempts (created_at, user, session, passage_id, dataset, title, "
                  "lang, question, answer_start, answer_end, answer_text, threshold, outcome) "
                  "VALUES ('2024-01-01', 'Alice', 's', ?, 'demo.en', 't', 'en', 'When?', 112, "
                  "127, '14 October 1871', 0.4, 'human')", (LIGHT.id,))
        c.execute("INSERT INTO validations (attempt_id, created_at, validator, validator_key, "
                  "session, answer_start, answer_end, answer_text, f1, threshold, agrees) VALUES "
                  "(1, '2024-01-02', 'Bob', 'bob', 's2', 112, 127, '14 October 1871', 1, 0.4, 1)")
    with beat_store.BeatStore(db) as store:
        [a] = store.attempts()
        assert (a.user, a.browser, a.validations, a.validation_status) == (
            "Alice", "", 1, "answerable")
        with pytest.raises(ValueError, match="'a1ice' reads as 'Alice'"):
            store.record_validation(a.id, "a1ice", DATE, session="x", browser=OTHER_TOKEN)
        with pytest.raises(ValueError, match="'b0b' has already validated"):
            store.record_validation(a.id, "b0b", DATE, session="x", browser=OTHER_TOKEN)
        store.record_validation(a.id, "Carol", DATE, session="x", browser=OTHER_TOKEN)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT value FROM meta").fetchone() == (beat_store.SCHEMA_VERSION,)
        assert c.execute("SELECT COUNT(*) FROM validations").fetchone() == (2,)


def test_the_page_does_not_offer_your_own_question_under_a_look_alike_name(beat_env):
    at = _page()
    token = at.session_state["browser_token"][0]  # AppTest has no browser: a session token
    assert identity.valid_token(token) and at.session_state["browser_token"][1] is False
    with beat_store.BeatStore(beat_env) as store:
        store.record_attempt(LIGHT, f"Who? {MD_IMAGE}", DATE, {"m": None}, user="Alice",
                             session="elsewhere", browser=ALICE_TOKEN)
        mine = store.record_attempt(LIGHT, "Mine?", (325, 341), {"m": None}, user="Zed",
                                    session="here", browser=token)
    at.text_input(key="beat_user").input("a1ice").run()
    assert any("Nothing to validate" in i.value for i in at.info)
    # Under another name in the same browser, the question written here is not offered either.
    at.text_input(key="beat_user").input("Bob").run()
    assert at.selectbox(key="beat_val_pick").options == ["#1: Who? ![x](http://127.0.0.1:9/p.png)"]
    assert mine.id not in [int(o.split(":")[0][1:]) for o in at.selectbox(key="beat_val_pick").options]
    assert any(shown(m.value).startswith("**Question:** Who? ![x]") for m in at.markdown)
    assert unescaped_markdown(at) == []
    assert any("Names are not authentication" in c.value for c in at.caption)


def test_disagreements_list_shows_stored_markdown_as_text(beat_env):
    with beat_store.BeatStore(beat_env) as store:
        a = store.record_attempt(LIGHT, f"When? {MD_IMAGE} {MD_LINK}", DATE, {"m": None},
                                 user=f"=HYPERLINK(\"http://x\") {MD_IMAGE}", session="s")
        store.record_validation(a.id, "Bob", None, session="v")
    at = _page()
    assert not at.exception
    assert any("When? ![x](http" in shown(m.value) for m in at.markdown)  # the flagged question
    assert unescaped_markdown(at) == []


# ---------------------------------------------------------------------------------------------
