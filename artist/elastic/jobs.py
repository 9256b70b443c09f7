"""Elastic jobs of a run, job side: what happens inside a job whatever loop drives it.

    ElasticJobs(capacity, node_types, apps, timer, ...)   the run's jobs on a cluster of nodes
      .admit(spec)            -> ElasticJob (its agents; Sia's 1-GPU profiling when asked)
      .allocate(job, per_node)   a new allocation: its GPU type, the restart delay, (m, s) for it
      .run(job, seconds, snap)   progress for up to `seconds` at the job's configuration
      .seconds_to_event(job)     time to its next own event (end of a restart, of an epoch, completion)
      .view(job, now, oracle)    what an allocator is told of it (JobView)

Inside a job, as in the Pollux and Sia artifacts: its own agent (AdaptDL's) measures every span it
trains (iteration time, one pass's compute time when it accumulates, the epoch's gradient statistics),
fits its throughput model from those measurements only, and re-picks the local batch and accumulation
passes (m, s) for its allocation at every new allocation and epoch end. A new allocation costs the
application's restart delay (not the first start), during which the job holds its GPUs and makes no
progress (progress.py).

Several GPU types: a job runs on one type at a time, the type holding most of its GPUs, ties to the
faster type (Sia's artifact's rule for a heterogeneity-unaware policy's mixed allocation); it has one
agent per type. With profiling (Sia section 3.2), a new job is first profiled on one GPU of every type at
PROFILE_BATCHES local batches and the GPU time is charged to it.

The exact event loop (artist/simulator.py) drives jobs through this class (artist/elastic/exact.py), their
allocator deciding every round (artist/elastic/allocators.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

import numpy as np

from artist.elastic.measured import MeasuredApplication
from artist.elastic.mixed import dominant_type
from artist.elastic.oracle import remaining_iterations
from artist.elastic.progress import ElasticProgress
from artist.elastic.spec import ElasticSpec, clamp_local_batch, split_batch
from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.scheduler import JobView

# Sia's 1-GPU profiling per type (section 3.2: "typically 10 batch sizes", < 20 GPU-seconds per type):
# PROFILE_BATCHES local batches, geometric from the type's smallest to its largest; each is charged
# PROFILE_ITERATIONS iterations (ours, an estimate that lands within the paper's budget for most models).
PROFILE_BATCHES = 10
PROFILE_ITERATIONS = 3
# A span shorter than this is no span (a tolerance on the seconds left in a round).
NO_TIME = 1e-9


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
    # iterations trained and their exposed communication (iteration time beyond its passes' compute), as a
    # rigid job's comm_seconds_per_iteration counts it
    iterations: float = 0.0
    exposed_comm_seconds: float = 0.0

    @property
    def comm_seconds_per_iteration(self) -> float:
        return self.exposed_comm_seconds / self.iterations if self.iterations > 0 else 0.0

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


class ElasticJobs:
    """The elastic jobs of one run on a cluster of nodes (module docstring). `node_machines` names the
    physical machine of every node, so virtual nodes of one machine count as one node for the agents."""

    def __init__(self, capacity: Sequence[int], gpu_type: str | Sequence[str], jobs: Sequence[ElasticJobSpec],
                 apps: Mapping[str, tuple[MeasuredApplication, ElasticSpec]], timer: StepTimer,
                 node_machines: Sequence | None = None, profiling: bool = False, contention=None,
                 first_start_delay: bool = False, slowdowns: Mapping[str, float] | None = None,
                 retune_every_round: bool = False):
        self.capacity = np.asarray(capacity, dtype=int)
        if isinstance(gpu_type, str):
            self.node_types = [gpu_type] * len(self.capacity)
        else:
            self.node_types = [str(t) for t in gpu_type]
            if len(self.node_types) != len(self.capacity):
                raise ValueError(f"{len(self.node_types)} node GPU types for {len(self.capacity)} nodes")
        self.gpu_types = list(dict.fromkeys(self.node_types))
        self.gpu_type = self.gpu_types[0]   # a pending job's type (the first type of a mixed cluster)
        self.node_machines = list(range(len(self.capacity))) if node_machines is None else list(node_machines)
        if len(self.node_machines) != len(self.capacity):
            raise ValueError(f"{len(self.node_machines)} node machines for {len(self.capacity)} nodes")
        self._type_of_node = np.array([self.gpu_types.index(t) for t in self.node_types])
        self.profiling = profiling
        self.first_start_delay = first_start_delay  # rules.py: the restart delay at the first start too
        self.slowdowns = dict(slowdowns or {})  # rules.py: progress of an application divided by its factor
        self.retune_every_round = retune_every_round  # rules.py: (m, s) re-picked at every round's end too
        self.timer = timer
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        for j in jobs:
            if j.app not in apps:
                raise ValueError(f"job {j.job_id}: unknown application {j.app!r}")
            if j.gpus < 0 or j.batch < 0 or (j.gpus and not j.batch):
                raise ValueError(f"job {j.job_id}: a rigid job needs both gpus and batch >= 1 (a fixed-batch job "
                                 f"the batch only; elastic: neither)")
            missing = [t for t in self.gpu_types if t not in apps[j.app][0].compute]
            if missing:
                raise ValueError(f"job {j.job_id}: {j.app} has no compute table for {', '.join(missing)}")
        self.apps = apps
        # shared contention (artist/elastic/contention.py): job -> (its local batch when the round began, its
        # shared step, shared / alone) for the jobs timed with co-runners this round
        self.contention = contention
        self.shared: dict[str, tuple[int, float, float]] = {}

    # ---- arrival -----------------------------------------------------------
    def admit(self, spec: ElasticJobSpec) -> ElasticJob:
        app, elastic = self.apps[spec.app]
        if spec.batch:
            # a rigid job: its own batch, efficiency from the measured statistics at that batch
            elastic = dataclasses.replace(elastic, fixed_batch=spec.batch)
        agents = {t: PolluxAgent(elastic, t) for t in self.gpu_types}
        job = ElasticJob(spec, app, elastic, agents[self.gpu_type],
                         ElasticProgress(app.replay, elastic.restart_seconds, first_start_delay=self.first_start_delay,
                                         slowdown=self.slowdowns.get(spec.app, 1.0)), np.zeros(len(self.capacity), int),
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

    # ---- allocations -------------------------------------------------------
    def machines(self, alloc: np.ndarray) -> int:
        """Physical machines an allocation spans (virtual nodes of one machine count once)."""
        return len({self.node_machines[i] for i in np.flatnonzero(alloc)})

    def type_of(self, alloc: np.ndarray) -> str:
        """The type holding most of the allocation's GPUs; ties to the faster type (artist/elastic/mixed.py)."""
        return dominant_type(self.node_types, alloc)

    def allocate(self, job: ElasticJob, per_node: np.ndarray) -> None:
        """The job's new GPUs per node (all zeros: it stops holding any): with GPUs, it runs on their
        type, pays the restart delay (not at its first start) and re-picks (m, s)."""
        job.alloc = per_node
        if per_node.sum() > 0:
            job.gpu_type = self.type_of(per_node)
            job.agent = job.agents[job.gpu_type]
            job.progress.resize()
            self.tune(job)

    def tune(self, job: ElasticJob) -> None:
        """(m, s) for the job's allocation: the agent's best by its model, or, before it has one, the
        smallest batch the GPUs can run (the artifact's start: M0 or K x min local batch)."""
        k, nodes = job.gpus, self.machines(job.alloc)
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

    def round_closed(self, job: ElasticJob) -> bool:
        """The job's round has ended: under retune_every_round (rules.py), a job training on its GPUs re-picks
        (m, s) by its latest model. True when it did (its iteration time may have changed)."""
        if not (self.retune_every_round and job.gpus and not job.progress.done and job.progress.restart_left <= 0):
            return False
        self.tune(job)
        return True

    def replay_batch(self, job: ElasticJob) -> float:
        """The batch whose measured statistics apply, within the measured range."""
        return float(np.clip(job.batch, job.app.replay.batches[0], job.app.replay.batches[-1]))

    # ---- training ----------------------------------------------------------
    def iteration(self, job: ElasticJob) -> tuple[float, float, float]:
        """(iteration seconds this round, one pass's compute seconds, iteration seconds alone) on the job's
        GPUs. Timed with co-runners this round (share_round): its accumulation passes plus its shared step;
        re-tuned within the round, the round's shared / alone ratio on its new step alone (a stated
        approximation: the co-simulation is per round)."""
        iter_s, compute_s = self.timer.seconds(job.spec.app, job.gpu_type, job.alloc, job.local_batch,
                                               job.accum_steps)
        shared = self.shared.get(job.spec.job_id)
        if shared is None:
            return iter_s, compute_s, iter_s
        m, step, ratio = shared
        if job.local_batch != m:
            step = self.timer.seconds(job.spec.app, job.gpu_type, job.alloc, job.local_batch, 0)[0] * ratio
        return job.accum_steps * compute_s + step, compute_s, iter_s

    def share_round(self, running: Sequence[ElasticJob]) -> None:
        """Shared contention, as a round begins: the running jobs that meet on links timed together
        (contention.round_steps), each with its step alone."""
        from artist.elastic.contention import RoundJob

        steps = self.contention.round_steps([RoundJob(j.spec.job_id, j.spec.app, j.alloc, j.local_batch)
                                             for j in running])
        self.shared = {}
        for job in running:
            if job.spec.job_id in steps:
                alone, _ = self.timer.seconds(job.spec.app, job.gpu_type, job.alloc, job.local_batch, 0)
                shared = steps[job.spec.job_id]
                self.shared[job.spec.job_id] = (job.local_batch, shared, shared / alone)

    def round_start(self, job: ElasticJob, now: float) -> None:
        """A round in which the job holds GPUs begins: (time, GPUs, batch, efficiency) recorded."""
        epoch = min(job.progress.epoch, job.app.replay.epochs - 1)
        job.gpu_rounds.append((now, job.gpus, job.batch, job.app.replay.efficiency(self.replay_batch(job), epoch)))

    def run(self, job: ElasticJob, seconds: float, snap: float = 0.0, max_spans: int | None = None) -> float:
        """Train for up to `seconds` on the job's GPUs: spans end at the end of a restart, of an epoch (the
        agent learns the epoch's statistics and re-picks (m, s)) and at completion; the agent observes
        every span it trained (at self.iteration's times). `snap`: a boundary that close beyond the last span
        counts as reached (the caller's clock put an event there). With shared contention, the seconds trained
        and the same iterations alone are recorded. The seconds not used (0 unless the job completed, or
        `max_spans` spans ended first)."""
        iteration = self.iteration
        shared = self.contention is not None
        left = seconds
        spans = 0
        while not job.progress.done and (left > NO_TIME or (snap > 0 and spans == 0)):
            if max_spans is not None and spans >= max_spans:
                break
            spans += 1
            iter_s, compute_s, alone_s = iteration(job)
            restarting = job.progress.restart_left > 0
            epoch = job.progress.epoch
            used = job.progress.advance(left, self.replay_batch(job), iter_s, snap=snap)
            job.attained += used * job.gpus
            left -= used
            if not restarting and used > 0 and shared:
                job.shared_seconds += used
                job.alone_seconds += used if alone_s == iter_s else used * alone_s / iter_s
            if not restarting and used > 0:
                done = used / iter_s
                job.iterations += done
                job.exposed_comm_seconds += done * max(iter_s - (job.accum_steps + 1) * compute_s, 0.0)
                sqr, var = job.app.replay.grad_stats(self.replay_batch(job), min(epoch, job.app.replay.epochs - 1))
                # one pass's compute on every span: AdaptDL times the all-reduce of each synchronising pass
                # (adaptdl torch/parallel.py profile_sync_time) and fits compute = step - sync
                # (torch/_metrics.py _fit_perf_params), as the artifact's simulator does (Job.update_params)
                job.agent.observe(self.machines(job.alloc), job.gpus, job.local_batch, job.accum_steps,
                                  iter_s, compute_s, sqr, var)
            if not job.progress.done and not restarting and job.progress.epoch != epoch:
                e = min(job.progress.epoch, job.app.replay.epochs - 1)
                job.agent.report_stats(*job.app.replay.grad_stats(self.replay_batch(job), e))
                self.tune(job)
        return left

    def seconds_to_event(self, job: ElasticJob) -> float:
        """Seconds from now to the job's next own event at its configuration: the end of its restart, of
        its epoch (where it re-tunes) or its completion (the end of the last epoch)."""
        return job.progress.seconds_to_boundary(self.replay_batch(job), self.iteration(job)[0])

    # ---- what an allocator sees -------------------------------------------
    def view(self, job: ElasticJob, now: float, oracle: bool = False) -> JobView:
        """The job as an allocator sees it: its agents (the job's own measurements), bookkeeping, and with
        `oracle` (Optimus+Oracle) the exact iterations it has left at its fixed batch."""
        return JobView(job.spec.job_id, job.agent, job.alloc.copy(), age=now - job.spec.arrival,
                       restarts=job.progress.restarts, attained=job.attained, submitted=job.spec.arrival,
                       min_gpus=job.elastic.min_gpus, gpus_wanted=job.spec.gpus, agents=job.agents,
                       gpu_type=job.gpu_type, restarting=job.progress.restart_left > 0,
                       restart_seconds=job.elastic.restart_seconds, category=job.category,
                       batch_wanted=job.spec.batch, profile=job.profile,
                       remaining_iterations=remaining_iterations(job.app.replay, job.progress.progress,
                                                                 job.spec.batch)
                       if oracle and job.spec.batch else 0.0)
