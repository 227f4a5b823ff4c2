"""Plain data types shared by the loaders, the QA engine, metrics and perturbations."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Answer:
    """A gold answer: its text and the character offset of its first character in the context."""

    text: str
    answer_start: int


@dataclass(frozen=True)
class QAExample:
    """One extractive-QA item: a question about a context, with zero or more gold answers."""

    id: str
    question: str
    context: str
    answers: tuple[Answer, ...] = ()
    title: str = ""
    lang: str = "en"
    is_impossible: bool = False

    @property
    def answer_texts(self) -> list[str]:
        return [a.text for a in self.answers]


@dataclass(frozen=True)
class Span:
    """A predicted answer span: text, character offsets [start, end) into the original context, score."""

    text: str
    start: int
    end: int
    score: float


@dataclass
class Prediction:
    """The engine's answer to one (question, context) pair: the n-best spans, best first.

    A generative reader (core.qa.generative) writes its answer and then finds it in the context:
    ``free_answer`` is what it wrote, ``alignment`` how it was found ("exact", "approximate", or
    "not in the passage": then ``nbest`` is empty and ``text`` is the free answer, scored as text).
    Both stay empty for an extractive model.

    >>> Prediction([], free_answer="in northern France", alignment="not in the passage").text
    'in northern France'
    """

    nbest: list[Span] = field(default_factory=list)
    free_answer: str = ""
    alignment: str = ""
    # Why the pair was not answered at all (``predict(..., skip_invalid=True)``: an empty question,
    # a passage longer than an LLM's context window), in a few words; "" when it was answered.
    # An empty answer is a wrong answer; an unanswered pair is no answer to score.
    unanswered: str = ""

    @property
    def best(self) -> Span | None:
        return self.nbest[0] if self.nbest else None

    @property
    def text(self) -> str:
        return self.nbest[0].text if self.nbest else self.free_answer
