"""Natural ASR trials: users record questions, recognisers transcribe them, a challenge set results.

This is how NoiseQA built its natural speech set, done by our own users: a speaker (a label,
their accent, the microphone) is shown a seeded sample of a data set's questions one at a time
(e.g. 100 XQuAD questions, as in the paper's speaker study) and reads each one aloud. Every
recording is stored; each ASR engine transcribes it; per engine the transcripts replace the
questions of the original examples, giving a SQuAD-format challenge set per speaker x engine,
paired with the original by question id, which :mod:`core.sweeps` reads as ``file:<path>``.

On disk (``<cache_dir>/trials/<trial id>/``)::

    trial.json                  speaker, data set, seed, the sampled examples (with contexts and
                                answers, so a trial needs no data directory later)
    trial.sqlite                recordings, skips, transcripts (the index; rebuilt from the files
                                below if a crash left it behind)
    recordings/<qid>/<n>.wav    attempt n of a question, the bytes exactly as recorded
    recordings/<qid>/<n>.json   its metadata (sha256, length, sample rate, time)
    original.json               the sampled examples as SQuAD JSON (written on demand)
    challenge/<engine>.json     the challenge sets (written on demand, core.collect.trial_sets)

Never lost on a crash: a recording is written before anything else happens to it (before
transcription, before the index): the WAV and then its metadata go to temporary files that are
fsync'ed and renamed into place, then one SQLite transaction indexes it. Opening a trial repairs
whatever an interrupted step left: a WAV or metadata file not in the index is added to it, an
index row whose WAV is gone (an interrupted deletion) is removed, stray temporary files are
deleted. A recording is deleted WAV first, so a half-done deletion is completed, never undone.

Re-recording adds attempt n+1 (earlier attempts stay on disk until deleted); the latest attempt
is the one used. Skipping a question records that; recording it later cancels the skip. Adding
the same bytes twice (a Streamlit rerun) returns the existing attempt. Silent, empty or corrupt
audio is refused with :class:`core.speech.audio.AudioError` and not stored.

The challenge sets, their files, the sweep command and the WER per speaker are derived from
the stored transcripts by :mod:`core.collect.trial_sets`.

Nothing here imports streamlit.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from core import config
from core.budgets import BudgetError, clean_name, clean_note
from core.compat import TRIAL_FORMAT
from core.datasets import Dataset, has_gold, sample_examples
from core.io.sqlite_db import SQLiteFile, snapshot_bytes
from core.speech import asr
from core.speech.audio import AudioError, load_audio
from core.types import Answer, QAExample

FORMAT = TRIAL_FORMAT   # a stored identity (core.compat)
TRIAL_FILE = "trial.json"
DB_FILE = "trial.sqlite"
_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
_TMP_MARK = ".tmp-"


class TrialError(ValueError):
    """A trial operation that cannot be done (unknown trial or question, bad speaker, ...)."""


@dataclass(frozen=True)
class Speaker:
    """Who records: a ``label`` (a name or a pseudonym), their ``accent``, the ``microphone`` used."""

    label: str
    accent: str = ""
    microphone: str = ""
    notes: str = ""


@dataclass(frozen=True)
class Recording:
    """One stored attempt at a question."""

    qid: str
    attempt: int
    path: Path
    sha256: str
    seconds: float
    sample_rate: int
    created: str


@dataclass(frozen=True)
class StoredTranscript:
    qid: str
    attempt: int
    engine: str
    version: str
    text: str
    raw: str
    seconds: float


@dataclass
class QuestionState:
    """Where one sampled question stands: its recordings, whether skipped, the latest transcripts."""

    index: int
    example: QAExample
    recordings: list[Recording]
    skipped: bool
    transcripts: dict[str, StoredTranscript] = field(default_factory=dict)   # engine -> latest attempt's

    @property
    def latest(self) -> Recording | None:
        return self.recordings[-1] if self.recordings else None

    @property
    def done(self) -> bool:
        return bool(self.recordings) or self.skipped


def trials_root(root: str | Path | None = None) -> Path:
    """Where trials live: ``root`` or ``<cache_dir>/trials`` (created on demand)."""
    path = Path(root) if root is not None else config.cache_dir() / "trials"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def slug(text: str, limit: int = 32) -> str:
    """A file-name-safe form of ``text``: ASCII letters, digits and '-' (e.g. "Ana María" -> "ana-mar-a")."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:limit].strip("-") or "speaker"


