"""``python -m core.collect.agreement``: synthetic against natural noise on a speech trial or a natural set.

    python -m core.collect.agreement --natural heysquad|disfl-qa --model M [--sample 200]
        [--tts-asr ENGINE ...] [--voice VOICE] [--keyboard-p 0.25] [--disfluency-n 1] [--seed N] ...

    python -m core.collect.agreement --trial TRIAL_ID_OR_FOLDER --model M [--model M2 ...]
        [--asr ENGINE ...] [--tts-asr ENGINE ...] [--voice VOICE] [--keyboard-p 0.25] [--seed N]
        [--n-boot 1000] [--json OUT] [--csv OUT] [--questions-csv OUT]

Prints, per model, each condition's flip rate and Cohen's kappa with Fisher's exact p and, where the
flips allow one, its bootstrap interval for every pair of conditions (:mod:`core.collect.flip_agreement`).
``--asr``: the natural conditions (ASR engines whose transcripts of the recordings to use; default
every engine that transcribed the trial); ``--tts-asr``: the engines that transcribe the TTS voice
(default: the same as ``--asr``;
``--tts-asr none`` for none); ``--keyboard-p 0`` leaves keyboard noise out. ``--json``: everything
(settings, flip rates, kappa rows, the per-question table; on a natural set the flip rates by
paragraph too). ``--natural``: HeySQuAD's human and TTS
transcripts, or Disfl-QA's disfluent questions, against TTS -> ASR (``--tts-asr``), keyboard noise and
the disfluency perturbation on a seeded sample, flip rates given again for XQuAD's paragraphs apart;
``--csv``: the kappa rows; ``--questions-csv``: the per-question table. Bad input is one line on
stderr and exit status 2; an output that is one of the trial's files is refused before any work.
"""
from __future__ import annotations

import json

from core import cli
from core.budgets import MAX_QUESTIONS, MAX_RESAMPLES
from core.collect import flip_agreement
from core.collect.agreement_natural import (
    NATURAL_SETS,
    disfluency_condition,
    everything,
    flip_rates_by_subset,
    natural_set_conditions,
)
from core.io.csv_export import csv_bytes

PROG = "python -m core.collect.agreement"


def _trial_files(trial_id, args) -> list:
    """The files of the trial ``--trial`` names (its record, store and recordings): no output
    may be one of them. None without --trial (a --natural run reads no trial)."""
    if trial_id is None:
        return []
    trial = flip_agreement.trial_or_error(trial_id)
    return [trial.path / "trial.json", trial.path / "trial.sqlite", *(r.path for r in trial.recordings())]


def _parser() -> cli.ArgumentParser:
    ap = cli.ArgumentParser(prog=PROG, description="Which answers flip under natural speech, TTS -> ASR and "
                                                   "keyboard noise, and how well the flips agree (Cohen's kappa).")
    where = ap.add_mutually_exclusive_group(required=True)
    trial = where.add_argument("--trial", help="a speech trial's id (Speech trial page) or its folder")
    trial.path_role = cli.PathRole("input", _trial_files)   # read: no output may be one of its files
    where.add_argument("--natural", choices=sorted(NATURAL_SETS),
                       help="a natural set instead of a trial: heysquad (human and TTS transcripts) or disfl-qa")
    ap.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), default=200,
                    help="--natural: questions, a seeded sample (default 200)")
    ap.add_argument("--disfluency-n", type=cli.Bounded(0, 4), default=None,
                    help="add the disfluency perturbation with N disfluencies per question (default: 1 for "
                         "--natural, none for a trial; 0 leaves it out)")
    ap.add_argument("--model", action="append", required=True, help="a model of models.toml (repeat for more)")
    ap.add_argument("--asr", nargs="+", default=None, metavar="ENGINE",
                    help="ASR engines whose transcripts of the recordings to compare (default: all in the trial)")
    ap.add_argument("--tts-asr", nargs="+", default=None, metavar="ENGINE",
                    help="ASR engines that transcribe the TTS voice (default: as --asr, none for --natural; "
                         "'none' for none)")
    ap.add_argument("--voice", default=flip_agreement.DEFAULT_VOICE,
                    help=f"the TTS voice of the TTS -> ASR condition (default {flip_agreement.DEFAULT_VOICE})")
    ap.add_argument("--keyboard-p", type=float, default=flip_agreement.KEYBOARD_P,
                    help=f"keyboard noise rate (default {flip_agreement.KEYBOARD_P}, NoiseQA's; 0 leaves it out)")
    ap.add_argument("--seed", type=cli.seed, default=0,
                    help="seed of the keyboard noise and of the bootstrap (default 0)")
    ap.add_argument("--n-boot", type=cli.Count(MAX_RESAMPLES), default=flip_agreement.N_BOOT,
                    help=f"bootstrap resamples of the kappa interval (default {flip_agreement.N_BOOT})")
    ap.add_output("--json", default=None, help="write everything as JSON here")
    ap.add_output("--csv", default=None, help="write the kappa rows as CSV here")
    ap.add_output("--questions-csv", default=None, help="write the per-question table as CSV here")
    return ap


