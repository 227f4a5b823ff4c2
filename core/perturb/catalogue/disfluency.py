"""Disfluencies as people speak them: ``disfluency_Q`` (corrections, restarts, fillers).

Disfl-QA (Gupta et al. 2021) had annotators rewrite SQuAD questions the way a speaker who
corrects themselves would say them; its two main types are *corrections* ("In what country is
Norse found no wait Normandy not Norse?": a wrong word, an editing cue, the right word) and
*restarts* ("What do petrologists no what do unstable isotope studies indicate?": a false start,
a cue, the question from its beginning). This perturbation makes both, plus *fillers* ("uh",
"you know"), seeded, with the wrong word taken from the passage as the annotators often did (it
then looks like a plausible answer or entity to the model, which is what makes it hard).

Our choices (Disfl-QA describes its types, not a generator):

* correction: a content word of the question (a name, noun, number, verb or adjective; a name or
  noun when there is one) gets a *distractor* spoken before it, then a correction cue:
  ``... {distractor} no wait {word} ...``. The distractor is a word of the passage with the same
  part of speech (not in the question, not in a gold answer), or, with ``distractor=question``,
  another content word of the question.
* restart: the question's first one to three words, with the last of them replaced by a distractor
  (or the question word by another question word when the start is a single question word), then a
  restart cue, then the whole question: ``What do petrologists no What do ... ?``.
* filler: a filler word or phrase before a word of the question (never after its last word).

``kind=any`` draws one of the three per disfluency; ``n`` disfluencies go into one question, at
most one restart, at different words. A question with nothing to correct (no content word, no
distractor) gets a filler instead and says so in its metadata. English only: the cues are English.
"""
from __future__ import annotations

import random
from typing import Any

from core.perturb.base import Edit, Param, Perturbation, Variant, make_variant
from core.perturb.nlp import WORD_RE, analyse
from core.perturb.registry import register
from core.types import QAExample

CORRECTION_CUES = ("no wait", "I mean", "no", "sorry", "or rather", "no I mean", "uh I mean", "well no")
RESTART_CUES = ("no", "sorry", "wait", "I mean", "uh", "no sorry")
FILLERS = ("uh", "um", "like", "you know", "well", "I guess", "uh you know")
WH_WORDS = ("what", "which", "who", "when", "where", "why", "how")
KINDS = ("correction", "restart", "filler")
# Content parts of speech a correction may target, most wanted first.
TARGET_POS = (("PROPN", "NOUN", "NUM"), ("VERB", "ADJ"))
_FUNCTION_WORDS = frozenset("""a an the of in on at to for by with from and or but is are was were be been being do does
did has have had what which who whom whose when where why how that this these those it its as into than then there
their they he she his her we you i not no""".split())


def _content_tokens(text: str, pos_groups=TARGET_POS) -> list[tuple[int, int, str, str]]:
    """(start, end, text, POS) of the content words of ``text``, the first POS group's when it has any."""
    tokens = [t for t in analyse(text, "en").tokens
              if WORD_RE.fullmatch(t.text) and t.text.lower() not in _FUNCTION_WORDS and len(t.text) > 1]
    for group in pos_groups:
        found = [(t.start, t.end, t.text, t.pos) for t in tokens if t.pos in group]
        if found:
            return found
    return [(t.start, t.end, t.text, t.pos) for t in tokens]   # the heuristic tagger: any content word


def _distractors(example: QAExample, pos: str, source: str, exclude: set[str]) -> list[str]:
    """Candidate wrong words: passage (or question) content words of ``pos`` not in ``exclude``."""
    text = example.context if source == "passage" else example.question
    words = _content_tokens(text, ((pos,),)) if pos else _content_tokens(text)
    answers = {w.lower() for a in example.answers for w in WORD_RE.findall(a.text)}
    return sorted({w for _, _, w, _ in words if w.lower() not in exclude and w.lower() not in answers})


