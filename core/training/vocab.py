"""Extend an encoder's vocabulary with the characters it cannot represent.

The English encoders that ship on PyPI (MiniLM, MPNet: uncased BERT-style vocabularies) map about
half of the characters of Chinese text to [UNK]; a QA model trained on top of that cannot tell
most Chinese words apart. Adding each frequent unknown character as a token of its own (Chinese
is read character by character anyway, as BERT's tokenizer splits CJK text) and giving it a new
embedding row lets fine-tuning learn those characters.

New rows start from the mean and covariance of the existing embeddings (transformers'
``resize_token_embeddings`` default), so they begin as "some ordinary token", not as noise.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from core.types import QAExample


def unknown_characters(tokenizer, texts: Iterable[str], min_count: int) -> list[tuple[str, int]]:
    """Characters of ``texts`` that the tokenizer turns into [UNK] when they stand alone, seen at
    least ``min_count`` times, most frequent first (ties by code point, so the list is a function
    of the texts only).

    >>> from transformers import BertTokenizerFast
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"]
    >>> tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)})
    >>> unknown_characters(tok, ["the 猫 猫 狗", "猫"], min_count=2)
    [('猫', 3)]
    """
    unk = tokenizer.unk_token_id
    # A character that some vocabulary entry contains is not added, even if it is unknown on its
    # own: an added token is matched anywhere, so it would split the words the vocabulary knows.
    # (A real WordPiece vocabulary holds every character it uses as a token of its own, so this
    # only leaves out characters whose words already tokenise.)
    in_vocab = {ch for token in tokenizer.get_vocab() for ch in token.removeprefix("##")}
    counts = Counter(ch for text in texts for ch in text if not ch.isspace())
    found = []
    for ch, n in counts.items():
        if n < min_count or ch in in_vocab:
            continue
        if tokenizer(ch, add_special_tokens=False)["input_ids"] == [unk]:
            found.append((ch, n))
    return sorted(found, key=lambda cn: (-cn[1], cn[0]))


def extend_vocabulary(tokenizer, model, characters: list[str]) -> int:
    """Add ``characters`` as tokens and grow the model's input embeddings to match.
    Returns how many tokens were added (characters the tokenizer already has are skipped)."""
    added = tokenizer.add_tokens(list(characters))
    if added:
        model.resize_token_embeddings(len(tokenizer))
    return added


def unk_share(tokenizer, texts: Iterable[str]) -> float:
    """The share of non-space characters that end up inside an [UNK] token.

    >>> from transformers import BertTokenizerFast
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"]
    >>> unk_share(BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}), ["the 猫"])
    0.25
    """
    unk, covered, total = tokenizer.unk_token_id, 0, 0
    for text in texts:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        for tid, (s, e) in zip(enc["input_ids"], enc["offset_mapping"]):
            if tid == unk:
                covered += sum(1 for ch in text[s:e] if not ch.isspace())
        total += sum(1 for ch in text if not ch.isspace())
    return covered / total if total else 0.0


def extend_vocab_for(tok, model, examples: list[QAExample], min_count: int) -> dict:
    """Add the frequent [UNK] characters of the training texts to ``tok`` and ``model``
    (this module); a pure function of the examples, so a resumed run adds the same tokens."""
    contexts = sorted({e.context for e in examples})
    texts = contexts + [e.question for e in examples]
    before = unk_share(tok, contexts)
    chars = unknown_characters(tok, texts, min_count)
    added = extend_vocabulary(tok, model, [c for c, _ in chars])
    return {"min_count": min_count, "added": added, "unk_share_before": round(before, 4),
            "unk_share_after": round(unk_share(tok, contexts), 4),
            "most_frequent": "".join(c for c, _ in chars[:50])}
