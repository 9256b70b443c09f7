"""Run a Crius comparison from a YAML spec and print it beside the paper's figures.

    python -m artist.crius.sweep sweeps/crius.yaml [--out results/crius.json] [--jobs N]
        [--cluster crius-testbed] [--rate ARRIVALS_PER_HOUR]

Spec fields: name, cluster (crius-1280 | crius-testbed), jobs, arrivals_per_hour, seeds (list), policies
(list of crius, gavel, fcfs, gandiva-crius, elasticflow-ls), depth (Crius' search depth, default 3), philly_log
(optional, relative to the spec: a Philly cluster_job_log whose first `jobs` jobs give the arrivals and
durations; arrivals_per_hour is then unused). Every seed draws
one workload (workload.py) that every policy runs; the table averages the seeds. The same spec with
`loop: crius` runs through `artist sweep` (artist/sweep/crius.py: one results row per policy and seed);
this command reads that field too and prints the seed-averaged table beside the paper's figures.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
from pathlib import Path

from artist.errors import InputError
from artist.crius.simulation import POLICIES, crius_fabrics, simulate
from artist.crius.truth import GroundTruth
from artist.policies.crius.catalogue import Catalogue
from artist.policies.crius.cluster import CLUSTERS, crius_cluster
from artist.crius.workload import crius_jobs, philly_jobs
from artist.yamlio import Fields, load_yaml_mapping

MAX_JOBS = 100_000  # a spec asking for more is refused (the run would not end in reasonable time)

# Crius Fig. 16 (1,280 GPUs, Philly): Crius' average JCT reduction vs each baseline (sec. 8.3 text) and
# sec. 8.2's estimator accuracy; real published figures.
PAPER = {"avg_jct_reduction": {"fcfs": 0.813, "elasticflow-ls": 0.758, "gandiva-crius": 0.801, "gavel": 0.664},
         "avg_throughput_up_to": 1.54, "peak_throughput_up_to": 1.57, "restarts_per_job": 2.29,
         "estimation_accuracy_avg": 0.934, "estimation_accuracy_worst": 0.905, "tuning_accuracy": 0.962,
         "decision_s_per_job": (0.88, 5.98)}


def read_spec(path: str) -> dict:
    f = Fields(load_yaml_mapping(path), str(path))
    f.unknown_keys({"name", "cluster", "jobs", "arrivals_per_hour", "seeds", "policies", "depth", "notes",
                    "philly_log", "loop", "report", "reduced"})
    if f.string("loop", "crius") != "crius":
        raise f.error("loop", "this runner takes Crius specs only (loop: crius)")
    philly = None
    if f.has("philly_log"):
        philly = Path(path).parent / f.string("philly_log")
        if not philly.is_file():
            raise f.error("philly_log", f"no such file: {philly}")
    cluster = f.string("cluster")
    if cluster not in CLUSTERS:
        raise f.error("cluster", f"unknown cluster {cluster!r}; known: {', '.join(CLUSTERS)}")
    seeds = f.raw("seeds")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                           for s in seeds):
        raise f.error("seeds", f"expected a non-empty list of integers, got {seeds!r}")
    policies = f.raw("policies")
    if not isinstance(policies, list) or not policies or any(p not in POLICIES for p in policies):
        raise f.error("policies", f"expected a list of {', '.join(POLICIES)}, got {policies!r}")
    return {"name": f.string("name"), "cluster": cluster, "jobs": f.integer("jobs", minimum=1, maximum=MAX_JOBS),
            "arrivals_per_hour": f.number("arrivals_per_hour", positive=True, maximum=1e6),
            "seeds": seeds, "policies": policies, "depth": f.integer("depth", 3, minimum=0, maximum=10),
            "philly_log": str(philly) if philly else None}


def run(spec: dict, jobs_override: int | None = None) -> dict:
    pools = crius_cluster(spec["cluster"])
    count = jobs_override or spec["jobs"]
    rows: dict[str, list[dict]] = {p: [] for p in spec["policies"]}
    for seed in spec["seeds"]:
        catalogue = Catalogue(pools, crius_fabrics(pools))
        truth = GroundTruth(catalogue.fabrics)
        if spec["philly_log"]:
            jobs = philly_jobs(spec["philly_log"], pools, catalogue, count, seed, truth)
        else:
            jobs = crius_jobs(pools, catalogue, count, seed, spec["arrivals_per_hour"], truth)
        for policy in spec["policies"]:
            rows[policy].append(simulate(pools, jobs, policy, spec["depth"], catalogue, truth).summary())
    table = {}
    for policy, summaries in rows.items():
        table[policy] = {k: statistics.fmean(s[k] for s in summaries) for k in summaries[0]
                         if isinstance(summaries[0][k], (int, float))}
    return {"spec": spec, "jobs": count, "table": table}


def _fmt(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def report(result: dict) -> str:
    table = result["table"]
    crius = table.get("crius")
    lines = ["| policy | avg JCT h | median JCT h | avg queue h | avg thr | peak thr | restarts/job | finished | "
             "Crius avg-JCT reduction (ours) | (paper, Fig. 16) |", "|" + "---|" * 10]
    for policy, row in table.items():
        red = 1 - crius["avg_jct_h"] / row["avg_jct_h"] if crius and policy != "crius" else None
        paper = PAPER["avg_jct_reduction"].get(policy)
        lines.append(f"| {policy} | {_fmt(row['avg_jct_h'])} | {_fmt(row['median_jct_h'])} | "
                     f"{_fmt(row['avg_queue_h'])} | {_fmt(row['avg_throughput'])} | {_fmt(row['peak_throughput'])} | "
                     f"{_fmt(row['restarts_per_job'])} | {_fmt(row['finished'])} | {_fmt(red)} | {_fmt(paper)} |")
    if crius:
        lines.append("")
        lines.append(f"Crius estimation accuracy: avg {_fmt(crius['estimation_accuracy_avg'])} (paper 0.934), worst "
                     f"{_fmt(crius['estimation_accuracy_min'])} (paper 0.905); on packed placements "
                     f"({_fmt(100 * crius['packed_starts'])} % of starts) avg "
                     f"{_fmt(crius['estimation_accuracy_packed_avg'])}, worst "
                     f"{_fmt(crius['estimation_accuracy_packed_min'])}; tuning accuracy "
                     f"{_fmt(crius['tuning_accuracy_avg'])} (paper 0.962); scheduler "
                     f"{_fmt(crius['decision_s_per_job'])} s per job (paper 0.88-5.98)")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m artist.crius.sweep")
    parser.add_argument("spec")
    parser.add_argument("--out")
    parser.add_argument("--jobs", type=int, help="override the spec's job count (a reduced run)")
    parser.add_argument("--cluster", help="override the spec's cluster (e.g. crius-testbed)")
    parser.add_argument("--rate", type=float, help="override the spec's arrivals_per_hour")
    args = parser.parse_args(argv)
    try:
        spec = read_spec(args.spec)
        if args.cluster is not None:
            if args.cluster not in CLUSTERS:
                raise InputError("--cluster", None, f"unknown cluster {args.cluster!r}; known: {', '.join(CLUSTERS)}")
            spec["cluster"] = args.cluster
        if args.rate is not None:
            if not 0 < args.rate <= 1e6:
                raise InputError("--rate", None, f"must be in (0, 1e6], got {args.rate}")
            spec["arrivals_per_hour"] = args.rate
        if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
            raise InputError("--jobs", None, f"must be in 1..{MAX_JOBS}, got {args.jobs}")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    result = run(spec, args.jobs)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["wall_s"] = time.perf_counter() - t0
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    print(report(result))
    print(f"\n{result['jobs']} jobs x {len(spec['seeds'])} seeds: {result['wall_s']:.0f} s wall, "
          f"{result['cpu_s']:.0f} CPU-s")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