@register
class Disfluency(Perturbation):
    id = "disfluency_Q"
    family = "disfluency"
    field = "question"
    languages = ("en",)
    description = ("Spoken disfluencies as in Disfl-QA: a correction ('X no wait Y', the wrong word from the "
                   "passage), a restart ('What do petrologists no What do ...'), or a filler ('uh').")
    parameters = (
        Param("kind", "any", "which disfluency: correction, restart, filler, or any (drawn per disfluency)",
              choices=("any", *KINDS)),
        Param("n", 1, "disfluencies per question (at most one restart)", min=1, max=4),
        Param("distractor", "passage", "where a correction's or restart's wrong word comes from",
              choices=("passage", "question")),
    )
    source = "Disfl-QA (Gupta et al. 2021) §2: corrections, restarts; fillers"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        question = example.question
        words = [(m.start(), m.end()) for m in WORD_RE.finditer(question)]
        if not words:
            return None
        question_words = {w.lower() for w in WORD_RE.findall(question)}
        used: set[int] = set()           # word starts already given a disfluency
        edits: list[Edit] = []
        made: list[dict[str, Any]] = []
        for _ in range(params["n"]):
            kind = params["kind"] if params["kind"] != "any" else rng.choice(KINDS)
            if kind == "restart" and any(m["kind"] == "restart" for m in made):
                kind = "correction"
            done = None
            if kind == "correction":
                done = self._correction(example, rng, params["distractor"], question_words, used)
            elif kind == "restart":
                done = self._restart(example, rng, params["distractor"], question_words, words, used)
            if done is None:
                done = self._filler(rng, words, used, wanted=kind)
            if done is None:
                break
            edit, record = done
            used.add(edit.start)
            edits.append(edit)
            made.append(record)
        if not edits:
            return None
        return [make_variant(self, example, self.field, edits, {"disfluencies": made})]

    def _correction(self, example, rng, source, question_words, used):
        targets = [t for t in _content_tokens(example.question) if t[0] not in used]
        rng.shuffle(targets)
        for start, _end, word, pos in targets:
            exclude = question_words if source == "passage" else {word.lower()}
            pool = _distractors(example, pos, source, exclude) or _distractors(example, "", source, exclude)
            if pool:
                wrong, cue = rng.choice(pool), rng.choice(CORRECTION_CUES)
                return (Edit(start, start, f"{wrong} {cue} ", "correction"),
                        {"kind": "correction", "target": word, "distractor": wrong, "cue": cue})
        return None

    def _restart(self, example, rng, source, question_words, words, used):
        if 0 in used or words[0][0] != 0 and example.question[:words[0][0]].strip():
            return None
        k = rng.randint(1, min(3, len(words)))
        first = example.question[words[0][0]:words[0][1]]
        if k == 1 and first.lower() in WH_WORDS:
            others = [w for w in WH_WORDS if w != first.lower()]
            wrong = rng.choice(others)
            false_start = wrong.capitalize() if first[0].isupper() else wrong
        else:
            k = max(k, 2)
            last_start, last_end = words[k - 1]
            exclude = question_words if source == "passage" else {example.question[last_start:last_end].lower()}
            pool = _distractors(example, "", source, exclude)
            if not pool:
                return None
            wrong = rng.choice(pool)
            false_start = example.question[words[0][0]:last_start] + wrong
        cue = rng.choice(RESTART_CUES)
        start = words[0][0]
        return (Edit(start, start, f"{false_start} {cue} ", "restart"),
                {"kind": "restart", "false_start": false_start, "distractor": wrong, "cue": cue})

    def _filler(self, rng, words, used, wanted):
        free = [s for s, _ in words if s not in used]
        if not free:
            return None
        start, filler = rng.choice(free), rng.choice(FILLERS)
        record = {"kind": "filler", "filler": filler}
        if wanted != "filler":
            record["instead_of"] = wanted      # nothing to correct or restart with
        return Edit(start, start, f"{filler} ", "filler"), record
