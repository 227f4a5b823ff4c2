"""A generative model's models.toml entry and how it loads.

    [[model]]
    name = "qwen2.5-coder-0.5b"
    kind = "generative"
    gguf = "qwen2.5-coder-0.5b-q4km"          # a GGUF package (core.qa.generative.gguf) or a .gguf file
    path = "assets/models/qwen2.5-coder-0.5b" # its model card's folder
    languages = ["en", "de", "zh"]

Exactly one of ``gguf`` (llama.cpp), ``hf_id`` or a ``path`` holding a ``config.json``
(transformers), or a ``[model.server]`` table (an OpenAI-compatible server: ``base_url``,
``model``, ``api_key_env``, ``max_concurrent``, ``timeout_s``) says where it answers from. A
server's address is the administrator's, written in this file: the app offers no way to type one.
``max_new_tokens`` and ``n_ctx`` optionally change the decoding defaults.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from core.qa.model_entry import ModelEntry, ModelLoadError

SERVER_KEYS = {"base_url": str, "model": str, "api_key_env": str, "max_concurrent": int, "timeout_s": (int, float)}
# Requests one sweep or page may have in flight to one server: the budget a visitor cannot raise
MAX_CONCURRENT = 16


@dataclass(frozen=True)
class GenerativeEntry(ModelEntry):
    kind: str = "generative"
    gguf: str | None = None
    server: tuple[tuple[str, object], ...] = ()
    max_new_tokens: int | None = None
    n_ctx: int | None = None

    @property
    def server_settings(self) -> dict:
        return dict(self.server)

    @property
    def source(self) -> str:
        if self.gguf:
            return f"gguf:{self.gguf}"
        if self.server:
            s = self.server_settings
            return f"server:{s['base_url']}#{s['model']}"
        return self.path if self.path else f"hub:{self.hf_id}"

    def _gguf_file(self) -> Path | None:
        """A .gguf file named directly (else ``gguf`` is a package key)."""
        if self.gguf and self.gguf.endswith(".gguf"):
            p = Path(self.gguf).expanduser()
            from core.config import repo_root

            return p if p.is_absolute() else repo_root() / p
        return None

    def _missing(self) -> str | None:
        if self.gguf:
            import importlib.util

            if importlib.util.find_spec("llama_cpp") is None:
                return "llama-cpp-python is not installed (pip install llama-cpp-python==0.3.36)"
            f = self._gguf_file()
            if f is not None:
                return None if f.is_file() else f"GGUF file {f} not found"
            from core.qa.generative.gguf import missing

            return missing(self.gguf)
        if self.server:
            return None
        if self.path:
            d = self.local_dir()
            return None if (d / "config.json").is_file() else f"{d} has no config.json"
        return "a hub model (needs internet on first load)"

    def is_installed(self) -> bool:
        return self._missing() is None

    def status(self) -> str:
        why = self._missing()
        if why is None:
            how = "an OpenAI-compatible server" if self.server else "llama.cpp" if self.gguf else "transformers"
            return f"installed (generative, {how})"
        return "hub (needs internet on first load)" if self.hf_id and not self.path else f"missing: {why}"

    def fingerprint(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def default_backend(self) -> str:
        return "server" if self.server else "llama.cpp" if self.gguf else "transformers"


def entry_from_toml(path: Path, m: dict) -> GenerativeEntry:
    """The entry for one ``[[model]]`` table with ``kind = "generative"``; a bad one raises
    ModelLoadError naming the file, the model and the key."""
    name = m["name"]
    where = f"{path}: generative model {name!r}"
    weights = [k for k in ("gguf", "hf_id", "server") if m.get(k)]
    if len(weights) != 1 and not (not weights and m.get("path")):
        raise ModelLoadError(f"{where} needs exactly one of 'gguf', 'hf_id', 'path' (a transformers folder) "
                             "or a [model.server] table")
    server = m.get("server") or {}
    if server:
        if not isinstance(server, dict):
            raise ModelLoadError(f"{where}: 'server' is a table ([model.server])")
        unknown = set(server) - set(SERVER_KEYS)
        if unknown:
            raise ModelLoadError(f"{where}: [model.server] has unknown keys {sorted(unknown)}; "
                                 f"known: {', '.join(SERVER_KEYS)}")
        for k in ("base_url", "model"):
            if not server.get(k):
                raise ModelLoadError(f"{where}: [model.server] needs '{k}'")
        for k, v in server.items():
            if not isinstance(v, SERVER_KEYS[k]) or isinstance(v, bool):
                raise ModelLoadError(f"{where}: [model.server] {k} has the wrong type ({type(v).__name__})")
        url = urlparse(server["base_url"])
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ModelLoadError(f"{where}: [model.server] base_url must be an http(s) address, got "
                                 f"{server['base_url']!r}")
        if not 1 <= int(server.get("max_concurrent", 4)) <= MAX_CONCURRENT:
            raise ModelLoadError(f"{where}: max_concurrent is 1 to {MAX_CONCURRENT}")
    for k in ("max_new_tokens", "n_ctx"):
        if k in m and (not isinstance(m[k], int) or isinstance(m[k], bool) or m[k] < 1):
            raise ModelLoadError(f"{where}: '{k}' is a positive whole number")
    if not isinstance(m.get("preselect", False), bool):
        raise ModelLoadError(f"{where}: 'preselect' is true or false")
    return GenerativeEntry(
        name=name, path=m.get("path"), hf_id=m.get("hf_id"), languages=tuple(m.get("languages", ["en"])),
        description=m.get("description", ""), card=m.get("card"),
        # an LLM is slower than Ask's budget on a CPU: one click away, not ticked by default
        preselect=m.get("preselect", False),
        gguf=m.get("gguf"), server=tuple(sorted(server.items())),
        max_new_tokens=m.get("max_new_tokens"), n_ctx=m.get("n_ctx"))


def load_reader(entry: GenerativeEntry, threads: int | None, max_answer_tokens: int | None):
    """The reader of a generative entry: the runtime its entry names, the decoding settings
    (the entry's token cap, else the app's answer cap)."""
    from core.qa.generative.prompts import GenerationSettings
    from core.qa.generative.reader import GenerativeReader
    from core.qa.generative.runtimes import GenerationError, ServerRuntime, TransformersRuntime

    settings = GenerationSettings(max_new_tokens=entry.max_new_tokens or max_answer_tokens or 30, threads=threads,
                                  n_ctx=entry.n_ctx or 4096)
    try:
        if entry.server:
            s = entry.server_settings
            runtime = ServerRuntime(s["base_url"], s["model"], s.get("api_key_env"), int(s.get("max_concurrent", 4)),
                                    float(s.get("timeout_s", 60)))
        elif entry.gguf:
            why = entry._missing()
            if why:
                raise ModelLoadError(f"model {entry.name!r}: {why}")
            runtime = _gguf_runtime(entry, settings)
        else:
            from core.qa.hub import offline_reason

            src = str(entry.local_dir()) if entry.path else entry.hf_id
            local_only = bool(entry.path) or bool(offline_reason())
            runtime = TransformersRuntime(src, settings, local_only)
    except (GenerationError, OSError, ValueError) as e:
        raise ModelLoadError(f"could not load generative model {entry.name!r}: {e}") from e
    return GenerativeReader(runtime, settings, entry.languages)


def _gguf_runtime(entry: GenerativeEntry, settings):
    from core.qa.generative.gguf import PACKAGES, GGUFError, gguf_path
    from core.qa.generative.runtimes import LlamaCppRuntime

    f = entry._gguf_file()
    if f is not None:
        return LlamaCppRuntime(f, settings)
    try:
        path = gguf_path(entry.gguf)
    except GGUFError as e:
        raise ModelLoadError(f"model {entry.name!r}: {e}") from e
    # the package's checksum names the weights: the same file joined anywhere keys the same answers
    return LlamaCppRuntime(path, settings, identity=f"{path.name}:{PACKAGES[entry.gguf].sha256[:16]}")
