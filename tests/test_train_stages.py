"""Multi-stage training (core.training --init-from) and what shipping does with it: the second
stage starts from the first stage's trained weights, its card lists every earlier stage, and a
card keeps the evaluations measured earlier only while the weights are the same bytes."""
import json

import pytest
from safetensors.torch import load_file
from tiny_model import build_training_env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return build_training_env(tmp_path_factory.mktemp("stages"))


def _train(env, out, monkeypatch, *extra):
    import torch

    from core.training import cli as train

    monkeypatch.setenv("QAX_DATA_DIR", str(env / "data"))
    with torch.random.fork_rng(devices=[]):
        rc = train.main(["--base", str(env / "base"), "--train", str(env / "train.json"), "--output", str(out),
                         "--batch-size", "2", "--max-length", "48", "--stride", "16", "--max-steps", "2",
                         "--cpu-bf16", "off", "--save-dtype", "float32", *extra])
    assert rc == 0
    return json.loads((out / "train_log.json").read_text())


def _weights(run):
    return load_file(str(run / "model" / "model.safetensors"))


def test_second_stage_starts_from_the_first(env, tmp_path, monkeypatch):
    stage1 = tmp_path / "s1"
    log1 = _train(env, stage1, monkeypatch, "--lr", "1e-2")
    # learning rate 0: AdamW moves nothing, so the second stage saves exactly what it loaded
    stage2 = tmp_path / "s2"
    log2 = _train(env, stage2, monkeypatch, "--init-from", str(stage1 / "model"), "--lr", "0", "--seed", "14")
    w0 = load_file(str(env / "base" / "model.safetensors"))
    w1, w2 = _weights(stage1), _weights(stage2)
    assert set(w1) == set(w2)
    assert all((w1[k] == w2[k]).all() for k in w1)
    assert not (w0["qa_outputs.weight"] == w1["qa_outputs.weight"]).all()  # stage 1 trained the head
    assert log2["base"] == str(env / "base")
    assert log2["init_from"]["path"] == str(stage1 / "model")
    assert log2["init_from"]["steps"] == log1["steps"] == 2
    assert "--lr 0.01" in log2["init_from"]["command"] and log2["init_from"]["earlier"] is None


def test_repeat_weights_a_source_up(env, tmp_path, monkeypatch):
    """--repeat FILE=K trains a source's questions K times per epoch (issue 31 weighted the SQuAD
    part of the mix up) and records it beside the source's count."""
    once = _train(env, tmp_path / "once", monkeypatch)
    thrice = _train(env, tmp_path / "thrice", monkeypatch, "--repeat", "train.json=3")
    name = str(env / "train.json")
    assert once["data_counts"][name]["repeated"] == 1 and thrice["data_counts"][name]["repeated"] == 3
    assert thrice["training_questions"] == 3 * once["training_questions"] > 0
    assert thrice["args"]["repeat"] == ["train.json=3"]


def test_card_lists_earlier_stages_and_drops_stale_evaluations(env, tmp_path, monkeypatch):
    from core.models.cards import write_card
    from core.models.ship import ship

    s1, s2 = tmp_path / "s1", tmp_path / "s2"
    _train(env, s1, monkeypatch)
    _train(env, s2, monkeypatch, "--init-from", str(s1 / "model"), "--seed", "14")
    dest = tmp_path / "models"
    target = ship(s1, "tiny", "tiny", [], dest=dest)
    measured = {"dataset": "xquad/xquad.en", "lang": "en", "n": 1, "exact_match": 100.0, "f1": 100.0,
                "ms_per_question": 1.0, "questions_per_second": 1.0, "date": "2026-11-22"}
    write_card(target, [measured])

    ship(s1, "tiny", "tiny", [], dest=dest)  # the same weights again: what was measured stays
    card = json.loads((target / "model_card.json").read_text())
    assert list(card["evaluations"]) == ["xquad/xquad.en"]
    assert "earlier_stages" not in card["training"]

    ship(s2, "tiny", "tiny", [], dest=dest)  # new weights: nothing measured yet
    card = json.loads((target / "model_card.json").read_text())
    assert "evaluations" not in card
    assert len(card["weights_sha256"]) == 64
    [stage] = card["training"]["earlier_stages"]
    assert stage.startswith("2 steps, 3 questions: python -m core.training --base ")
    assert stage.endswith(f"(weights then in {s1 / 'model'})")
    assert "--init-from" in card["training"]["command"]
    readme = (target / "README.md").read_text()
    assert "- earlier_stages:\n  1. 2 steps, 3 questions: python -m core.training" in readme

    # a third stage from the shipped two-stage model keeps the whole chain, oldest first
    s3 = tmp_path / "s3"
    _train(env, s3, monkeypatch, "--init-from", str(target), "--seed", "15")
    ship(s3, "tiny3", "tiny", [], dest=dest)
    first, second = json.loads((dest / "tiny3" / "model_card.json").read_text())["training"]["earlier_stages"]
    assert first == stage
    assert "--init-from" in second and second.endswith(f"(weights then in {target})")


def test_init_from_refuses_what_it_cannot_continue(env, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit, match="no config.json"):
        _train(env, tmp_path / "x", monkeypatch, "--init-from", str(tmp_path))
    with pytest.raises(SystemExit):
        _train(env, tmp_path / "y", monkeypatch, "--init-from", str(env / "base"), "--lora-rank", "4")
    assert "this folder is a full fine-tune" in capsys.readouterr().err


def _adapter_weights(run):
    return load_file(str(run / "adapter" / "adapter_model.safetensors"))


def test_lora_stage_continues_an_adapter(env, tmp_path, monkeypatch, capsys):
    """A LoRA run may start from an earlier LoRA adapter (MPNet trains in stages across CPU
    sessions): it loads the base, puts the adapter on it and trains that adapter further."""
    s1, s2 = tmp_path / "s1", tmp_path / "s2"
    _train(env, s1, monkeypatch, "--lora-rank", "4", "--lr", "1e-2")
    log2 = _train(env, s2, monkeypatch, "--init-from", str(s1 / "adapter"), "--lora-rank", "4", "--lr", "0")
    w1, w2 = _adapter_weights(s1), _adapter_weights(s2)
    assert set(w1) == set(w2) and any("lora_B" in k for k in w1)
    assert all((w1[k] == w2[k]).all() for k in w1)  # lr 0 saves exactly the adapter it loaded
    assert any(not (w1[k] == 0).all() for k in w1 if "lora_B" in k)  # stage 1 moved LoRA B off zero
    assert log2["format"] == "lora-adapter" and log2["lora"]["rank"] == 4
    config2 = json.loads((s2 / "adapter" / "adapter_config.json").read_text())
    assert config2["modules_to_save"] == ["qa_outputs"]  # not one more duplicate per stage
    assert log2["init_from"]["path"] == str(s1 / "adapter") and log2["init_from"]["steps"] == 2

    s3 = tmp_path / "s3"  # and with a learning rate it moves on from there
    _train(env, s3, monkeypatch, "--init-from", str(s1 / "adapter"), "--lora-rank", "4", "--lr", "1e-2")
    w3 = _adapter_weights(s3)
    assert any(not (w1[k] == w3[k]).all() for k in w1)

    with pytest.raises(SystemExit, match="rank 4"):
        _train(env, tmp_path / "x", monkeypatch, "--init-from", str(s1 / "adapter"), "--lora-rank", "8")
    with pytest.raises(SystemExit):
        _train(env, tmp_path / "y", monkeypatch, "--init-from", str(s1 / "adapter"))
    assert "continue it with --lora-rank" in capsys.readouterr().err
