"""A cluster of elastic jobs under the Pollux scheduler, in 60 s rounds (both the Pollux and the Sia
artifacts step time this way; within a round each job's progress is exact, stopping at restarts,
epoch boundaries and completion).

Every round: jobs that arrived join; the scheduler (artist/policies/pollux/scheduler.py) allocates GPUs
per node from the agents' fitted models; a job whose allocation changed restarts (its restart delay,
not for its first start) and its agent picks (m, s) for the new allocation; then each running job
advances for the round at its true iteration time (StepTimer: measured compute + ArtISt's network for
the synchronisation), re-tuning (m, s) at every epoch end. After running in a configuration the job's
agent is told what the job measured: the iteration time, one pass's compute time when s >= 1, and the
gradient statistics of the current epoch (what the job's own noise-scale estimator reports). The agents
and the scheduler see nothing else: not the StepTimer, not the network model, not the tables.

Several GPU types (Sia, artist/elastic/cluster.py): `gpu_type` may be one type per node instead of one
name. A job then runs on one type at a time: the type of its allocation, or for a mixed-type allocation
(which only a heterogeneity-unaware policy makes) the type holding most of its GPUs, ties to the faster
type (Sia's artifact's rule for Pollux on a mixed cluster). Each job has one PolluxAgent per type (its
per-(job, type) throughput model); the JobView carries them all (`agents`), with `agent` the current
type's. With `profiling` (default: the scheduler's `wants_profiles`), a new job is first profiled on one
GPU of every type at PROFILE_BATCHES local batches (Sia section 3.2), the measured iteration times go to
that type's agent and to the view (`profile`), and the GPU time is charged to the job. `node_machines`
(optional) names the physical machine of every node, so virtual nodes of one machine count as one node
for the agents' models.

Contention: by default every job is timed alone (isolated). With a SharedContention
(artist/elastic/contention.py; a sweep's `elastic: {contention: shared}`), every round, after the allocation is
applied, jobs that may share links are timed together: a job in a component of two or more runs the round at
accum_steps x compute + its shared step, and that is what its agent observes (policies learn from observation
only). A job that re-tunes (m, s) within the round keeps the round's contention ratio (shared / alone step at
the round's start) on its new step alone until the next round re-times its component (a stated
approximation: the co-simulation is per round). Every job records its iterations' time at the shared rate
and alone (contention_slowdown, as the rigid loop's JobState).

What happens inside a job (admission, profiling, tuning, restarts, training spans) is
artist/elastic/jobs.py, shared with the exact event loop (artist/simulator.py), which runs the same jobs and
allocators with events at every restart end, epoch end and completion (artist/elastic/allocators.py).
"""

from __future__ import annotations

import math
import time as wallclock
from typing import Mapping, Protocol, Sequence

import numpy as np

from artist.elastic.contention import SharedContention
from artist.elastic.result import ElasticResult
from artist.elastic.jobs import (FASTER_TYPES, PROFILE_BATCHES, PROFILE_ITERATIONS, ElasticJob, ElasticJobs,
                                 ElasticJobSpec, StepTimer)
from artist.elastic.measured import MeasuredApplication
from artist.elastic.spec import ElasticSpec
from artist.policies.pollux.scheduler import JobView, PolluxScheduler

__all__ = ["ElasticSimulation", "ElasticResult", "ElasticJob", "ElasticJobSpec", "StepTimer", "FASTER_TYPES",
           "PROFILE_BATCHES", "PROFILE_ITERATIONS", "ROUND_SECONDS"]

ROUND_SECONDS = 60.0          # Pollux's scheduling interval (paper section 5; digest 1.4)
MAX_ROUNDS = 1_000_000        # a run that has not finished by then is refused, not looped forever


class Allocator(Protocol):
    def allocate(self, jobs: Sequence[JobView]) -> dict[str, np.ndarray]: ...


class ElasticSimulation:
    def __init__(self, capacity: Sequence[int], gpu_type: str | Sequence[str], jobs: Sequence[ElasticJobSpec],
                 apps: Mapping[str, tuple[MeasuredApplication, ElasticSpec]], timer: StepTimer,
                 scheduler: PolluxScheduler | Allocator, round_seconds: float = ROUND_SECONDS,
                 node_machines: Sequence | None = None, profiling: bool | None = None,
                 contention: SharedContention | None = None):
        profiling = bool(getattr(scheduler, "wants_profiles", False)) if profiling is None else profiling
        self.jobs = ElasticJobs(capacity, gpu_type, jobs, apps, timer, node_machines, profiling, contention)
        self.capacity = self.jobs.capacity
        self.timer, self.scheduler = timer, scheduler
        self.contention = contention
        self.round_seconds = float(round_seconds)
        self.pending = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
        self.active: list[ElasticJob] = []
        self.done: list[ElasticJob] = []

    def run(self) -> ElasticResult:
        policy_seconds: list[float] = []
        policy_cpu: list[float] = []   # CPU next to wall: on a shared machine the wall time says little
        now, rounds = 0.0, 0
        total = len(self.pending)
        oracle = bool(getattr(self.scheduler, "wants_oracle", False))  # Optimus+Oracle: exact work left
        while len(self.done) < total:
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise RuntimeError(f"elastic simulation did not finish in {MAX_ROUNDS} rounds")
            while self.pending and self.pending[0].arrival <= now:
                self.active.append(self.jobs.admit(self.pending.pop(0)))
            if not self.active:
                now = math.ceil(self.pending[0].arrival / self.round_seconds) * self.round_seconds
                continue
            views = [self.jobs.view(j, now, oracle) for j in self.active]
            started, started_cpu = wallclock.perf_counter(), wallclock.process_time()
            wanted = self.scheduler.allocate(views)
            policy_seconds.append(wallclock.perf_counter() - started)
            policy_cpu.append(wallclock.process_time() - started_cpu)
            for job in self.active:
                new = np.asarray(wanted[job.spec.job_id], dtype=int)
                if not np.array_equal(new, job.alloc):
                    self.jobs.allocate(job, new)
            if self.contention is not None:
                self.jobs.share_round([j for j in self.active if j.gpus])
            for job in self.active:
                if job.gpus:
                    self.jobs.round_start(job, now)
                    before = job.progress.progress
                    left = self.jobs.run(job, self.round_seconds)
                    if job.progress.done:
                        job.finish = now + (self.round_seconds - left)
                    job.round_progress.append(job.progress.progress - before)
            for job in [j for j in self.active if j.progress.done]:
                self.active.remove(job)
                self.done.append(job)
            now += self.round_seconds
        jobs = sorted(self.done, key=lambda j: j.spec.job_id)
        makespan = max(j.finish for j in jobs) if jobs else 0.0
        return ElasticResult(jobs, makespan, rounds, policy_seconds, policy_cpu_seconds=policy_cpu,
                             contention="isolated" if self.contention is None else "shared",
                             components=(0, 0) if self.contention is None else
                             (self.contention.components_asked, self.contention.components_timed))
