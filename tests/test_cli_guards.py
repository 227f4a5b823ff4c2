"""Issue 57 (1, 2, 5): every command line's outputs and counts go through one guard.

Read from the parsers themselves (core.commands: every ``main`` in core/ and benchmarks/ hands
back the parser it builds), so a new command or option is covered without being listed here:

- every option whose name says it writes a file is declared with ``add_output``, every option
  whose name says it reads one with ``add_input``; for each pair of them, parsing refuses the
  output when it is that input, before any work;
- every whole-number option is a budgeted count, a seed or a bounded setting, and a count over
  its budget is refused while parsing (one line, exit status 2);
- docs/SECURITY.md's table of counts is the one the declarations give.

Before issue 57, ``core.models.routes --json`` onto the XQuAD file it reads, and ``--json`` equal
to the input of four benchmarks replaced the input with exit status 0; ``core.sweeps
--processes 100000`` started about 160 workers and exhausted 24 GB.
"""
from __future__ import annotations

import argparse
import json
import re

import pytest

from core import budgets, cli, commands
from core.io.outputs import OutputIsInputError

ROOT = commands.ROOT
# Names that say an option writes a file, or reads one (matched against the option's words).
WRITES = re.compile(r"(^|-)(json|csv|out|output|report|predictions|dest|dump|html|db)($|-)")
READS = re.compile(r"(^|-)(dataset|data|input|file|train|trial|run|original|source|init|challenge)($|-)")
NAMED = {"benchmarks/padding.py", "benchmarks/capability_nbest.py", "benchmarks/static_int8.py",
         "benchmarks/heatmaps_open.py", "python -m core.models.routes", "python -m core.sweeps",
         "python -m core.models.evaluate", "benchmarks/perturb_throughput.py", "benchmarks/concurrent_askers.py",
         "benchmarks/ask_models.py"}


@pytest.fixture(scope="module")
def found() -> list[commands.Command]:
    return commands.commands()


def takes_path(action: argparse.Action) -> bool:
    """An option with a free-text value (not a flag, a choice or a number)."""
    return action.nargs != 0 and not action.choices and not isinstance(
        action.type, (cli.Count, cli.Bounded)) and action.type not in (int, float, cli.seed)


def words(action: argparse.Action) -> str:
    return cli.option_name(action).lstrip("-").lower()


def role(action: argparse.Action) -> str | None:
    r = getattr(action, "path_role", None)
    return r.kind if r else None


def test_every_command_line_is_found(found):
    names = {c.name for c in found}
    assert NAMED <= names, NAMED - names
    assert len(found) == len(commands.command_sources()) >= 34


def test_every_option_that_writes_or_reads_a_file_is_declared(found):
    undeclared = []
    for c in found:
        for a in c.options():
            if not takes_path(a):
                continue
            w = words(a)
            if WRITES.search(w) and role(a) != "output" and not (w == "db" and role(a) == "input"):  # a store read only
                undeclared.append(f"{c.name} {cli.option_name(a)}: writes a file, not declared with add_output")
            elif READS.search(w) and role(a) is None:
                undeclared.append(f"{c.name} {cli.option_name(a)}: reads a file, not declared with add_input")
    assert undeclared == []


def _namespace(parser: argparse.ArgumentParser, **values) -> argparse.Namespace:
    ns = argparse.Namespace(**{a.dest: a.default for a in parser._actions})
    for k, v in values.items():
        setattr(ns, k, v)
    return ns


def _value(action: argparse.Action, path):
    value = action.type(str(path)) if callable(action.type) else str(path)
    return [value] if action.nargs in ("+", "*") else value


def test_every_output_is_refused_when_it_is_an_input_of_the_same_command(found, tmp_path):
    """For every command, every declared output against every declared input whose value names
    the file directly (a data set path, a TOML, a store): the parser's own check refuses it."""
    target = tmp_path / "in.json"
    target.write_text(json.dumps({"version": "1.1", "data": []}))
    before = target.read_bytes()
    tried, missed = 0, []
    for c in found:
        acts = c.options()
        outs = [a for a in acts if role(a) == "output"]
        ins = [a for a in acts if role(a) == "input" or getattr(a, "path_role", None) and a.path_role.also_input]
        for o in outs:
            for i in ins:
                if i is o or o.path_role.paths is not None or (
                        i.path_role.paths is not None and "dataset_files" not in repr(i.path_role.paths)):
                    continue   # derived from a name (a language, a trial id, one file per model): by name below
                ns = _namespace(c.parser, **{o.dest: _value(o, target), i.dest: _value(i, target)})
                tried += 1
                try:
                    c.parser.check_paths(ns)
                except OutputIsInputError as e:
                    assert "refusing to overwrite an input" in str(e)
                else:
                    missed.append(f"{c.name} {cli.option_name(o)} = {cli.option_name(i)}")
    assert missed == []
    assert tried >= 25
    assert target.read_bytes() == before


