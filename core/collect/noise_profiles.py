"""Natural against synthetic noise: which synthetic setting makes noise most like real people's?

For a natural set (:mod:`core.datasets.natural`: HeySQuAD's human and TTS transcripts, Disfl-QA's
disfluent rewrites), each question's *noise profile* is measured against its typed original, and
so is each synthetic setting's (a spec of the spec language: ``keyboard_Q:p=0.1``,
``disfluency_Q:n=2``, ``asr_Q:voice=flite:kal16:engine=pocketsphinx`` ...) on the same questions:

* per-question WER and CER, both sides first brought to the form ASR output takes (lower-case,
  punctuation removed: :func:`core.metrics.text_distance.asr_normalise`), since HeySQuAD's
  transcripts have neither case nor punctuation and the typed questions have both;
* the insertion / deletion / substitution mix of the word edits (jiwer's alignment) and the words
  changed per question (insertions + deletions + substitutions).

**Distance** (our choice, declared in :data:`DISTANCE`): the Wasserstein-1 distance between the two
per-question WER distributions plus that between the two CER distributions
(``scipy.stats.wasserstein_distance``, rates as fractions). W1 is the mean absolute difference of
the quantile functions: 0.05 means the synthetic setting's questions are, quantile by quantile,
five points of WER away from the natural ones. It looks at the whole distribution (how many
questions are untouched, how heavy the tail is), not only at the mean. The mix's total variation
(half the L1 distance of the insertion/deletion/substitution shares) is shown beside it, not summed.

The *closest* setting of a natural condition minimises the distance; :func:`flip_agreement` then
asks whether it also flips the same answers (Cohen's kappa with its bootstrap interval,
:mod:`core.collect.flip_agreement`). Nothing here imports streamlit; ``python -m core.collect.noise_match``
is the command line (:mod:`core.collect.noise_match`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jiwer
import numpy as np
from scipy.stats import wasserstein_distance

from core.metrics.text_distance import asr_normalise
from core.types import QAExample

__all__ = ["DISTANCE", "DEFAULT_SETTINGS", "ASR_SETTINGS", "Profile", "profile", "distance", "rank",
           "synthetic_questions", "natural_pairs", "flip_agreement", "NoiseMatchError", "MAX_SETTINGS",
           "check_settings"]

DISTANCE = ("W1(WER) + W1(CER): Wasserstein-1 distance between the per-question WER distributions plus that "
            "between the per-question CER distributions, both after lower-casing and removing punctuation")
# Cheap channels (no audio): keyboard noise at NoiseQA's rate and around it, the disfluency family.
DEFAULT_SETTINGS = ("keyboard_Q:p=0.05|0.1|0.15|0.25|0.35|0.5", "disfluency_Q:kind=any:n=1|2|3",
                    "disfluency_Q:kind=correction|restart|filler")
# TTS -> ASR with the installed engines (seconds per question: run on a sample).
ASR_SETTINGS = ("asr_Q:voice=flite:kal16|espeak-ng:en-us:engine=pocketsphinx|whisper-base",)
MAX_SETTINGS = 60

Progress = Callable[[int, int, str], None]


class NoiseMatchError(ValueError):
    """A comparison that cannot be made (no question, a setting that cannot run here, ...)."""


@dataclass
class Profile:
    """One condition's noise on a list of questions: per-question rates and word-edit counts."""

    name: str
    ids: list[str]
    wer: np.ndarray
    cer: np.ndarray
    insertions: np.ndarray
    deletions: np.ndarray
    substitutions: np.ndarray

    @property
    def words_changed(self) -> np.ndarray:
        return self.insertions + self.deletions + self.substitutions

    def mix(self) -> dict[str, float]:
        """Shares of insertions, deletions and substitutions among all word edits (zeros when none)."""
        total = int(self.words_changed.sum())
        if not total:
            return {"insertions": 0.0, "deletions": 0.0, "substitutions": 0.0}
        return {"insertions": float(self.insertions.sum()) / total, "deletions": float(self.deletions.sum()) / total,
                "substitutions": float(self.substitutions.sum()) / total}

    def subset(self, ids: Sequence[str] | set[str] | frozenset[str], name: str | None = None) -> "Profile":
        keep = set(ids)
        idx = [i for i, q in enumerate(self.ids) if q in keep]
        return Profile(name or self.name, [self.ids[i] for i in idx], self.wer[idx], self.cer[idx],
                       self.insertions[idx], self.deletions[idx], self.substitutions[idx])

    def summary(self) -> dict[str, Any]:
        """The profile as one row: n, WER/CER mean, median and 90th percentile (percent), the mix,
        words changed per question and the share of questions left as they were."""
        n = len(self.ids)

        def pct(values: np.ndarray, q: float | None = None) -> float | None:
            if not n:
                return None
            return round(100 * float(np.mean(values) if q is None else np.percentile(values, q)), 1)

        mix = self.mix()
        return {"condition": self.name, "n": n, "WER mean %": pct(self.wer), "WER median %": pct(self.wer, 50),
                "WER p90 %": pct(self.wer, 90), "CER mean %": pct(self.cer), "CER median %": pct(self.cer, 50),
                "CER p90 %": pct(self.cer, 90),
                "insertions %": round(100 * mix["insertions"], 1), "deletions %": round(100 * mix["deletions"], 1),
                "substitutions %": round(100 * mix["substitutions"], 1),
                "words changed": round(float(np.mean(self.words_changed)), 2) if n else None,
                "unchanged %": round(100 * float(np.mean(self.wer == 0)), 1) if n else None}


