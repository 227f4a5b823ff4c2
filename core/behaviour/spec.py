"""Reading and expanding behaviour-test files (TOML; the format is documented in docs/BEHAVIOUR.md).

>>> f = loads('''
... lang = "en"
... seed = 1
... [[test]]
... name = "who lives where"
... type = "MFT"
... context = "{name} lives in {city}."
... question = "Where does {name} live?"
... expect = "{city}"
... fill = { name = ["Ana", "Ben"], city = ["Oslo", "Rome"] }
... ''')
>>> [(c.question, c.context, c.expect) for c in expand(f.tests[0], f.seed)][:2]
[('Where does Ana live?', 'Ana lives in Oslo.', 'Oslo'), ('Where does Ana live?', 'Ana lives in Rome.', 'Rome')]
"""
from __future__ import annotations

import random
import re
import tomllib
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import Any

from core.budgets import MAX_BEHAVIOUR_CHARS, MAX_TOML_DEPTH, MAX_TOML_KB, BudgetError

__all__ = ["BehaviourError", "BehaviourFile", "TestSpec", "Case", "load", "loads", "expand", "KINDS",
           "max_file_bytes", "check_size", "toml_depth", "expanded_chars", "MAX_CASES", "MAX_TOTAL_CASES"]

KINDS = ("MFT", "INV", "DIR")
MAX_TESTS = 500
MAX_CASES = 2_000            # per test
MAX_TOTAL_CASES = 20_000     # per file: each case is one or two model calls
DEFAULT_CASES = 50
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOP_KEYS = {"name", "description", "lang", "seed", "test"}
_TEST_KEYS = {"name", "type", "description", "question", "context", "expect", "perturb", "replace",
              "expect_after", "fill", "n", "distinct", "max_failure_rate", "family"}


class BehaviourError(ValueError):
    """A behaviour file that cannot be used; the message names the file part at fault."""


@dataclass(frozen=True)
class TestSpec:
    """One test as written: templates, word lists and what it checks."""

    name: str
    kind: str                               # MFT | INV | DIR
    question: str
    context: str
    expect: str | None = None               # MFT: the answer
    perturb: str | None = None              # INV: a perturbation spec (core.sweeps spec language)
    replace: tuple[str, str] | None = None  # DIR: (text in the context, its replacement)
    expect_after: str | None = None         # DIR: the answer after the edit (optional)
    fill: dict[str, tuple[str, ...]] = field(default_factory=dict)
    n: int = DEFAULT_CASES                  # at most this many cases (seeded sample of the fills)
    distinct: tuple[str, ...] = ()          # placeholders that must take different values
    max_failure_rate: float | None = None
    description: str = ""
    family: str = ""                        # tests sharing a family are reported together; "" = own name

    @property
    def family_name(self) -> str:
        """The family this test reports under: its ``family``, else its own name."""
        return self.family or self.name


@dataclass(frozen=True)
class Case:
    """One expanded case."""

    index: int
    question: str
    context: str
    expect: str | None = None
    context_after: str | None = None
    expect_after: str | None = None
    values: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class BehaviourFile:
    name: str
    lang: str
    seed: int
    tests: tuple[TestSpec, ...]
    description: str = ""


def placeholders(template: str) -> list[str]:
    """The placeholder names of a template, in order (``{{`` and ``}}`` are literal braces).

    >>> placeholders("{a} and {b} {{not}} {a}")
    ['a', 'b']
    """
    return list(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(template) if m.group(1)))


