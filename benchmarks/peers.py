"""The project's engine beside a peer on the same weights and questions (issue 58, item 4).

    python benchmarks/peers.py                          # minilm-squad-v2, 200 XQuAD-en questions
    python benchmarks/peers.py --n 400 --json out.json

transformers 5 removed ``pipeline("question-answering")``, so the peer is what its documentation
teaches in its place (the Hugging Face course's question-answering chapter): the model's own
folder in ``AutoModelForQuestionAnswering`` (torch fp32), the tokenizer's overflowing 384-token
windows with stride 128 padded to 384, the 20 best start and end logits of each window, the best
valid span of at most 30 tokens inside the context (as this project answers); the
project's engine answers with the model's default backend here (its card's choice) and with
torch fp32. Each answers the same questions once to warm up, then again timed, one question at a
time (as Ask does) and all at once (as a sweep does); prints questions per second, EM and F1
(SQuAD v1.1) and the share of questions whose answers differ from the peer's. With
``--optimum-python``, optimum-intel's OpenVINO model is a peer too (benchmarks/peer_optimum.py:
it needs an environment of its own).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core import cli  # noqa: E402  (the project on the path first)
from core.budgets import MAX_QUESTIONS  # noqa: E402


def optimum_rows(python: str, folder: str, questions: list[str], contexts: list[str], threads: int) -> dict:
    """benchmarks/peer_optimum.py's rows, run by ``python`` (an environment with optimum-intel):
    ``{runner: (answers, q/s one at a time, q/s all at once)}``."""
    import subprocess

    job = json.dumps({"folder": str(Path(folder).resolve()), "questions": questions, "contexts": contexts,
                      "threads": threads})
    done = subprocess.run([python, str(ROOT / "benchmarks" / "peer_optimum.py")], input=job, capture_output=True,
                          text=True, timeout=3600)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"the optimum-intel peer failed ({python}): {last}")
    return {r["runner"]: (r["answers"], r["one_qps"], r["all_qps"]) for r in json.loads(done.stdout)["rows"]}


def compare(model: str, dataset: str, n: int, threads: int, optimum_python: str | None = None) -> dict:
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from benchmarks import course_recipe
    from core.datasets import load_dataset
    from core.metrics import squad
    from core.qa.engine import EngineSettings
    from core.qa.registry import get_entry, load_engine

    torch.set_num_threads(threads)
    examples = load_dataset(dataset).examples[:n]
    questions, contexts = [e.question for e in examples], [e.context for e in examples]
    golds = [[a.text for a in e.answers] for e in examples]
    folder = get_entry(model).path
    if not folder or not Path(folder).is_dir():
        raise SystemExit(f"{model} is not a plain model folder: the peer pipeline loads a folder as it is")

    tokenizer = AutoTokenizer.from_pretrained(folder)
    peer = AutoModelForQuestionAnswering.from_pretrained(folder).eval()

    def peer_all(qs, cs):
        return course_recipe.answers(tokenizer, peer, qs, cs)

    rows = {}
    answers, one_qps, all_qps = course_recipe.timed(peer_all, questions, contexts)
    rows["transformers, the course's recipe (torch fp32)"] = (answers, one_qps, all_qps)
    if optimum_python:
        rows |= optimum_rows(optimum_python, folder, questions, contexts, threads)
    for backend in ("default", "torch"):
        engine = load_engine(model, EngineSettings(threads=threads, backend=backend))
        name = f"this project ({engine.resolve_backend()})"

        def engine_all(qs, cs, engine=engine):
            return [p.text for p in engine.predict(list(qs), list(cs), n_best=1)]

        rows[name] = course_recipe.timed(engine_all, questions, contexts)
    peer_answers = rows["transformers, the course's recipe (torch fp32)"][0]
    out = {"model": model, "dataset": dataset, "n": len(questions), "threads": threads, "rows": []}
    for name, (answers, one_qps, all_qps) in rows.items():
        scores = squad.squad_scores({e.id: a for e, a in zip(examples, answers)},
                                    {e.id: g for e, g in zip(examples, golds)})
        em, f1 = scores["exact_match"], scores["f1"]
        norm = squad.normalize_answer
        differ = sum(norm(a) != norm(b) for a, b in zip(answers, peer_answers))
        out["rows"].append({"runner": name, "qps_one_at_a_time": round(one_qps, 2),
                            "qps_all_at_once": round(all_qps, 2), "em": round(em, 2), "f1": round(f1, 2),
                            "answers_differing_from_the_peer_percent": round(100 * differ / len(answers), 1)})
    return out


@cli.command("benchmarks/peers.py")
def main(argv: list[str] | None = None) -> int:
    from core.budgets import MAX_THREADS

    ap = cli.ArgumentParser(prog="benchmarks/peers.py", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad-v2", help="a registered model with a plain folder")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--n", type=cli.Bounded(4, MAX_QUESTIONS.value()), default=200,
                    help="questions from the start of the data set (default 200)")
    ap.add_argument("--threads", type=cli.Bounded(1, MAX_THREADS.value()), default=2,
                    help="CPU threads for every runner (default 2)")
    ap.add_argument("--optimum-python", default=None,
                    help="the python of an environment with optimum-intel (benchmarks/peer_optimum.py says how to "
                         "make one): its OpenVINO model is a peer too")
    ap.add_output("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.optimum_python and not Path(args.optimum_python).is_file():
        ap.error(f"--optimum-python: no such file: {args.optimum_python}")
    out = compare(args.model, args.dataset, args.n, args.threads, args.optimum_python)
    print(f"{out['model']} on {out['n']} questions of {out['dataset']}, {out['threads']} threads")
    print(f"{'runner':80s} {'q/s one':>8s} {'q/s all':>8s} {'EM':>6s} {'F1':>6s} {'differ %':>9s}")
    for r in out["rows"]:
        print(f"{r['runner']:80s} {r['qps_one_at_a_time']:8.2f} {r['qps_all_at_once']:8.2f} {r['em']:6.2f} "
              f"{r['f1']:6.2f} {r['answers_differing_from_the_peer_percent']:9.1f}")
    if args.json:
        cli.write_bytes_atomic(args.json, json.dumps(out, indent=1).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
