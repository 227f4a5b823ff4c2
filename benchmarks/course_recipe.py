"""The Hugging Face course's extractive question-answering recipe, the peer benchmarks/peers.py
measures the engine against (transformers 5 removed ``pipeline("question-answering")``; this is
what its documentation teaches in its place).

The tokenizer's overflowing windows of 384 tokens with stride 128, padded to 384; the model's
start and end logits per window; the 20 best starts and ends of each window; the best valid span
(inside the context, end not before start, at most 30 tokens) by the sum of its two logits.
It imports nothing of this project: benchmarks/peer_optimum.py runs it in another environment
(optimum-intel pins an older transformers than this project's).
"""
from __future__ import annotations

import time


def answers(tokenizer, model, questions: list[str], contexts: list[str]) -> list[str]:
    """The recipe's answer to each question (``model`` takes the tokenizer's torch tensors and
    returns ``start_logits`` and ``end_logits``: a transformers or an optimum-intel model)."""
    import torch

    enc = tokenizer(list(questions), list(contexts), truncation="only_second", max_length=384, stride=128,
                    return_overflowing_tokens=True, return_offsets_mapping=True, padding="max_length",
                    return_tensors="pt")
    owner, offsets = enc.pop("overflow_to_sample_mapping"), enc.pop("offset_mapping")
    with torch.inference_mode():
        out = model(**enc)
    start_logits, end_logits = torch.as_tensor(out.start_logits), torch.as_tensor(out.end_logits)
    best: dict[int, tuple[float, str]] = {}
    for w in range(len(owner)):
        i, seq = int(owner[w]), enc.sequence_ids(w)
        starts = torch.topk(start_logits[w], 20).indices.tolist()
        ends = torch.topk(end_logits[w], 20).indices.tolist()
        for s in starts:
            for e in ends:
                if seq[s] != 1 or seq[e] != 1 or e < s or e - s + 1 > 30:
                    continue
                score = float(start_logits[w][s] + end_logits[w][e])
                if i not in best or score > best[i][0]:
                    best[i] = (score, contexts[i][int(offsets[w][s][0]):int(offsets[w][e][1])])
    return [best.get(i, (0.0, ""))[1] for i in range(len(questions))]


def timed(answer_all, questions: list[str], contexts: list[str]) -> tuple[list[str], float, float]:
    """(answers given all at once, questions/s one at a time, questions/s all at once), after a warm-up."""
    answer_all(questions[:4], contexts[:4])
    t = time.perf_counter()
    for q, c in zip(questions, contexts):
        answer_all([q], [c])
    one_qps = len(questions) / (time.perf_counter() - t)
    t = time.perf_counter()
    answers = answer_all(questions, contexts)
    all_qps = len(questions) / (time.perf_counter() - t)
    return answers, one_qps, all_qps
