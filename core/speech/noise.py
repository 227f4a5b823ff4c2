"""Synthetic ASR noise (NoiseQA): speak a question with a TTS voice, transcribe it with an ASR engine.

The result is the recogniser's normalised transcript (lower-cased, unpunctuated). Round trips are
deterministic (every TTS voice and ASR engine here is run deterministically; see tts.py and
asr.py), so each (text, voice, engine) is computed once and kept in an SQLite table under
``<cache_dir>/asr_cache/transcripts.sqlite``. The key also holds the TTS and ASR engine versions,
so an upgrade does not serve stale transcripts.

Synthesis is cheap next to recognition (flite ~0.1 s, whisper ~1.5 s per question on two cores),
so synthesised audio is not stored on disk (a voice's audio for all 1,190 XQuAD questions would
take ~100 MB); it is kept in a small in-memory LRU, and :func:`speak_and_recognise_many` speaks a
text once for several engines.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core import config
from core.speech import asr, tts

CACHE_FILE = "transcripts.sqlite"
AUDIO_LRU_SIZE = 64


@dataclass(frozen=True)
class NoisyText:
    """One TTS -> ASR round trip: the normalised transcript ``text`` and how it was made."""

    text: str
    raw: str
    voice: str
    engine: str
    audio_seconds: float
    tts_seconds: float
    asr_seconds: float
    cached: bool


class TranscriptCache:
    """Transcripts keyed by (text, voice, engine, versions), in one SQLite file.

    A connection per call keeps it safe across Streamlit's threads and across processes (SQLite
    locks the file). ``hits`` / ``misses`` count this object's lookups.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("""CREATE TABLE IF NOT EXISTS transcripts (
                text TEXT NOT NULL, voice TEXT NOT NULL, engine TEXT NOT NULL, versions TEXT NOT NULL,
                transcript TEXT NOT NULL, raw TEXT NOT NULL, audio_seconds REAL NOT NULL,
                tts_seconds REAL NOT NULL, asr_seconds REAL NOT NULL, created REAL NOT NULL,
                PRIMARY KEY (text, voice, engine, versions))""")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, text: str, voice: str, engine: str, versions: str) -> NoisyText | None:
        with self._connect() as con:
            row = con.execute(
                "SELECT transcript, raw, audio_seconds, tts_seconds, asr_seconds FROM transcripts "
                "WHERE text=? AND voice=? AND engine=? AND versions=?", (text, voice, engine, versions)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return NoisyText(text=row[0], raw=row[1], voice=voice, engine=engine, audio_seconds=row[2],
                         tts_seconds=row[3], asr_seconds=row[4], cached=True)

    def put(self, source_text: str, result: NoisyText, versions: str) -> None:
        with self._connect() as con:
            con.execute("INSERT OR REPLACE INTO transcripts VALUES (?,?,?,?,?,?,?,?,?,?)",
                        (source_text, result.voice, result.engine, versions, result.text, result.raw,
                         result.audio_seconds, result.tts_seconds, result.asr_seconds, time.time()))

    def __len__(self) -> int:
        with self._connect() as con:
            return con.execute("SELECT COUNT(*) FROM transcripts").fetchone()[0]


_default_cache: TranscriptCache | None = None
_default_lock = threading.Lock()


def default_cache() -> TranscriptCache:
    """The process-wide cache in ``<cache_dir>/asr_cache/``."""
    global _default_cache
    with _default_lock:
        path = config.cache_dir() / "asr_cache" / CACHE_FILE
        if _default_cache is None or _default_cache.path != path:
            _default_cache = TranscriptCache(path)
        return _default_cache


def why_unavailable(voice: str, engine: str) -> str | None:
    """None when ``voice`` and ``engine`` both work here, else the reason (first problem found)."""
    problem = tts.why_unavailable(voice)
    if problem:
        return problem
    try:
        ok, reason = asr.get_engine(engine).available()
    except KeyError as exc:
        return str(exc.args[0])
    return None if ok else f"ASR engine {engine} is not available: {reason}"


def _versions(voice: str, engine: str) -> str:
    return f"{tts.voice_version(voice)} | {asr.get_engine(engine).version()}"


_audio_lru: OrderedDict[tuple[str, str], tuple[np.ndarray, int, float]] = OrderedDict()
_audio_lock = threading.Lock()


def speech_for(text: str, voice: str) -> tuple[np.ndarray, int, float]:
    """(samples, sample rate, synthesis seconds) for ``text`` in ``voice``; recent ones from memory."""
    key = (text, voice)
    with _audio_lock:
        if key in _audio_lru:
            _audio_lru.move_to_end(key)
            return _audio_lru[key]
    start = time.perf_counter()
    samples, rate = tts.synthesize(text, voice)
    samples.setflags(write=False)   # shared between callers
    entry = (samples, rate, time.perf_counter() - start)
    with _audio_lock:
        _audio_lru[key] = entry
        while len(_audio_lru) > AUDIO_LRU_SIZE:
            _audio_lru.popitem(last=False)
    return entry


def speak_and_recognise_many(text: str, voice: str, engines: list[str] | tuple[str, ...],
                             cache: TranscriptCache | None = None) -> dict[str, NoisyText]:
    """``text`` spoken by ``voice`` and transcribed by each engine (synthesised at most once).

    Raises tts.TTSError / asr.ASRError when the voice or an engine cannot run (ask
    :func:`why_unavailable` first to get the reason without an exception), and
    core.speech.audio.AudioError if the synthesised audio is unusable (e.g. over 60 s).
    """
    cache = default_cache() if cache is None else cache   # an empty cache is falsy (__len__)
    results: dict[str, NoisyText] = {}
    for engine in engines:
        versions = _versions(voice, engine)
        hit = cache.get(text, voice, engine, versions)
        if hit is not None:
            results[engine] = hit
            continue
        samples, rate, tts_seconds = speech_for(text, voice)
        transcript = asr.get_engine(engine).transcribe(samples, rate)
        result = NoisyText(text=transcript.text, raw=transcript.raw, voice=voice, engine=engine,
                           audio_seconds=transcript.audio_seconds, tts_seconds=tts_seconds,
                           asr_seconds=transcript.seconds, cached=False)
        cache.put(text, result, versions)
        results[engine] = result
    return results


def speak_and_recognise(text: str, voice: str, engine: str, cache: TranscriptCache | None = None) -> NoisyText:
    """``text`` spoken by ``voice``, transcribed by ``engine`` (cached on disk)."""
    return speak_and_recognise_many(text, voice, [engine], cache)[engine]
