"""Extend an encoder's vocabulary: the characters it cannot represent, and the words it cuts up.

The English encoders that ship on PyPI (MiniLM, MPNet: uncased BERT-style vocabularies) map about
half of the characters of Chinese text to [UNK]; a QA model trained on top of that cannot tell
most Chinese words apart. Adding each frequent unknown character as a token of its own (Chinese
is read character by character anyway, as BERT's tokenizer splits CJK text) and giving it a new
embedding row lets fine-tuning learn those characters.

New rows start from the mean and covariance of the existing embeddings (transformers'
``resize_token_embeddings`` default), so they begin as "some ordinary token", not as noise.

German on an English vocabulary has the opposite problem: every character is known, but frequent
words are cut into pieces ("millionen" -> "million ##en", "gemeinsamen" -> "gemeinsam ##en" or
worse), so a window holds less text and an answer can end inside a word. :func:`split_words` and
:func:`add_whole_words` add the frequent ones as whole WordPiece entries, each starting as the
mean of the embeddings of the pieces it replaces (it starts out meaning what its pieces meant).
"""
from __future__ import annotations

import json
import tempfile
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
    Returns how many tokens were added (characters the tokenizer already has are skipped).

    Each is matched in the raw text (``normalized=False``): matched after BERT's normalizer, which
    pads every CJK character with spaces, a token's text would be " 球 ", and a post-processor
    that trims offsets (MPNet's and RoBERTa's) then moves its span one character right at the
    start and one left at the end, so answers were cut by a character at each side.

    >>> from transformers import AutoTokenizer
    >>> from core.qa.bases import resolve_base_path
    >>> tok = AutoTokenizer.from_pretrained(resolve_base_path("mpnet"))
    >>> class Grows:
    ...     def resize_token_embeddings(self, n): pass
    >>> extend_vocabulary(tok, Grows(), ["匹", "兹"])
    2
    >>> tok("匹兹堡", add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    [(0, 1), (1, 2), (2, 3)]
    """
    from tokenizers import AddedToken

    added = tokenizer.add_tokens([AddedToken(c, normalized=False) for c in characters])
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


def split_words(tokenizer, texts: Iterable[str], min_count: int, min_pieces: int = 2) -> list[tuple[str, int]]:
    """Words of ``texts`` (as the tokenizer normalises and pre-splits them: lower-cased, accents
    stripped for an uncased vocabulary) that its vocabulary cuts into at least ``min_pieces``
    pieces, seen at least ``min_count`` times, most frequent first (ties alphabetically, so the
    list is a function of the texts only). Words without a letter (numbers) are left as they are.

    >>> from transformers import BertTokenizerFast
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "vor", "million", "jahr", "##en", "##e"]
    >>> tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    >>> split_words(tok, ["vor 66 Millionen Jahren", "Millionen Jahre", "millionen"], min_count=2)
    [('millionen', 3)]
    """
    counts: Counter = Counter()
    for text in texts:
        counts.update(w for w in words_of(tokenizer, text) if any(ch.isalpha() for ch in w))
    model = tokenizer.backend_tokenizer.model
    found = [(w, n) for w, n in counts.items() if n >= min_count and len(model.tokenize(w)) >= min_pieces]
    return sorted(found, key=lambda wn: (-wn[1], wn[0]))


def words_of(tokenizer, text: str) -> list[str]:
    """``text``'s words as the tokenizer sees them before WordPiece: normalised, then pre-split."""
    backend = tokenizer.backend_tokenizer
    norm = backend.normalizer.normalize_str(text) if backend.normalizer else text
    return [w for w, _ in backend.pre_tokenizer.pre_tokenize_str(norm)]


def add_whole_words(tokenizer, model, words: list[str]):
    """Add ``words`` to a WordPiece vocabulary as word-initial entries (WordPiece matches the
    longest entry first, so the whole word then wins over its pieces), grow the model's input
    embeddings, and start each new row as the mean of its old pieces' rows.
    Returns ``(new tokenizer, number added)``; words already in the vocabulary are skipped.

    Entries go into the WordPiece model itself, not ``add_tokens``: an added token is matched
    anywhere in the text, so "million" added that way would also cut "millionaire".
    """
    import torch
    from transformers import AutoTokenizer

    state = json.loads(tokenizer.backend_tokenizer.to_str())
    if state["model"]["type"] != "WordPiece":
        raise ValueError(f"adding whole words needs a WordPiece vocabulary, this tokenizer's is "
                         f"{state['model']['type']}")
    vocab = state["model"]["vocab"]
    new = [w for w in dict.fromkeys(words) if w not in vocab]
    if not new:
        return tokenizer, 0
    pieces = [[t.id for t in tokenizer.backend_tokenizer.model.tokenize(w)] for w in new]
    first = len(tokenizer)
    for i, w in enumerate(new):
        vocab[w] = first + i
    with tempfile.TemporaryDirectory() as tmp:  # the public way to rebuild the fast tokenizer
        tokenizer.save_pretrained(tmp)
        with open(f"{tmp}/tokenizer.json", "w", encoding="utf-8") as f:
            json.dump(state, f, ensure_ascii=False)
        grown = AutoTokenizer.from_pretrained(tmp)
    if len(grown) != first + len(new):
        raise RuntimeError(f"the rebuilt tokenizer has {len(grown)} tokens, expected {first + len(new)}")
    old = model.get_input_embeddings().weight.detach().clone()
    model.resize_token_embeddings(len(grown), mean_resizing=False)
    with torch.no_grad():
        emb = model.get_input_embeddings().weight
        for i, ids in enumerate(pieces):
            emb[first + i] = old[ids].mean(dim=0)
    return grown, len(new)


def add_words_for(tok, model, examples: list[QAExample], min_count: int):
    """:func:`split_words` of the training texts (contexts once each, and the questions) added by
    :func:`add_whole_words`; returns ``(tokenizer, info)``. A pure function of the examples, so a
    resumed run adds the same entries with the same ids."""
    contexts = sorted({e.context for e in examples})
    texts = contexts + [e.question for e in examples]

    def tokens_per_word(t) -> float:
        n_words = sum(len(words_of(t, c)) for c in contexts)
        n_tokens = sum(len(t(c, add_special_tokens=False)["input_ids"]) for c in contexts)
        return n_tokens / n_words if n_words else 0.0

    before = tokens_per_word(tok)
    words = split_words(tok, texts, min_count)
    tok, added = add_whole_words(tok, model, [w for w, _ in words])
    return tok, {"min_count": min_count, "added": added, "tokens_per_word_before": round(before, 4),
                 "tokens_per_word_after": round(tokens_per_word(tok), 4),
                 "most_frequent": [w for w, _ in words[:30]]}
