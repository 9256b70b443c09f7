"""The policy suite on the Dally paper's cluster: FIFO, Gandiva, Tiresias, Dally and its variants.

    python -m artist.experiments.dally_policies --out DIR [--racks 2,4,8,16] [--n-jobs 2]

Every policy runs on topologies/dally-3tier.yaml (8 GPUs per machine, 8
machines per rack) at each rack count, on two workloads over the six shipped
models (workloads/models):
- batch: 500 jobs, all arriving at t = 0 (the same 500 jobs at every rack
  count, so that the cluster size is the contention knob);
- poisson: 400 jobs with exponential inter-arrival times whose mean scales
  with the cluster, 60 s x 256 / GPUs (120 s on 2 racks, 60 s on 4, 30 s on 8,
  15 s on 16), so that the offered load is the same at every size. With one
  seed the jobs are the same at every size; only the arrival times scale.
The communication backend is the analytical model (artist.network.analytical)
unless --comm ns3 is given;
SimulatorConfig defaults (30 s checkpoint-restore, 300 s periodic rounds).

Workload (our choices, not the paper's, which used production traces):
- GPU demand drawn from 1, 2, 4, 8, 16, 32 with weights .30 .20 .20 .15 .10 .05
  (mostly small jobs, as in the Philly and Helios traces);
- iterations log-uniform in [1 000, 100 000] (artist.workload.JobMix default);
  with the profiles' compute times (7.6 ms to 441 ms per iteration) ideal run
  times span ~8 s to ~12 h.
Seed 0 gives: batch, mean 6.5 GPUs and 44 min ideal run time per job, 10.5 M
GPU-seconds in all (22.9 h of the 2-rack cluster, 2.9 h of the 16-rack one);
poisson, mean 5.5 GPUs and 46 min, 7.1 M GPU-seconds: 263 GPUs' worth of work
per unit of arrival time (a nominal load of ~1.03 at every size). Job lengths
are heavy-tailed, so 400 jobs do not reach that load on the large clusters:
under FIFO at most 474 of 512 GPUs (8 racks) and 703 of 1024 (16 racks) are
ever busy and no job queues there; the 2- and 4-rack clusters saturate.

Outputs in DIR: runs/<comm>-<workload>-<trace digest>-r<racks>-<policy>/{summary,jobs}.csv
per run (a finished run is not redone when the script is restarted with the
same traces), summary.csv with every run, and summary.md, the same as a
Markdown table (times in hours, communication in milliseconds per iteration).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import pandas as pd

from artist.metrics import job_table, summary
from artist.network.stack import BACKENDS, CommSpec
from artist.policies.registry import make_policy
from artist.simulator import SimulatorConfig, simulate
from artist.topology import load_topology
from artist.workload import JobMix, batch_jobs, load_models, poisson_jobs

REPO = Path(__file__).resolve().parent.parent.parent
TOPOLOGY = REPO / "topologies" / "dally-3tier.yaml"
POLICIES = ("fifo", "gandiva", "tiresias", "dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated")
RACKS = (2, 4, 8, 16)
GPU_CHOICES = (1, 2, 4, 8, 16, 32)
GPU_WEIGHTS = (0.30, 0.20, 0.20, 0.15, 0.10, 0.05)
BATCH_JOBS, POISSON_JOBS, INTERARRIVAL_S = 500, 400, 60.0
COLUMNS = ["comm", "workload", "racks", "gpus_total", "policy", "jobs", "finished", "makespan_s", "jct_mean_s", "jct_median_s",
           "jct_p95_s", "jct_p99_s", "queueing_mean_s", "queueing_p95_s", "queueing_p99_s", "comm_latency_mean_s",
           "gpu_utilisation_fraction", "preemptions", "migrations", "wall_seconds"]


REFERENCE_GPUS = 256  # the 4-rack cluster: the Poisson mean inter-arrival is stated for it


def job_mix(models: dict) -> JobMix:
    return JobMix(models=tuple(sorted(models)), gpu_choices=GPU_CHOICES, gpu_weights=GPU_WEIGHTS)


def trace(workload: str, gpus: int, models: dict, seed: int, batch_n: int, poisson_n: int, interarrival_s: float):
    if workload == "batch":
        return batch_jobs(batch_n, job_mix(models), seed)
    if workload == "poisson":
        return poisson_jobs(poisson_n, job_mix(models), interarrival_s * REFERENCE_GPUS / gpus, seed)
    raise ValueError(f"unknown workload {workload!r}; known: batch, poisson")


def digest(jobs) -> str:
    text = "\n".join(f"{j.job_id},{j.arrival!r},{j.model},{j.gpus},{j.iterations}" for j in jobs)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def run_one(workload: str, racks: int, policy: str, jobs, models, out: Path, comm: str = "analytical") -> dict:
    run_dir = out / "runs" / f"{comm}-{workload}-{digest(jobs)}-r{racks}-{policy}"
    done = run_dir / "summary.csv"
    if done.exists():
        return pd.read_csv(done).iloc[0].to_dict()
    topology = load_topology(TOPOLOGY, racks)
    started = time.perf_counter()
    result = simulate(topology, jobs, models, make_policy(policy), CommSpec(comm).build(topology), SimulatorConfig())
    wall = time.perf_counter() - started
    table = job_table(result)
    row = {"comm": comm, "workload": workload, "racks": racks, "gpus_total": topology.gpus, **summary(result, table),
           "wall_seconds": round(wall, 1)}
    row = {c: row[c] for c in COLUMNS}
    run_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(run_dir / "jobs.csv", index=False, float_format="%.9g")
    tmp = done.with_suffix(".tmp")
    pd.DataFrame([row]).to_csv(tmp, index=False, float_format="%.9g")
    tmp.replace(done)  # written last: its presence marks the run finished
    print(f"{workload:8s} racks={racks:2d} {policy:24s} makespan {row['makespan_s'] / 3600:7.2f} h  "
          f"JCT mean {row['jct_mean_s'] / 3600:6.2f} h  wall {wall:6.1f} s", flush=True)
    return row


def markdown(df: pd.DataFrame) -> str:
    hours = ["makespan_s", "jct_mean_s", "jct_median_s", "jct_p95_s", "jct_p99_s", "queueing_mean_s", "queueing_p95_s", "queueing_p99_s"]
    lines = []
    for workload, part in df.groupby("workload", sort=False):
        lines.append(f"\n### {workload} (times in hours; comm = mean exposed communication, ms per iteration)\n")
        head = ["racks", "policy", *hours, "comm_ms", "util", "preempt", "migr"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for _, r in part.iterrows():
            cells = [str(int(r["racks"])), r["policy"], *(f"{r[h] / 3600:.2f}" for h in hours),
                     f"{r['comm_latency_mean_s'] * 1e3:.3f}", f"{r['gpu_utilisation_fraction']:.2f}",
                     str(int(r["preemptions"])), str(int(r["migrations"]))]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--racks", default=",".join(map(str, RACKS)), help="comma-separated rack counts")
    p.add_argument("--policies", default=",".join(POLICIES), help="comma-separated policy names")
    p.add_argument("--workloads", default="batch,poisson", help="batch, poisson or both")
    p.add_argument("--batch-jobs", type=int, default=BATCH_JOBS)
    p.add_argument("--poisson-jobs", type=int, default=POISSON_JOBS)
    p.add_argument("--interarrival", type=float, default=INTERARRIVAL_S,
                   help="Poisson mean inter-arrival on 256 GPUs, seconds (scaled by 256 / GPUs at other sizes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--comm", default="analytical", choices=BACKENDS, help="network model backend")
    p.add_argument("--n-jobs", type=int, default=1, help="runs in parallel (joblib processes)")
    args = p.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    models = load_models()
    names = [w for w in args.workloads.split(",") if w]
    racks = [int(r) for r in args.racks.split(",") if r]
    policies = [x for x in args.policies.split(",") if x]
    gpus_per_rack = load_topology(TOPOLOGY).gpus_per_rack
    traces = {}
    for w in names:
        for r in racks:
            try:
                traces[w, r] = trace(w, r * gpus_per_rack, models, args.seed, args.batch_jobs, args.poisson_jobs,
                                     args.interarrival)
            except ValueError as exc:
                raise SystemExit(f"dally_policies: {exc}")
    tasks = [(w, r, pol) for w in names for r in racks for pol in policies]
    if args.n_jobs == 1:
        rows = [run_one(w, r, pol, traces[w, r], models, out, args.comm) for w, r, pol in tasks]
    else:
        from joblib import Parallel, delayed

        rows = Parallel(n_jobs=args.n_jobs)(delayed(run_one)(w, r, pol, traces[w, r], models, out, args.comm)
                                           for w, r, pol in tasks)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.drop(columns=["wall_seconds"]).to_csv(out / "summary.csv", index=False, float_format="%.9g")
    (out / "summary.md").write_text(markdown(df))
    print(f"wrote {out / 'summary.csv'} and {out / 'summary.md'} ({len(df)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
