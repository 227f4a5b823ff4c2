"""One models.toml entry (:class:`ModelEntry`: where a model loads from, its languages, card and
fingerprint) and the error a bad entry or a failed load raises. The registry (core.qa.registry)
reads the file into these; a generative entry (core.qa.generative.entry) extends one.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from core.config import repo_root, shown_path

__all__ = ["BASE_FILE", "ModelLoadError", "ModelEntry"]

# In a folder of weights over a base: {"base": key, "from_base": {tensor name: the base's tensor name}}
BASE_FILE = "base_weights.json"


class ModelLoadError(RuntimeError):
    """A model that cannot be loaded; the message says what to do about it."""


@dataclass(frozen=True)
class ModelEntry:
    name: str
    path: str | None = None
    hf_id: str | None = None
    languages: tuple[str, ...] = ("en",)
    description: str = ""
    card: str | None = None  # model card file, relative to the model folder
    adapter: str | None = None  # a LoRA adapter folder (with ``base``)
    # 'minilm', 'mpnet', 'e5' or a local model folder: for ``adapter``, or for a ``path`` folder whose
    # weights leave out what the base supplies unchanged (BASE_FILE lists it: a frozen embedding)
    base: str | None = None
    # False keeps the model out of the pickers' default choice (still one click away): for a
    # model too slow on CPU to answer every question of a live demo or a sweep by default.
    preselect: bool = True
    # "extractive" (QAEngine) or "generative" (an LLM reading the passage: core.qa.generative.entry)
    kind: str = "extractive"

    @property
    def over_base(self) -> bool:
        """A model folder trained with frozen word embeddings that it leaves to its base package."""
        return bool(self.path and self.base)

    @property
    def source(self) -> str:
        if self.adapter:
            return f"{self.adapter}+base:{self.base}"
        if self.over_base:
            return f"{self.path}+base:{self.base}"
        return self.path if self.path else f"hub:{self.hf_id}"

    @property
    def shown_source(self) -> str:
        """``source`` as a page shows it: an absolute folder by its name only unless QAX_SHOW_PATHS=1
        (:func:`core.config.shown_path`); a folder in the repository or a hub id as it is.

        >>> ModelEntry("m", path="/srv/models/qa-de", base="minilm").shown_source
        'qa-de+base:minilm'
        """
        return re.sub(r"(?<![\w.~-])/[^\s+]+", lambda m: shown_path(m.group(0)), self.source)

    def local_dir(self) -> Path | None:
        folder = self.path or self.adapter
        if not folder:
            return None
        p = Path(folder).expanduser()
        return p if p.is_absolute() else repo_root() / p

    def base_ref(self) -> str | None:
        """The base as core.qa.bases takes it: a package key, or an absolute local folder."""
        from core.qa.bases import BASE_PACKAGES

        if self.base is None or self.base in BASE_PACKAGES:
            return self.base
        p = Path(self.base).expanduser()
        return str(p if p.is_absolute() else repo_root() / p)

    def _adapter_missing(self) -> str | None:
        d = self.local_dir()
        for f in ("adapter_config.json", "adapter_model.safetensors"):
            if not (d / f).is_file():
                return f"adapter folder {d} has no {f}"
        from core.qa.bases import base_missing

        return base_missing(self.base_ref())

    def _over_base_missing(self) -> str | None:
        d = self.local_dir()
        for f in ("config.json", "model.safetensors", BASE_FILE):
            if not (d / f).is_file():
                return f"model folder {d} has no {f}"
        from core.qa.bases import base_missing

        return base_missing(self.base_ref())

    def is_installed(self) -> bool:
        d = self.local_dir()
        if self.adapter:
            return self._adapter_missing() is None
        if self.over_base:
            return self._over_base_missing() is None
        return d is not None and (d / "config.json").is_file()

    def status(self) -> str:
        if self.adapter:
            why = self._adapter_missing()
            return "installed (LoRA adapter)" if why is None else f"missing: {why}"
        if self.over_base:
            why = self._over_base_missing()
            return f"installed (over base {self.base})" if why is None else f"missing: {why}"
        if self.path:
            return "installed" if self.is_installed() else f"missing: {self.local_dir()} has no config.json"
        return "hub (needs internet on first load)"

    def fingerprint(self) -> str:
        """Changes when the weights change: used to key cached predictions."""
        h = hashlib.sha256(self.source.encode())
        d = self.local_dir()
        if d is not None and d.is_dir():
            for f in sorted(d.glob("*.safetensors")) + sorted(d.glob("*.bin")):
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
        return h.hexdigest()[:16]

    def default_backend(self) -> str:
        """The backend ``EngineSettings(backend="default")`` means for this model: the one its
        card records as chosen by the rule (the fastest within 0.5 XQuAD-en F1 of torch fp32,
        benchmarks/qa_throughput.py --compare-backends --card), else torch; torch too when the
        card measured that backend with another recipe than today's (FINGERPRINT_TAGS). A choice
        this machine cannot run (bf16 on a CPU without native bf16) gives way to the rule applied
        to the card's other measured backends that can run here."""
        from core.compat import FINGERPRINT_TAGS
        from core.qa.backends.selection import BACKENDS, backend_unavailable, choose_default

        try:
            card = self.model_card() or {}
        except (OSError, ValueError):
            return "torch"
        record = (card.get("backends") or {}) if isinstance(card, dict) else {}
        chosen = record.get("default") if isinstance(record, dict) else None
        if chosen not in BACKENDS:
            return "torch"
        # a choice measured with an older export or quantisation recipe says nothing about this
        # one (its speed and F1 are another backend's): torch until the card is measured again
        measured = (record.get("backends") or {}).get(chosen) or {}
        recipe = measured.get("recipe") if isinstance(measured, dict) else None
        if recipe is not None and recipe != FINGERPRINT_TAGS[chosen]:
            return "torch"
        cpu = "cpu"   # the card's choice was measured on a CPU (no torch import to ask: the Ask page asks)
        if backend_unavailable(chosen, cpu) is None:
            return chosen
        runnable = {name: b for name, b in (record.get("backends") or {}).items()
                    if name in BACKENDS and isinstance(b, dict) and backend_unavailable(name, cpu) is None
                    and b.get("recipe", FINGERPRINT_TAGS[name]) == FINGERPRINT_TAGS[name]
                    and all(isinstance(b.get(k), (int, float)) for k in ("f1", "questions_per_second"))}
        return choose_default(runnable) if "torch" in runnable else "torch"

    def model_card(self) -> dict | None:
        d = self.local_dir()
        if d is None:
            return None
        f = d / (self.card or "model_card.json")
        return json.loads(f.read_text()) if f.is_file() else None
