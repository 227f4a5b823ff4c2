"""Every selected model answers one question: load each, time it, score it, keep the failures.

The pages that put one question to several models (Ask, its repair and counterfactual panels,
Beat the AI) and those that only need the engines (Variants, Sweeps) share this, so that a model
that fails to load says why without hiding the others' answers, and an input no model can answer
(an empty question, a context of punctuation: ``QAInputError``) is said once, not once per model.

Engines come from a function ``engine_for(name)`` (the app's cached loader), so this module loads
nothing itself and imports no Streamlit.

>>> from core.types import Prediction, Span
>>> class Engine:
...     backend_name = "torch"
...     def predict(self, questions, contexts, n_best=5):
...         return [Prediction([Span("Paris", 0, 5, 0.9), Span("France", 23, 29, 0.1)][:n_best])]
>>> def engine_for(name):
...     if name == "broken":
...         raise OSError("no weights in assets/models/broken")
...     return Engine()
>>> got = answer_all(["tiny", "broken"], engine_for, "Where?", "Paris is the capital of France.",
...                  n_best=2, golds=["Paris"])
>>> [(a.model, a.prediction.text, a.em, a.f1) for a in got.answers], got.failures
([('tiny', 'Paris', 1.0, 1.0)], ['broken: no weights in assets/models/broken'])
>>> {k: v for k, v in answer_rows(got.answers)[0].items() if k != "latency_ms"}
{'model': 'tiny', 'answer': 'Paris', 'start': 0, 'end': 5, 'score': 0.9, 'EM': 100.0, 'F1': 100.0}
>>> [(r["rank"], r["answer"]) for r in nbest_rows(got.answers)]
[(1, 'Paris'), (2, 'France')]
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.metrics import score_answer
from core.qa.engine import QAInputError, answerable_pair
from core.types import Prediction, Span

EngineFor = Callable[[str], Any]


@dataclass
class ModelAnswer:
    """One model's answer to the question: its n-best, the seconds it took, and EM/F1 (0-1)
    against the gold answers when there were any (None otherwise)."""

    model: str
    prediction: Prediction
    seconds: float = 0.0
    backend: str = ""          # how it ran (the app's note: backend, fallback reason, answer cap)
    em: float | None = None
    f1: float | None = None

    @property
    def best(self) -> Span | None:
        return self.prediction.best


@dataclass
class Answers:
    """What :func:`answer_all` returns: the answers, in the models' order, and why the others failed."""

    answers: list[ModelAnswer] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def predictions(self) -> dict[str, Prediction]:
        """{model: Prediction} of the models that answered."""
        return {a.model: a.prediction for a in self.answers}


def load_engines(models: Sequence[str], engine_for: EngineFor) -> tuple[dict[str, Any], list[str]]:
    """({model: engine} of those that loaded, ["model: why"] of those that did not).

    >>> load_engines(["a", "b"], lambda m: {"a": "engine-a"}[m])
    ({'a': 'engine-a'}, ["b: 'b'"])
    """
    engines, failures = {}, []
    for name in models:
        try:
            engines[name] = engine_for(name)
        except Exception as e:  # a model that fails to load must not take the page down
            failures.append(f"{name}: {e}")
    return engines, failures


