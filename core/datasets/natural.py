"""Natural interface noise as challenge sets: real spoken and disfluent questions, paired by id.

Two public sets under ``<data dir>/natural/`` (its README gives origin, commit and licence):

* **HeySQuAD** (Wu et al. 2023): the same 1,002 SQuAD v1.1 dev questions three ways, one SQuAD
  file each: the original text, spoken by a TTS voice then transcribed (``asr_tts``), spoken by a
  person then transcribed (``asr_human``). Paired by id across the three files with
  :func:`core.datasets.pair_challenge` (rule "id": a pair is joined only where contexts and gold
  answers agree).
* **Disfl-QA** (Gupta et al. 2021): ``{squad_v2_id: {"original", "disfluent"}}`` per split.
  Contexts and answers come from SQuAD v1.1 dev by id; ids SQuAD v1.1 dev lacks are SQuAD v2's
  unanswerable questions, reported and dropped (their gold is "no answer", which our extractive
  scores do not measure).

A natural *condition* (``asr_human``, ``asr_tts``, ``disfluent``: :data:`CONDITIONS`) maps a
question id to the natural version of that question; the ``natural_Q`` perturbation
(:mod:`core.perturb.catalogue.natural`) applies it to any data set holding those ids, so the
spec ``natural:asr_human`` sits in a sweep beside synthetic perturbations. The Disfl-QA condition
covers its dev and test splits (its train split is the one a run may train on).

Both sets take their questions from SQuAD dev, which the shipped English models trained on,
except the 240 paragraphs XQuAD took from it: :func:`xquad_ids` names the questions on those
paragraphs, so every score can be given for them apart (their clean scores are not inflated).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from core import config
from core.datasets.info import DatasetInfo
from core.datasets.pairing import normalize_context, pair_challenge
from core.datasets.squad import Dataset, DatasetError, load_squad
from core.io import safe_json
from core.types import QAExample

__all__ = ["NATURAL_PREFIX", "CONDITIONS", "Condition", "NaturalSet", "heysquad", "disfl_qa", "natural_set",
           "natural_questions", "natural_dataset", "discover_natural", "xquad_ids", "xquad_contexts",
           "subset_name", "SUBSETS",
           "DISFL_SPLITS", "NATURAL_SETS"]

NATURAL_PREFIX = "natural:"
HEYSQUAD_DIR = "natural/heysquad"
HEYSQUAD_FILES = {"original": "dev-common-original-1002.json", "asr_tts": "dev-common-machine-transcribed-1002.json",
                  "asr_human": "dev-common-human-transcribed-1002.json"}
DISFL_DIR = "natural/disfl-qa"
DISFL_SPLITS = ("dev", "test", "train")
DISFL_EVAL_SPLITS = ("dev", "test")      # what the ``disfluent`` condition covers
SQUAD_DEV = "squad/dev-v1.1.json"
XQUAD_EN = "xquad/xquad.en.json"
# The two subsets every natural score is given for: questions on XQuAD's 240 paragraphs (not trained
# on by the shipped English models) and the rest of SQuAD dev (trained on: clean scores inflated).
SUBSETS = ("xquad paragraphs", "rest of squad dev")


@dataclass(frozen=True)
class Condition:
    """One kind of natural noise: ``name`` (the spec's), a readable ``label``, the set it comes from."""

    name: str
    label: str
    natural_set: str
    description: str


CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition("asr_human", "natural ASR (human)", "heysquad",
              "HeySQuAD: the question spoken by a person, then transcribed by ASR"),
    Condition("asr_tts", "natural ASR (TTS)", "heysquad",
              "HeySQuAD: the question spoken by a TTS voice, then transcribed by ASR"),
    Condition("disfluent", "disfluent", "disfl-qa",
              "Disfl-QA (dev and test): the question rewritten with a correction, restart or filler"),
)}
# Data set names: the original questions of each natural set (``natural:<set>``).
NATURAL_SETS = ("heysquad", "disfl-qa/dev", "disfl-qa/test", "disfl-qa/train")


@dataclass
class NaturalSet:
    """A natural set: its original questions (``original``, SQuAD contexts and answers) and, per
    condition, the same examples with the natural question (``noisy``); ``report``: what pairing
    dropped and why."""

    name: str
    original: Dataset
    noisy: dict[str, Dataset]
    report: list[str]

    def pairs(self, condition: str) -> list[tuple[QAExample, QAExample]]:
        """(original, natural) example pairs of one condition, in the original's order."""
        noisy = self.noisy[condition].by_id
        return [(ex, noisy[ex.id]) for ex in self.original.examples if ex.id in noisy]


def _root(data_dir: str | Path | None) -> Path:
    root = Path(data_dir) if data_dir is not None else config.data_dir()
    if root is None:
        raise DatasetError("no data directory: set QAX_DATA_DIR to the folder holding natural/, squad/, xquad/")
    return _resolved(str(root))


