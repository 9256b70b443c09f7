"""A whole Pollux run: the artifact's 160-job workload on the 64-GPU T4 cluster, with its wall time.

    PYTHONPATH=. python benchmarks/pollux_run.py [--policy pollux|optimus-oracle|tiresias-pollux|gavel|sia]
        [--realistic] [--workload 6] [--jobs 160] [--pop 100] [--gen 100] [--seed 0] [--tiny]

--tiny: seconds, for the test that keeps the script working (the first 2 jobs, a 6 x 3 genetic search).

Jobs: workloads/pollux/workloads/workload-<i>.csv (name, arrival, application; the file's GPU count and
batch are the TunedJobs settings, which Tiresias+TunedJobs runs, Optimus+Oracle+TunedJobs takes the batch
of, and Pollux ignores); --realistic: workloads-realistic/ (the trace's GPU count, batch M0 x GPUs).
Policies by name as a sweep names them (the one elastic registry, artist/policies/pollux/registry.py; gavel
runs its TunedJobs settings only). Cluster: topologies/pollux-t4.yaml.
Ground truth: measured compute + ArtISt's analytical network (artist/elastic/steptime.py). Prints the
summary (average and p99 JCT, makespan, restarts per job, median policy seconds per round), the whole run's
wall time and CPU seconds of the process (on a shared machine wall time alone says little), and the policy's
CPU seconds per 60 s round (median, p95, max, total); the issue's target is <= 10 min on 2 cores.
Pollux's Table 2 (testbed, workload 6): average JCT 0.76 h, p99 11 h, makespan 16 h; Tiresias+TunedJobs
1.2 h, 15 h, 24 h. Nothing is asserted.
"""

from __future__ import annotations

import os

# One BLAS thread: the agents' L-BFGS-B fits are 7-parameter problems, and OpenBLAS's threads made them
# 20x slower on 2 busy cores (measured: 5 fits 2.95 s vs 0.14 s). Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from artist.elastic.applications import POLLUX_DIR, pollux_applications  # noqa: E402
from artist.elastic.cluster import ElasticCluster, Pool  # noqa: E402
from artist.elastic.exact import simulate_elastic  # noqa: E402
from artist.elastic.jobs import ElasticJobSpec  # noqa: E402
from artist.elastic.steptime import NetworkStepTimer  # noqa: E402
from artist.network.analytical import AnalyticalModel  # noqa: E402
from artist.policies.pollux.registry import ELASTIC_POLICIES, PolicyContext, make_elastic_policy  # noqa: E402
from artist.shipped import TOPOLOGIES_DIR  # noqa: E402
from artist.topology import load_topology  # noqa: E402
from artist.workload import load_models  # noqa: E402
from artist.workload.traces.pollux import APPLICATIONS  # noqa: E402


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", choices=sorted(ELASTIC_POLICIES), default="pollux")
    ap.add_argument("--realistic", action="store_true", help="baselines: the realistic, not the TunedJobs, configs")
    ap.add_argument("--workload", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=160, help="the first N jobs of the workload")
    ap.add_argument("--pop", type=int, default=100)
    ap.add_argument("--gen", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    if args.tiny:  # the same run of the same policy, on two jobs (the workload's first arrive within minutes)
        args.jobs, args.pop, args.gen = 2, 6, 3
    topology = load_topology(TOPOLOGIES_DIR / "pollux-t4.yaml")
    models = load_models()
    apps = pollux_applications()
    timer = NetworkStepTimer(topology, AnalyticalModel(topology), {k: a for k, (a, _) in apps.items()},
                             {k: models[APPLICATIONS[k][0]] for k in apps})
    folder = "workloads-realistic" if args.realistic else "workloads"
    with open(POLLUX_DIR / folder / f"workload-{args.workload}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))[:args.jobs]
    config = ELASTIC_POLICIES[args.policy].job_config  # what the policy takes of a row
    jobs = [ElasticJobSpec(r["name"], float(r["time"]), r["application"],
                           gpus=int(r["num_replicas"]) if config == "both" else 0,
                           batch=int(r["batch_size"]) if config != "none" else 0)
            for r in rows]
    cluster = ElasticCluster.of(topology.name, [Pool("t4", topology)])
    # tuned_jobs only where the policy takes it (Crius' fcfs and elasticflow-ls take no parameters)
    params = {"pop_size": args.pop, "generations": args.gen} if args.policy == "pollux" else \
        {"tuned_jobs": not args.realistic} if "tuned_jobs" in ELASTIC_POLICIES[args.policy].params else {}
    policy, seen = make_elastic_policy(args.policy, params, cluster, seed=args.seed,
                                       context=PolicyContext(apps, jobs, lambda _cluster: timer, timer.profiles,
                                                             {"t4": timer.fabric}))
    start = time.perf_counter()
    cpu0 = _cpu_seconds()
    result = simulate_elastic(seen, jobs, apps, timer, policy, float(getattr(policy, "round_seconds", 60.0)))
    summary = result.summary()
    policy_cpu = np.array(result.policy_cpu_seconds)
    summary.update(wall_s=round(time.perf_counter() - start, 1), cpu_s=round(_cpu_seconds() - cpu0, 1),
                   policy_cpu_s_total=round(float(policy_cpu.sum()), 1),
                   policy_cpu_s_median=round(float(np.median(policy_cpu)), 3) if policy_cpu.size else 0.0,
                   policy_cpu_s_p95=round(float(np.percentile(policy_cpu, 95)), 3) if policy_cpu.size else 0.0,
                   policy_cpu_s_max=round(float(policy_cpu.max()), 3) if policy_cpu.size else 0.0,
                   rounds=result.rounds, pop=args.pop, gen=args.gen, workload=args.workload, policy=args.policy,
                   realistic=args.realistic)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
