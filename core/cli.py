"""One way for every command line to fail on bad input: a one-line message, exit status 2.

A user who types a wrong model name, points at a broken JSON file or an unwritable folder must
read what is wrong, not a Python stack. Every ``python -m core.<tool>`` wraps its ``main`` with
:func:`command`: the errors bad input raises (ValueError and its kin: dataset, sweep, JSON and
UTF-8 errors; OSError; SQLite errors; a model that cannot be loaded) end as

    python -m core.models.evaluate: error: no model named 'nope' in models.toml

on stderr with exit status 2, the convention argparse already uses for bad flags. ``--debug``
anywhere on the command line (or QAX_DEBUG=1) lets the exception through with its traceback,
for the bug a message hides. Anything else (a real bug) keeps its traceback.

What a command reads, writes and counts is declared on its :class:`ArgumentParser`, and checked
while parsing, before any work: files with ``add_output`` / ``add_input`` (an output that is an
input, or that cannot be written, is refused), counts with ``type=Count(budget)`` (over the
budget of core.budgets, refused), seeds with ``type=seed``, other whole numbers with
``type=Bounded(low, high)``. tests/test_cli_guards.py holds every command in core/ and
benchmarks/ to it (core.commands reads their parsers).
"""
from __future__ import annotations

import argparse
import functools
import os
import pickle
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.budgets import Budget
from core.io.outputs import refuse_inputs, write_bytes_atomic, write_text_atomic  # noqa: F401 (the CLIs' helpers)

DEBUG_FLAG = "--debug"


class CLIError(ValueError):
    """Bad input found by a command itself; the message says what to do."""


# The error classes bad input raises. ValueError covers the project's own input errors
# (DatasetError, SweepError, SettingsError, QAInputError, PerturbationError, ...), JSON and UTF-8
# errors; KeyError an unknown registry id (an IndexError is a bug: it keeps its traceback).
EXPECTED = (ValueError, OSError, KeyError, sqlite3.Error, pickle.UnpicklingError, RecursionError)
# RuntimeError subclasses for a missing model or tool, named so that checking an error never
# imports their modules (the registry pulls in torch, the speech engines more).
EXPECTED_ELSEWHERE = frozenset({
    "core.qa.model_entry.ModelLoadError", "core.qa.generative.runtimes.GenerationError",
    "core.translate.translators.TranslationError",
    "core.perturb.lexicon.LexiconUnavailable", "core.perturb.similarity.EncoderUnavailable",
    "core.speech.asr.ASRError", "core.speech.tts.TTSError", "core.speech.recorder.RecorderError",
})


def is_expected(exc: BaseException) -> bool:
    """True for an error that bad input or a missing tool causes (a message is enough), False for
    a bug (its traceback is needed).

    >>> is_expected(ValueError("x")), is_expected(FileNotFoundError()), is_expected(IndexError(0))
    (True, True, False)
    """
    return isinstance(exc, EXPECTED) or any(
        f"{c.__module__}.{c.__qualname__}" in EXPECTED_ELSEWHERE for c in type(exc).__mro__)


def one_line(exc: BaseException) -> str:
    """The exception's message on one line: the class name only where the message is empty.

    >>> one_line(ValueError("bad\\n  value"))
    'bad value'
    >>> one_line(KeyError("no perturbation 'x'"))
    "no perturbation 'x'"
    >>> one_line(FileNotFoundError(2, "No such file or directory", "/nope/a.json"))
    '/nope/a.json: No such file or directory'
    >>> one_line(RecursionError("maximum recursion depth exceeded"))
    'input nested too deeply to read (maximum recursion depth exceeded)'
    """
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    elif isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        text = exc.args[0]  # str(KeyError) would wrap the message in quotes
    elif isinstance(exc, RecursionError):
        text = f"input nested too deeply to read ({exc})"
    else:
        text = str(exc)
    return " ".join(text.split()) or type(exc).__name__


# How an option's value names files: given the value and the whole namespace, the paths it reads
# or writes (a data set name resolved under the data directory, a default derived from other flags).
PathsOf = Callable[[object, argparse.Namespace], "str | os.PathLike | Iterable[str | os.PathLike] | None"]


@dataclass(frozen=True)
class PathRole:
    """What an option's files are to its command: ``output`` (written) or ``input`` (read).
    ``folder``: the output is a folder (not probed as a file); ``also_input``: an output the
    command also reads in other modes (a sweep store: written by a sweep, read by ``--list``), so
    it is kept off the other inputs and the other outputs are kept off it, and it is not probed."""

    kind: str
    paths: PathsOf | None = None
    folder: bool = False
    also_input: bool = False


