"""Consistency distillation (core.training.distill, core.training --distill-weight): the teacher's logits on
the clean question land on the same context tokens of the perturbed question's window, and a run
with distillation trains on exactly the perturbed windows that hold the answer."""
import json

import pytest
from tiny_model import TRAIN_CONTEXTS, build_training_env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return build_training_env(tmp_path_factory.mktemp("distill"))


def test_teacher_logits_follow_the_context_tokens_into_the_noisy_window(env):
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from core.qa.features import build_windows
    from core.training.distill import EXCLUDED, align_to_window, teacher_logits_by_char

    tok = AutoTokenizer.from_pretrained(env / "base")
    model = AutoModelForQuestionAnswering.from_pretrained(env / "base")
    context = TRAIN_CONTEXTS[0]
    clean, noisy = "when was the eiffel tower built ?", "when was it built"   # 3 tokens shorter
    by_char = teacher_logits_by_char(model, tok, [clean], [context], max_length=48, stride=16)[0]
    (clean_w,) = build_windows(tok, [clean], [context], max_length=48, stride=16)
    (noisy_w,) = build_windows(tok, [noisy], [context], max_length=48, stride=16)
    with torch.no_grad():
        ref = model(input_ids=torch.tensor([clean_w.input_ids]),
                    **{k: torch.tensor([v]) for k, v in clean_w.extra.items()})
    start, end = align_to_window(noisy_w, by_char)
    clean_ctx = [i for i, o in enumerate(clean_w.offsets) if o is not None]
    noisy_ctx = [i for i, o in enumerate(noisy_w.offsets) if o is not None]
    assert len(clean_ctx) == len(noisy_ctx) == 10 and noisy_ctx[0] == clean_ctx[0] - 3
    for ci, ni in zip(clean_ctx, noisy_ctx):
        assert start[ni] == pytest.approx(float(ref.start_logits[0, ci]), abs=1e-5)
        assert end[ni] == pytest.approx(float(ref.end_logits[0, ci]), abs=1e-5)
    assert all(start[i] == EXCLUDED for i, o in enumerate(noisy_w.offsets) if o is None)


def _train(env, out, monkeypatch, *extra):
    import torch

    from core.training import cli as train

    monkeypatch.setenv("QAX_DATA_DIR", str(env / "data"))
    with torch.random.fork_rng(devices=[]):
        rc = train.main(["--base", str(env / "base"), "--train", str(env / "train.json"), "--output", str(out),
                         "--batch-size", "6", "--max-length", "48", "--stride", "16", "--max-steps", "2",
                         "--cpu-bf16", "off", "--save-dtype", "float32", "--lr", "1e-2", *extra])
    assert rc == 0
    return json.loads((out / "train_log.json").read_text())


def test_distilled_run_targets_every_perturbed_window(env, tmp_path, monkeypatch):
    log = _train(env, tmp_path / "d", monkeypatch, "--augment-share", "1.0", "--augment", "drop_punct_Q",
                 "--distill-weight", "0.5", "--distill-temperature", "2")
    # three questions, each copied without punctuation; every context fits one 48-token window
    assert log["training_questions"] == 6 and log["windows"] == 6
    d = log["distillation"]
    assert d["windows"] == 3 and d["weight"] == 0.5 and d["temperature"] == 2.0
    assert d["teacher"] == str(env / "base")
    assert d["kl_mean_last_100"] > 0   # a random tiny model answers the two wordings differently
    plain = _train(env, tmp_path / "p", monkeypatch, "--augment-share", "1.0", "--augment", "drop_punct_Q")
    assert plain["distillation"] is None
    assert [s for s, _ in plain["losses"]] == [1, 2] and plain["losses"] != log["losses"]


def test_distillation_needs_augmentation(env, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit):
        _train(env, tmp_path / "x", monkeypatch, "--distill-weight", "0.5")
    assert "--distill-weight needs --augment-share" in capsys.readouterr().err
