"""Where things live: the repository, the (external, never copied) data directory, the cache,
and which folders the web UI may read or write (confinement).

Environment variables (server-side settings: a visitor's browser can change none of them):
  QAX_DATA_DIR     the data directory (default: ``<repo_root>/../shared/data`` when that exists)
  QAX_CACHE_DIR    a writable cache directory (default: ``<repo_root>/.cache``)
  QAX_SWEEP_DB     the sweep database the app opens first (default ``runs/sweeps.sqlite`` under the
                   repository); its folder is where the Sweeps page keeps sweep databases
  QAX_EXTRA_ROOTS  more folders, separated by ``os.pathsep`` (``:`` on Linux), whose files the app
                   may offer: sweep databases and challenge files kept outside the defaults.
                   Folders that do not exist are ignored.
  QAX_SHOW_PATHS   ``1`` shows the server's full paths (data directory, databases) on the pages;
                   by default a visitor sees a file's name only (:func:`shown_path`).

Confinement: the web UI never takes a path typed in the browser. It offers files found under the
configured roots (:func:`read_roots`, :func:`sweep_db_roots`) in pickers, creates a new file only
by a validated bare file name (:func:`safe_file_name`) inside a root, and checks every path it is
about to open with :func:`confine` (symlinks resolved first, so a link pointing out of a root is
refused like the path it points to). The CLIs are the administrator's tools and may name any path.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path


class ConfinementError(ValueError):
    """A path outside the folders the app may use; the message names the path and the roots."""


def repo_root() -> Path:
    """The repository root (the folder holding app.py, core/, tests/)."""
    return Path(__file__).resolve().parents[1]


def data_dir() -> Path | None:
    """The data directory, or None when there is none.

    QAX_DATA_DIR wins when set, and must then name an existing directory (a typo there should
    fail loudly rather than silently fall back). Otherwise ``<repo_root>/../shared/data`` is used
    when it exists.
    """
    env = os.environ.get("QAX_DATA_DIR")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"QAX_DATA_DIR={env!r} is not an existing directory")
        return path.resolve()
    default = repo_root().parent / "shared" / "data"
    return default.resolve() if default.is_dir() else None


def cache_dir() -> Path:
    """A writable cache directory (QAX_CACHE_DIR, default ``<repo_root>/.cache``), created on demand."""
    env = os.environ.get("QAX_CACHE_DIR")
    path = Path(env).expanduser() if env else repo_root() / ".cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


SHOW_PATHS_ENV = "QAX_SHOW_PATHS"


def show_paths() -> bool:
    """True when the server asks for its full paths on the pages (QAX_SHOW_PATHS=1, true, yes, on)."""
    return os.environ.get(SHOW_PATHS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def shown_path(path: str | Path, hidden: str | None = None) -> str:
    """How a server path is shown to a visitor: in full only when the server says so
    (QAX_SHOW_PATHS=1); otherwise ``hidden`` when given, else the file's name alone.

    >>> shown_path("/srv/qax/.cache/beat_the_ai.sqlite")
    'beat_the_ai.sqlite'
    >>> shown_path("/srv/qax/data", "the server's data directory")
    "the server's data directory"
    """
    if show_paths():
        return str(path)
    return hidden if hidden is not None else Path(path).name


# The environment variables that move a server folder: the roots below are recomputed when one changes.
_ROOT_ENVS = ("QAX_DATA_DIR", "QAX_CACHE_DIR", "QAX_SWEEP_DB", "QAX_RUNS_DIR", "QAX_EXTRA_ROOTS", "QAX_MODELS_TOML",
              "QAX_BEAT_DB", "HOME")
# A path under a root runs until whitespace, a quote or a closing bracket; a final '.', ':' or ','
# is the sentence's, not the path's.
_PATH_TAIL = r"(?:/[^\s'\"`<>|(){}\[\],;]*)?"


def server_roots() -> list[str]:
    """The server's folders a visitor must not learn (as written and resolved, longest first):
    the repository, data directory, cache, runs folder, sweep folder, models.toml's folder, Beat the
    AI's database folder, QAX_EXTRA_ROOTS and the home directory."""
    return list(_server_roots(tuple(os.environ.get(k, "") for k in _ROOT_ENVS)))


@functools.lru_cache(maxsize=8)
def _server_roots(_env: tuple[str, ...]) -> tuple[str, ...]:
    try:
        data = data_dir()
    except OSError:   # a mistyped QAX_DATA_DIR: the folder it names is still the server's
        data = Path(os.environ["QAX_DATA_DIR"]).expanduser()
    found = [repo_root(), data, cache_dir(), runs_dir(), sweep_db_default().parent, *extra_roots(), Path.home()]
    for env in ("QAX_MODELS_TOML", "QAX_BEAT_DB", "QAX_SWEEP_DB"):
        if os.environ.get(env):
            found.append(Path(os.environ[env]).expanduser().absolute().parent)
    roots = {str(q) for p in found if p is not None for q in (p.absolute(), p.resolve())}
    return tuple(sorted((r for r in roots if r not in ("/", "")), key=len, reverse=True))


