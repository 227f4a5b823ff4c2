"""Behaviour tests for extractive QA (CheckList, Ribeiro et al. 2020): MFT, INV and DIR.

A behaviour file (TOML, format in docs/BEHAVIOUR.md) holds templated tests. Each test expands
into cases by filling its ``{placeholders}`` from word lists, with a seed, then runs them against
a model:

  MFT  minimum functionality: the answer must match ``expect`` (SQuAD exact match, after
       normalisation: case, punctuation, articles);
  INV  invariance: the answer to the question perturbed by ``perturb`` (any spec of core.sweeps:
       ``keyboard_Q``, ``typo_Q:rate=0.2``, ``keyboard_Q+repair_Q:mode=all``) must equal the answer
       to the original (normalised); a case the perturbation does not apply to is skipped;
  DIR  directional: after replacing ``replace[0]`` by ``replace[1]`` in the context, the answer
       must change (normalised); with ``expect_after`` it must also match that.

The modules: :mod:`core.behaviour.spec` (reading and expanding files), this one (running them),
``python -m core.behaviour`` (the CLI, an exit status for CI).
"""
from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from core.behaviour.spec import BehaviourError, BehaviourFile, TestSpec, expand
from core.metrics import score_answer
from core.types import QAExample


@dataclass
class Answer:
    """A model's answer to one input: text, character span in its context (None: no answer), score."""

    text: str
    start: int | None
    end: int | None
    score: float | None


@dataclass
class CaseResult:
    """One case run against one model."""

    test: str
    kind: str
    model: str
    index: int
    status: str                 # pass | fail | skip
    reason: str
    question: str
    context: str
    expect: str | None
    answer: Answer | None
    question_after: str | None = None    # INV: the perturbed question
    context_after: str | None = None     # DIR: the edited context
    answer_after: Answer | None = None
    expect_after: str | None = None


@dataclass
class TestResult:
    """A test's outcome for one model: counts and its cases."""

    name: str
    kind: str
    model: str
    n: int
    passed: int
    failed: int
    skipped: int
    max_failure_rate: float | None
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def failure_rate(self) -> float | None:
        """Failed / run (skipped cases are not run); None when nothing ran."""
        ran = self.passed + self.failed
        return self.failed / ran if ran else None

    @property
    def over_threshold(self) -> bool:
        rate = self.failure_rate
        return self.max_failure_rate is not None and rate is not None and rate > self.max_failure_rate + 1e-12


def _answers(engine: Any, pairs: Sequence[tuple[str, str]]) -> list[Answer]:
    if not pairs:
        return []
    preds = engine.predict([q for q, _ in pairs], [c for _, c in pairs], n_best=1, skip_invalid=True)
    out = []
    for p in preds:
        best = p.best
        out.append(Answer(p.text, best.start if best else None, best.end if best else None,
                          float(best.score) if best else None))
    return out


def _same(a: Answer, b: Answer, lang: str) -> bool:
    """The same answer under the language's exact-match rule (core.metrics.rules): for Chinese,
    "是一名厨师。" and "是一名厨师" are one answer (SQuAD's normaliser strips only ASCII punctuation).

    >>> _same(Answer("是一名厨师。", 3, 9, 0.9), Answer("是一名厨师", 3, 8, 0.8), "zh")
    True
    >>> _same(Answer("the Rhine", 0, 9, 0.9), Answer("Rhine.", 4, 10, 0.8), "en"), _same(
    ...     Answer("Paris", 0, 5, 0.9), Answer("Lyon", 0, 4, 0.9), "en")
    (True, False)
    """
    return score_answer(a.text, [b.text], lang)[0] == 1.0


