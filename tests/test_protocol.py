"""The declared model interface (core.qa.protocol.QAModel): the engine implements it and computes
its own fingerprint, byte-identical to the one stored sweeps were keyed with before the move."""
import pytest

from core.qa.engine import EngineSettings, QAEngine
from core.qa.protocol import QAModel, fingerprint_of

# Computed with core.sweep.engine_fingerprint (now core.sweeps.keys) on the code before the fingerprint moved into the
# engine (commit 821746f), for the shipped minilm-squad: stored sweeps' prediction keys hold these.
PINNED = {
    "defaults": "9320d06fa19f917707c6",
    "max_length=256, stride=64, long_context_chars=5000": "8388db0d7ed79dbde2c7",
}


@pytest.fixture(scope="module")
def shipped():
    from core.qa import registry

    entry = registry.get_entry("minilm-squad")
    if not entry.is_installed():
        pytest.skip(f"minilm-squad is not installed: {entry.status()}")
    return registry.load_model_and_tokenizer(entry)


def test_a_shipped_models_fingerprint_is_the_one_stored_sweeps_were_keyed_with(shipped):
    model, tok = shipped
    eng = QAEngine(model, tok, EngineSettings(threads=1), device="cpu")
    assert eng.fingerprint() == PINNED["defaults"]
    custom = QAEngine(model, tok, EngineSettings(threads=1, max_length=256, stride=64, long_context_chars=5000),
                      device="cpu")
    assert custom.fingerprint() == PINNED["max_length=256, stride=64, long_context_chars=5000"]
    # threads and batch size change speed, not answers: same key
    fast = QAEngine(model, tok, EngineSettings(threads=2, batch_size=32), device="cpu")
    assert fast.fingerprint() == PINNED["defaults"]


def test_answering_does_not_change_the_fingerprint(shipped):
    """A fast tokenizer rewrites its truncation state when called (minilm-squad's loads as 256/96):
    the fingerprint hashes the tokenizer as loaded."""
    model, tok = shipped
    eng = QAEngine(model, tok, EngineSettings(threads=1), device="cpu")
    eng.answer("When was it completed?", "The tower was completed in 1889.")
    assert eng.fingerprint() == PINNED["defaults"]


def test_a_setting_changed_later_changes_the_fingerprint(tiny_qa_dir):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    eng = QAEngine(AutoModelForQuestionAnswering.from_pretrained(tiny_qa_dir),
                   AutoTokenizer.from_pretrained(tiny_qa_dir), EngineSettings(threads=1), device="cpu")
    first = eng.fingerprint()
    eng.settings.top_k = 5
    assert eng.fingerprint() != first
    eng.settings.top_k = 20
    assert eng.fingerprint() == first


def test_the_engine_is_a_qa_model_with_the_registrys_languages(tiny_registry):
    from core.qa import registry

    eng = registry.load_engine("tiny-a", EngineSettings(threads=1), path=tiny_registry)
    assert isinstance(eng, QAModel)
    assert eng.languages == ("en",)
    assert fingerprint_of(eng) == eng.fingerprint()
