"""One training run's settings: :class:`TrainConfig` (every flag of ``python -m core.training``,
checked before a model loads) and :func:`train_command`, which turns recorded settings back into the
command that repeats them. The command line (:mod:`core.training.cli`) fills it and the trainer
(:mod:`core.training.train`) reads it; neither imports the other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PROG", "TrainConfig", "repeat_counts", "train_command"]

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
    on_unscorable: str = "drop"
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
        """load_squad's ``lang`` / ``on_ambiguous`` / ``on_unscorable`` for the training files."""
        return {"lang": self.lang, "on_ambiguous": self.on_ambiguous, "on_unscorable": self.on_unscorable}

    @property
    def repeat_by_source(self) -> dict[str, int]:
        """``--repeat`` as {source as the trainer names it: K} (:func:`repeat_counts`)."""
        return repeat_counts(self.repeat, self.train, self.squad_dev_minus_xquad)

    @property
    def init_adapter(self) -> bool:
        """Whether ``init_from`` is a LoRA adapter (a further LoRA stage)."""
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
