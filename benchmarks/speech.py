"""Speech benchmark: TTS and ASR real-time factors (and WER) per voice and engine on XQuAD-en.

For ``--n`` questions of XQuAD-en (a seeded sample), every selected TTS voice speaks every
question and every selected ASR engine transcribes every clip. Prints, per voice, the TTS
real-time factor (synthesis time / audio length; < 1 is faster than real time) and, per voice x
engine, the ASR real-time factor and the corpus WER of the transcript against the question
(both lower-cased and unpunctuated, as NoiseQA compares them). Models are loaded before timing;
the transcript cache is bypassed (everything is computed afresh).

    python benchmarks/speech.py                   # 20 questions, every working voice and engine
    python benchmarks/speech.py --n 2 --voices flite:kal16 piper:joe --engines pocketsphinx
    python benchmarks/speech.py --json out.json   # also write the numbers

Cost: whisper-base runs at ~0.5-1 x real time on two busy cores, so 20 questions x 23 voices
take ~10 minutes for whisper alone; choose voices on a shared machine.
"""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import (
    cli,
    config,
)
from core.budgets import MAX_QUESTIONS
from core.datasets import load_squad
from core.metrics.text_distance import corpus_wer
from core.speech import asr, tts
from core.speech.asr import normalise_transcript


def xquad_questions(n: int, seed: int) -> list[str]:
    data = config.data_dir()
    if data is None:
        raise SystemExit("no data directory: set QAX_DATA_DIR to the folder holding xquad/xquad.en.json")
    dataset = load_squad(data / "xquad" / "xquad.en.json", lang="en")
    questions = [ex.question for ex in dataset]
    if not 0 < n <= len(questions):
        raise SystemExit(f"--n must be in [1, {len(questions)}]")
    return random.Random(seed).sample(questions, n)


@cli.command("benchmarks/speech.py")
def main(argv: list[str] | None = None) -> dict:
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=20,
                        help="number of XQuAD-en questions (default 20)")
    parser.add_argument("--seed", type=cli.seed, default=0, help="sampling seed (default 0)")
    parser.add_argument("--voices", nargs="*", help="voice ids (default: every working voice)")
    parser.add_argument("--engines", nargs="*", help="ASR engines (default: every available engine)")
    parser.add_output("--json", type=Path, help="also write the results to this JSON file")
    parser.reads("xquad/xquad.en")   # no output may be one of them
    args = parser.parse_args(argv)

    questions = xquad_questions(args.n, args.seed)
    voice_ids = args.voices or [v.id for v in tts.voices()]
    for vid in voice_ids:
        problem = tts.why_unavailable(vid)
        if problem:
            raise SystemExit(problem)
    engines = [asr.get_engine(name) for name in (args.engines or [e.name for e in asr.available_engines()])]
    for engine in engines:
        engine.model()   # load before timing

    references = [normalise_transcript(q) for q in questions]
    results: dict = {"n": len(questions), "seed": args.seed, "voices": {}}
    print(f"{len(questions)} XQuAD-en questions, {len(voice_ids)} voices, engines: "
          f"{', '.join(e.name for e in engines)}")
    header = f"{'voice':34s} {'TTS RTF':>8s} {'audio s':>8s}" + "".join(
        f" {e.name + ' RTF':>18s} {e.name + ' WER':>18s}" for e in engines)
    print(header)
    engine_totals = {e.name: [0.0, 0.0] for e in engines}   # decode seconds, audio seconds
    for vid in voice_ids:
        clips, tts_seconds, audio_seconds = [], 0.0, 0.0
        for q in questions:
            start = time.perf_counter()
            samples, rate = tts.synthesize(q, vid)
            tts_seconds += time.perf_counter() - start
            audio_seconds += len(samples) / rate
            clips.append((samples, rate))
        row = {"tts_rtf": tts_seconds / audio_seconds, "audio_seconds": audio_seconds, "engines": {}}
        line = f"{vid:34s} {row['tts_rtf']:8.3f} {audio_seconds:8.1f}"
        for engine in engines:
            transcripts = [engine.transcribe(samples, rate) for samples, rate in clips]
            decode = sum(t.seconds for t in transcripts)
            heard = sum(t.audio_seconds for t in transcripts)
            engine_totals[engine.name][0] += decode
            engine_totals[engine.name][1] += heard
            wer = corpus_wer(references, [t.text for t in transcripts])
            row["engines"][engine.name] = {"rtf": decode / heard, "wer": wer,
                                           "transcripts": [t.text for t in transcripts]}
            line += f" {decode / heard:18.3f} {wer:18.3f}"
        results["voices"][vid] = row
        print(line, flush=True)
    results["asr_rtf"] = {name: d / a for name, (d, a) in engine_totals.items() if a}
    print("ASR RTF over all voices: " + ", ".join(f"{k} {v:.3f}" for k, v in results["asr_rtf"].items()))
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
