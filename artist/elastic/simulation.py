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

This is not artist/simulator.py (exact events, rigid jobs); elastic jobs are not in that loop yet.
"""

from __future__ import annotations

import dataclasses
import math
import time as wallclock
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

import numpy as np

from artist.elastic.contention import RoundJob, SharedContention
from artist.elastic.fairness_hetero import fairness_fields
from artist.elastic.measured import MeasuredApplication
from artist.elastic.oracle import remaining_iterations
from artist.elastic.progress import ElasticProgress
from artist.elastic.spec import ElasticSpec, clamp_local_batch, split_batch
from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.scheduler import JobView, PolluxScheduler

# Sia's 1-GPU profiling per type (section 3.2: "typically 10 batch sizes", < 20 GPU-seconds per type):
# PROFILE_BATCHES local batches, geometric from the type's smallest to its largest; each is charged
# PROFILE_ITERATIONS iterations (ours, an estimate that lands within the paper's budget for most models).
PROFILE_BATCHES = 10
PROFILE_ITERATIONS = 3
# Ties of a mixed allocation go to the faster type (Sia's artifact: a100 > quad > rtx > t4); others after.
FASTER_TYPES = ("a100", "quad", "rtx", "t4")
ROUND_SECONDS = 60.0          # Pollux's scheduling interval (paper section 5; digest 1.4)
MAX_ROUNDS = 1_000_000        # a run that has not finished by then is refused, not looped forever


class StepTimer(Protocol):
    def seconds(self, app: str, gpu_type: str, per_node: Sequence[int], local_batch: int, accum_steps: int
                ) -> tuple[float, float]: ...


@dataclass(frozen=True)
class ElasticJobSpec:
    """A job of the workload. gpus and batch: a rigid baseline's fixed configuration (the artifact
    workloads' TunedJobs columns); batch alone: a fixed batch whose GPU count the policy picks (Sia's
    strong-scaling class; Optimus+Oracle); 0: the job is elastic (Pollux picks both)."""
    job_id: str
    arrival: float
    app: str
    gpus: int = 0
    batch: int = 0


class Allocator(Protocol):
    def allocate(self, jobs: Sequence[JobView]) -> dict[str, np.ndarray]: ...


@dataclass
class ElasticJob:
    spec: ElasticJobSpec
    app: MeasuredApplication
    elastic: ElasticSpec
    agent: PolluxAgent
    progress: ElasticProgress
    alloc: np.ndarray
    local_batch: int = 0
    accum_steps: int = 0
    attained: float = 0.0         # GPU-seconds held (restarts included, as the artifact)
    finish: float | None = None
    # per round it held GPUs: (time, GPUs, total batch, statistical efficiency at the round's start)
    gpu_rounds: list[tuple[float, int, int, float]] = field(default_factory=list)
    # per round it held GPUs: M0-equivalent steps made in the round (restarts included: 0 progress)
    round_progress: list[float] = field(default_factory=list)
    gpu_type: str = ""            # the type it runs on (or last ran on; pending: the first type)
    agents: dict[str, PolluxAgent] = field(default_factory=dict)   # per GPU type
    profile: dict[str, dict[int, float]] = field(default_factory=dict)  # type -> {m: 1-GPU iteration s}
    profile_gpu_seconds: float = 0.0
    # shared contention: seconds of iterations at the round's (shared) rate, and the same iterations alone
    shared_seconds: float = 0.0
    alone_seconds: float = 0.0

    @property
    def contention_slowdown(self) -> float:
        """Time of the iterations done at the shared rates / the same iterations alone (1: never slowed)."""
        return self.shared_seconds / self.alone_seconds if self.alone_seconds > 0 else 1.0

    @property
    def category(self) -> str:
        """Sia's job classes: rigid (GPUs and batch fixed), strong (batch fixed), adaptive."""
        return "rigid" if self.spec.gpus else "strong" if self.spec.batch else "adaptive"

    @property
    def gpus(self) -> int:
        return int(self.alloc.sum())

    @property
    def batch(self) -> int:
        return self.gpus * self.local_batch * (self.accum_steps + 1)


