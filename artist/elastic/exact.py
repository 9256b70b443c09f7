"""Elastic jobs in the exact event loop (artist/simulator.py): the workload handed to the loop and the
loop's record of one job.

    simulate_elastic(cluster, specs, apps, timer, allocator, round_seconds) -> ElasticResult
    Simulator(layout.topology, [], {}, policy, perf, config, managed=ElasticWorkload(jobs, specs, layout))

An elastic job's GPU count, batch and (m, s) change during its life (artist/elastic/jobs.py); the loop
gives it the GPUs its policy places it on and advances it exactly between events: its own events are the
end of a restart, of an epoch (where it re-tunes) and completion; at every periodic round and every time
it stops, what it trained since is folded in and its agent observes it. The nodes of the jobs' cluster sit
on the loop's topology as its NodeLayout puts them (artist/elastic/cluster.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from artist.elastic.cluster import ElasticCluster, NodeLayout
from artist.elastic.jobs import ElasticJob, ElasticJobs, ElasticJobSpec, StepTimer
from artist.elastic.result import ElasticResult
from artist.jobstate import LoopRecord
from artist.placement import Placement

# How far beyond a span's end a job's own boundary (restart end, epoch end) may lie and still count as the
# boundary its event was put at: the loop's clock rounds the event's time (an ulp of the absolute time,
# ~1e-8 s at 10^8 s), far below any iteration's time.
EVENT_SNAP_SECONDS = 1e-6


@dataclass(frozen=True)
class ElasticWorkload:
    """The elastic jobs of a run as the exact loop's ManagedWorkload (artist/managed.py): the job side
    (ElasticJobs, with its cluster of nodes and step timer), the jobs' specs, and where the nodes sit on the
    loop's topology."""
    jobs: ElasticJobs
    specs: Sequence[ElasticJobSpec]
    layout: NodeLayout

    @property
    def absent(self) -> tuple[int, ...]:
        return self.layout.absent

    def check(self, topology, config) -> None:
        if config.contention == "shared":
            raise ValueError("elastic jobs meet on links through their own round co-simulation (ElasticJobs' "
                             "contention), not the loop's contention 'shared'")
        if self.layout.topology != topology:
            raise ValueError(f"the elastic jobs' nodes are laid out on topology {self.layout.topology.name!r}, "
                             f"the loop runs on {topology.name!r}")
        if list(self.jobs.capacity) != self.layout.capacity:
            raise ValueError(f"the elastic jobs' cluster has {len(self.jobs.capacity)} nodes of "
                             f"{sorted(set(self.jobs.capacity.tolist()))} GPUs, its layout "
                             f"{len(self.layout.capacity)} of {sorted(set(self.layout.capacity))}")

    def states(self) -> list["ElasticJobState"]:
        return [ElasticJobState(spec) for spec in self.specs]

    def arrive(self, state: "ElasticJobState", now: float) -> None:
        state.elastic = self.jobs.admit(state.spec)

    def start(self, state: "ElasticJobState", placement: Placement, now: float, to_next_round: float) -> float:
        state.start(self.jobs, self.layout.per_node(placement.gpus), placement, now, to_next_round)
        return state.elastic.progress.restart_left

    def seconds_to_event(self, state: "ElasticJobState", now: float) -> float:
        """The end of its restart, of its epoch, or its completion."""
        return self.jobs.seconds_to_event(state.elastic)

    def own_event(self, state: "ElasticJobState", now: float) -> bool:
        if state.train(self.jobs, now, own_event=True):
            state.close_round()
            return True
        return False

    def fold(self, state: "ElasticJobState", now: float) -> None:
        state.train(self.jobs, now)

    def stop(self, state: "ElasticJobState", now: float) -> None:
        state.close_round()
        self.jobs.allocate(state.elastic, np.zeros(len(self.jobs.capacity), dtype=int))

    def round_end(self, running: Sequence["ElasticJobState"], now: float) -> None:
        """Every running job trained up to now, and its round's progress closed."""
        for state in running:
            state.train(self.jobs, now)
            state.close_round()
            if self.jobs.round_closed(state.elastic):
                state.iteration_seconds = self.jobs.iteration(state.elastic)[0]

    def round_begin(self, running: Sequence["ElasticJobState"], now: float, seconds: float) -> list:
        """Every job holding GPUs begins a round; with shared contention, those meeting on links are timed
        together for the round (their iteration times change, so their next events move)."""
        for state in running:
            state.open_round(self.jobs, now, seconds)
        if self.jobs.contention is None:
            return []
        running = sorted(running, key=lambda state: (state.arrival, state.job_id))  # the round loop's order
        self.jobs.share_round([state.elastic for state in running])
        for state in running:
            state.iteration_seconds = self.jobs.iteration(state.elastic)[0]
        return running