def profile(name: str, ids: Sequence[str], originals: Sequence[str], noisy: Sequence[str]) -> Profile:
    """The noise profile of ``noisy`` against ``originals`` (pairs in order, one id each).

    >>> p = profile("x", ["a", "b"], ["Who won the game?", "Where is it?"], ["who one the game", "where is it"])
    >>> p.wer.tolist(), p.substitutions.tolist(), p.summary()["unchanged %"]
    ([0.25, 0.0], [1, 0], 50.0)
    """
    if not (len(ids) == len(originals) == len(noisy)):
        raise NoiseMatchError(f"{name}: {len(ids)} ids, {len(originals)} originals and {len(noisy)} noisy questions")
    wer, cer, ins, dels, subs = [], [], [], [], []
    for original, text in zip(originals, noisy):
        ref, hyp = asr_normalise(original), asr_normalise(text)
        if not ref:   # nothing typed to compare with: every word heard is an insertion
            wer.append(float(bool(hyp))), cer.append(float(bool(hyp)))
            ins.append(len(hyp.split())), dels.append(0), subs.append(0)
            continue
        words = jiwer.process_words(ref, hyp if hyp else "")
        wer.append(words.wer)
        cer.append(jiwer.cer(ref, hyp) if hyp else 1.0)
        ins.append(words.insertions), dels.append(words.deletions), subs.append(words.substitutions)
    return Profile(name, list(ids), np.asarray(wer, float), np.asarray(cer, float), np.asarray(ins, int),
                   np.asarray(dels, int), np.asarray(subs, int))


def distance(natural: Profile, synthetic: Profile) -> dict[str, float]:
    """:data:`DISTANCE` between two profiles, with its parts and the mix's total variation.

    >>> a = profile("a", ["1", "2"], ["a b c d", "a b c d"], ["a b c d", "a x c d"])
    >>> distance(a, a)["distance"]
    0.0
    >>> round(distance(a, profile("b", ["1", "2"], ["a b c d"] * 2, ["a b c d"] * 2))["w1_wer"], 3)
    0.125
    """
    if not len(natural.ids) or not len(synthetic.ids):
        raise NoiseMatchError(f"no question to compare {natural.name} and {synthetic.name} on")
    w_wer = float(wasserstein_distance(natural.wer, synthetic.wer))
    w_cer = float(wasserstein_distance(natural.cer, synthetic.cer))
    m1, m2 = natural.mix(), synthetic.mix()
    tv = 0.5 * sum(abs(m1[k] - m2[k]) for k in m1)
    return {"distance": w_wer + w_cer, "w1_wer": w_wer, "w1_cer": w_cer, "mix_tv": tv}


def rank(natural: Profile, synthetic: Mapping[str, Profile]) -> list[dict[str, Any]]:
    """Every synthetic setting's distance to ``natural``, on the questions both have, closest first."""
    rows = []
    for name, prof in synthetic.items():
        shared = set(prof.ids) & set(natural.ids)
        nat, syn = natural.subset(shared), prof.subset(shared)
        if not shared:
            continue
        d = distance(nat, syn)
        rows.append({"natural": natural.name, "setting": name, "n": len(shared),
                     **{k: round(v, 4) for k, v in d.items()},
                     "natural WER %": round(100 * float(nat.wer.mean()), 1),
                     "setting WER %": round(100 * float(syn.wer.mean()), 1),
                     "natural CER %": round(100 * float(nat.cer.mean()), 1),
                     "setting CER %": round(100 * float(syn.cer.mean()), 1)})
    return sorted(rows, key=lambda r: (r["distance"], r["setting"]))


# ------------------------------------------------------------------------------ the conditions


def natural_pairs(condition: str, data_dir=None) -> tuple[list[QAExample], list[str]]:
    """(the typed examples, their natural questions) of one natural condition, in the set's order."""
    from core.datasets.natural import CONDITIONS, DISFL_EVAL_SPLITS, disfl_qa, heysquad

    if condition not in CONDITIONS:
        raise NoiseMatchError(f"no natural condition {condition!r}; known: {', '.join(CONDITIONS)}")
    if condition == "disfluent":
        pairs = [p for split in DISFL_EVAL_SPLITS for p in disfl_qa(split, data_dir).pairs("disfluent")]
    else:
        pairs = heysquad(data_dir).pairs(condition)
    return [o for o, _ in pairs], [n.question for _, n in pairs]


