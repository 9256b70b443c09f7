"""Crius or one of its paper's baselines (artist/policies/crius/) as a policy of the exact event loop.

    CriusRoundPolicy(policy, workload: CriusWorkload, period_s=300.0)

Cadence (Crius sec. 7 / Fig. 16: 5-minute rounds, decisions on arrival and departure): at every round, if
a job reached the loop or left it since the last round (or the policy decides every round: Gavel), the
policy decides once for all jobs in the system, in arrival order: a (GPU type, count) per job that should
run. A job whose (type, count) is unchanged keeps its GPUs; the others are given GPUs in their pool as
Crius' placement does (PoolAllocator: best fit on one machine, else whole machines, else the freest ones),
on the GPUs free once the changed jobs' are given back. Between rounds nothing changes.
"""

from __future__ import annotations

import time as wallclock

from artist.jobstate import RUNNING
from artist.placement import Placement
from artist.policies.base import Decision, Policy, SchedulerView, hold_until_round
from artist.policies.crius.cluster import PoolAllocator


class CriusRoundPolicy(Policy):
    def __init__(self, policy, workload, period_s: float = 300.0):
        self.policy = policy
        self.workload = workload
        self.name = policy.name
        self.period_s = float(period_s)
        self._seen: frozenset = frozenset()  # jobs in the system at the last round
        self.decision_seconds: list[tuple[float, int]] = []  # per decision: (wall seconds, jobs placed or moved)

    def schedule(self, view: SchedulerView) -> Decision:
        if not view.is_round:
            return hold_until_round(view, self.period_s)
        states = sorted(view.waiting + view.running, key=lambda s: (s.run.spec.arrival, s.job_id))
        ids = frozenset(s.job_id for s in states)
        event, self._seen = ids != self._seen, ids
        if not ((event or self.policy.every_round) and states):
            return Decision(view.current_allocations())
        started = wallclock.perf_counter()
        targets = self.policy.decide([s.run for s in states], view.now)
        seconds = wallclock.perf_counter() - started
        allocations, changed = self._placements(view, states, targets)
        self.decision_seconds.append((seconds, changed))
        return Decision(allocations)

    def _placements(self, view: SchedulerView, states, targets: dict) -> tuple[dict[str, Placement], int]:
        workload = self.workload
        pools = {}
        for gpu_type, pool in workload.pools.items():  # each pool's free GPUs, as its own ids
            pools[gpu_type] = PoolAllocator(pool.topology)
            pools[gpu_type].free = {m: [] for m in range(pool.topology.machines)}
        for machine in view.free.free_by_machine:
            for g in machine:
                gpu_type, (own,) = workload.pool_gpus((g,))
                allocator = pools[gpu_type]
                allocator.free[allocator.topology.machine_of(own)].append(own)
        for allocator in pools.values():
            for free in allocator.free.values():
                free.sort()
        out: dict[str, Placement] = {}
        for state in states:  # changed jobs give their GPUs back first
            target = targets.get(state.job_id)
            if state.status == RUNNING:
                if target == state.run.alloc:
                    out[state.job_id] = state.placement
                else:
                    pools[state.run.alloc[0]].give(state.run.gpus)
        changed = 0
        for state in states:
            target = targets.get(state.job_id)
            if target is None or (state.status == RUNNING and target == state.run.alloc):
                continue
            changed += 1
            gpus = pools[target[0]].take(target[1])
            if gpus is None:
                raise ValueError(f"policy {self.name} over-allocated {target[0]}")
            out[state.job_id] = Placement(view.topology, workload.map_gpus(target[0], gpus))
        return {s.job_id: out[s.job_id] for s in states if s.job_id in out}, changed
