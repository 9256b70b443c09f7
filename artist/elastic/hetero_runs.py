"""Runs of the elastic loop on a multi-type cluster file (artist/elastic/cluster.py) outside a sweep, for
benchmarks/sia_sweep.py and tests. The policies are those of the one elastic registry
(artist/policies/pollux/registry.py: sia, pollux on 4-GPU virtual nodes, gavel with its IsolatedProfiler,
optimus-oracle, tiresias); `artist sweep` with `loop: elastic` runs the same thing (artist/sweep/elastic.py).
The result carries IsolatedTimes (artist/elastic/fairness_hetero.py): its summary adds Sia's
heterogeneous finish-time fairness (worst rho, unfair fraction, mean).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from artist.elastic.applications import heterogeneous_applications
from artist.elastic.cluster import ElasticCluster, PooledStepTimer
from artist.elastic.fairness_hetero import IsolatedTimes
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.elastic.result import ElasticResult
from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.policies.pollux.registry import ELASTIC_POLICIES, PolicyContext, make_elastic_policy
from artist.workload import load_models
from artist.workload.traces.pollux import APPLICATIONS

MAX_JOBS = 100_000  # a workload file larger than this is not one of the artifact's (160 or 960 jobs)
POLICIES = ELASTIC_POLICIES  # the one registry (name -> entry with build and job_config)


@dataclass
class RunContext:
    apps: dict
    jobs: list
    models: dict = field(default_factory=dict)

    def timer_for(self, cluster: ElasticCluster) -> PooledStepTimer:
        return PooledStepTimer(cluster, {k: a for k, (a, _) in self.apps.items()},
                               {k: self.models[APPLICATIONS[k][0]] for k in self.apps})

    def policy_context(self, cluster: ElasticCluster) -> PolicyContext:
        """With each pool's network model (the analytical one, as the step timer's): Crius profiles its
        CommTables on it."""
        return PolicyContext(self.apps, self.jobs, self.timer_for,
                             {k: self.models[APPLICATIONS[k][0]] for k in self.apps},
                             {p.gpu_type: AnalyticalModel(p.topology) for p in cluster.pools})


def read_jobs(path: str | Path, columns: str, limit: int | None = None) -> list[ElasticJobSpec]:
    """An artifact workload CSV (name, time, application, num_replicas, batch_size); columns is the policy's
    job_config (which of GPU count and batch the jobs keep)."""
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
            jobs.append(ElasticJobSpec(row["name"], arrival, row["application"],
                                       gpus=gpus if columns == "both" else 0,
                                       batch=batch if columns in ("both", "batch") else 0))
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
    allocator, seen = make_elastic_policy(policy, params, cluster, seed, ctx.policy_context(cluster))
    result = simulate_elastic(seen, jobs, apps, ctx.timer_for(seen), allocator,
                              float(getattr(allocator, "round_seconds", round_seconds)))
    # Sia's heterogeneous finish-time fairness in the summary, on the real machines whatever the policy saw
    result.isolated = IsolatedTimes(ctx.timer_for(cluster), {p.gpu_type: p.topology.gpus for p in cluster.pools},
                                    {p.gpu_type: p.topology.gpus_per_machine for p in cluster.pools})
    return result, allocator
