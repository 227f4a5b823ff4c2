import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def pytest_runtest_setup(item):
    """``@pytest.mark.needs_data("xquad/xquad.en.json", ...)``: skip, naming what is missing, when the
    data directory (QAX_DATA_DIR or ../shared/data) lacks a file the test reads. CI always has it."""
    marker = item.get_closest_marker("needs_data")
    if marker is None:
        return
    from core import config

    root = config.data_dir()
    if root is None:
        pytest.skip("no data directory: set QAX_DATA_DIR or provide ../shared/data")
    missing = [p for p in marker.args if not (root / p).is_file()]
    if missing:
        pytest.skip(f"not in the data directory {root}: {', '.join(missing)}")


@pytest.fixture(scope="session")
def tiny_qa_dir(tmp_path_factory):
    from tiny_model import build_tiny_qa

    d = tmp_path_factory.mktemp("tiny_qa")
    build_tiny_qa(d)
    return d


@pytest.fixture(scope="session")
def tiny_registry(tiny_qa_dir, tmp_path_factory):
    """A models.toml naming the tiny model (twice, to exercise multi-model code) and a hub id."""
    f = tmp_path_factory.mktemp("registry") / "models.toml"
    f.write_text(
        f'[[model]]\nname = "tiny-a"\npath = "{tiny_qa_dir}"\nlanguages = ["en"]\ndescription = "tiny"\n\n'
        f'[[model]]\nname = "tiny-b"\npath = "{tiny_qa_dir}"\nlanguages = ["en"]\ndescription = "tiny twin"\n\n'
        '[[model]]\nname = "hub-model"\nhf_id = "no-such-org/no-such-qa-model"\n'
    )
    return f
