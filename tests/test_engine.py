"""The QA engine: windows, decoding, batching, input validation, the registry."""
import numpy as np
import pytest

from core.qa.decode import best_spans, window_candidates
from core.qa.engine import EngineSettings, QAEngine, QAInputError
from core.qa.features import build_windows


def test_window_candidates_respect_context_and_length():
    # tokens: [CLS] q [SEP] c0 c1 c2 [SEP]; context char offsets for c0..c2
    offsets = [None, None, None, (0, 3), (4, 10), (11, 15), None]
    start = np.array([9.0, 0, 0, 1.0, 5.0, 0.0, 9.0])  # [CLS] and final [SEP] have high logits
    end = np.array([9.0, 0, 0, 0.0, 1.0, 5.0, 9.0])
    cands = window_candidates(start, end, offsets, top_k=3, max_answer_tokens=30)
    spans = best_spans("The Eiffel gate", cands, n_best=3)
    assert spans[0].text == "Eiffel gate" and (spans[0].start, spans[0].end) == (4, 15)
    # non-context tokens never appear; every span is a real substring
    for s in spans:
        assert "The Eiffel gate"[s.start : s.end] == s.text
    # softmax over the 3 context tokens: p(start=c1) * p(end=c2)
    ps = np.exp([1.0, 5.0, 0.0]) / np.exp([1.0, 5.0, 0.0]).sum()
    pe = np.exp([0.0, 1.0, 5.0]) / np.exp([0.0, 1.0, 5.0]).sum()
    assert spans[0].score == pytest.approx(ps[1] * pe[2])
    # capping answer length to 1 token forbids the two-token span
    capped = best_spans("The Eiffel gate", window_candidates(start, end, offsets, 3, 1), 3)
    assert all(s.text.count(" ") == 0 for s in capped)


def test_best_spans_dedupes_across_windows():
    spans = best_spans("abc def", [(0.2, 0, 3), (0.5, 0, 3), (0.1, 4, 7)], n_best=5)
    assert [(s.text, s.score) for s in spans] == [("abc", 0.5), ("def", 0.1)]


def test_windows_overlap_and_answer_positions(tiny_qa_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_qa_dir)
    context = " ".join(["the city of paris"] * 30) + " the eiffel tower was completed in 1889 ."
    start = context.index("1889")
    wins = build_windows(tok, ["when was the tower completed ?"], [context], max_length=48, stride=16,
                         answers=[(start, start + 4)])
    assert len(wins) > 3
    # consecutive windows overlap by `stride` context tokens
    c0 = [o for o in wins[0].offsets if o is not None]
    c1 = [o for o in wins[1].offsets if o is not None]
    assert c1[0] < c0[-1]
    holding = [w for w in wins if w.start_position > 0]
    assert holding, "the answer must be inside at least one window"
    for w in holding:
        a, b = w.offsets[w.start_position][0], w.offsets[w.end_position][1]
        assert context[a:b] == "1889"
    # windows without the answer point at [CLS]
    assert all((w.start_position, w.end_position) == (0, 0) for w in wins if w not in holding)


@pytest.fixture(scope="module")
def tiny_engine(tiny_qa_dir):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    return QAEngine(
        AutoModelForQuestionAnswering.from_pretrained(tiny_qa_dir),
        AutoTokenizer.from_pretrained(tiny_qa_dir),
        EngineSettings(max_length=64, stride=16, batch_size=4),
    )


def test_batched_equals_one_at_a_time(tiny_engine):
    qs = ["what is the capital of france ?", "when was the eiffel tower built ?", "who", "how many people ?"]
    cs = [
        "paris is the capital of france .",
        " ".join(["the tower of london was built in 1063 ."] * 12),
        "doctor who has been televised in hdtv since 2009 .",
        "the city has a population of one two three people .",
    ]
    batched = tiny_engine.predict(qs, cs, n_best=3)
    single = [tiny_engine.predict([q], [c], n_best=3)[0] for q, c in zip(qs, cs)]
    for b, s, c in zip(batched, single, cs):
        assert [(x.start, x.end) for x in b.nbest] == [(x.start, x.end) for x in s.nbest]
        assert [x.score for x in b.nbest] == pytest.approx([x.score for x in s.nbest], rel=1e-4)
        for x in b.nbest:
            assert c[x.start : x.end] == x.text and x.text


