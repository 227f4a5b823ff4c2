"""Fine-tune an extractive-QA model from a base encoder: the training run behind ``python -m core.training``.

Reproducible (a seed), resumable (checkpoints; augmented questions kept in ``augmented.json``),
logged (``train_log.json``), and guarded: a training file whose contexts overlap an evaluation set
(XQuAD, NoiseQA, MLQA) is refused.

Batches are built by length (shuffle, cut into pools of 50 batches, sort each pool by length,
shuffle the batches) so dynamic padding wastes little compute: that is what makes CPU training
of MiniLM feasible. On a GPU, bf16/fp16 autocast is used.

The rest of a run lives beside this module: the settings (:mod:`core.training.cli`,
:class:`~core.training.config.TrainConfig`), noise augmentation (:mod:`core.training.augment`),
consistency distillation (:mod:`core.training.distill`), LoRA (:mod:`core.training.lora`) and
vocabulary extension (:mod:`core.training.vocab`). :func:`run` is the whole run, in the order
its random draws must happen for the same settings to give the same model: seeds, model, data,
vocabulary, LoRA, augmentation, windows, optimizer, resume, steps, save.
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
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from core.io.outputs import write_text_atomic
from core.qa.bases import grow_embeddings_to
from core.qa.features import build_windows
from core.training.config import train_command
from core.training.distill import batch_distill_kl, distill_targets
from core.training.lora import (
    adapter_lora_settings,
    forward_module,
    input_embedding_name,
    is_adapter_folder,
    lora_settings,
    unique_modules_to_save,
    wrap_lora,
)
from core.types import QAExample

if TYPE_CHECKING:
    from core.training.config import TrainConfig


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
        raise CheckpointError(f"{path} is not a core.training checkpoint (no {', '.join(missing)}); "
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
    files: list[str], use_squad_dev: bool, data_dir, drop_overlap: bool = False, loader: dict | None = None,
    allow_mlqa: bool = False, repeat: dict[str, int] | None = None,
) -> tuple[list[QAExample], dict]:
    """``loader``: load_squad's ``lang`` / ``on_ambiguous`` for the ``files`` (core.cli.loader_kwargs).
    ``allow_mlqa``: the MLQA files among ``files`` are not checked against themselves
    (:data:`core.datasets.TRAINABLE_EVAL`); every other evaluation set still is. ``repeat``: a
    source's questions are taken this many times (``--repeat``: weighting a source up)."""
    from core import datasets

    mlqa = []
    if allow_mlqa:
        trainable = datasets.trainable_eval_files(data_dir)
        mlqa = [f for f in files if Path(f).resolve() in trainable]
        if not mlqa:
            raise TrainingDataError(f"--allow-mlqa: none of the --train files is an MLQA file under "
                                    f"{Path(data_dir) / 'eval' / 'mlqa'}")
    eval_ctx = datasets.eval_contexts(data_dir, trained_on=mlqa)
    examples: list[QAExample] = []
    counts: dict[str, dict] = {}
    sources = [(f, lambda f=f: datasets.load_squad(f, **(loader or {}))) for f in files]
    if use_squad_dev:
        sources.append(("squad-dev",
                        lambda: datasets.squad_dev_minus_xquad(data_dir)))
    for name, load in sources:
        ds = load()
        print(ds.load_line(), flush=True)
        usable = [e for e in ds.examples if datasets.has_gold(e)]
        usable, dropped = check_no_eval_overlap(usable, eval_ctx, str(name), drop_overlap)
        times = (repeat or {}).get(str(name), 1)
        counts[str(name)] = {"questions": len(usable), "dropped_eval_overlap": dropped, "repeated": times}
        examples.extend(usable * times)
    return examples, counts


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


# ----------------------------------------------------------------------------------------------
# The run, step by step


def seed_everything(config: TrainConfig) -> random.Random:
    """Threads and every seed; the returned generator is the run's own (window sampling)."""
    if config.threads:
        torch.set_num_threads(config.threads)
    random.seed(config.seed)  # only for libraries we do not control; our own code uses rng below
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    return rng


