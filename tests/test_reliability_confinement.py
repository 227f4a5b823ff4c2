"""Confinement (issue 23, item 3): web fields never reach the server's filesystem, and no sweep
database is written unless it is a new file or an existing sweep store.

Every bad input below is refused with a message that names the problem, and nothing is written:
files keep their bytes (compared byte for byte), no database appears, no table is added. The
pages are driven with AppTest; the CLI through ``core.sweeps.cli.main``.
"""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import config
from core.datasets import Dataset, DatasetError, load_dataset, resolve_data_file
from core.sweeps.analysis import sweep_cells
from core.sweeps.config import SweepConfig, SweepError
from core.sweeps.running.run import run_sweep
from core.sweeps.store import Store, StoreError
from core.types import Answer, Prediction, QAExample, Span

SWEEPS = "../pages/sweeps.py"
TOY = Dataset("toy", "en", [QAExample("q1", "Who came?", "Anna came.", (Answer("Anna", 0),)),
                            QAExample("q2", "What came?", "Bob came.", (Answer("Bob", 0),))])


class Echo:
    """Answers with the first word of the context (a fixed, known answer)."""

    fingerprint = "echo-1"

    def predict(self, questions, contexts, **kw):
        return [Prediction([Span(c.split()[0], 0, len(c.split()[0]), 1.0)]) for c in contexts]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def foreign_db(path: Path) -> Path:
    """Another application's SQLite database (rollback journal, one table, one row)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('alice')")
    conn.commit()
    conn.close()
    return path


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """A data directory with one eval set and one challenge file, a secret outside every root,
    and the app's roots pointed into tmp_path (nothing of the real server is scanned)."""
    data = tmp_path / "data"
    for folder in (data / "noiseqa", data / "xquad", tmp_path / "secret" / "xquad"):
        folder.mkdir(parents=True)
    TOY.to_squad_json(data / "xquad" / "xquad.en.json")
    TOY.to_squad_json(data / "noiseqa" / "toy-keyboard-natural.json")
    secret = tmp_path / "secret"
    TOY.to_squad_json(secret / "toy-secret.json")
    TOY.to_squad_json(secret / "xquad" / "xquad.de.json")   # SQuAD-shaped, outside every root
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QAX_SWEEP_DB", str(dbs / "sweeps.sqlite"))
    monkeypatch.delenv("QAX_EXTRA_ROOTS", raising=False)
    return {"data": data, "secret": secret, "dbs": dbs}


# ------------------------------------------------------------------------- file: specs, data sets


@pytest.mark.parametrize("spec, message", [
    ("file:../secret/toy-secret", "climbs out of"),                       # .. escape
    ("file:noiseqa/../../secret/toy-secret", "climbs out of"),            # .. after a real folder
    ("file:{secret}/toy-secret", "is outside the folders this app may use"),   # absolute, outside
])
def test_file_spec_outside_the_data_directory_is_refused(roots, tmp_path, spec, message):
    db = tmp_path / "s.sqlite"
    spec = spec.format(secret=roots["secret"])
    with pytest.raises(SweepError, match=message) as err:
        run_sweep(SweepConfig("toy", [spec], ["echo"]), {"echo": Echo()}, db, dataset=TOY)
    assert str(err.value).startswith(spec + ":")
    assert not db.exists()                       # refused before the database was opened


def test_symlink_escaping_the_data_directory_is_refused(roots, tmp_path):
    link = roots["data"] / "noiseqa" / "linked.json"
    link.symlink_to(roots["secret"] / "toy-secret.json")
    with pytest.raises(DatasetError, match="is a link to .* outside the folders this app may use"):
        resolve_data_file("noiseqa/linked", roots["data"])
    with pytest.raises(SweepError, match="is a link to .* QAX_EXTRA_ROOTS"):
        run_sweep(SweepConfig("toy", ["file:noiseqa/linked"], ["echo"]), {"echo": Echo()},
                  tmp_path / "s.sqlite", dataset=TOY)
    assert not (tmp_path / "s.sqlite").exists()


