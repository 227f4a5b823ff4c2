"""The front door stays true: every code path the README and docs/ARCHITECTURE.md name exists, and
every relative Markdown link in them and in docs/ (results included) resolves to a file."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", ROOT / "docs" / "ARCHITECTURE.md"]
# a code path in backticks or plain text: core/..., components/..., pages/... (a module or a folder)
CODE_PATH = re.compile(r"(?<![\w/.])((?:core|components|pages)/[\w/]*\w(?:\.py)?/?)")
PLACEHOLDER = re.compile(r"/[A-Z]+(\.py)?$")  # pages/NAME.py: a name to choose
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_LINES = 250


def _markdown_files() -> list[Path]:
    return GUIDES + sorted((ROOT / "docs").rglob("*.md"))


def code_paths(text: str) -> set[str]:
    """The paths named in ``text``, less placeholders such as ``pages/NAME.py``.

    >>> sorted(code_paths("see `core/qa/engine.py` and pages/ask.py, not mycore/x.py or pages/NAME.py"))
    ['core/qa/engine.py', 'pages/ask.py']
    """
    return {p for p in CODE_PATH.findall(text) if not PLACEHOLDER.search(p)}


def relative_links(text: str) -> list[str]:
    """The relative link targets in ``text``, without their anchors.

    >>> relative_links("[a](docs/A.md#x) [b](https://x.org) [c](#here) [d](results/)")
    ['docs/A.md', 'results/']
    """
    out = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        out.append(target.split("#")[0])
    return out


@pytest.mark.parametrize("doc", GUIDES, ids=lambda p: p.name)
def test_every_code_path_named_exists(doc):
    missing = sorted(p for p in code_paths(doc.read_text(encoding="utf-8")) if not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", _markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(doc):
    broken = [t for t in relative_links(doc.read_text(encoding="utf-8")) if not (doc.parent / t).exists()]
    assert not broken, f"{doc.relative_to(ROOT)} links to missing files: {broken}"


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md: {len(lines)} lines (at most {README_LINES}): move detail to docs/"
    commands = [ln.strip() for ln in lines[:8] if ln.startswith("./run.sh")]
    assert commands[:2] == ["./run.sh app", "./run.sh test"], commands
