"""Vocabulary extension for Chinese on an English vocabulary (core.training.vocab, core.training
--extend-vocab-min-count): the characters the tokenizer maps to [UNK] become tokens, the model
grows embedding rows to match, and the trained model saves and loads with them."""
import json

import pytest
from tiny_model import build_tiny_qa, squad_file

# Every CJK character and full-width mark below is outside the tiny model's vocabulary.
CONTEXTS = ["埃菲尔铁塔 在 paris ， 建于 1889 年 。", "柏林 是 germany 的 首都 。"]
QAS = [(0, "埃菲尔铁塔 建于 哪 年 ？", "1889"), (0, "埃菲尔铁塔 在 哪 ？", "paris"),
       (1, "germany 的 首都 是 什么 ？", "柏林")]


@pytest.fixture
def zh_env(tmp_path, monkeypatch):
    base = tmp_path / "base"
    build_tiny_qa(base)
    return base, _training_env(tmp_path, monkeypatch, squad_file(CONTEXTS, QAS, "z"),
                               "zh", squad_file(["一 二 三 。"], [(0, "什么 ？", "二")], "e"))


def _training_env(tmp_path, monkeypatch, train_data: dict, lang: str, eval_data: dict):
    """The training file, and a data directory holding one XQuAD-named eval set (the trainer
    checks training contexts against the eval sets, and refuses to run without any)."""
    train = tmp_path / "train.json"
    train.write_text(json.dumps(train_data, ensure_ascii=False))
    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    (data / "xquad" / f"xquad.{lang}.json").write_text(json.dumps(eval_data, ensure_ascii=False))
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    return train


def _run(base, train, out, *extra):
    import torch

    from core.training import cli as core_train

    with torch.random.fork_rng(devices=[]):
        return core_train.main(["--base", str(base), "--train", str(train), "--output", str(out),
                                "--batch-size", "2", "--max-length", "48", "--stride", "16",
                                "--max-steps", "2", "--cpu-bf16", "off", "--save-dtype", "float32", *extra])


def test_training_adds_unknown_characters_and_saves_them(zh_env, tmp_path):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    base, train = zh_env
    before = AutoTokenizer.from_pretrained(base)
    unknown = {ch for text in CONTEXTS + [q for _, q, _ in QAS] for ch in text if ord(ch) > 127}
    assert all(before(ch, add_special_tokens=False)["input_ids"] == [before.unk_token_id] for ch in unknown)

    out = tmp_path / "run"
    assert _run(base, train, out, "--extend-vocab-min-count", "1") == 0
    info = json.loads((out / "train_log.json").read_text())["vocabulary_extension"]
    assert info["added"] == len(unknown) == 21
    assert info["unk_share_after"] == 0.0
    # 18 of the 34 non-space context characters are CJK or full-width (hand-counted); the letters
    # of "germany" stay: the tiny vocabulary knows the word, though not each letter alone
    assert info["unk_share_before"] == round(18 / 34, 4)
    # the most frequent first: 埃菲尔铁塔 occurs 3 times (1 context, 2 questions)
    assert info["most_frequent"].startswith("埃")

    tok = AutoTokenizer.from_pretrained(out / "model")
    model = AutoModelForQuestionAnswering.from_pretrained(out / "model")
    assert model.get_input_embeddings().weight.shape[0] == len(tok) == len(before) + 21
    ids = tok("柏林", add_special_tokens=False)["input_ids"]
    assert len(ids) == 2 and tok.unk_token_id not in ids

    # shipping carries the added tokens and says so on the card
    from core.models.ship import ship

    target = ship(out, "tiny-zh", "tiny", [], dest=tmp_path / "shipped")
    card = json.loads((target / "model_card.json").read_text())
    assert card["training"]["vocabulary_extension"].startswith("21 characters")
    assert "52.9% -> 0.0%" in card["training"]["vocabulary_extension"]
    assert len(AutoTokenizer.from_pretrained(target)) == len(tok)