@dataclass(eq=False)
class ElasticJobState(LoopRecord):
    """The loop's record of an elastic job (what JobState is for a rigid one; the same bookkeeping names)."""
    spec: ElasticJobSpec
    managed = True
    model = None
    estimate = None
    elastic: ElasticJob | None = None  # admitted at its arrival
    job_id: str = field(init=False)
    arrival: float = field(init=False)
    round_mark: float | None = None  # progress when the current round began (it held GPUs then)
    # The job's clock: it trains in segments that end at the loop's periodic rounds, spending `left` of
    # the segment's seconds span by span as the Pollux and Sia artifacts' round-stepped simulators do
    # (the same bits as ArtISt's own round loop had): `used` seconds of [segment_start, segment_start +
    # segment_seconds) trained so far.
    segment_start: float = 0.0
    segment_seconds: float = 0.0
    left: float = 0.0
    used: float = 0.0

    def __post_init__(self):
        self.job_id, self.arrival = self.spec.job_id, self.spec.arrival

    @property
    def gpus(self) -> int:
        return self.elastic.gpus if self.elastic is not None else 0

    # ---- the job's clock ---------------------------------------------------
    def start(self, jobs: ElasticJobs, per_node: np.ndarray, placement: Placement, now: float,
              to_next_round: float) -> None:
        """On new GPUs (per_node of its nodes): its type, restart delay and (m, s) (ElasticJobs.allocate);
        a segment to the next round."""
        jobs.allocate(self.elastic, per_node)
        self.placement = placement
        self._segment(now, to_next_round)
        self.iteration_seconds = jobs.iteration(self.elastic)[0]

    def _segment(self, now: float, seconds: float) -> None:
        self.segment_start, self.segment_seconds, self.left, self.used = now, seconds, seconds, 0.0

    def train(self, jobs: ElasticJobs, now: float, own_event: bool = False) -> bool:
        """Train up to now (its agent observes every span; at an epoch end it re-tunes). `own_event`: now
        is the job's own event (end of a restart or an epoch, completion): exactly the one span up to it.
        True when the job has completed (its finish time set as the round loop sets it)."""
        job = self.elastic
        if own_event:
            rest = jobs.run(job, self.left, snap=EVENT_SNAP_SECONDS, max_spans=1)
        elif now >= self.segment_start + self.segment_seconds:  # a round: the whole rest of the segment
            rest = jobs.run(job, self.left)
        else:  # stopped mid-segment
            budget = (now - self.segment_start) - self.used
            rest = self.left - budget + jobs.run(job, budget)
        self.used += self.left - rest
        self.left = rest
        if job.progress.done and job.finish is None:
            job.finish = self.segment_start + (self.segment_seconds - self.left)
        self.iteration_seconds = jobs.iteration(job)[0] if job.gpus else 0.0
        return job.progress.done

    def open_round(self, jobs: ElasticJobs, now: float, seconds: float) -> None:
        """A periodic round begins while it holds GPUs: a new segment, and the round's record."""
        self._segment(now, seconds)
        jobs.round_start(self.elastic, now)
        self.round_mark = self.elastic.progress.progress

    def close_round(self) -> None:
        """The progress it made in the round now ending (stopped, completed, or the next round)."""
        if self.round_mark is not None:
            self.elastic.round_progress.append(self.elastic.progress.progress - self.round_mark)
            self.round_mark = None