@dataclass
class ElasticResult:
    jobs: list[ElasticJob]
    makespan: float
    rounds: int
    policy_seconds: list[float]   # wall seconds of every scheduler call
    isolated: object = None       # IsolatedTimes of a multi-type run: adds Sia's FTF to the summary
    policy_cpu_seconds: list[float] = field(default_factory=list)  # this process's CPU seconds of every call
    contention: str = "isolated"  # "shared": jobs tables and summaries carry the contention slowdown
    components: tuple[int, int] = (0, 0)  # shared: components of 2+ met over the rounds, and co-simulated (memo)

    def summary(self) -> dict:
        jct = np.array([j.finish - j.spec.arrival for j in self.jobs])
        return {"jobs": len(self.jobs), "avg_jct_h": float(jct.mean() / 3600),
                "p99_jct_h": float(np.percentile(jct, 99) / 3600), "makespan_h": self.makespan / 3600,
                "avg_restarts": float(np.mean([j.progress.restarts for j in self.jobs])),
                "policy_s_median": float(np.median(self.policy_seconds)) if self.policy_seconds else 0.0,
                "policy_s_p95": float(np.percentile(self.policy_seconds, 95)) if self.policy_seconds else 0.0,
                "gpu_h_per_job": float(np.mean([j.attained + j.profile_gpu_seconds for j in self.jobs]) / 3600),
                **fairness_fields(self)}