def test_same_data_adds_the_same_tokens(zh_env, tmp_path):
    """A resumed run must rebuild the identical vocabulary: the extension depends on the data only."""
    from transformers import AutoTokenizer

    base, train = zh_env
    for name in ("a", "b"):
        assert _run(base, train, tmp_path / name, "--extend-vocab-min-count", "2") == 0
    a = AutoTokenizer.from_pretrained(tmp_path / "a" / "model").get_vocab()
    b = AutoTokenizer.from_pretrained(tmp_path / "b" / "model").get_vocab()
    assert a == b
    # min count 2 keeps the characters seen in two texts or more (contexts and questions):
    # 埃菲尔铁塔 ？ (3x); 在 建于 年 。 是 的 首都 哪 (2x); not ， 柏林 什么 (1x)
    added = sorted(set(a) - set(AutoTokenizer.from_pretrained(base).get_vocab()))
    assert "".join(added) == "".join(sorted("埃菲尔铁塔？在建于年。是的首都哪"))


def test_lora_run_with_grown_vocabulary_ships_its_embeddings(zh_env, tmp_path, monkeypatch):
    """A LoRA run may grow the vocabulary: the adapter then trains and saves the whole input
    embedding matrix beside the LoRA matrices and the QA head, the registry grows the base to the
    adapter's tokenizer before loading it, and the merged model reads the new characters."""
    from safetensors import safe_open
    from transformers import AutoTokenizer

    from core.models import ship
    from core.qa import registry

    base, train = zh_env
    out = tmp_path / "run"
    assert _run(base, train, out, "--extend-vocab-min-count", "1", "--lora-rank", "4") == 0
    log = json.loads((out / "train_log.json").read_text())
    assert log["vocabulary_extension"]["added"] == 21
    assert log["lora"]["modules_to_save"] == ["qa_outputs", "word_embeddings"]
    tok = AutoTokenizer.from_pretrained(out / "adapter")
    base_rows = len(AutoTokenizer.from_pretrained(base))
    assert len(tok) == base_rows + 21
    with safe_open(str(out / "adapter" / "adapter_model.safetensors"), "pt") as f:
        [emb] = [k for k in f.keys() if "word_embeddings" in k]
        assert f.get_slice(emb).get_shape()[0] == base_rows + 21

    toml = tmp_path / "models.toml"
    monkeypatch.setenv("QAX_MODELS_TOML", str(toml))
    monkeypatch.setattr(registry, "_engines", None)   # a fresh engine cache
    assert ship.main(["--run", str(out), "--name", "tiny-zh-lora", "--description", "tiny adapter",
                      "--dest", str(tmp_path / "models"), "--register"]) == 0
    eng = registry.load_engine("tiny-zh-lora")
    assert eng.model.get_input_embeddings().weight.shape[0] == base_rows + 21
    ids = eng.tokenizer("柏林", add_special_tokens=False)["input_ids"]
    assert len(ids) == 2 and eng.tokenizer.unk_token_id not in ids
    assert eng.answer("germany 的 首都 是 什么 ？", CONTEXTS[1]).text
    # a further stage keeps the adapter's vocabulary: it may not grow it again
    with pytest.raises(SystemExit):
        _run(base, train, tmp_path / "s2", "--init-from", str(out / "adapter"), "--lora-rank", "4",
             "--extend-vocab-min-count", "1")
    assert _run(base, train, tmp_path / "s2", "--init-from", str(out / "adapter"), "--lora-rank", "4") == 0
    assert len(AutoTokenizer.from_pretrained(tmp_path / "s2" / "adapter")) == base_rows + 21