def answer_all(models: Sequence[str], engine_for: EngineFor, question: str, context: str, *,
               n_best: int = 1, golds: Sequence[str] = (), lang: str = "en",
               note: Callable[[Any], str] | None = None, stop_at_failure: bool = False,
               on_text: Callable[[str, str], None] | None = None) -> Answers:
    """Every model in ``models`` answers ``question`` about ``context`` (see module doc).

    ``golds``: score each best answer against them (SQuAD EM/F1 in ``lang``'s normalisation).
    ``note(engine)``: a line on how the engine ran, kept with its answer. ``stop_at_failure``: the
    first failing model ends the round (Beat the AI records an attempt only when every model
    answered). An input no model can answer (``QAInputError``) always ends it, said once.
    ``on_text(model, reply so far)``: a generative reader's reply while it is decoded (Ask shows
    it as it comes; extractive models answer whole).

    >>> from core.types import Prediction
    >>> class Refuses:
    ...     def predict(self, questions, contexts, n_best=5):
    ...         raise QAInputError("The question is empty.")
    >>> answer_all(["a", "b"], lambda m: Refuses(), " ", "Some text.").failures
    ['The question is empty.']
    >>> answer_all(["a", "b"], lambda m: Refuses(), "Who?", "Some text.").failures   # the models' own refusals
    ['a: The question is empty.', 'b: The question is empty.']
    """
    out = Answers()
    for name in models:
        try:
            engine = engine_for(name)
            t0 = time.perf_counter()
            if on_text is not None and getattr(engine, "kind", "") == "generative":
                stream = functools.partial(on_text, name)
                prediction = engine.predict([question], [context], n_best=n_best, on_text=stream)[0]
            else:
                prediction = engine.predict([question], [context], n_best=n_best)[0]
            seconds = time.perf_counter() - t0
        except QAInputError as e:
            if not answerable_pair(question, context):   # the input, not the model: every model would say it
                out.failures.append(str(e))
                break
            out.failures.append(f"{name}: {e}")   # this model's own limit (an LLM's context window)
            if stop_at_failure:
                break
            continue
        except Exception as e:  # a model that fails to load or run must not hide the others
            out.failures.append(f"{name}: {e}")
            if stop_at_failure:
                break
            continue
        answer = ModelAnswer(name, prediction, seconds, note(engine) if note else "")
        if golds and (prediction.best is not None or prediction.free_answer):
            # a generative reader's answer that is not in the passage is scored as its text
            answer.em, answer.f1 = score_answer(prediction.text, list(golds), lang)
        out.answers.append(answer)
    return out


def answer_rows(answers: Sequence[ModelAnswer]) -> list[dict]:
    """One row per model for the table and the CSV: best answer, offsets, score, latency, EM/F1 (%)."""
    rows = []
    for a in answers:
        best = a.best
        row = {"model": a.model, "answer": a.prediction.text,
               "start": best.start if best else None, "end": best.end if best else None,
               "score": round(best.score, 4) if best else None, "latency_ms": round(a.seconds * 1000, 1)}
        if a.prediction.alignment:   # a generative reader: how its answer was found in the passage
            row.update(alignment=a.prediction.alignment, model_wrote=a.prediction.free_answer)
        if a.em is not None:
            row.update(EM=round(100 * a.em, 1), F1=round(100 * a.f1, 1))
        rows.append(row)
    return rows


def nbest_rows(answers: Sequence[ModelAnswer]) -> list[dict]:
    """Every extractive model's n-best spans, ranked from 1 (a generative reader has one answer:
    :func:`extractive_only_note` says so)."""
    return [{"model": a.model, "rank": k + 1, "answer": s.text, "start": s.start, "end": s.end,
             "score": round(s.score, 4)} for a in answers if not a.prediction.alignment
            for k, s in enumerate(a.prediction.nbest)]


def extractive_only_note(models: Sequence[str], what: str) -> str:
    """The line a view that reads an extractive model's span scores (n-best, attributions) shows
    for the generative readers among ``models`` instead of breaking on them ("" when none).

    >>> extractive_only_note(["qwen"], "n-best spans")
    'n-best spans do not apply to qwen: a generative model writes one answer, then it is found in the passage.'
    """
    if not models:
        return ""
    return (f"{what} do not apply to {', '.join(models)}: a generative model writes one answer, then it is "
            "found in the passage.")


