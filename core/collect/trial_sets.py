"""What a natural speech trial yields (:mod:`core.collect.trials` records it): per ASR engine, the
challenge set of the speaker's transcripts paired with the original questions by id, the files a
sweep reads (``file:<path>``), the sweep command, and the word error rates.

Challenge set of speaker x engine: the trial's sampled examples (same ids, contexts, answers)
whose question is the engine's transcript of the question's latest recording; questions that
engine did not transcribe are left out. WER per speaker: corpus WER (jiwer) of each engine's
transcripts against the original questions, both normalised like ASR output
(:func:`core.speech.asr.normalise_transcript`: lower case, no punctuation), so that only
recognition errors count; the files hold the transcripts as the engines wrote them
(normalised), as NoiseQA's ASR sets do.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core import config
from core.collect.trials import QuestionState, StoredTranscript, Trial, TrialError, slug, trials_root, write_atomic
from core.datasets import Dataset
from core.metrics.text_distance import corpus_cer, corpus_wer, table3_summary, wer
from core.speech import asr
from core.types import QAExample

__all__ = ["original_dataset", "engines_transcribed", "challenge_pairs", "challenge_set",
           "write_challenge_sets", "written_sets", "sweep_command", "wer_summary", "speaker_wer", "speaker_rows",
           "transcript_rows", "summary_rows", "score_rows"]


def original_dataset(trial: Trial) -> Dataset:
    """The sampled examples as a data set (the sweep's ``--dataset`` for this trial)."""
    return Dataset(name=f"trial-{trial.id}-original", lang=trial.lang, examples=list(trial.examples))


def engines_transcribed(trial: Trial) -> list[str]:
    """The engines that transcribed some latest recording: known engines in their order, then others."""
    seen = {t.engine for s in trial.states() for t in s.transcripts.values()}
    return [e for e in asr.ENGINE_NAMES if e in seen] + sorted(seen - set(asr.ENGINE_NAMES))


def challenge_pairs(trial: Trial, engine: str) -> list[tuple[QAExample, str]]:
    """(original example, transcript of its latest recording) for every question ``engine`` transcribed."""
    return [(s.example, s.transcripts[engine].text) for s in trial.states() if engine in s.transcripts]


def challenge_set(trial: Trial, engine: str) -> Dataset:
    """The SQuAD-style challenge set of this speaker x ``engine`` (see the module docstring)."""
    pairs = challenge_pairs(trial, engine)
    if not pairs:
        raise TrialError(f"trial {trial.id} has no transcript by {engine} yet")
    return Dataset(name=f"trial-{trial.id}-{engine}", lang=trial.lang,
                   examples=[dataclasses.replace(ex, question=text) for ex, text in pairs])


def _write_json(path: Path, dataset: Dataset) -> None:
    write_atomic(path, json.dumps(dataset.to_squad_json(), ensure_ascii=False, indent=1).encode())


def write_challenge_sets(trial: Trial, out_dir: str | Path | None = None,
                         engines: Iterable[str] | None = None) -> dict[str, Path]:
    """Write ``original.json`` and ``<engine>.json`` per transcribed engine (default folder:
    the trial's ``challenge/``); returns {"original": path, engine: path, ...} (absolute paths,
    for ``file:`` sweep specs)."""
    out = Path(out_dir) if out_dir is not None else trial.path / "challenge"
    out.mkdir(parents=True, exist_ok=True)
    paths = {"original": (out / "original.json").resolve()}
    _write_json(paths["original"], original_dataset(trial))
    for engine in (list(engines) if engines is not None else engines_transcribed(trial)):
        path = (out / f"{slug(engine)}.json").resolve()
        _write_json(path, challenge_set(trial, engine))
        paths[engine] = path
    return paths


def written_sets(trial: Trial) -> dict[str, Path]:
    """The challenge sets :func:`write_challenge_sets` left in the trial's ``challenge/`` folder, in
    the order it writes them ({} before the first write): a page shows and scores what is on disk,
    so a later visit (or another session) finds them where it left them."""
    out = trial.path / "challenge"
    if not (out / "original.json").is_file():
        return {}
    paths = {"original": (out / "original.json").resolve()}
    for engine in dict.fromkeys([*asr.ENGINE_NAMES, *engines_transcribed(trial)]):
        if (path := out / f"{slug(engine)}.json").is_file():
            paths[engine] = path.resolve()
    return paths


def shown_paths(paths: dict[str, str | Path]) -> dict[str, str]:
    """The challenge sets' paths as a visitor sees them: in full with QAX_SHOW_PATHS=1, else from the
    trials folder down (``trials/<trial>/<set>.json``), which names no folder of the server."""
    base = trials_root().parent
    return {k: config.shown_path(p, str(Path(p).relative_to(base)) if Path(p).is_relative_to(base) else Path(p).name)
            for k, p in paths.items()}


def sweep_command(trial: Trial, paths: dict[str, str | Path], models: Sequence[str] = ("MODEL",)) -> str:
    """The ``python -m core.sweeps`` command that evaluates models on the written sets (``paths`` as
    they should be shown: :func:`shown_paths` on a page)."""
    specs = ",".join(f"file:{p}" for k, p in paths.items() if k != "original")
    return (f"python -m core.sweeps --dataset {paths['original']} --perturbations {specs} "
            f"--models {','.join(models)} --name trial-{trial.id}")


def wer_summary(trial: Trial) -> list[dict[str, Any]]:
    """Per engine: questions transcribed, WER and CER (percent, both sides normalised), and
    NoiseQA's Table 3 triple as the paper defines it (CER, WER lower-cased without punctuation,
    BLEU uncased as written, vs the original questions: core.metrics.text_distance.table3_summary)."""
    rows = []
    for engine in engines_transcribed(trial):
        pairs = challenge_pairs(trial, engine)
        refs = [asr.normalise_transcript(ex.question) for ex, _ in pairs]
        hyps = [text for _, text in pairs]
        table3 = table3_summary([ex.question for ex, _ in pairs], hyps)
        rows.append({"speaker": trial.speaker.label, "trial": trial.id, "engine": engine, "n": len(pairs),
                     "wer": 100 * corpus_wer(refs, hyps), "cer": 100 * corpus_cer(refs, hyps),
                     "table3_cer": table3["cer"], "table3_wer": table3["wer"], "table3_bleu": table3["bleu"]})
    return rows


def speaker_wer(trials: Iterable[Trial]) -> list[dict[str, Any]]:
    """WER per speaker x engine over all their trials (NoiseQA's per-speaker view): corpus WER and
    CER (percent) of the normalised transcripts against the normalised original questions."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for trial in trials:
        for engine in engines_transcribed(trial):
            groups.setdefault((trial.speaker.label, engine), []).extend(
                (asr.normalise_transcript(ex.question), text) for ex, text in challenge_pairs(trial, engine))
    rows = []
    for (speaker, engine), pairs in sorted(groups.items()):
        refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
        rows.append({"speaker": speaker, "engine": engine, "n": len(pairs),
                     "wer": 100 * corpus_wer(refs, hyps), "cer": 100 * corpus_cer(refs, hyps)})
    return rows


# ----------------------------------------------------------------------------------------------
# The page's tables


def score_rows(cells: Iterable[Any]) -> list[dict[str, Any]]:
    """The speech trial's scores (NoiseQA Table 10, per speaker and engine) from the cells of the
    trial's sweep (``core.sweeps.analysis.stored.StoredSweep.cells``): F1 on the clean questions and on the spoken ones.

    >>> from types import SimpleNamespace as Cell
    >>> score_rows([Cell(model="m", label="file:whisper-base", n=3, clean_f1=71.04, f1=50.0, em=33.33)])
    [{'model': 'm', 'set': 'file:whisper-base', 'questions': 3, 'F1 clean': 71.0, 'F1 spoken': 50.0, 'EM spoken': 33.3}]
    """
    def r(x):
        return None if x is None else round(x, 1)

    return [{"model": c.model, "set": c.label, "questions": c.n, "F1 clean": r(c.clean_f1),
             "F1 spoken": r(c.f1), "EM spoken": r(c.em)} for c in cells]


def transcript_rows(trial: Trial, state: QuestionState, engines: Sequence[str],
                    fresh: dict[str, StoredTranscript | str] | None = None) -> list[dict[str, Any]]:
    """One row per ASR engine for the question in front of the speaker: its transcript of the
    latest take and the WER against the question (both normalised), or why there is none.
    ``fresh``: what :meth:`Trial.transcribe` just returned (a transcript, or the engine's error)."""
    ref = asr.normalise_transcript(state.example.question)
    rows = []
    for engine in engines:
        got = (fresh or {}).get(engine, state.transcripts.get(engine))
        if isinstance(got, StoredTranscript):
            # an empty transcript: the engine heard no words (silence, a muted or wrong microphone)
            heard_nothing = "" if got.text.strip() else "no words recognised: is the right microphone on and unmuted?"
            rows.append({"engine": engine, "transcript": got.text, "WER %": round(100 * wer(ref, got.text), 1),
                         "seconds": round(got.seconds, 2), "problem": heard_nothing})
        else:
            rows.append({"engine": engine, "transcript": "", "WER %": None, "seconds": None,
                         "problem": got if isinstance(got, str) else (trial.engine_problem(engine)
                                                                      or "not transcribed yet")})
    return rows


def speaker_rows(per_speaker: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """(:func:`speaker_wer`) as the page's "WER per speaker" table, headed as the trial's own table is.

    >>> speaker_rows([{"speaker": "Ana", "engine": "e", "n": 2, "wer": 12.345, "cer": 5.04}])
    [{'speaker': 'Ana', 'engine': 'e', 'questions': 2, 'WER %': 12.3, 'CER %': 5.0}]
    """
    return [{"speaker": r["speaker"], "engine": r["engine"], "questions": r["n"], "WER %": round(r["wer"], 1),
             "CER %": round(r["cer"], 1)} for r in per_speaker]


def summary_rows(summary: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """(:func:`wer_summary`) as the page's table: WER/CER and NoiseQA's Table 3 per engine.

    >>> summary_rows([{"engine": "e", "n": 2, "wer": 12.345, "cer": 5.0, "table3_cer": 4.96,
    ...                "table3_wer": 10.04, "table3_bleu": 71.25}])  # doctest: +NORMALIZE_WHITESPACE
    [{'engine': 'e', 'questions': 2, 'WER %': 12.3, 'CER %': 5.0, 'Table 3 CER': 5.0, 'Table 3 WER': 10.0, 'Table 3
    BLEU': 71.2}]
    """
    return [{"engine": r["engine"], "questions": r["n"], "WER %": round(r["wer"], 1), "CER %": round(r["cer"], 1),
             "Table 3 CER": round(r["table3_cer"], 1), "Table 3 WER": round(r["table3_wer"], 1),
             "Table 3 BLEU": round(r["table3_bleu"], 1)} for r in summary]
