"""Placement searches shared by the policies that preempt or consolidate.

- reclaim(): which running jobs to preempt so that a waiting job can be placed
  the way it wants (Tiresias, Dally); fewest_leading(): how many of them, counted
  on free GPUs (cluster.FreeCounts) instead of trial maps.
- fewest_machines(): a placement on the fewest machines possible (Tiresias'
  consolidation of high-skew models).
- best_tier_for_size(): the most consolidated tier a job of n GPUs can ever get.

All searches work on private FreeMap copies and are deterministic (candidates
in the caller's order, ties by machine / rack id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from artist.cluster import FreeCounts, FreeMap
from artist.placement import MACHINE, NETWORK, RACK, Placement
from artist.topology import Topology

Placer = Callable[[FreeMap], "Placement | None"]


@dataclass
class Reclaim:
    placement: Placement  # where the waiting job goes
    victims: tuple[str, ...]  # running jobs to preempt, in the candidates' order
    free: FreeMap  # the map after the victims left and the placement was taken


def reclaim(free: FreeMap, candidates: Sequence[tuple[str, Placement]], place: Placer,
            needed: int | None = None) -> Reclaim | None:
    """Preempt the fewest leading candidates that let `place` succeed.

    candidates are (job id, current placement) in the order the policy would
    rather preempt them (first = preempt first). Victims are released one by
    one into a trial map until `place` finds a placement; of those released,
    only the ones whose GPUs the placement actually uses are preempted, the
    others keep running. Returns None (and touches nothing) when even
    preempting every candidate would not do. needed: how many leading
    candidates that search releases, when the caller has counted it
    (fewest_leading): they are released at once and place() asked once."""
    if not candidates:
        return None
    trial = free.copy()
    placement = None
    chosen: list[tuple[str, Placement]] = []
    if needed is not None:
        chosen = list(candidates[:needed])
        for _, p in chosen:
            trial.give(p.gpus)
        placement = place(trial)
    else:
        # One cheap check with every candidate released first: most failing
        # attempts stop here, so the one-by-one search runs only when it succeeds.
        released = free.copy()
        for _, p in candidates:
            released.give(p.gpus)
        if place(released) is None:
            return None
        for job_id, p in candidates:
            trial.give(p.gpus)
            chosen.append((job_id, p))
            placement = place(trial)
            if placement is not None:
                break
    assert placement is not None  # guaranteed by the check above: place() is monotone in free GPUs
    used = set(placement.gpus)
    victims = tuple(j for j, p in chosen if used.intersection(p.gpus))
    trial.take(placement.gpus)
    for job_id, p in chosen:
        if job_id not in victims:
            trial.take(p.gpus)  # released only for the search: it keeps running
    return Reclaim(placement, victims, trial)


def fewest_leading(free: FreeMap, candidates: Sequence[tuple[str, Placement]],
                   fits: Callable[[FreeCounts], bool]) -> int:
    """How many leading candidates reclaim()'s one-by-one search releases before the job fits, where
    fits(counts) says, from free GPU counts alone, whether its placer succeeds on a map with those counts
    (the policy's placeability test). The caller knows releasing every candidate fits."""
    counts = FreeCounts(free)
    for k, (_, placement) in enumerate(candidates, 1):
        counts.give(placement)
        if fits(counts):
            return k
    raise AssertionError("the caller checked that releasing every candidate lets the job fit")


def best_tier_for_size(topology: Topology, n: int) -> str:
    """The most consolidated tier a job of n GPUs fits in on an empty cluster."""
    if n <= topology.gpus_per_machine:
        return MACHINE
    if n <= topology.gpus_per_rack:
        return RACK
    return NETWORK


def fewest_machines(free: FreeMap, n: int) -> Placement | None:
    """n free GPUs on ceil(n / GPUs per machine) machines, or None.

    One rack is preferred (the rack whose freest machines fit n most tightly,
    ties to the lowest rack id); otherwise the freest machines anywhere. GPUs
    are taken freest machine first, so no more machines are used than needed."""
    t = free.topology
    if n > free.total_free:
        return None
    if n <= t.gpus_per_machine:
        return free.find(n, MACHINE)
    k = math.ceil(n / t.gpus_per_machine)
    mpr = t.machines_per_rack
    best = None
    for r in range(t.racks):
        if free.rack_free[r] < n:
            continue
        machines = sorted(range(r * mpr, (r + 1) * mpr), key=lambda m: (-free.free_count[m], m))[:k]
        total = sum(free.free_count[m] for m in machines)
        if total >= n and (best is None or total < best[0]):
            best = (total, machines)
    if best is not None:
        machines = best[1]
    else:
        machines = sorted(range(t.machines), key=lambda m: (-free.free_count[m], m))[:k]
        if sum(free.free_count[m] for m in machines) < n:
            return None
    gpus: list[int] = []
    for m in machines:
        gpus.extend(free.free_by_machine[m][: n - len(gpus)])
        if len(gpus) == n:
            break
    return Placement(t, tuple(gpus))
