"""Cost and error of the packet-level answers of the Dally rack sweep: prints figures, asserts nothing.

    PYTHONPATH=. python benchmarks/sweep_cost.py [--sample 100] [--seed 0] [--questions FILE]
                                                 [--full-jobs 2] [--full-budget-s S] [--tiny]

--tiny: seconds, for the test that keeps the script working (a few small jobs on 2 racks, 2 sampled keys).

1. The sweep's distinct questions. sweeps/dally-racks.yaml asks the network for one step graph
   per distinct (model, placement shape) of a job alone (contention "isolated"); which shapes occur
   depends on the policies' placements, so the sweep is run once with the analytical backend and a
   fresh latency cache, and the cache's keys are the questions (each entry's key material holds
   the step graph relabelled onto canonical GPUs: StepGraph.key_material). --questions FILE keeps
   that list (JSON) and reuses it on the next run (the analytical sweep takes minutes).
2. A seeded random sample of --sample keys (random.Random(seed).sample over the sorted keys).
3. Each sampled question answered by the ns-3 backend as shipped (CommSpec("ns3") with its default
   options: the message-level fast path where no link is shared; a fresh latency cache), timed in
   CPU seconds: this process plus the ns-3 worker process (read from /proc, as the worker stays
   alive), excluding the one-off worker start, which is printed on its own.
4. The same question as a full packet run without any shortcut (fast_path=False, accelerate=False,
   no cache), in --full-jobs processes at once; --full-budget-s stops starting new full runs after
   that many wall seconds (default: none, every sampled key is compared).
5. Per key, the error is the largest relative difference over the graph's communication nodes
   (each DDP bucket's all-reduce) between the shipped answer and the full run.

Projection: projected_total_s = (mean CPU seconds per sampled key) x (all distinct keys) / 2, i.e.
the sweep's keys answered on 2 cores that stay busy (a sweep's keys are independent questions),
plus one worker start per core. Targets (issue 15): projected_total_s <= 1 800, max_err_pct <= 1.

With --tiny the questions come from a small version of the spec (its smallest rack count, first policy and
seed, 6 jobs of small models: TINY_WORKLOAD), 2 of them sampled; every step above runs, on 2 processes for the
full packet runs as by default; the figures mean nothing.

The last line is exactly:
    dally-racks packet answers: keys=N projected_total_s=T max_err_pct=E median_err_pct=M
(N: keys compared against a full run). CPU seconds are measured, not wall: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from artist.parallel.graph import Node, StepGraph  # noqa: E402
from artist.sweep.spec import load_sweep_spec  # noqa: E402

SPEC = REPO / "sweeps" / "dally-racks.yaml"
CORES = 2  # the projection's machine (the target is stated for 2 cores)
# --tiny: small models on up to 2 machines, so that a full packet run of a question takes a second or two
TINY_WORKLOAD = "batch:n=6,gpus=4|16,models=resnet18|mobilenet_v3_large"


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / clock_ticks()


def cpu_now(worker) -> float:
    """CPU seconds of this process and of the ns-3 worker it drives (0 if none is alive)."""
    own = time.process_time()
    return own + (process_cpu_seconds(worker.pid) if worker is not None and worker.alive else 0.0)


# ---- 1. the questions ----------------------------------------------------------------
def enumerate_questions(spec_path: Path, work: Path, jobs: int) -> list[dict]:
    """Run the sweep with the analytical backend into a fresh cache; its entries are the questions."""
    cache = work / "cache"
    cmd = [sys.executable, str(REPO / "run_sweep.py"), str(spec_path), "--backend", "analytical", "--out",
           str(work / "out"), "--cache-dir", str(cache), "-j", str(jobs), "--quiet", "--no-plots"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"analytical sweep failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    print(f"analytical sweep for the question list: {time.perf_counter() - started:.0f} s wall", flush=True)
    return questions_from_cache(cache / "latency-cache.sqlite")


def tiny_spec(work: Path) -> Path:
    """--tiny: the spec at its smallest rack count, with its first policy and seed and TINY_WORKLOAD, written
    into `work` (its topology path made absolute)."""
    data = yaml.safe_load(SPEC.read_text())
    data.update(name=f"{data['name']}-tiny", topology=str((SPEC.parent / data["topology"]).resolve()),
                racks=[min(data["racks"])], policies=data["policies"][:1], seeds=data["seeds"][:1],
                workloads=[{"label": "tiny", "spec": TINY_WORKLOAD}])
    path = work / f"{SPEC.stem}-tiny.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def questions_from_cache(path: Path) -> list[dict]:
    """One question per step-graph entry: its key, model name, shape and the (single) graph."""
    out = []
    with sqlite3.connect(path) as db:
        for key, model_name, shape, key_json in db.execute(
                "SELECT key, model_name, shape, key_json FROM entries ORDER BY key"):
            material = json.loads(key_json)
            if "graphs" not in material:
                continue  # a one-collective question (calibration, `artist comm`): not a sweep step
            if len(material["graphs"]) != 1:
                raise SystemExit(f"{path}: entry {key} holds {len(material['graphs'])} jobs; the sweep runs "
                                 f"isolated jobs, so every question should be one graph")
            out.append({"key": key, "model": model_name, "shape": shape, "graph": material["graphs"][0]})
    return out


def graph_from_material(material: list) -> StepGraph:
    """StepGraph.key_material() back into a graph (compute seconds at the key's 9 digits, as asked)."""
    return StepGraph(tuple(Node(i, kind, tuple(deps), float(seconds), tuple(group), int(nbytes))
                           for i, (kind, deps, seconds, group, nbytes) in enumerate(material)))


def topology_for_all_shapes():
    """The sweep's topology at its largest rack count: every canonical question's GPUs exist there (the
    answer does not depend on racks the graph does not touch: the key holds only touched links)."""
    spec = load_sweep_spec(SPEC)
    return spec.topologies[0].topology.with_racks(max(spec.racks))


# ---- 3. as shipped --------------------------------------------------------------------
def answer_shipped(questions: list[dict], topology, cache_dir: Path) -> tuple[list[dict], float]:
    from artist.network.stack import CommSpec

    comm = CommSpec("ns3", cache=str(cache_dir / "latency-cache.sqlite")).build(topology)
    ns3_model = comm.inner
    worker = ns3_model.worker
    started = time.process_time()
    worker.ensure_started()  # started once per process in a sweep: measured apart
    start_cpu = time.process_time() - started + process_cpu_seconds(worker.pid)
    out = []
    for q in questions:
        graph = graph_from_material(q["graph"])
        before = cpu_now(worker)
        timing = comm.time({"a": graph})["a"]
        cpu = cpu_now(worker) - before
        out.append({"node_seconds": timing.node_seconds, "cpu": cpu, "path": timing.result.details.get("path")})
    comm.flush()
    return out, start_cpu


# ---- 4. full packet runs --------------------------------------------------------------
def _full_run(graph_material: list, deadline: float | None) -> dict | None:
    """One question as a full packet run, no shortcut, no cache (in a joblib worker process);
    None when it would start after the deadline (time.time())."""
    if deadline is not None and time.time() > deadline:
        return None
    from artist.network.ns3 import Ns3Model
    from artist.network.ns3.runner import shared_worker

    worker = shared_worker()
    worker.ensure_started()
    graph = graph_from_material(graph_material)
    before = cpu_now(worker)
    timing = Ns3Model(_topology(), worker=worker, fast_path=False, accelerate=False).time({"a": graph})["a"]
    return {"node_seconds": timing.node_seconds, "cpu": cpu_now(worker) - before,
            "packets": timing.result.packets, "path": timing.result.details.get("path")}


def _indexed_full_run(i: int, graph_material: list, deadline: float | None) -> tuple[int, dict | None]:
    return i, _full_run(graph_material, deadline)


_TOPOLOGY = None


def _topology():
    global _TOPOLOGY
    if _TOPOLOGY is None:
        _TOPOLOGY = topology_for_all_shapes()
    return _TOPOLOGY


def answer_full(questions: list[dict], jobs: int, budget_s: float | None) -> list[dict | None]:
    """Full packet runs in `jobs` processes; a run that would start after budget_s wall seconds is
    skipped (None)."""
    from joblib import Parallel, delayed

    started = time.perf_counter()
    deadline = None if budget_s is None else time.time() + budget_s
    out: list[dict | None] = [None] * len(questions)
    tasks = (delayed(_indexed_full_run)(i, q["graph"], deadline) for i, q in enumerate(questions))
    done = 0
    for i, res in Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered", batch_size=1)(tasks):
        out[i] = res
        done += 1
        if done % 10 == 0 or done == len(questions):
            print(f"  full packet runs: {done}/{len(questions)} ({time.perf_counter() - started:.0f} s wall)",
                  flush=True)
    return out


def _node_errors(graph: StepGraph, shipped: tuple, full: tuple) -> list[float]:
    return [abs(s - f) / f for n, s, f in zip(graph.nodes, shipped, full) if n.is_communication and f > 0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=100, help="sampled keys (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", default=None, help="JSON file of the sweep's questions: read if it exists, "
                                                      "else written after the analytical sweep")
    ap.add_argument("--enumerate-jobs", type=int, default=2, help="workers of the analytical sweep (default 2)")
    ap.add_argument("--full-jobs", type=int, default=2, help="full packet runs at once (default 2)")
    ap.add_argument("--full-budget-s", type=float, default=None,
                    help="stop starting full packet runs after this many wall seconds (default: no limit)")
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args()
    if args.tiny:
        args.sample = 2
    if args.sample < 1:
        raise SystemExit("--sample must be >= 1")

    with tempfile.TemporaryDirectory(prefix="artist-sweep-cost-") as tmp:
        work = Path(tmp)
        qfile = Path(args.questions) if args.questions else None
        if qfile is not None and qfile.exists():
            questions = json.loads(qfile.read_text())
            print(f"questions read from {qfile}")
        else:
            spec_path = tiny_spec(work) if args.tiny else SPEC
            if args.tiny:
                print(f"tiny: questions from {spec_path.name} ({TINY_WORKLOAD}), not {SPEC.name}")
            questions = enumerate_questions(spec_path, work / "enumerate", args.enumerate_jobs)
            if qfile is not None:
                qfile.parent.mkdir(parents=True, exist_ok=True)
                qfile.write_text(json.dumps(questions))
        total_keys = len(questions)
        print(f"{SPEC.name}: {total_keys} distinct (model, shape) questions")
        sample = random.Random(args.seed).sample(questions, min(args.sample, total_keys))
        topology = topology_for_all_shapes()

        shipped, start_cpu = answer_shipped(sample, topology, work / "shipped-cache")
        cpu = [s["cpu"] for s in shipped]
        paths = {p: sum(s["path"] == p for s in shipped) for p in sorted({str(s["path"]) for s in shipped})}
        print(f"as shipped: {len(sample)} keys, {sum(cpu):.2f} CPU-s ({statistics.mean(cpu) * 1e3:.1f} ms/key mean, "
              f"{max(cpu):.2f} s max); paths {paths}; ns-3 worker start {start_cpu:.2f} CPU-s")

        full = answer_full(sample, args.full_jobs, args.full_budget_s)
    compared = [(q, s, f) for q, s, f in zip(sample, shipped, full) if f is not None]
    if not compared:
        raise SystemExit("no full packet run finished within the budget")
    errors, comm_errors = [], []
    for q, s, f in compared:
        graph = graph_from_material(q["graph"])
        node_err = _node_errors(graph, s["node_seconds"], f["node_seconds"])
        errors.append(100 * max(node_err, default=0.0))
        comm_s = sum(x for n, x in zip(graph.nodes, s["node_seconds"]) if n.is_communication)
        comm_f = sum(x for n, x in zip(graph.nodes, f["node_seconds"]) if n.is_communication)
        comm_errors.append(100 * abs(comm_s - comm_f) / comm_f if comm_f else 0.0)
    full_cpu = [f["cpu"] for _, _, f in compared]
    shipped_cpu = [s["cpu"] for _, s, _ in compared]
    worst = max(range(len(compared)), key=lambda i: errors[i])
    print(f"full packet runs: {len(compared)} keys, {sum(full_cpu):.1f} CPU-s, "
          f"{sum(f['packets'] for _, _, f in compared) / 1e6:.1f} M packets; "
          f"as shipped on the same keys {sum(shipped_cpu):.2f} CPU-s: {sum(full_cpu) / sum(shipped_cpu):.0f}x less CPU")
    print(f"error per key (largest over its buckets): max {max(errors):.3f} % ({compared[worst][0]['model']} "
          f"{compared[worst][0]['shape']}), median {statistics.median(errors):.3f} %; "
          f"error of the summed communication time: max {max(comm_errors):.3f} %")
    full_projection = statistics.mean(full_cpu) * total_keys / CORES
    projected = statistics.mean(cpu) * total_keys / CORES + start_cpu
    print(f"projection onto {total_keys} keys on {CORES} cores: as shipped {projected:.0f} s; "
          f"full packet runs {full_projection:.0f} s (mean CPU per key x keys / cores)")
    print(f"dally-racks packet answers: keys={len(compared)} projected_total_s={projected:.0f} "
          f"max_err_pct={max(errors):.3f} median_err_pct={statistics.median(errors):.3f}")


if __name__ == "__main__":
    main()
