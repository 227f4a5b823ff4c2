"""Every work budget in one place: how much one request (a typed spec, an upload, a stored name,
a sweep) may make the server do, each checked before the work or the memory is spent.

Each :class:`Budget` is declared once here, with its default and the environment variable that
overrides it (a server-side setting: a visitor's browser can change none of them). A budget is read
when it is checked, so a change to the environment applies to the next request. A malformed
value is the administrator's mistake and says so (ValueError naming the variable). An exceeded
budget raises :class:`BudgetError` (a ValueError) whose message names what was asked, the limit
and the variable that sets it. docs/SECURITY.md ("Budgets") lists them all; :func:`table` prints
that list from these declarations.

>>> MAX_SPECS.check(12, "the typed specs")
>>> try:
...     MAX_SPECS.check(8_000_000, "the typed specs")
... except BudgetError as e:
...     print(e)
the typed specs would expand to 8,000,000 perturbation specs; the limit is 1,000 (the server's QAX_MAX_SPECS)
"""
from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Budget", "BudgetError", "BUDGETS", "MAX_SPECS", "MAX_REPEATS", "MAX_RAY_WORKERS",
           "MAX_TOML_KB", "MAX_TOML_DEPTH", "MAX_BEHAVIOUR_CHARS", "MAX_NAME_CHARS", "MAX_NOTE_CHARS",
           "MAX_SWEEPS", "MAX_SWEEPS_PER_SESSION", "SWEEP_GRACE_S", "MODEL_MEMORY_MB", "SESSION_MEMORY_MB",
           "MAX_ATTRIBUTIONS", "MAX_PROCESSES", "MAX_THREADS",
           "MAX_BATCH_SIZE", "MAX_CHUNK", "MAX_QUESTIONS", "MAX_ROUNDS", "MAX_NBEST", "MAX_RESAMPLES",
           "MAX_ATTRIBUTION_STEPS", "MAX_BEAMS", "MAX_TRAIN_STEPS", "COUNTS", "table", "clean_name",
           "clean_note"]


class BudgetError(ValueError):
    """A request refused before any work: it would exceed a budget (the message says which)."""


@dataclass(frozen=True)
class Budget:
    """One limit: ``env`` overrides ``default`` (a positive integer, in ``unit``); ``default_fn``
    computes a default that depends on the machine (the CPU count)."""

    name: str
    env: str
    default: int
    unit: str
    doc: str
    default_fn: Callable[[], int] | None = None

    def value(self) -> int:
        """The limit now: the environment's value when set, else the default."""
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default_fn() if self.default_fn is not None else self.default
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{self.env}={raw!r}: expected a positive whole number of {self.unit}")
        return n

    def amount(self, n: int) -> str:
        """``n`` with the unit, singular for one: ``1 sweep``, ``2 sweeps``, ``1,000 KB``."""
        unit = self.unit[:-1] if n == 1 and self.unit.endswith("s") else self.unit
        return f"{n:,} {unit}"

    def check(self, n: int, what: str, verb: str = "would expand to") -> None:
        """Raise :class:`BudgetError` when ``n`` is over the limit: "``what`` ``verb`` n unit"."""
        limit = self.value()
        if n > limit:
            raise BudgetError(f"{what} {verb} {self.amount(n)}; the limit is {limit:,} "
                              f"(the server's {self.env})")


def _cpus() -> int:
    return max(1, os.cpu_count() or 1)


MAX_SPECS = Budget(
    "spec expansion", "QAX_MAX_SPECS", 1000, "perturbation specs",
    "Specs one spec list may expand to (ranges, lists and families multiplied out), counted before "
    "expanding: the Sweeps page's typed specs, the sweep CLI's --perturbations, behaviour tests, "
    "training augmentation.")
MAX_REPEATS = Budget(
    "repeats", "QAX_MAX_REPEATS", 100, "repeats",
    "Runs of each randomised perturbation in one sweep (the page's Repeats, the CLI's --repeats).")
MAX_RAY_WORKERS = Budget(
    "Ray workers", "QAX_MAX_RAY_WORKERS", 0, "workers",
    "Ray workers one sweep may start; each holds one copy of every chosen model. Default: the "
    "server's CPU count.", default_fn=_cpus)
MAX_TOML_KB = Budget(
    "behaviour TOML size", "QAX_MAX_TOML_KB", 256, "KB",
    "Size of a behaviour-test TOML (an upload on the Behaviour page or a file the CLI reads), "
    "checked before parsing.")
MAX_TOML_DEPTH = Budget(
    "behaviour TOML nesting", "QAX_MAX_TOML_DEPTH", 16, "levels",
    "Nesting of arrays and tables in a behaviour-test TOML, measured without recursion before "
    "parsing (a test file nests 4).")
