"""Runs of the elastic loop on a multi-type cluster file (artist/elastic/cluster.py), for sweeps/sia.yaml
and benchmarks/sia_sweep.py.

    policy name -> (build(cluster, seed, context, **params) -> (allocator, cluster as the policy sees it),
                    job columns)

- sia:    SiaScheduler (p, lam) on the real nodes; jobs elastic (the workload's columns ignored)
- pollux: PolluxScheduler (p, delta, pop_size, generations) on 4-GPU virtual nodes, as Sia's artifact runs
          Pollux on a mixed cluster (8-GPU machines shown as two 4-GPU nodes; a mixed-type allocation runs
          on its dominant type, artist/elastic/simulation.py); jobs elastic
- gavel:  GavelPolicy of artist/policies/gavel/ with its IsolatedProfiler; jobs "both" (the workload's
          TunedJobs GPU count and batch); its own round length (360 s) through the allocator's `round_seconds`
The result carries IsolatedTimes (artist/elastic/fairness_hetero.py): its summary adds Sia's
heterogeneous finish-time fairness (worst rho, unfair fraction, mean).
The context gives a builder the applications, the jobs and a step timer for the cluster it will see.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from artist.elastic.applications import heterogeneous_applications
from artist.elastic.cluster import ElasticCluster, PooledStepTimer
from artist.elastic.fairness_hetero import IsolatedTimes
from artist.elastic.simulation import ElasticJobSpec, ElasticResult, ElasticSimulation
from artist.errors import InputError
from artist.policies.pollux.scheduler import PolluxScheduler
from artist.policies.sia.scheduler import SiaScheduler
from artist.workload import load_models
from artist.workload.traces.pollux import APPLICATIONS

MAX_JOBS = 100_000  # a workload file larger than this is not one of the artifact's (160 or 960 jobs)


@dataclass
class RunContext:
    apps: dict
    jobs: list
    models: dict = field(default_factory=dict)

    def timer_for(self, cluster: ElasticCluster) -> PooledStepTimer:
        return PooledStepTimer(cluster, {k: a for k, (a, _) in self.apps.items()},
                               {k: self.models[APPLICATIONS[k][0]] for k in self.apps})


def _sia(cluster: ElasticCluster, seed: int, ctx: RunContext, p: float = -0.5, lam: float = 1.1):
    return SiaScheduler(cluster.capacity, cluster.node_types, p=p, lam=lam), cluster


def _pollux(cluster: ElasticCluster, seed: int, ctx: RunContext, p: float = -1.0, delta: float = 30.0,
            pop_size: int = 100, generations: int = 100):
    seen = cluster.virtual(4)
    return PolluxScheduler(seen.capacity, p=p, delta=delta, pop_size=pop_size, generations=generations,
                           seed=seed), seen


def _gavel(cluster: ElasticCluster, seed: int, ctx: RunContext, objective: str = "max_sum_throughput",
           tuned_jobs: bool = True):
    from artist.elastic.profiling import IsolatedProfiler
    from artist.policies.gavel.policy import GavelPolicy

    if tuned_jobs is not True:
        raise ValueError("policy gavel: only TunedJobs (the workload's GPU count and batch) is wired")
    profiler = IsolatedProfiler(ctx.timer_for(cluster), ctx.apps, ctx.jobs,
                                {p.gpu_type: p.topology.gpus_per_machine for p in cluster.pools})
    return GavelPolicy(cluster.capacity, cluster.node_types, profiler, objective=objective), cluster


@dataclass(frozen=True)
class HeteroPolicy:
    build: Callable
    job_columns: str    # "none": elastic; "both": the workload's GPU count and batch (TunedJobs)


POLICIES: dict[str, HeteroPolicy] = {
    "sia": HeteroPolicy(_sia, "none"),
    "pollux": HeteroPolicy(_pollux, "none"),
    "gavel": HeteroPolicy(_gavel, "both"),
}


def read_jobs(path: str | Path, columns: str, limit: int | None = None) -> list[ElasticJobSpec]:
    """An artifact workload CSV (name, time, application, num_replicas, batch_size)."""
    path = Path(path)
    jobs = []
    try:
        fh = open(path, newline="")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read: {exc.strerror}") from None
    with fh:
        reader = csv.DictReader(fh)
        need = {"name", "time", "application", "num_replicas", "batch_size"}
        if not need <= set(reader.fieldnames or ()):
            raise InputError(str(path), "header", f"expected columns {', '.join(sorted(need))}")
        for lineno, row in enumerate(reader, start=2):
            if len(jobs) >= MAX_JOBS:
                raise InputError(str(path), f"line {lineno}", f"more than {MAX_JOBS} jobs")
            if limit is not None and len(jobs) >= limit:
                break
            try:
                arrival, gpus, batch = float(row["time"]), int(row["num_replicas"]), int(row["batch_size"])
            except (TypeError, ValueError):
                raise InputError(str(path), f"line {lineno}", "time, num_replicas and batch_size must be numbers") \
                    from None
            if not arrival >= 0 or gpus < 1 or batch < 1:
                raise InputError(str(path), f"line {lineno}", "need time >= 0, num_replicas >= 1, batch_size >= 1")
            both = columns == "both"
            jobs.append(ElasticJobSpec(row["name"], arrival, row["application"], gpus=gpus if both else 0,
                                       batch=batch if both else 0))
    return jobs


def run(cluster: ElasticCluster, policy: str, jobs: list[ElasticJobSpec], seed: int = 0,
        round_seconds: float = 60.0, **params) -> tuple[ElasticResult, object]:
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} for a multi-type cluster (known: {', '.join(POLICIES)})")
    apps = heterogeneous_applications()
    unknown = sorted({j.app for j in jobs} - set(apps))
    if unknown:
        raise ValueError(f"no measured tables for application(s) {', '.join(unknown)}")
    ctx = RunContext(apps, list(jobs), load_models())
    allocator, seen = POLICIES[policy].build(cluster, seed, ctx, **params)
    machines = [(n.pool, n.machine) for n in seen.nodes]
    sim = ElasticSimulation(seen.capacity, seen.node_types, jobs, apps, ctx.timer_for(seen), allocator,
                            round_seconds=float(getattr(allocator, "round_seconds", round_seconds)),
                            node_machines=machines)
    result = sim.run()
    # Sia's heterogeneous finish-time fairness in the summary, on the real machines whatever the policy saw
    result.isolated = IsolatedTimes(ctx.timer_for(cluster), {p.gpu_type: p.topology.gpus for p in cluster.pools},
                                    {p.gpu_type: p.topology.gpus_per_machine for p in cluster.pools})
    return result, allocator
