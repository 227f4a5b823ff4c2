"""The batched extractive-QA engine: one object serves the Ask page and the sweeps.

Speed comes from three things: windows of all pairs are sorted by length so a batch holds
similar lengths, each batch is padded only to its own longest window (dynamic padding), and
inference runs under ``torch.inference_mode``. The thread count is configurable because on a
small machine the app and a sweep share the cores.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.qa.decode import best_spans, window_candidates
from core.qa.features import build_windows
from core.types import Prediction

ProgressFn = Callable[[int, int], None]


class QAInputError(ValueError):
    """A question or context the engine cannot answer; the message says why."""


MAX_QUESTION_CHARS = 2000
MAX_CONTEXT_CHARS = 200_000


@dataclass
class EngineSettings:
    max_length: int = 384
    stride: int = 128
    max_answer_tokens: int = 30
    # None: 8 windows on CPU, 32 on a GPU. On CPU big padded batches are slower per window:
    # 2 cores, 300 XQuAD-en questions, MiniLM 28.6 q/s at 8 against 22.4 at 32, MPNet 6.3 against
    # 4.8 (python benchmarks/qa_throughput.py --batch-sizes 2,4,8,32).
    batch_size: int | None = None
    top_k: int = 20
    threads: int | None = None


def validate_pair(question: str, context: str) -> None:
    if not question or not question.strip():
        raise QAInputError("The question is empty.")
    if not context or not context.strip():
        raise QAInputError("The context is empty.")
    if len(question) > MAX_QUESTION_CHARS:
        raise QAInputError(
            f"The question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}."
        )
    if len(context) > MAX_CONTEXT_CHARS:
        raise QAInputError(
            f"The context is {len(context):,} characters long; the limit is {MAX_CONTEXT_CHARS:,}."
        )


class QAEngine:
    """Extractive QA over any ``AutoModelForQuestionAnswering`` and its fast tokenizer."""

    def __init__(self, model, tokenizer, settings: EngineSettings | None = None, device: str | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.settings = settings or EngineSettings()
        limit = getattr(model.config, "max_position_embeddings", 512)
        # MPNet/RoBERTa reserve two positions for the padding offset.
        if getattr(model.config, "model_type", "") in ("mpnet", "roberta", "xlm-roberta"):
            limit -= 2
        self.settings.max_length = min(self.settings.max_length, limit)
        self.settings.stride = min(self.settings.stride, self.settings.max_length // 2)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        if self.settings.batch_size is None:
            self.settings.batch_size = 8 if self.device.type == "cpu" else 32
        if self.settings.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.settings.batch_size}")
        self.model.to(self.device)
        self.model.eval()

    def predict(
        self,
        questions: Sequence[str],
        contexts: Sequence[str],
        n_best: int = 5,
        progress: ProgressFn | None = None,
        skip_invalid: bool = False,
    ) -> list[Prediction]:
        """Answer many pairs at once. Returns one Prediction per pair, in input order.

        Invalid pairs raise ``QAInputError``, or with ``skip_invalid`` get an empty Prediction.
        """
        if len(questions) != len(contexts):
            raise QAInputError("questions and contexts differ in length")
        valid = []
        for i, (q, c) in enumerate(zip(questions, contexts)):
            try:
                validate_pair(q, c)
                valid.append(i)
            except QAInputError:
                if not skip_invalid:
                    raise
        preds = [Prediction() for _ in questions]
        if not valid:
            return preds
        s = self.settings
        windows = build_windows(
            self.tokenizer,
            [questions[i] for i in valid],
            [contexts[i] for i in valid],
            max_length=s.max_length,
            stride=s.stride,
        )
        order = sorted(range(len(windows)), key=lambda k: len(windows[k].input_ids))
        candidates: list[list] = [[] for _ in valid]
        done = 0
        old_threads = torch.get_num_threads()
        if s.threads:
            torch.set_num_threads(s.threads)
        try:
            with torch.inference_mode():
                for b in range(0, len(order), s.batch_size):
                    batch = [windows[k] for k in order[b : b + s.batch_size]]
                    start, end = self._forward(batch)
                    for w, sl, el in zip(batch, start, end):
                        candidates[w.pair_index].extend(
                            window_candidates(sl, el, w.offsets, s.top_k, s.max_answer_tokens)
                        )
                    done += len(batch)
                    if progress:
                        progress(done, len(windows))
        finally:
            if s.threads:
                torch.set_num_threads(old_threads)
        for j, i in enumerate(valid):
            preds[i] = Prediction(nbest=best_spans(contexts[i], candidates[j], n_best))
        return preds

    def answer(self, question: str, context: str, n_best: int = 5) -> Prediction:
        return self.predict([question], [context], n_best=n_best)[0]

    def timed_answer(self, question: str, context: str, n_best: int = 5) -> tuple[Prediction, float]:
        t0 = time.perf_counter()
        p = self.answer(question, context, n_best)
        return p, time.perf_counter() - t0

    def _forward(self, batch) -> tuple[np.ndarray, np.ndarray]:
        features = [{"input_ids": w.input_ids, **w.extra} for w in batch]
        enc = self.tokenizer.pad(features, padding=True, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        out = self.model(**enc)
        return (
            out.start_logits.float().cpu().numpy(),
            out.end_logits.float().cpu().numpy(),
        )