MAX_BEHAVIOUR_CHARS = Budget(
    "behaviour expanded size", "QAX_MAX_BEHAVIOUR_CHARS", 2_000_000, "characters",
    "Characters of contexts and questions a behaviour suite's templates expand to, counted from "
    "the templates and their fill lists before any text is built.")
MAX_NAME_CHARS = Budget(
    "name length", "QAX_MAX_NAME_CHARS", 200, "characters",
    "A stored name (sweep name, Beat-the-AI name, speech-trial speaker, accent and microphone), "
    "after normalising (NFC; bidi overrides and zero-width characters removed).")
MAX_NOTE_CHARS = Budget(
    "note length", "QAX_MAX_NOTE_CHARS", 2000, "characters",
    "Free text a visitor stores beside a name (speech-trial notes).")
MAX_SWEEPS = Budget(
    "sweeps per server", "QAX_MAX_SWEEPS", 2, "sweeps",
    "Sweeps started from the browser running at once on the server (the CLI is not counted).")
MAX_SWEEPS_PER_SESSION = Budget(
    "sweeps per session", "QAX_MAX_SWEEPS_PER_SESSION", 1, "sweeps",
    "Sweeps one browser session may run at once.")
SWEEP_GRACE_S = Budget(
    "abandoned sweep grace", "QAX_SWEEP_GRACE_S", 120, "seconds",
    "A sweep whose browser session has gone (tab closed, session expired) is cancelled this long "
    "after; its committed rows stay and it resumes from them when started again.")
MAX_ATTRIBUTIONS = Budget(
    "attributions per server", "QAX_MAX_ATTRIBUTIONS", 2, "attribution runs",
    "Token-attribution runs (Ask's colouring, \"why did it change?\") computing at once on the "
    "server; each browser session runs one at a time.")

MODEL_MEMORY_MB = Budget(
    "model memory", "QAX_MODEL_MEMORY_MB", 2048, "MB",
    "Resident memory the loaded QA models may take together, each as measured when it loaded "
    "(core.qa.engine_cache): loading one more that would pass it first lets go of the least "
    "recently used. Sized for an 8 GB machine: the server's own ~0.5 GB, the models, ten "
    "sessions' allowance and room for the system.")
SESSION_MEMORY_MB = Budget(
    "memory per session", "QAX_SESSION_MEMORY_MB", 64, "MB",
    "What one visitor's session may add to the server beside the models (its answers, variants, "
    "parsed uploads not counted: they have their own limit), declared so that the server's size "
    "with N sessions is known: model memory + N x this (benchmarks/concurrent_askers.py --rss "
    "measures it).")


# ------------------------------------------------------------------ the command lines' counts
# Each count a command line takes (core.cli.Count) is checked against one of these (or MAX_REPEATS,
# MAX_RAY_WORKERS) while its flags are parsed: over the limit, one line and exit status 2 before
# any work. docs/SECURITY.md lists every such option (core.commands.count_table).

MAX_PROCESSES = Budget(
    "worker processes", "QAX_MAX_PROCESSES", 0, "processes",
    "Processes one command starts to answer in parallel (a sweep's --processes, a benchmark's "
    "--cores); each loads its own copy of the models. Default: the CPU count.", default_fn=_cpus)
MAX_THREADS = Budget(
    "threads", "QAX_MAX_THREADS", 0, "threads",
    "Threads one forward pass may use (--threads). Default: the CPU count.", default_fn=_cpus)
MAX_BATCH_SIZE = Budget(
    "batch size", "QAX_MAX_BATCH_SIZE", 1024, "windows",
    "Windows (or training examples) in one forward pass (--batch-size, --batch-sizes); an H100 "
    "was fastest at 256-512.")
MAX_CHUNK = Budget(
    "chunk size", "QAX_MAX_CHUNK", 4096, "units",
    "Questions or sweep units handled between two commits or timings (--chunk-size, --chunk); "
    "the Sweeps page's Chunk size goes as high.")
MAX_QUESTIONS = Budget(
    "questions", "QAX_MAX_QUESTIONS", 200_000, "questions",
    "Questions (or question pairs) one command reads, samples, times or lists (--n, --first, "
    "--sample, --limit, --pairs, ...): SQuAD's training set has 87,599.")
MAX_ROUNDS = Budget(
    "rounds", "QAX_MAX_ROUNDS", 100, "rounds",
    "Times a benchmark repeats its measurement (--rounds, --copies).")
MAX_NBEST = Budget(
    "n-best size", "QAX_MAX_NBEST", 100, "answers",
    "Candidate answers kept per question (--k).")