def hide_server_paths(text: str) -> str:
    """``text`` with every path under a server folder (:func:`server_roots`) shortened to its file
    name, as :func:`shown_path` shows it; unchanged when QAX_SHOW_PATHS=1. Error messages quote
    paths (``no model named 'x' in /srv/qax/models.toml``): this is where they lose the folder.

    >>> import os; os.environ.pop(SHOW_PATHS_ENV, None) and None
    >>> hide_server_paths(f"no model named 'x' in {repo_root() / 'models.toml'}.")
    "no model named 'x' in models.toml."
    >>> hide_server_paths(f"kept in {repo_root()}, /etc/hosts stays") == f"kept in {repo_root().name}, /etc/hosts stays"
    True
    """
    if "/" not in text or show_paths():
        return text
    roots = _server_roots(tuple(os.environ.get(k, "") for k in _ROOT_ENVS))
    if not roots:
        return text
    return _roots_pattern(roots).sub(_shorten, text)


def shown_dataset(dataset: str) -> str:
    """A stored sweep's data set as a visitor sees it: a data set's name as it is, a file given by
    its full path (``python -m core.sweeps --dataset ~/exports/won.json``) by its file name alone,
    wherever it lies: every visitor sees the sweeps of a server's store.

    >>> import os; os.environ.pop(SHOW_PATHS_ENV, None) and None
    >>> full = str(Path("exports", "won.json").absolute())   # a folder outside the server's own
    >>> shown_dataset("xquad/xquad.de"), shown_dataset(full), shown_dataset("~/won.json")
    ('xquad/xquad.de', 'won.json', 'won.json')
    """
    if dataset.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:[\\/]", dataset):
        return shown_path(dataset.replace("\\", "/"))
    return hide_server_paths(dataset)


@functools.lru_cache(maxsize=8)
def _roots_pattern(roots: tuple[str, ...]) -> re.Pattern:
    """Any root not followed by more of a name, then the rest of the path under it."""
    return re.compile("(?:" + "|".join(re.escape(r) for r in roots) + r")(?![^/\s'\"`<>|(){}\[\],;:.])"
                      + _PATH_TAIL)


def _shorten(m: re.Match) -> str:
    path = m.group(0)
    tail = len(path) - len(path.rstrip(".:,"))
    path, end = path[:len(path) - tail], path[len(path) - tail:]
    return Path(path).name + end


# ------------------------------------------------------------------------------------ confinement

def runs_dir() -> Path:
    """Where the CLIs write by default (not created here): QAX_RUNS_DIR, else ``<repo_root>/runs``;
    a relative path starts at the repository root."""
    path = Path(os.environ.get("QAX_RUNS_DIR") or "runs").expanduser()
    return path if path.is_absolute() else repo_root() / path


def sweep_db_default() -> Path:
    """The sweep database the app opens first: QAX_SWEEP_DB, else ``sweeps.sqlite`` in the runs
    folder; a relative path starts at the repository root (the app finds the CLI's sweeps from any
    folder)."""
    path = Path(os.environ.get("QAX_SWEEP_DB") or runs_dir() / "sweeps.sqlite").expanduser()
    return (path if path.is_absolute() else repo_root() / path).resolve()


def extra_roots() -> list[Path]:
    """The existing folders named by QAX_EXTRA_ROOTS (``os.pathsep``-separated), resolved."""
    env = os.environ.get("QAX_EXTRA_ROOTS") or ""
    return [Path(p).expanduser().resolve() for p in env.split(os.pathsep)
            if p.strip() and Path(p).expanduser().is_dir()]


