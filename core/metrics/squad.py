"""SQuAD v1.1 exact match (EM) and F1, exactly as the official ``evaluate-v1.1.py`` computes them.

Citation: Rajpurkar, Zhang, Lopyrev & Liang (2016), "SQuAD: 100,000+ Questions for Machine
Comprehension of Text", EMNLP. The scoring below reproduces the official v1.1 evaluation script
function by function (same names, same order of normalisation steps, same edge cases).

Normalisation (``normalize_answer``), in this order:
  1. lower-case;
  2. delete every character of ASCII ``string.punctuation`` (deleted, not replaced by a space:
     "gold-themed" becomes "goldthemed");
  3. replace the articles ``\\b(a|an|the)\\b`` with a space;
  4. collapse runs of whitespace to one space and strip the ends.

EM: the normalised strings are equal. F1: multiset (``Counter``) overlap of the whitespace tokens
of the normalised strings; precision = overlap / prediction tokens, recall = overlap / gold
tokens, F1 their harmonic mean, and 0 when there is no overlap. Per question the max over its
gold answers is taken; the corpus score is the mean over questions, times 100.

Edge cases, as in the official script (kept on purpose so our numbers match published ones):
  * an empty prediction against a non-empty gold: EM 0, F1 0;
  * an empty prediction against an empty gold (or against a gold that normalises to nothing, such
    as "the"): EM 1 but F1 0, because the token overlap is empty and the script returns 0 before
    computing precision and recall.

Examples:

>>> normalize_answer("The  Denver Broncos!")
'denver broncos'
>>> exact_match_score("the Broncos.", "Broncos")
True
>>> round(f1_score("Denver Broncos team", "the Denver Broncos"), 4)
0.8
>>> squad_scores({"q1": "Broncos", "q2": "Panthers"},
...              {"q1": ["Denver Broncos", "Broncos"], "q2": ["Carolina Panthers"]})
{'exact_match': 50.0, 'f1': 83.33333333333333, 'n': 2}
"""
from __future__ import annotations

import re
import string
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from core.metrics.declared import Metric

__all__ = [
    "normalize_answer",
    "exact_match_score",
    "f1_score",
    "metric_max_over_ground_truths",
    "corpus_scores",
    "squad_scores",
    "word_overlap_f1",
]

# Where EM and F1 come from (Hugging Face evaluate's metrics/squad cites the same paper and script)
SQUAD_CITATION = ('Rajpurkar, Zhang, Lopyrev and Liang (2016), "SQuAD: 100,000+ Questions for Machine '
                  'Comprehension of Text", EMNLP 2016')
SQUAD_REFERENCE = "https://rajpurkar.github.io/SQuAD-explorer/ (the official evaluate-v1.1.py); SEEDS.md, Scoring"
DECLARED = (
    Metric("em", "EM", "higher", "%", "exact match: the share of questions whose normalised answer equals a "
           "gold answer (SQuAD v1.1)", citation=SQUAD_CITATION, reference=SQUAD_REFERENCE),
    Metric("f1", "F1", "higher", "%", "token F1 between the normalised answer and the best gold answer, "
           "averaged over questions (SQuAD v1.1)", citation=SQUAD_CITATION, reference=SQUAD_REFERENCE),
)

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _require_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}: {value!r}")
    return value


