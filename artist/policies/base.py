"""What a scheduling policy sees and what it returns.

A policy is asked for a Decision at every scheduling moment (arrival,
completion, periodic round, a wake-up it asked for). It sees a SchedulerView:
the time, the jobs (waiting and running), a copy of the free-GPU map to plan
on, and estimate(), the only way it may learn what a placement costs (the
performance model's step time for the job alone; never the network itself). It
returns the placement every job should hold from now on; running jobs left
out are preempted, jobs given another placement are migrated. The simulator
applies the difference and charges checkpoint-restore costs.

Views are not defensive copies (that would dominate the hot path): a policy
must treat JobState objects and the topology as read-only.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Mapping

from artist.cluster import FreeMap
from artist.jobstate import JobState
from artist.perf.model import PerfModel, StepEstimate
from artist.placement import Placement
from artist.topology import Topology


@dataclass(frozen=True)
class Observation:
    """What a running job measured since its last observation, as an agent in the job would report it:
    the iterations it completed on its GPUs and the time each took there (with its co-runners' traffic
    when contention is shared). Never the performance model's answer for another placement."""
    time: float  # end of the span observed
    placement: Placement  # the GPUs it ran on
    iterations: float  # iterations completed in the span (fractional at a span's end mid-iteration)
    step_seconds: float  # measured seconds per iteration on those GPUs


@dataclass
class Decision:
    allocations: dict[str, Placement]  # job id -> placement, for every job that should run
    wake_at: float | None = None  # ask to be called again at this time (timers, thresholds)


@dataclass
class SchedulerView:
    now: float
    topology: Topology
    waiting: list[JobState]  # in arrival order (ties by job id)
    running: list[JobState]  # in start order
    free: FreeMap  # the simulator's map: call plan() for a copy to modify
    perf: PerfModel  # ask through estimate(); a policy must not reach the fabric behind it
    restore_seconds: float
    is_round: bool = False  # this moment includes a periodic round (a policy deciding on rounds only acts now)
    # the running jobs' placements in start order, if the view's maker keeps them (the loop does): then
    # current_allocations() copies it at C speed instead of walking `running`
    placements: Mapping[str, Placement] | None = None

    def plan(self) -> FreeMap:
        """A private copy of the free-GPU map to try placements on."""
        return self.free.copy()

    def current_allocations(self) -> dict[str, Placement]:
        """Every running job's placement (a new dict the policy may change and return in its Decision)."""
        if self.placements is not None:
            return dict(self.placements)
        return {s.job_id: s.placement for s in self.running}

    def estimate(self, state: JobState, placement: Placement) -> StepEstimate:
        """One step of this job alone on that placement: compute, exposed communication, rate."""
        if self.perf is None:
            raise RuntimeError("this run's jobs are timed by their own workload (elastic or Crius' jobs): the loop "
                               "has no performance model to estimate with")
        return self.perf.estimate(state.model, placement)

    def step_floor(self, state: JobState) -> float:
        """A lower bound on this job's step alone on any placement: its compute on the fastest GPU type
        (communication only adds to it). Rules out moves that could not pay for themselves."""
        return self.perf.step_floor(state.model)


def hold_until_round(view: SchedulerView, period_s: float) -> Decision:
    """What a policy deciding only at its periodic rounds answers between them: every allocation as it is,
    and, while jobs wait, a wake-up at its next round (so that the loop does not take them as stuck)."""
    next_round = math.floor(view.now / period_s + 1) * period_s
    return Decision(view.current_allocations(), next_round if view.waiting else None)


def start_strictly_in_order(jobs, free: FreeMap, allocations: dict[str, Placement], place) -> None:
    """Give each job, in order, the placement place(free, gpus) finds, until one
    does not fit: strict order, no backfilling (FIFO-style head-of-line blocking).
    Updates `free` and `allocations` in place."""
    for state in jobs:
        placement = place(free, state.gpus)
        if placement is None:
            break
        free.take(placement.gpus)
        allocations[state.job_id] = placement


class Policy:
    """Base class: subclasses set `name` and implement schedule().

    period_s: the policy's own scheduling period (it is asked at every multiple of it, besides arrivals,
    completions and its wake-ups); None: the simulator's round_interval_s. observe(): called by the loop
    with what every running job measured (Observation) when its rate changes, it stops or ends, and at
    every periodic round: a policy that learns (a throughput model, say) learns from this."""

    name = "policy"
    period_s: float | None = None

    def schedule(self, view: SchedulerView) -> Decision:
        raise NotImplementedError

    def observe(self, job_id: str, observation: Observation) -> None:
        """What the job measured since its last observation (class docstring); by default ignored."""

    def parameters(self) -> dict:
        """The policy's settings, for result tables."""
        return {}
