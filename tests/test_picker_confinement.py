"""Issue 46 (6): datasets resolved through symlinks stay inside the data directory on every picker.

The Ask, Variants and Beat-the-AI dataset pickers (``components.pickers.dataset_picker`` and
``load_set``, through ``components.loaders.dataset``) listed and showed a symlink in the data
directory that pointed at a file outside it; Sweeps refused it. Now every picker lists only what
:func:`core.datasets.confined_file` allows, and the loader refuses anything else.
"""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.datasets import Dataset, DatasetError, confined_file, discover_datasets, resolve_data_file
from core.types import Answer, QAExample

TOY = Dataset("toy", "en", [QAExample("q1", "Who came?", "Anna came.", (Answer("Anna", 0),))])
SECRET = Dataset("secret", "en", [QAExample("s1", "What is the password?", "The password is hunter2.",
                                            (Answer("hunter2", 16),))])


@pytest.fixture
def data(tmp_path, monkeypatch):
    """A data directory with a real set, a link to another file inside it, and a link to a
    SQuAD-shaped file outside every root."""
    root = tmp_path / "data"
    (root / "xquad").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    TOY.to_squad_json(root / "xquad" / "xquad.en.json")
    SECRET.to_squad_json(tmp_path / "secret" / "passwords.json")
    (root / "xquad" / "xquad.de.json").symlink_to(tmp_path / "secret" / "passwords.json")   # escapes
    (root / "xquad" / "xquad.es.json").symlink_to(root / "xquad" / "xquad.en.json")         # stays inside
    monkeypatch.setenv("QAX_DATA_DIR", str(root))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QAX_SWEEP_DB", str(tmp_path / "dbs" / "sweeps.sqlite"))
    monkeypatch.delenv("QAX_EXTRA_ROOTS", raising=False)
    return root


def test_discovery_leaves_out_links_that_leave_the_data_directory(data):
    names = [i.name for i in discover_datasets(data)]
    assert names == ["xquad/xquad.en", "xquad/xquad.es"]


def test_the_pickers_loader_refuses_an_escaping_link(data):
    from components import loaders

    with pytest.raises(DatasetError, match="is outside the folders this app may use"):
        loaders.dataset(str(data / "xquad" / "xquad.de.json"), str(data))
    with pytest.raises(DatasetError, match="is outside the data directory"):
        loaders.dataset(str(data / "xquad" / ".." / ".." / "secret" / "passwords.json"), str(data))
    inside = loaders.dataset(str(data / "xquad" / "xquad.es.json"), str(data))
    assert inside.name == "xquad.es" and [e.id for e in inside.examples] == ["q1"]
    assert confined_file(data / "xquad" / "xquad.en.json", data) == (data / "xquad" / "xquad.en.json").resolve()


def test_beat_the_ai_picker_neither_lists_nor_shows_the_link(data, tiny_registry, monkeypatch):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file("../pages/beat_the_ai.py", default_timeout=180).run()
    assert not at.exception, at.exception
    options = at.selectbox(key="beat_dataset").options
    assert "xquad/xquad.en" in options and "xquad/xquad.es" in options
    assert "xquad/xquad.de" not in options
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "hunter2" not in shown


def test_a_link_into_a_folder_of_qax_extra_roots_is_listed_and_loaded(data, monkeypatch):
    """A data directory that links to data sets kept elsewhere: the link is followed once an
    administrator names that folder in QAX_EXTRA_ROOTS (and only then)."""
    from components import loaders

    secret = data.parent / "secret"
    monkeypatch.setenv("QAX_EXTRA_ROOTS", str(secret))
    assert [i.name for i in discover_datasets(data)] == ["xquad/xquad.de", "xquad/xquad.en", "xquad/xquad.es"]
    linked = loaders.dataset(str(data / "xquad" / "xquad.de.json"), str(data))
    assert [e.id for e in linked.examples] == ["s1"]
    assert resolve_data_file("xquad/xquad.de", data) == (secret / "passwords.json").resolve()   # the CLIs' way
    with pytest.raises(DatasetError, match="is outside the data directory"):   # named directly: still not
        loaders.dataset(str(secret / "passwords.json"), str(data))