def test_file_spec_inside_the_roots_still_works(roots, tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    run = run_sweep(SweepConfig("toy", ["file:noiseqa/toy-keyboard-natural"], ["echo"]), {"echo": Echo()},
                    db, dataset=TOY)
    assert run.status == "done" and run.done_units == 4
    # an absolute path is read once an administrator adds its folder
    monkeypatch.setenv("QAX_EXTRA_ROOTS", str(roots["secret"]))
    assert resolve_data_file(f"{roots['secret']}/toy-secret.json") == roots["secret"] / "toy-secret.json"


def test_confined_dataset_names(roots):
    """The web UI loads data sets confined: a path outside the roots (a stored sweep's data set
    named by the CLI) or climbing out of the data directory is refused; names inside still load."""
    with pytest.raises(DatasetError, match="is outside the folders this app may use"):
        load_dataset(str(roots["secret"] / "toy-secret.json"), confined=True)
    with pytest.raises(DatasetError, match="climbs out of"):
        load_dataset("../secret/toy-secret", confined=True)
    with pytest.raises(DatasetError, match="climbs out of"):
        load_dataset("../secret/toy-secret")          # the CLI's data-dir lookup too
    with pytest.raises(DatasetError, match="climbs out of"):
        load_dataset("file:../secret/toy-secret")     # a data set given as file:
    assert len(load_dataset("xquad/xquad.en", confined=True)) == 2
    assert len(load_dataset("file:noiseqa/toy-keyboard-natural")) == 2
    assert load_dataset(str(roots["secret"] / "toy-secret.json")).examples[0].id == "q1"   # CLI: any path


def test_cli_file_spec_escape_exits_2_and_writes_nothing(roots, tmp_path, tiny_registry, monkeypatch, capsys):
    from core.sweeps.cli import main

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "cli.sqlite"
    code = main(["--dataset", "xquad/xquad.en", "--perturbations", "file:../secret/toy-secret", "--models", "tiny-a",
                 "--db", str(db), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "file:../secret/toy-secret: the path ../secret/toy-secret.json climbs out of" in err
    assert "Traceback" not in err and not db.exists()


# ------------------------------------------------------------------------------ the sweep store


def test_non_sqlite_file_is_refused_and_left_byte_for_byte(tmp_path):
    notes = tmp_path / "notes.sqlite"
    notes.write_text("my notes, not a database\n" * 50)
    before = digest(notes)
    for readonly in (False, True):
        with pytest.raises(StoreError, match="is not a SQLite file, so not a sweep database; it was left untouched"):
            Store(notes, readonly=readonly)
    with pytest.raises(StoreError, match="is not a SQLite file"):
        run_sweep(SweepConfig("toy", ["TUQ"], ["echo"]), {"echo": Echo()}, notes, dataset=TOY)
    with pytest.raises(StoreError, match="is not a SQLite file"):
        sweep_cells.list_sweeps(notes)
    assert digest(notes) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.sqlite"]   # no -wal, no -journal


def test_foreign_sqlite_database_gets_no_sweep_tables(tmp_path):
    other = foreign_db(tmp_path / "app.db")
    before = digest(other)
    for readonly in (False, True):
        with pytest.raises(StoreError, match=r"another application's SQLite database \(tables: users\)"):
            Store(other, readonly=readonly)
    with pytest.raises(StoreError, match="another application's"):
        run_sweep(SweepConfig("toy", ["TUQ"], ["echo"]), {"echo": Echo()}, other, dataset=TOY)
    assert tables(other) == {"users"} and digest(other) == before


def test_directory_missing_and_empty_files(tmp_path):
    folder = tmp_path / "folder.sqlite"
    folder.mkdir()
    for readonly in (False, True):
        with pytest.raises(StoreError, match="is a folder, not a sweep database file"):
            Store(folder, readonly=readonly)
    assert list(folder.iterdir()) == []
    with pytest.raises(StoreError, match="no sweep database at"):
        sweep_cells.list_sweeps(tmp_path / "absent.sqlite")          # reading never creates
    assert not (tmp_path / "absent.sqlite").exists()
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(StoreError, match=r"no sweep database at .*\(an empty file\)"):
        sweep_cells.list_sweeps(empty)
    assert empty.stat().st_size == 0


def test_a_sweep_store_and_a_new_file_are_written(tmp_path):
    db = tmp_path / "new" / "s.sqlite"
    run_sweep(SweepConfig("toy", ["TUQ"], ["echo"], name="one"), {"echo": Echo()}, db, dataset=TOY)
    run_sweep(SweepConfig("toy", ["TLQ"], ["echo"], name="two"), {"echo": Echo()}, db, dataset=TOY)
    assert [s["name"] for s in sweep_cells.list_sweeps(db)] == ["one", "two"]
    blank = tmp_path / "blank.sqlite"           # a SQLite file with no table yet is new, not foreign
    sqlite3.connect(blank).execute("PRAGMA user_version = 0").connection.close()
    with Store(blank):
        pass
    assert "sweeps" in tables(blank)


@pytest.mark.parametrize("name", ["../evil", "a/b", "/etc/passwd", ".hidden", "", "x" * 81, "ok\x00.db",
                                  "über.db", "a b"])
def test_safe_file_name_refuses(name):
    with pytest.raises(ValueError, match="is not a plain file name"):
        config.safe_file_name(name)


# ----------------------------------------------------------------------------------- the pages


@pytest.fixture
def page_env(roots, tiny_registry, monkeypatch):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return roots


def sweeps_page() -> AppTest:
    at = AppTest.from_file(SWEEPS, default_timeout=180).run()
    assert not at.exception, at.exception
    return at


def test_sweeps_page_offers_sweep_stores_only(page_env, tmp_path):
    dbs, secret = page_env["dbs"], page_env["secret"]
    run_sweep(SweepConfig("toy", ["TUQ"], ["echo"], name="kept"), {"echo": Echo()}, dbs / "kept.sqlite", dataset=TOY)
    run_sweep(SweepConfig("toy", ["TUQ"], ["echo"], name="far"), {"echo": Echo()}, secret / "far.sqlite", dataset=TOY)
    foreign_db(dbs / "other-app.db")
    (dbs / "notes.sqlite").write_text("text")
    (dbs / "escape.sqlite").symlink_to(secret / "far.sqlite")   # a sweep store, but outside the roots
    before = {p.name: digest(p) for p in dbs.iterdir() if p.is_file() and not p.is_symlink()}
    # (a read-only reader of a WAL database may leave SQLite's -wal/-shm side files: the file stays)
    at = sweeps_page()
    picker = at.selectbox(key="sw_db")
    # the server's paths stay hidden (QAX_SHOW_PATHS unset): the stores are offered by file name
    assert picker.options == ["sweeps.sqlite", "kept.sqlite", "➕ New sweep database…"]
    assert picker.value == str(dbs / "sweeps.sqlite")
    assert not any(t.label == "Sweep database (SQLite file)" for t in at.text_input)   # no free-text path
    assert any("No sweep database at" in i.value for i in at.info)
    picker.set_value(str(dbs / "kept.sqlite")).run()
    assert list(at.dataframe[0].value["name"]) == ["kept"]
    assert {name: digest(dbs / name) for name in before} == before
    assert not (dbs / "sweeps.sqlite").exists()


@pytest.mark.parametrize("typed, message", [
    ("../evil", "is not a plain file name"),
    ("sub/dir.sqlite", "is not a plain file name"),
    ("notes.sqlite", "notes.sqlite already exists in"),         # a text file in the folder
    ("other-app.db", "other-app.db already exists in"),         # another application's database
])
def test_new_database_name_is_validated(page_env, typed, message):
    dbs = page_env["dbs"]
    (dbs / "notes.sqlite").write_text("text")
    foreign_db(dbs / "other-app.db")
    before = {p.name: digest(p) for p in dbs.iterdir()}
    at = sweeps_page()
    at.selectbox(key="sw_db").set_value("\x00new").run()
    assert any("Type a file name" in i.value for i in at.info)
    at.text_input(key="sw_db_new").set_value(typed).run()
    assert not at.exception, at.exception
    assert any(message in e.value.replace("\\", "") for e in at.error)
    assert at.button(key="sw_start").disabled
    assert {p.name: digest(p) for p in dbs.iterdir()} == before
    assert not (dbs.parent / "evil.sqlite").exists()


def test_new_database_is_created_only_when_its_sweep_starts(page_env):
    dbs = page_env["dbs"]
    at = sweeps_page()
    at.selectbox(key="sw_db").set_value("\x00new").run()
    at.text_input(key="sw_db_new").set_value("fresh").run()
    assert any("fresh.sqlite is created in" in c.value.replace("\\", "") for c in at.caption)
    assert not (dbs / "fresh.sqlite").exists()
    at.number_input(key="sw_sample").set_value(2)
    at.multiselect(key="sw_fam_case").set_value(["TUQ"]).run()
    at.multiselect(key="sw_models").set_value(["tiny-a"]).run()
    assert not at.button(key="sw_start").disabled
    at.button(key="sw_start").click().run()
    assert at.session_state["sweep_job"].wait(120)
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["sweep_job"].error is None
    assert [s["status"] for s in sweep_cells.list_sweeps(dbs / "fresh.sqlite")] == ["done"]
    assert not (dbs / "sweeps.sqlite").exists()


def test_default_database_that_is_foreign_is_read_only(page_env, monkeypatch):
    """An administrator's QAX_SWEEP_DB naming another application's database: the page says so
    and adds nothing to it (opening the page used to create the sweep tables in it)."""
    other = foreign_db(page_env["dbs"] / "app.db")
    monkeypatch.setenv("QAX_SWEEP_DB", str(other))
    before = digest(other)
    at = sweeps_page()
    assert any("another application's SQLite database" in e.value.replace("\\", "") for e in at.error)
    assert tables(other) == {"users"} and digest(other) == before


def test_sidebar_offers_only_the_configured_data_directory(page_env):
    at = AppTest.from_file(SWEEPS, default_timeout=180)
    at.session_state["data_dir"] = str(page_env["secret"])   # a crafted session cannot widen it
    at.run()
    assert not at.exception, at.exception
    pick = at.sidebar.selectbox(key="data_dir_pick")
    # the folder's path is the server's: not shown unless QAX_SHOW_PATHS=1 (issue 46)
    assert pick.options == ["the server's data directory", "none (the bundled demo sets only)"]
    assert pick.value == str(page_env["data"])
    assert not at.sidebar.text_input                             # no free-text folder any more
    datasets = at.selectbox(key="sw_dataset").options
    assert "xquad/xquad.en" in datasets and "xquad/xquad.de" not in datasets
    pick.set_value("").run()
    assert at.selectbox(key="sw_dataset").options == [d for d in datasets if d.startswith("demo.")]


def test_model_and_file_parameters_are_not_typed_in_the_browser(page_env):
    """ReplaceRQ's mlm_model names a model folder or hub id: the page shows the server's setting
    instead of a text field, and will not resume a stored sweep that names one (the CLI may)."""
    import threading

    at = sweeps_page()
    at.multiselect(key="sw_fam_word").set_value(["ReplaceRQ"]).run()
    assert not at.exception, at.exception
    assert "sw_param_ReplaceRQ_mlm_model" not in [t.key for t in at.text_input]
    assert any("ReplaceRQ · mlm_model: the server’s setting (set on the server, not here)"
               in c.value.replace("\\", "") for c in at.caption)

    db = page_env["dbs"] / "sweeps.sqlite"
    stop = threading.Event()
    stop.set()   # stored, then cancelled before the first chunk: nothing is loaded
    run = run_sweep(SweepConfig("toy", ["ReplaceRQ:mlm_model=/srv/any/folder"], ["echo"], name="cli-made"),
                    {"echo": Echo()}, db, dataset=TOY, cancel=stop)
    assert run.status == "cancelled"
    at = sweeps_page()
    assert at.selectbox(key="sw_resume_pick").value == "cli-made"
    at.button(key="sw_resume").click().run()
    assert not at.exception, at.exception
    assert any("This sweep names ReplaceRQ mlm_model='/srv/any/folder', which only the command line may set"
               in e.value.replace("\\", "") for e in at.error)
    assert "sweep_job" not in at.session_state
    assert [s["status"] for s in sweep_cells.list_sweeps(db)] == ["cancelled"]
