"""optimum-intel's OpenVINO question-answering model as a peer (issue 58, item 4), run by
benchmarks/peers.py ``--optimum-python`` in an environment of its own: optimum-intel 2.2.0 pins
transformers below 5.6, older than this project's, so it cannot share this project's environment
(and needs torchvision, which PyPI's build gives only beside torch 2.14.1 here).

    python -m venv peer
    peer/bin/pip install torch==2.14.1 torchvision==0.29.1 "transformers<5.6" optimum-intel==2.2.0 \
        openvino==2026.4.0 nncf==3.4.0
    python benchmarks/peers.py --optimum-python peer/bin/python

Reads ``{"folder", "questions", "contexts", "threads"}`` as JSON on stdin; answers with
``OVModelForQuestionAnswering.from_pretrained(folder, export=True)`` (optimum-intel's own export
and OpenVINO's defaults on this CPU), and again with ``load_in_8bit=True`` (its int8 weight
compression), each through the course's recipe (benchmarks/course_recipe.py), timed as peers.py
times every runner; writes ``{"rows": [{"runner", "answers", "one_qps", "all_qps"}]}`` as JSON
on stdout. Imports nothing of this project but course_recipe.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_recipe  # beside this file; no project imports


def main() -> int:
    # what the libraries print (NNCF's tables among it) goes to stderr, not into the JSON
    out, sys.stdout = sys.stdout, sys.stderr
    from importlib.metadata import version

    from optimum.intel import OVModelForQuestionAnswering
    from transformers import AutoTokenizer

    job = json.load(sys.stdin)
    questions, contexts, threads = job["questions"], job["contexts"], int(job["threads"])
    tokenizer = AutoTokenizer.from_pretrained(job["folder"])
    rows = []
    for label, extra in (("", {}), (", int8 weights (load_in_8bit)", {"load_in_8bit": True})):
        model = OVModelForQuestionAnswering.from_pretrained(
            job["folder"], export=True, ov_config={"INFERENCE_NUM_THREADS": threads}, **extra)
        answers, one_qps, all_qps = course_recipe.timed(
            lambda qs, cs, model=model: course_recipe.answers(tokenizer, model, qs, cs), questions, contexts)
        rows.append({"runner": f"optimum-intel {version('optimum-intel')} OpenVINO{label}, the course's recipe",
                     "answers": answers, "one_qps": one_qps, "all_qps": all_qps})
    json.dump({"rows": rows}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