def synthetic_questions(examples: Sequence[QAExample], spec_text: str, seed: int = 0,
                        progress: Progress | None = None) -> tuple[list[str], int]:
    """Each question under one synthetic setting (one spec, drawn as a sweep's repeat 0 under ``seed``);
    a question the setting does not apply to stays as typed. Returns (questions, how many stayed because
    it could not apply). NoiseMatchError when the setting cannot run here at all."""
    from core.perturb.base import PerturbationError
    from core.perturb.compose import build
    from core.perturb.spec import SpecError, parse_spec, rng_for

    try:
        spec = parse_spec(spec_text)
        pert, params = build(spec)
    except (SpecError, PerturbationError, KeyError, ValueError) as e:
        raise NoiseMatchError(f"setting {spec_text!r}: {e}") from None
    out, skipped = [], 0
    for i, ex in enumerate(examples):
        if progress and i % 10 == 0:
            progress(i, len(examples), f"{spec_text}: question {i + 1} of {len(examples)}")
        why = pert.why_not(ex, params)
        if why is not None:
            if i == 0 and all(pert.why_not(e, params) is not None for e in examples[:5]):
                raise NoiseMatchError(f"setting {spec_text!r} cannot run here: {why}")
            out.append(ex.question)
            skipped += 1
            continue
        try:
            variants = pert.apply(ex, rng_for(seed, ex, spec, 0), **params)
        except (PerturbationError, ValueError):
            variants = None
        out.append(variants[0].text if variants else ex.question)
        skipped += not variants
    return out, skipped


def flip_agreement(examples: Sequence[QAExample], natural_name: str, natural_questions: Sequence[str],
                   setting: str, setting_questions: Sequence[str], engines: Mapping[str, Any], *, seed: int = 0,
                   n_boot: int = 1000) -> list[dict[str, Any]]:
    """Per model: flip rates under the natural questions and the setting's, and Cohen's kappa of the
    flips with its bootstrap interval (:func:`core.collect.flip_agreement.compare`)."""
    from core.collect.flip_agreement import compare, flip_rates

    result = compare(examples, {natural_name: list(natural_questions), setting: list(setting_questions)},
                     engines, seed=seed, n_boot=n_boot)
    rates = {(r["model"], r["condition"]): r["flip %"] for r in flip_rates(result)}
    return [{**row, "flip % a": rates[(row["model"], row["a"])], "flip % b": rates[(row["model"], row["b"])]}
            for row in result.kappas]


# ------------------------------------------------------------------------------------- a run


def expand_settings(texts: Sequence[str]) -> list[str]:
    """Each setting of ``texts`` (spec-language items, value lists expanded) in the spec language.

    >>> expand_settings(["keyboard_Q:p=0.1|0.2"])
    ['keyboard_Q:p=0.1', 'keyboard_Q:p=0.2']
    """
    from core.perturb.spec import SpecError, parse_specs

    out: list[str] = []
    for text in texts:
        try:
            out.extend(s.text for s in parse_specs(text))
        except SpecError as e:
            raise NoiseMatchError(str(e)) from None
    if len(out) > MAX_SETTINGS:
        raise NoiseMatchError(f"{len(out)} synthetic settings; at most {MAX_SETTINGS} in one comparison")
    return list(dict.fromkeys(out))


def check_settings(texts: Sequence[str], *, runs_here: bool = False) -> list[str]:
    """:func:`expand_settings`, each setting then resolved as a sweep resolves its specs
    (:func:`core.sweeps.running.resolve.resolve_spec`: the id exists, every parameter parses and is
    in range, a voice or engine is one of the catalogue's), so a typo is refused before any work.
    ``runs_here``: also refuse a TTS voice or ASR engine that is not installed (a cheap probe, no
    model loaded). NoiseMatchError naming the setting otherwise.

    >>> check_settings(["keyboard_Q:p=0.1|0.2"])
    ['keyboard_Q:p=0.1', 'keyboard_Q:p=0.2']
    >>> check_settings(["keyboard_Q:p=abc"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.collect.noise_profiles.NoiseMatchError: setting 'keyboard_Q:p=abc': ... 'p' must be float, got 'abc'
    """
    from core.perturb import registry
    from core.perturb.spec import SpecError, chain_step_specs, parse_spec
    from core.sweeps.running.resolve import resolve_spec

    out = expand_settings(texts)
    for text in out:
        try:
            spec = parse_spec(text)
            steps = chain_step_specs(spec) if spec.is_chain else [spec]
            if any(step.is_file for step in steps):
                raise SpecError("a challenge file is data, not a synthetic setting")
            resolve_spec(spec, 1, registry.get, None)
        except SpecError as e:   # SweepError (resolving) is one too
            raise NoiseMatchError(f"setting {text!r}: {e}") from None
        why = runs_here and _why_unavailable(steps)
        if why:
            raise NoiseMatchError(f"setting {text!r} cannot run here: {why}")
    return out


