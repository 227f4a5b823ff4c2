"""core.training.cli: the argument table and TrainConfig stay one thing (same fields, same order,
same defaults), and a run's recorded command parses back into the same config."""
import dataclasses

import pytest

from core.training.cli import build_parser, parse_config
from core.training.config import TrainConfig, train_command


def test_the_argument_table_is_the_config_field_for_field():
    args = vars(build_parser().parse_args(["--base", "minilm", "--output", "runs/x"]))
    assert args.pop("debug") is False  # core.cli's flag, not a setting of the run
    fields = [f.name for f in dataclasses.fields(TrainConfig)]
    assert list(args) == fields  # the order train_log.json's "args" (and so train_command) keeps
    assert TrainConfig(**args) == TrainConfig(base="minilm", output="runs/x")


def test_a_recorded_command_parses_back_into_the_same_config():
    config = TrainConfig(base="minilm", train=["a.json", "b.json"], squad_dev_minus_xquad=True, output="runs/x",
                         warmup=0.0, lora_rank=4, lora_targets="query,value", augment_share=0.3,
                         augment="keyboard_Q:p=0.1:weight=2,misspell_Q", seed=7)
    command = train_command(dataclasses.asdict(config))
    assert command.startswith("python -m core.training --base minilm --train a.json b.json --squad-dev-minus-xquad ")
    again, entries, weights = parse_config(command.split()[3:] + ["--output", "runs/x"])
    assert again == config
    assert entries == [("keyboard_Q", {"p": 0.1}), ("misspell_Q", {})] and weights == [2.0, 1.0]


@pytest.mark.parametrize("flags, message", [
    (["--batch-size", "0"], "argument --batch-size: must be a whole number of at least 1, got '0'"),
    (["--lora-rank", "4", "--embedding-lr", "0.01"], "--embedding-lr needs a full fine-tune"),
    (["--augment-share", "0.2", "--augment", "nope_Q"], "--augment: "),
    (["--train", "a.json", "--repeat", "b.json=2"], "--repeat b.json=2: no --train file"),
    (["--train", "a.json", "--repeat", "a.json=0"], "--repeat a.json=0: write SOURCE=K with K a whole number >= 1"),
])
def test_bad_flags_end_in_one_line_before_anything_loads(flags, message, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_config(["--base", "minilm", "--output", "runs/x", *flags])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m core.training: error: ") and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("alias, argv, message", [
    ("core.train", ["--base", "minilm", "--output", "o", "--batch-size", "0"],
     "python -m core.training: error: argument --batch-size: must be a whole number of at least 1, got '0'"),
    ("core.evaluate", ["--model", "a", "b", "c", "--paired", "--dataset", "demo.en"],
     "python -m core.models.evaluate: error: --paired compares exactly two models"),
])
def test_the_old_command_names_still_run_the_new_commands(alias, argv, message):
    """The shipped model cards record their commands as ``python -m core.train`` and their READMEs
    name ``python -m core.evaluate``: both names must keep working."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.run([sys.executable, "-m", alias, *argv], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith(message), proc.stderr
