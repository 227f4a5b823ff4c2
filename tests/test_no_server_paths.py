"""No server path is shown to a visitor unless the server says so (issue 46, finding 9):
Beat the AI's database and the sidebar's data directory show a name, not the folder it is in;
QAX_SHOW_PATHS=1 shows them in full."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest


@pytest.fixture
def beat_env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "secret-folder" / "beat.sqlite"
    db.parent.mkdir()
    monkeypatch.setenv("QAX_BEAT_DB", str(db))
    data = tmp_path / "hidden-data"
    data.mkdir()
    monkeypatch.setenv("QAX_DATA_DIR", str(data))
    monkeypatch.delenv("QAX_SHOW_PATHS", raising=False)
    return db, data


def _shown(at: AppTest) -> str:
    """Everything the page shows as text: captions, Markdown, and the selectboxes' option labels."""
    parts = [c.value for c in at.caption] + [m.value for m in at.markdown]
    parts += [o for sb in at.selectbox for o in sb.options]
    return "\n".join(parts)


def test_beat_page_and_sidebar_show_no_server_path(beat_env):
    db, data = beat_env
    at = AppTest.from_file("../pages/beat_the_ai.py", default_timeout=120).run()
    assert not at.exception, at.exception
    shown = _shown(at).replace("\\", "")
    assert "Database: beat.sqlite" in shown
    assert str(db.parent) not in shown and "secret-folder" not in shown
    assert str(data) not in shown and "hidden-data" not in shown
    assert "the server's data directory" in at.selectbox(key="data_dir_pick").options


def test_qax_show_paths_shows_them(beat_env, monkeypatch):
    db, data = beat_env
    monkeypatch.setenv("QAX_SHOW_PATHS", "1")
    at = AppTest.from_file("../pages/beat_the_ai.py", default_timeout=120).run()
    assert not at.exception, at.exception
    shown = _shown(at).replace("\\", "")
    assert f"Database: {db}" in shown
    assert str(data.resolve()) in at.selectbox(key="data_dir_pick").options
