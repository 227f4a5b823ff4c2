"""The training command line: ``python -m core.training`` (the argument table) -> :class:`TrainConfig`.

    python -m core.training --base minilm --train FILES... --squad-dev-minus-xquad --output runs/X

The flags are parsed into a :class:`TrainConfig` (one dataclass: every setting of a run, checked
by :meth:`TrainConfig.check` before a model is loaded) and handed to :func:`core.training.train.run`.
:mod:`core.training.config` holds the settings and the command that repeats them.
"""
from __future__ import annotations

from pathlib import Path

from core import cli
from core.budgets import MAX_BATCH_SIZE, MAX_THREADS, MAX_TRAIN_STEPS
from core.training.config import PROG, TrainConfig

__all__ = ["build_parser", "parse_config", "check_files", "main"]


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


@cli.command(PROG)
def main(argv=None) -> int:
    config, augment_ids, augment_weights = parse_config(argv)
    check_files(config)
    from core.training.train import run

    run(config, augment_ids, augment_weights)
    return 0

