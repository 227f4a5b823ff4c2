"""Outputs: never one of the inputs, always written whole.

Every command-line tool declares the files it writes and reads on its parser
(:meth:`core.cli.ArgumentParser.add_output` / ``add_input``), which calls :func:`refuse_inputs`
while parsing, before any work:
an output path that resolves to one of the command's inputs (the same path, a symlink to it, a
hard link: :func:`os.path.samefile` where both exist, resolved paths otherwise) is refused with
:class:`OutputIsInputError`, a ValueError, which :func:`core.cli.command` turns into one line and
exit status 2. So ``make_challenge --input x.json --output x.json`` leaves ``x.json`` as it was
(before issue 46 it was replaced by the challenge set, with exit status 0). Two outputs naming
the same file are refused the same way (the second would silently replace the first).

Every output is then written by :func:`write_text_atomic` / :func:`write_bytes_atomic`: a
temporary file in the same folder, flushed, then :func:`os.replace` over the target. A failed or
interrupted write leaves the old file (or none), never half of a new one.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "in.json").write_text("{}")
>>> try:
...     refuse_inputs({"--output": d / "sub" / ".." / "in.json"}, {"--input": d / "in.json"})
... except OutputIsInputError as e:
...     print(str(e).replace(str(d), "D"))
--output D/sub/../in.json is the input --input (D/in.json): refusing to overwrite an input; name another output file
>>> refuse_inputs({"--output": d / "out.json"}, {"--input": d / "in.json", "--other": None})
>>> write_text_atomic(d / "out.json", "[1]"); (d / "out.json").read_text()
'[1]'
"""
from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["OutputIsInputError", "same_file", "refuse_inputs", "write_text_atomic", "write_bytes_atomic"]

PathLike = str | os.PathLike


class OutputIsInputError(ValueError):
    """An output path that is one of the inputs (or another output): nothing was written."""


def _items(named: Mapping[str, PathLike | Iterable[PathLike] | None]) -> list[tuple[str, Path]]:
    out = []
    for flag, value in named.items():
        if value is None or value == "":
            continue
        values = [value] if isinstance(value, (str, os.PathLike)) else list(value)
        out += [(flag, Path(v).expanduser()) for v in values if v not in (None, "")]
    return out


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when ``a`` and ``b`` name the same file: :func:`os.path.samefile` when both exist
    (symlinks and hard links included), their resolved paths otherwise.

    >>> same_file("runs/x/../y.json", "runs/y.json"), same_file("runs/a.json", "runs/b.json")
    (True, False)
    """
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:
        pass
    try:
        return pa.resolve() == pb.resolve()
    except (OSError, RuntimeError):   # a symlink loop: compare as written
        return os.path.abspath(pa) == os.path.abspath(pb)


def refuse_inputs(outputs: Mapping[str, PathLike | Iterable[PathLike] | None],
                  inputs: Mapping[str, PathLike | Iterable[PathLike] | None]) -> None:
    """Raise :class:`OutputIsInputError` when an output (``{flag: path}``; None and "" are
    skipped, a flag may carry several paths) is one of the inputs, or two outputs are the same
    file. Call it before any work: it reads nothing but the file system's metadata."""
    outs, ins = _items(outputs), _items(inputs)
    for oflag, out in outs:
        for iflag, inp in ins:
            # a flag that is both (a store the command reads and writes) is not its own clash
            if oflag != iflag and same_file(out, inp):
                raise OutputIsInputError(
                    f"{oflag} {out} is the input {iflag} ({inp}): refusing to overwrite an input; "
                    "name another output file")
    for i, (flag_a, a) in enumerate(outs):
        for flag_b, b in outs[i + 1:]:
            if same_file(a, b):
                raise OutputIsInputError(f"{flag_a} and {flag_b} name the same file {a}: name two "
                                         "different output files")


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file in ``path``'s folder, then rename it over ``path``
    (:func:`os.replace`): readers see the old file or the whole new one, never a part."""
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private (0600): keep the replaced file's mode, else 0644
        os.chmod(tmp, stat.S_IMODE(p.stat().st_mode) if p.exists() else 0o644)
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text_atomic(path: PathLike, text: str) -> None:
    """:func:`write_bytes_atomic` for text (UTF-8)."""
    write_bytes_atomic(path, text.encode("utf-8"))