def _case_rng(seed: int, test: str, index: int) -> random.Random:
    digest = hashlib.sha256(f"behaviour\x1f{seed}\x1f{test}\x1f{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def perturber(spec_text: str) -> Callable[[QAExample, random.Random], QAExample | None]:
    """The ``perturb`` spec as a function (example, rng) -> perturbed example, or None when it does not apply."""
    from core.perturb import registry
    from core.perturb.spec import SpecError, parse_specs
    from core.sweeps.running.resolve import resolve_spec

    try:
        specs = parse_specs(spec_text)
        if len(specs) != 1:
            raise BehaviourError(f"perturb {spec_text!r} must be one spec, it gives {len(specs)}")
        if specs[0].is_file or any(s.startswith("file:") for s in specs[0].id.split("+")):
            raise BehaviourError(f"perturb {spec_text!r}: a behaviour test perturbs with a generator, not a file")
        resolved = resolve_spec(specs[0], 1, registry.get, None)
    except SpecError as e:   # SweepError (resolving) is one too
        raise BehaviourError(f"perturb {spec_text!r}: {e}") from None

    def apply(example: QAExample, rng: random.Random) -> QAExample | None:
        outcome = resolved.make(example, rng)
        return outcome.example if outcome.status == "ok" else None

    return apply


def run_test(test: TestSpec, engine: Any, model: str, seed: int = 0, lang: str = "en",
             default_max_failure_rate: float | None = None) -> TestResult:
    """Expand ``test`` (seeded) and run its cases on ``engine``, in two batched predict calls at most."""
    cases = expand(test, seed)
    results: list[CaseResult] = []
    before = _answers(engine, [(c.question, c.context) for c in cases])
    after_inputs: dict[int, tuple[str, str]] = {}
    skips: dict[int, str] = {}
    if test.kind == "INV":
        perturb = perturber(test.perturb or "")
        for c in cases:
            ex = QAExample(f"{test.name}-{c.index}", c.question, c.context, (), lang=lang)
            try:
                new = perturb(ex, _case_rng(seed, test.name, c.index))
            except Exception as e:   # a perturbation's own refusal (missing backend...): skip, say why
                new, skips[c.index] = None, f"{type(e).__name__}: {e}"
            if new is None:
                skips.setdefault(c.index, f"{test.perturb} does not apply to this question")
            elif new.question == c.question and new.context == c.context:
                skips[c.index] = f"{test.perturb} left this question unchanged"
            else:
                after_inputs[c.index] = (new.question, new.context)
    elif test.kind == "DIR":
        for c in cases:
            after_inputs[c.index] = (c.question, c.context_after or c.context)
    order = list(after_inputs)
    after = dict(zip(order, _answers(engine, [after_inputs[i] for i in order])))
    for c, a in zip(cases, before):
        r = CaseResult(test.name, test.kind, model, c.index, "fail", "", c.question, c.context, c.expect, a,
                       expect_after=c.expect_after)
        if test.kind == "MFT":
            em, _ = score_answer(a.text, [c.expect or ""], lang)
            r.status = "pass" if em == 1.0 else "fail"
            r.reason = "answer matches" if em == 1.0 else f"expected {c.expect!r}, got {a.text!r}"
        elif c.index in skips:
            r.status, r.reason = "skip", skips[c.index]
        else:
            b = after[c.index]
            r.question_after, r.context_after = after_inputs[c.index]
            if test.kind == "DIR":
                r.context_after = after_inputs[c.index][1]
                r.question_after = None
            else:
                r.context_after = None
            r.answer_after = b
            if test.kind == "INV":
                ok = _same(a, b, lang)
                r.status = "pass" if ok else "fail"
                r.reason = "same answer" if ok else f"answer changed from {a.text!r} to {b.text!r}"
            else:
                changed = not _same(a, b, lang)
                matches = c.expect_after is None or score_answer(b.text, [c.expect_after], lang)[0] == 1.0
                r.status = "pass" if changed and matches else "fail"
                r.reason = ("answer changed" + (" as expected" if c.expect_after else "") if changed and matches
                            else f"answer stayed {a.text!r}" if not changed
                            else f"answer changed to {b.text!r}, expected {c.expect_after!r}")
        results.append(r)
    threshold = test.max_failure_rate if test.max_failure_rate is not None else default_max_failure_rate
    return TestResult(test.name, test.kind, model, len(results), sum(r.status == "pass" for r in results),
                      sum(r.status == "fail" for r in results), sum(r.status == "skip" for r in results),
                      threshold, results)


def run_file(bfile: BehaviourFile, engines: dict[str, Any], default_max_failure_rate: float | None = None,
             progress: Callable[[int, int], None] | None = None) -> list[TestResult]:
    """Every test of ``bfile`` on every engine ({model name: engine}), tests in file order per model."""
    out = []
    total, done = len(bfile.tests) * len(engines), 0
    for model, engine in engines.items():
        for test in bfile.tests:
            out.append(run_test(test, engine, model, bfile.seed, bfile.lang, default_max_failure_rate))
            done += 1
            if progress:
                progress(done, total)
    return out


def results_rows(results: Sequence[TestResult]) -> list[dict[str, Any]]:
    """One summary row per (model, test): counts, failure rate (%), threshold, over threshold."""
    return [{"model": r.model, "test": r.name, "type": r.kind, "cases": r.n, "passed": r.passed,
             "failed": r.failed, "skipped": r.skipped,
             "failure rate %": None if r.failure_rate is None else round(100 * r.failure_rate, 1),
             "max failure rate %": None if r.max_failure_rate is None else round(100 * r.max_failure_rate, 1),
             "over threshold": r.over_threshold} for r in results]


def case_rows(results: Sequence[TestResult], only_failures: bool = False) -> list[dict[str, Any]]:
    """One flat row per case (for CSV/JSON export)."""
    rows = []
    for r in results:
        for c in r.cases:
            if only_failures and c.status != "fail":
                continue
            d = asdict(c)
            for key in ("answer", "answer_after"):
                a = d.pop(key)
                d[f"{key} text"] = a["text"] if a else None
                d[f"{key} span"] = None if not a or a["start"] is None else f"{a['start']}-{a['end']}"
                d[f"{key} score"] = None if not a or a["score"] is None else round(a["score"], 4)
            rows.append(d)
    return rows
