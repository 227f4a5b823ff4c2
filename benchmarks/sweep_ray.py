"""Sweeps on Ray against the local backend: wall time, speed-up, identical rows, per-stage costs.

Each configuration runs in a fresh child process (so none inherits another's loaded models,
caches or Ray), into a fresh database and a fresh cache folder (no transcript is reused):

  * text sweep: XQuAD-en sample x text perturbations x 2 models;
  * TTS -> ASR sweep: XQuAD-en sample x asr_Q (flite kal16 -> PocketSphinx) x 1 model;

on the local backend (the engine's default threads, and 1 thread), on a local Ray with 1 worker
confined to one core (the child and every Ray process it starts, ``sched_setaffinity``, Ray
started with ``num_cpus=1``), and on a local Ray with 1 and 2 workers on every core. Reported per
run: the sweep's own time (from the planned sweep to the last commit: for Ray the actors are
loaded by then) and the fixed cost before it (Ray start and actor loading, or the local model
load); the CPU seconds the sweep's processes used meanwhile (the child and its descendants),
as cores busy on average and split into the driver, the model actors, the perturbation task
workers and Ray's raylet and GCS, and the CPU seconds every other process used (other jobs on a
shared machine: a run where they are large is disturbed); and whether its
rows equal the local run's (every clean and perturbed row: prediction key, EM, F1). The load
average is printed with every run.

``--cluster`` also starts a real two-node Ray cluster on this machine (``ray start --head`` and
``ray start --address=127.0.0.1:PORT``, one CPU each), runs the text sweep against it with the
CLI, compares its rows and its ``--show`` table with the local run's, and stops the cluster.

``--stages`` measures the per-stage costs the projection in docs/results/ray.md uses: a text variant, a
TTS -> ASR clip, the driver's cost per result row (a warm sweep: every variant and prediction
cached, so only look-ups, scoring and SQLite writes remain), the bytes shipped per unit.

    python benchmarks/sweep_ray.py --text-sample 40 --asr-sample 30 --cluster --stages --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from core import cli  # noqa: E402  (the project on the path first)
from core.budgets import MAX_CHUNK, MAX_PROCESSES, MAX_QUESTIONS, MAX_RAY_WORKERS, MAX_REPEATS, MAX_THREADS  # noqa: E402

TEXT_SPECS = "keyboard_Q,TLQ,DCRQ,DRQ,SwapRQ"
ASR_SPECS = "asr_Q:voice=flite:kal16:engine=pocketsphinx"
ROWS = ("SELECT 'clean', model, '', '', 0, example_hash, prediction_key, em, f1 FROM clean_results "
        "UNION ALL SELECT 'perturbed', model, perturbation, params_json, repeat, example_hash, prediction_key, "
        "em, f1 FROM results ORDER BY 1, 2, 3, 4, 5, 6")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_snapshot() -> tuple[float, dict[int, tuple[int, float, str]]]:
    """(CPU seconds the machine has been busy, {pid: (parent pid, CPU seconds incl. reaped
    children, name)}), from /proc: what the sweep's processes used and anything else meanwhile."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = (sum(fields) - fields[3] - fields[4]) / tick   # all but idle and iowait
    procs: dict[int, tuple[int, float, str]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name, stat = text[text.index("(") + 1:text.rindex(")")], text.rsplit(")", 1)[1].split()
        procs[int(pid)] = (int(stat[1]), sum(int(x) for x in stat[11:15]) / tick, name)
    return busy, procs


def cpu_use(before, after, root: int) -> dict[str, float]:
    """CPU seconds between two snapshots: of ``root`` and its descendants, split into the driver
    (``root``), model actors, perturbation task workers and the rest (Ray's raylet and GCS), and
    of everything else on the machine (``other``: other jobs)."""
    procs = after[1]
    ours = {root}
    grew = True
    while grew:
        new = {pid for pid, (parent, _, _) in procs.items() if parent in ours} - ours
        ours |= new
        grew = bool(new)
    use = {"driver": 0.0, "actors": 0.0, "tasks": 0.0, "ray": 0.0}
    for pid in ours:
        _, cpu, name = procs[pid]
        group = ("driver" if pid == root else "actors" if name.startswith("ray::") and "Actor" in name
                 else "tasks" if name.startswith("ray::") else "ray")
        use[group] += cpu - before[1].get(pid, (0, 0.0, ""))[1]
    use["sweep"] = sum(use.values())
    use["other"] = (after[0] - before[0]) - use["sweep"]
    return use


def rows(db: Path) -> list:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(ROWS).fetchall()
    finally:
        conn.close()


# ------------------------------------------------------------------------------------------- child


def child(args) -> None:
    """One sweep in this process; prints one JSON line."""
    from core.datasets import load_dataset
    from core.qa.engine import EngineSettings
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep

    if args.cores:   # this process and every Ray process it starts run on these cores only
        os.sched_setaffinity(0, range(args.cores))
    t0 = time.perf_counter()
    marks: dict = {}
    dataset = load_dataset(args.dataset)
    config = SweepConfig(args.dataset, [args.specs], args.models.split(","), repeats=args.repeats, seed=0,
                         sample=args.sample, name="bench")

    def started(run) -> None:
        marks["start"] = time.perf_counter()
        marks["cpu"] = time.process_time()
        marks["snapshot"] = cpu_snapshot()

    if args.backend == "local":
        from core.qa.registry import load_engine

        settings = EngineSettings(threads=args.threads or None)
        engines = {m: load_engine(m, settings) for m in config.models}
        run = run_sweep(config, engines, args.db, dataset=dataset, chunk_size=args.chunk_size, on_start=started)
        worker_states = []
    else:
        from core.sweeps.running.ray import run_sweep_ray

        states: list = []
        run = run_sweep_ray(config, args.db, address=args.address, workers=args.workers, dataset=dataset,
                            num_cpus=args.cores or None, chunk_size=args.chunk_size, on_start=started,
                            on_workers=states.append)
        worker_states = [{"node": w.node, "calls": w.calls, "predictions": w.predictions, "restarts": w.restarts}
                   for w in (states[-1] if states else [])]
    end, cpu = time.perf_counter(), time.process_time()
    use = cpu_use(marks["snapshot"], cpu_snapshot(), os.getpid())   # before Ray's processes end
    if args.backend != "local":
        from core.sweeps.running.ray_cluster import disconnect

        disconnect()
    # this process's CPU during the sweep: for Ray, the driver's own cost (plan, look-ups,
    # scoring, (un)pickling, SQLite writes); the work itself runs in the workers
    print(json.dumps({"sweep_s": end - marks["start"], "fixed_s": marks["start"] - t0, "rows": run.done_units,
                      "process_cpu_s": cpu - marks["cpu"], "sweep_cpu_s": use["sweep"], "other_cpu_s": use["other"],
                      "cpu_s": use,
                      "predictions": run.predictions_computed, "variants": run.variants_computed,
                      "worker_states": worker_states}))


def run_child(kind: str, backend: str, tmp: Path, args, *, workers: int | None = None, threads: int | None = None,
              address: str | None = None, env_extra: dict | None = None, label: str | None = None,
              cores: int | None = None) -> dict:
    label = label or f"{kind}-{backend}-{workers or threads or 'default'}" + (f"-{cores}core" if cores else "")
    db = tmp / f"{label}.sqlite"
    cache = tmp / f"cache-{label}"
    specs, sample, models = ((TEXT_SPECS, args.text_sample, args.text_models) if kind == "text"
                             else (ASR_SPECS, args.asr_sample, args.asr_models))
    cmd = [sys.executable, __file__, "--child", "--backend", backend, "--db", str(db), "--dataset", args.dataset,
           "--specs", specs, "--sample", str(sample), "--models", models, "--repeats", str(args.repeats),
           "--chunk-size", str(args.chunk_size)]
    if workers:
        cmd += ["--workers", str(workers)]
    if threads:
        cmd += ["--threads", str(threads)]
    if address:
        cmd += ["--address", address]
    if cores:
        cmd += ["--cores", str(cores)]
    env = dict(os.environ, QAX_CACHE_DIR=str(cache), PYTHONPATH=str(REPO), **(env_extra or {}))
    before = load()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO, timeout=3600)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out.update(label=label, kind=kind, backend=backend, workers=workers, threads=threads, cores=cores,
               process_s=wall, load_before=before, load_after=load(), db=str(db))
    print(f"{label:24s} sweep {out['sweep_s']:7.1f} s  fixed {out['fixed_s']:5.1f} s  process {wall:6.1f} s  "
          f"{out['rows']} rows, {out['predictions']} predictions  CPU {out['sweep_cpu_s']:5.1f} s "
          f"({out['sweep_cpu_s'] / out['sweep_s']:.2f} cores busy; " +
          ", ".join(f"{k} {v:.1f}" for k, v in out["cpu_s"].items() if k not in ("sweep", "other") and v >= 0.05) +
          f"), other jobs {out['other_cpu_s']:5.1f} s  "
          f"load {before} -> {out['load_after']}", flush=True)
    return out


