"""Bad input at the engine's boundary (issue 23, item 6 and 9): settings are checked whenever they
are set, n_best >= 1, no answer made of punctuation, a sweep's cache key follows the settings,
core.models.evaluate counts what it skips, and a planted checkpoint is refused before it runs code."""
import dataclasses
import json

import pytest

from core.datasets import Dataset, demo_dataset
from core.qa.engine import EngineSettings, QAEngine, QAInputError, SettingsError
from core.types import Answer, QAExample


@pytest.fixture(scope="module")
def engine(tiny_qa_dir):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    return QAEngine(AutoModelForQuestionAnswering.from_pretrained(tiny_qa_dir),
                    AutoTokenizer.from_pretrained(tiny_qa_dir), EngineSettings(threads=1), device="cpu")


CONTEXT = "The eiffel tower was completed in 1889 . it is in paris , the capital of france ."


# ------------------------------------------------------------------------------- settings


@pytest.mark.parametrize("field, value, message", [
    ("batch_size", -1, "batch_size must be at least 1, got -1"),
    ("batch_size", 0, "batch_size must be at least 1, got 0"),
    ("batch_size", True, "batch_size must be a whole number, got True"),
    ("max_answer_tokens", 0, "max_answer_tokens must be at least 1, got 0"),
    ("top_k", 2.5, "top_k must be a whole number, got 2.5"),
    ("threads", -2, "threads must be at least 1, got -2"),
    ("max_length", 8, "max_length must be at least 32, got 8"),
    ("stride", -1, "stride must be at least 0, got -1"),
])
def test_a_bad_setting_is_refused_wherever_it_is_set(engine, field, value, message):
    with pytest.raises(SettingsError, match=f"^{message}$"):
        EngineSettings(**{field: value})
    with pytest.raises(SettingsError, match=f"^{message}$"):
        dataclasses.replace(EngineSettings(), **{field: value})
    before = getattr(engine.settings, field)
    with pytest.raises(SettingsError, match=f"^{message}$"):
        setattr(engine.settings, field, value)  # after construction too: the old value stays
    assert getattr(engine.settings, field) == before


def test_batch_size_minus_one_set_later_never_gives_empty_answers(engine):
    """Before: ``engine.settings.batch_size = -1`` (what core.sweeps did with --batch-size -1) ran
    no forward pass at all and every prediction came back empty."""
    with pytest.raises(SettingsError):
        engine.settings.batch_size = -1
    pred = engine.answer("when was the eiffel tower completed ?", CONTEXT, n_best=1)
    assert pred.text and pred.text in CONTEXT


@pytest.mark.parametrize("n_best", [0, -1, 1.5])
def test_n_best_below_one_is_an_error_not_zero_or_all_spans(engine, n_best):
    # before: n_best=0 returned no answer, n_best=-1 every span but the last (77 of them)
    with pytest.raises(SettingsError, match="n_best must"):
        engine.predict(["where is the tower ?"], [CONTEXT], n_best=n_best)
    from core.qa.decode import best_spans

    with pytest.raises(ValueError, match="n_best must be at least 1"):
        best_spans("abc def", [(0.5, 0, 3)], n_best=n_best)


def test_n_best_one_and_more(engine):
    assert len(engine.answer("where is the tower ?", CONTEXT, n_best=1).nbest) == 1
    assert 1 < len(engine.answer("where is the tower ?", CONTEXT, n_best=5).nbest) <= 5


# -------------------------------------------------------------------- answers need a word


@pytest.mark.parametrize("context", ["? ...", "!!! ,,, ---", "。，！？", " - ' . "])
def test_a_context_without_a_word_gets_no_answer(engine, context):
    with pytest.raises(QAInputError, match="no word"):
        engine.answer("what is it ?", context)
    assert engine.predict(["what is it ?"], [context], skip_invalid=True)[0].text == ""


def test_chinese_characters_are_words(engine):
    pred = engine.answer("what ?", "埃菲尔铁塔在巴黎。")
    assert pred.text and any("\u4e00" <= ch <= "\u9fff" for ch in pred.text)


def test_the_decoder_skips_punctuation_spans_for_the_best_word_span():
    from core.qa.decode import best_spans

    context = "Paris , France ."
    # (score, start, end): the top two candidates are "," and " ." spans; "Paris" is third
    spans = best_spans(context, [(0.9, 6, 7), (0.8, 14, 16), (0.3, 0, 5), (0.2, 8, 14)], n_best=5)
    assert [s.text for s in spans] == ["Paris", "France"]


def test_long_question_in_a_short_window_is_cut_not_a_tokenizer_panic(engine):
    """max_length 128 with stride 64 left a 64-token question 61 context tokens, fewer than the
    stride: the Rust tokenizer panicked (PanicException, not even an Exception)."""
    e = QAEngine(engine.model, engine.tokenizer, EngineSettings(max_length=128, stride=64, threads=1), device="cpu")
    long_q = " ".join(["paris"] * 70)
    context = " ".join(["the city of paris"] * 40)
    assert e.answer(long_q, context).text
    e.settings.max_length, e.settings.stride = 64, 16  # set later: a 64-token question no longer fits
    assert e.answer(long_q, context).text


# ------------------------------------------------------------------------- the cache key