def fill_template(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]``.

    >>> fill_template("{x} costs {{5}}", {"x": "tea"})
    'tea costs {5}'
    """
    def sub(m: re.Match) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        return values[m.group(1)]

    return _PLACEHOLDER.sub(sub, template)


def _str(test: str, data: dict, key: str, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise BehaviourError(f"test {test!r}: missing {key!r}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise BehaviourError(f"test {test!r}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _test(data: Any, position: int) -> TestSpec:
    if not isinstance(data, dict):
        raise BehaviourError(f"test #{position}: must be a table ([[test]])")
    name = data.get("name", f"test {position}")
    if not isinstance(name, str) or not name.strip():
        raise BehaviourError(f"test #{position}: 'name' must be a non-empty string")
    unknown = sorted(set(data) - _TEST_KEYS)
    if unknown:
        raise BehaviourError(f"test {name!r}: unknown key(s) {unknown}; known: {sorted(_TEST_KEYS)}")
    kind = data.get("type")
    if kind not in KINDS:
        raise BehaviourError(f"test {name!r}: 'type' must be one of {', '.join(KINDS)}, got {kind!r}")
    question, context = _str(name, data, "question"), _str(name, data, "context")
    expect = _str(name, data, "expect", required=kind == "MFT")
    perturb = _str(name, data, "perturb", required=kind == "INV")
    expect_after = _str(name, data, "expect_after", required=False)
    replace = data.get("replace")
    if kind == "DIR":
        if (not isinstance(replace, list) or len(replace) != 2 or not all(isinstance(x, str) and x for x in replace)):
            raise BehaviourError(f"test {name!r}: a DIR test needs replace = [\"text in the context\", \"new text\"]")
        replace = (replace[0], replace[1])
    elif replace is not None:
        raise BehaviourError(f"test {name!r}: 'replace' belongs to DIR tests")
    if kind != "INV" and perturb is not None:
        raise BehaviourError(f"test {name!r}: 'perturb' belongs to INV tests")
    if kind != "DIR" and expect_after is not None:
        raise BehaviourError(f"test {name!r}: 'expect_after' belongs to DIR tests")
    raw_fill = data.get("fill", {})
    if not isinstance(raw_fill, dict):
        raise BehaviourError(f"test {name!r}: 'fill' must be a table of word lists")
    fill: dict[str, tuple[str, ...]] = {}
    for key, values in raw_fill.items():
        if (not isinstance(values, list) or not values
                or not all(isinstance(v, str) and v.strip() for v in values)):
            raise BehaviourError(f"test {name!r}: fill.{key} must be a non-empty list of non-empty strings")
        fill[key] = tuple(values)
    templates = [t for t in (question, context, expect, expect_after, *(replace or ())) if t]
    used = list(dict.fromkeys(p for t in templates for p in placeholders(t)))
    missing = [p for p in used if p not in fill]
    if missing:
        raise BehaviourError(f"test {name!r}: no word list for placeholder(s) {missing} (add them under fill)")
    unused = [k for k in fill if k not in used]
    if unused:
        raise BehaviourError(f"test {name!r}: fill.{unused[0]} is not used by any template")
    n = data.get("n", DEFAULT_CASES)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_CASES:
        raise BehaviourError(f"test {name!r}: 'n' must be an integer from 1 to {MAX_CASES}, got {n!r}")
    distinct = data.get("distinct", [])
    if not isinstance(distinct, list) or not all(isinstance(d, str) and d in fill for d in distinct):
        raise BehaviourError(f"test {name!r}: 'distinct' must list placeholders of fill, got {distinct!r}")
    rate = data.get("max_failure_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1):
        raise BehaviourError(f"test {name!r}: 'max_failure_rate' must be a number from 0 to 1, got {rate!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise BehaviourError(f"test {name!r}: 'description' must be a string")
    family = data.get("family", "")
    if not isinstance(family, str):
        raise BehaviourError(f"test {name!r}: 'family' must be a string")
    return TestSpec(name, kind, question, context, expect, perturb, replace, expect_after, fill, n,
                    tuple(distinct), None if rate is None else float(rate), description, family.strip())


def max_file_bytes() -> int:
    """The largest behaviour file read or uploaded, in bytes (core.budgets.MAX_TOML_KB)."""
    return MAX_TOML_KB.value() * 1024


def check_size(size: int, name: str) -> None:
    """BehaviourError when a file of ``size`` bytes is over the budget (before it is read)."""
    try:
        MAX_TOML_KB.check(-(-size // 1024), name, "is")
    except BudgetError as e:
        raise BehaviourError(str(e)) from None


def toml_depth(text: str) -> int:
    """The deepest nesting of arrays and inline tables (and table headers) in TOML text, found
    without recursion and without parsing: brackets inside strings and comments do not count.

    >>> toml_depth('a = [[1, "]]]"], {b = [2]}] # [[[')
    3
    >>> toml_depth("x = " + "[" * 50_000 + "]" * 50_000)
    50000
    """
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            if text.startswith(c * 3, i):   # a multi-line string: to its closing triple quote
                end = text.find(c * 3, i + 3)
                while c == '"' and end > 0 and _escaped(text, end):
                    end = text.find(c * 3, end + 1)
                i = n if end < 0 else end + 3
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if c == '"' and text[j] == "\\" else 1
                i = j + 1
            continue
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def _escaped(text: str, at: int) -> bool:
    """True when the character at ``at`` follows an odd number of backslashes."""
    k = at
    while k > 0 and text[k - 1] == "\\":
        k -= 1
    return (at - k) % 2 == 1


def _longest(template: str | None, fill: dict[str, tuple[str, ...]]) -> int:
    """The longest text ``template`` can fill out to (each placeholder its longest value)."""
    if not template:
        return 0
    longest = {k: max(map(len, v)) for k, v in fill.items()}
    return len(template) + sum(longest.get(m.group(1), 0) for m in _PLACEHOLDER.finditer(template) if m.group(1))


def expanded_chars(test: TestSpec) -> int:
    """An upper bound on the characters ``expand(test)`` builds (questions, contexts, answers and
    their DIR versions), computed from the templates and word lists before any case is built."""
    cases = min(test.n, prod(len(v) for v in test.fill.values())) if test.fill else 1
    per_case = sum(_longest(t, test.fill) for t in (test.question, test.context, test.expect, test.expect_after))
    if test.replace:   # the context again, with the replacement in it
        per_case += _longest(test.context, test.fill) + _longest(test.replace[1], test.fill)
    return cases * per_case


def loads(text: str, name: str = "behaviour") -> BehaviourFile:
    """A behaviour file from TOML text; BehaviourError on anything malformed or over a budget
    (core.budgets: its size, its nesting and the text its templates fill out to, each checked
    before the work it would cost)."""
    check_size(len(text.encode("utf-8")), name)
    try:
        MAX_TOML_DEPTH.check(toml_depth(text), f"{name}: its arrays and tables", "nest")
    except BudgetError as e:
        raise BehaviourError(str(e)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BehaviourError(f"{name}: not valid TOML: {e}") from None
    except RecursionError:   # not reached below the depth budget; never a traceback on the page
        raise BehaviourError(f"{name}: nested too deeply") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise BehaviourError(f"{name}: unknown key(s) {unknown}; known: {sorted(_TOP_KEYS)}")
    lang = data.get("lang", "en")
    if not isinstance(lang, str) or not re.fullmatch(r"[a-z]{2,3}", lang):
        raise BehaviourError(f"{name}: 'lang' must be a language code like \"en\", got {lang!r}")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise BehaviourError(f"{name}: 'seed' must be an integer, got {seed!r}")
    tests = data.get("test")
    if not isinstance(tests, list) or not tests:
        raise BehaviourError(f"{name}: no tests (write each as a [[test]] table)")
    if len(tests) > MAX_TESTS:
        raise BehaviourError(f"{name}: {len(tests)} tests, at most {MAX_TESTS}")
    parsed = tuple(_test(t, i + 1) for i, t in enumerate(tests))
    total = sum(min(t.n, prod(len(v) for v in t.fill.values())) for t in parsed)
    if total > MAX_TOTAL_CASES:
        raise BehaviourError(f"{name}: up to {total:,} cases; at most {MAX_TOTAL_CASES:,} per file (lower 'n')")
    try:
        MAX_BEHAVIOUR_CHARS.check(sum(expanded_chars(t) for t in parsed), f"{name}: its templates", "could fill out to")
    except BudgetError as e:
        raise BehaviourError(str(e)) from None
    names = [t.name for t in parsed]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise BehaviourError(f"{name}: test names must be unique, repeated: {dupes}")
    return BehaviourFile(str(data.get("name", name)), lang, seed, parsed, str(data.get("description", "")))


def load(path: str | Path) -> BehaviourFile:
    """A behaviour file from disk (UTF-8 TOML)."""
    p = Path(path)
    if not p.is_file():
        raise BehaviourError(f"{path}: no such file")
    check_size(p.stat().st_size, p.name)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BehaviourError(f"{path}: not UTF-8 text") from None
    return loads(text, p.stem)


def _combination(index: int, names: list[str], fill: dict[str, tuple[str, ...]]) -> dict[str, str]:
    values = {}
    for name in reversed(names):
        options = fill[name]
        index, k = divmod(index, len(options))
        values[name] = options[k]
    return values


def expand(test: TestSpec, seed: int = 0) -> list[Case]:
    """The test's cases: every combination of its word lists when there are at most ``n`` of them
    (in order), else ``n`` combinations drawn without replacement with ``seed`` (and the test's
    name, so tests do not share draws). Combinations where ``distinct`` placeholders repeat a
    value are left out. A DIR case whose context does not contain ``replace[0]`` is an error."""
    names = list(test.fill)
    size = prod(len(test.fill[k]) for k in names) if names else 1
    rng = random.Random(f"{seed}\x1f{test.name}")
    order = range(size) if size <= test.n else rng.sample(range(size), min(size, max(test.n * 20, 10_000)))
    cases: list[Case] = []
    for idx in order:
        values = _combination(idx, names, test.fill)
        if test.distinct and len({values[d] for d in test.distinct}) < len(test.distinct):
            continue
        question, context = fill_template(test.question, values), fill_template(test.context, values)
        expect = fill_template(test.expect, values) if test.expect else None
        context_after = expect_after = None
        if test.replace:
            old, new = (fill_template(t, values) for t in test.replace)
            if old not in context:
                raise BehaviourError(f"test {test.name!r}: replace text {old!r} is not in the context {context!r}")
            context_after = context.replace(old, new, 1)
            expect_after = fill_template(test.expect_after, values) if test.expect_after else None
        if test.kind == "MFT" and expect and expect not in context:
            raise BehaviourError(f"test {test.name!r}: the expected answer {expect!r} is not in the context "
                                 f"{context!r} (an extractive model can only answer with a span of it)")
        cases.append(Case(len(cases), question, context, expect, context_after, expect_after,
                          tuple(sorted(values.items()))))
        if len(cases) == test.n:
            break
    if not cases:
        raise BehaviourError(f"test {test.name!r}: no case left (check 'distinct' and the word lists)")
    return cases