def test_a_further_stage_extends_a_trained_model(zh_env, tmp_path):
    """--init-from with --extend-vocab-min-count: a model trained on English QA gets the Chinese
    characters as a further stage; characters it already has are not added twice."""
    from transformers import AutoTokenizer

    base, train = zh_env
    assert _run(base, train, tmp_path / "s1") == 0  # a stage without extension
    assert _run(base, train, tmp_path / "s2", "--init-from", str(tmp_path / "s1" / "model"),
                "--extend-vocab-min-count", "2", "--embedding-lr", "0.05") == 0
    log = json.loads((tmp_path / "s2" / "train_log.json").read_text())
    assert log["vocabulary_extension"]["added"] == len("埃菲尔铁塔？在建于年。是的首都哪") == 16
    assert log["init_from"]["path"] == str(tmp_path / "s1" / "model")
    assert log["args"]["embedding_lr"] == 0.05
    from core.models.ship import ship

    card = json.loads((ship(tmp_path / "s2", "tiny-s2", "tiny", [], dest=tmp_path / "shipped")
                       / "model_card.json").read_text())["training"]
    assert card["embedding_learning_rate"] == 0.05 and card["learning_rate"] == 8e-5  # --lr, the default
    # a third stage from the extended model finds nothing new to add
    assert _run(base, train, tmp_path / "s3", "--init-from", str(tmp_path / "s2" / "model"),
                "--extend-vocab-min-count", "2") == 0
    log3 = json.loads((tmp_path / "s3" / "train_log.json").read_text())
    assert log3["vocabulary_extension"]["added"] == 0
    assert len(AutoTokenizer.from_pretrained(tmp_path / "s3" / "model")) == len(
        AutoTokenizer.from_pretrained(tmp_path / "s2" / "model"))


def test_embedding_lr_puts_the_embeddings_in_their_own_group():
    import torch

    from core.training.train import param_groups

    model = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 2))
    model.get_input_embeddings = lambda: model[0]
    plain = param_groups(model, 0.1, None)
    assert len(plain) == 1 and len(plain[0]["params"]) == 3 and plain[0]["lr"] == 0.1
    rest, emb = param_groups(model, 0.1, 0.5)
    assert emb["params"][0] is model[0].weight and emb["lr"] == 0.5
    assert [p.shape for p in rest["params"]] == [(2, 3), (2,)] and rest["lr"] == 0.1


def test_embedding_lr_refuses_lora(zh_env, tmp_path, capsys):
    base, train = zh_env
    with pytest.raises(SystemExit):
        _run(base, train, tmp_path / "x", "--embedding-lr", "0.01", "--lora-rank", "4")
    assert "--embedding-lr needs a full fine-tune" in capsys.readouterr().err


# -- whole German words on an English WordPiece vocabulary (--extend-vocab-words) ---------------

DE_PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "vor", "million", "jahr", "##en", "##e", "##aire",
             "wann", "war", "die", "grenze", "?", ".", "66", "der", "kreide"]
DE_CONTEXTS = ["die grenze war vor 66 Millionen Jahren .", "der kreide war vor 66 Millionen Jahren ."]
DE_QAS = [(0, "wann war die grenze ?", "vor 66 Millionen Jahren"), (1, "wann war der kreide ?", "66 Millionen")]


def _de_base(folder):
    import torch
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizerFast

    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(DE_PIECES)}, do_lower_case=True)
    torch.manual_seed(0)
    model = BertForQuestionAnswering(BertConfig(vocab_size=len(DE_PIECES), hidden_size=32, num_hidden_layers=2,
                                                num_attention_heads=2, intermediate_size=64,
                                                max_position_embeddings=128))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return tok, model


def test_whole_words_replace_their_pieces_and_start_as_their_mean(tmp_path):
    from core.training.vocab import add_whole_words

    tok, model = _de_base(tmp_path / "base")
    old = model.get_input_embeddings().weight.detach().clone()
    assert tok.tokenize("Millionen Jahren millionaire") == ["million", "##en", "jahr", "##en", "million", "##aire"]
    grown, added = add_whole_words(tok, model, ["millionen", "jahren", "millionen", "vor"])
    assert added == 2  # "vor" is in the vocabulary already, the repeated word counts once
    assert len(grown) == len(DE_PIECES) + 2 == model.get_input_embeddings().weight.shape[0]
    # whole words win; a word that only starts like one is cut as before (not so with add_tokens)
    assert grown.tokenize("Millionen Jahren millionaire") == ["millionen", "jahren", "million", "##aire"]
    emb = model.get_input_embeddings().weight.detach()
    million, en, jahr = (DE_PIECES.index(t) for t in ("million", "##en", "jahr"))
    assert (emb[len(DE_PIECES)] == (old[million] + old[en]) / 2).all()
    assert (emb[len(DE_PIECES) + 1] == (old[jahr] + old[en]) / 2).all()
    assert (emb[:len(DE_PIECES)] == old).all()  # the old rows are untouched
    # offsets still point into the original text (the engine's spans depend on them)
    enc = grown("vor 66 Millionen Jahren", add_special_tokens=False, return_offsets_mapping=True)
    assert enc["offset_mapping"] == [(0, 3), (4, 6), (7, 16), (17, 23)]