# ------------------------------------------------------------------------------------------ stages


def stages(args) -> dict:
    """Per-stage costs measured in this process (see the module doc)."""
    from core.datasets import Dataset, load_dataset, sample_examples
    from core.perturb import registry
    from core.perturb.spec import parse_specs
    from core.qa.registry import load_engine
    from core.sweeps.config import SweepConfig
    from core.sweeps.keys import example_hash
    from core.sweeps.running.resolve import registry_spec as _registry_spec
    from core.sweeps.running.run import run_sweep

    dataset = load_dataset(args.dataset)
    examples = sample_examples([e for e in dataset.examples if e.answers], args.text_sample, 0)
    out: dict = {}
    specs = [_registry_spec(s, 1, registry.get) for s in parse_specs(TEXT_SPECS)]
    for s in specs:   # load the NLP backends outside the timing
        s.make(examples[0], s.rng(example_hash(examples[0]), 0, 0))
    t0 = time.perf_counter()
    outcomes = [s.make(ex, s.rng(example_hash(ex), 0, 0)) for s in specs for ex in examples]
    out["text_variant_ms"] = 1000 * (time.perf_counter() - t0) / len(outcomes)
    item = (0, examples[0], example_hash(examples[0]), 0, "k" * 64)
    out["bytes_per_unit_sent"] = len(pickle.dumps(item))
    out["bytes_per_outcome"] = len(pickle.dumps(outcomes[0]))

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["QAX_CACHE_DIR"] = tmp
        asr = _registry_spec(parse_specs(ASR_SPECS)[0], 1, registry.get)
        asr.make(examples[0], asr.rng(example_hash(examples[0]), 0, 0))   # load voice and recogniser
        t0 = time.perf_counter()
        for ex in examples[1:6]:
            asr.make(ex, asr.rng(example_hash(ex), 0, 0))
        out["asr_clip_s"] = (time.perf_counter() - t0) / 5

        models = args.text_models.split(",")
        engines = {m: load_engine(m) for m in models}
        small = Dataset("stage", "en", examples)
        db = Path(tmp) / "stage.sqlite"
        config = SweepConfig("stage", [TEXT_SPECS], models, seed=0, name="cold")
        run_sweep(config, engines, db, dataset=small)
        config.name = "warm"
        t0 = time.perf_counter()
        warm = run_sweep(config, engines, db, dataset=small)
        out["driver_ms_per_row"] = 1000 * (time.perf_counter() - t0) / warm.total_units
        out["warm_model_calls"] = warm.model_calls
    print(f"stages: text variant {out['text_variant_ms']:.2f} ms, TTS->ASR clip {out['asr_clip_s']:.2f} s, "
          f"driver {out['driver_ms_per_row']:.3f} ms/row (warm sweep, {out['warm_model_calls']} model calls), "
          f"{out['bytes_per_unit_sent']} B sent per unit, {out['bytes_per_outcome']} B per outcome back  "
          f"load {load()}", flush=True)
    return out


