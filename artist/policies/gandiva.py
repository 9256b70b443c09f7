"""Gandiva: network-agnostic placement, introspective migration.

Follows Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep
Learning" (OSDI'18): jobs are started wherever GPUs are free, and the
scheduler later improves locality by migrating running jobs (sec. 4,
"migration ... to improve locality"), paying a checkpoint-restore.

Decision rule, at every scheduling moment:
1. Start waiting jobs in arrival order (ties by job id) on the lowest-numbered
   free GPUs (FreeMap.first_fit), with no regard to machine or rack. The queue
   discipline is the FIFO baseline's (the head blocks the rest when it does not
   fit), so that Gandiva and FIFO differ only in placement and migration.
2. Then look at the running jobs that are not on one machine, worst tier
   first (network before rack, ties by job id). A job migrates to the most
   consolidated placement the free GPUs plus its own now allow (FreeMap.find)
   when that placement is of a strictly better tier and the time it saves
   over the rest of the job exceeds the checkpoint-restore it costs:
       (t_now - t_new) x remaining iterations > restore seconds,
   with t the step time read through view.estimate(). Free GPUs only
   appear when jobs finish, so checking at every scheduling moment is
   checking "when better-consolidated GPUs free up".

Choices the paper leaves open (the project's reading):
- Gandiva's time-slicing and GPU packing (several jobs on one GPU) are not
  modelled: a GPU holds one job, as in every policy of the suite.
- The benefit test is ours: Gandiva migrates "when it improves locality"; we
  require a net gain so that a job near its end is not moved for nothing.
- Jobs started at this moment are not migrated at the same moment.
"""

from __future__ import annotations

from artist.cluster import FreeMap
from artist.placement import MACHINE, TIER_ORDER
from artist.policies.base import Decision, Policy, SchedulerView, start_strictly_in_order
from artist.policies.registry import register


@register("gandiva")
class Gandiva(Policy):
    def __init__(self, migrate: bool = True):
        self.migrate = bool(migrate)

    def parameters(self) -> dict:
        return {"migrate": self.migrate}

    def schedule(self, view: SchedulerView) -> Decision:
        allocations = view.current_allocations()
        free = view.plan()
        start_strictly_in_order(view.waiting, free, allocations, FreeMap.first_fit)
        if not self.migrate:
            return Decision(allocations)
        movable = [s for s in view.running if s.placement.tier != MACHINE]
        movable.sort(key=lambda s: (-TIER_ORDER[s.placement.tier], s.job_id))
        for state in movable:
            current = state.placement
            # the tier find() would reach with the job's own GPUs back, read off the counts: most jobs
            # cannot move up, and for them the trial copy below would be wasted
            if TIER_ORDER[free.best_tier_with(state.gpus, current)] >= TIER_ORDER[current.tier]:
                continue
            trial = free.copy()
            trial.give(current.gpus)
            target = trial.find(state.gpus)
            if TIER_ORDER[target.tier] >= TIER_ORDER[current.tier]:
                continue
            saved = view.estimate(state, current).step_seconds - view.estimate(state, target).step_seconds
            if saved * state.remaining_iterations(view.now) <= view.restore_seconds:
                continue
            trial.take(target.gpus)
            free = trial
            allocations[state.job_id] = target
        return Decision(allocations)