def simulate_elastic(cluster: ElasticCluster, specs: Sequence[ElasticJobSpec], apps: Mapping, timer: StepTimer,
                     allocator, round_seconds: float = 60.0, profiling: bool | None = None, contention=None,
                     name: str | None = None, first_start_delay: bool = False,
                     slowdowns: Mapping[str, float] | None = None, retune_every_round: bool = False) -> ElasticResult:
    """An elastic run on a cluster (a one-type topology is a cluster of one pool: ElasticCluster.of): the
    jobs of `specs` (applications `apps`: name -> (MeasuredApplication, ElasticSpec)) timed by `timer`,
    GPUs per node allocated by `allocator` every `round_seconds` (an elastic policy of
    artist/policies/pollux/registry.py; the cluster as it sees it, virtual nodes too). `profiling`
    (default: the allocator's wants_profiles): Sia's 1-GPU profile of every new job; `contention`: a
    SharedContention (artist/elastic/contention.py) that times jobs meeting on links together each round;
    `first_start_delay`: the restart delay at every job's first start too; `slowdowns`: per application, a
    factor its progress is divided by (both: rules.py)."""
    profiling = bool(getattr(allocator, "wants_profiles", False)) if profiling is None else profiling
    jobs = ElasticJobs(cluster.capacity, cluster.node_types, specs, apps, timer,
                       [(n.pool, n.machine) for n in cluster.nodes], profiling, contention,
                       first_start_delay=first_start_delay, slowdowns=slowdowns, retune_every_round=retune_every_round)
    return run_in_exact_loop(cluster.layout(), jobs, specs, allocator, round_seconds, name)


def run_in_exact_loop(layout: NodeLayout, jobs: ElasticJobs, specs: Sequence[ElasticJobSpec], allocator,
                      round_seconds: float = 60.0, name: str | None = None):
    """An elastic run (an ElasticResult) in the exact event loop:
    the allocator as a RoundAllocatorPolicy with period `round_seconds` (or, a Policy already, bound to
    the jobs: rigid_in_elastic.py), the jobs' nodes laid out on the
    loop's topology by `layout` (ElasticCluster.layout()). Restart costs are the applications'
    (ElasticJobs), not the loop's restore_seconds."""
    from artist.elastic.allocators import RoundAllocatorPolicy
    from artist.policies.base import Policy
    from artist.simulator import SimulatorConfig, simulate

    if isinstance(allocator, Policy):  # a policy of the loop itself (the rigid policies over elastic jobs)
        policy = allocator.bound(jobs, round_seconds, name)
    else:
        policy = RoundAllocatorPolicy(allocator, jobs, layout, round_seconds, name)
    # no performance model: elastic jobs are timed by the jobs' step timer
    topology = layout.topology
    result = simulate(topology, [], {}, policy, None,
                      SimulatorConfig(round_interval_s=round_seconds, restore_seconds=0.0),
                      managed=ElasticWorkload(jobs, specs, layout))
    done = sorted((s.elastic for s in result.jobs), key=lambda j: j.spec.job_id)
    makespan = max((j.finish for j in done), default=0.0)
    contention = jobs.contention
    return ElasticResult(done, makespan, result.rounds, policy.policy_seconds,
                         policy_cpu_seconds=policy.policy_cpu_seconds,
                         contention="isolated" if contention is None else "shared",
                         components=(0, 0) if contention is None else
                         (contention.components_asked, contention.components_timed),
                         contention_answers=None if contention is None else contention.answers)
