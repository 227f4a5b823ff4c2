"""Turn (question, context) pairs into model windows, and gold answers into token positions.

Contexts longer than the model window are split into overlapping windows (``stride`` tokens of
overlap, the Hugging Face convention). Only the context is ever truncated, never the question.
Each window keeps, per token, its character offsets into the original context, or ``None`` for
tokens that are not context (question, special tokens, padding): that is what keeps predicted
spans inside the context and maps them back to exact character offsets.
"""
from __future__ import annotations

from dataclasses import dataclass

# Questions longer than this many tokens are cut: a pathological question must not leave the
# context no room in the window. 64 tokens covers every SQuAD/XQuAD question.
MAX_QUESTION_TOKENS = 64


@dataclass
class Window:
    """One model input window of one (question, context) pair."""

    pair_index: int  # which input pair this window belongs to
    input_ids: list[int]
    extra: dict  # other model inputs (token_type_ids, attention_mask)
    offsets: list[tuple[int, int] | None]  # char offsets into the context, None for non-context
    start_position: int = 0  # training target (0 = [CLS]: answer not in this window)
    end_position: int = 0


class FeatureError(ValueError):
    pass


def truncate_question(tokenizer, question: str, limit: int = MAX_QUESTION_TOKENS) -> str:
    ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    if len(ids) <= limit:
        return question
    return tokenizer.decode(ids[:limit])


def question_budget(max_length: int, stride: int, special_tokens: int) -> int:
    """Most question tokens a window can hold: the context part left over must stay longer than
    ``stride`` (the tokenizer refuses, or panics, otherwise), and never more than
    MAX_QUESTION_TOKENS. FeatureError when the window has no room for a question at all.

    >>> question_budget(384, 128, 3), question_budget(64, 16, 3), question_budget(32, 16, 3)
    (64, 44, 12)
    >>> question_budget(20, 16, 3)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.qa.features.FeatureError: max_length 20 leaves no room for a question beside a stride of 16 tokens and 3
    special tokens
    """
    budget = min(MAX_QUESTION_TOKENS, max_length - special_tokens - stride - 1)
    if budget < 1:
        raise FeatureError(f"max_length {max_length} leaves no room for a question beside a stride of "
                           f"{stride} tokens and {special_tokens} special tokens")
    return budget


def build_windows(
    tokenizer,
    questions: list[str],
    contexts: list[str],
    max_length: int = 384,
    stride: int = 128,
    answers: list[tuple[int, int] | None] | None = None,
) -> list[Window]:
    """Tokenise pairs into windows. ``answers`` (training only) are (char_start, char_end) per pair.

    With answers given, each window gets the token positions of the answer, or (0, 0) pointing at
    the first token ([CLS]) when the answer is not wholly inside that window.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise FeatureError("the QA engine needs a fast tokenizer (character offsets)")
    if len(questions) != len(contexts):
        raise FeatureError("questions and contexts differ in length")
    budget = question_budget(max_length, stride, tokenizer.num_special_tokens_to_add(pair=True))
    questions = [truncate_question(tokenizer, q.strip(), budget) for q in questions]
    pad_right = tokenizer.padding_side == "right"
    enc = tokenizer(
        questions if pad_right else contexts,
        contexts if pad_right else questions,
        truncation="only_second" if pad_right else "only_first",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=False,
    )
    context_seq = 1 if pad_right else 0
    keep = [k for k in tokenizer.model_input_names if k in enc and k != "input_ids"]
    windows: list[Window] = []
    for i in range(len(enc["input_ids"])):
        pair = enc["overflow_to_sample_mapping"][i]
        seq_ids = enc.sequence_ids(i)
        offsets = [
            tuple(o) if s == context_seq else None for o, s in zip(enc["offset_mapping"][i], seq_ids)
        ]
        w = Window(
            pair_index=pair,
            input_ids=enc["input_ids"][i],
            extra={k: enc[k][i] for k in keep},
            offsets=offsets,
        )
        if answers is not None and answers[pair] is not None:
            w.start_position, w.end_position = answer_positions(offsets, *answers[pair])
        windows.append(w)
    return windows


def answer_positions(offsets, char_start: int, char_end: int) -> tuple[int, int]:
    ctx = [i for i, o in enumerate(offsets) if o is not None]
    if not ctx:
        return 0, 0
    first, last = ctx[0], ctx[-1]
    if offsets[first][0] > char_start or offsets[last][1] < char_end:
        return 0, 0  # answer not wholly inside this window
    start = first
    while start <= last and offsets[start][1] <= char_start:
        start += 1
    end = last
    while end >= first and offsets[end][0] >= char_end:
        end -= 1
    if start > end:
        return 0, 0
    return start, end
