"""An elastic allocator (Pollux, Sia, Gavel, Optimus+Oracle, Tiresias-Pollux, Crius and its baselines:
artist/policies/pollux/registry.py) as a policy of the exact event loop. (The rigid policies over elastic
jobs are the loop's policies already: artist/policies/rigid_in_elastic.py.)

    RoundAllocatorPolicy(allocator, jobs: ElasticJobs, layout: NodeLayout, period_s=60.0)

An allocator answers, once per round, GPUs per node for every job in the system from what the jobs' agents
measured (JobView). At every periodic round of the loop (SchedulerView.is_round) this policy builds those
views from the loop's elastic jobs, in arrival order (the round loop's order), asks the allocator, and turns
its answer into placements: a job whose GPUs per node did not change keeps its placement (no restart), a
changed one gets the lowest free GPU ids of its nodes (where the NodeLayout puts them; which GPUs of a node
does not change a job's time). Between rounds it keeps every allocation as it is and asks to be woken at the next
round while jobs wait, as the round loop does: a job that arrives or a GPU that frees mid-round is acted on
at the next round.
"""

from __future__ import annotations

import time as wallclock

import numpy as np

from artist.elastic.cluster import NodeLayout
from artist.elastic.jobs import ElasticJobs
from artist.jobstate import RUNNING
from artist.placement import Placement
from artist.policies.base import Decision, Policy, SchedulerView, hold_until_round


class RoundPolicy(Policy):
    """A policy of the loop deciding only at its periodic rounds, over the loop's jobs in arrival order (the
    round loop's order), with the time of every decision kept (policy_seconds, policy_cpu_seconds: the
    results' policy_rounds table). Subclasses implement decide(view, states) -> allocations."""

    def __init__(self, period_s: float = 60.0):
        self.period_s = float(period_s)
        self.policy_seconds: list[float] = []      # wall seconds of every round's decision
        self.policy_cpu_seconds: list[float] = []  # this process's CPU seconds of every round's decision

    def schedule(self, view: SchedulerView) -> Decision:
        if not view.is_round:
            return hold_until_round(view, self.period_s)
        states = sorted(view.waiting + view.running, key=lambda s: (s.arrival, s.job_id))
        if not states:
            return Decision({})
        started, started_cpu = wallclock.perf_counter(), wallclock.process_time()
        allocations = self.decide(view, states)
        self.policy_seconds.append(wallclock.perf_counter() - started)
        self.policy_cpu_seconds.append(wallclock.process_time() - started_cpu)
        return Decision(allocations)

    def decide(self, view: SchedulerView, states) -> dict[str, Placement]:
        raise NotImplementedError


class RoundAllocatorPolicy(RoundPolicy):
    def __init__(self, allocator, jobs: ElasticJobs, layout: NodeLayout, period_s: float = 60.0,
                 name: str | None = None):
        super().__init__(period_s)
        self.allocator = allocator
        self.jobs = jobs
        self.layout = layout
        self.name = name or type(allocator).__name__
        self.oracle = bool(getattr(allocator, "wants_oracle", False))  # Optimus+Oracle: exact work left

    def decide(self, view: SchedulerView, states) -> dict[str, Placement]:
        """The allocator's GPUs per node for every job, as placements (module docstring)."""
        views = [self.jobs.view(s.elastic, view.now, self.oracle) for s in states]
        return self._placements(view, states, self.allocator.allocate(views))

    def _placements(self, view: SchedulerView, states, wanted: dict) -> dict[str, Placement]:
        free = view.plan()
        keep: dict[str, Placement] = {}
        changed: list[tuple[str, np.ndarray]] = []
        for state in states:
            new = np.asarray(wanted[state.job_id], dtype=int)
            running = state.status == RUNNING
            if running and np.array_equal(new, state.elastic.alloc):
                keep[state.job_id] = state.placement
                continue
            if running:
                free.give(state.placement.gpus)
            if new.sum() > 0:
                changed.append((state.job_id, new))
        out = dict(keep)
        for job_id, per_node in changed:
            gpus: list[int] = []
            for node in np.flatnonzero(per_node):
                mine = self.layout.free_gpus(free, node, int(per_node[node]))
                if len(mine) < per_node[node]:
                    raise ValueError(f"{self.name}: job {job_id} was given {int(per_node[node])} GPUs of node {node}, "
                                     f"which has {len(mine)} free")
                gpus.extend(mine)
            free.take(gpus)
            out[job_id] = Placement(view.topology, tuple(gpus))
        return out
