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
    """The engine's answer to one (question, context) pair: the n-best spans, best first."""

    nbest: list[Span] = field(default_factory=list)

    @property
    def best(self) -> Span | None:
        return self.nbest[0] if self.nbest else None

    @property
    def text(self) -> str:
        return self.nbest[0].text if self.nbest else ""