def generative_line(prediction: Prediction) -> str:
    """How a generative reader's answer sits in the passage, for its card ("" for an extractive one).

    >>> generative_line(Prediction([Span("France", 0, 6, 1.0)], free_answer="France", alignment="exact"))
    'found in the passage (exact)'
    >>> generative_line(Prediction([Span("Hrólfr", 0, 6, 0.83)], free_answer="Hrolfr", alignment="approximate"))
    "found in the passage (approximate, similarity 83): the model wrote 'Hrolfr'"
    """
    if not prediction.alignment:
        return ""
    if not prediction.nbest:
        return "not in the passage: scored as the model's own words" if prediction.free_answer else \
            "the model gave an empty answer"
    best = prediction.nbest[0]
    if prediction.alignment == "exact":
        return "found in the passage (exact)"
    return (f"found in the passage ({prediction.alignment}, similarity {round(100 * best.score)}): "
            f"the model wrote {prediction.free_answer!r}")


def gold_to_score(typed_gold: str, context: str, item_golds: Sequence[tuple[str, int]],
                  own_question: bool, from_dataset: bool, meant_own: bool = False) -> tuple[list[tuple[str, int]], str]:
    """The gold answers (text, offset) to score against, and a line saying which and why.

    A gold answer the user typed wins; else a dataset item's own question is scored against the
    item's answers, and so is a spoken question whose speaker meant to say the item's question
    (``meant_own``: NoiseQA's spoken questions, scored against the written question's gold); a
    question of one's own has no gold answer and is not scored.

    >>> gold_to_score(" Paris ", "In Paris.", [("France", 0)], own_question=True, from_dataset=True)
    ([('Paris', 3)], 'EM/F1 against the gold answer you typed.')
    >>> gold_to_score("", "In Paris.", [("Paris", 3)], own_question=False, from_dataset=True)[0]
    []
    >>> gold_to_score("", "In Paris.", [("Paris", 3)], own_question=False, from_dataset=True, meant_own=True)
    ([('Paris', 3)], "EM/F1 against the item's gold answers (what you meant to say is the item's own question).")
    """
    if typed_gold.strip():
        return [(typed_gold.strip(), context.find(typed_gold.strip()))], "EM/F1 against the gold answer you typed."
    if own_question:
        return list(item_golds), "EM/F1 against the item's gold answers (this is the item's own question)."
    if meant_own:
        return list(item_golds), ("EM/F1 against the item's gold answers (what you meant to say is the item's "
                                  "own question).")
    # Ask draws its options (the gold answer's box among them) under the answers
    where = "in Options, below the answers,"
    return [], (f"Not scored: this is not the item's own question. Type a gold answer {where} to score it."
                if from_dataset else f"Not scored: type a gold answer {where} to score the answers.")


def gold_spans(golds: Sequence[tuple[str, int]]) -> list[tuple[int, int]]:
    """Character spans of the gold answers found in the context (a typed one may not be: -1).

    >>> gold_spans([("Paris", 3), ("Rome", -1)])
    [(3, 8)]
    """
    return [(s, s + len(t)) for t, s in golds if s >= 0]


def ask_export(answers: Sequence[ModelAnswer], about: Mapping[str, Any]) -> dict:
    """Ask's JSON export: what was asked (``about``: question, context, gold ...), then every
    model's answer row and n-best."""
    return {**about, "answers": answer_rows(answers), "nbest": nbest_rows(answers)}


def ask_csv_rows(export: Mapping[str, Any]) -> list[dict]:
    """Ask's CSV: each model's answer row after the question it answers and the gold answer, so a
    shared CSV says what was asked (the JSON export carries the passage too).

    >>> ask_csv_rows({"question": "Where?", "gold": [("Paris", 0), ("in Paris", 5)],
    ...               "answers": [{"model": "m", "answer": "Paris"}]})
    [{'question': 'Where?', 'gold': 'Paris | in Paris', 'model': 'm', 'answer': 'Paris'}]
    """
    gold = " | ".join(text for text, _start in export.get("gold") or [])
    return [{"question": export.get("question", ""), "gold": gold, **row} for row in export["answers"]]