MAX_RESAMPLES = Budget(
    "bootstrap resamples", "QAX_MAX_RESAMPLES", 100_000, "resamples",
    "Bootstrap resamples of a confidence interval (--n-boot).")
MAX_ATTRIBUTION_STEPS = Budget(
    "attribution steps", "QAX_MAX_ATTRIBUTION_STEPS", 1000, "steps",
    "Integrated-gradients steps, each a forward and a backward pass (--steps).")
MAX_BEAMS = Budget(
    "beam size", "QAX_MAX_BEAMS", 32, "beams",
    "Beams of a machine translation's search (--num-beams).")
MAX_TRAIN_STEPS = Budget(
    "training steps", "QAX_MAX_TRAIN_STEPS", 1_000_000, "steps",
    "Optimiser steps one training run may take (--max-steps).")

COUNTS: tuple[Budget, ...] = (MAX_PROCESSES, MAX_THREADS, MAX_RAY_WORKERS, MAX_BATCH_SIZE, MAX_CHUNK,
                              MAX_QUESTIONS, MAX_REPEATS, MAX_ROUNDS, MAX_NBEST, MAX_RESAMPLES,
                              MAX_ATTRIBUTION_STEPS, MAX_BEAMS, MAX_TRAIN_STEPS)

BUDGETS: tuple[Budget, ...] = (MAX_SPECS, MAX_REPEATS, MAX_RAY_WORKERS, MAX_TOML_KB, MAX_TOML_DEPTH,
                               MAX_BEHAVIOUR_CHARS, MAX_NAME_CHARS, MAX_NOTE_CHARS, MAX_SWEEPS,
                               MAX_SWEEPS_PER_SESSION, SWEEP_GRACE_S, MODEL_MEMORY_MB, SESSION_MEMORY_MB,
                               MAX_ATTRIBUTIONS, MAX_PROCESSES, MAX_THREADS,
                               MAX_BATCH_SIZE, MAX_CHUNK, MAX_QUESTIONS, MAX_ROUNDS, MAX_NBEST,
                               MAX_RESAMPLES, MAX_ATTRIBUTION_STEPS, MAX_BEAMS, MAX_TRAIN_STEPS)


def table() -> str:
    """The budgets as a Markdown table (name, default, variable), as docs/SECURITY.md shows them.

    >>> print(table().splitlines()[2])
    | spec expansion | 1,000 perturbation specs | `QAX_MAX_SPECS` |
    """
    rows = ["| budget | default | setting |", "|---|---|---|"]
    for b in BUDGETS:
        default = "the CPU count" if b.default_fn is not None else b.amount(b.default)
        rows.append(f"| {b.name} | {default} | `{b.env}` |")
    return "\n".join(rows)


# ------------------------------------------------------------------------------- stored text

# Bidi embeddings and overrides (U+202A-202E), bidi isolates (U+2066-2069), zero-width space,
# non-joiner and joiner (U+200B-200D), word joiner (U+2060) and the byte-order mark (U+FEFF):
# they reorder or hide what a name shows. Other control characters go too (a name is one line).
_HIDDEN = re.compile("[\u202a-\u202e\u2066-\u2069\u200b-\u200d\u2060\ufeff\u0000-\u0008"
                     "\u000b\u000c\u000e-\u001f\u007f]")


def clean_name(text: object, what: str = "the name") -> str:
    r"""A name as it is stored: NFC, bidi overrides, zero-width and control characters removed,
    whitespace collapsed; :class:`BudgetError` when it is still longer than MAX_NAME_CHARS.

    >>> clean_name("  Ada\u202e ecalevoL \u200b\u2066x\u2069 ")
    'Ada ecalevoL x'
    >>> clean_name("Cafe\u0301") == "Caf\u00e9"
    True
    >>> clean_name("x" * 201, "the sweep name")
    Traceback (most recent call last):
    ...
    core.budgets.BudgetError: the sweep name has 201 characters; the limit is 200 (the server's QAX_MAX_NAME_CHARS)
    """
    clean = " ".join(_HIDDEN.sub("", unicodedata.normalize("NFC", str(text))).split())
    MAX_NAME_CHARS.check(len(clean), what, "has")
    return clean


def clean_note(text: object, what: str = "the note") -> str:
    r"""Free text as it is stored: NFC, bidi overrides and zero-width characters removed (line
    breaks kept), stripped; :class:`BudgetError` when longer than MAX_NOTE_CHARS.

    >>> clean_note(" two\nlines\u202e ")
    'two\nlines'
    """
    clean = _HIDDEN.sub("", unicodedata.normalize("NFC", str(text)).replace("\r\n", "\n")).strip()
    MAX_NOTE_CHARS.check(len(clean), what, "has")
    return clean
