"""Dally: network-sensitive priorities, delay scheduling with auto-tuned timers, preemption.

Follows Sharma et al., "Dally: A network-placement sensitive cluster scheduler
for deep learning" (also arXiv 2401.16492, "GPU Cluster Scheduling for
Network-Sensitive Deep Learning"): delay scheduling for consolidation
(Algorithm 1), an auto-tuner for the delay timers (Algorithm 2) and
network-sensitive preemption.

Decision rule, at every scheduling moment:
- Priority. P = W / R with W = iterations done / total iterations and
  R = time holding GPUs / ideal running time (compute per iteration x total
  iterations, no communication). For a job that ran, P is its speed relative to
  an ideal, communication-free run: low P means a large network-induced
  slowdown (checkpoint-restores count too). A job that has not run yet has
  W = 0 and is given P = 0, the same as a job that ran without progress: it is
  offered resources first, as least-attained-service schedulers do with new
  jobs. Ties: arrival time, then job id.
- Offers. Waiting jobs are offered, in increasing P, the most consolidated
  placement the free GPUs allow (FreeMap.find). A job that rejects an offer
  keeps waiting and the next job gets an offer; rejecting reserves nothing.
- Delay scheduling (Algorithm 1). With w the time the job has waited since it
  last entered the wait queue, it accepts only one-machine offers while
  w < T_machine, offers within one rack while w < T_machine + T_rack (the rack
  timer runs once the machine timer has expired, as in classic delay
  scheduling), and any offer afterwards. A job larger than a machine has
  T_machine = 0; one larger than a rack has T_machine = T_rack = 0.
- Auto-tuner (Algorithm 2, variant "dally"). Every accepted offer appends the
  job's wait w to a global list keyed by (tier of the accepted placement, GPU
  demand), time-stamped; entries older than `history_s` are dropped. A job's
  T_machine is mean + 2 x sample standard deviation of the (machine, demand)
  list, T_rack the same of the (rack, demand) list.
- Network-sensitive preemption. When the free GPUs offer a job a placement
  that is worse than the best its size allows, the job may preempt running
  jobs of strictly higher P (those least slowed down; highest P first, ties by
  job id) to get a strictly more consolidated placement that it would accept
  now (preemption.reclaim: the fewest such jobs, and only those whose GPUs the
  new placement uses). Preempted jobs go back to the wait queue and are
  offered resources in the same round, in their P order. Checkpoint-restore
  is charged by the simulator.
- The policy asks to be woken at the next expiry of a waiting job's timer.

Variants (all keep the preemption):
- dally-manual: fixed timers, default 12 h machine + 12 h rack (paper default).
- dally-nowait: both timers 0; a job takes any offer.
- dally-fullyconsolidated: infinite timers; a job accepts nothing worse than
  the best tier its size allows.

Choices the paper leaves open (the project's reading):
- P = 0 for a job that has not run (above).
- "Time in the run queue" is read as time holding GPUs, so that R measures
  the running slowdown only (waiting is not network-induced).
- Preemption only improves consolidation: a job with no offer at all (not
  enough free GPUs) never preempts. Without this rule every arrival on a full
  cluster (P = 0) would preempt a running job, which is least-attained-service
  time sharing, not network-sensitive preemption.
- Auto-tuner with an empty list gives a timer of 0 (no evidence that waiting
  pays); with one entry, that entry (no spread can be estimated); the
  history limit is a time window, default 24 h (our choice).
- Jobs placed in this round (preempted jobs placed again included) are not
  victims in the same round, so a job is preempted at most once per round.
  A preempted job placed again in the same round is, to the simulator, a
  migration (and pays the restore).

One instance serves one simulation: the auto-tuner's lists persist between calls.
"""

from __future__ import annotations

import heapq
import math
import statistics
import sys
from collections import deque
from fractions import Fraction

from artist.cluster import FreeCounts
from artist.jobstate import JobState
from artist.placement import MACHINE, NETWORK, RACK, TIER_ORDER, Placement
from artist.policies.base import Decision, Policy, SchedulerView
from artist.policies.preemption import best_tier_for_size, fewest_leading, reclaim
from artist.policies.registry import register

