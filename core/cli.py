"""One way for every command line to fail on bad input: a one-line message, exit status 2.

A user who types a wrong model name, points at a broken JSON file or an unwritable folder must
read what is wrong, not a Python stack. Every ``python -m core.<tool>`` wraps its ``main`` with
:func:`command`: the errors bad input raises (ValueError and its kin: dataset, sweep, JSON and
UTF-8 errors; OSError; SQLite errors; a model that cannot be loaded) end as

    python -m core.models.evaluate: error: no model named 'nope' in models.toml

on stderr with exit status 2, the convention argparse already uses for bad flags. ``--debug``
anywhere on the command line (or QAX_DEBUG=1) lets the exception through with its traceback,
for the bug a message hides. Anything else (a real bug) keeps its traceback.
"""
from __future__ import annotations

import argparse
import functools
import os
import pickle
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

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
    "core.translate.TranslationError",
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


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block before it) and ``--debug`` in its --help
    (:func:`command` takes the flag off the command line before parsing)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument(DEBUG_FLAG, action="store_true",
                          help="show the full traceback of an error instead of a one-line message")

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")


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


def exit_status(result: object) -> int:
    """What a script's ``main`` returned as an exit status: an int as it is, anything else
    (a benchmark's figures, None) 0."""
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def engine_settings(**flags):
    """EngineSettings from flag values (``batch_size=...``); a bad one is a CLIError naming the
    flag: ``--batch-size must be at least 1, got -1``."""
    from core.qa.engine import EngineSettings, SettingsError

    try:
        return EngineSettings(**flags)
    except SettingsError as exc:
        raise CLIError(f"--{exc.setting.replace('_', '-')} {exc.problem}") from None


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
    if pairing:
        ap.add_argument("--pair-by", choices=("auto", "id", "position"), default="auto",
                        help="how a challenge file is paired with its original: auto (default: by id "
                             "when every id-pair is the same item, else by position, else refused), or "
                             "force id / position (pairs whose contexts or answers disagree are dropped "
                             "and counted)")


def loader_kwargs(args: argparse.Namespace) -> dict:
    """``{"lang": ..., "on_ambiguous": ...}`` from :func:`add_loader_options`' flags."""
    return {"lang": args.lang, "on_ambiguous": args.on_ambiguous}


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