class ParserBuilt(BaseException):
    """Raised instead of parsing while :func:`capture_parsers` is active: carries the parser a
    command built, so the commands can be listed without running them (a BaseException, so no
    command's error handling swallows it)."""

    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


_capturing = False


class capture_parsers:
    """``with capture_parsers(): main([])`` raises :class:`ParserBuilt` with ``main``'s parser at
    its first ``parse_args``: how :mod:`core.commands` lists every option of every command."""

    def __enter__(self):
        global _capturing
        _capturing = True
        return self

    def __exit__(self, *exc):
        global _capturing
        _capturing = False
        return False


def option_name(action: argparse.Action) -> str:
    """``--json`` for an option, the metavar (or the upper-cased name) for a positional."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    return action.metavar if isinstance(action.metavar, str) else action.dest.upper()


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block before it) and ``--debug`` in its --help
    (:func:`command` takes the flag off the command line before parsing).

    Every file a command writes is declared with :meth:`add_output` and every file it reads with
    :meth:`add_input`; parsing then refuses, before the command does any work, an output that is
    one of the inputs (or another output) and an output file that cannot be written. This is the
    only way a command names an output (tests/test_cli_guards.py enumerates every option of every
    command line and fails on one that looks like an output and is not declared)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument(DEBUG_FLAG, action="store_true",
                          help="show the full traceback of an error instead of a one-line message")
        self.fixed_inputs: list[tuple[str, PathsOf]] = []

    def reads(self, *names: str) -> None:
        """Declare data sets the command reads that no option names (a benchmark's fixed
        ``xquad/xquad.en``): names under the data directory, resolved when the flags are parsed."""
        for name in names:
            self.fixed_inputs.append((name, lambda _, namespace, name=name: dataset_files()([name], namespace)))

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")

    def _declare(self, role: PathRole, flags: tuple[str, ...], kwargs: dict) -> argparse.Action:
        action = self.add_argument(*flags, **kwargs)
        action.path_role = role
        return action

    def add_output(self, *flags: str, paths: PathsOf | None = None, folder: bool = False,
                   also_input: bool = False, **kwargs) -> argparse.Action:
        """``add_argument`` for a file (or, with ``folder``, a folder) the command writes."""
        return self._declare(PathRole("output", paths, folder, also_input), flags, kwargs)

    def add_input(self, *flags: str, paths: PathsOf | None = None, **kwargs) -> argparse.Action:
        """``add_argument`` for a file the command reads; ``paths`` resolves a name (a data set
        under the data directory) or a default to the file that is read."""
        return self._declare(PathRole("input", paths), flags, kwargs)

    def parse_known_args(self, args=None, namespace=None):
        if _capturing:
            raise ParserBuilt(self)
        namespace, extras = super().parse_known_args(args, namespace)
        self.check_paths(namespace)
        return namespace, extras

    def check_paths(self, namespace: argparse.Namespace) -> None:
        """Refuse (OutputIsInputError, CLIError: one line, exit 2 under :func:`command`) an output
        that is an input or another output, or an output file that cannot be created."""
        outputs: dict[str, object] = {}
        inputs: dict[str, object] = {}
        probe: dict[str, object] = {}
        for action in self._actions:
            role = getattr(action, "path_role", None)
            if role is None:
                continue
            value = getattr(namespace, action.dest, None)
            paths = role.paths(value, namespace) if role.paths is not None else value
            if paths is None or paths == "" or paths == []:
                continue
            flag = option_name(action)
            if role.kind == "output":
                outputs[flag] = paths
                if role.also_input:
                    inputs[flag] = paths
                elif not role.folder:
                    probe[flag] = paths
            else:
                inputs[flag] = paths
        for name, paths_of in self.fixed_inputs:
            inputs[f"{name} (from the data directory)"] = paths_of(None, namespace)
        refuse_inputs(outputs, inputs)
        for flag, paths in probe.items():
            for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
                writable_file(path, flag)


def _whole_number_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least {low}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse ``type=``: a whole number >= 1 (else argparse's one-line error, exit 2).

    >>> positive_int("8")
    8
    >>> positive_int("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a whole number of at least 1, got '0'
    """
    return _whole_number_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse ``type=``: a whole number >= 0 (``--n 0`` = all; ``--n -5`` is refused).

    >>> non_negative_int("0")
    0
    >>> non_negative_int("-5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a whole number of at least 0, got '-5'
    """
    return _whole_number_at_least(text, 0)


def positive_int_list(text: str) -> list[int]:
    """argparse ``type=``: comma-separated whole numbers >= 1, e.g. ``2,4,8``.

    >>> positive_int_list("2, 4,8")
    [2, 4, 8]
    >>> positive_int_list("a,b")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected comma-separated whole numbers of at least 1 (like 2,4,8), got 'a,b'
    """
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers of at least 1 (like 2,4,8), "
                                         f"got {text!r}")
    return values


class Count:
    """argparse ``type=`` for a count of work (processes, threads, questions, rounds, ...): a
    whole number of at least ``low``, at most ``budget`` (core.budgets: its default, or the
    environment variable that overrides it). Over the budget, argparse's one-line error and exit
    status 2, before any work. ``budget`` is kept for the table in docs/SECURITY.md.

    >>> from core.budgets import MAX_ROUNDS
    >>> Count(MAX_ROUNDS)("3")
    3
    >>> Count(MAX_ROUNDS)("100000")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 100,000 rounds is over the limit of 100 (set QAX_MAX_ROUNDS to change it)
    """

    def __init__(self, budget: Budget, low: int = 1):
        self.budget, self.low = budget, low
        self.__name__ = "count"

    def check(self, value: int) -> int:
        try:
            limit = self.budget.value()
        except ValueError as exc:   # a malformed variable: the administrator's message
            raise argparse.ArgumentTypeError(str(exc)) from None
        if value > limit:
            raise argparse.ArgumentTypeError(f"{self.budget.amount(value)} is over the limit of {limit:,} "
                                             f"(set {self.budget.env} to change it)")
        return value

    def __call__(self, text: str) -> int:
        return self.check(_whole_number_at_least(text, self.low))

    def __repr__(self) -> str:
        return f"Count({self.budget.env}, low={self.low})"


class CountList(Count):
    """:class:`Count` for comma-separated counts (``--batch-sizes 2,4,8``), each within the budget.

    >>> from core.budgets import MAX_BATCH_SIZE
    >>> CountList(MAX_BATCH_SIZE)("2, 4,8")
    [2, 4, 8]
    """

    def __call__(self, text: str) -> list[int]:  # type: ignore[override]
        return [self.check(v) for v in positive_int_list(text)]


class Bounded:
    """argparse ``type=`` for a whole-number setting that is not a count of work (a port, a
    threshold, a model's shape): fixed bounds, stated in the message.

    >>> Bounded(1, 65535)("70000")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a whole number from 1 to 65,535, got '70000'
    """

    def __init__(self, low: int, high: int):
        self.low, self.high = low, high
        self.__name__ = "whole number"

    def __call__(self, text: str) -> int:
        value = _whole_number_at_least(text, self.low)
        if value > self.high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {self.low:,} to {self.high:,}, "
                                             f"got {text!r}")
        return value


SEED_MAX = 2**32 - 1


def seed(text: str) -> int:
    """argparse ``type=`` for a random seed: a whole number from 0 to 2**32 - 1 (what numpy's
    generators take). A negative seed is refused, not folded onto another one.

    >>> seed("7")
    7
    >>> seed("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: a seed is a whole number from 0 to 4,294,967,295, got '-1'
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"a seed is a whole number from 0 to {SEED_MAX:,}, got {text!r}")
    return value


def dataset_files(data_dir_dest: str | None = None) -> PathsOf:
    """``paths=`` for a data-set option (:meth:`ArgumentParser.add_input`): each name (a file,
    ``demo.<lang>``, a name under the data directory or the folder in ``data_dir_dest``'s flag)
    resolved to the file it reads (core.datasets.dataset_file; reads nothing)."""
    def paths(value, namespace):
        from core.datasets import dataset_file

        names = [] if value is None else [value] if isinstance(value, (str, os.PathLike)) else list(value)
        data_dir = getattr(namespace, data_dir_dest, None) if data_dir_dest else None
        return [p for p in (dataset_file(str(n), data_dir) for n in names) if p is not None]

    return paths


def exit_status(result: object) -> int:
    """What a script's ``main`` returned as an exit status: an int as it is, anything else
    (a benchmark's figures, None) 0."""
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def add_loader_options(ap: argparse.ArgumentParser, pairing: bool = False) -> None:
    """The data-loading flags every command shares: ``--on-ambiguous``, ``--lang`` and, where a
    challenge file is paired with its original, ``--pair-by`` (core.datasets)."""
    ap.add_argument("--on-ambiguous", choices=("error", "first", "nearest"), default="error",
                    help="an answer with answer_start -1 that occurs several times in its context "
                         "(DuReader-robust): error (default), take the first occurrence, or the one "
                         "nearest the question's words")
    ap.add_argument("--lang", default=None,
                    help="language of the data (en, de, zh, ...); default: from the file's articles, "
                         "its name, or the script of its text")
    ap.add_argument("--on-unscorable", choices=("drop", "error"), default="drop",
                    help="a question none of whose answers can be found in its context, even modulo "
                         "whitespace: drop it and name it in the load report (default), or refuse the file")
    if pairing:
        ap.add_argument("--pair-by", choices=("auto", "id", "position"), default="auto",
                        help="how a challenge file is paired with its original: auto (default: by id "
                             "when every id-pair is the same item, else by position, else refused), or "
                             "force id / position (pairs whose contexts or answers disagree are dropped "
                             "and counted)")


def loader_kwargs(args: argparse.Namespace) -> dict:
    """``{"lang": ..., "on_ambiguous": ..., "on_unscorable": ...}`` from :func:`add_loader_options`' flags."""
    return {"lang": args.lang, "on_ambiguous": args.on_ambiguous, "on_unscorable": args.on_unscorable}


def command(prog: str) -> Callable[[Callable[[list[str]], int]], Callable[[Sequence[str] | None], int]]:
    """Decorate a CLI's ``main(argv) -> int``: expected errors become ``prog: error: message`` on
    stderr and exit status 2; Ctrl-C becomes status 130 without a stack."""

    def wrap(main: Callable[[list[str]], int]) -> Callable[[Sequence[str] | None], int]:
        @functools.wraps(main)
        def run(argv: Sequence[str] | None = None) -> int:
            args = list(sys.argv[1:] if argv is None else argv)
            debug = DEBUG_FLAG in args or os.environ.get("QAX_DEBUG") == "1"
            args = [a for a in args if a != DEBUG_FLAG]
            try:
                return main(args)
            except SystemExit as exc:
                # ``raise SystemExit("message")``, the idiom for a fatal message: the same one-line
                # form and status 2 (argparse's own exits carry an int and pass unchanged)
                if isinstance(exc.code, str) and not debug:
                    print(f"{prog}: error: {' '.join(exc.code.split())}", file=sys.stderr)
                    exc.code = 2
                raise
            except KeyboardInterrupt:
                if debug:
                    raise
                print(f"\n{prog}: interrupted", file=sys.stderr)
                return 130
            except Exception as exc:
                if debug or not is_expected(exc):
                    raise
                print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
                return 2

        return run

    return wrap


class ProgressLine:
    """A progress line on stderr, redrawn in place (``\\r``): ``progress(done, total, text)``. Used as
    a context manager, it ends the line when the work ends, so whatever comes next, an error
    included, starts on a line of its own.

    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err), contextlib.suppress(ValueError):
    ...     with ProgressLine(width=10) as progress:
    ...         progress(1, 3, "keyboard")
    ...         raise ValueError("bad")
    >>> err.getvalue()
    '\\r[1/3] keyboard  \\n'
    """

    def __init__(self, width: int = 90):
        self.width, self.open = width, False

    def __call__(self, done: int, total: int, text: str) -> None:
        print(f"\r[{done}/{total}] {text[:self.width]:<{self.width}}", end="", file=sys.stderr, flush=True)
        self.open = True

    def end(self) -> None:
        """End the line if one is drawn."""
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False

    def __enter__(self) -> "ProgressLine":
        return self

    def __exit__(self, *exc) -> bool:
        self.end()
        return False


def writable_file(path: str | Path, what: str = "output") -> Path:
    """Check, before any work, that ``path`` can be written as a file, so that a long run does not
    end in an error after its work is done: not a folder, and its nearest existing parent a
    folder we can create files in (probed with a temporary file, which root's permission bits
    would not tell). Leaves nothing behind; CLIError otherwise.

    >>> writable_file("/proc/no-such-dir/out.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.cli.CLIError: output /proc/no-such-dir/out.json: cannot create a file in /proc (...)
    """
    p = Path(path).expanduser()
    if p.is_dir():
        raise CLIError(f"{what} {p} is a folder, not a file")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise CLIError(f"{what} {p}: {parent} is a file, not a folder")
    if p.exists() and not os.access(p, os.W_OK):
        raise CLIError(f"{what} {p} is not writable")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise CLIError(f"{what} {p}: cannot create a file in {parent} ({exc.strerror})") from None
    return p