# Tolerance on timer comparisons (seconds): a wake-up computed for a timer
# expiry must find the timer expired despite rounding.
_EPS = 1e-6
TWELVE_HOURS = 12 * 3600.0  # Dally paper's default manual timers (machine and rack)
DEFAULT_HISTORY_S = 24 * 3600.0  # project's choice: the paper does not fix the window here


def network_priority(state: JobState, now: float) -> float:
    """Dally's P = W / R; 0 for a job that has not held GPUs yet."""
    held = state.running_seconds(now)
    if held <= 0.0:
        return 0.0
    done = state.iterations_done(now) / state.job.iterations
    return done * state.ideal_seconds() / held


# Exact sums of the retained waits: a finite float is an integer over a power of two no larger
# than 2^1074, so every wait is held as an integer multiple of 2^-1074 and its square as one of
# 2^-2148. Adding and dropping waits is then exact, whatever their order.
_SCALE_BITS = 1074


def _sqrt_of_fraction(n: int, m: int) -> float:
    """sqrt(n / m) (n / m in lowest terms, >= 0) rounded as statistics.stdev rounds it."""
    if _CORRECTLY_ROUNDED_SQRT:
        # Python >= 3.11: the correctly rounded root (statistics._float_sqrt_of_frac's method:
        # an integer root rounded to odd with 2 x 53 + 3 bits, then one rounding to a float).
        q = (n.bit_length() - m.bit_length() - _SQRT_BIT_WIDTH) // 2
        if q >= 0:
            a = math.isqrt(n // (m << 2 * q))
            return ((a | (a * a * (m << 2 * q) != n)) << q) / 1
        a = math.isqrt((n << -2 * q) // m)
        return (a | (a * a * m != n << -2 * q)) / (1 << -q)
    # Python 3.10: the variance rounded to a float, then math.sqrt.
    return math.sqrt(n / m)


_CORRECTLY_ROUNDED_SQRT = sys.version_info >= (3, 11)
_SQRT_BIT_WIDTH = 2 * sys.float_info.mant_dig + 3


def mean_plus_two_stdev(sum_scaled: int, sum_squares_scaled: int, count: int) -> float:
    """statistics.fmean(waits) + 2 x statistics.stdev(waits), bit for bit, from the exact sums of
    the waits (x 2^1074) and of their squares (x 2^2148), count >= 2.

    Both statistics functions are functions of these exact sums only: fmean is the correctly
    rounded sum (math.fsum) over the count; stdev rounds the square root of the exact sample
    variance (n sxx - sx^2) / (n (n - 1)) (correctly on Python >= 3.11, via a float variance on
    3.10)."""
    mean = sum_scaled / (1 << _SCALE_BITS) / count
    variance = Fraction(count * sum_squares_scaled - sum_scaled * sum_scaled,
                        count * (count - 1) << 2 * _SCALE_BITS)
    return mean + 2.0 * _sqrt_of_fraction(variance.numerator, variance.denominator)


class _Waits:
    """One auto-tuner list: (time, wait) oldest first, with exact running sums of the waits."""

    __slots__ = ("entries", "sum", "sum_squares", "other")

    def __init__(self):
        self.entries: deque[tuple[float, float]] = deque()
        self.sum = 0  # sum of the waits x 2^1074 (exact)
        self.sum_squares = 0  # sum of the squared waits x 2^2148 (exact)
        self.other = 0  # retained waits that are not finite floats (never in a simulation)

    def _add(self, wait: float, sign: int) -> None:
        if type(wait) is not float or not math.isfinite(wait):
            self.other += sign
            return
        n, d = wait.as_integer_ratio()
        scaled = n << (_SCALE_BITS - d.bit_length() + 1)
        self.sum += sign * scaled
        self.sum_squares += sign * scaled * scaled

    def append(self, now: float, wait: float) -> None:
        self.entries.append((now, wait))
        self._add(wait, 1)

    def drop_older(self, now: float, history_s: float) -> None:
        entries = self.entries
        while entries and now - entries[0][0] > history_s:
            self._add(entries.popleft()[1], -1)

    def timer(self) -> float:
        entries = self.entries
        if not entries:
            return 0.0
        if len(entries) == 1:
            return entries[0][1]
        if self.other:  # the statistics module's own way
            waits = [w for _, w in entries]
            return statistics.fmean(waits) + 2.0 * statistics.stdev(waits)
        return mean_plus_two_stdev(self.sum, self.sum_squares, len(entries))


class AutoTuner:
    """Algorithm 2: delay timers from the waits of recently accepted offers."""

    def __init__(self, history_s: float = DEFAULT_HISTORY_S):
        if not history_s > 0:
            raise ValueError(f"auto-tuner history must be > 0 seconds, got {history_s}")
        self.history_s = float(history_s)
        self._waits: dict[tuple[str, int], _Waits] = {}
        # timers as last computed (many jobs share a key): valid until an offer of that key is recorded or
        # its oldest retained wait leaves the history window (timer() checks, as drop_older would)
        self._cache: dict[tuple[str, int], float] = {}

    def record(self, now: float, tier: str, gpus: int, wait: float) -> None:
        key = (tier, gpus)
        waits = self._waits.get(key)
        if waits is None:
            waits = self._waits[key] = _Waits()
        waits.append(now, wait)
        self._cache.pop(key, None)

    def waits(self, now: float, tier: str, gpus: int) -> list[float]:
        """The retained waits, oldest first (entries older than the history limit are dropped)."""
        waits = self._waits.get((tier, gpus))
        if waits is None:
            return []
        waits.drop_older(now, self.history_s)
        self._cache.pop((tier, gpus), None)
        return [w for _, w in waits.entries]

    def timer(self, now: float, tier: str, gpus: int) -> float:
        """mean + 2 x sample standard deviation of the retained waits; 0 with none, the wait with one.
        Exactly statistics.fmean + 2 x statistics.stdev, from running sums instead of the list."""
        key = (tier, gpus)
        value = self._cache.get(key)
        waits = self._waits.get(key)
        if value is not None and (waits is None or not waits.entries
                                  or not now - waits.entries[0][0] > self.history_s):
            return value
        if waits is None:
            value = 0.0
        else:
            waits.drop_older(now, self.history_s)
            value = waits.timer()
        self._cache[key] = value
        return value


class _DallyBase(Policy):
    """Offers, delay scheduling and preemption; subclasses say where timers come from."""

    def __init__(self):
        self._waiting_priority: dict[str, tuple] = {}  # job id -> (state, version, P) while it waits

    def timers(self, state: JobState, now: float) -> tuple[float, float]:
        """(machine timer, rack timer) of this job now, before size rules are applied. A function of
        the job's GPU count, the time and the offers accepted so far: schedule() asks once per GPU
        count between accepted offers."""
        raise NotImplementedError

    def accepted(self, now: float, placement: Placement, gpus: int, wait: float) -> None:
        """Hook called for every accepted offer (the auto-tuner records it)."""

    # ---- delay scheduling ----------------------------------------------------
    def job_timers(self, view: SchedulerView, state: JobState) -> tuple[float, float]:
        """Timers after the size rules: 0 for a tier the job cannot fit in."""
        t = view.topology
        if state.gpus > t.gpus_per_rack:
            return 0.0, 0.0
        machine, rack = self.timers(state, view.now)
        if state.gpus > t.gpus_per_machine:
            machine = 0.0
        return machine, rack

    @staticmethod
    def allowed_tier(timers: tuple[float, float], wait: float) -> str:
        """Worst tier a job that has waited `wait` seconds accepts."""
        machine, rack = timers
        if wait + _EPS < machine:
            return MACHINE
        if wait + _EPS < machine + rack:
            return RACK
        return NETWORK

    @staticmethod
    def next_expiry(timers: tuple[float, float], wait: float, since: float) -> float | None:
        machine, rack = timers
        for limit in (machine, machine + rack):
            if wait + _EPS < limit and math.isfinite(limit):
                return since + limit
        return None

    # ---- scheduling ----------------------------------------------------------
    def schedule(self, view: SchedulerView) -> Decision:
        now = view.now
        topo = view.topology
        allocations = view.current_allocations()
        free = view.plan()
        priority = {}  # P of every job the round looks at: waiting jobs now, running ones when needed
        # jobs in rising (P, arrival, id): the waiting ones sorted once, the ones preempted in this round
        # on a heap beside them; the next job is the smaller head of the two
        queue = []
        pushed: list = []
        known = self._waiting_priority
        for s in view.waiting:
            # a waiting job's P holds while it waits (its progress and held time do not move): kept per
            # state object and version (the simulator bumps it whenever the job starts or stops)
            entry = known.get(s.job_id)
            if entry is not None and entry[0] is s and entry[1] == s.version:
                p = entry[2]
            else:
                p = network_priority(s, now)
                known[s.job_id] = (s, getattr(s, "version", None), p)
            priority[s.job_id] = p
            queue.append((p, s.arrival, s.job_id, s))
        if len(known) > 2 * len(view.waiting) + 64:  # forget jobs that no longer wait
            waiting_now = {s.job_id for s in view.waiting}
            for job_id in [j for j in known if j not in waiting_now]:
                del known[job_id]
        queue.sort()
        head = 0
        by_priority = None  # the running jobs, highest P first (ties by id): made at the first preemption try
        released = None  # (k, free counts with the first k preemption candidates given back): _released_prefix
        holding = {s.job_id: s for s in view.running}  # running and not preempted this round
        preempted: set[str] = set()
        # The caches hold until the free map and the tuner change (an accepted offer). A failed
        # preemption stays failed for later jobs: they have higher P, so fewer victims.
        offers: dict[int, Placement | None] = {}  # GPUs -> best free placement
        no_preemption: set[tuple[int, str]] = set()  # (GPUs, allowed tier) that found no victims
        timers_of: dict[int, tuple[float, float]] = {}  # GPUs -> job_timers (timers() reads the size only)
        wake: float | None = None
        while head < len(queue) or pushed:
            if pushed and (head == len(queue) or pushed[0] < queue[head]):
                p_job, _, job_id, state = heapq.heappop(pushed)
            else:
                p_job, _, job_id, state = queue[head]
                head += 1
            n = state.gpus
            # A job preempted this round starts a new wait now.
            if job_id in preempted:
                since = now
                wait = 0.0
            else:
                since = state.waiting_since
                wait = now - since
            timers = timers_of.get(n)
            if timers is None:
                timers = timers_of[n] = self.job_timers(view, state)
            if n > free.total_free:
                # no placement of n anywhere (find() would say None) and so no preemption tried: the job
                # only asks to be woken at its next timer expiry (next_expiry, inlined: most waiting jobs
                # of a loaded cluster end here at every moment)
                machine, both = timers[0], timers[0] + timers[1]
                if wait + _EPS < machine:
                    expiry = since + machine if machine < math.inf else None
                else:
                    expiry = since + both if wait + _EPS < both < math.inf else None
                if expiry is not None and expiry > now and (wake is None or expiry < wake):
                    wake = expiry
                continue
            if n in offers:
                offer = offers[n]
            else:
                offer = offers[n] = free.find(n)
            choice = None
            if offer is not None:
                allowed = self.allowed_tier(timers, wait)
                best = best_tier_for_size(topo, n)
                if offer.tier != best and (n, allowed) not in no_preemption:
                    candidates = None
                    for tier in (MACHINE, RACK):
                        rank = TIER_ORDER[tier]
                        if not (TIER_ORDER[best] <= rank < TIER_ORDER[offer.tier] and rank <= TIER_ORDER[allowed]):
                            continue
                        if candidates is None:
                            if by_priority is None:
                                for s in view.running:
                                    priority[s.job_id] = network_priority(s, now)
                                by_priority = sorted(view.running, key=lambda s: (-priority[s.job_id], s.job_id))
                            # the running jobs not preempted yet with a higher P, highest first: a prefix
                            candidates = []
                            for s in by_priority:
                                if priority[s.job_id] <= p_job:
                                    break
                                if s.job_id in holding:
                                    candidates.append((s.job_id, allocations[s.job_id]))
                            released = _released_prefix(released, free, candidates)
                        # reclaim() first tries the map with every candidate given back; its answer (is
                        # there a placement of n at this tier?) is read off that map's counts here
                        got = None
                        if candidates and _fits(released[1], n, tier):
                            got = reclaim(free, candidates, lambda fm, t=tier: fm.find(n, t),
                                          needed=fewest_leading(free, candidates, lambda c, t=tier: _fits(c, n, t)))
                        if got is not None:
                            released = None
                            choice, free = got.placement, got.free
                            for victim in got.victims:
                                v = holding.pop(victim)
                                del allocations[victim]
                                preempted.add(victim)
                                heapq.heappush(pushed, (priority[victim], v.arrival, victim, v))
                            break
                    else:
                        no_preemption.add((n, allowed))
                if choice is None and TIER_ORDER[offer.tier] <= TIER_ORDER[allowed]:
                    choice = offer
                    free.take(offer.gpus)
            if choice is None:
                expiry = self.next_expiry(timers, wait, since)
                if expiry is not None and expiry > now and (wake is None or expiry < wake):
                    wake = expiry
                continue
            offers.clear()
            no_preemption.clear()
            timers_of.clear()
            released = None
            allocations[job_id] = choice
            self.accepted(now, choice, n, wait)
        return Decision(allocations, wake_at=wake)


def _released_prefix(released, free, candidates):
    """(len(candidates), FreeCounts of `free` with those candidates' GPUs given back, candidates): the
    counts of the map reclaim() tries first. The jobs of a round come in rising P, so each one's candidates
    are a prefix of the last one's (while `free` and the running jobs stay as they were; the caller drops
    `released` when they change): the counts are the last one's less the dropped candidates' GPUs, not a
    new pass over every candidate."""
    k = len(candidates)
    if released is not None and released[0] >= k:
        if released[0] == k:
            return released
        counts = released[1].copy()
        for _, placement in released[2][k:]:
            counts.take(placement)
    else:
        counts = FreeCounts(free)
        for _, placement in candidates:
            counts.give(placement)
    return k, counts, candidates


def _fits(counts: FreeCounts, n: int, tier: str) -> bool:
    """Whether FreeMap.find(n, tier) finds a placement on a map with these free counts: the most
    consolidated tier possible there is no worse than `tier`."""
    best = counts.best_tier_possible(n)
    return best is not None and TIER_ORDER[best] <= TIER_ORDER[tier]


@register("dally")
class Dally(_DallyBase):
    """Dally (the paper's policy): network-sensitive priorities, timers auto-tuned from recent waits, preemption."""

    def __init__(self, history_s: float = DEFAULT_HISTORY_S):
        super().__init__()
        self.tuner = AutoTuner(history_s)

    def parameters(self) -> dict:
        return {"timers": "auto", "history_s": self.tuner.history_s}

    def timers(self, state: JobState, now: float) -> tuple[float, float]:
        return (self.tuner.timer(now, MACHINE, state.gpus), self.tuner.timer(now, RACK, state.gpus))

    def accepted(self, now: float, placement: Placement, gpus: int, wait: float) -> None:
        self.tuner.record(now, placement.tier, gpus, wait)


@register("dally-manual")
class DallyManual(_DallyBase):
    """Dally with fixed delay timers (the paper's manual setting: 12 h machine, 12 h rack)."""

    def __init__(self, machine_timer_s: float = TWELVE_HOURS, rack_timer_s: float = TWELVE_HOURS):
        if machine_timer_s < 0 or rack_timer_s < 0:
            raise ValueError(f"dally-manual: timers must be >= 0, got {machine_timer_s}, {rack_timer_s}")
        super().__init__()
        self.machine_timer_s = float(machine_timer_s)
        self.rack_timer_s = float(rack_timer_s)

    def parameters(self) -> dict:
        return {"machine_timer_s": self.machine_timer_s, "rack_timer_s": self.rack_timer_s}

    def timers(self, state: JobState, now: float) -> tuple[float, float]:
        return self.machine_timer_s, self.rack_timer_s


@register("dally-nowait")
class DallyNoWait(_DallyBase):
    """Dally with no delay: every job takes the best placement free now."""

    def parameters(self) -> dict:
        return {"machine_timer_s": 0.0, "rack_timer_s": 0.0}

    def timers(self, state: JobState, now: float) -> tuple[float, float]:
        return 0.0, 0.0


@register("dally-fullyconsolidated")
class DallyFullyConsolidated(_DallyBase):
    """Dally that waits forever for the most consolidated placement."""

    def parameters(self) -> dict:
        return {"machine_timer_s": math.inf, "rack_timer_s": math.inf}

    def timers(self, state: JobState, now: float) -> tuple[float, float]:
        return math.inf, math.inf
