"""A speech trial made for tests: the bundled demo set's questions read by a TTS voice standing in
for a speaker, stored in the trial store and transcribed by PocketSphinx.

No human recordings ship with the project, so a voice that is not the TTS -> ASR condition's
(flite slt, a female US voice, against flite kal16) plays the speaker: its transcripts differ from
the synthetic condition's, which is what the comparison needs to show.
"""
from __future__ import annotations

from pathlib import Path

from core.collect import trials
from core.datasets import demo_dataset
from core.speech import tts
from core.speech.audio import to_wav_bytes

SPEAKER_VOICE = "flite:slt"


def demo_trial(root: Path, n: int = 8, recorded: int | None = None, engines=("pocketsphinx",),
               trial_id: str = "demo-speaker") -> trials.Trial:
    """A trial of ``n`` English demo questions (seed 0) with the first ``recorded`` (default all) read by
    :data:`SPEAKER_VOICE` and transcribed by ``engines``."""
    ds = demo_dataset("en")
    trial = trials.create_trial(trials.Speaker("Demo voice", accent="US English (flite slt)",
                                               microphone="none: synthesised"),
                                ds, n, seed=0, root=root, trial_id=trial_id, dataset_label="demo")
    for ex in trial.examples[: n if recorded is None else recorded]:
        samples, rate = tts.synthesize(ex.question, SPEAKER_VOICE)
        rec = trial.add_recording(ex.id, to_wav_bytes(samples, rate))
        trial.transcribe(rec, list(engines))
    return trial