def load_model(config: TrainConfig, base_path: str):
    """(tokenizer, model): the base's or ``--init-from``'s weights. A LoRA stage on an earlier
    adapter loads the packaged base; :func:`apply_lora` puts the adapter on it."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    weights_path = base_path if config.init_adapter else (config.init_from or base_path)
    tok = AutoTokenizer.from_pretrained(config.init_from or base_path)
    model = AutoModelForQuestionAnswering.from_pretrained(weights_path, dtype=torch.float32)
    if config.init_adapter:  # an adapter whose first stage grew the vocabulary
        grow_embeddings_to(model, tok)
    return tok, model


def apply_lora(config: TrainConfig, model, vocabulary_grew: bool = False):
    """(model, LoRA settings or None): the model with a new adapter (``--lora-rank``; with the
    input embeddings trained in full when ``vocabulary_grew``), with the ``--init-from`` adapter
    loaded for a further stage, or unchanged (a full fine-tune)."""
    lora = None
    if config.init_adapter:
        lora = adapter_lora_settings(config.init_from)
        if config.lora_rank != lora["rank"] or (config.lora_alpha is not None and config.lora_alpha != lora["alpha"]):
            raise SystemExit(f"--init-from {config.init_from}: the adapter has rank {lora['rank']} and alpha "
                             f"{lora['alpha']}; a further stage keeps them (pass --lora-rank {lora['rank']})")
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, config.init_from, is_trainable=True)
    elif config.lora_rank:
        lora = lora_settings(model.config.model_type, config.lora_rank, config.lora_alpha,
                             config.lora_dropout, config.lora_targets,
                             (input_embedding_name(model),) if vocabulary_grew else ())
        model = wrap_lora(model, lora)
    if lora:
        unique_modules_to_save(model)
    return model, lora


def training_windows(tok, examples: list[QAExample], config: TrainConfig, rng: random.Random) -> list:
    """The windows (max_length/stride) of every example, each with its gold span, keeping every
    window that holds the answer and a quarter of those that do not (they teach the model to
    point at [CLS] less than they cost on CPU; SQuAD v1 never needs "no answer")."""
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
                max_length=config.max_length,
                stride=config.stride,
                answers=answers[b : b + 2000],
            )
        )
    return [w for w in windows if w.start_position > 0 or rng.random() < 0.25]


def make_optimizer(model, config: TrainConfig, total_steps: int):
    """AdamW (weight decay 0.01) and a linear warm-up then linear decay schedule."""
    opt = torch.optim.AdamW(param_groups(model, config.lr, config.embedding_lr), weight_decay=0.01)
    warm = int(config.warmup * total_steps)

    def factor(s: int) -> float:
        if s < warm:
            return (s + 1) / max(1, warm)
        return min(1.0, (s + 1) / max(1, warm)) * max(0.0, (total_steps - s) / max(1, total_steps - warm))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def restore(state: dict, ckpt: Path, model, opt, sched, lora: dict | None, device) -> tuple[int, dict]:
    """Put a checkpoint's state back (weights, optimizer, schedule, RNG); (step, log)."""
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
    if "rng" in state:  # dropout masks continue exactly as in an uninterrupted run
        torch.set_rng_state(state["rng"]["torch"])
        if device.type == "cuda" and state["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state(state["rng"]["cuda"])
    print(f"resumed at step {state['step']}", flush=True)
    return state["step"], state["log"]


def batch_schedule(lengths: list[int], config: TrainConfig, total_steps: int) -> list[list[int]]:
    """Every step's batch. The batch order of every epoch is a function of (seed, epoch) only, so
    a resumed run sees exactly the batches it would have seen."""
    schedule: list[list[int]] = []
    epoch = 0
    while len(schedule) < total_steps:
        schedule.extend(length_grouped_batches(lengths, config.batch_size, random.Random(config.seed * 1000 + epoch)))
        epoch += 1
    return schedule


def autocast_for(device, cpu_bf16: str):
    """bf16 autocast on a GPU, and on a CPU that multiplies bf16 natively (``--cpu-bf16``)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if cpu_bf16 == "on" or (cpu_bf16 == "auto" and cpu_has_bf16_matmul()):
        # bf16 autocast, measured against fp32 on 2 cores: ~3x faster for MiniLM with AMX tiles;
        # ~1.6x for MPNet-base + LoRA with AVX512-BF16 alone (6.7 vs 10.4-11.2 s per 16 x 200 step).
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return None


@dataclasses.dataclass
class Loop:
    """What the steps share: the model and its tokenizer, optimizer and schedule, the windows and
    their batches, the distillation targets, and where checkpoints go."""

    config: TrainConfig
    model: object
    tok: object
    opt: object
    sched: object
    windows: list
    schedule: list[list[int]]
    targets: dict
    amp: object
    device: object
    lora: dict | None
    ckpt: Path


def train_steps(loop: Loop, step: int, log: dict, total_steps: int) -> None:
    """Steps ``step`` .. ``total_steps``; ``log`` gets every loss; a checkpoint every
    ``save_every`` steps and at the end (written beside, then renamed: atomic)."""
    config, model, device, targets = loop.config, loop.model, loop.device, loop.targets
    model.train()
    fwd = forward_module(model)
    t0, seen = time.time(), 0
    while step < total_steps:
        ids = loop.schedule[step]
        batch = [loop.windows[i] for i in ids]
        enc = loop.tok.pad([{"input_ids": w.input_ids, **w.extra} for w in batch], padding=True,
                           return_tensors="pt")
        enc = {k: v.to(device) for k, v in enc.items()}
        enc["start_positions"] = torch.tensor([w.start_position for w in batch], device=device)
        enc["end_positions"] = torch.tensor([w.end_position for w in batch], device=device)
        rows = [r for r, i in enumerate(ids) if i in targets]
        with loop.amp if loop.amp is not None else contextlib.nullcontext():
            res = fwd(**enc)
        loss = res.loss
        if rows:
            kl = batch_distill_kl(res.start_logits, res.end_logits, rows, [targets[ids[r]] for r in rows],
                                  config.distill_temperature)
            loss = loss + config.distill_weight * kl
            log.setdefault("distill_kl", []).append([step + 1, round(float(kl.detach()), 4)])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loop.opt.step()
        loop.sched.step()
        loop.opt.zero_grad(set_to_none=True)
        step += 1
        seen += 1
        log["losses"].append([step, round(float(loss.detach()), 4)])
        if step % 20 == 0:
            rate = (time.time() - t0) / seen
            print(f"step {step}/{total_steps} loss {loss.item():.3f} {rate:.2f}s/step "
                  f"eta {rate * (total_steps - step) / 60:.0f} min", flush=True)
        if step % config.save_every == 0 or step == total_steps:
            save_checkpoint(loop, step, log)
        if config.time_limit and time.time() - t0 > config.time_limit and step < total_steps:
            print(f"--time-limit {config.time_limit:g} s reached at step {step}/{total_steps}", flush=True)
            log["stopped_at_step"] = step
            save_checkpoint(loop, step, log)
            return


def save_checkpoint(loop: Loop, step: int, log: dict) -> None:
    tmp = loop.ckpt.with_name("checkpoint.pt.tmp")
    model = loop.model
    weights = ({n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
               if loop.lora else model.state_dict())
    rng_state = {"torch": torch.get_rng_state(),
                 "cuda": torch.cuda.get_rng_state() if loop.device.type == "cuda" else None}
    torch.save({"model": weights, "opt": loop.opt.state_dict(), "sched": loop.sched.state_dict(), "step": step,
                "log": log, "lora": loop.lora, "rng": rng_state}, tmp)
    os.replace(tmp, loop.ckpt)  # atomic: a kill mid-save never leaves a broken checkpoint


def extend_vocab(config: TrainConfig, tok, model, examples: list[QAExample]):
    """``--extend-vocab-min-count`` (characters) and ``--extend-vocab-words`` (whole words), each
    when asked for (:mod:`core.training.vocab`); returns ``(tokenizer, characters' info, words' info)``."""
    from core.training.vocab import add_words_for, extend_vocab_for

    vocab_info = words_info = None
    if config.extend_vocab_min_count:
        vocab_info = extend_vocab_for(tok, model, examples, config.extend_vocab_min_count)
        print(f"vocabulary: {vocab_info['added']} characters added "
              f"([UNK] share of training contexts {vocab_info['unk_share_before']:.1%} -> "
              f"{vocab_info['unk_share_after']:.1%})", flush=True)
    if config.extend_vocab_words:
        tok, words_info = add_words_for(tok, model, examples, config.extend_vocab_words)
        print(f"vocabulary: {words_info['added']} whole words added (tokens per word of the training "
              f"contexts {words_info['tokens_per_word_before']:.3f} -> "
              f"{words_info['tokens_per_word_after']:.3f})", flush=True)
    return tok, vocab_info, words_info


def run(config: TrainConfig, augment_ids: list | None = None, augment_weights: list[float] | None = None) -> dict:
    """One training run (``config`` checked, ``--augment`` parsed: :func:`core.training.cli.parse_config`).
    Writes ``OUTPUT/model/`` (or ``adapter/``), ``checkpoint.pt`` and ``train_log.json``; returns the log."""
    from core.config import data_dir
    from core.training.augment import augment_once

    t_start = time.time()
    rng = seed_everything(config)
    out = Path(config.output)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint.pt"
    # Read (and so checked) before the slow setup; on the CPU, where torch.set_rng_state wants
    # its state, and load_state_dict copies the rest onto the model's device.
    resume = load_checkpoint(ckpt, "cpu") if ckpt.exists() else None
    # the data before the model: a bad file is reported before the model's loading banner
    examples, counts = load_training_examples(config.train, config.squad_dev_minus_xquad, data_dir(),
                                              config.drop_eval_overlap, config.loader, config.allow_mlqa,
                                              config.repeat_by_source)
    if not examples:
        raise TrainingDataError("no training examples")
    base_path = resolve_base(config.base)
    init_from = describe_init(config.init_from) if config.init_from else None
    tok, model = load_model(config, base_path)
    rows = model.get_input_embeddings().weight.shape[0]
    tok, vocab_info, words_info = extend_vocab(config, tok, model, examples)
    model, lora = apply_lora(config, model, model.get_input_embeddings().weight.shape[0] > rows)
    if config.freeze_word_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    trainable_params, total_params = count_params(model)
    if lora:
        print(f"LoRA {lora}: {trainable_params:,} of {total_params:,} parameters trainable", flush=True)
    aug_counts, n_clean = {}, len(examples)
    if config.augment_share > 0:
        added, aug_counts = augment_once(out / "augmented.json", examples, config.augment_share, augment_ids or [],
                                         random.Random(config.seed + 1), augment_weights,
                                         log=lambda m: print(m, flush=True))
        examples = examples + added
    print(f"training questions: {len(examples)} ({counts}; augmentation {aug_counts})", flush=True)

    windows = training_windows(tok, examples, config, rng)
    lengths = [len(w.input_ids) for w in windows]
    total_steps = int(math.ceil(len(windows) / config.batch_size) * config.epochs)
    if config.max_steps:
        total_steps = min(total_steps, config.max_steps)
    print(f"windows: {len(windows)}, mean length {np.mean(lengths):.0f}, steps: {total_steps}", flush=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    targets = {}
    if config.distill_weight:  # the teacher is the model as it starts, before any checkpoint is resumed
        t_teacher = time.time()
        targets = distill_targets(forward_module(model), tok, examples[:n_clean], examples[n_clean:], n_clean,
                                  windows, config.max_length, config.stride, device)
        print(f"distillation targets: {len(targets)} windows of perturbed questions "
              f"({time.time() - t_teacher:.0f} s)", flush=True)
    opt, sched = make_optimizer(model, config, total_steps)
    step, log = 0, {"losses": [], "distill_kl": []}
    if resume is not None:
        step, log = restore(resume, ckpt, model, opt, sched, lora, device)
    loop = Loop(config, model, tok, opt, sched, windows, batch_schedule(lengths, config, total_steps), targets,
                autocast_for(device, config.cpu_bf16), device, lora, ckpt)
    train_steps(loop, step, log, total_steps)

    info = {"base": config.base, "base_path": str(base_path), "init_from": init_from,
            "format": "lora-adapter" if lora else "full", "saved": "adapter" if lora else "model", "lora": lora,
            "trainable_params": trainable_params, "total_params": total_params,
            "args": dataclasses.asdict(config), "data_counts": counts, "augmentation_counts": aug_counts,
            "vocabulary_extension": vocab_info, "vocabulary_words": words_info,
            "distillation": distillation_info(config, base_path, len(targets), log),
            "training_questions": len(examples), "windows": len(windows), "steps": total_steps}
    save_model(loop, out / info["saved"])
    info.update(run_info(loop, t_start, log))
    write_text_atomic(out / "train_log.json", json.dumps(info, indent=1))
    print(json.dumps({k: v for k, v in info.items() if k != "losses"}, indent=1))
    return info


def save_model(loop: Loop, saved: Path) -> None:
    """The trained model (``--save-dtype``) and its tokenizer; peft saves only the adapter
    tensors and the trained copy of the QA head (modules_to_save)."""
    loop.model.eval()
    if loop.config.save_dtype == "float16":
        loop.model.half()
    if loop.lora:
        # A grown vocabulary's matrix is saved once, as the trained modules_to_save copy: peft's
        # default would add the untrained original and the resized layer, three copies in all.
        loop.model.save_pretrained(saved, safe_serialization=True, save_embedding_layers=False)
    else:
        loop.model.save_pretrained(saved, safe_serialization=True)
    loop.tok.save_pretrained(saved)


def distillation_info(config: TrainConfig, base_path, n_targets: int, log: dict) -> dict | None:
    if not config.distill_weight:
        return None
    kl = log.get("distill_kl")
    return {"weight": config.distill_weight, "temperature": config.distill_temperature,
            "teacher": config.init_from or str(base_path), "windows": n_targets,
            "kl_mean_last_100": round(float(np.mean([v for _, v in kl[-100:]])), 4) if kl else None}


def run_info(loop: Loop, t_start: float, log: dict) -> dict:
    """Where and how long the run ran, and its losses (the tail of ``train_log.json``)."""
    amp = loop.amp
    return {"device": str(loop.device),
            "autocast": None if amp is None else f"{amp.device}:{amp.fast_dtype}",
            "hardware": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                        f"torch {torch.__version__}, threads {torch.get_num_threads()}",
            "wall_time_s_this_run": round(time.time() - t_start, 1),
            "final_loss_mean_last_100": round(float(np.mean([loss for _, loss in log["losses"][-100:]])), 4),
            "stopped_at_step": log.get("stopped_at_step"),
            "losses": log["losses"]}