def test_long_context_spans_stay_in_bounds(tiny_engine):
    context = "paris is the capital of france . " * 60  # far beyond the 64-token window
    pred = tiny_engine.answer("what is the capital ?", context, n_best=5)
    assert len(pred.nbest) == 5
    for s in pred.nbest:
        assert 0 <= s.start < s.end <= len(context) and context[s.start : s.end] == s.text


def test_bad_input_is_refused_clearly(tiny_engine):
    with pytest.raises(QAInputError, match="question is empty"):
        tiny_engine.answer("   ", "paris .")
    with pytest.raises(QAInputError, match="context is empty"):
        tiny_engine.answer("what ?", "")
    with pytest.raises(QAInputError, match="characters long"):
        tiny_engine.answer("what " * 1000, "paris .")
    out = tiny_engine.predict(["", "what is paris ?"], ["paris .", "paris is a city ."], skip_invalid=True)
    assert out[0].nbest == [] and out[1].text


def test_registry_loads_local_and_explains_hub_failure(tiny_registry, monkeypatch):
    from core.qa import registry

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    names = [m.name for m in registry.installed_models()]
    assert names == ["tiny-a", "tiny-b"]
    eng = registry.load_engine("tiny-a")
    assert registry.load_engine("tiny-a") is eng  # cached
    assert eng.answer("what is the capital ?", "paris is the capital .").text
    with pytest.raises(registry.ModelLoadError, match="path = "):
        registry.load_engine("hub-model")
    with pytest.raises(registry.ModelLoadError, match="no model named"):
        registry.load_engine("nope")


def test_registry_rejects_malformed_toml(tmp_path):
    from core.qa import registry

    bad = tmp_path / "m.toml"
    cases = [
        ('[[model]]\nname = "x"\n', "exactly one of 'path' or 'hf_id'"),
        ("[[model]\n", "not valid TOML"),
        # a LoRA entry: 'adapter' needs 'base', and stands instead of 'path' / 'hf_id'
        ('[[model]]\nname = "x"\nadapter = "a"\n', "'adapter' needs it"),
        # 'base' goes with an adapter or a folder of weights over the base, never with a hub id
        ('[[model]]\nname = "x"\nhf_id = "o/n"\nbase = "e5"\n', "'base' goes with 'adapter'"),
        ('[[model]]\nname = "x"\npath = "p"\nadapter = "a"\nbase = "minilm"\n', "exactly one of"),
        ('[[model]]\nname = "x"\npath = "p"\npreselect = "no"\n', "'preselect' is true or false"),
    ]
    for text, message in cases:
        bad.write_text(text)
        with pytest.raises(registry.ModelLoadError, match=message):
            registry.load_registry(bad)


def test_batch_size_defaults_by_device_and_does_not_change_answers(tiny_qa_dir):
    """8 windows per pass on CPU (faster there than 32: see EngineSettings), the same answers at any size."""
    from core.qa import registry
    from core.qa.engine import EngineSettings, QAEngine

    model, tok = registry.load_model_and_tokenizer(registry.ModelEntry(name="t", path=str(tiny_qa_dir)))
    eng = QAEngine(model, tok, EngineSettings(max_length=64, stride=16), device="cpu")
    assert eng.settings.batch_size == 8
    ctx = " ".join(f"Item {i} is made of material number {i * 7}." for i in range(40))   # several windows
    qs = [f"What is item {i} made of?" for i in range(12)]
    at_default = [p.nbest for p in eng.predict(qs, [ctx] * len(qs))]
    eng.settings.batch_size = 1
    one_by_one = [p.nbest for p in eng.predict(qs, [ctx] * len(qs))]
    assert [[s.text for s in n] for n in at_default] == [[s.text for s in n] for n in one_by_one]
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        QAEngine(model, tok, EngineSettings(batch_size=0), device="cpu")
