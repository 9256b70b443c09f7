"""Hand-built scheduler views for the policy tests: jobs in a stated state at a stated time."""

from __future__ import annotations

from artist.cluster import FreeMap
from artist.jobstate import RUNNING, WAITING, JobState
from artist.network.analytical import AnalyticalModel
from artist.perf.model import as_perf_model
from artist.placement import Placement
from artist.policies.base import SchedulerView
from artist.workload import Job, ModelProfile

# Skews: "spread" 1/10 (ten equal tensors), "skewed" 9/10 (one tensor holds 90 %).
# 0.1 s of compute per iteration on the reference GPU.
LOW_SKEW = ModelProfile("spread", (10_000_000,) * 10, 0.1, "A100")
HIGH_SKEW = ModelProfile("skewed", (90_000_000, 10_000_000), 0.1, "A100")
# One 100 MB bucket ready at the end of backward: its all-reduce is fully exposed,
# so a spread placement is clearly slower than a one-machine placement.
EXPOSED = ModelProfile("exposed", (100_000_000,), 0.1, "A100", bucket_cap_bytes=100_000_000)


def waiting(job_id: str, gpus: int, since: float, model: ModelProfile = LOW_SKEW, arrival: float | None = None,
            iterations: int = 10_000, ran_seconds: float = 0.0, done: float = 0.0) -> JobState:
    """A job in the wait queue since `since`; if ran_seconds > 0 it ran before and did `done` iterations."""
    s = JobState(Job(job_id, since if arrival is None else arrival, model.name, gpus, iterations), model)
    s.status = WAITING
    s.waiting_since = since
    s.ran_seconds = ran_seconds
    s.anchor_iterations = done
    if ran_seconds > 0:
        s.first_start = s.arrival
    return s


def running(job_id: str, gpus: tuple[int, ...], topology, started_at: float, iteration_seconds: float,
            model: ModelProfile = LOW_SKEW, arrival: float | None = None, iterations: int = 10_000,
            ran_before: float = 0.0, done_before: float = 0.0) -> JobState:
    """A job that (re)started at `started_at` on `gpus`, progressing at 1 / iteration_seconds from then
    (no restore pending), after `ran_before` seconds and `done_before` iterations in earlier runs."""
    s = JobState(Job(job_id, started_at if arrival is None else arrival, model.name, len(gpus), iterations), model)
    s.status = RUNNING
    s.placement = Placement(topology, tuple(gpus))
    s.iteration_seconds = iteration_seconds
    s.anchor_time = s.resume_at = s.started_at = started_at
    s.anchor_iterations = done_before
    s.ran_seconds = ran_before
    s.first_start = s.arrival
    return s


def view(topology, now: float, waiting_jobs=(), running_jobs=(), restore_seconds: float = 30.0,
         fabric=None) -> SchedulerView:
    free = FreeMap(topology)
    for s in running_jobs:
        free.take(s.placement.gpus)
    return SchedulerView(now, topology, list(waiting_jobs), list(running_jobs), free,
                         as_perf_model(fabric or AnalyticalModel(topology), topology), restore_seconds)


def fill(topology, gpus: tuple[int, ...], job_id: str = "filler", started_at: float = 0.0,
         iteration_seconds: float = 0.1, **kw) -> JobState:
    """A running job that just occupies GPUs."""
    return running(job_id, gpus, topology, started_at, iteration_seconds, **kw)


def loaded_outcomes(policy, seed: int, gpu_choices=(1, 2, 4, 8, 16, 32),
                    topology_file: str = "dally-3tier.yaml") -> list[tuple]:
    """Every job's (id, finish, preemptions, migrations, [(start, GPUs) of each placement]) after 300
    Poisson jobs of the shipped models on 2 racks of a shipped topology: loaded enough that jobs queue and
    policies preempt and migrate. For comparing a policy with a reference version of itself."""
    from pathlib import Path

    from artist.simulator import SimulatorConfig, simulate
    from artist.topology import load_topology
    from artist.workload import JobMix, load_models, poisson_jobs

    root = Path(__file__).resolve().parent.parent
    topo = load_topology(root / "topologies" / topology_file, racks=2)
    models = load_models(root / "workloads" / "models")
    mix = JobMix(tuple(sorted(models)), gpu_choices=gpu_choices, min_iterations=500, max_iterations=50_000)
    jobs = poisson_jobs(300, mix, 20.0, seed)
    result = simulate(topo, jobs, models, policy, AnalyticalModel(topo), SimulatorConfig(check_invariants=True))
    return [(s.job_id, s.finish, s.preemptions, s.migrations, [(r.time, r.gpus) for r in s.history])
            for s in result.jobs]
