"""Load receipts (core.qa.receipts): a model's second load opens the graph its first load made,
without building the torch model, and answers and fingerprints exactly as the first did.

Real engines of the tiny BERT of tests/conftest.py through the registry's loading path and an
engine cache, with the ONNX backend, in a cache folder of the test's own."""
from __future__ import annotations

import os
import shutil

import pytest

from core.qa import receipts, registry
from core.qa.engine import EngineSettings
from core.qa.engine_cache import EngineCache

pytest.importorskip("onnxruntime")

ONNX = EngineSettings(backend="onnx")
QUESTIONS = ["Where is the tower?", "When was it completed?"]
CONTEXTS = ["The Eiffel Tower is in Paris. It was completed in 1889."] * 2


@pytest.fixture
def model_dir(tiny_qa_dir, tmp_path, monkeypatch):
    """A copy of the tiny model registered as "tiny", and an empty cache folder."""
    folder = tmp_path / "tiny"
    shutil.copytree(tiny_qa_dir, folder)
    toml = tmp_path / "models.toml"
    toml.write_text(f'[[model]]\nname = "tiny"\npath = "{folder}"\nlanguages = ["en"]\ndescription = "tiny"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(toml))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    return folder


def _load(monkeypatch, settings=ONNX):
    """(engine, how many torch models the load built) from a fresh engine cache."""
    built = []
    real = registry.load_model_and_tokenizer

    def counted(entry):
        built.append(entry.name)
        return real(entry)

    monkeypatch.setattr(registry, "load_model_and_tokenizer", counted)
    cache = EngineCache(lambda: 1e9, entry_for=registry.get_entry, build=registry.build_engine)
    return cache.get("tiny", settings), built


def _spans(engine):
    return [(p.best.text, p.best.start, p.best.end, p.best.score) for p in engine.predict(QUESTIONS, CONTEXTS)]


def test_a_second_load_opens_the_recorded_graph_without_the_torch_model(model_dir, monkeypatch):
    first, built = _load(monkeypatch)
    assert built == ["tiny"] and first.backend_name == "onnx"
    answers, fingerprint = _spans(first), first.fingerprint()
    receipt = receipts.receipt_for(registry.get_entry("tiny"))
    assert receipt.complete and receipt.graph("onnx") == first._forward_impl.path.resolve()
    assert receipt.fingerprint(next(iter(receipt.data["fingerprints"]))) == fingerprint

    second, built = _load(monkeypatch)
    assert built == []                                   # no torch model was built
    assert not second.holds_torch and second.torch_reloads == 0
    assert second.backend_name == "onnx" and _spans(second) == answers
    assert second.fingerprint() == fingerprint and second.torch_reloads == 0
    # what reads the weights gets them (an attribution, another backend's fingerprint)
    assert second.fingerprint_with("torch") == first.fingerprint_with("torch")
    assert second.torch_reloads == 1 and second.model.config.model_type == "bert"


def test_a_setting_the_receipt_lacks_is_hashed_from_the_weights_once(model_dir, monkeypatch):
    _load(monkeypatch)
    engine, _ = _load(monkeypatch)
    capped = engine.with_settings(EngineSettings(backend="onnx", max_answer_tokens=5))
    reference = capped.fingerprint()                     # not on the receipt: the weights come back
    assert engine.torch_reloads == 1
    third, built = _load(monkeypatch)
    assert built == []
    assert third.with_settings(EngineSettings(backend="onnx", max_answer_tokens=5)).fingerprint() == reference
    assert third.torch_reloads == 0


def test_changed_weights_or_a_lost_graph_load_the_torch_model_again(model_dir, monkeypatch):
    first, _ = _load(monkeypatch)
    graph = first._forward_impl.path
    stat = (model_dir / "model.safetensors").stat()
    os.utime(model_dir / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    _, built = _load(monkeypatch)
    assert built == ["tiny"]                             # another key: another receipt
    _, built = _load(monkeypatch)
    assert built == []
    graph.unlink()                                       # the cache's graph removed by hand
    again, built = _load(monkeypatch)
    assert built == ["tiny"] and again.backend_name == "onnx" and graph.is_file()


def test_the_torch_backend_and_hub_models_keep_the_full_load(model_dir, monkeypatch):
    _load(monkeypatch)
    engine, built = _load(monkeypatch, EngineSettings(backend="torch"))
    assert built == ["tiny"] and engine.backend_name == "torch"
    assert receipts.receipt_for(registry.ModelEntry(name="hub", hf_id="no-such-org/no-such-model")) is None
