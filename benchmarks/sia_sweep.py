"""Run sweeps/sia.yaml (Sia's Table 3 set-up) on the elastic loop and print each run's summary next to the
paper's figures.

    PYTHONPATH=. python benchmarks/sia_sweep.py [sweeps/sia.yaml] [--jobs N] [--pop P] [--gen G]
        [--policies sia pollux] [--workloads philly-1] [--tiny]

--jobs: the first N jobs of each workload (default all 160); --pop/--gen override Pollux's GA size (the
spec's 100 x 100 takes about a second per round). One JSON line per run (avg and p99 JCT, makespan,
GPU-hours per job incl. Sia's profiling, restarts per job, policy seconds per round median and p95, wall
and CPU seconds), then the table. The machine may be loaded: compare CPU seconds.
--tiny: seconds, for the test that keeps the script working (every policy of the spec on the first 4 jobs of
its first workload, one seed, Pollux's GA 6 x 3).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from artist.elastic.cluster import load_cluster  # noqa: E402
from artist.elastic.hetero_runs import POLICIES, read_jobs, run  # noqa: E402
from artist.yamlio import load_yaml_mapping  # noqa: E402

# Sia draft Table 3 (digest 2.6): avg JCT h, p99 JCT h, makespan h, GPU-h per job
PAPER = {("philly", "Sia"): (0.6, 9.5, 14.2, 4.0), ("philly", "Pollux"): (1.0, 14.9, 24.5, 5.6),
         ("philly", "Gavel+TunedJobs"): (1.9, 30.0, 33.8, 9.0), ("helios", "Sia"): (0.7, 10.9, 14.9, 4.8),
         ("helios", "Pollux"): (1.0, 15.0, 25.5, 5.9), ("helios", "Gavel+TunedJobs"): (2.5, 38.7, 43.0, 12.1)}


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default=str(Path(__file__).resolve().parent.parent / "sweeps" / "sia.yaml"))
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--pop", type=int, default=None)
    ap.add_argument("--gen", type=int, default=None)
    ap.add_argument("--policies", nargs="*", default=None, help="labels to run (default: all)")
    ap.add_argument("--workloads", nargs="*", default=None, help="labels to run (default: all)")
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    spec_path = Path(args.spec)
    spec = load_yaml_mapping(spec_path)
    # tiny: 4 jobs, so jobs overlap; most of the cost is the summary's isolated times, larger the more of the
    # cluster a job's share is (measured, all three policies: 4 jobs 7.3 CPU-s, 2 jobs 8.2, 1 job 6.2)
    if args.tiny:
        args.jobs, args.pop, args.gen = 4, 6, 3
        args.workloads = args.workloads or [spec["workloads"][0]["label"]]
    seeds = spec.get("seeds", [0])[:1] if args.tiny else spec.get("seeds", [0])
    base = spec_path.resolve().parent
    cluster = load_cluster(base / spec["topology"])
    round_seconds = float((spec.get("elastic") or {}).get("round_seconds", 60))
    rows = []
    for workload in spec["workloads"]:
        if args.workloads and workload["label"] not in args.workloads:
            continue
        for policy in spec["policies"]:
            label = policy.get("label", policy["name"])
            if args.policies and label not in args.policies and policy["name"] not in args.policies:
                continue
            params = dict(policy.get("params") or {})
            if policy["name"] == "pollux":
                params.update({k: v for k, v in (("pop_size", args.pop), ("generations", args.gen)) if v})
            for seed in seeds:
                jobs = read_jobs(base / workload["spec"], POLICIES[policy["name"]].job_config, args.jobs)
                wall, cpu = time.perf_counter(), _cpu()
                result, _ = run(cluster, policy["name"], jobs, seed=seed, round_seconds=round_seconds, **params)
                summary = result.summary()
                summary.update(policy=label, workload=workload["label"], seed=seed, params=params,
                               wall_s=round(time.perf_counter() - wall, 1), cpu_s=round(_cpu() - cpu, 1))
                print(json.dumps(summary), flush=True)
                rows.append(summary)
    print(f"{'workload':10} {'policy':16} {'avg JCT h':>18} {'p99 JCT h':>18} {'makespan h':>18} {'GPU-h/job':>16}"
          f" {'restarts':>8}  (ours | paper)")
    for s in rows:
        paper = PAPER.get((s["workload"].split("-")[0].replace("saturn", "helios"), s["policy"]))
        cells = [(s["avg_jct_h"], 0), (s["p99_jct_h"], 1), (s["makespan_h"], 2), (s["gpu_h_per_job"], 3)]
        text = " ".join(f"{v:8.2f} | {paper[i] if paper else '-':>6}" for v, i in cells)
        print(f"{s['workload']:10} {s['policy']:16} {text} {s['avg_restarts']:8.2f}")


if __name__ == "__main__":
    main()
