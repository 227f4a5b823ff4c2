"""The app's frame (components/frame.py): page config, state and the shared sidebar are drawn once
per run, by app.py when it runs the page, by the page itself when it runs on its own (AppTest, or a
fresh server's first visit to a page address, tests/test_e2e_first_visit.py). ``set_page_config``
used to run twice on every page under app.py (app.py, then the page's init_state).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import streamlit
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.stem for p in (ROOT / "pages").glob("*.py"))


@pytest.fixture
def frame_env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QAX_TRIALS_DIR", str(tmp_path / "trials"))
    monkeypatch.setenv("QAX_BEAT_DB", str(tmp_path / "beat.sqlite"))
    monkeypatch.setenv("QAX_SWEEP_DB", str(tmp_path / "sweeps.sqlite"))
    calls: list[dict] = []
    original = streamlit.set_page_config

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(streamlit, "set_page_config", counting)
    return calls


def _sidebar_settings(at: AppTest) -> list[str]:
    return [w.key for w in at.sidebar.selectbox if w.key in ("data_dir_pick", "backend_pick")]


def test_every_page_under_app_py_gets_one_page_config_and_one_sidebar(frame_env):
    at = AppTest.from_file("../app.py", default_timeout=180).run()
    assert not at.exception, at.exception
    assert frame_env == [{"page_title": "QA Robustness Explorer", "page_icon": "🔎", "layout": "wide"}]
    assert _sidebar_settings(at) == ["data_dir_pick", "backend_pick"]
    for page in PAGES:
        frame_env.clear()
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert len(frame_env) == 1, (page, frame_env)
        assert _sidebar_settings(at) == ["data_dir_pick", "backend_pick"], page
        assert at.title and at.title[0].value, page


@pytest.mark.parametrize("page", ["models", "heatmaps"])
def test_a_page_run_on_its_own_draws_the_frame_itself(frame_env, page):
    at = AppTest.from_file(f"../pages/{page}.py", default_timeout=180).run()
    assert not at.exception, at.exception
    assert len(frame_env) == 1 and frame_env[0]["layout"] == "wide"
    assert _sidebar_settings(at) == ["data_dir_pick", "backend_pick"]
    assert at.session_state["max_answer_tokens"] == 30   # the state's defaults are there too


def test_navigation_sections():
    """Explore / Measure / Collect, every page in exactly one of them."""
    tree = ast.parse((ROOT / "app.py").read_text())
    [sections] = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                  and getattr(node.targets[0], "id", None) == "SECTIONS"]
    by_section = {}
    for key, value in zip(sections.keys, sections.values):
        files = [ast.literal_eval(e.args[0]) if isinstance(e, ast.Call) else "pages/ask.py" for e in value.elts]
        by_section[ast.literal_eval(key)] = [Path(f).stem for f in files]
    assert by_section == {"Explore": ["ask", "variants", "gallery"],
                          "Measure": ["sweeps", "heatmaps", "models", "behaviour"],
                          "Collect": ["beat_the_ai", "speech_trial"]}
    assert sorted(p for ps in by_section.values() for p in ps) == PAGES
