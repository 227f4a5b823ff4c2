"""Natural machine-translation noise (NoiseQA's "natural MT" challenge sets), per source language.

A speaker of language X asks a question in X; an MT system turns it into English; the English QA
system answers it against the English context. XQuAD makes this measurable: ``xquad.<X>`` holds
professional human translations of the ``xquad.en`` questions with the SAME question ids, so

    English example (context, answers, id)  +  MT(X question with that id -> English)

is a challenge set paired with ``xquad.en`` by id. (MLQA's ``dev-context-X-question-X`` files
share ids with ``dev-context-en-question-en`` too; ``--original`` / ``--source`` take any such
pair of files.)

    python -m core.translate.natural_mt --lang es --output runs/natural_mt/xquad-natural-mt-es.json
    python -m core.translate.natural_mt --lang all --output-dir runs/natural_mt     # every language MT covers
    python -m core.translate.natural_mt --lang de --model ~/opus-mt-de-en --output ...  # a model you supply

The written file keeps the English ids, titles, contexts and answers; only the question is the
machine translation. A sweep reads it as ``file:<path>`` (``python -m core.sweeps --dataset
xquad/xquad.en --perturbations file:/abs/path/xquad-natural-mt-es.json ...``).

Translation goes through :mod:`core.translate`: Apertium by default (here Spanish is the only
XQuAD language it covers; German, Chinese and the others have no offline MT unless you supply a
seq2seq model folder with ``--model``). Printed summary, NoiseQA Table 3 style: corpus CER, WER
and BLEU of the MT questions against the original English questions
(:func:`core.metrics.text_distance.noise_summary`); ``--summary-json`` also writes it as JSON.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from core import cli, config
from core.budgets import MAX_BEAMS, MAX_QUESTIONS
from core.datasets import Dataset, DatasetError, load_squad, pair_challenge
from core.metrics.text_distance import noise_summary, table3_summary
from core.translate import languages, translators

XQUAD_LANGS = ("ar", "de", "el", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")


class NaturalMTError(ValueError):
    """A natural-MT set that cannot be built (missing file, unpaired sets, no MT for the language)."""


@dataclass
class NaturalMTSet:
    """The challenge set and how it was made: the English originals, the source-language questions
    and their machine translations (parallel lists, in the original's order), and the summary."""

    dataset: Dataset
    src_lang: str
    translator: str
    originals: list[str]
    sources: list[str]
    translations: list[str]
    unmatched: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict:
        """NoiseQA Table 3 numbers (percent) plus what the set is: ``cer`` / ``wer`` / ``bleu`` raw
        (case and punctuation counted), ``table3_*`` as the paper defines them
        (:func:`core.metrics.text_distance.table3_summary`)."""
        s = noise_summary(self.originals, self.translations)
        t = table3_summary(self.originals, self.translations)
        return {"name": self.dataset.name, "src_lang": self.src_lang, "translator": self.translator,
                "examples": len(self.originals), "unmatched_original": len(self.unmatched),
                "cer": s["cer"], "wer": s["wer"], "bleu": s["bleu"],
                "table3_cer": t["cer"], "table3_wer": t["wer"], "table3_bleu": t["bleu"],
                "mt_seconds": round(self.seconds, 3)}


def build_natural_mt(original: Dataset, source: Dataset, translator: translators.Translator, src_lang: str,
                     *, tgt_lang: str | None = None, limit: int | None = None) -> NaturalMTSet:
    """Translate ``source``'s questions into ``original``'s language and put them into ``original``.

    The two sets must share question ids (pairing by position would silently mis-pair); only
    examples with a partner are written. ``limit`` keeps the first N paired examples.
    """
    tgt_lang = tgt_lang or original.lang
    if src_lang == tgt_lang:
        raise NaturalMTError(f"source and target language are both {src_lang!r}")
    reason = translators.no_backend_reason([(src_lang, tgt_lang)], translator)
    if reason:
        raise NaturalMTError(f"no machine translation {languages.language_name(src_lang)} -> "
                             f"{languages.language_name(tgt_lang)}: {reason}")
    try:
        # by id, unchecked: the contexts are translations of each other, never equal
        pairing = pair_challenge(original, source, verify=False)
    except DatasetError as exc:
        raise NaturalMTError(str(exc)) from None
    if pairing.rule != "id":
        raise NaturalMTError(f"{source.name} shares no question id with {original.name}: natural MT needs "
                             "the same questions in both languages (XQuAD / MLQA ids)")
    pairs = pairing.pairs[:limit] if limit else pairing.pairs
    if not pairs:
        raise NaturalMTError("no examples to translate")
    started = time.perf_counter()
    translations = translator.translate([s.question for _, s in pairs], src_lang, tgt_lang)
    seconds = time.perf_counter() - started
    examples = [dataclasses.replace(o, question=mt) for (o, _), mt in zip(pairs, translations)]
    name = f"{original.name}-natural-mt-{src_lang}"
    return NaturalMTSet(Dataset(name=name, lang=original.lang, examples=examples), src_lang, translator.name,
                        [o.question for o, _ in pairs], [s.question for _, s in pairs], translations,
                        pairing.unmatched_original, seconds)


def xquad_path(lang: str, data_dir: Path | None = None) -> Path:
    root = data_dir or config.data_dir()
    if root is None:
        raise NaturalMTError("no data directory: set QAX_DATA_DIR (or --data-dir) to the folder holding xquad/")
    return Path(root) / "xquad" / f"xquad.{lang}.json"


def covered_languages(translator: translators.Translator | None, data_dir: Path | None = None,
                      target: str = "en") -> list[tuple[str, str | None]]:
    """Every XQuAD language with its file present: (lang, None) when ``translator`` can turn it into
    ``target``, else (lang, why not)."""
    out = []
    for lang in XQUAD_LANGS:
        if not xquad_path(lang, data_dir).is_file():
            continue
        out.append((lang, translators.no_backend_reason([(lang, target)], translator)))
    return out


def summary_lines(result: NaturalMTSet) -> list[str]:
    s = result.summary()
    lines = [f"natural MT {languages.language_name(result.src_lang)} -> English with {result.translator}: "
             f"{s['examples']} questions ({s['mt_seconds']:.1f} s"
             + (f", {s['examples'] / s['mt_seconds']:.0f} sentences/s" if s["mt_seconds"] > 0 else "") + ")",
             f"{'':<30}{'CER':>8}{'WER':>8}{'BLEU':>8}",
             f"{'Table 3 (paper: lower-cased,':<30}",
             f"{' no punctuation for CER/WER)':<30}"
             f"{s['table3_cer']:>8.1f}{s['table3_wer']:>8.1f}{s['table3_bleu']:>8.1f}",
             f"{'raw (case, punctuation)':<30}{s['cer']:>8.1f}{s['wer']:>8.1f}{s['bleu']:>8.1f}"]
    if s["unmatched_original"]:
        lines.append(f"  {s['unmatched_original']} original questions have no {result.src_lang} partner (left out)")
    return lines


def _translator(args) -> translators.Translator:
    if args.model:
        return translators.Seq2SeqTranslator(args.model, [(lang, "en") for lang in args.langs],
                                           num_beams=args.num_beams)
    translator = translators.default_translator()
    if translator is None:
        raise NaturalMTError(translators.no_backend_reason([], None))
    return translator


PROG = "python -m core.translate.natural_mt"


def _langs(args) -> list[str]:
    """The languages ``--lang`` may translate: itself, or every XQuAD language for ``all``."""
    return list(XQUAD_LANGS) if args.lang == "all" else [args.lang]


def _default(lang: str, args) -> Path | None:
    try:
        return xquad_path(lang, args.data_dir)
    except NaturalMTError:   # no data directory: the load says so
        return None


def _original_file(original, args) -> Path | None:
    return original or _default("en", args)


def _source_files(source, args) -> list:
    """The source-language files read: --source, or each language's XQuAD file."""
    found = [source] if source and args.lang != "all" else [_default(lang, args) for lang in _langs(args)]
    return [p for p in found if p is not None]


def _output_dir_files(output_dir, args) -> list | None:
    """The files ``--output-dir`` receives, one per language (none when --output is given)."""
    if args.output or not output_dir:
        return None
    return [Path(output_dir) / f"xquad-natural-mt-{lang}.json" for lang in _langs(args)]


@cli.command(PROG)
def main(argv: list[str] | None = None) -> int:
    """Bad input ends in one line and exit status 2 (core.cli); outputs are checked writable
    before any translation and each file is written whole or not at all."""
    ap = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("--lang", required=True,
                    help="source language of the human questions (es, de, ... or 'all' = every XQuAD "
                         "language the MT backend covers)")
    ap.add_output("--output", help="challenge file to write (one language)")
    ap.add_output("--output-dir", paths=_output_dir_files,
                  help="folder for xquad-natural-mt-<lang>.json files (with --lang all)")
    ap.add_input("--original", paths=_original_file,
                 help="English SQuAD file (default: <data dir>/xquad/xquad.en.json)")
    ap.add_input("--source", paths=_source_files,
                 help="source-language file with the same ids (default: xquad.<lang>.json)")
    ap.add_input("--data-dir", type=Path, default=None, help="data directory (default: QAX_DATA_DIR)")
    ap.add_input("--model", help="a local seq2seq model folder translating <lang> -> en (default: Apertium)")
    ap.add_argument("--num-beams", type=cli.Count(MAX_BEAMS), default=4, help="beam size for --model (default 4)")
    ap.add_argument("--limit", type=cli.Count(MAX_QUESTIONS), default=None, help="only the first N questions")
    ap.add_output("--summary-json", help="also write the summaries (a list) to this JSON file")
    ap.add_argument("--on-ambiguous", choices=("error", "first", "nearest"), default="error",
                    help="an answer with answer_start -1 that occurs several times in its context: error "
                         "(default), the first occurrence, or the one nearest the question's words (--lang "
                         "here names the source language)")
    args = ap.parse_args(argv)
    if args.output_dir and Path(args.output_dir).exists() and not Path(args.output_dir).is_dir():
        raise cli.CLIError(f"--output-dir {args.output_dir} is a file, not a folder")

    if args.lang == "all":
        if not args.output_dir or args.output or args.source:
            raise NaturalMTError("--lang all writes one file per language: give --output-dir (not --output/--source)")
        probe = translators.default_translator() if not args.model else None
        langs = [lang for lang, why in covered_languages(probe, args.data_dir) if why is None] \
            if not args.model else list(XQUAD_LANGS)
        if not langs:
            raise NaturalMTError("the installed MT backend covers none of the XQuAD languages")
    else:
        if not (args.output or args.output_dir):
            raise NaturalMTError("give --output FILE (or --output-dir)")
        langs = [args.lang]
    args.langs = langs
    translator = _translator(args)
    original = load_squad(args.original or xquad_path("en", args.data_dir), on_ambiguous=args.on_ambiguous)
    print(original.load_line())
    summaries = []
    for lang in langs:
        reason = translators.no_backend_reason([(lang, original.lang)], translator)
        if reason:   # before looking for files: the missing MT is the real problem
            raise NaturalMTError(f"no machine translation {languages.language_name(lang)} -> "
                                 f"{languages.language_name(original.lang)}: {reason}")
        if args.source and args.lang != "all":
            source_path = Path(args.source)
        else:
            source_path = xquad_path(lang, args.data_dir)
        if not source_path.is_file():
            raise NaturalMTError(f"no source file {source_path}")
        source = load_squad(source_path, lang=lang, on_ambiguous=args.on_ambiguous)
        print(source.load_line())
        result = build_natural_mt(original, source, translator, lang, limit=args.limit)
        out = Path(args.output) if args.output else Path(args.output_dir) / f"xquad-natural-mt-{lang}.json"
        cli.write_text_atomic(out, json.dumps(result.dataset.to_squad_json(), ensure_ascii=False, indent=1))
        summaries.append({**result.summary(), "path": str(out.resolve())})
        print(f"wrote {out} (sweep spec: file:{out.resolve()})")
        for line in summary_lines(result):
            print(line)
    if args.summary_json:
        cli.write_text_atomic(args.summary_json, json.dumps(summaries, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
