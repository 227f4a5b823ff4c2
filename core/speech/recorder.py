"""Getting speech in: the server's own microphone (sounddevice), or the browser's recorder.

* :func:`available` says whether the server can record, and why not: the PortAudio library
  missing (``apt-get install libportaudio2``), or no device with input channels (the usual case
  on a remote server, where users speak through the browser instead).
* :func:`record` records a fixed number of seconds from the server's default (or a chosen) input.
* :func:`from_audio_input` turns what ``st.audio_input`` returns (an UploadedFile holding WAV
  bytes, or None when nothing was recorded) into validated :class:`~core.speech.audio.Audio`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from core.speech.audio import MAX_SECONDS, Audio, AudioError, check_speech, load_audio, validate

RECORD_SAMPLE_RATE = 16_000   # what the recognisers want; PortAudio resamples if the device differs


class RecorderError(RuntimeError):
    """The server cannot record (no PortAudio, no input device, device error)."""


def _sounddevice():
    """The sounddevice module, or RecorderError naming why it cannot be used."""
    try:
        import sounddevice
    except ImportError:
        raise RecorderError("the Python package 'sounddevice' is not installed (pip install sounddevice)") from None
    except OSError as exc:   # raised at import when libportaudio cannot be found
        raise RecorderError(f"the PortAudio library is missing (apt-get install libportaudio2): {exc}") from None
    return sounddevice


def input_devices() -> list[dict[str, Any]]:
    """The server's devices that have input channels (index, name, channels, default rate)."""
    sd = _sounddevice()
    try:
        devices = sd.query_devices()
    except Exception as exc:  # PortAudioError when the host API fails to initialise
        raise RecorderError(f"cannot list audio devices: {exc}") from None
    return [{"index": i, "name": d["name"], "channels": int(d["max_input_channels"]),
             "default_samplerate": float(d["default_samplerate"])}
            for i, d in enumerate(devices) if d["max_input_channels"] > 0]


def available() -> tuple[bool, str]:
    """(True, "") when the server has an input device to record from, else (False, why not)."""
    try:
        devices = input_devices()
    except RecorderError as exc:
        return False, str(exc)
    if not devices:
        return False, ("the server has no audio input device (no microphone attached to the machine "
                       "running the app); record in the browser instead")
    return True, ""


def record(seconds: float, *, device: int | str | None = None, sample_rate: int = RECORD_SAMPLE_RATE) -> Audio:
    """Record ``seconds`` of mono audio from the server's input ``device`` (None = default).

    Blocks while recording. Raises RecorderError when recording is impossible and AudioError when
    the recording is silent (e.g. a muted microphone), too short or only noise.
    """
    if not (0 < seconds <= MAX_SECONDS):
        raise ValueError(f"recording length must be in (0, {MAX_SECONDS:g}] seconds, got {seconds!r}")
    ok, reason = available()
    if not ok:
        raise RecorderError(reason)
    sd = _sounddevice()
    try:
        # 16-bit integers, the format every capture device has natively: asking PortAudio for
        # float32 made ALSA's conversion plugins garble the signal in our tests.
        data = sd.rec(int(round(seconds * sample_rate)), samplerate=sample_rate, channels=1,
                      dtype="int16", device=device, blocking=True)
    except Exception as exc:  # sounddevice.PortAudioError, ValueError for a bad device
        raise RecorderError(f"recording failed: {exc}") from None
    return check_speech(validate(np.asarray(data)[:, 0], sample_rate, what="the recording"))


def from_audio_input(recording: Any, *, max_seconds: float = MAX_SECONDS) -> Audio:
    """Audio from ``st.audio_input``'s value (an UploadedFile / file-like with WAV bytes, or bytes).

    None (nothing recorded yet) raises AudioError("no recording ...") so that the page can show it.
    """
    if recording is None:
        raise AudioError("no recording: press the microphone button and speak first")
    if isinstance(recording, (bytes, bytearray)):
        data = bytes(recording)
    elif hasattr(recording, "getvalue"):
        data = recording.getvalue()
    elif hasattr(recording, "read"):
        data = recording.read()
    else:
        raise AudioError(f"expected the recorder's audio (bytes or an uploaded file), got {type(recording).__name__}")
    return load_audio(data, max_seconds=max_seconds, name=getattr(recording, "name", None) or None)