def test_every_whole_number_option_is_a_count_a_seed_or_bounded(found):
    loose = [f"{c.name} {cli.option_name(a)}" for c in found for a in c.options()
             if a.type in (int, cli.positive_int, cli.non_negative_int, cli.positive_int_list)
             or (isinstance(a.default, int) and not isinstance(a.default, bool) and a.type is None
                 and a.nargs != 0 and not a.choices)]
    assert loose == []
    seeds = [f"{c.name} {cli.option_name(a)}" for c in found for a in c.options()
             if "seed" in words(a) and a.type is not cli.seed]
    assert seeds == []


def test_every_count_over_its_budget_is_refused_while_parsing(found, capsys, monkeypatch):
    for b in budgets.BUDGETS:
        monkeypatch.delenv(b.env, raising=False)
    checked = 0
    for c in found:
        for a in c.options():
            if not isinstance(a.type, cli.Count):
                continue
            over = a.type.budget.value() + 1
            with pytest.raises(SystemExit) as exit_:
                c.parser.parse_args([cli.option_name(a), str(over)])
            assert exit_.value.code == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and cli.option_name(a) in err[0], (c.name, err)
            assert f"is over the limit of {over - 1:,} (set {a.type.budget.env} to change it)" in err[0]
            checked += 1
    assert checked >= 60


def test_a_negative_seed_is_refused_by_every_command(found, capsys):
    checked = 0
    for c in found:
        for a in c.options():
            if a.type is cli.seed:
                with pytest.raises(SystemExit):
                    c.parser.parse_args([cli.option_name(a), "-1"])
                assert "a seed is a whole number from 0 to 4,294,967,295, got '-1'" in capsys.readouterr().err
                checked += 1
    assert checked >= 12


def test_security_md_shows_the_generated_table_of_counts(found):
    doc = commands.SECURITY_MD.read_text(encoding="utf-8")
    assert commands.doc_with_table(doc, commands.count_table(found)) == doc, \
        "docs/SECURITY.md's table of counts is out of date: run python -m core.commands --update-doc"
    for b in budgets.COUNTS:
        assert f"`{b.env}`" in doc


def test_a_command_building_a_plain_argparse_parser_is_refused_unrun(tmp_path, monkeypatch):
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "rogue.py").write_text("import argparse\ndef main(argv):\n    raise AssertionError('ran')\n"
                                    "    argparse.ArgumentParser()\n")
    monkeypatch.setattr(commands, "ROOT", tmp_path)
    with pytest.raises(RuntimeError, match="builds argparse.ArgumentParser"):
        commands.parser_of(bench / "rogue.py")


# ------------------------------------------------------------------ the cases issue 57 named

SQUAD = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{
    "context": "Paris is the capital of France.",
    "qas": [{"id": "q1", "question": "What is the capital of France?",
             "answers": [{"text": "Paris", "answer_start": 0}]}]}]}]}


def main_of(name: str):
    path = ROOT / name if name.startswith("benchmarks/") else None
    if path is not None:
        return commands._module(path).main
    from importlib import import_module

    return import_module(name).main


def refused(main, argv, capsys, *protected) -> str:
    """Exit status 2 (returned or raised), one line on stderr, the protected files unchanged."""
    before = {p: p.read_bytes() for p in protected}
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    for p, data in before.items():
        assert p.read_bytes() == data, p
    return lines[0]


@pytest.fixture
def squad(tmp_path):
    f = tmp_path / "in.json"
    f.write_text(json.dumps(SQUAD))
    return f