def _unique(paths: Iterable[Path | None]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p is not None and p.resolve() not in out:
            out.append(p.resolve())
    return out


def sweep_db_roots() -> list[Path]:
    """Folders the app may open sweep databases in: QAX_SWEEP_DB's folder (first: new databases go
    there), the runs folder, the speech trials' folder, then QAX_EXTRA_ROOTS."""
    return _unique([sweep_db_default().parent, runs_dir(), cache_dir() / "trials", *extra_roots()])


def read_roots(data: str | Path | None = None) -> list[Path]:
    """Folders whose data files (data sets, ``file:`` challenge sets) may be read: the data
    directory (``data``, else the configured one), the runs folder (core.translate.natural_mt writes
    there), the speech trials' folder (their challenge sets), then QAX_EXTRA_ROOTS."""
    root = Path(data).expanduser() if data is not None else data_dir()
    return _unique([root, runs_dir(), cache_dir() / "trials", *extra_roots()])


def within(path: str | Path, roots: Iterable[str | Path]) -> bool:
    """True when ``path``, symlinks resolved, lies inside one of ``roots`` (or is one).

    >>> within("/srv/data/xquad/../squad/dev.json", ["/srv/data"])
    True
    >>> within("/srv/data/../etc/passwd", ["/srv/data"])
    False
    """
    resolved = Path(path).expanduser().resolve()
    return any(resolved.is_relative_to(Path(r).expanduser().resolve()) for r in roots)


def confine(path: str | Path, roots: Sequence[str | Path], what: str = "file") -> Path:
    """``path`` resolved (symlinks followed) when it lies inside one of ``roots``; otherwise
    :class:`ConfinementError` naming the allowed folders.

    >>> confine("/srv/data/x/../y.json", ["/srv/data"]).as_posix()
    '/srv/data/y.json'
    >>> confine("/etc/passwd", ["/srv/data"], "data set")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.config.ConfinementError: data set /etc/passwd is outside the folders this app may use (/srv/data); an
    administrator can add a folder with QAX_EXTRA_ROOTS
    """
    if within(path, roots):
        return Path(path).expanduser().resolve()
    raise ConfinementError(f"{what} {path} is outside the folders this app may use "
                           f"({', '.join(str(r) for r in roots)}); an administrator can add a folder "
                           "with QAX_EXTRA_ROOTS")


def lexically_under(path: str | Path, root: str | Path) -> bool:
    """Whether ``path``, its ``..`` taken as written (symlinks not followed), lies in ``root``
    (as written, or resolved).

    >>> lexically_under("/srv/data/x/../y.json", "/srv/data"), lexically_under("/srv/data/../y", "/srv/data")
    (True, False)
    """
    named = os.path.normpath(os.path.abspath(Path(path).expanduser()))
    bases = {os.path.normpath(os.path.abspath(Path(root).expanduser())), str(Path(root).expanduser().resolve())}
    return any(named == b or named.startswith(b.rstrip(os.sep) + os.sep) for b in bases)


def under(root: str | Path, relative: str | Path, what: str = "file",
          targets: Iterable[str | Path] = ()) -> Path:
    """``root / relative`` resolved, refused (:class:`ConfinementError`) when ``relative`` is
    absolute, climbs out of ``root`` (``..``), or is a symlink pointing outside ``root`` and
    ``targets`` (the data directory's links into QAX_EXTRA_ROOTS: :func:`extra_roots`).

    >>> under("/srv/data", "xquad/xquad.en.json").as_posix()
    '/srv/data/xquad/xquad.en.json'
    >>> under("/srv/data", "../secret.json")
    Traceback (most recent call last):
    ...
    core.config.ConfinementError: file ../secret.json climbs out of /srv/data: name a file under it
    """
    rel = Path(relative).expanduser()
    if rel.is_absolute():
        raise ConfinementError(f"{what} {relative} is an absolute path: name a file under {root}")
    named = Path(root).expanduser() / rel
    if not lexically_under(named, root):
        raise ConfinementError(f"{what} {relative} climbs out of {root}: name a file under it")
    target = named.resolve()
    allowed = [root, *targets]
    if not within(target, allowed):
        raise ConfinementError(f"{what} {relative} is a link to {target}, outside the folders this app may use "
                               f"({', '.join(str(r) for r in allowed)}); an administrator can add its folder "
                               "with QAX_EXTRA_ROOTS")
    return target


_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def safe_file_name(name: str, suffixes: Sequence[str] = (".sqlite", ".sqlite3", ".db")) -> str:
    """A bare file name typed in the browser, checked: letters, digits, ``.``, ``_`` and ``-``
    only, no folder, at most 80 characters, starting with a letter or digit; ``suffixes[0]`` is
    added when the name ends in none of ``suffixes``. ValueError says what is wrong.

    >>> safe_file_name("experiments-2")
    'experiments-2.sqlite'
    >>> safe_file_name(" mine.db ")
    'mine.db'
    >>> safe_file_name("../x")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: '../x' is not a plain file name: use letters, digits, '.', '_' and '-' (no folders), starting with a
    letter or digit
    """
    clean = name.strip()
    if not _FILE_NAME.fullmatch(clean) or ".." in clean:
        raise ValueError(f"{name!r} is not a plain file name: use letters, digits, '.', '_' and '-' "
                         "(no folders), starting with a letter or digit")
    return clean if clean.lower().endswith(tuple(suffixes)) else clean + suffixes[0]