def _safe_qid(qid: str) -> str:
    """A folder name for a question id: the id itself when it is plain, else a hash of it."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,100}", qid):
        return qid
    return "q-" + hashlib.sha256(qid.encode("utf-8")).hexdigest()[:24]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` is either absent or complete, and on disk."""
    tmp = path.with_name(f"{path.name}{_TMP_MARK}{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:   # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _example_to_json(ex: QAExample) -> dict[str, Any]:
    return {"id": ex.id, "question": ex.question, "context": ex.context, "title": ex.title, "lang": ex.lang,
            "answers": [[a.text, a.answer_start] for a in ex.answers]}


def _example_from_json(d: dict[str, Any]) -> QAExample:
    return QAExample(id=d["id"], question=d["question"], context=d["context"], title=d.get("title", ""),
                     lang=d.get("lang", "en"), answers=tuple(Answer(t, s) for t, s in d["answers"]))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS recordings (
    qid TEXT NOT NULL, attempt INTEGER NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL,
    seconds REAL NOT NULL, sample_rate INTEGER NOT NULL, created TEXT NOT NULL,
    PRIMARY KEY (qid, attempt));
CREATE TABLE IF NOT EXISTS skips (qid TEXT PRIMARY KEY, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transcripts (
    qid TEXT NOT NULL, attempt INTEGER NOT NULL, engine TEXT NOT NULL, version TEXT NOT NULL,
    text TEXT NOT NULL, raw TEXT NOT NULL, seconds REAL NOT NULL, created TEXT NOT NULL,
    PRIMARY KEY (qid, attempt, engine));
"""


class _TrialIndex(SQLiteFile):
    """``trial.sqlite``: the index of a trial's recordings, skips and transcripts. FULL
    synchronous: an acknowledged recording survives a power cut (the files it indexes are
    fsync'ed too)."""

    synchronous = "FULL"

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self._connect(path, timeout)


class Trial:
    """One speaker's recording session over a fixed sample of questions (see the module docstring).

    Open with :func:`open_trial` or make with :func:`create_trial`. Every method reads and writes
    the disk directly (a connection per call), so several Streamlit sessions or processes may use
    the same trial.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        meta_file = self.path / TRIAL_FILE
        if not meta_file.is_file():
            raise TrialError(f"no trial at {self.path} (missing {TRIAL_FILE})")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise TrialError(f"{meta_file} is not a {FORMAT} trial (format {meta.get('format')!r})")
        self.id: str = meta["id"]
        self.speaker = Speaker(**meta["speaker"])
        self.dataset: str = meta["dataset"]
        self.lang: str = meta["lang"]
        self.seed: int = meta["seed"]
        self.created: str = meta["created"]
        self.examples: list[QAExample] = [_example_from_json(d) for d in meta["examples"]]
        self._by_id = {ex.id: ex for ex in self.examples}
        self._init_db()
        self.repair()

    # ------------------------------------------------------------------------------- storage

    @property
    def recordings_dir(self) -> Path:
        return self.path / "recordings"

    @contextlib.contextmanager
    def _index(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection to ``trial.sqlite`` for one call, closed afterwards; ``write=True`` makes
        the block one transaction (all or nothing)."""
        with _TrialIndex(self.path / DB_FILE) as index:
            if write:
                with index.transaction() as con:
                    yield con
            else:
                yield index.conn

    def _init_db(self) -> None:
        with self._index() as con:
            con.executescript(_SCHEMA)

    def _example(self, qid: str) -> QAExample:
        try:
            return self._by_id[qid]
        except KeyError:
            raise TrialError(f"question id {qid!r} is not in trial {self.id}") from None

    def repair(self) -> dict[str, int]:
        """Bring the index in line with the files after a crash (see the module docstring).

        Returns counts: recovered (files added to the index), dropped (index rows without a WAV),
        removed (stray temporary or orphaned metadata files).
        """
        counts = {"recovered": 0, "dropped": 0, "removed": 0}
        if not self.recordings_dir.is_dir():
            return counts
        with self._index(write=True) as con:
            indexed = {(q, a): p for q, a, p in con.execute("SELECT qid, attempt, path FROM recordings")}
            for (qid, attempt), rel in indexed.items():
                if not (self.path / rel).is_file():
                    con.execute("DELETE FROM recordings WHERE qid=? AND attempt=?", (qid, attempt))
                    con.execute("DELETE FROM transcripts WHERE qid=? AND attempt=?", (qid, attempt))
                    counts["dropped"] += 1
            for stray in self.recordings_dir.rglob(f"*{_TMP_MARK}*"):
                stray.unlink(missing_ok=True)
                counts["removed"] += 1
            for wav in sorted(self.recordings_dir.rglob("*.wav")):
                sidecar = wav.with_suffix(".json")
                rel = wav.relative_to(self.path).as_posix()
                if sidecar.is_file():
                    meta = json.loads(sidecar.read_text(encoding="utf-8"))
                else:   # crashed between the WAV and its metadata: rebuild the metadata
                    meta = self._metadata_for(wav, qid=self._qid_of_folder(wav.parent.name),
                                              attempt=int(wav.stem))
                    if meta is None:
                        continue
                    write_atomic(sidecar, json.dumps(meta, ensure_ascii=False, indent=1).encode())
                if (meta["qid"], meta["attempt"]) not in indexed:
                    con.execute("INSERT OR IGNORE INTO recordings VALUES (?,?,?,?,?,?,?)",
                                (meta["qid"], meta["attempt"], rel, meta["sha256"], meta["seconds"],
                                 meta["sample_rate"], meta["created"]))
                    counts["recovered"] += 1
            for sidecar in self.recordings_dir.rglob("*.json"):
                if not sidecar.with_suffix(".wav").is_file():   # an interrupted deletion
                    sidecar.unlink(missing_ok=True)
                    counts["removed"] += 1
        return counts

    def _qid_of_folder(self, folder: str) -> str | None:
        return next((ex.id for ex in self.examples if _safe_qid(ex.id) == folder), None)

    def _metadata_for(self, wav: Path, qid: str | None, attempt: int) -> dict[str, Any] | None:
        if qid is None:
            return None
        data = wav.read_bytes()
        try:
            audio = load_audio(data)
            seconds, rate = audio.seconds, audio.sample_rate
        except AudioError:
            seconds, rate = 0.0, 0
        return {"qid": qid, "attempt": attempt, "sha256": hashlib.sha256(data).hexdigest(),
                "seconds": round(seconds, 3), "sample_rate": rate,
                "created": datetime.fromtimestamp(wav.stat().st_mtime, timezone.utc).isoformat(timespec="seconds"),
                "speaker": self.speaker.label}

    # ---------------------------------------------------------------------------- recording

    def recordings(self, qid: str | None = None) -> list[Recording]:
        """Stored attempts (of one question, or all), in (question order, attempt) order."""
        with self._index() as con:
            rows = con.execute("SELECT qid, attempt, path, sha256, seconds, sample_rate, created FROM recordings "
                               + ("WHERE qid=? " if qid is not None else "") + "ORDER BY attempt",
                               (qid,) if qid is not None else ()).fetchall()
        order = {ex.id: i for i, ex in enumerate(self.examples)}
        recs = [Recording(q, a, self.path / p, h, s, r, c) for q, a, p, h, s, r, c in rows]
        return sorted(recs, key=lambda rec: (order.get(rec.qid, len(order)), rec.attempt))

    def add_recording(self, qid: str, wav: bytes, name: str | None = None) -> Recording:
        """Store a new attempt at question ``qid`` (WAV bytes, kept exactly as recorded).

        The audio is checked first (AudioError for empty, corrupt, silent or over-long audio,
        naming the upload's file ``name`` when given: nothing is stored). The same bytes as the
        latest attempt return that attempt.
        """
        self._example(qid)
        if not isinstance(wav, (bytes, bytearray)):
            raise TypeError(f"a recording is WAV bytes, got {type(wav).__name__}")
        wav = bytes(wav)
        audio = load_audio(wav, name=name)
        digest = hashlib.sha256(wav).hexdigest()
        previous = self.recordings(qid)
        if previous and previous[-1].sha256 == digest:
            return previous[-1]
        attempt = (previous[-1].attempt + 1) if previous else 1
        folder = self.recordings_dir / _safe_qid(qid)
        folder.mkdir(parents=True, exist_ok=True)
        while (folder / f"{attempt:03d}.wav").exists():   # an attempt left unindexed (cannot happen after repair)
            attempt += 1
        wav_path = folder / f"{attempt:03d}.wav"
        meta = {"qid": qid, "attempt": attempt, "sha256": digest, "seconds": round(audio.seconds, 3),
                "sample_rate": audio.sample_rate, "created": _now(), "speaker": self.speaker.label}
        write_atomic(wav_path, wav)                                                     # 1. the audio
        write_atomic(wav_path.with_suffix(".json"), json.dumps(meta, ensure_ascii=False, indent=1).encode())
        with self._index(write=True) as con:                                                     # 3. the index
            con.execute("INSERT INTO recordings VALUES (?,?,?,?,?,?,?)",
                        (qid, attempt, wav_path.relative_to(self.path).as_posix(), digest, meta["seconds"],
                         meta["sample_rate"], meta["created"]))
            con.execute("DELETE FROM skips WHERE qid=?", (qid,))
        return Recording(qid, attempt, wav_path, digest, meta["seconds"], meta["sample_rate"], meta["created"])

    def skip(self, qid: str) -> None:
        """Mark ``qid`` as skipped (it stays skipped until recorded)."""
        self._example(qid)
        with self._index(write=True) as con:
            con.execute("INSERT OR REPLACE INTO skips VALUES (?, ?)", (qid, _now()))

    def delete_recording(self, qid: str, attempt: int) -> None:
        """Delete one attempt (its WAV first, then its metadata, then its index rows and transcripts)."""
        rec = next((r for r in self.recordings(qid) if r.attempt == attempt), None)
        if rec is None:
            raise TrialError(f"no recording {attempt} of question {qid!r} in trial {self.id}")
        rec.path.unlink(missing_ok=True)
        rec.path.with_suffix(".json").unlink(missing_ok=True)
        with self._index(write=True) as con:
            con.execute("DELETE FROM recordings WHERE qid=? AND attempt=?", (qid, attempt))
            con.execute("DELETE FROM transcripts WHERE qid=? AND attempt=?", (qid, attempt))

    def skipped(self) -> set[str]:
        with self._index() as con:
            return {q for (q,) in con.execute("SELECT qid FROM skips")}

    # ---------------------------------------------------------------------------- progress

    def states(self) -> list[QuestionState]:
        """Every sampled question with its recordings, skip mark and latest transcripts, in order."""
        by_q: dict[str, list[Recording]] = {}
        for rec in self.recordings():
            by_q.setdefault(rec.qid, []).append(rec)
        skipped = self.skipped()
        transcripts = self.transcripts()
        out = []
        for i, ex in enumerate(self.examples):
            recs = by_q.get(ex.id, [])
            latest = recs[-1].attempt if recs else None
            tr = {t.engine: t for t in transcripts if t.qid == ex.id and t.attempt == latest}
            out.append(QuestionState(i, ex, recs, ex.id in skipped, tr))
        return out

    def next_index(self, after: int = -1) -> int | None:
        """The first question after index ``after`` (wrapping round) not yet recorded or skipped;
        None when every question is done."""
        states = self.states()
        n = len(states)
        for k in range(1, n + 1):
            i = (after + k) % n
            if not states[i].done:
                return i
        return None

    def progress(self) -> dict[str, int]:
        states = self.states()
        return {"questions": len(states), "recorded": sum(bool(s.recordings) for s in states),
                "skipped": sum(s.skipped and not s.recordings for s in states),
                "attempts": sum(len(s.recordings) for s in states)}

    # ------------------------------------------------------------------------- transcription

    def transcripts(self) -> list[StoredTranscript]:
        with self._index() as con:
            rows = con.execute("SELECT qid, attempt, engine, version, text, raw, seconds FROM transcripts").fetchall()
        return [StoredTranscript(*r) for r in rows]

    def store_transcript(self, rec: Recording, transcript: asr.Transcript, version: str) -> StoredTranscript:
        with self._index(write=True) as con:
            con.execute("INSERT OR REPLACE INTO transcripts VALUES (?,?,?,?,?,?,?,?)",
                        (rec.qid, rec.attempt, transcript.engine, version, transcript.text, transcript.raw,
                         transcript.seconds, _now()))
        return StoredTranscript(rec.qid, rec.attempt, transcript.engine, version, transcript.text,
                                transcript.raw, transcript.seconds)

    def engine_problem(self, engine: str) -> str | None:
        """None when ``engine`` can transcribe this trial's language here, else why not."""
        return asr.engine_problem(engine, self.lang)

    def transcribe(self, rec: Recording, engines: Sequence[str]) -> dict[str, StoredTranscript | str]:
        """Transcribe one recording with each engine (engine -> stored transcript, or why not).

        An existing transcript by the same engine version is reused.
        """
        done = {(t.engine, t.version): t for t in self.transcripts() if (t.qid, t.attempt) == (rec.qid, rec.attempt)}
        out: dict[str, StoredTranscript | str] = {}
        audio = None
        for engine in engines:
            problem = self.engine_problem(engine)
            if problem:
                out[engine] = problem
                continue
            eng = asr.get_engine(engine)
            version = eng.version()
            if (engine, version) in done:
                out[engine] = done[(engine, version)]
                continue
            try:
                audio = audio or load_audio(rec.path)
                transcript = eng.transcribe(audio.samples, audio.sample_rate, language=self.lang)
            except (AudioError, asr.ASRError) as exc:
                out[engine] = str(exc)
                continue
            out[engine] = self.store_transcript(rec, transcript, version)
        return out

    def transcribe_pending(self, engines: Sequence[str]) -> int:
        """Transcribe every latest attempt that lacks a transcript by one of ``engines``; returns
        how many transcripts were made (e.g. after a crash, or for an engine installed later)."""
        made = 0
        for state in self.states():
            rec = state.latest
            if rec is None:
                continue
            missing = [e for e in engines if e not in state.transcripts and self.engine_problem(e) is None]
            if missing:
                made += sum(isinstance(v, StoredTranscript) for v in self.transcribe(rec, missing).values())
        return made

    # ------------------------------------------------------------------------- export, delete

    def export_zip(self) -> bytes:
        """The whole trial (metadata, index, every recording, written sets) as zip bytes."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted(self.path.rglob("*")):
                if f.is_file() and _TMP_MARK not in f.name and not f.name.endswith(_SQLITE_SIDE_FILES):
                    name = f"{self.id}/{f.relative_to(self.path).as_posix()}"
                    if f.suffix in _SQLITE_SUFFIXES:
                        # a live database (the index, a scoring sweep still writing): copied by
                        # SQLite's backup API, WAL included; a plain open()/close() here would
                        # drop the writer's locks (core.io.sqlite_db)
                        zf.writestr(name, snapshot_bytes(f))
                    else:
                        zf.write(f, name)
        return buffer.getvalue()

    def delete(self) -> None:
        """Delete the trial and every recording in it, for good."""
        delete_trial(self.id, self.path.parent)

    def __repr__(self) -> str:
        return f"<Trial {self.id} {self.speaker.label!r} {len(self.examples)} questions>"


def create_trial(speaker: Speaker, dataset: Dataset, n: int, seed: int, *, dataset_label: str | None = None,
                 root: str | Path | None = None, trial_id: str | None = None) -> Trial:
    """Start a trial: a seeded sample of ``n`` of ``dataset``'s answerable questions for ``speaker``.

    The sample is :func:`core.datasets.sample_examples` (seeded, in data set order; the sample of n
    is contained in the sample of n + k). The trial folder is built under a temporary name and
    renamed into place, so a crash never leaves half a trial.
    """

    if not isinstance(speaker, Speaker):
        raise TrialError("a trial needs a speaker label (a name or a pseudonym)")
    try:   # stored, and shown to every visitor: normalised and bounded (core.budgets)
        speaker = Speaker(clean_name(speaker.label, "the speaker label"), clean_name(speaker.accent, "the accent"),
                          clean_name(speaker.microphone, "the microphone"), clean_note(speaker.notes, "the notes"))
    except BudgetError as e:
        raise TrialError(str(e)) from None
    if not speaker.label:
        raise TrialError("a trial needs a speaker label (a name or a pseudonym)")
    if n < 1:
        raise TrialError(f"a trial needs at least one question, got n={n}")
    answerable = [ex for ex in dataset.examples if has_gold(ex)]
    if not answerable:
        raise TrialError(f"data set {dataset.name!r} has no answerable question")
    examples = sample_examples(answerable, n, seed)
    base = trials_root(root)
    tid = trial_id or f"{slug(speaker.label)}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,80}", tid):
        raise TrialError(f"trial id {tid!r} must be lower-case letters, digits and '-'")
    final, k = base / tid, 1
    while final.exists():
        k += 1
        final = base / f"{tid}-{k}"
    tmp = base / f".{final.name}{_TMP_MARK}{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "recordings").mkdir(parents=True)
    meta = {"format": FORMAT, "id": final.name, "speaker": dataclasses.asdict(speaker),
            "dataset": dataset_label or dataset.name, "lang": dataset.lang, "seed": seed, "n": len(examples),
            "created": _now(), "examples": [_example_to_json(ex) for ex in examples]}
    write_atomic(tmp / TRIAL_FILE, json.dumps(meta, ensure_ascii=False, indent=1).encode())
    os.replace(tmp, final)
    return Trial(final)


def open_trial(trial_id: str, root: str | Path | None = None) -> Trial:
    path = trials_root(root) / trial_id
    if trial_id.startswith(".") or "/" in trial_id or not (path / TRIAL_FILE).is_file():
        raise TrialError(f"no trial {trial_id!r} under {trials_root(root)}")
    return Trial(path)


def list_trials(root: str | Path | None = None) -> list[Trial]:
    """Every trial under the root, newest first. Leftovers of interrupted creations or deletions
    (hidden folders) are removed."""
    base = trials_root(root)
    out = []
    for d in base.iterdir():
        if d.name.startswith("."):
            if _TMP_MARK in d.name or d.name.startswith(".deleting-"):
                shutil.rmtree(d, ignore_errors=True)
            continue
        if (d / TRIAL_FILE).is_file():
            try:
                out.append(Trial(d))
            except (TrialError, json.JSONDecodeError, KeyError):
                continue
    return sorted(out, key=lambda t: (t.created, t.id), reverse=True)


def delete_trial(trial_id: str, root: str | Path | None = None) -> None:
    """Delete a trial folder: renamed to a hidden name first (so it disappears from lists at
    once, even if the removal is interrupted), then removed."""
    trial = open_trial(trial_id, root)
    doomed = trial.path.with_name(f".deleting-{trial.path.name}")
    os.replace(trial.path, doomed)
    shutil.rmtree(doomed)


__all__ = ["Speaker", "Recording", "StoredTranscript", "QuestionState", "Trial", "TrialError", "create_trial",
           "open_trial", "list_trials", "delete_trial", "trials_root", "slug", "write_atomic"]
