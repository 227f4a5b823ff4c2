"""NoiseQA's synthetic ASR noise as a perturbation: question -> TTS voice -> ASR engine -> question.

``asr_Q`` with params ``voice`` (a TTS voice id, see :mod:`core.speech.tts`) and ``engine``
(``"pocketsphinx"``: fixed vocabulary, like the paper's Kaldi; ``"whisper-base"``: large
vocabulary). The new question is the recogniser's transcript, lower-cased and unpunctuated as in
NoiseQA. Sweeping voices x engines gives the voice-variation view (NoiseQA Figure 1a).

Deterministic (every voice and engine is run deterministically), so sweeps run it once; round
trips are cached on disk by (text, voice, engine) in :mod:`core.speech.noise`.

It cannot run where the voice or engine is not installed: ``why_not(example, params)`` says so.
An empty transcript (the recogniser heard no words) is returned as an empty
question with ``meta["empty_transcript"] = True``: dropping it would flatter the scores, so
scoring code must count such a question as unanswered.
"""
from __future__ import annotations

import random
from typing import Any

from core.perturb.base import Param, Perturbation, Variant, make_variant_from_text
from core.perturb.registry import register
from core.speech import asr, noise, tts
from core.types import QAExample


@register
class ASRNoise(Perturbation):
    id = "asr_Q"
    family = "asr"
    field = "question"
    languages = ("en",)          # every TTS voice here is English, PocketSphinx's model is en-US
    randomised = False
    description = ("Speak the question with a text-to-speech voice and transcribe it with a speech "
                   "recogniser (lower-cased, unpunctuated).")
    parameters = (
        Param("voice", "flite:kal16", "the text-to-speech voice that speaks the question", choices=tts.ALL_VOICE_IDS),
        Param("engine", "pocketsphinx", "the speech recogniser that transcribes it", choices=asr.ENGINE_NAMES),
    )
    source = "NoiseQA (Ravichander et al. 2021) §3.2, synthetic ASR noise (TTS -> ASR)"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        """The chosen voice or engine does not run here (probed once per process)."""
        return noise.why_unavailable(params["voice"], params["engine"])

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        p = params
        result = noise.speak_and_recognise(example.question, p["voice"], p["engine"])
        meta = {
            "voice": p["voice"], "engine": p["engine"], "raw_transcript": result.raw,
            "audio_seconds": round(result.audio_seconds, 3), "tts_seconds": round(result.tts_seconds, 3),
            "asr_seconds": round(result.asr_seconds, 3), "cached": result.cached,
            "empty_transcript": result.text == "",
        }
        return [make_variant_from_text(self, example, self.field, result.text, meta, kind="asr")]
