"""JSON from strangers: a nesting limit checked before parsing, and the upload size limit.

``json.loads`` recurses once per nesting level: ``[[[[...]]]]`` 100,000 deep (200 KB) ends in a
RecursionError, a traceback on the page instead of a message. :func:`nesting_depth` measures the
depth without recursion and without a Python loop over every character (strings are cut out
with one regular expression, then the brackets left are counted with a cumulative sum), so the
limit costs about a second on a 200 MB file. A SQuAD-style file nests 9 levels (top object,
data, article, paragraphs, paragraph, qas, question, answers, answer); :data:`MAX_DEPTH` 64
leaves room for any reasonable extra field.

Upload size: :func:`max_upload_bytes` is ``$QAX_MAX_UPLOAD_MB`` megabytes (default
:data:`DEFAULT_MAX_UPLOAD_MB`, 20: SQuAD v1.1 dev is 4.9 MB, XQuAD 1.2 MB, and a 20 MB JSON
already costs about 200 MB of Python objects once parsed). Streamlit refuses larger files in the
browser too (``server.maxUploadSize`` in .streamlit/config.toml, 20); an admin who raises the
limit sets both.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np

__all__ = ["MAX_DEPTH", "DEFAULT_MAX_UPLOAD_MB", "UPLOAD_ENV", "JSONLimitError",
           "nesting_depth", "check_depth", "loads", "read_object", "max_upload_bytes", "check_upload_size"]

MAX_DEPTH = 64
DEFAULT_MAX_UPLOAD_MB = 20
UPLOAD_ENV = "QAX_MAX_UPLOAD_MB"

# A JSON string: a quote, then runs of ordinary characters or escapes ("unrolled", so the regex
# engine never backtracks), then a quote, or the end of the text: an unterminated string always
# matches, so no start position is tried twice and the scan stays linear even on hostile input
# such as '"\\"\\"\\"...' (which, with a required closing quote, would be quadratic).
_STRING_PAT = r'"[^"\\]*(?:\\.[^"\\]*)*"?'
_STRING = re.compile(_STRING_PAT, re.DOTALL)
_STRING_B = re.compile(_STRING_PAT.encode(), re.DOTALL)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


class JSONLimitError(ValueError):
    """JSON refused before parsing: nested too deep, or a file over the size limit."""


def nesting_depth(text: str | bytes) -> int:
    r"""The deepest nesting of arrays and objects in JSON text (brackets inside strings do not
    count). Malformed text gets a best effort: unbalanced closers never make it negative.

    >>> nesting_depth('{"data": [{"q": "[[[not counted]]]"}]}'), nesting_depth("3")
    (3, 0)
    >>> nesting_depth(r'["a\"[", ["b"]]'), nesting_depth(b'[[ "unterminated [[[')
    (2, 2)
    >>> nesting_depth("[" * 100_000 + "]" * 100_000)
    100000
    """
    if isinstance(text, str):
        stripped = _STRING.sub("", text).encode("utf-8", "surrogatepass")
    else:
        stripped = _STRING_B.sub(b"", text)
    b = np.frombuffer(stripped, dtype=np.uint8)
    steps = np.isin(b, _OPEN).astype(np.int64) - np.isin(b, _CLOSE).astype(np.int64)
    steps = steps[steps != 0]
    if steps.size == 0:
        return 0
    # The depth reached, never below zero: a running sum clipped at 0 from below equals the
    # running sum minus its running minimum (where that minimum is negative).
    level = np.cumsum(steps)
    floor = np.minimum.accumulate(np.minimum(level, 0))
    return int((level - floor).max())


def check_depth(text: str | bytes, limit: int = MAX_DEPTH, where: str = "the JSON") -> None:
    """Raise :class:`JSONLimitError` when ``text`` nests deeper than ``limit`` levels."""
    depth = nesting_depth(text)
    if depth > limit:
        raise JSONLimitError(f"{where} is nested {depth:,} levels deep; the limit is {limit} "
                             f"(a SQuAD-style file needs 9)")


def loads(text: str | bytes, limit: int = MAX_DEPTH, where: str = "the JSON") -> Any:
    """``json.loads`` after :func:`check_depth`: a deep file gets a message, never a
    RecursionError.

    >>> loads('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> try:
    ...     loads("[" * 65 + "]" * 65)
    ... except JSONLimitError as e:
    ...     print(e)
    the JSON is nested 65 levels deep; the limit is 64 (a SQuAD-style file needs 9)
    """
    check_depth(text, limit, where)
    return json.loads(text)


def read_object(path: str | os.PathLike, error: type[Exception] = ValueError) -> dict:
    """The JSON object in the file ``path`` (UTF-8, nesting limited); ``error`` (a ValueError by
    default) says plainly when the file is not UTF-8, not JSON, or holds something else.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "card.json"
    >>> _ = f.write_text("[1, 2]")
    >>> try:
    ...     read_object(f)
    ... except ValueError as e:
    ...     print(str(e).replace(str(f), "card.json"))
    card.json should hold a JSON object, got list
    """
    try:
        value = loads(open(path, encoding="utf-8").read(), where=str(path))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(f"{path} is not valid JSON: {e}") from None
    except JSONLimitError as e:
        raise error(str(e)) from None
    if not isinstance(value, dict):
        raise error(f"{path} should hold a JSON object, got {type(value).__name__}")
    return value


def max_upload_bytes() -> int:
    """The upload limit in bytes: ``$QAX_MAX_UPLOAD_MB`` (a positive number of megabytes) or
    :data:`DEFAULT_MAX_UPLOAD_MB`. A malformed value is an admin's mistake: ValueError."""
    raw = os.environ.get(UPLOAD_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_UPLOAD_MB * 1024 * 1024
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not mb > 0 or mb != mb or mb == float("inf"):
        raise ValueError(f"{UPLOAD_ENV}={raw!r}: expected a positive number of megabytes")
    return int(mb * 1024 * 1024)


def check_upload_size(size: int, name: str = "the file") -> None:
    """Raise :class:`JSONLimitError` when an upload of ``size`` bytes is over the limit.

    >>> check_upload_size(1024)
    >>> try:
    ...     check_upload_size(21 * 1024 * 1024, "big.json")
    ... except JSONLimitError as e:
    ...     print(e)
    big.json is 21.0 MB; uploads are limited to 20 MB (the server's QAX_MAX_UPLOAD_MB)
    """
    limit = max_upload_bytes()
    if size > limit:
        raise JSONLimitError(f"{name} is {size / 1024 / 1024:.1f} MB; uploads are limited to "
                             f"{limit / 1024 / 1024:.3g} MB (the server's {UPLOAD_ENV})")
