"""The generative reader's speed on this CPU, and what the project adds over llama.cpp's own call.

    python benchmarks/llm_reader.py --n 20 [--dataset xquad/xquad.en] [--json out.json]

For the first N questions of the data set (XQuAD-en by default; the bundled demo.en when there is no
data directory) the shipped LLM (qwen2.5-coder-0.5b, Q4_K_M GGUF, llama.cpp) answers each question
twice, the two ways interleaved and in alternating order so a neighbour's load falls on both:

* **runtime**: llama-cpp-python's own ``create_chat_completion`` on the prompt the reader sends
  (same messages, greedy, same token cap and stop), nothing else;
* **reader**: ``GenerativeReader.predict([q], [c])`` as Ask and the sweeps call it: the prompt's
  language, the same call, tidying and alignment to the passage.

Both use one loaded ``Llama``, so the weights, threads and its prompt cache are the same. Prints
the prefill and decode tokens/s (llama.cpp's own counters), seconds per question for each way,
and the overhead ratio reader/runtime (the issue's goal: at most 1.10), with the load average;
then the reader's own steps alone (language, messages, tidying, alignment) on the runtime's replies,
timed without the model: the part of the overhead that is the wrapper's, free of the load's noise.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS

MODEL = "qwen2.5-coder-0.5b"
WRAPPER_REPEATS = 20


def _perf(llm) -> tuple[float, int, float, int]:
    """(prefill ms, prefill tokens, decode ms, decode tokens) since the last reset."""
    import llama_cpp

    p = llama_cpp.llama_perf_context(llm.ctx)
    return p.t_p_eval_ms, p.n_p_eval, p.t_eval_ms, p.n_eval


@cli.command("benchmarks/llm_reader.py")
def main(argv: list[str] | None = None) -> int:
    import llama_cpp

    from core.config import data_dir
    from core.datasets import demo_dataset, load_dataset
    from core.qa import registry
    from core.qa.generative.align import align
    from core.qa.generative.prompts import messages, prompt_language
    from core.qa.generative.reader import tidy

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=20)
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_output("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    ds = load_dataset(args.dataset) if data_dir() else demo_dataset("en")
    examples = [e for e in ds.examples if e.answers][: args.n]
    reader = registry.load_engine(MODEL)
    llm, s = reader.runtime.llm, reader.settings

    def runtime_call(e):
        chat = messages(e.question, e.context, prompt_language(e.question, e.context))
        return llm.create_chat_completion(messages=chat, temperature=0.0, top_k=1, max_tokens=s.max_new_tokens,
                                          stop=list(s.stop), seed=0)

    reader.predict([examples[0].question], [examples[0].context])   # warm: first-call allocations
    times = {"runtime": [], "reader": []}
    replies: dict[str, str] = {}
    prefill_ms = prefill_n = decode_ms = decode_n = 0
    load_before = os.getloadavg()
    for k, e in enumerate(examples):
        order = ("runtime", "reader") if k % 2 == 0 else ("reader", "runtime")
        for way in order:
            llm.reset()   # no prompt cache from the previous question: both ways prefill the whole prompt
            llama_cpp.llama_perf_context_reset(llm.ctx)
            t0 = time.perf_counter()
            if way == "runtime":
                replies[e.id] = runtime_call(e)["choices"][0]["message"]["content"] or ""
            else:
                reader.predict([e.question], [e.context])
            times[way].append(time.perf_counter() - t0)
            if way == "runtime":
                pm, pn, dm, dn = _perf(llm)
                prefill_ms, prefill_n = prefill_ms + pm, prefill_n + pn
                decode_ms, decode_n = decode_ms + dm, decode_n + dn
    # the reader's own steps alone (the prompt's language and messages, tidying, alignment), on the
    # replies the runtime gave: what the wrapper adds, free of the load's noise on the model call
    t0 = time.perf_counter()
    for _ in range(WRAPPER_REPEATS):
        for e in examples:
            lang = prompt_language(e.question, e.context)
            messages(e.question, e.context, lang)
            align(tidy(replies[e.id]), e.context, lang)
    wrapper_ms = 1000 * (time.perf_counter() - t0) / (WRAPPER_REPEATS * len(examples))
    figures = {
        "model": MODEL, "dataset": ds.name, "n": len(examples), "threads": llm.context_params.n_threads,
        "prefill_tokens_per_s": round(1000 * prefill_n / prefill_ms, 1) if prefill_ms else None,
        "decode_tokens_per_s": round(1000 * decode_n / decode_ms, 1) if decode_ms else None,
        "prompt_tokens_per_question": round(prefill_n / len(examples), 1),
        "answer_tokens_per_question": round(decode_n / len(examples), 1),
        "runtime_s_per_question": round(statistics.mean(times["runtime"]), 3),
        "reader_s_per_question": round(statistics.mean(times["reader"]), 3),
        "runtime_median_s": round(statistics.median(times["runtime"]), 3),
        "reader_median_s": round(statistics.median(times["reader"]), 3),
        "overhead_ratio": round(sum(times["reader"]) / sum(times["runtime"]), 3),
        "wrapper_steps_ms_per_question": round(wrapper_ms, 3),
        "wrapper_steps_share_of_runtime_call": round(wrapper_ms / 1000 / statistics.mean(times["runtime"]), 6),
        "load_average": [round(x, 2) for x in load_before] + [round(x, 2) for x in os.getloadavg()],
    }
    for k, v in figures.items():
        print(f"{k}: {v}")
    if args.json:
        from core.io.outputs import write_text_atomic

        write_text_atomic(Path(args.json), json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
