"""Sia's policy wall time per 60 s round at 64, 512 and 2 048 GPUs (paper: 96 ms median, 426 ms p95 at 64
GPUs; about 1 s at 2 048, Fig. 9; digest 2.6).

    PYTHONPATH=. python benchmarks/sia_round.py [--scales 1 8 32] [--rounds 5] [--jobs-per-gpu 0.5] [--tiny]

--tiny: seconds, for the test that keeps the script working (64 GPUs, 8 jobs, 2 rounds).

Cluster: Sia's 64-GPU mix (topologies/clusters/sia-hetero-64.yaml: 6 t4 x 4, 3 rtx x 8, 2 a100 x 8) times
each scale. Jobs: GPUs x jobs-per-gpu active jobs, the applications of Sia's Philly workload in turn; every
(job, type) agent carries a model fitted to measured iterations of that application on that type (1, 2, 4
and 8 GPUs from the ground-truth timer; one fit per (application, type), shared), a most-GPUs-held drawn
from {1, 2, 4, 8, 16} (so the caps and hence the options differ) and the 1-GPU profile. Round 1 starts with
every job pending; each later round starts from the previous allocation (kept placements, restart
factors, a few jobs marked mid-restart). Prints per scale: median and p95 wall seconds of allocate()
and CPU seconds of allocate() over the rounds, its phases (options / ILP / placement, wall), the ILP's binaries.
Nothing is asserted; the machine may be loaded (compare CPU seconds).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from artist.elastic.applications import heterogeneous_applications  # noqa: E402
from artist.elastic.cluster import CLUSTERS_DIR, ElasticCluster, PooledStepTimer, load_cluster  # noqa: E402
from artist.policies.pollux.agent import PolluxAgent  # noqa: E402
from artist.policies.pollux.scheduler import JobView  # noqa: E402
from artist.policies.sia.scheduler import SiaScheduler  # noqa: E402
from artist.workload import load_models  # noqa: E402
from artist.workload.traces.pollux import APPLICATIONS  # noqa: E402

MIX = ("cifar10", "cifar10", "cifar10", "cifar10", "deepspeech2", "bert", "yolov3", "imagenet")  # Philly-like


def scaled(cluster: ElasticCluster, factor: int) -> ElasticCluster:
    import dataclasses
    pools = [dataclasses.replace(p, topology=dataclasses.replace(
        p.topology, machines_per_rack=p.topology.machines_per_rack * factor)) for p in cluster.pools]
    return ElasticCluster.of(f"{cluster.name}x{factor}", pools)


def fitted_agents(cluster, apps, timer):
    """One agent per (application, type) fitted to ground-truth iterations on 1, 2, 4 and 8 GPUs."""
    out = {}
    for name, (app, spec) in apps.items():
        sqr, var = app.replay.grad_stats(float(app.replay.batches[0]), 0)
        for pool in cluster.pools:
            t, per = pool.gpu_type, pool.topology.gpus_per_machine
            agent = PolluxAgent(spec, t)
            limit = spec.limit(t)
            for k in (1, 2, 4, 8):
                shape = [per] * (k // per) + ([k % per] if k % per else [])
                for m in sorted({limit.min_local, (limit.min_local + limit.max_local) // 2, limit.max_local}):
                    it, _ = timer.seconds(name, t, shape, m, 0)
                    agent.observe(len(shape), k, m, 0, it, None, sqr, var)
            agent.params  # fit now
            out[name, t] = agent
    return out


def views(jobs, cluster, allocation, restarting, rng):
    out = []
    for i, (job_id, agents, profile, most) in enumerate(jobs):
        row = allocation.get(job_id, np.zeros(len(cluster.capacity), dtype=int))
        types = {cluster.node_types[k] for k in np.flatnonzero(row)}
        out.append(JobView(job_id, next(iter(agents.values())), row, age=3600.0 + 60 * i, restarts=int(rng.integers(3)),
                           attained=0.0, submitted=0.0, agents=agents, gpu_type=types.pop() if types else "",
                           restarting=job_id in restarting and bool(row.sum()), restart_seconds=30.0,
                           category="adaptive", profile=profile))
    return out


def _cpu() -> float:
    """CPU seconds of this process, every thread (HiGHS may use several), user + system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bench(factor: int, rounds: int, jobs_per_gpu: float, base, apps, fits, timer) -> dict:
    import copy
    rng = np.random.default_rng(factor)
    cluster = scaled(base, factor)
    n_jobs = max(1, int(cluster.gpus * jobs_per_gpu))
    jobs = []
    for i in range(n_jobs):
        name = MIX[i % len(MIX)]
        most = int(rng.choice([1, 2, 4, 8, 16]))
        agents = {}
        for t in cluster.gpu_types:
            a = copy.copy(fits[name, t])
            a.most_gpus = most
            a._cache = {}
            agents[t] = a
        profile = {t: {apps[name][1].limit(t).max_local: timer.seconds(name, t, [1], apps[name][1].limit(t).max_local,
                                                                        0)[0]} for t in cluster.gpu_types}
        jobs.append((f"j{i}", agents, profile, most))
    sched = SiaScheduler(cluster.capacity, cluster.node_types)
    allocation: dict = {}
    walls, cpus, phases = [], [], []
    for _ in range(rounds):
        restarting = {j for j in allocation if rng.random() < 0.1}
        vs = views(jobs, cluster, allocation, restarting, rng)
        t0, c0 = time.perf_counter(), _cpu()
        allocation = sched.allocate(vs)
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
        phases.append(dict(sched.last_timing))
    return {"gpus": cluster.gpus, "jobs": n_jobs, "median_s": round(float(np.median(walls)), 4),
            "p95_s": round(float(np.percentile(walls, 95)), 4),
            "options_s": round(float(np.median([p["options"] for p in phases])), 4),
            "ilp_s": round(float(np.median([p["ilp"] for p in phases])), 4),
            "place_s": round(float(np.median([p["place"] for p in phases])), 4),
            "binaries": int(np.median([p["variables"] for p in phases])),
            "cpu_median_s": round(float(np.median(cpus)), 4), "cpu_p95_s": round(float(np.percentile(cpus, 95)), 4),
            "gpus_allocated_last": int(sum(int(np.asarray(r).sum()) for r in allocation.values()))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 8, 32], help="multiples of the 64-GPU mix")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs-per-gpu", type=float, default=0.5)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    if args.tiny:  # the mix once through (8 jobs); a second round starts from the first's allocation
        args.scales, args.rounds, args.jobs_per_gpu = [1], 2, len(MIX) / 64
    base = load_cluster(CLUSTERS_DIR / "sia-hetero-64.yaml")
    apps = heterogeneous_applications()
    models = load_models()
    timer = PooledStepTimer(base, {k: a for k, (a, _) in apps.items()}, {k: models[APPLICATIONS[k][0]] for k in apps})
    fits = fitted_agents(base, apps, timer)
    for factor in args.scales:
        print(json.dumps(bench(factor, args.rounds, args.jobs_per_gpu, base, apps, fits, timer)), flush=True)


if __name__ == "__main__":
    main()
