"""Tiresias: discretised two-dimensional least-attained-service, skew-aware placement.

Follows Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
Learning" (NSDI'19), sec. 3-4, and its simulator (SymbioticLab/Tiresias,
simulator/run_sim.py, dlas_sim_jobs).

Decision rule, at every scheduling moment:
- Attained service = GPUs x running seconds (JobState.attained_service; the
  restore after a preemption counts, as the job holds its GPUs). With
  thresholds T1 < ... < T(K-1), a job is in queue k when its service is in
  [T(k), T(k+1)); new jobs are in queue 0, the highest priority. Default: two
  queues (as in the Pollux and Dally evaluations) split at 16 GPU-hours
  (57 600 GPU-s), the threshold of the Pollux artifact's Tiresias
  (petuum/adaptdl, simulator/tiresias.py: `_queue_threshold = 3600 * 16`).
  The Dally paper's own threshold was not available to us.
- Jobs are considered queue by queue; inside a queue, running jobs first, then
  waiting jobs FIFO by the time they entered the queue (arrival for queue 0,
  the moment of demotion or promotion otherwise), ties by arrival and job id.
  Keeping running jobs ahead of waiting ones in their own queue is what the
  Tiresias simulator does (it moves pending jobs behind the running ones every
  round), so a job is only ever preempted by a job of a strictly higher queue.
- A waiting job is placed if it can be; if not, running jobs of strictly lower
  queues are preempted, lowest priority first (last queue, latest entry), the
  fewest that make the placement possible (preemption.reclaim). If even that
  does not place it, it keeps waiting and the scan goes on (lower-priority
  jobs may still start in what is free).
- Placement (sec. 4.2, profile-based placement): a model whose skew (largest
  tensor / model size, ModelProfile.skew) exceeds `skew_threshold` must be
  consolidated on the fewest machines possible, ceil(GPUs / GPUs per machine),
  and waits for them; other models take the most consolidated placement free
  right now, at any tier, and never wait for a better one.
- Optional starvation knob (Tiresias' STARVELIMIT / `solve_starvation`): a
  waiting job below queue 0 whose current wait reaches knob x the time it has
  run since its last promotion goes back to queue 0 with its service counter
  reset. Off (None) by default, as in the Pollux artifact.
- The policy asks to be woken at the next demotion (a running job's service
  reaching its queue's upper threshold) and the next promotion.

Choices the paper leaves open (the project's reading):
- The skew threshold: the paper names high-skew models (VGG, AlexNet) but no
  number; 0.5 is ours. With the shipped profiles it separates AlexNet (0.62)
  and VGG-11 (0.77) from ResNet-18/50, MobileNetV3 and BERT-large (<= 0.24).
- "Fewest machines" ignores racks beyond preferring one rack; Tiresias
  consolidates on servers only.
- Promotion compares the *current* wait with the run time since the last
  promotion; the Tiresias simulator accumulates pending time over every wait
  since then. Ours is simpler to state and to test; both only matter when the
  knob is on.

One instance serves one simulation: it keeps per-job state (queue entry times,
promotion baselines) keyed by job id.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from heapq import heappop, heappush, nlargest
from operator import is_not

from artist.cluster import FreeCounts, FreeMap
from artist.jobstate import RUNNING, JobState
from artist.placement import Placement
from artist.policies.base import Decision, Policy, SchedulerView
from artist.policies.preemption import fewest_leading, fewest_machines, reclaim
from artist.policies.registry import register

# Pollux artifact (petuum/adaptdl simulator/tiresias.py): two queues, threshold 3600 * 16 GPU-seconds.
DEFAULT_THRESHOLDS = (3600.0 * 16,)
# Project's choice (see module docstring): between ResNet/BERT-like and AlexNet/VGG-like skews.
DEFAULT_SKEW_THRESHOLD = 0.5
# Tolerance on service comparisons: a wake-up computed for a threshold crossing
# must find the job across it despite rounding (GPU-seconds).
_EPS = 1e-6


@register("tiresias")
class Tiresias(Policy):
    def __init__(self, thresholds=DEFAULT_THRESHOLDS, skew_threshold: float = DEFAULT_SKEW_THRESHOLD,
                 starvation_knob: float | None = None):
        thresholds = tuple(float(t) for t in (thresholds if isinstance(thresholds, (list, tuple)) else [thresholds]))
        if any(t <= 0 for t in thresholds) or list(thresholds) != sorted(set(thresholds)):
            raise ValueError(f"tiresias: thresholds must be positive and strictly increasing, got {thresholds}")
        if starvation_knob is not None and not starvation_knob > 0:
            raise ValueError(f"tiresias: starvation_knob must be > 0 or None, got {starvation_knob}")
        self.thresholds = thresholds
        self._cuts = [t - _EPS for t in thresholds]  # queue k: service at or above k of these
        self.skew_threshold = float(skew_threshold)
        self.starvation_knob = None if starvation_knob is None else float(starvation_knob)
        self._run_base: dict[str, float] = {}  # running seconds at the last promotion
        self._entry: dict[str, tuple[int, float]] = {}  # job -> (queue, time it entered that queue)
        self._book = _Book()

    def parameters(self) -> dict:
        return {"thresholds": list(self.thresholds), "skew_threshold": self.skew_threshold,
                "starvation_knob": self.starvation_knob}

    # ---- queues ------------------------------------------------------------
    def service(self, state: JobState, now: float) -> float:
        """GPU-seconds of service since arrival or the last promotion."""
        return state.gpus * (state.running_seconds(now) - self._run_base.get(state.job_id, 0.0))

    def queue_of(self, state: JobState, now: float, service: float | None = None) -> int:
        """The job's queue; service: its service(state, now), when the caller has it already."""
        return bisect_right(self._cuts, self.service(state, now) if service is None else service)

    def needs_consolidation(self, state: JobState) -> bool:
        return state.model.skew > self.skew_threshold

    def _place(self, state: JobState, free: FreeMap) -> Placement | None:
        if self.needs_consolidation(state):
            return fewest_machines(free, state.gpus)
        return free.find(state.gpus)

    def _placeable(self, state: JobState, free: FreeMap | FreeCounts) -> bool:
        """Whether _place finds a placement on a map with these free counts, read off them: find() places any
        n up to the free total; fewest_machines() needs the ceil(n / GPUs per machine) freest machines to hold
        n (one machine's worth: one machine). Cheaper than the search, and the same answer (a test checks)."""
        n = state.gpus
        if n > free.total_free:
            return False
        if not self.needs_consolidation(state):
            return True
        per_machine = free.topology.gpus_per_machine
        if n <= per_machine:
            return free.most_free()[0] >= n
        return sum(nlargest(-(-n // per_machine), free.free_count)) >= n

    def _update_queue(self, state: JobState, now: float, service: float) -> int:
        q = self.queue_of(state, now, service)
        old = self._entry.get(state.job_id)
        if old is not None and old[0] == q:
            return q
        if q == 0:
            entered = state.arrival if old is None else now
        elif state.status == RUNNING:
            # Demoted while running: it crossed the threshold at a computable moment.
            over = max(0.0, service - self.thresholds[q - 1])
            entered = max(now - over / state.gpus, state.arrival if old is None else old[1])
        else:
            entered = now
        self._entry[state.job_id] = (q, entered)
        return q

    def _promote_starving(self, view: SchedulerView) -> list[str]:
        """Promote the waiting jobs the starvation knob lets back into queue 0; returns their ids."""
        knob = self.starvation_knob
        if knob is None:
            return []
        now = view.now
        promoted = []
        for state in view.waiting:
            if not state.has_run or self.queue_of(state, now) == 0:
                continue
            ran = state.running_seconds(now) - self._run_base.get(state.job_id, 0.0)
            if now - state.waiting_since >= knob * ran - _EPS:
                self._run_base[state.job_id] = state.running_seconds(now)
                self._entry[state.job_id] = (0, now)
                promoted.append(state.job_id)
        return promoted

    # ---- scheduling --------------------------------------------------------
    def schedule(self, view: SchedulerView) -> Decision:
        book = self._book
        now = view.now
        if book.now is not None and now <= book.now:
            self._book = book = _Book()  # a new simulation (one moment per instant in a run)
            self._entry.clear()
            self._run_base.clear()
        book.now = now
        running = {s.job_id: s for s in view.running}
        waiting = {s.job_id: s for s in view.waiting}
        changed = self._changes(book, running, waiting)
        changed.update(self._promote_starving(view))
        for job_id in sorted(changed):
            self._rank(book, running.get(job_id) or waiting[job_id], now)
        self._crossings(book, running, now)
        ranked = book.ranked
        allocations = view.current_allocations()
        free = view.plan()
        holding = set(running)
        running_last_first = None  # preemption candidates, built when first needed (below)
        # (consolidated?, GPUs, queue) of failed attempts. Placing a job only takes
        # GPUs, so a failure stays a failure until a preemption frees some.
        failed: set[tuple[bool, int, int]] = set()
        # queue -> free counts with every preemption candidate of a job of that queue given back (the same
        # until `free` or the running jobs change: then emptied)
        released: dict[int, FreeCounts] = {}
        for q, _, _, _, job_id in ranked:
            if job_id in holding:
                continue
            state = waiting.get(job_id) or running[job_id]  # a job preempted above may be placed again
            key = (self.needs_consolidation(state), state.gpus, q)
            if key in failed:
                continue
            placement = None
            if self._placeable(state, free):
                placement = self._place(state, free)
            if placement is not None:
                free.take(placement.gpus)
                released.clear()
            else:
                if running_last_first is None:
                    # lowest priority first: the jobs running at the start of this call (jobs placed in it
                    # come earlier in the rank, so never from a strictly lower queue than a later one)
                    running_last_first = [(k[0], k[4]) for k in reversed(ranked) if k[4] in running]
                candidates = []
                for other_queue, other in running_last_first:
                    if other_queue <= q:
                        break  # the rest are of this queue or higher
                    if other in holding:
                        candidates.append((other, allocations[other]))
                if q not in released:
                    released[q] = FreeCounts(free)
                    for _, placement in candidates:
                        released[q].give(placement)
                got = None
                if candidates and self._placeable(state, released[q]):
                    got = reclaim(free, candidates, lambda fm, s=state: self._place(s, fm),
                                  needed=fewest_leading(free, candidates, lambda c, s=state: self._placeable(s, c)))
                if got is None:
                    failed.add(key)
                    continue
                placement, free = got.placement, got.free
                released.clear()
                for victim in got.victims:
                    holding.discard(victim)
                    del allocations[victim]
                failed.clear()
            allocations[job_id] = placement
            holding.add(job_id)
        return Decision(allocations, wake_at=self._next_wake(view, book, running, now))

    # ---- what changed since the last moment ----------------------------------
    # The rank of every active job (queue, running before waiting, entry into the queue, arrival, job id)
    # is kept sorted between moments and changed only where something happened: a job arrived, started,
    # stopped, ended, was promoted, or its service crossed a threshold. A waiting job's service does not
    # grow; a running job's grows at its GPU count, so the moment it may cross is known in advance. The
    # answers are the ones re-deriving everything at every moment gives (tests/test_policy_tiresias.py).

    def _changes(self, book: "_Book", running: dict, waiting: dict) -> set[str]:
        """Jobs whose rank may have changed: started, stopped or arrived since the last moment, or seen
        as another state object; jobs that ended are forgotten."""
        new_running = running.keys() - book.running
        new_waiting = waiting.keys() - book.waiting
        for job_id in sorted((book.running | book.waiting) - running.keys() - waiting.keys()):
            self._forget(book, job_id)
        changed = new_running | new_waiting
        states = book.states
        # a job is re-ranked when the view shows it as another state object than last time (views built
        # afresh); counted at C speed, looked for one by one only when more differ than the new jobs
        for jobs, new in ((running, new_running), (waiting, new_waiting)):
            if sum(map(is_not, jobs.values(), map(states.get, jobs.keys()))) > len(new.difference(states)):
                changed.update(j for j, s in jobs.items() if states.get(j) is not s)
        book.running, book.waiting = set(running), set(waiting)
        return changed

    def _forget(self, book: "_Book", job_id: str) -> None:
        key = book.key.pop(job_id)
        del book.ranked[bisect_left(book.ranked, key)]
        del book.states[job_id]
        book.token.pop(job_id, None)
        self._entry.pop(job_id, None)
        self._run_base.pop(job_id, None)

    def _rank(self, book: "_Book", state: JobState, now: float) -> None:
        """Re-derive the job's queue and rank (as at every moment before), and for a running job when
        it may next cross a threshold and when it would (its wake-up)."""
        job_id = state.job_id
        service = self.service(state, now)
        q = self._update_queue(state, now, service)
        running = state.status == RUNNING
        key = (q, 0 if running else 1, self._entry[job_id][1], state.arrival, job_id)
        old = book.key.get(job_id)
        if old != key:
            if old is not None:
                del book.ranked[bisect_left(book.ranked, old)]
            insort(book.ranked, key)
            book.key[job_id] = key
        book.states[job_id] = state
        token = book.token[job_id] = book.token.get(job_id, 0) + 1
        if running and q < len(self.thresholds):
            # service = GPUs x (running seconds - base) grows at the GPU count from here: it reaches the
            # next cut near `cross`, the next threshold near `wake`. Both are kept a margin early, far
            # beyond rounding, so that the exact comparison (at every moment from then on) decides.
            left = (self._cuts[q] - service) / state.gpus
            heappush(book.cross, (now + left - _margin(now, left), job_id, token))
            wake = now + (self.thresholds[q] - service) / state.gpus
            heappush(book.wakes, (wake, job_id, token))

    def _crossings(self, book: "_Book", running: dict, now: float) -> None:
        """Running jobs that may have crossed a threshold by now: re-ranked exactly."""
        cross, token = book.cross, book.token
        near = []
        while cross and cross[0][0] <= now:
            entry = heappop(cross)
            if token.get(entry[1]) == entry[2]:
                near.append(entry)
        for entry in near:
            state = running[entry[1]]
            if self.queue_of(state, now) != book.key[entry[1]][0]:
                self._rank(book, state, now)
            else:
                heappush(cross, entry)  # not yet: looked at again at every moment until it crosses

    def _next_wake(self, view: SchedulerView, book: "_Book", running: dict, now: float) -> float | None:
        """The next demotion (a running job's service reaching its queue's threshold) or promotion: the
        wake-up times computed as now + (threshold - service) / GPUs for every running job, their
        minimum after now. Only the jobs whose wake-up, as computed when they were last ranked, is
        within a margin of the earliest are computed again now (the same value up to rounding)."""
        wakes, token = book.wakes, book.token
        best = None
        seen = []
        while wakes:
            wake, job_id, t = wakes[0]
            if token.get(job_id) != t:
                heappop(wakes)
                continue
            if best is not None and wake > best + _margin(now, best):
                break
            seen.append(heappop(wakes))
            state = running[job_id]
            q = book.key[job_id][0]
            exact = now + (self.thresholds[q] - self.service(state, now)) / state.gpus
            if exact > now and (best is None or exact < best):
                best = exact
        for entry in seen:
            heappush(wakes, entry)
        if self.starvation_knob is not None:
            for state in view.waiting:
                if state.has_run and book.key[state.job_id][0] > 0:
                    ran = state.running_seconds(now) - self._run_base.get(state.job_id, 0.0)
                    t = state.waiting_since + self.starvation_knob * ran
                    if t > now and (best is None or t < best):
                        best = t
        return best


class _Book:
    """Tiresias' bookkeeping between moments (Tiresias.schedule)."""

    def __init__(self):
        self.now: float | None = None
        self.ranked: list[tuple] = []  # every active job's rank, sorted
        self.key: dict[str, tuple] = {}  # job id -> its rank in `ranked`
        self.states: dict[str, JobState] = {}  # job id -> the state object it was ranked from
        self.running: set[str] = set()  # running at the last moment
        self.waiting: set[str] = set()
        self.token: dict[str, int] = {}  # job id -> its latest ranking: older heap entries are stale
        self.cross: list = []  # heap (time before which it cannot change queue, job id, token)
        self.wakes: list = []  # heap (wake-up as computed when ranked, job id, token)


def _margin(now: float, value: float) -> float:
    """How far a time computed at one moment may be from the same time computed at another, by rounding:
    generously (a relative 1e-9 of the magnitudes involved, ~10^7 units in the last place)."""
    return 1e-9 * max(1.0, abs(now), abs(value))
