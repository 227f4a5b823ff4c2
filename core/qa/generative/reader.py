"""A generative reader behind the same ``QAModel`` protocol as the extractive engine.

For each (question, passage) it sends the language's chat (core.qa.generative.prompts) to a
runtime (core.qa.generative.runtimes), tidies the reply (quotes, a leading "Answer:", a final full
stop) and places it in the passage (core.qa.generative.align). The ``Prediction`` it returns is
what every view already reads: ``best`` is the span in the passage (``context[start:end] ==
text``), its ``score`` the alignment's similarity (1 for exact: not a model probability, so
views of confidence treat an LLM's as one level), ``alignment`` how it was found and
``free_answer`` what the model wrote. An answer not in the passage has no span and is scored as
its text.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from core.qa.engine import QAInputError, validate_pair
from core.qa.generative.align import NOT_IN_PASSAGE, align
from core.qa.generative.prompts import GenerationSettings, messages, prompt_language, settings_fingerprint
from core.qa.protocol import ProgressFn
from core.types import Prediction, Span

_LEAD = re.compile(r"^\s*(?:answer|antwort|答案|回答)\s*[:：]\s*", re.IGNORECASE)
_QUOTES = "\"'`“”„‘’«»「」『』"


def tidy(reply: str) -> str:
    """The answer in a model's reply: first line, without a leading 'Answer:', surrounding quotes
    or a closing full stop (the passage's sentence ends there, the answer does not).

    >>> tidy(' Answer: "France".\\nBecause...'), tidy("「诺曼底」。"), tidy("U.S.")
    ('France', '诺曼底', 'U.S.')
    """
    text = reply.strip().split("\n", 1)[0].strip() if reply.strip() else ""
    text = _LEAD.sub("", text).strip()
    text = text.strip(_QUOTES).strip()
    if text.endswith(("。", "．")) or (text.endswith(".") and not re.search(r"\.\w\.$", text)):
        text = text[:-1].rstrip()
    return text.strip(_QUOTES).strip()


class GenerativeReader:
    """An LLM reading the passage (see the module docstring); implements core.qa.protocol.QAModel."""

    kind = "generative"
    device = "cpu"

    def __init__(self, runtime, settings: GenerationSettings | None = None, languages: Sequence[str] | None = None):
        self.runtime = runtime
        self.settings = settings or GenerationSettings()
        self.languages = tuple(languages) if languages else None
        self.backend_name = runtime.name
        self.backend_message = None

    def fingerprint(self) -> str:
        """The runtime's weights and the prompt/decoding settings: any change answers afresh."""
        blob = f"{self.runtime.identity()}|{settings_fingerprint(self.settings)}"
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def answer(self, question: str, context: str, on_text: Callable[[str], None] | None = None) -> Prediction:
        """One question: ask, tidy, align. ``on_text``: called with the reply so far while it is
        decoded, where the runtime streams (llama.cpp); other runtimes answer whole."""
        validate_pair(question, context)
        lang = prompt_language(question, context)
        prompt = messages(question, context, lang)
        if on_text is not None and getattr(self.runtime, "streams", False):
            reply = self.runtime.complete(prompt, self.settings, on_text=on_text)
        else:
            reply = self.runtime.complete(prompt, self.settings)
        text = tidy(reply)
        found = align(text, context, lang, self.settings.align_threshold)
        if not found.found:
            return Prediction([], free_answer=text, alignment=NOT_IN_PASSAGE)
        span = Span(context[found.start:found.end], found.start, found.end, found.similarity / 100.0)
        return Prediction([span], free_answer=text, alignment=found.kind)

    def predict(self, questions: Sequence[str], contexts: Sequence[str], n_best: int = 5,
                progress: ProgressFn | None = None, skip_invalid: bool = False,
                on_text: Callable[[str], None] | None = None) -> list[Prediction]:
        """One Prediction per pair, in input order (``n_best`` is ignored: a greedy answer is
        one answer). With a server, up to its ``concurrency`` requests are in flight at once.
        ``on_text`` (one question only, as Ask asks): the reply so far, while it is decoded."""
        if len(questions) != len(contexts):
            raise ValueError(f"{len(questions)} questions for {len(contexts)} contexts")
        if on_text is not None:
            if len(questions) != 1:
                raise ValueError("on_text streams one answer: ask one question")
            return [self.answer(questions[0], contexts[0], on_text=on_text)]
        total = len(questions)
        done = 0

        def one(pair: tuple[str, str]) -> Prediction:
            try:
                return self.answer(*pair)
            except QAInputError as e:
                if skip_invalid:
                    return Prediction(unanswered=e.reason)
                raise

        pairs = list(zip(questions, contexts))
        preds: list[Prediction] = []
        workers = min(getattr(self.runtime, "concurrency", 1), max(total, 1))
        if workers <= 1:
            for pair in pairs:
                preds.append(one(pair))
                done += 1
                if progress:
                    progress(done, total)
            return preds
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:
            for pred in pool.map(one, pairs):   # map keeps input order; the first error is raised here
                preds.append(pred)
                done += 1
                if progress:
                    progress(done, total)
        return preds
