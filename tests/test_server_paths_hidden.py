"""The server's folders stay off the pages and the downloads built there while QAX_SHOW_PATHS is
unset (issue 57, item 3): Speech trial's caption, "No sweep database at ...", a model error that
quotes models.toml, and the report built on Heatmaps ("Reproduce the sweep: ... --db ...").
The browser test (tests/test_e2e_server_paths.py) greps every page and download for the same."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from core import config, reports
from core.render.text import html_text, md_escape


@pytest.fixture
def hidden(monkeypatch, tmp_path):
    monkeypatch.delenv("QAX_SHOW_PATHS", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    secret = tmp_path / "secret-folder"
    secret.mkdir()
    monkeypatch.setenv("QAX_CACHE_DIR", str(secret / "cache"))
    return secret


def _page_text(at: AppTest) -> str:
    kinds = ("caption", "markdown", "info", "error", "warning", "success", "text", "code")
    parts = [str(e.value) for kind in kinds for e in getattr(at, kind)]
    parts += [o for sb in at.selectbox for o in sb.options]
    return "\n".join(parts).replace("\\", "")


def test_a_model_error_quoting_models_toml_shows_its_name_only(hidden, monkeypatch):
    from core.qa.registry import ModelLoadError, get_entry

    toml = hidden / "models.toml"
    toml.write_text('[[model]]\nname = "only"\nhf_id = "org/only"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(toml))
    with pytest.raises(ModelLoadError) as e:
        get_entry("fake-a")
    assert str(toml) in str(e.value)                       # the CLI keeps the full path
    for shown in (md_escape(e.value).replace("\\", ""), html_text(e.value)):
        assert "secret-folder" not in shown and str(hidden) not in shown.replace("&#47;", "/")
    assert md_escape(e.value).replace("\\", "") == "no model named 'fake-a' in models.toml"
    monkeypatch.setenv("QAX_SHOW_PATHS", "1")
    assert str(toml) in md_escape(e.value).replace("\\", "")


def test_hide_server_paths_keeps_other_text(hidden, monkeypatch):
    data = hidden / "data"
    data.mkdir()
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    text = f"Could not read {data}/xquad/xquad.en.json: not JSON; see /usr/share/doc and {data}."
    assert config.hide_server_paths(text) == "Could not read xquad.en.json: not JSON; see /usr/share/doc and data."
    assert config.hide_server_paths(f"{data}x/y") == f"{data}x/y"   # another folder that starts alike
    monkeypatch.setenv("QAX_SHOW_PATHS", "yes")
    assert config.hide_server_paths(text) == text


def test_speech_trial_caption_names_no_server_folder(hidden, tiny_registry, monkeypatch):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    at = AppTest.from_file("../pages/speech_trial.py", default_timeout=180).run()
    assert not at.exception, at.exception
    shown = _page_text(at)
    assert "Every recording is kept on this server (its trials folder)" in shown
    assert "secret-folder" not in shown and str(hidden) not in shown


def test_trial_sets_are_shown_from_the_trials_folder_down(hidden, monkeypatch):
    from core.collect import trial_sets, trials

    sets = trials.trials_root() / "t1" / "sets"
    paths = {"original": sets / "original.json", "whisper": sets / "whisper.json"}
    shown = trial_sets.shown_paths(paths)
    assert shown == {"original": "trials/t1/sets/original.json", "whisper": "trials/t1/sets/whisper.json"}
    command = trial_sets.sweep_command(SimpleNamespace(id="t1"), shown, ["m"])
    assert command == ("python -m core.sweeps --dataset trials/t1/sets/original.json "
                       "--perturbations file:trials/t1/sets/whisper.json --models m --name trial-t1")
    monkeypatch.setenv("QAX_SHOW_PATHS", "1")
    assert trial_sets.shown_paths(paths)["original"] == str(paths["original"])


def test_sweeps_page_says_no_database_without_its_folder(hidden, monkeypatch):
    missing = hidden / "sweeps.sqlite"
    monkeypatch.setenv("QAX_SWEEP_DB", str(missing))
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=180).run()
    assert not at.exception, at.exception
    said = [i.value.replace("\\", "") for i in at.info if "No sweep database at" in i.value]
    assert said and all("sweeps.sqlite" in s and "secret-folder" not in s for s in said), said


def test_heatmaps_report_names_the_database_not_its_folder(hidden, monkeypatch):
    from test_app_heatmaps import ANSWERS_A, TOY, LookupEngine

    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep

    db, data = hidden / "large.sqlite", hidden / "data"
    data.mkdir()
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    # a command-line sweep names its data set by a path on the server
    config = SweepConfig(str(data / "toy.json"), ["TUQ"], ["fake-a"], name="toy-sweep")
    assert run_sweep(config, {"fake-a": LookupEngine(ANSWERS_A, "a1")}, db, dataset=TOY).status == "done"
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=300).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="hm_sweep").options == ["toy-sweep · toy.json"]
    at.button(key="hm_report_build").click().run()
    assert not at.exception, at.exception
    _, html_report, md_report = at.session_state["hm_report"]
    for text in (html_report, md_report, _page_text(at)):
        assert "secret-folder" not in text and str(hidden) not in text
    assert "--name toy-sweep --db large.sqlite" in md_report            # Reproduce the sweep
    assert "python -m core.sweeps --show toy-sweep --db large.sqlite" in md_report   # the command that made it
    # the command line's report keeps the path it was given (the administrator's own file)
    html_cli, md_cli = reports.build(db, "toy-sweep")
    assert f"--db {db}" in md_cli