# ----------------------------------------------------------------------------------------- cluster


def two_node_cluster(args, tmp: Path, reference: dict) -> dict:
    """Head + second node on this machine, 1 CPU each; the text sweep through the CLI against it."""
    ray_bin = str(Path(sys.executable).with_name("ray"))
    env = dict(os.environ, RAY_AUTH_MODE="token", PYTHONPATH=str(REPO))
    port = args.port
    subprocess.run([ray_bin, "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                    "--disable-usage-stats"], env=env, check=True, capture_output=True, text=True)
    try:
        subprocess.run([ray_bin, "start", f"--address=127.0.0.1:{port}", "--num-cpus=1", "--disable-usage-stats"],
                       env=env, check=True, capture_output=True, text=True)
        result = run_child("text", "ray", tmp, args, workers=2, address=f"127.0.0.1:{port}",
                           env_extra={"RAY_AUTH_MODE": "token"}, label="text-two-node-cluster")
        nodes = len({w["node"] for w in result["worker_states"]})   # the nodes the workers' actors ran on
        result["nodes"] = nodes
        result["identical_to_local"] = rows(Path(result["db"])) == rows(Path(reference["db"]))
        shows = [subprocess.run([sys.executable, "-m", "core.sweeps", "--show", "bench", "--db", db], cwd=REPO,
                                capture_output=True, text=True).stdout for db in (result["db"], reference["db"])]
        result["show_identical"] = shows[0] == shows[1] and "bench" in shows[0]
        where = [w["node"] for w in result["worker_states"]]
        print(f"two-node cluster (workers on {nodes} nodes: {where}): "
              f"rows identical to local: {result['identical_to_local']}, "
              f"--show identical: {result['show_identical']}", flush=True)
        return result
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True)


# -------------------------------------------------------------------------------------------- main


@cli.command("benchmarks/sweep_ray.py")
def main(argv: list[str] | None = None) -> dict | None:
    ap = cli.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--text-sample", type=cli.Count(MAX_QUESTIONS), default=40)
    ap.add_argument("--asr-sample", type=cli.Count(MAX_QUESTIONS), default=30)
    ap.add_argument("--text-models", default="minilm-squad,minilm-squad-noise")
    ap.add_argument("--asr-models", default="minilm-squad")
    ap.add_argument("--repeats", type=cli.Count(MAX_REPEATS), default=1)
    ap.add_argument("--chunk-size", type=cli.Count(MAX_CHUNK), default=32)
    ap.add_argument("--kinds", default="text,asr")
    ap.add_argument("--cluster", action="store_true", help="also run the text sweep on a two-node cluster here")
    ap.add_argument("--port", type=cli.Bounded(1024, 65535), default=6391)
    ap.add_argument("--stages", action="store_true", help="also measure the per-stage costs")
    ap.add_output("--json", type=Path)
    # child mode
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="local", help=argparse.SUPPRESS)
    ap.add_output("--db", also_input=True, help=argparse.SUPPRESS)
    ap.add_argument("--specs", help=argparse.SUPPRESS)
    ap.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), help=argparse.SUPPRESS)
    ap.add_argument("--models", help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=cli.Count(MAX_RAY_WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS), help=argparse.SUPPRESS)
    ap.add_argument("--address", help=argparse.SUPPRESS)
    ap.add_argument("--cores", type=cli.Count(MAX_PROCESSES), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return None

    print(f"{os.cpu_count()} CPUs; load average before: {load()}", flush=True)
    results: dict = {"cpus": os.cpu_count(), "runs": [], "text_sample": args.text_sample,
                     "asr_sample": args.asr_sample, "chunk_size": args.chunk_size}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for kind in [k for k in args.kinds.split(",") if k]:
            ref = run_child(kind, "local", tmp, args)
            runs = [ref, run_child(kind, "local", tmp, args, threads=1),
                    run_child(kind, "ray", tmp, args, workers=1, cores=1),
                    run_child(kind, "ray", tmp, args, workers=1), run_child(kind, "ray", tmp, args, workers=2)]
            expected = rows(Path(ref["db"]))
            for r in runs:
                r["identical_to_local"] = rows(Path(r["db"])) == expected
            print(f"{kind}: rows identical to local in every run: {all(r['identical_to_local'] for r in runs)}",
                  flush=True)
            results["runs"] += runs
            if kind == "text" and args.cluster:
                results["cluster"] = two_node_cluster(args, tmp, ref)
        if args.cluster and "text" not in args.kinds.split(","):   # the cluster alone, against a local run
            results["cluster"] = two_node_cluster(args, tmp, run_child("text", "local", tmp, args, threads=1))
        if args.stages:
            results["stages"] = stages(args)
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
