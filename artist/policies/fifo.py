"""FIFO: the plain baseline.

Decision rule: jobs start in arrival order (ties by job id); the head of the
queue takes the most consolidated free placement (one machine if it fits, else
one rack, else across racks; see FreeMap.find). If the head cannot be placed,
nothing behind it starts (strict FIFO, no backfilling), so the queue order is
the start order. Running jobs are never preempted or migrated.
"""

from __future__ import annotations

from artist.cluster import FreeMap
from artist.policies.base import Decision, Policy, SchedulerView, start_strictly_in_order
from artist.policies.registry import register


@register("fifo")
class Fifo(Policy):
    def schedule(self, view: SchedulerView) -> Decision:
        allocations = view.current_allocations()
        if view.waiting:
            start_strictly_in_order(view.waiting, view.plan(), allocations, FreeMap.find)
        return Decision(allocations)
