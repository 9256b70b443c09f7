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
from artist.jobstate import RUNNING
from artist.placement import TIER_ORDER
from artist.policies.base import Decision, Policy, SchedulerView, start_strictly_in_order
from artist.policies.preemption import best_tier_for_size
from artist.policies.registry import register


@register("gandiva")
class Gandiva(Policy):
    def __init__(self, migrate: bool = True):
        if not isinstance(migrate, bool):  # bool("false") is True: a quoted word must not switch it on
            raise ValueError(f"migrate must be true or false, got {migrate!r}")
        self.migrate = migrate
        # What schedule() remembers between moments so that it looks only at what changed (same answers):
        # every running job seen, with the placement it was seen on; and the multi-machine jobs that may
        # still gain from a move, with their placement and their step there alone (None until asked).
        self._seen: dict[str, tuple] = {}  # job id -> (its state object, its placement) when last seen
        self._candidates: dict[str, _Candidate] = {}
        # The free GPUs per machine at the last moment (after its starts), and two counters: `_version`
        # moves whenever they differ from the moment before, `_epoch` only when some machine has more free
        # GPUs than the moment before (_advance_counters). A job that could not reach a better tier
        # cannot while the epoch stands (free GPUs only taken since); a job whose move did not pay, while
        # the version stands (the same target, fewer iterations left to gain on).
        self._last_free: tuple[list, list[int]] | None = None  # (free GPUs by machine, their counts)
        self._version = 0
        self._epoch = 0

    def parameters(self) -> dict:
        return {"migrate": self.migrate}

    def schedule(self, view: SchedulerView) -> Decision:
        allocations = view.current_allocations()
        free = view.plan()
        start_strictly_in_order(view.waiting, free, allocations, FreeMap.first_fit)
        if not self.migrate:
            return Decision(allocations)
        candidates = self._watch(view)
        self._advance_counters(free)
        version, epoch = self._version, self._epoch
        moved = False  # once a job moves, `free` is no longer the moment's map: nothing remembered applies
        for entry in sorted(candidates.values(), key=lambda e: (-TIER_ORDER[e.placement.tier], e.state.job_id)):
            state, current = entry.state, entry.placement
            if not moved and (entry.tier_epoch == epoch or entry.unpaid_version == version):
                continue
            if entry.step is None:
                entry.step = view.estimate(state, current).step_seconds
                entry.floor = view.step_floor(state)
            now_step, floor = entry.step, entry.floor
            # No target can save more than the step now less the fastest step the job could have, and
            # its remaining iterations only fall while it holds this placement: once even that saving
            # cannot pay the restore, no later moment can either (the same answer as the search below,
            # without it: most multi-machine jobs end up here, and are not looked at again).
            if (now_step - floor) * state.remaining_iterations(view.now) <= view.restore_seconds:
                del candidates[state.job_id]
                continue
            # the tier find() would reach with the job's own GPUs back, read off the counts: most jobs
            # cannot move up, and for them the trial copy below would be wasted
            if TIER_ORDER[free.best_tier_with(state.gpus, current)] >= TIER_ORDER[current.tier]:
                if not moved:
                    entry.tier_epoch = epoch
                continue
            trial = free.copy()
            trial.give(current.gpus)
            target = trial.find(state.gpus)
            if TIER_ORDER[target.tier] >= TIER_ORDER[current.tier]:
                if not moved:
                    entry.unpaid_version = version
                continue
            saved = now_step - view.estimate(state, target).step_seconds
            if saved * state.remaining_iterations(view.now) <= view.restore_seconds:
                if not moved:
                    entry.unpaid_version = version
                continue
            moved = True
            trial.take(target.gpus)
            free = trial
            allocations[state.job_id] = target
        return Decision(allocations)

    def _watch(self, view: SchedulerView) -> dict[str, "_Candidate"]:
        """The multi-machine running jobs that may still gain from a move, brought up to date with the
        view. view.running is in start order, so the jobs started (or moved) since the last moment are its
        tail: the walk back stops at the first job seen before as the same state object on the same
        placement. When it stops at none (the first moment, or a view made of new objects each time)
        everything is rebuilt from the view."""
        seen, candidates = self._seen, self._candidates
        running = view.running
        fresh = []
        for state in reversed(running):
            placement = state.placement
            known = seen.get(state.job_id)
            if known is not None and known[0] is state and known[1] is placement:
                break
            fresh.append(state)
        if len(fresh) == len(running) or len(seen) > 2 * len(running) + 64:  # (memory stays bounded)
            seen.clear()
            candidates.clear()
            fresh = running
        for state in fresh:
            placement = state.placement
            seen[state.job_id] = (state, placement)
            candidates.pop(state.job_id, None)
            # a job already at the best tier its size allows anywhere (16 GPUs in one rack of 8-GPU
            # machines) can never move up
            if TIER_ORDER[placement.tier] > TIER_ORDER[best_tier_for_size(view.topology, placement.size)]:
                candidates[state.job_id] = _Candidate(state, placement)
        gone = [j for j, c in candidates.items() if c.state.status != RUNNING or c.state.placement is not c.placement]
        for job_id in gone:
            del candidates[job_id]
        return candidates

    def _advance_counters(self, free: FreeMap) -> None:
        # the version compares which GPUs are free (find() returns GPU ids, and on an ecmp spine a
        # placement's time depends on them); the epoch compares counts (all the tier check reads)
        if self._last_free is None or free.free_by_machine != self._last_free[0]:
            self._version += 1
            counts, last = free.free_count, None if self._last_free is None else self._last_free[1]
            if last is None or len(last) != len(counts) or any(a > b for a, b in zip(counts, last)):
                self._epoch += 1
            self._last_free = (free.free_by_machine[:], free.free_count[:])


class _Candidate:
    """A multi-machine running job Gandiva may still move, with what it remembers of it."""

    __slots__ = ("state", "placement", "step", "floor", "tier_epoch", "unpaid_version")

    def __init__(self, state, placement):
        self.state, self.placement = state, placement
        self.step: float | None = None  # its step alone on `placement` (asked once, when first needed)
        self.floor = 0.0  # the fastest step it could have anywhere (PerfModel.step_floor)
        self.tier_epoch = -1  # the epoch of its last failed tier check (-1: none)
        self.unpaid_version = -1  # the version at its last move that did not pay (-1: none)