@functools.lru_cache(maxsize=8)
def _resolved(root: str) -> Path:
    # natural_Q asks for its set once per question (the Sweeps page: every planned question on
    # every rerun); resolving the folder each time was 0.16 ms of file system calls a question
    return Path(root).expanduser().resolve()


def _need(root: Path, rel: str, what: str) -> Path:
    path = root / rel
    if not path.is_file():
        raise DatasetError(f"{what}: no file {rel} under the data directory {root} (see natural/README.md)")
    return path


# --------------------------------------------------------------------------------------- HeySQuAD


@functools.lru_cache(maxsize=4)
def _heysquad(root: Path) -> NaturalSet:
    files = {k: _need(root, f"{HEYSQUAD_DIR}/{name}", "HeySQuAD") for k, name in HEYSQUAD_FILES.items()}
    original = load_squad(files["original"], "en", name="natural:heysquad")
    noisy, report = {}, []
    for condition in ("asr_tts", "asr_human"):
        challenge = load_squad(files[condition], "en", name=f"natural:heysquad/{condition}")
        pairing = pair_challenge(original, challenge, "id")
        report.append(f"{condition}: {pairing.summary()}")
        kept = [c for _, c in pairing.pairs]
        noisy[condition] = Dataset(f"natural:heysquad/{condition}", "en", kept, stats={"paired": len(kept)})
    return NaturalSet("heysquad", original, noisy, report)


def heysquad(data_dir: str | Path | None = None) -> NaturalSet:
    """HeySQuAD's 1,002 questions: original, ``asr_tts`` and ``asr_human``, paired by id."""
    return _heysquad(_root(data_dir))


# --------------------------------------------------------------------------------------- Disfl-QA


