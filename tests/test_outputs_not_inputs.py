"""Issue 46 (5): inputs are never outputs, and every output is written whole.

Each command line tool refuses an output path that resolves to one of its inputs (the same path,
a path through ``..``, a symlink, a hard link) with one line on stderr and exit status 2, before
any work, and the input is left byte for byte. Before issue 46 each named case replaced its input
and exited 0 (a 609 KB XQuAD copy became 1.8 KB).
"""
from __future__ import annotations

import json
import os

import pytest

from core.io import outputs

SQUAD = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{
    "context": "Paris is the capital of France.",
    "qas": [{"id": "q1", "question": "What is the capital of France?",
             "answers": [{"text": "Paris", "answer_start": 0}]}]}]}]}


@pytest.fixture
def squad(tmp_path):
    f = tmp_path / "data.json"
    f.write_text(json.dumps(SQUAD))
    return f


def refused(main, argv, capsys, protected):
    """Run a CLI's main; assert exit 2, a one-line message naming the clash, the input untouched."""
    before = {p: p.read_bytes() for p in protected}
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "is the input" in lines[0] and "refusing to overwrite an input" in lines[0], err
    for p, data in before.items():
        assert p.read_bytes() == data
    assert sorted(x.name for x in protected[0].parent.iterdir() if ".tmp" in x.name) == []
    return lines[0]


@pytest.mark.parametrize("flag", ["--json", "--predictions", "--csv"])
def test_evaluate_refuses_its_dataset(flag, squad, capsys):
    from core.models.evaluate import main

    line = refused(main, ["--model", "minilm-squad", "--dataset", str(squad), flag, str(squad)], capsys, [squad])
    assert line.startswith("python -m core.models.evaluate: error: " + flag)


def test_evaluate_refuses_a_dataset_named_under_the_data_directory(tmp_path, capsys, monkeypatch):
    from core.models.evaluate import main

    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    target = data / "xquad" / "small.json"
    target.write_text(json.dumps(SQUAD))
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    link = tmp_path / "out.json"
    link.symlink_to(target)            # an output that is a symlink to the input
    refused(main, ["--model", "minilm-squad", "--dataset", "xquad/small", "--json", str(link)], capsys, [target])


def test_make_challenge_refuses_its_input(squad, capsys):
    from core.perturb.make_challenge import main

    other = squad.parent / "sub" / ".." / squad.name   # the same file by another spelling
    (squad.parent / "sub").mkdir()
    refused(main, ["--input", str(squad), "--perturbation", "keyboard_Q", "--output", str(other)], capsys, [squad])


def test_pseudo_label_refuses_its_data(squad, capsys):
    from core.training.pseudo_label import main

    hard = squad.parent / "hard.json"
    os.link(squad, hard)               # a hard link: the same file under another name
    refused(main, ["--model", "minilm-squad", "--data", str(squad), "--output", str(hard)], capsys, [squad])


@pytest.mark.parametrize("flag", ["--csv", "--json"])
def test_behaviour_refuses_its_toml(flag, tmp_path, capsys):
    from core.behaviour.__main__ import main

    toml = tmp_path / "tests.toml"
    toml.write_text('lang = "en"\n[[test]]\nname = "x"\ntype = "MFT"\ncontext = "{a} lives in Paris."\n'
                    'question = "Who lives in Paris?"\nexpect = "{a}"\nfill.a = ["Anna"]\n')
    refused(main, [str(toml), "--model", "minilm-squad", flag, str(toml)], capsys, [toml])


def test_natural_mt_refuses_its_original(squad, tmp_path, capsys):
    from core.translate.natural_mt import main

    source = tmp_path / "es.json"
    source.write_text(json.dumps(SQUAD))
    refused(main, ["--lang", "es", "--original", str(squad), "--source", str(source), "--output", str(squad)],
            capsys, [squad, source])
    refused(main, ["--lang", "es", "--original", str(squad), "--source", str(source), "--output", str(source)],
            capsys, [squad, source])


def test_training_refuses_an_output_that_is_a_train_file(squad, capsys):
    from core.training.cli import main

    refused(main, ["--base", "minilm", "--train", str(squad), "--output", str(squad)], capsys, [squad])


def test_training_names_a_missing_file_before_loading_a_model(tmp_path, capsys):
    from core.training.cli import main

    assert main(["--base", "minilm", "--train", str(tmp_path / "nope.json"), "--output", str(tmp_path / "run")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""                       # no model banner, nothing else
    assert captured.err.strip().splitlines() == [
        f"python -m core.training: error: --train {tmp_path / 'nope.json'}: no such file"]
    assert not (tmp_path / "run").exists()


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    with pytest.raises(outputs.OutputIsInputError, match="--json and --csv name the same file"):
        outputs.refuse_inputs({"--json": tmp_path / "a.out", "--csv": tmp_path / "a.out"}, {})


def test_atomic_write_leaves_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    target.write_text("old")
    os.chmod(target, 0o640)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space left"):
        outputs.write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]   # no temporary file left
    monkeypatch.undo()
    outputs.write_text_atomic(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640   # mode kept
