"""Data sets as files: what lives in the data directory, evaluation-set overlap, the demo set,
data sets by name (:func:`load_dataset`: ``demo.<lang>``, ``file:<path>``, a path under the data
directory), the seeded sample every tool draws (:func:`sample_examples`) and :func:`has_gold`."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from core import config
from core.datasets.info import DatasetInfo
from core.datasets.natural import discover_natural, natural_dataset
from core.datasets.pairing import normalize_context
from core.datasets.squad import Dataset, DatasetError, load_squad
from core.langid import lang_from_filename
from core.types import QAExample

__all__ = ["DEMO_PATH", "EVAL_ONLY", "TRAINABLE_EVAL", "FILE_PREFIX", "discover_datasets",
           "confined_file", "dataset_file",
           "trainable_eval_files", "eval_contexts", "find_eval_overlap",
           "squad_dev_minus_xquad", "load_demo", "demo_dataset", "has_gold", "resolve_data_file", "load_dataset",
           "sample_examples", "XQUAD_PARAGRAPHS"]

DEMO_PATH = Path(__file__).resolve().parents[2] / "assets" / "demo" / "demo.json"

# Data-dir-relative globs of evaluation-only sets: never train on any context found in them.
# eval/ holds MLQA and any evaluation set of the user's own (discover_datasets offers each).
EVAL_ONLY: tuple[str, ...] = ("xquad/xquad.*.json", "noiseqa/Synthetic/*.json", "eval/**/*.json")
# Of those, the ones a run may train on when it names them itself (core.training --allow-mlqa):
# MLQA is the only German and the larger Chinese QA data with answers, and issue 29 lets German
# and Chinese models train on it; XQuAD and NoiseQA stay evaluation sets, always.
TRAINABLE_EVAL: tuple[str, ...] = ("eval/mlqa/*.json",)

# A name under the data directory is found with these endings, in this order (a file may be gzip-compressed).
_SUFFIXES = (".json", "", ".json.gz")
# A data set name (or a sweep spec) ``file:<path under the data directory>`` (core.perturb.spec).
FILE_PREFIX = "file:"

XQUAD_PARAGRAPHS = 240  # XQuAD = 240 SQuAD v1.1 dev paragraphs (Artetxe et al. 2020)


_ENGLISH_TRAIN_DIRS = {"squad", "squadshifts", "tydiqa"}


def _require_data_dir(data_dir: str | Path | None) -> Path:
    path = Path(data_dir) if data_dir is not None else config.data_dir()
    if path is None:
        raise DatasetError("no data directory: set QAX_DATA_DIR to the folder holding xquad/, "
                           "squad/, noiseqa/ ...")
    if not path.is_dir():
        raise DatasetError(f"data directory {str(path)!r} does not exist")
    return path


def discover_datasets(data_dir: str | Path | None = None) -> list[DatasetInfo]:
    """The known data files under ``data_dir`` (default: config.data_dir()), for a picker.

    Evaluation sets first, then challenge sets, then training files; by name within each. Any
    SQuAD-style file under ``eval/`` (MLQA's, or a set of the user's own) is an evaluation set,
    never trained on (:data:`EVAL_ONLY`).
    Languages come from the file names (nothing is opened); training files without a language
    in their name are the English SQuAD/SQuAD-Shifts/TyDi files, others are "und". A file whose
    path, symlinks resolved, leaves the data directory and the folders of QAX_EXTRA_ROOTS (a link
    into one of those is followed) is not listed: every picker offers only what
    :func:`confined_file` would load.
    """
    root = _require_data_dir(data_dir)
    roots = [root, *config.extra_roots()]
    infos: list[DatasetInfo] = []

    def add(path: Path, role: str, lang: str | None = None, original: Path | None = None):
        if not config.within(path, roots):
            return
        rel = path.relative_to(root).as_posix().removesuffix(".gz").removesuffix(".json")
        infos.append(DatasetInfo(rel, path, lang or lang_from_filename(path) or "und", role,
                                 original))

    def glob(pattern: str) -> list[Path]:   # each file as it is or gzip-compressed (.json.gz)
        return sorted(root.glob(pattern)) + sorted(root.glob(pattern + ".gz"))

    for p in glob("xquad/xquad.*.json"):
        add(p, "eval")
    xquad_en = root / "xquad" / "xquad.en.json"
    for p in glob("noiseqa/Synthetic/*.json"):
        if p.name.removesuffix(".gz").endswith("-synthetic.json"):
            add(p, "challenge", "en", xquad_en if xquad_en.exists() else None)
        else:  # xquad-context-en-question-en.json: the clean set, identical to xquad.en
            add(p, "eval")
    for p in glob("squad/*.json"):
        add(p, "train" if p.name.startswith("train") else "eval", "en")
    for p in glob("eval/**/*.json"):   # MLQA, and the user's own evaluation sets at any depth
        add(p, "eval")
    for p in glob("train/**/*.json"):
        english = p.relative_to(root / "train").parts[0] in _ENGLISH_TRAIN_DIRS
        add(p, "train", lang_from_filename(p) or ("en" if english else None))
    infos.extend(i for i in discover_natural(root) if config.within(i.path, roots))
    order = {"eval": 0, "challenge": 1, "train": 2}
    return sorted(infos, key=lambda i: (order[i.role], i.name))


# ----------------------------------------------------------------------------------------------
# Keeping evaluation data out of training


def trainable_eval_files(data_dir: str | Path | None = None) -> set[Path]:
    """The evaluation files a run may train on when it names them (:data:`TRAINABLE_EVAL`), resolved."""
    root = _require_data_dir(data_dir)
    return {p.resolve() for pattern in TRAINABLE_EVAL for p in root.glob(pattern)}


def eval_contexts(data_dir: str | Path | None = None, trained_on: Iterable[str | Path] = ()) -> frozenset[str]:
    """Normalised contexts of every evaluation-only file (:data:`EVAL_ONLY`: XQuAD in all
    languages, NoiseQA, and everything under eval/: MLQA and the user's own evaluation sets), so a
    trainer can refuse training data that contains them.
    ``trained_on``: files of :data:`TRAINABLE_EVAL` this run trains on, left out (any other
    file there is refused: ValueError)."""
    root = _require_data_dir(data_dir)
    skip = {Path(p).resolve() for p in trained_on}
    trainable = trainable_eval_files(root)
    if skip - trainable:
        raise ValueError(f"only MLQA ({', '.join(TRAINABLE_EVAL)} under {root}) may be trained on, not "
                         + ", ".join(sorted(str(p) for p in skip - trainable)))
    found: set[str] = set()
    for pattern in EVAL_ONLY:
        for path in sorted(root.glob(pattern)):
            if path.resolve() not in skip:
                found.update(normalize_context(c) for c in load_squad(path).contexts())
    if not found:
        raise DatasetError(f"no evaluation files ({', '.join(EVAL_ONLY)}) under {root}")
    return frozenset(found)


def find_eval_overlap(dataset: Dataset, contexts: Iterable[str]) -> list[str]:
    """Ids of ``dataset`` examples whose context is one of ``contexts`` (from eval_contexts)."""
    contexts = contexts if isinstance(contexts, (set, frozenset)) else set(contexts)
    return [ex.id for ex in dataset.examples if normalize_context(ex.context) in contexts]


def squad_dev_minus_xquad(data_dir: str | Path | None = None) -> Dataset:
    """SQuAD v1.1 dev without the 240 paragraphs XQuAD took from it (matched by normalised
    context), usable as training data. Raises DatasetError unless exactly 240 are removed."""
    root = _require_data_dir(data_dir)
    dev = load_squad(root / "squad" / "dev-v1.1.json", "en")
    xquad = {normalize_context(c) for c in load_squad(root / "xquad" / "xquad.en.json").contexts()}
    kept = [ex for ex in dev.examples if normalize_context(ex.context) not in xquad]
    removed = {normalize_context(ex.context) for ex in dev.examples} & xquad
    if len(removed) != XQUAD_PARAGRAPHS:
        raise DatasetError(f"expected to remove {XQUAD_PARAGRAPHS} XQuAD paragraphs from SQuAD "
                           f"dev, found {len(removed)}: are these the original files?")
    note = (f"removed {len(removed)} paragraphs ({len(dev) - len(kept)} questions) shared with "
            f"XQuAD; {len(dev.contexts()) - len(removed)} paragraphs, {len(kept)} questions left")
    return Dataset(name="squad-dev-minus-xquad", lang="en", examples=kept,
                   report=dev.report + [note], stats=dict(dev.stats))


# ----------------------------------------------------------------------------------------------
# The bundled demo set (assets/demo/demo.json, original text written for this project)


def load_demo() -> list[Dataset]:
    """The bundled demo set, one Dataset per language (en, de, zh), named ``demo.<lang>``."""
    full = load_squad(DEMO_PATH, name="demo")
    by_lang: dict[str, list[QAExample]] = {}
    for ex in full.examples:
        by_lang.setdefault(ex.lang, []).append(ex)
    return [Dataset(f"demo.{lang}", lang, exs) for lang, exs in by_lang.items()]


def demo_dataset(lang: str) -> Dataset:
    """The demo set of one language ("en", "de" or "zh")."""
    for ds in load_demo():
        if ds.lang == lang:
            return ds
    raise DatasetError(f"the demo set has no {lang!r} part (it has en, de, zh)")


def has_gold(example: QAExample) -> bool:
    """Whether ``example`` can be scored: it has a gold answer and is not marked impossible.

    >>> from core.types import Answer
    >>> has_gold(QAExample("q", "Who?", "Ann ran.", (Answer("Ann", 0),))), has_gold(QAExample("q", "Who?", "Ann ran."))
    (True, False)
    """
    return bool(example.answers) and not example.is_impossible


# ------------------------------------------------------------------------ data sets by name


def resolve_data_file(name: str, data_dir: str | Path | None = None, *, what: str = "file") -> Path:
    """The SQuAD file a ``file:`` spec (or a confined data set name) means, kept inside the roots.

    A relative name is looked up under the data directory (``data_dir``, else the configured one),
    with or without ``.json``, and may not climb out of it (``..``, a symlink pointing outside).
    An absolute name must lie inside :func:`core.config.read_roots` (the data directory, the runs
    folder, the speech trials' folder, QAX_EXTRA_ROOTS): core.translate.natural_mt and the speech trials
    print such paths. Anything else is a DatasetError naming the allowed folders; nothing is read.
    """
    rel = name.strip().removesuffix(".gz").removesuffix(".json")
    if not rel:
        raise DatasetError(f"{what}: needs a path under the data directory")
    root = Path(data_dir).expanduser().resolve() if data_dir is not None else config.data_dir()
    try:
        if Path(rel).expanduser().is_absolute():
            roots = config.read_roots(root)
            candidates = [config.confine(Path(rel + ext).expanduser(), roots, "the file") for ext in _SUFFIXES]
        elif root is None:
            raise DatasetError(f"no data directory to find {rel}.json in (set QAX_DATA_DIR)")
        else:
            candidates = [_under_data_dir(root, rel + ext) for ext in _SUFFIXES]
    except ValueError as e:   # ConfinementError; a NUL byte in the name
        raise DatasetError(f"{what}: {e}") from None
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise DatasetError(f"{what}: no file {rel}.json under the data directory {root}"
                         if not Path(rel).is_absolute() else f"{what}: no file {rel}.json")
    return path


def _under_data_dir(root: Path, relative: str) -> Path:
    """``relative`` under the data directory ``root``, resolved: it may not climb out with ``..``;
    a symlink in it may point into a folder of QAX_EXTRA_ROOTS, so a data directory can link to data
    sets kept elsewhere. A name with no file behind it comes back unresolved (the caller tries the
    next spelling), so a refusal names the file that would have been read."""
    named = Path(root) / relative
    if config.lexically_under(named, root) and not named.is_file():
        return named
    return config.under(root, relative, "the path", targets=config.extra_roots())


def confined_file(path: str | Path, data_dir: str | Path) -> Path:
    """``path`` resolved (symlinks followed) when it is a file inside ``data_dir``: what the
    web pickers load (:func:`discover_datasets` lists only such files). A symlink pointing out of
    the data directory (unless into a folder of QAX_EXTRA_ROOTS), or a path climbing out with
    ``..``, is a DatasetError; nothing is read.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / "in.json").write_text("{}") and None
    >>> (root / "out.json").symlink_to("/etc/hostname")
    >>> confined_file(root / "in.json", root) == (root / "in.json").resolve()
    True
    >>> try:
    ...     confined_file(root / "out.json", root)
    ... except DatasetError as e:
    ...     print(str(e).replace(str(root), "ROOT"))  # doctest: +NORMALIZE_WHITESPACE
    data set ROOT/out.json is outside the folders this app may use (ROOT); an administrator can
    add a folder with QAX_EXTRA_ROOTS
    """
    root = Path(data_dir).expanduser().resolve()
    try:
        if not config.lexically_under(path, data_dir):
            raise config.ConfinementError(f"data set {path} is outside the data directory {root}")
        resolved = config.confine(path, [root, *config.extra_roots()], "data set")
    except ValueError as e:   # ConfinementError; a NUL byte in the path
        raise DatasetError(str(e)) from None
    if not resolved.is_file():
        raise DatasetError(f"data set {path}: no such file")
    return resolved


def dataset_file(name: str, data_dir: str | Path | None = None, *, confined: bool = False) -> Path | None:
    """The file :func:`load_dataset` reads for ``name`` (None for the bundled demo set, or a name
    that does not resolve: loading it will say why). Reads nothing: the CLIs call it before any
    work to keep their outputs off their inputs (:func:`core.io.outputs.refuse_inputs`)."""
    try:
        if name.startswith(FILE_PREFIX):
            return resolve_data_file(name[len(FILE_PREFIX):], data_dir)
        if name.startswith("demo.") and "/" not in name:
            return None
        path = Path(name).expanduser()
        if not confined and path.is_file():
            return path
        if path.is_absolute():
            return resolve_data_file(name, data_dir) if confined else None
        root = Path(data_dir) if data_dir is not None else config.data_dir()
        if root is None:
            return None
        for rel in (name, f"{name}.json", f"{name}.json.gz"):
            candidate = _under_data_dir(root, rel)
            if candidate.is_file():
                return candidate
    except ValueError:   # DatasetError, ConfinementError: load_dataset gives the message
        return None
    return None


def load_dataset(name: str, data_dir: str | Path | None = None, *, confined: bool = False,
                 lang: str | None = None, on_ambiguous: str = "error", on_unscorable: str = "drop") -> Dataset:
    """A data set by name: ``demo.<lang>`` (the bundled demo set), ``natural:<set>[/<condition>]``
    (:func:`core.datasets.natural.natural_dataset`), ``file:<path>`` or a path under
    the data directory with or without ``.json`` (``xquad/xquad.en``), both kept inside the
    roots (:func:`resolve_data_file`), or, unless ``confined`` (the web UI), any existing file
    path (the CLI is the administrator's tool). ``lang``, ``on_ambiguous`` and ``on_unscorable``: see
    :func:`core.datasets.load_squad` (the demo set has its own languages)."""
    opts = {"lang": lang, "on_ambiguous": on_ambiguous, "on_unscorable": on_unscorable}
    if name.startswith("natural:"):   # HeySQuAD, Disfl-QA (core.datasets.natural): always under the data directory
        return natural_dataset(name, data_dir)
    if name.startswith(FILE_PREFIX):
        path = resolve_data_file(name[len(FILE_PREFIX):], data_dir, what=f"dataset {name!r}")
        return load_squad(path, name=name[len(FILE_PREFIX):].strip().removesuffix(".gz").removesuffix(".json"), **opts)
    if name.startswith("demo.") and "/" not in name:
        return demo_dataset(name.split(".", 1)[1])
    path = Path(name).expanduser()
    if not confined and path.is_file():
        return load_squad(path, **opts)
    if path.is_absolute():
        if not confined:
            raise DatasetError(f"dataset {name!r}: no such file")
        return load_squad(resolve_data_file(name, data_dir, what=f"dataset {name!r}"), **opts)
    root = Path(data_dir) if data_dir is not None else config.data_dir()
    if root is None:
        raise DatasetError(f"dataset {name!r}: no such file, and no data directory "
                         "(set QAX_DATA_DIR)")
    for rel in (name, f"{name}.json", f"{name}.json.gz"):
        try:
            candidate = _under_data_dir(root, rel)
        except ValueError as e:   # ConfinementError; a NUL byte in the name
            raise DatasetError(f"dataset {name!r}: {e}") from None
        if candidate.is_file():
            return load_squad(candidate, name=name.removesuffix(".gz").removesuffix(".json"), **opts)
    raise DatasetError(f"dataset {name!r}: neither a file nor found under the data directory {root}")


def sample_examples(examples: Sequence[QAExample], n: int | None, seed: int) -> list[QAExample]:
    """``n`` examples chosen by seed, in data set order (all of them when n is None or too big).

    Each example is ranked by sha256(seed, id) and the n lowest ranks are kept, so the sample of
    size n is a subset of the sample of size n + k with the same seed: extending a sweep's sample
    reuses everything already computed.
    """
    if n is None or n >= len(examples):
        return list(examples)
    if n < 1:
        raise DatasetError(f"sample size must be at least 1, got {n}")
    ranked = sorted(range(len(examples)), key=lambda i: _sample_rank(seed, examples[i].id))
    keep = set(ranked[:n])
    return [ex for i, ex in enumerate(examples) if i in keep]


def _sample_rank(seed: int, example_id: str) -> str:
    """sha256 of ("sample", seed, id) joined by the unit separator (the sweeps' sampling order)."""
    return hashlib.sha256("\x1f".join(("sample", str(seed), example_id)).encode("utf-8")).hexdigest()