def test_training_adds_frequent_split_words_and_ships_them(tmp_path, monkeypatch):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    base = tmp_path / "base"
    _de_base(base)
    train = _training_env(tmp_path, monkeypatch, squad_file(DE_CONTEXTS, DE_QAS, "d"),
                          "de", squad_file(["eins zwei ."], [(0, "was ?", "zwei")], "e"))
    out = tmp_path / "run"
    assert _run(base, train, out, "--extend-vocab-words", "2") == 0
    info = json.loads((out / "train_log.json").read_text())["vocabulary_words"]
    # split words seen twice or more in the contexts and questions: millionen, jahren (2x each);
    # "kreide" and "grenze" are whole already
    assert info["added"] == 2 and info["most_frequent"] == ["jahren", "millionen"]
    # the contexts: 8 + 8 words, 10 + 10 tokens before, 8 + 8 after (hand-counted)
    assert (info["tokens_per_word_before"], info["tokens_per_word_after"]) == (20 / 16, 1.0)
    tok = AutoTokenizer.from_pretrained(out / "model")
    assert tok.tokenize("Millionen") == ["millionen"]
    assert AutoModelForQuestionAnswering.from_pretrained(out / "model").get_input_embeddings().weight.shape[0] \
        == len(tok) == len(DE_PIECES) + 2
    from core.models.ship import ship

    card = json.loads((ship(out, "tiny-de", "tiny", [], dest=tmp_path / "shipped")
                       / "model_card.json").read_text())["training"]
    assert card["vocabulary_words"].startswith("2 words")
    assert "1.250 -> 1.000" in card["vocabulary_words"]


def test_whole_words_refuse_a_further_lora_stage_and_other_vocabularies(tmp_path, capsys):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from core.training.vocab import add_whole_words

    bpe = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab={"a": 0}, merges=[])))
    with pytest.raises(ValueError, match="needs a WordPiece vocabulary, this tokenizer's is BPE"):
        add_whole_words(bpe, None, ["ab"])
    base = tmp_path / "base"
    _de_base(base)
    adapter = tmp_path / "adapter"  # a further LoRA stage keeps its adapter's vocabulary
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    with pytest.raises(SystemExit):
        _run(base, tmp_path / "none.json", tmp_path / "x", "--extend-vocab-words", "2", "--lora-rank", "4",
             "--init-from", str(adapter))
    assert "an --init-from adapter keeps the one it was trained with" in capsys.readouterr().err


def test_mlqa_trains_only_when_allowed_and_xquad_never(tmp_path, monkeypatch, capsys):
    """MLQA-de is the only German QA data with answers (issue 29 lets German models train on it);
    the trainer refuses it as an evaluation set unless the run says --allow-mlqa, and XQuAD
    stays refused even then."""
    base = tmp_path / "base"
    _de_base(base)
    _training_env(tmp_path, monkeypatch, {"version": "1.1", "data": []},
                  "de", squad_file(["eins zwei ."], [(0, "was ?", "zwei")], "e"))
    mlqa = tmp_path / "data" / "eval" / "mlqa" / "dev-context-de-question-de.json"
    mlqa.parent.mkdir(parents=True)
    mlqa.write_text(json.dumps(squad_file(DE_CONTEXTS, DE_QAS, "m")))
    assert _run(base, mlqa, tmp_path / "refused") == 2  # a one-line error, exit status 2
    assert "also occur in an evaluation set" in capsys.readouterr().err
    assert _run(base, mlqa, tmp_path / "run", "--allow-mlqa") == 0
    log = json.loads((tmp_path / "run" / "train_log.json").read_text())
    assert log["training_questions"] == 2 and log["args"]["allow_mlqa"] is True
    xquad = tmp_path / "data" / "xquad" / "xquad.de.json"
    assert _run(base, xquad, tmp_path / "never", "--allow-mlqa") == 2
    assert "none of the --train files is an MLQA file" in capsys.readouterr().err
