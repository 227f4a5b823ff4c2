"""The training command line: ``python -m core.training`` (the argument table) -> :class:`TrainConfig`.

    python -m core.training --base minilm --train FILES... --squad-dev-minus-xquad --output runs/X

The flags are parsed into a :class:`TrainConfig` (one dataclass: every setting of a run, checked
by :meth:`TrainConfig.check` before a model is loaded) and handed to :func:`core.training.train.run`.
:func:`train_command` turns a run's recorded settings back into the command that repeats it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core import cli
from core.budgets import MAX_BATCH_SIZE, MAX_THREADS, MAX_TRAIN_STEPS

__all__ = ["PROG", "TrainConfig", "build_parser", "parse_config", "train_command", "main"]

PROG = "python -m core.training"


@dataclass(kw_only=True)
class TrainConfig:
    """Every setting of one training run. The fields are in the argument table's order, so
    ``dataclasses.asdict(config)`` is what ``train_log.json`` records as ``args`` and what
    :func:`train_command` replays; the defaults here are the command line's."""

    base: str
    train: list[str] = field(default_factory=list)
    squad_dev_minus_xquad: bool = False
    repeat: list[str] = field(default_factory=list)
    on_ambiguous: str = "error"
    lang: str | None = None
    output: str
    epochs: float = 2.0
    lr: float = 8e-5
    batch_size: int = 32
    max_length: int = 256
    stride: int = 96
    warmup: float = 0.1
    seed: int = 13
    max_steps: int = 0
    save_every: int = 200
    threads: int = 0
    augment_share: float = 0.0
    augment: str = "keyboard_Q"
    distill_weight: float = 0.0
    distill_temperature: float = 1.0
    drop_eval_overlap: bool = False
    allow_mlqa: bool = False
    cpu_bf16: str = "auto"
    save_dtype: str = "float16"
    lora_rank: int = 0
    lora_alpha: int | None = None
    lora_dropout: float = 0.1
    lora_targets: str | None = None
    init_from: str | None = None
    extend_vocab_min_count: int = 0
    extend_vocab_words: int = 0
    embedding_lr: float | None = None
    freeze_word_embeddings: bool = False
    time_limit: float = 0.0

    @property
    def loader(self) -> dict:
        """load_squad's ``lang`` / ``on_ambiguous`` for the training files."""
        return {"lang": self.lang, "on_ambiguous": self.on_ambiguous}

    @property
    def repeat_by_source(self) -> dict[str, int]:
        """``--repeat`` as {source as the trainer names it: K} (:func:`repeat_counts`)."""
        return repeat_counts(self.repeat, self.train, self.squad_dev_minus_xquad)

    @property
    def init_adapter(self) -> bool:
        """Whether ``init_from`` is a LoRA adapter (a further LoRA stage)."""
        from pathlib import Path

        from core.training.lora import is_adapter_folder

        return bool(self.init_from) and is_adapter_folder(Path(self.init_from))

    def check(self) -> None:
        """ValueError naming the first flag that is out of range or clashes with another. Numbers
        are checked here, not found out as a ZeroDivisionError or a tokenizer panic later on.

        >>> TrainConfig(base="minilm", output="o", stride=200).check()
        Traceback (most recent call last):
        ...
        ValueError: --stride must be at most half of --max-length (256), got 200
        >>> TrainConfig(base="minilm", output="o", distill_weight=1.0).check()
        Traceback (most recent call last):
        ...
        ValueError: --distill-weight needs --augment-share: it teaches perturbed questions their clean answers
        """
        from core.qa.engine import MIN_MAX_LENGTH

        if self.lora_rank < 0:
            raise ValueError("--lora-rank must be >= 0")
        for flag, value, low in (("--batch-size", self.batch_size, 1), ("--save-every", self.save_every, 1),
                                 ("--max-length", self.max_length, MIN_MAX_LENGTH), ("--stride", self.stride, 0),
                                 ("--max-steps", self.max_steps, 0), ("--threads", self.threads, 0),
                                 ("--time-limit", self.time_limit, 0)):
            if value < low:
                raise ValueError(f"{flag} must be at least {low}, got {value}")
        if self.stride > self.max_length // 2:
            raise ValueError(f"--stride must be at most half of --max-length ({self.max_length}), "
                             f"got {self.stride}")
        if not (self.epochs > 0 and self.lr >= 0 and 0 <= self.warmup <= 1 and 0 <= self.augment_share <= 1):
            raise ValueError("--epochs must be > 0, --lr >= 0, --warmup and --augment-share between 0 and 1")
        if self.init_from and self.lora_rank and not self.init_adapter:
            raise ValueError("--init-from with --lora-rank continues a LoRA adapter, and this folder is a "
                             "full fine-tune (no adapter_config.json): drop --lora-rank to continue it in full")
        if self.init_adapter and not self.lora_rank:
            raise ValueError("--init-from names a LoRA adapter: continue it with --lora-rank set to its rank")
        if (self.extend_vocab_min_count or self.extend_vocab_words) and self.init_adapter:
            raise ValueError("--extend-vocab-min-count and --extend-vocab-words start a new vocabulary: an "
                             "--init-from adapter keeps the one it was trained with (extend in its first stage)")
        if self.extend_vocab_min_count < 0 or self.extend_vocab_words < 0:
            raise ValueError("--extend-vocab-min-count and --extend-vocab-words must be >= 0 (0 = off)")
        if self.embedding_lr is not None and self.lora_rank:
            raise ValueError("--embedding-lr needs a full fine-tune: a LoRA run trains no embeddings, or, "
                             "when its vocabulary grows, all of them at --lr")
        if self.freeze_word_embeddings and (self.embedding_lr is not None or self.extend_vocab_min_count
                                            or self.extend_vocab_words):
            raise ValueError("--freeze-word-embeddings keeps the input word embeddings as they are: it "
                             "cannot go with --embedding-lr or a grown vocabulary")
        self.repeat_by_source  # a bad --repeat raises ValueError here, before a model loads
        if self.distill_weight < 0 or self.distill_temperature <= 0:
            raise ValueError("--distill-weight must be >= 0 and --distill-temperature > 0")
        if self.distill_weight and not self.augment_share:
            raise ValueError("--distill-weight needs --augment-share: it teaches perturbed questions their "
                             "clean answers")