def _why_unavailable(steps: Sequence[Any]) -> str | None:
    """The first TTS -> ASR step whose voice or engine is not installed here (core.speech.noise's
    cheap probe: loads no model), or None."""
    from core.perturb import registry

    for step in steps:
        if step.id == "asr_Q":
            from core.speech.noise import why_unavailable

            params = registry.get("asr_Q").resolve_params(step.params_dict)
            why = why_unavailable(params["voice"], params["engine"])
            if why:
                return why
    return None


def run_match(conditions: Sequence[str], *, sample: int | None = 300, settings: Sequence[str] = DEFAULT_SETTINGS,
              asr_sample: int = 0, asr_settings: Sequence[str] = ASR_SETTINGS, seed: int = 0, data_dir=None,
              progress: Progress | None = None) -> dict[str, Any]:
    """Profiles and distances for each natural condition of ``conditions`` on a seeded sample of its
    questions (``sample`` None: all), every cheap setting of ``settings`` on the same questions, and
    each of ``asr_settings`` (TTS -> ASR) on the first ``asr_sample`` of them (seeded; 0: none).
    Returns a JSON-able dict: ``profiles`` (natural and synthetic, overall and per paragraph
    subset), ``ranking`` (every (condition, setting) distance) and ``closest`` (per condition)."""
    from core.datasets import sample_examples
    from core.datasets.natural import xquad_ids

    cheap, slow = expand_settings(settings), expand_settings(asr_settings) if asr_sample else []
    naturals: dict[str, tuple[list[QAExample], list[str]]] = {}
    for condition in conditions:
        examples, noisy = natural_pairs(condition, data_dir)
        by_id = dict(zip((ex.id for ex in examples), noisy))
        chosen = sample_examples(examples, sample, seed)
        naturals[condition] = (chosen, [by_id[ex.id] for ex in chosen])
    union = list({ex.id: ex for exs, _ in naturals.values() for ex in exs}.values())
    asr_ids = ({ex.id for exs, _ in naturals.values() for ex in sample_examples(exs, asr_sample, seed)}
               if slow else set())
    xquad = xquad_ids(union, data_dir)
    synthetic: dict[str, Profile] = {}
    skipped: dict[str, int] = {}
    total, done = len(cheap) * len(union) + len(slow) * len(asr_ids), 0
    for name in [*cheap, *slow]:
        exs = union if name in cheap else [ex for ex in union if ex.id in asr_ids]

        def step(i: int, n: int, text: str, base: int = done) -> None:
            if progress:
                progress(base + i, total, text)

        questions, skipped[name] = synthetic_questions(exs, name, seed, step)
        done += len(exs)
        synthetic[name] = profile(name, [ex.id for ex in exs], [ex.question for ex in exs], questions)
    profiles, ranking, closest = [], [], {}
    for condition, (exs, noisy) in naturals.items():
        nat = profile(f"natural:{condition}", [ex.id for ex in exs], [ex.question for ex in exs], noisy)
        rows = rank(nat, synthetic)
        for row in rows:
            nat_x, syn_x = nat.subset(xquad), synthetic[row["setting"]].subset(xquad)
            shared = set(nat_x.ids) & set(syn_x.ids)
            apart = distance(nat_x.subset(shared), syn_x.subset(shared))["distance"] if shared else None
            row["distance (xquad paragraphs)"] = None if apart is None else round(apart, 4)
        ranking.extend(rows)
        if rows:
            closest[condition] = rows[0]
        profiles.extend(_subset_rows(nat, xquad))
    for name, prof in synthetic.items():
        profiles.extend(_subset_rows(prof, xquad))
    if progress:
        progress(total, total, "done")
    return {"distance": DISTANCE, "settings": {"conditions": list(conditions), "sample": sample, "seed": seed,
                                               "asr_sample": asr_sample, "cheap": cheap, "asr": slow,
                                               "not applied": skipped},
            "profiles": profiles, "ranking": ranking, "closest": closest}


def _subset_rows(prof: Profile, xquad: frozenset[str]) -> list[dict[str, Any]]:
    rows = [{"questions": "all", **prof.summary()}]
    inside = prof.subset(xquad)
    if len(inside.ids):
        rows.append({"questions": "xquad paragraphs", **inside.summary()})
        rows.append({"questions": "other paragraphs", **prof.subset(set(prof.ids) - set(xquad)).summary()})
    return rows