def normalize_answer(s: str) -> str:
    """Lower-case, delete ASCII punctuation, drop the articles a/an/the, collapse whitespace.

    >>> normalize_answer("Levi's Stadium, in the San Francisco Bay Area.")
    'levis stadium in san francisco bay area'
    >>> normalize_answer("gold-themed")
    'goldthemed'
    >>> normalize_answer("An apple a day")
    'apple day'
    >>> normalize_answer("Theater")  # articles only as whole words
    'theater'
    >>> normalize_answer("  ")
    ''
    """
    text = _require_str(s, "answer").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """True when the normalised prediction equals the normalised gold answer.

    >>> exact_match_score("February 7, 2016.", "February 7, 2016")
    True
    >>> exact_match_score("7 February", "February 7")
    False
    >>> exact_match_score("", "")
    True
    >>> exact_match_score("", "Denver")
    False
    """
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of the normalised strings (multiset overlap of whitespace tokens; 0 if none).

    >>> f1_score("7 February", "February 7")
    1.0
    >>> f1_score("gold themed", "gold-themed")  # the hyphen is deleted, so no shared token
    0
    >>> round(f1_score("Levi's Stadium in the San Francisco Bay Area",
    ...                "Levi's Stadium in the San Francisco Bay Area at Santa Clara, California."), 6)
    0.777778

    Repeated tokens count as many times as they occur in both (multiset intersection):

    >>> round(f1_score("new new york", "new york"), 6)  # overlap 2, P 2/3, R 1
    0.8

    The official script's empty-string behaviour is kept (see the module docstring):

    >>> f1_score("", "Denver")
    0
    >>> f1_score("", "")
    0
    """
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        # The official script returns the int 0 here; we keep it (0 == 0.0 in every use).
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def metric_max_over_ground_truths(
    metric_fn: Callable[[str, str], float], prediction: str, ground_truths: Sequence[str]
) -> float:
    """The best score of ``prediction`` against any of the gold answers.

    >>> metric_max_over_ground_truths(exact_match_score, "Broncos", ["Denver Broncos", "broncos"])
    True
    >>> round(metric_max_over_ground_truths(f1_score, "Denver", ["Denver Broncos", "Broncos"]), 4)
    0.6667
    >>> metric_max_over_ground_truths(f1_score, "Denver", [])
    Traceback (most recent call last):
    ...
    ValueError: no gold answers to score the prediction 'Denver' against
    """
    if isinstance(ground_truths, str):
        raise TypeError(f"ground_truths must be a sequence of str, not a single str: {ground_truths!r}")
    if len(ground_truths) == 0:
        raise ValueError(f"no gold answers to score the prediction {prediction!r} against")
    return max(metric_fn(prediction, ground_truth) for ground_truth in ground_truths)


def corpus_scores(
    predictions: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    exact_match_fn: Callable[[str, str], float] = exact_match_score,
    f1_fn: Callable[[str, str], float] = f1_score,
) -> dict[str, float | int]:
    """Mean EM and F1 (times 100) over the questions of ``references``, with any per-pair scorers.

    As in the official script, the questions are those of the references: a question without a
    prediction scores 0 (with a warning naming how many), and predictions for ids that are not
    in the references are ignored. ``n`` is the number of questions scored.

    >>> def strict_em(prediction, gold):  # a case-sensitive scorer, to show the plumbing
    ...     return prediction == gold
    >>> corpus_scores({"a": "X", "b": "y"}, {"a": ["x"], "b": ["y", "z"]}, strict_em, strict_em)
    {'exact_match': 50.0, 'f1': 50.0, 'n': 2}
    """
    if not isinstance(predictions, Mapping) or not isinstance(references, Mapping):
        raise TypeError("predictions and references must be mappings {question_id: ...}")
    if len(references) == 0:
        raise ValueError("no references: cannot average EM/F1 over zero questions")
    exact_match = f1 = 0.0
    unanswered = 0
    for qid, ground_truths in references.items():
        if qid not in predictions:
            unanswered += 1
            continue
        prediction = _require_str(predictions[qid], f"prediction for question {qid!r}")
        if isinstance(ground_truths, str) or len(ground_truths) == 0:
            raise ValueError(
                f"references[{qid!r}] must be a non-empty list of gold answer strings, got {ground_truths!r}"
            )
        exact_match += metric_max_over_ground_truths(exact_match_fn, prediction, ground_truths)
        f1 += metric_max_over_ground_truths(f1_fn, prediction, ground_truths)
    if unanswered:
        warnings.warn(f"{unanswered} of {len(references)} questions have no prediction; they score 0", stacklevel=2)
    total = len(references)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total, "n": total}


def squad_scores(
    predictions: Mapping[str, str], references: Mapping[str, Sequence[str]]
) -> dict[str, float | int]:
    """SQuAD v1.1 EM and F1 in percent: ``{"exact_match": .., "f1": .., "n": ..}``.

    ``predictions`` maps question id -> predicted answer text; ``references`` maps question id ->
    list of gold answer texts. Unanswered questions score 0 (see ``corpus_scores``).

    >>> squad_scores({"q1": "the Broncos", "q2": ""}, {"q1": ["Broncos"], "q2": ["Panthers"]})
    {'exact_match': 50.0, 'f1': 50.0, 'n': 2}
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     squad_scores({"q1": "Broncos"}, {"q1": ["Broncos"], "q2": ["Panthers"]})
    {'exact_match': 50.0, 'f1': 50.0, 'n': 2}
    >>> str(caught[0].message)
    '1 of 2 questions have no prediction; they score 0'
    """
    return corpus_scores(predictions, references, exact_match_score, f1_score)


def word_overlap_f1(a: str, b: str) -> float:
    """SQuAD token F1 between two answers (symmetric). Beat the AI: the model wins above 0.4.

    >>> word_overlap_f1("the Eiffel Tower in Paris", "Eiffel Tower")  # P 2/4, R 2/2
    0.6666666666666666
    >>> word_overlap_f1("Paris", "London")
    0.0
    """
    return float(f1_score(a, b))