def _read_disfl(path: Path) -> dict[str, dict[str, str]]:
    try:
        doc = safe_json.loads(path.read_bytes().decode("utf-8-sig"), where=str(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, safe_json.JSONLimitError) as e:
        raise DatasetError(f"Disfl-QA {path.name}: cannot read it ({e})") from None
    if not isinstance(doc, dict):
        raise DatasetError(f"Disfl-QA {path.name}: expected {{id: {{original, disfluent}}}}, got {type(doc).__name__}")
    for qid, item in doc.items():
        if not (isinstance(item, dict) and isinstance(item.get("original"), str)
                and isinstance(item.get("disfluent"), str)):
            raise DatasetError(f"Disfl-QA {path.name}: item {qid!r} lacks an 'original' and a 'disfluent' question")
    return doc


@functools.lru_cache(maxsize=2)
def _squad_dev(root: Path) -> Dataset:
    return load_squad(_need(root, SQUAD_DEV, "Disfl-QA's contexts and answers"), "en")


@functools.lru_cache(maxsize=8)
def _disfl_qa(root: Path, split: str) -> NaturalSet:
    if split not in DISFL_SPLITS:
        raise DatasetError(f"Disfl-QA has no split {split!r} (it has {', '.join(DISFL_SPLITS)})")
    items = _read_disfl(_need(root, f"{DISFL_DIR}/{split}.json", "Disfl-QA"))
    squad = _squad_dev(root).by_id
    originals, disfluent, unanswerable = [], [], []
    for qid, item in items.items():
        ex = squad.get(qid)
        if ex is None:
            unanswerable.append(qid)
            continue
        originals.append(QAExample(qid, item["original"], ex.context, ex.answers, ex.title, "en"))
        disfluent.append(QAExample(qid, item["disfluent"], ex.context, ex.answers, ex.title, "en"))
    name = f"natural:disfl-qa/{split}"
    report = [f"{len(items):,} Disfl-QA {split} questions: {len(originals):,} paired with SQuAD v1.1 dev by id, "
              f"{len(unanswerable):,} dropped (SQuAD v2 unanswerable: not in v1.1 dev"
              + (f", first {', '.join(unanswerable[:3])})" if unanswerable else ")")]
    original = Dataset(name, "en", originals, report=list(report),
                       stats={"paired": len(originals), "unanswerable_dropped": len(unanswerable)})
    noisy = Dataset(f"{name}/disfluent", "en", disfluent, report=list(report), stats=dict(original.stats))
    return NaturalSet(f"disfl-qa/{split}", original, {"disfluent": noisy}, report)


def disfl_qa(split: str = "dev", data_dir: str | Path | None = None) -> NaturalSet:
    """One Disfl-QA split: originals and ``disfluent`` questions with SQuAD dev's contexts and answers."""
    return _disfl_qa(_root(data_dir), split)


# ------------------------------------------------------------------------------------ by name


def natural_set(name: str, data_dir: str | Path | None = None) -> NaturalSet:
    """A natural set by name: ``heysquad`` or ``disfl-qa/<split>`` (``natural:`` prefix optional)."""
    name = name.removeprefix(NATURAL_PREFIX).strip().strip("/")
    if name == "heysquad":
        return heysquad(data_dir)
    if name.startswith("disfl-qa"):
        return disfl_qa(name.partition("/")[2] or "dev", data_dir)
    raise DatasetError(f"no natural set {name!r}; known: {', '.join(NATURAL_SETS)}")


def natural_dataset(name: str, data_dir: str | Path | None = None) -> Dataset:
    """A natural data set by name: ``natural:<set>`` (the original questions) or
    ``natural:<set>/<condition>`` (the natural ones), e.g. ``natural:heysquad/asr_human``,
    ``natural:disfl-qa/dev/disfluent``."""
    rest = name.removeprefix(NATURAL_PREFIX).strip().strip("/")
    head, _, last = rest.rpartition("/")
    if last in CONDITIONS and head:
        found = natural_set(head, data_dir)
        if last not in found.noisy:
            raise DatasetError(f"natural set {head!r} has no condition {last!r} (it has {', '.join(found.noisy)})")
        return found.noisy[last]
    return natural_set(rest, data_dir).original


@functools.lru_cache(maxsize=8)
def _questions(root: Path, condition: str) -> dict[str, tuple[str, str]]:
    if condition == "disfluent":
        out: dict[str, tuple[str, str]] = {}
        for split in DISFL_EVAL_SPLITS:
            for o, n in _disfl_qa(root, split).pairs("disfluent"):
                out[o.id] = (o.question, n.question)
        return out
    return {o.id: (o.question, n.question) for o, n in _heysquad(root).pairs(condition)}


def natural_questions(condition: str, data_dir: str | Path | None = None) -> dict[str, tuple[str, str]]:
    """Question id -> (its original question, its natural version) under ``condition``."""
    if condition not in CONDITIONS:
        raise DatasetError(f"no natural condition {condition!r}; known: {', '.join(CONDITIONS)}")
    return _questions(_root(data_dir), condition)


def discover_natural(root: Path) -> list[DatasetInfo]:
    """The natural sets the data directory holds, for the pickers: the originals as evaluation sets
    (``natural:<set>``), the natural versions as challenge sets (``natural:<set>/<condition>``; their
    ``original`` is None, so Sweeps offers them as the ``natural:`` specs, not as ``file:`` ones)."""
    infos: list[DatasetInfo] = []
    if all((root / HEYSQUAD_DIR / f).is_file() for f in HEYSQUAD_FILES.values()):
        infos.append(DatasetInfo("natural:heysquad", root / HEYSQUAD_DIR / HEYSQUAD_FILES["original"], "en", "eval"))
        for condition in ("asr_tts", "asr_human"):
            infos.append(DatasetInfo(f"natural:heysquad/{condition}", root / HEYSQUAD_DIR / HEYSQUAD_FILES[condition],
                                     "en", "challenge"))
    if (root / SQUAD_DEV).is_file():
        for split in DISFL_SPLITS:
            path = root / DISFL_DIR / f"{split}.json"
            if path.is_file():   # its train split is training data (README), listed as such
                train = split == "train"
                infos.append(DatasetInfo(f"natural:disfl-qa/{split}", path, "en", "train" if train else "eval"))
                infos.append(DatasetInfo(f"natural:disfl-qa/{split}/disfluent", path, "en",
                                         "train" if train else "challenge"))
    return infos


# ------------------------------------------------------------------------------ XQuAD subset


@functools.lru_cache(maxsize=2)
def _xquad_contexts(root: Path) -> frozenset[str]:
    path = root / XQUAD_EN
    if not path.is_file():
        return frozenset()
    return frozenset(normalize_context(c) for c in load_squad(path, "en").contexts())


def xquad_contexts(data_dir: str | Path | None = None) -> frozenset[str]:
    """XQuAD's 240 English paragraphs, normalised (:func:`core.datasets.normalize_context`); empty
    without a data directory or ``xquad/xquad.en.json``."""
    try:
        return _xquad_contexts(_root(data_dir))
    except DatasetError:
        return frozenset()


def xquad_ids(examples, data_dir: str | Path | None = None) -> frozenset[str]:
    """Ids of ``examples`` whose context is one of XQuAD's 240 paragraphs (matched as
    :func:`core.datasets.squad_dev_minus_xquad` matches them); empty without ``xquad/xquad.en.json``."""
    contexts = xquad_contexts(data_dir)
    return frozenset(ex.id for ex in examples if normalize_context(ex.context) in contexts)


def subset_name(example_id: str, xquad: frozenset[str]) -> str:
    """Which of :data:`SUBSETS` a question belongs to."""
    return SUBSETS[0] if example_id in xquad else SUBSETS[1]
