import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


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