@pytest.mark.parametrize("flag, lang", [("--json", "de"), ("--csv", "en")])
def test_routes_refuses_to_write_onto_the_xquad_file_it_reads(flag, lang, tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    for code in ("de", "en"):
        (data / "xquad" / f"xquad.{code}.json").write_text(json.dumps(SQUAD))
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    target = data / "xquad" / f"xquad.{lang}.json"
    line = refused(main_of("core.models.routes"), ["--source", "de", "--model", "e5-qa-multi", "--first", "2",
                                                   flag, str(target)], capsys, target)
    assert line.startswith(f"python -m core.models.routes: error: {flag} ") and "is the input --source" in line


@pytest.mark.parametrize("bench, argv", [
    ("padding", ["--dataset", "{f}", "--n", "2", "--json", "{f}"]),
    ("static_int8", ["--dataset", "{f}", "--json", "{f}"]),
    ("capability_nbest", ["--file", "{f}", "--model", "minilm-squad", "--json", "{f}"]),
    ("qa_throughput", ["--dataset", "{f}", "--json", "{f}", "--compare-backends"]),
])
def test_benchmarks_refuse_a_json_that_is_their_input(bench, argv, squad, capsys):
    line = refused(main_of(f"benchmarks/{bench}.py"), [a.format(f=squad) for a in argv], capsys, squad)
    assert "--json" in line and "refusing to overwrite an input" in line


def _store_with_a_sweep(db):
    from core.datasets import Dataset
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep
    from core.types import Answer, Prediction, QAExample, Span

    class Echo:
        fingerprint = "echo-1"

        def predict(self, questions, contexts, **kw):
            return [Prediction([Span(c.split()[0], 0, len(c.split()[0]), 1.0)]) for c in contexts]

    toy = Dataset("toy", "en", [QAExample("q1", "Who came?", "Anna came.", (Answer("Anna", 0),))])
    run_sweep(SweepConfig("toy", ["TUQ"], ["echo"], name="team sweep"), {"echo": Echo()}, db, dataset=toy)


def test_heatmaps_benchmark_neither_overwrites_nor_fills_a_store_it_was_given(tmp_path, capsys):
    db = tmp_path / "sw.sqlite"
    _store_with_a_sweep(db)
    main = main_of("benchmarks/heatmaps_open.py")
    line = refused(main, ["--db", str(db), "--json", str(db)], capsys, db)
    assert "--json" in line and "is the input --db" in line
    line = refused(main, ["--db", str(db), "--sample", "5"], capsys, db)
    assert "holds other sweeps ('team sweep')" in line and "name a new file" in line


def test_sweeps_processes_over_the_budget_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("QAX_MAX_PROCESSES", raising=False)
    db = tmp_path / "runs" / "sw.sqlite"
    line = refused(main_of("core.sweeps.cli"), ["--dataset", "demo.en", "--perturbations", "TUQ", "--models",
                                                "minilm-squad", "--processes", "100000", "--db", str(db)], capsys)
    assert line == (f"python -m core.sweeps: error: argument --processes: 100,000 processes is over the limit of "
                    f"{budgets.MAX_PROCESSES.value():,} (set QAX_MAX_PROCESSES to change it) (see --help)")
    assert not (tmp_path / "runs").exists()
    monkeypatch.setenv("QAX_MAX_PROCESSES", "100000")   # the administrator raises it
    assert cli.Count(budgets.MAX_PROCESSES)("100000") == 100000


def test_evaluate_threads_over_the_budget_is_refused(squad, capsys):
    line = refused(main_of("core.models.evaluate"), ["--model", "minilm-squad", "--dataset", str(squad),
                                                     "--threads", "100000"], capsys)
    assert "argument --threads: 100,000 threads is over the limit of" in line and "QAX_MAX_THREADS" in line


@pytest.mark.parametrize("bench, argv, message", [
    ("perturb_throughput", ["--n", "-1"], "argument --n: must be a whole number of at least 1, got '-1'"),
    ("concurrent_askers", ["--n", "0"], "argument --n: must be a whole number of at least 1, got '0'"),
    ("concurrent_askers", ["--rounds", "-1"], "argument --rounds: must be a whole number of at least 1, got '-1'"),
    ("ask_models", ["--n", "0"], "argument --n: must be a whole number of at least 1, got '0'"),
])
def test_benchmark_counts_below_one_are_refused(bench, argv, message, capsys):
    assert message in refused(main_of(f"benchmarks/{bench}.py"), argv, capsys)


def test_listing_a_missing_sweep_database_is_an_error(tmp_path, capsys):
    line = refused(main_of("core.sweeps.cli"), ["--list", "--db", str(tmp_path / "missing.json")], capsys)
    assert line == f"python -m core.sweeps: error: no sweep database at {tmp_path / 'missing.json'}: nothing to list"
    assert not (tmp_path / "missing.json").exists()


def test_a_benchmark_refuses_a_json_onto_the_data_set_it_always_reads(tmp_path, monkeypatch, capsys):
    """perturb_throughput.py reads the data directory's xquad/xquad.en.json without an option
    naming it (ArgumentParser.reads): --json may not be that file either."""
    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    target = data / "xquad" / "xquad.en.json"
    target.write_text(json.dumps(SQUAD))
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    line = refused(main_of("benchmarks/perturb_throughput.py"), ["--n", "1", "--json", str(target)], capsys, target)
    assert "--json" in line and "is the input xquad/xquad.en (from the data directory)" in line
