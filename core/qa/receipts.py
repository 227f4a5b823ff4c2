"""Load receipts: what a registered model's first load found out, so that later loads open its
graph without building the torch model.

A model that answers through an ONNX or OpenVINO graph needs its torch weights on a load only to
find that graph (the export folder is keyed by a digest of the merged weights,
core.qa.backends.onnx_runtime.weights_digest) and to hash its fingerprint (QAEngine.fingerprint).
Both come out the same on every load of the same files with the same code, so the first load
writes them down in ``<cache>/receipts/<key>.json``: the graph each backend opened and each
fingerprint computed (by the settings line hashed after the weights). A later load with a receipt
reads the tokenizer and opens the graph; the torch weights load only when something reads them
(an attribution, a switch to torch, a fingerprint the receipt does not hold), as after
QAEngine.release_torch. Building MPNet's base with its LoRA adapter merged in, or the multilingual
E5 over its base, took most of a load (docs/results/demo-walk-2026-11-27.md).

The key covers what decides the graph and the fingerprint: the entry's source, every file in its
folder and its base's folder (name, size and modification time, as ModelEntry.fingerprint keys
cached predictions), the export and quantisation recipes, the int8 file this CPU uses, and the
versions of the libraries that load, export and hash. Any change gives another key, so a stale
receipt is never read. Receipts are written whole (a temporary file renamed over the old one).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path

__all__ = ["RECEIPT_VERSION", "Receipt", "receipt_for"]

RECEIPT_VERSION = 1

log = logging.getLogger(__name__)
_lock = threading.Lock()


def _folder_lines(folder: Path) -> list[str]:
    lines = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        st = f.stat()
        lines.append(f"{f.relative_to(folder).as_posix()}:{st.st_size}:{st.st_mtime_ns}")
    return lines


def _code_lines() -> list[str]:
    """What, besides the files, decides the graph's place and the fingerprint's bytes."""
    from importlib.metadata import PackageNotFoundError, version

    from core.compat import FINGERPRINT_TAGS
    from core.qa.backends import onnx_runtime, openvino_runtime

    lines = [f"receipt:{RECEIPT_VERSION}", f"export:{onnx_runtime.EXPORT_VERSION}:{onnx_runtime.OPSET}",
             f"int8:{onnx_runtime.INT8_FILE}", f"ir:{openvino_runtime.IR_RECIPE}",
             "tags:" + json.dumps(FINGERPRINT_TAGS, sort_keys=True)]
    for package in ("torch", "transformers", "tokenizers", "peft", "safetensors"):
        try:
            lines.append(f"{package}:{version(package)}")
        except PackageNotFoundError:
            lines.append(f"{package}:-")
    return lines


def entry_key(entry) -> str | None:
    """The receipt key of a registry entry, or None when it cannot have one (a hub model, or a
    folder or base that is not here)."""
    from core.qa.bases import BaseModelError, resolve_base_path

    folder = entry.local_dir()
    if folder is None or not folder.is_dir():
        return None
    folders = [folder]
    if entry.base:
        try:
            base = Path(resolve_base_path(entry.base_ref()))
        except BaseModelError:
            return None
        if not base.is_dir():
            return None
        folders.append(base)
    h = hashlib.sha256(entry.source.encode())
    for line in _code_lines():
        h.update(f"\n{line}".encode())
    for i, f in enumerate(folders):
        for line in _folder_lines(f):
            h.update(f"\n{i}:{line}".encode())
    return h.hexdigest()[:24]


class Receipt:
    """One model's receipt: ``tokenizer`` (the folder its tokenizer loads from), ``positions``
    and ``model_type`` (what the engine reads from the model's config), ``graphs``
    ({backend: graph file}) and ``fingerprints`` ({settings line: fingerprint})."""

    def __init__(self, path: Path):
        self.path = path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        self.data = data if isinstance(data, dict) else {}

    @property
    def complete(self) -> bool:
        """Whether a load can go without the torch model: the tokenizer and config are known."""
        d = self.data
        return (isinstance(d.get("tokenizer"), str) and Path(d["tokenizer"]).is_dir()
                and isinstance(d.get("positions"), int) and isinstance(d.get("model_type"), str))

    def graph(self, backend: str) -> Path | None:
        """The graph ``backend`` opened before, when its file is still there."""
        name = (self.data.get("graphs") or {}).get(backend)
        path = Path(name) if isinstance(name, str) else None
        return path if path is not None and path.is_file() else None

    def fingerprint(self, line: str) -> str | None:
        found = (self.data.get("fingerprints") or {}).get(line)
        return found if isinstance(found, str) else None

    def record(self, **found) -> None:
        """Add what a load found (``tokenizer``, ``positions``, ``model_type``, ``graphs``,
        ``fingerprints``: the dicts merged into what the file holds now) and write it."""
        with _lock:
            current = Receipt(self.path).data
            for k, v in found.items():
                current[k] = {**(current.get(k) or {}), **v} if isinstance(v, dict) else v
            if current == self.data and self.path.is_file():
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_name(f"{self.path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_text(json.dumps(current, indent=1, sort_keys=True), encoding="utf-8")
                tmp.replace(self.path)
            except OSError as e:   # a read-only cache: every load builds the torch model, as before
                log.warning("could not write the load receipt %s: %s", self.path, e)
            self.data = current


def receipt_for(entry) -> Receipt | None:
    """The receipt of a registry entry (empty until a load records into it), or None."""
    from core.config import cache_dir

    key = entry_key(entry)
    return None if key is None else Receipt(cache_dir() / "receipts" / f"{key}.json")
