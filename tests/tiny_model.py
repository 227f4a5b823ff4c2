"""A tiny randomly-initialised BERT QA model and tokenizer, built in-process for tests.

Its answers are meaningless but deterministic (fixed seed), which is what engine, storage and
UI tests need; tests of real answers use the shipped models.
"""
from __future__ import annotations

import json
from pathlib import Path

WORDS = (
    "the a an of in on at to is was were be by for with and or what which who when where why how "
    "many much year city river tower paris france london england germany berlin built completed "
    "eiffel capital largest name called first last people population 1889 1963 2009 one two three "
    "four five doctor television hdtv since has been televised series began ? . , ' - "
).split()


def build_tiny_qa(folder: Path, seed: int = 0):
    import torch
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # transformers 5 takes the vocabulary itself (vocab=...); a vocab_file argument is ignored
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = BertForQuestionAnswering(cfg)
    model.eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return model, tok


def squad_file(contexts: list[str], qas: list[tuple[int, str, str]], id_prefix: str = "q") -> dict:
    """A SQuAD v1.1 dict from contexts and (context index, question, answer) triples; each
    answer's offset is its first occurrence in its context."""
    paragraphs: dict[int, list] = {}
    for i, (c, q, a) in enumerate(qas):
        paragraphs.setdefault(c, []).append(
            {"id": f"{id_prefix}{i}", "question": q, "answers": [{"text": a, "answer_start": contexts[c].index(a)}]})
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": contexts[c], "qas": items} for c, items in paragraphs.items()]}]}


TRAIN_CONTEXTS = ["the eiffel tower in paris was built in 1889 .", "berlin is the capital of germany ."]
TRAIN_QAS = [(0, "when was the eiffel tower built ?", "1889"), (0, "where is the eiffel tower ?", "paris"),
             (1, "what is the capital of germany ?", "berlin")]


def build_training_env(root: Path) -> Path:
    """``root`` with a tiny base model (``base/``), a three-question training file (``train.json``)
    and a data folder (``data/``, for QAX_DATA_DIR) whose only eval set shares no context with it:
    the trainer checks training contexts against the eval sets."""
    root = Path(root)
    build_tiny_qa(root / "base")
    (root / "train.json").write_text(json.dumps(squad_file(TRAIN_CONTEXTS, TRAIN_QAS)))
    xquad = root / "data" / "xquad"
    xquad.mkdir(parents=True)
    (xquad / "xquad.en.json").write_text(json.dumps(squad_file(["one two three ."], [(0, "what ?", "two")], "e")))
    return root