class ElasticSimulation:
    def __init__(self, capacity: Sequence[int], gpu_type: str | Sequence[str], jobs: Sequence[ElasticJobSpec],
                 apps: Mapping[str, tuple[MeasuredApplication, ElasticSpec]], timer: StepTimer,
                 scheduler: PolluxScheduler | Allocator, round_seconds: float = ROUND_SECONDS,
                 node_machines: Sequence | None = None, profiling: bool | None = None,
                 contention: SharedContention | None = None):
        self.capacity = np.asarray(capacity, dtype=int)
        if isinstance(gpu_type, str):
            self.node_types = [gpu_type] * len(self.capacity)
        else:
            self.node_types = [str(t) for t in gpu_type]
            if len(self.node_types) != len(self.capacity):
                raise ValueError(f"{len(self.node_types)} node GPU types for {len(self.capacity)} nodes")
        self.gpu_types = list(dict.fromkeys(self.node_types))
        self.gpu_type = self.gpu_types[0]   # the one-type loop's name (first type of a mixed cluster)
        self.node_machines = list(range(len(self.capacity))) if node_machines is None else list(node_machines)
        if len(self.node_machines) != len(self.capacity):
            raise ValueError(f"{len(self.node_machines)} node machines for {len(self.capacity)} nodes")
        self._type_of_node = np.array([self.gpu_types.index(t) for t in self.node_types])
        self.profiling = bool(getattr(scheduler, "wants_profiles", False)) if profiling is None else profiling
        self.timer, self.scheduler = timer, scheduler
        self.contention = contention
        self._shared: dict[str, tuple[int, float, float]] = {}  # job -> (round-start m, shared step, ratio)
        self.round_seconds = float(round_seconds)
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        self.pending = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
        for j in self.pending:
            if j.app not in apps:
                raise ValueError(f"job {j.job_id}: unknown application {j.app!r}")
            if j.gpus < 0 or j.batch < 0 or (j.gpus and not j.batch):
                raise ValueError(f"job {j.job_id}: a rigid job needs both gpus and batch >= 1 (a fixed-batch job "
                                 f"the batch only; elastic: neither)")
            missing = [t for t in self.gpu_types if t not in apps[j.app][0].compute]
            if missing:
                raise ValueError(f"job {j.job_id}: {j.app} has no compute table for {', '.join(missing)}")
        self.apps = apps
        self.active: list[ElasticJob] = []
        self.done: list[ElasticJob] = []

    def _admit(self, spec: ElasticJobSpec) -> ElasticJob:
        app, elastic = self.apps[spec.app]
        if spec.batch:
            # a rigid job: its own batch, efficiency from the measured statistics at that batch
            elastic = dataclasses.replace(elastic, fixed_batch=spec.batch)
        agents = {t: PolluxAgent(elastic, t) for t in self.gpu_types}
        job = ElasticJob(spec, app, elastic, agents[self.gpu_type],
                         ElasticProgress(app.replay, elastic.restart_seconds), np.zeros(len(self.capacity), int),
                         gpu_type=self.gpu_type, agents=agents)
        if self.profiling:
            self._profile(job)
        return job

    def _profile(self, job: ElasticJob) -> None:
        """Sia's 1-GPU profile of every type: iteration times at PROFILE_BATCHES local batches, told to
        that type's agent; the GPU time is the job's."""
        sqr, var = job.app.replay.grad_stats(float(job.app.replay.batches[0]), 0)
        one = np.zeros(len(self.capacity), int)
        for t in self.gpu_types:
            limit = job.elastic.limit(t)
            node = int(np.flatnonzero(self._type_of_node == self.gpu_types.index(t))[0])
            one[:] = 0
            one[node] = 1
            batches = np.unique(np.round(np.geomspace(limit.min_local, limit.max_local, PROFILE_BATCHES)).astype(int))
            job.profile[t] = {}
            for m in batches:
                iter_s, _ = self.timer.seconds(job.spec.app, t, one, int(m), 0)
                job.profile[t][int(m)] = iter_s
                job.profile_gpu_seconds += PROFILE_ITERATIONS * iter_s
                job.agents[t].observe(1, 1, int(m), 0, iter_s, None, sqr, var)

    def _machines(self, alloc: np.ndarray) -> int:
        """Physical machines an allocation spans (virtual nodes of one machine count once)."""
        return len({self.node_machines[i] for i in np.flatnonzero(alloc)})

    def _type_of(self, alloc: np.ndarray) -> str:
        """The type holding most of the allocation's GPUs; ties to the faster type."""
        per_type = np.bincount(self._type_of_node, weights=alloc, minlength=len(self.gpu_types))
        rank = {t: (FASTER_TYPES.index(t) if t in FASTER_TYPES else len(FASTER_TYPES) + i)
                for i, t in enumerate(self.gpu_types)}
        best = max(range(len(self.gpu_types)), key=lambda i: (per_type[i], -rank[self.gpu_types[i]]))
        return self.gpu_types[best]

    def _tune(self, job: ElasticJob) -> None:
        """(m, s) for the job's allocation: the agent's best by its model, or, before it has one, the
        smallest batch the GPUs can run (the artifact's start: M0 or K x min local batch)."""
        k, nodes = job.gpus, self._machines(job.alloc)
        limit = job.elastic.limit(job.gpu_type)
        cfg = job.agent.goodput(nodes, k) if job.elastic.fixed_batch is None else None
        if cfg is not None:
            m, s = cfg.local_batch, cfg.accum_steps
        else:
            total = job.elastic.fixed_batch or max(job.elastic.initial_batch, k * limit.min_local)
            split = split_batch(total, k, limit, job.elastic.initial_batch)
            if split is None:
                raise ValueError(f"job {job.spec.job_id}: no local batch fits {total} on {k} GPUs")
            m, s = split
        job.local_batch, job.accum_steps = clamp_local_batch(m, s, k, job.elastic, limit), s

    def _replay_batch(self, job: ElasticJob) -> float:
        """The batch whose measured statistics apply, within the measured range."""
        return float(np.clip(job.batch, job.app.replay.batches[0], job.app.replay.batches[-1]))

    def _share_round(self) -> None:
        """Shared mode: each running job's shared step for this round (contention.py), with its step alone."""
        running = [j for j in self.active if j.gpus]
        steps = self.contention.round_steps([RoundJob(j.spec.job_id, j.spec.app, j.alloc, j.local_batch)
                                             for j in running])
        self._shared = {}
        for job in running:
            if job.spec.job_id in steps:
                alone, _ = self.timer.seconds(job.spec.app, job.gpu_type, job.alloc, job.local_batch, 0)
                shared = steps[job.spec.job_id]
                self._shared[job.spec.job_id] = (job.local_batch, shared, shared / alone)

    def _iteration(self, job: ElasticJob) -> tuple[float, float, float]:
        """(iteration seconds this round, one pass's compute seconds, iteration seconds alone)."""
        iter_s, compute_s = self.timer.seconds(job.spec.app, job.gpu_type, job.alloc, job.local_batch,
                                               job.accum_steps)
        shared = self._shared.get(job.spec.job_id)
        if shared is None:
            return iter_s, compute_s, iter_s
        m, step, ratio = shared
        if job.local_batch != m:  # re-tuned within the round: the round's ratio on its new step alone
            step = self.timer.seconds(job.spec.app, job.gpu_type, job.alloc, job.local_batch, 0)[0] * ratio
        return job.accum_steps * compute_s + step, compute_s, iter_s

    def _run_round(self, job: ElasticJob, start: float) -> None:
        left = self.round_seconds
        while left > 1e-9 and not job.progress.done:
            iter_s, compute_s, alone_s = self._iteration(job)
            restarting = job.progress.restart_left > 0
            epoch = job.progress.epoch
            used = job.progress.advance(left, self._replay_batch(job), iter_s)
            job.attained += used * job.gpus
            left -= used
            if not restarting and used > 0 and self.contention is not None:
                job.shared_seconds += used
                job.alone_seconds += used if alone_s == iter_s else used * alone_s / iter_s
            if not restarting and used > 0:
                sqr, var = job.app.replay.grad_stats(self._replay_batch(job), min(epoch, job.app.replay.epochs - 1))
                job.agent.observe(self._machines(job.alloc), job.gpus, job.local_batch, job.accum_steps,
                                  iter_s, compute_s if job.accum_steps else None, sqr, var)
            if job.progress.done:
                job.finish = start + (self.round_seconds - left)
            elif not restarting and job.progress.epoch != epoch:
                e = min(job.progress.epoch, job.app.replay.epochs - 1)
                job.agent.report_stats(*job.app.replay.grad_stats(self._replay_batch(job), e))
                self._tune(job)

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
                self.active.append(self._admit(self.pending.pop(0)))
            if not self.active:
                now = math.ceil(self.pending[0].arrival / self.round_seconds) * self.round_seconds
                continue
            views = [JobView(j.spec.job_id, j.agent, j.alloc.copy(), age=now - j.spec.arrival,
                             restarts=j.progress.restarts, attained=j.attained, submitted=j.spec.arrival,
                             min_gpus=j.elastic.min_gpus, gpus_wanted=j.spec.gpus, agents=j.agents,
                             gpu_type=j.gpu_type, restarting=j.progress.restart_left > 0,
                             restart_seconds=j.elastic.restart_seconds, category=j.category,
                             batch_wanted=j.spec.batch, profile=j.profile,
                             remaining_iterations=remaining_iterations(j.app.replay, j.progress.progress, j.spec.batch)
                             if oracle and j.spec.batch else 0.0)
                     for j in self.active]
            started, started_cpu = wallclock.perf_counter(), wallclock.process_time()
            wanted = self.scheduler.allocate(views)
            policy_seconds.append(wallclock.perf_counter() - started)
            policy_cpu.append(wallclock.process_time() - started_cpu)
            for job in self.active:
                new = np.asarray(wanted[job.spec.job_id], dtype=int)
                if not np.array_equal(new, job.alloc):
                    job.alloc = new
                    if new.sum() > 0:
                        job.gpu_type = self._type_of(new)
                        job.agent = job.agents[job.gpu_type]
                        job.progress.resize()
                        self._tune(job)
            if self.contention is not None:
                self._share_round()
            for job in self.active:
                if job.gpus:
                    epoch = min(job.progress.epoch, job.app.replay.epochs - 1)
                    job.gpu_rounds.append((now, job.gpus, job.batch,
                                           job.app.replay.efficiency(self._replay_batch(job), epoch)))
                    before = job.progress.progress
                    self._run_round(job, now)
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
