"""``python -m core.collect.noise_match``: which synthetic setting looks most like real people's noise?

    python -m core.collect.noise_match [--natural asr_human asr_tts disfluent] [--sample 300]
        [--setting SPEC ...] [--asr-sample N] [--asr-setting SPEC ...] [--model M ...] [--seed 0]
        [--n-boot 1000] [--json OUT] [--csv OUT]

Per natural condition (:data:`core.datasets.natural.CONDITIONS`) on a seeded sample of its
questions: its noise profile (per-question WER and CER, the insertion/deletion/substitution mix,
words changed; XQuAD paragraphs apart), every synthetic setting's on the same questions, the
distance between them (:data:`core.collect.noise_profiles.DISTANCE`) and the closest setting. ``--setting``
replaces the cheap settings (keyboard noise, disfluency); ``--asr-sample N`` adds TTS -> ASR
(``--asr-setting``, default the installed voices and engines) on N of the sampled questions (seconds
each; cached on disk). ``--model``: the flip agreement (Cohen's kappa, bootstrap interval) of each
condition's closest setting with the natural questions. ``--json``: everything; ``--csv``: the ranking.
Bad input is one line on stderr and exit status 2, a bad setting (an unknown id, a parameter that does
not parse or is out of range, a voice or engine that is not one of the catalogue's, or, where TTS -> ASR
will run, not installed) while the flags are parsed, before any work.
"""
from __future__ import annotations

import json
import sys

from core import cli
from core.budgets import MAX_QUESTIONS, MAX_RESAMPLES
from core.collect import noise_profiles
from core.io.csv_export import csv_bytes

PROG = "python -m core.collect.noise_match"


def _parser() -> cli.ArgumentParser:
    from core.datasets.natural import CONDITIONS

    ap = cli.ArgumentParser(prog=PROG, description="Natural against synthetic noise: noise profiles, distances "
                                                   "and the closest synthetic setting per natural condition.")
    ap.add_argument("--natural", nargs="+", default=["asr_human", "asr_tts"], choices=list(CONDITIONS),
                    help="natural conditions (default asr_human asr_tts: HeySQuAD)")
    ap.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), default=300,
                    help="questions per condition, a seeded sample (default 300)")
    ap.add_argument("--setting", action="append", default=None, metavar="SPEC",
                    help="a synthetic setting in the spec language, value lists allowed (repeat; default: "
                         + "; ".join(noise_profiles.DEFAULT_SETTINGS) + ")")
    ap.add_argument("--asr-sample", type=cli.Count(MAX_QUESTIONS, low=0), default=0,
                    help="TTS -> ASR settings on this many of the sampled questions (default 0: none)")
    ap.add_argument("--asr-setting", action="append", default=None, metavar="SPEC",
                    help="a TTS -> ASR setting (default: " + "; ".join(noise_profiles.ASR_SETTINGS) + ")")
    ap.add_argument("--model", action="append", default=[], help="a model of models.toml: flip agreement of "
                                                                 "each closest setting (repeat for more)")
    ap.add_argument("--seed", type=cli.seed, default=0, help="sample, noise and bootstrap seed")
    ap.add_argument("--n-boot", type=cli.Count(MAX_RESAMPLES), default=1000, help="bootstrap resamples (default 1000)")
    ap.add_argument("--top", type=cli.Bounded(1, 1000), default=5, help="settings printed per condition (default 5)")
    ap.add_output("--json", default=None, help="write everything as JSON here")
    ap.add_output("--csv", default=None, help="write the ranking as CSV here")
    return ap


