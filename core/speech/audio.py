"""Audio in: decode, check, convert to what the recognisers expect.

Every recogniser here wants 16 kHz mono float32 in [-1, 1]; recordings and synthesisers produce
other rates (espeak-ng and piper 22.05 kHz, festival's HTS voice 32 kHz, browsers 44.1/48 kHz),
so :func:`resample` converts with a polyphase filter (``scipy.signal.resample_poly``).

Bad input is refused with :class:`AudioError`, whose message names the problem:

* not audio at all / a truncated or corrupt file  ("not a readable audio file ...")
* no samples                                        ("empty audio ...")
* NaN or infinite samples                           ("non-finite samples ...")
* silence: the loudest 30 ms frame is quieter than ``SILENCE_DBFS`` (-50 dBFS, i.e. an RMS of
  about 0.0032 of full scale). The loudest frame, not the whole clip, is measured so that a
  short question with long silent padding is still accepted, while a muted or unplugged
  microphone (noise floor typically -60 dBFS and below) is refused.
* too long: more than ``MAX_SECONDS`` (60 s by default; a spoken question takes 2-10 s, and a
  minute of audio already costs whisper tens of seconds on two CPU cores).

Audio from outside (a file or bytes given to :func:`load_audio`, a server recording) is also
checked for being plausibly speech, :func:`speech_problem`; audio the app makes itself (TTS,
added noise) is not, since a noisy perturbation is the point there:

* truncated WAV: the header announces more sample data than the file holds (libsndfile would
  silently read the part that is there)                     ("truncated ...")
* too short: under ``MIN_SECONDS`` (0.3 s; one short word lasts about that long, and a WAV
  header followed by a few random bytes is 0.06 s)           ("too short ...")
* noise: the spectral flatness (geometric over arithmetic mean of the power spectrum, 1 for
  white noise, near 0 for a tone) of 32 ms frames. Even in noisy speech some frames are voiced,
  with harmonics well above the noise, so the most tonal tenth of the loud frames has a low
  flatness; white noise has none. Measured (flatness of the 10th-percentile loud frame):
  espeak-ng, flite and festival voices 0.0001-0.002; flite speech with white noise at 10 dB SNR
  about 0.05, at 0 dB about 0.2; white noise (uniform, Gaussian, or random bytes after a WAV
  header) 0.52-0.54. Refused above ``NOISE_FLATNESS`` (0.4).   ("sounds like noise ...")
  This is a noise detector, not a speech detector: a tone or music passes.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

ASR_SAMPLE_RATE = 16_000       # what PocketSphinx's en-US model and Whisper are trained on
MAX_SECONDS = 60.0
SILENCE_DBFS = -50.0
FRAME_SECONDS = 0.030
MIN_SECONDS = 0.3
NOISE_FLATNESS = 0.4         # refused when even the most tonal tenth of loud frames is this flat
FLATNESS_FRAME_SECONDS = 0.032


class AudioError(ValueError):
    """Audio that cannot be used: corrupt, empty, silent, too long, or of a bad shape/type."""


@dataclass(frozen=True)
class Audio:
    """Mono float32 samples in [-1, 1] and their sample rate (Hz)."""

    samples: np.ndarray
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sample_rate


def _dbfs(rms: float) -> float:
    return 20 * math.log10(rms) if rms > 0 else -math.inf


def loudest_frame_dbfs(samples: np.ndarray, sample_rate: int) -> float:
    """Level (dBFS) of the loudest 30 ms frame (the whole clip if it is shorter than a frame)."""
    frame = max(1, int(round(FRAME_SECONDS * sample_rate)))
    x = np.asarray(samples, dtype=np.float64)
    n_frames = max(1, len(x) // frame)
    if len(x) < frame:
        return _dbfs(float(np.sqrt(np.mean(x * x))))
    frames = x[: n_frames * frame].reshape(n_frames, frame)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    return _dbfs(float(rms.max()))


def to_mono_float32(samples: np.ndarray) -> np.ndarray:
    """Float32 mono: integer PCM is scaled to [-1, 1]; channels (last axis) are averaged."""
    x = np.asarray(samples)
    if x.ndim == 0 or x.ndim > 2:
        raise AudioError(f"audio must be a 1-D (mono) or 2-D (frames x channels) array, got shape {x.shape}")
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        # Unsigned PCM (8-bit WAV) is centred on its midpoint.
        offset = (info.max + 1) // 2 if info.min == 0 else 0
        x = (x.astype(np.float64) - offset) / (info.max + 1 - offset)
    elif not np.issubdtype(x.dtype, np.floating):
        raise AudioError(f"audio samples must be numbers, got dtype {x.dtype}")
    if x.ndim == 2:
        x = x.mean(axis=1)
    return np.ascontiguousarray(x, dtype=np.float32)


def validate(samples: np.ndarray, sample_rate: int, *, max_seconds: float = MAX_SECONDS,
             what: str = "audio") -> Audio:
    """Check decoded samples and return them as :class:`Audio` (float32 mono). Raises AudioError."""
    if not isinstance(sample_rate, (int, np.integer)) or isinstance(sample_rate, bool) or sample_rate <= 0:
        raise AudioError(f"{what}: sample rate must be a positive integer, got {sample_rate!r}")
    x = to_mono_float32(samples)
    if x.size == 0:
        raise AudioError(f"empty audio: {what} contains no samples")
    if not np.all(np.isfinite(x)):
        raise AudioError(f"{what} has non-finite samples (NaN or infinity)")
    seconds = x.size / sample_rate
    if seconds > max_seconds:
        raise AudioError(f"{what} is too long: {seconds:.1f} s, the limit is {max_seconds:g} s")
    level = loudest_frame_dbfs(x, int(sample_rate))
    if level < SILENCE_DBFS:
        shown = "-inf" if level == -math.inf else f"{level:.1f}"
        raise AudioError(f"{what} is silent: its loudest 30 ms is {shown} dBFS, below the "
                         f"{SILENCE_DBFS:g} dBFS threshold (is the microphone muted?)")
    return Audio(samples=x, sample_rate=int(sample_rate))


def load_audio(source: bytes | bytearray | str | Path | BinaryIO, *, max_seconds: float = MAX_SECONDS,
               speech: bool = True, name: str | None = None) -> Audio:
    """Decode an audio file (WAV, FLAC, OGG... anything libsndfile reads) given as bytes, a path
    or a binary file object, :func:`validate` it and (``speech``, the default: audio from
    outside) refuse a truncated WAV or what cannot be speech (:func:`speech_problem`).
    Raises AudioError naming the problem, and the file as "the recording NAME" (``name``: the
    uploaded file's name), by its path's name, or as "the recording"; never by the object it was
    read from.

    >>> try:
    ...     load_audio(b"not audio" * 100, name="talk.mp4")
    ... except AudioError as e:
    ...     print(e)
    the recording talk.mp4 is not a readable audio file (corrupt or unsupported format): Format not recognised.
    """
    import soundfile as sf  # imported here so that a missing libsndfile only breaks audio loading

    truncated = None
    if isinstance(source, (bytes, bytearray)):
        what = f"the recording {name}" if name else "the recording"
        if len(source) == 0:
            raise AudioError("empty audio: the file has 0 bytes")
        truncated = _wav_truncation(bytes(source[:4096]), len(source))
        handle: BinaryIO | str = io.BytesIO(bytes(source))
    elif isinstance(source, (str, Path)):
        path = Path(source)
        what = path.name
        if not path.is_file():
            raise AudioError(f"audio file not found: {path}")
        if path.stat().st_size == 0:
            raise AudioError(f"empty audio: {path.name} has 0 bytes")
        with open(path, "rb") as f:
            truncated = _wav_truncation(f.read(4096), path.stat().st_size)
        handle = str(path)
    elif hasattr(source, "read"):
        named = name or getattr(source, "name", None)
        what = f"the recording {named}" if named else "the recording"
        handle = source
    else:
        raise AudioError(f"expected audio bytes, a path or a binary file, got {type(source).__name__}")
    try:
        data, rate = sf.read(handle, dtype="float32", always_2d=False)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        # libsndfile's message names the object it read ("Error opening <_io.BytesIO object at
        # 0x...>: ..."): its own reason only
        reason = getattr(exc, "error_string", None) or str(exc).replace(repr(handle), str(what))
        raise AudioError(f"{what} is not a readable audio file (corrupt or unsupported format): {reason}") from None
    if speech and truncated:
        raise AudioError(f"{what} {truncated} (cut off while uploading or saving?)")
    audio = validate(data, rate, max_seconds=max_seconds, what=str(what))
    return check_speech(audio, str(what)) if speech else audio


def spectral_flatness(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """Spectral flatness of each loud 32 ms frame (Hann window, DC bin left out): frames within
    30 dB of the loudest are kept, so silent padding does not count. Values in (0, 1].

    >>> rate = 16000
    >>> tone = np.sin(2 * np.pi * 440 * np.arange(rate) / rate)
    >>> float(np.median(spectral_flatness(tone, rate))) < 0.001
    True
    >>> noise = np.random.default_rng(0).normal(0, 0.1, rate)
    >>> 0.5 < float(np.median(spectral_flatness(noise, rate))) < 0.6
    True
    """
    n = max(16, int(round(FLATNESS_FRAME_SECONDS * sample_rate)))
    x = np.asarray(samples, dtype=np.float64)
    k = len(x) // n
    if k == 0:
        return np.zeros(0)
    frames = x[: k * n].reshape(k, n)
    energy = np.mean(frames * frames, axis=1)
    loud = frames[energy >= energy.max() * 1e-3]
    power = np.abs(np.fft.rfft(loud * np.hanning(n), axis=1))[:, 1:] ** 2 + 1e-20
    return np.exp(np.mean(np.log(power), axis=1)) / np.mean(power, axis=1)


def speech_problem(audio: Audio) -> str | None:
    """Why validated ``audio`` cannot be a spoken question (too short, or noise), else None."""
    if audio.seconds < MIN_SECONDS:
        return (f"is too short: {audio.seconds:.2f} s, a spoken question lasts at least "
                f"{MIN_SECONDS:g} s")
    flat = spectral_flatness(audio.samples, audio.sample_rate)
    if flat.size:
        tonal = float(np.percentile(flat, 10))
        if tonal > NOISE_FLATNESS:
            return (f"sounds like noise, not speech: its spectrum is flat (spectral flatness "
                    f"{tonal:.2f} in its most tonal frames, speech stays below "
                    f"{NOISE_FLATNESS:g})")
    return None


def check_speech(audio: Audio, what: str = "the recording") -> Audio:
    """``audio`` when :func:`speech_problem` finds nothing, else AudioError naming the problem."""
    problem = speech_problem(audio)
    if problem:
        raise AudioError(f"{what} {problem}")
    return audio


def _wav_truncation(head: bytes, size: int) -> str | None:
    """For a RIFF/WAVE file of ``size`` bytes starting with ``head``: a message when its data
    chunk announces more bytes than the file holds, else None (also for other formats, and for
    streamed WAVs whose writer left the size as 0 or 0xFFFFFFFF: unknown)."""
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    pos = 12
    while pos + 8 <= len(head):
        chunk, length = head[pos:pos + 4], int.from_bytes(head[pos + 4:pos + 8], "little")
        if chunk == b"data":
            have = size - (pos + 8)
            if 0 < length < 0xFFFFFFFF and length > have:
                return (f"is truncated: its header announces {length:,} bytes of audio, the "
                        f"file holds {max(have, 0):,}")
            return None
        pos += 8 + length + (length & 1)
    return None


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resample mono float audio with a polyphase filter; the output has
    ``ceil(len * to_rate / from_rate)`` samples."""
    from scipy.signal import resample_poly

    if from_rate <= 0 or to_rate <= 0:
        raise AudioError(f"sample rates must be positive, got {from_rate} -> {to_rate}")
    x = np.asarray(samples, dtype=np.float32)
    if from_rate == to_rate:
        return x
    g = math.gcd(int(from_rate), int(to_rate))
    return resample_poly(x, int(to_rate) // g, int(from_rate) // g).astype(np.float32)


def for_asr(samples: np.ndarray, sample_rate: int, *, max_seconds: float = MAX_SECONDS) -> np.ndarray:
    """Validated 16 kHz mono float32, clipped to [-1, 1], ready for a recogniser."""
    audio = validate(samples, sample_rate, max_seconds=max_seconds)
    x = resample(audio.samples, audio.sample_rate, ASR_SAMPLE_RATE)
    return np.clip(x, -1.0, 1.0)


def to_wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    """16-bit PCM WAV bytes (for playback in the browser and for storing recordings)."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.clip(to_mono_float32(samples), -1.0, 1.0), int(sample_rate), format="WAV",
             subtype="PCM_16")
    return buffer.getvalue()
