"""PocketSphinx hears every clip as a fresh decoder would, whatever it decoded before.

Its live cepstral mean normalisation used to carry over from one utterance to the next, so the
transcript of a question depended on the clips decoded before it: a sweep resumed after a kill,
or spread over Ray workers (core.sweeps.running.ray), heard some questions differently from a straight
local run (on the demo set, "that was the best known keeper ..." from a fresh decoder, "it was ..." or "what
was ..." after other clips). core.speech.asr resets the feature state before each clip.
"""
from __future__ import annotations

import pytest

from core.datasets import demo_dataset
from core.speech import asr, tts

pytestmark = pytest.mark.skipif(asr.engine_problem("pocketsphinx") is not None
                                or tts.why_unavailable("flite:kal16") is not None,
                                reason="needs pocketsphinx and the flite kal16 voice")


def test_transcripts_do_not_depend_on_the_clips_decoded_before():
    # the clip that used to change with its predecessors (the third), after two and before one
    # that never did
    examples = demo_dataset("en").examples
    clips = [tts.synthesize(examples[i].question, "flite:kal16") for i in (0, 1, 2, 7)]
    fresh = [asr.PocketSphinxEngine().transcribe(*clip).text for clip in clips]   # one decoder per clip
    shared = asr.PocketSphinxEngine()
    forward = [shared.transcribe(*clip).text for clip in clips]
    backward = [shared.transcribe(*clip).text for clip in reversed(clips)][::-1]
    assert forward == backward == fresh
    assert fresh[2] == "that was the best known keeper of the white house"
    assert fresh[1] == "how tall is the tower"
    assert fresh[3] == "how long does the journey take"
    assert shared.version().endswith(" fresh")   # transcripts cached before the fix are keyed apart