def format_result(result: dict, top: int) -> str:
    """The printed report: per condition its profile, the closest settings, the flip agreement."""
    from core.collect.flip_agreement import kappa_label
    from core.render.words import count

    settings = result["settings"]
    lines = [f"distance: {result['distance']}",
             f"sample {count(settings['sample'], 'question')} per condition, seed {settings['seed']}"
             + (f"; TTS -> ASR on {settings['asr_sample']} of them" if settings['asr'] else "")]
    for condition in settings["conditions"]:
        name = f"natural:{condition}"
        lines.append(f"\n{name}")
        for p in result["profiles"]:
            if p["condition"] == name:
                lines.append(f"  {p['questions']:<17} n={p['n']:<4} WER {p['WER mean %']:>5}% "
                             f"(median {p['WER median %']})  CER {p['CER mean %']:>5}%  ins/del/sub "
                             f"{p['insertions %']}/{p['deletions %']}/{p['substitutions %']}%  words changed "
                             f"{p['words changed']}  unchanged {p['unchanged %']}%")
        for r in [r for r in result["ranking"] if r["natural"] == name][:top]:
            apart = r["distance (xquad paragraphs)"]   # None: the sample holds no XQuAD paragraph
            lines.append(f"  {r['distance']:.3f}  {r['setting']:<52} n={r['n']:<4} WER {r['setting WER %']:>5}% "
                         f"CER {r['setting CER %']:>5}%  (W1 WER {r['w1_wer']:.3f}, CER {r['w1_cer']:.3f}, mix TV "
                         f"{r['mix_tv']:.3f}" + ("" if apart is None else f"; on XQuAD paragraphs {apart:.3f}") + ")")
        for k in result.get("agreement", {}).get(condition, []):
            lines.append(f"  flips ({k['model']}): natural {k['flip % a']}%, {k['b']} {k['flip % b']}%, "
                         f"kappa {kappa_label(k)} on {count(k['n'], 'question')}"
                         + (f"; {k['note']}" if k["kappa"] is not None and k["note"] else ""))
    return "\n".join(lines)


def _checked(ap: cli.ArgumentParser, argv: list[str]):
    """The parsed flags, with every setting expanded and checked (``check_settings``: id, parameters
    and their ranges, a TTS -> ASR setting's voice and engine installed where it will run) and every
    model named, all before any work: a typo costs a second, not a run."""
    args = ap.parse_args(argv)
    try:
        args.setting = noise_profiles.check_settings(args.setting or noise_profiles.DEFAULT_SETTINGS)
        args.asr_setting = noise_profiles.check_settings(args.asr_setting or noise_profiles.ASR_SETTINGS,
                                                         runs_here=bool(args.asr_sample))
    except noise_profiles.NoiseMatchError as e:
        ap.error(str(e))
    if args.model:
        from core.qa.registry import get_entry

        for name in args.model:
            get_entry(name)   # an unknown model before the slow part
    return args


@cli.command(PROG)
def main(argv: list[str]) -> int:
    args = _checked(_parser(), argv)
    with cli.ProgressLine() as progress:   # an error mid-run starts on a line of its own
        result = noise_profiles.run_match(args.natural, sample=args.sample, settings=args.setting,
                                          asr_sample=args.asr_sample, asr_settings=args.asr_setting,
                                          seed=args.seed, progress=progress)
    if args.model:
        result["agreement"] = _agreement(result, args)
    print(format_result(result, args.top))
    # the output guard (core.cli, add_output) checked both while parsing; a missing folder is made
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    if args.csv:
        cli.write_bytes_atomic(args.csv, csv_bytes(result["ranking"]))
    for path in filter(None, (args.json, args.csv)):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _agreement(result: dict, args) -> dict[str, list[dict]]:
    from core.datasets import sample_examples
    from core.qa.registry import load_engine

    engines = {name: load_engine(name) for name in dict.fromkeys(args.model)}
    out = {}
    for condition, best in result["closest"].items():
        examples, noisy = noise_profiles.natural_pairs(condition)
        by_id = dict(zip((ex.id for ex in examples), noisy))
        chosen = sample_examples(examples, args.sample, args.seed)
        if best["n"] < len(chosen):   # a TTS -> ASR setting: its own smaller sample
            chosen = sample_examples(chosen, best["n"], args.seed)
        questions, _ = noise_profiles.synthetic_questions(chosen, best["setting"], args.seed)
        out[condition] = noise_profiles.flip_agreement(chosen, f"natural:{condition}", [by_id[e.id] for e in chosen],
                                                    best["setting"], questions, engines, seed=args.seed,
                                                    n_boot=args.n_boot)
    return out


if __name__ == "__main__":
    sys.exit(main())