def test_fingerprint_follows_settings_changed_after_the_first_call(engine):
    """Before: the fingerprint was memoised per engine object, so a setting changed later (a
    page's max_answer_tokens) kept keying the old answers in the prediction cache."""
    from core.sweeps.keys import engine_fingerprint

    e = QAEngine(engine.model, engine.tokenizer, EngineSettings(threads=1), device="cpu")
    first = engine_fingerprint(e)
    e.settings.max_answer_tokens = 3
    changed = engine_fingerprint(e)
    assert changed != first
    fresh = QAEngine(engine.model, engine.tokenizer, EngineSettings(threads=1, max_answer_tokens=3), device="cpu")
    assert engine_fingerprint(fresh) == changed
    e.settings.batch_size = 1  # speed only: the same answers, so the same key
    assert engine_fingerprint(e) == changed
    e.settings.max_answer_tokens = 30
    assert engine_fingerprint(e) == first


def test_default_settings_keep_the_fingerprint_of_stored_sweeps(engine):
    """Keys of stored sweeps keep their meaning: the settings string hashed after the weights
    is the one hashed before (max_length:stride:max_answer_tokens:top_k)."""
    from core.sweeps.keys import engine_fingerprint

    e = QAEngine(engine.model, engine.tokenizer, EngineSettings(threads=1), device="cpu")
    h = e._hash_weights_and_tokenizer()
    h.update(b"128:64:30:20")  # the tiny model's 128 positions cut max_length 384 and stride 128
    assert engine_fingerprint(e) == h.hexdigest()[:20]


# ----------------------------------------------------------------------- evaluate's skips


def test_evaluate_counts_unanswerable_and_empty_questions_instead_of_scoring_them(engine):
    from core.models.evaluate import evaluate

    good = [e for e in demo_dataset("en").examples[:3]]
    extra = [
        QAExample("imp1", "Who built the moon?", good[0].context, (), is_impossible=True),
        QAExample("imp2", "Who sold it?", good[0].context, (), is_impossible=True),
        QAExample("empty", "   ", good[1].context, good[1].answers),
        QAExample("punct", "What?", "? ...", (Answer("?", 0),)),
    ]
    r = evaluate(engine, Dataset(name="squad2-like", lang="en", examples=good + extra), per_question=True)
    assert r["n"] == 3 and set(r["per_question_f1"]) == {e.id for e in good}
    assert r["skipped"] == {"unanswerable (SQuAD 2.0 is_impossible)": 2, "empty question": 1,
                            "context without a word": 1}
    with pytest.raises(ValueError, match="no question can be scored.*2 unanswerable"):
        evaluate(engine, Dataset(name="all-impossible", lang="en", examples=extra[:2]))


# --------------------------------------------------------------------------- checkpoints


class _Planted:
    """Pickles as a call that writes a file: what a hostile checkpoint.pt would run."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_a_planted_checkpoint_is_refused_before_its_code_runs(tmp_path):
    import torch

    from core.training.train import CheckpointError, load_checkpoint

    marker = tmp_path / "pwned.txt"
    ckpt = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "opt": {}, "sched": {}, "step": 1, "log": {}, "lora": None,
                "rng": {"torch": _Planted(marker)}}, ckpt)
    with pytest.raises(CheckpointError, match="more than tensors and plain data"):
        load_checkpoint(ckpt, "cpu")
    assert not marker.exists()


def test_what_train_saves_loads_with_weights_only(tmp_path):
    """The state core.training saves (model, AdamW, LambdaLR, step, log, LoRA settings, RNG state)
    is tensors and plain data: it loads with weights_only=True and restores the RNG exactly."""
    import torch

    from core.training.train import CheckpointError, load_checkpoint

    m = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW([{"params": m.parameters(), "lr": 1e-3}], weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
    m(torch.randn(2, 3)).sum().backward()
    opt.step()
    sched.step()
    rng = torch.get_rng_state()
    expected = torch.rand(3)
    torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": 1,
                "log": {"losses": [[1, 0.5]]}, "lora": {"rank": 4, "target_modules": ["query"]},
                "rng": {"torch": rng, "cuda": None}}, tmp_path / "checkpoint.pt")
    state = load_checkpoint(tmp_path / "checkpoint.pt", "cpu")
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    torch.set_rng_state(state["rng"]["torch"])
    assert torch.equal(torch.rand(3), expected) and state["step"] == 1
    (tmp_path / "other.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "other.pt", "cpu")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a core.training checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt", "cpu")


def test_no_torch_load_with_weights_only_false_in_the_code():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = [str(p.relative_to(root)) for p in (root / "core").rglob("*.py")
                 if "weights_only=False" in p.read_text(encoding="utf-8")]
    assert offenders == []


# ------------------------------------------------------------------------------ doctests


def test_json_errors_are_expected_errors():
    from core.cli import is_expected, one_line

    try:
        json.loads("{")
    except ValueError as e:
        assert is_expected(e) and "Expecting property name" in one_line(e)


def test_fingerprint_does_not_depend_on_what_the_engine_answered_before(tiny_registry, monkeypatch):
    """A fast tokenizer rewrites its truncation state when called: the fingerprint hashes the
    tokenizer as loaded, so an engine that already answered (the app's, shared by the pages)
    and a fresh one (the CLI's) key the same sweep and the same cached predictions."""
    from core.qa import registry
    from core.sweeps.keys import engine_fingerprint

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    used = registry.load_engine("tiny-a")
    used.answer("When was it first lit?", "The lamp was first lit in 1871 by the keeper. " * 40)
    # what another engine's call on a shared tokenizer, or a call with other settings, leaves
    used.tokenizer.backend_tokenizer.enable_truncation(max_length=77, stride=11)
    assert engine_fingerprint(used) == engine_fingerprint(registry.load_engine("tiny-a"))