def format_result(result: flip_agreement.Agreement) -> str:
    """The printed report: per model, the flip rates, then kappa per pair of conditions."""
    lines = [f"{result.settings.get('questions')} recorded questions · seed {result.settings.get('seed')} · "
             f"{result.settings.get('n_boot')} bootstrap resamples (95% interval, where the flips allow one) · "
             "p: Fisher's exact test, two-sided"]
    for model in result.models:
        lines.append(f"\n{model}")
        for r in flip_agreement.flip_rates(result):
            if r["model"] == model:
                lines.append(f"  flips  {r['condition']:<36} {r['flips']:>4}/{r['questions']:<4} {r['flip %']:>5}%")
        for r in result.kappas:
            if r["model"] == model:
                lines.append(f"  kappa  {r['a']} ~ {r['b']}: {flip_agreement.kappa_label(r)} "
                             f"(agreement {r['agreement %']}%, both flip {r['both flip']})"
                             + (f"; {r['note']}" if r["kappa"] is not None and r["note"] else ""))
    return "\n".join(lines)


@cli.command(PROG)
def main(argv: list[str]) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if not 0 <= args.keyboard_p <= 1:
        ap.error(f"--keyboard-p must be in 0..1, got {args.keyboard_p}")
    # the voice and the TTS -> ASR engines as a sweep would check them, before the data is read
    from core.collect.noise_profiles import NoiseMatchError, check_settings

    named = [e for e in (args.tts_asr or []) if e != "none"]
    try:
        check_settings([f"asr_Q:voice={args.voice}:engine={e}" for e in named] or [f"asr_Q:voice={args.voice}"],
                       runs_here=bool(named))
    except NoiseMatchError as e:
        ap.error(f"--voice/--tts-asr: {e}")
    if args.natural:
        return _natural(args)
    trial = flip_agreement.trial_or_error(args.trial)
    from core.collect.trial_sets import engines_transcribed
    from core.qa.registry import get_entry, load_engine

    natural = args.asr if args.asr is not None else engines_transcribed(trial)
    tts = natural if args.tts_asr is None else [e for e in args.tts_asr if e != "none"]
    for name in args.model:
        get_entry(name)   # an unknown model before the slow part
    examples, conditions, left_out = flip_agreement.trial_conditions(
        trial, natural, tts_engines=tts, voice=args.voice, keyboard_p=args.keyboard_p or None, seed=args.seed)
    if args.disfluency_n:
        conditions[f"disfluency:n={args.disfluency_n}"] = disfluency_condition(examples, args.disfluency_n, args.seed)
    engines = {name: load_engine(name) for name in dict.fromkeys(args.model)}
    result = flip_agreement.compare(examples, conditions, engines, seed=args.seed, n_boot=args.n_boot,
                               settings={"trial": trial.id, "voice": args.voice, "keyboard_p": args.keyboard_p,
                                         "left_out": left_out})
    print(format_result(result))
    if left_out:
        print(f"\n{len(left_out)} recorded questions left out (not transcribed by every engine): {', '.join(left_out)}")
    _write(args, result)
    return 0


def _natural(args) -> int:
    """The comparison on a natural set (core.collect.agreement_natural), XQuAD paragraphs apart."""
    from core.qa.registry import get_entry, load_engine

    for name in args.model:
        get_entry(name)
    tts = [e for e in (args.tts_asr or []) if e != "none"]
    disfluency = 1 if args.disfluency_n is None else args.disfluency_n
    examples, conditions, settings = natural_set_conditions(
        args.natural, sample=args.sample, tts_engines=tts, voice=args.voice, keyboard_p=args.keyboard_p or None,
        disfluency_n=disfluency or None, seed=args.seed)
    engines = {name: load_engine(name) for name in dict.fromkeys(args.model)}
    result = flip_agreement.compare(examples, conditions, engines, seed=args.seed, n_boot=args.n_boot,
                                    settings=settings)
    print(format_result(result).replace("recorded questions", f"questions of {args.natural}", 1))
    print("\nflip rates by paragraph (XQuAD's 240 paragraphs: not trained on by the shipped English models)")
    for r in flip_rates_by_subset(result):
        if r["questions"]:   # a sample may hold no question of a subset: no rate to print
            print(f"  {r['model']:<20} {r['questions on']:<18} {r['condition']:<36} {r['flips']:>4}/"
                  f"{r['questions']:<4} {r['flip %']}%")
    _write(args, result)
    return 0


def _write(args, result: flip_agreement.Agreement) -> None:
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(everything(result), indent=1, ensure_ascii=False) + "\n")
    if args.csv:
        cli.write_bytes_atomic(args.csv, csv_bytes(result.kappas))
    if args.questions_csv:
        cli.write_bytes_atomic(args.questions_csv, csv_bytes(result.rows))


if __name__ == "__main__":
    raise SystemExit(main())