def repeat_counts(repeat: list[str], train: list[str], squad_dev: bool) -> dict[str, int]:
    """``--repeat SOURCE=K`` entries as {source name: K}, each source as :func:`load_training_examples`
    names it (the --train path as given, or ``squad-dev``).

    >>> repeat_counts(["first4370.json=3", "squad-dev=2"], ["data/first4370.json", "b.json"], True)
    {'data/first4370.json': 3, 'squad-dev': 2}
    >>> repeat_counts(["c.json=2"], ["b.json"], False)
    Traceback (most recent call last):
    ...
    ValueError: --repeat c.json=2: no --train file (or squad-dev with --squad-dev-minus-xquad) is called c.json
    """
    from pathlib import Path

    out = {}
    for entry in repeat:
        name, _, k = entry.rpartition("=")
        if not name or not k.isdigit() or int(k) < 1:
            raise ValueError(f"--repeat {entry}: write SOURCE=K with K a whole number >= 1")
        found = [f for f in train if name in (f, Path(f).name)]
        if squad_dev and name == "squad-dev":
            found.append("squad-dev")
        if not found:
            raise ValueError(f"--repeat {entry}: no --train file (or squad-dev with --squad-dev-minus-xquad) "
                             f"is called {name}")
        out.update({f: int(k) for f in found})
    return out


