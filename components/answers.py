"""Models' answers on a page: one model's card, the spans in the context, the legend.

Every page that shows several models' answers (Ask and its error-analysis panels, Variants, Beat
the AI, Heatmaps' drill-down, Behaviour tests) gives model ``i`` (in the order chosen) the colour
``color_for(i)``, a card headed by a bar of that colour, and the spans highlighted in the context
(core/render/highlight.py) under a legend. Model names and answers are data: escaped, never read
as Markdown.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence

import streamlit as st

from components.text import html_text, md_escape
from core.explore.answers import ModelAnswer, generative_line
from core.render.highlight import Mark, color_for, highlight_html, legend_html
from core.types import Prediction, Span


def card_header(model: str, colour: str, suffix: str = "") -> str:
    """HTML of a card's heading: the model's name behind a bar of its colour.

    >>> card_header("<m>", "#E69F00", " (this cell)")
    '<div style="border-left:6px solid #E69F00;padding-left:.5rem"><b>&#60;m&#62;</b> &#40;this cell&#41;</div>'
    """
    return (f'<div style="border-left:6px solid {colour};padding-left:.5rem">'
            f"<b>{html_text(model)}</b>{html_text(suffix)}</div>")


CARDS_PER_ROW = 3


def answer_card(model: str, index: int, answer: str, caption: str = "", prediction: Prediction | None = None) -> None:
    """One model's card (inside a column): its name, its answer as plain text, a caption; a
    generative reader's answer that is not in the passage in a box marked so."""
    st.markdown(card_header(model, color_for(index)), unsafe_allow_html=True)
    line = generative_line(prediction) if prediction is not None else ""
    if line and prediction is not None and not prediction.nbest:
        with st.container(border=True):
            st.markdown("**Not in the passage**")
            st.text(f"Answer: {answer}" if answer else "No answer")
    else:
        st.text(f"Answer: {answer}" if answer else "No answer")   # st.text: an answer is data
    if line:
        st.caption(md_escape(line))
    if caption:
        st.caption(caption)


def _span(answer: Prediction | Span | None) -> Span | None:
    return answer.best if isinstance(answer, Prediction) else answer


def marks(answers: Mapping[str, Prediction | Span | None], models: Sequence[str] | None = None) -> list[Mark]:
    """A highlight per model that gave a span, coloured by its place in ``models`` (default: the
    mapping's order), so a model keeps its colour when another gave no answer.

    >>> [(m.label, m.start, m.color) for m in marks({"a": None, "b": Span("x", 1, 2, 0.5)})]
    [('b', 1, '#56B4E9')]
    """
    models = list(answers) if models is None else list(models)
    out = []
    for i, name in enumerate(models):
        span = _span(answers.get(name))
        if span is not None and span.end > span.start:
            out.append(Mark(name, span.start, span.end, color_for(i)))
    return out


def legend(models: Sequence[str], with_gold: bool) -> None:
    st.markdown(legend_html([(m, color_for(i)) for i, m in enumerate(models)], with_gold=with_gold),
                unsafe_allow_html=True)


def spans_in_context(context: str, answers: Mapping[str, Prediction | Span | None],
                     gold: Sequence[tuple[int, int]] = (), models: Sequence[str] | None = None,
                     show_legend: bool = True) -> None:
    """The legend, then ``context`` with every model's span highlighted and the gold underlined."""
    models = list(answers) if models is None else list(models)
    if show_legend:
        legend(models, with_gold=bool(gold))
    st.markdown(highlight_html(context, marks(answers, models), list(gold)), unsafe_allow_html=True)


def _score_words(prediction) -> str:
    """What a card says of its answer's score: an extractive model's span score; for an LLM reader,
    which writes its answer, how that answer was found in the passage (its score is the match's
    similarity, not a confidence, so it is not shown as one).

    >>> from core.types import Prediction, Span
    >>> _score_words(Prediction([Span("Rollo", 0, 5, 0.4321)]))
    'score 0.4321'
    >>> _score_words(Prediction([Span("Rollo", 0, 5, 1.0)], free_answer="Rollo", alignment="exact"))
    'LLM answer, found in the passage as written'
    >>> _score_words(Prediction([], free_answer="a Viking", alignment="not in the passage"))
    'LLM answer, not in the passage (scored as text)'
    >>> _score_words(Prediction([]))
    'no answer'
    """
    best = prediction.best
    if prediction.alignment == "exact":
        return "LLM answer, found in the passage as written"
    if prediction.alignment == "approximate" and best is not None:
        return f"LLM answer, matched to the passage at {100 * best.score:.0f}% similarity"
    if prediction.alignment:
        return f"LLM answer, {md_escape(prediction.alignment)} (scored as text)"
    return f"score {round(best.score, 4)}" if best is not None else "no answer"


def answer_cards(answers: Sequence[ModelAnswer], context: str, gold: Sequence[tuple[str, int]],
                 score_note: str = "") -> None:
    """Ask's answers: a card per model side by side (answer, score, latency, how it ran, EM/F1),
    the note on what was scored, the legend and the spans in the context, the gold answers."""
    # at most CARDS_PER_ROW side by side: five cards in a narrow window broke names over three lines
    per_row = min(CARDS_PER_ROW, len(answers))
    for i, a in enumerate(answers):
        if i % per_row == 0:
            cols = st.columns(per_row)
        line = f"{_score_words(a.prediction)} · {round(a.seconds * 1000, 1)} ms · {md_escape(a.backend)}"
        if a.em is not None:
            line += f" · EM {100 * a.em:.0f} · F1 {round(100 * a.f1, 1):.1f}"
        with cols[i % per_row]:
            answer_card(a.model, i, a.prediction.text, line, a.prediction)
    if score_note:
        st.caption(md_escape(score_note))
    found = [(s, s + len(t)) for t, s in gold if s >= 0]
    legend([a.model for a in answers], with_gold=bool(gold))
    spans_in_context(context, {a.model: a.prediction for a in answers}, found, show_legend=False)
    if gold:
        st.caption("Gold: " + " | ".join(md_escape(t) for t in dict.fromkeys(t for t, _ in gold)))


@contextlib.contextmanager
def replies_as_written() -> Iterator[Callable[[str, str], None]]:
    """A line that shows an LLM reader's reply while it is decoded ("qwen… is writing: 14 Oct"),
    for ``answer_all``'s ``on_text``; gone once the answers are drawn."""
    line = st.empty()
    try:
        yield lambda model, text: line.caption(md_escape(f"{model} is writing: {text}"))
    finally:
        line.empty()