def build_parser() -> cli.ArgumentParser:
    """The argument table. Its dests are :class:`TrainConfig`'s fields, in the same order."""
    from core.qa.engine import MIN_MAX_LENGTH

    d = TrainConfig(base="", output="")  # the defaults, from one place
    ap = cli.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="local folder, 'minilm', 'mpnet' or a hub id")
    ap.add_input("--train", nargs="*", default=[], help="SQuAD-format training files")
    ap.add_argument("--squad-dev-minus-xquad", action="store_true")
    ap.add_argument("--repeat", nargs="*", default=[], metavar="SOURCE=K",
                    help="weight a source up: its questions K times per epoch; SOURCE is a --train file "
                         "(as given or its file name) or squad-dev (--squad-dev-minus-xquad)")
    cli.add_loader_options(ap)
    ap.add_output("--output", required=True, folder=True, help="the run's folder")
    ap.add_argument("--epochs", type=float, default=d.epochs)
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--batch-size", type=cli.Count(MAX_BATCH_SIZE), default=d.batch_size)
    ap.add_argument("--max-length", type=cli.Bounded(MIN_MAX_LENGTH, 4096), default=d.max_length)
    ap.add_argument("--stride", type=cli.Bounded(0, 2048), default=d.stride)
    ap.add_argument("--warmup", type=float, default=d.warmup)
    ap.add_argument("--seed", type=cli.seed, default=d.seed)
    ap.add_argument("--max-steps", type=cli.Count(MAX_TRAIN_STEPS, low=0), default=d.max_steps,
                    help="stop after this many steps (0 = all)")
    ap.add_argument("--save-every", type=cli.Count(MAX_TRAIN_STEPS), default=d.save_every)
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS, low=0), default=d.threads)
    ap.add_argument("--augment-share", type=float, default=d.augment_share)
    ap.add_argument("--augment", default=d.augment,
                    help="comma-separated perturbations in the sweep's spec syntax (ID:key=value...), "
                         "each optionally with :weight=W, its relative share")
    ap.add_argument("--distill-weight", type=float, default=d.distill_weight,
                    help="with --augment-share: also train each perturbed question towards the answer "
                         "distribution the starting model gives its clean question (KL, "
                         "core.training.distill), at this weight beside the gold-span loss (0 = off)")
    ap.add_argument("--distill-temperature", type=float, default=d.distill_temperature)
    ap.add_argument("--drop-eval-overlap", action="store_true",
                    help="drop (and log) training contexts that occur in an eval set instead of refusing "
                         "the file")
    ap.add_argument("--allow-mlqa", action="store_true", default=d.allow_mlqa,
                    help="the MLQA files under eval/mlqa/ given in --train are training data for this run "
                         "(the only German QA data with answers; issue 29), not evaluation sets; XQuAD and "
                         "NoiseQA never are")
    ap.add_argument("--cpu-bf16", choices=["auto", "on", "off"], default=d.cpu_bf16)
    ap.add_argument("--save-dtype", choices=["float16", "float32"], default=d.save_dtype)
    ap.add_argument("--lora-rank", type=cli.Bounded(0, 1024), default=d.lora_rank,
                    help="LoRA rank (peft); 0 = full fine-tune")
    ap.add_argument("--lora-alpha", type=cli.Bounded(1, 100_000), default=d.lora_alpha,
                    help="LoRA alpha (default 2 x rank)")
    ap.add_argument("--lora-dropout", type=float, default=d.lora_dropout)
    ap.add_argument("--lora-targets", default=d.lora_targets,
                    help="comma-separated module names (default by architecture: BERT/MiniLM "
                         "query,key,value,dense; MPNet q,k,v,o,dense)")
    ap.add_input("--init-from", default=d.init_from,
                    help="start from this trained QA model folder (a run's model/ or a shipped full "
                         "model) instead of the base's fresh QA head: a further training stage; "
                         "--base still names the encoder the weights descend from")
    ap.add_argument("--extend-vocab-min-count", type=cli.Bounded(0, 10**9), default=d.extend_vocab_min_count,
                    help="add every character of the training texts that the tokenizer maps to "
                         "[UNK] and that occurs at least this often as a new token (0 = off; "
                         "for Chinese on an English vocabulary; with --init-from, characters the "
                         "trained model already has are not added again)")
    ap.add_argument("--extend-vocab-words", type=cli.Bounded(0, 10**9), default=d.extend_vocab_words,
                    help="add every word of the training texts that the vocabulary cuts into "
                         "pieces and that occurs at least this often as a whole WordPiece entry, "
                         "its embedding the mean of its pieces' (0 = off; for German on an "
                         "English vocabulary)")
    ap.add_argument("--embedding-lr", type=float, default=d.embedding_lr,
                    help="peak learning rate of the input word embeddings (default: --lr); a higher "
                         "one lets rows added by --extend-vocab-min-count or --extend-vocab-words move away from their "
                         "mean-embedding start within a short run")
    ap.add_argument("--freeze-word-embeddings", action="store_true", default=d.freeze_word_embeddings,
                    help="keep the input word embeddings as the base has them (a large multilingual "
                         "vocabulary: the shipped model then leaves them to the base package)")
    ap.add_argument("--time-limit", type=float, default=d.time_limit, metavar="SECONDS",
                    help="stop the steps after this many seconds and save the model as it is (the "
                         "schedule unfinished, recorded as stopped_at_step); 0 = no limit. For a lent "
                         "machine's fixed time")
    return ap


def parse_config(argv) -> tuple[TrainConfig, list | None, list[float] | None]:
    """The checked config and its parsed ``--augment`` entries and weights (None without
    augmentation). Bad flags exit with argparse's one-line error (status 2)."""
    ap = build_parser()
    args = vars(ap.parse_args(argv))
    args.pop("debug")  # core.cli's --debug: taken off the command line before parsing, not a setting
    config = TrainConfig(**args)
    try:
        config.check()
        if config.augment_share > 0:
            from core.training.augment import parse_augment_spec

            return (config, *parse_augment_spec(config.augment))
    except ValueError as exc:
        ap.error(str(exc))
    return config, [], None


def check_files(config: TrainConfig) -> None:
    """The --train files exist, and --output is none of them: checked before anything loads (a
    model prints a banner), so a typo costs a second and ends in one line (core.cli)."""
    for f in config.train:
        p = Path(f).expanduser()
        if not p.is_file():
            raise cli.CLIError(f"--train {f}: " + ("a folder, not a file" if p.is_dir() else "no such file"))


def train_command(args: dict) -> str:
    """The ``python -m core.training`` command line that repeats a run, from its recorded
    settings (a run's ``args``: :class:`TrainConfig` as a dict).

    Zeros stay (``--warmup 0`` is not the default); unset and off options and the output folder
    go (the output is wherever the user wants it).

    >>> train_command({"base": "minilm", "train": ["a.json", "b.json"], "squad_dev_minus_xquad": True,
    ...                "output": "runs/x", "warmup": 0.0, "lora_alpha": None, "drop_eval_overlap": False})
    'python -m core.training --base minilm --train a.json b.json --squad-dev-minus-xquad --warmup 0.0'
    """
    parts = []
    for k, v in args.items():
        if k == "output" or v is None or v is False or v == "" or v == []:
            continue
        flag = f"--{k.replace('_', '-')}"
        parts.append(flag if v is True else f"{flag} {' '.join(map(str, v)) if isinstance(v, list) else v}")
    return f"{PROG} " + " ".join(parts)


@cli.command(PROG)
def main(argv=None) -> int:
    config, augment_ids, augment_weights = parse_config(argv)
    check_files(config)
    from core.training.train import run

    run(config, augment_ids, augment_weights)
    return 0

