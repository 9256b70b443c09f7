"""The periodic steady state of jobs that share links, at the granularity of collective phases.

Every job repeats its step graph: step k+1's roots start when step k's last
node ends (as network/steady.py unrolls steps). A node is a fixed part
(compute; or the start-up of a collective's first hop; or a whole collective that
meets no other job's traffic, at its alone time) followed, for a collective
that crosses a link another job also crosses, by its bundles (demand.py: its
edges, alike ones merged) draining their bytes. Active bundles share the
links other jobs also cross max-min fairly per edge (flow/maxmin.py, with
each bundle's edges as its load and its alone rate as its cap: its own links
are accounted in that rate), computed per group of active bundles linked by
shared links and memoised by the group's flows (their class numbers).
Rates change only when a bundle starts or drains or one of its buffers fills
or empties, so the cost of a step is a few events per collective, not per
transfer. An event touches only the bundles of the groups it changes: each
bundle keeps its bytes as of its last rate change and its next event on a heap
(older entries go stale), and the groups re-shared are found from the links
where something happened, so an event in a component of ~75 active bundles
costs a few groups, not all.

Buffered stages (docs/pages/decisions/0002-buffered-stages.md): a bundle whose
shared links include links going up (towards the spine) and links going down
(PhaseBundle.ups) is two stages, its up links then its down links, with up to
BUFFER_BYTES per edge waiting in the switch between them (the transport's
window: no more can be in flight). While that buffer is neither empty nor full,
each stage is a flow of its own on its own links; where a bound binds (empty
while the down stage would go faster, full while the up stage would), the two
move as one flow on all the bundle's links, as a bundle of one stage does
(_staged_rates: every two-stage bundle split, those whose bound binds coupled,
recomputed until none binds). Why: in ns-3 a flow across two shared ports gets
the smaller of its two *mean* shares, its frames waiting between the ports,
where one fluid flow gets the smaller share at every instant, which is less
when the two ports are busy at different times (network/phase/__init__.py
has the case). A job alone is one stage: nothing else moves its shares.

Latency shown when slowed (model.contended_phase's `shown`): a bundle whose
feeding edge is slowed too sends at its share and waits `shown` seconds per
byte between its chunks; its rate is 1 / (1 / share + shown) and the link
time of its waits goes to the others (_rates_shown: max-min fair while
sending, each such bundle loading its links by the fraction of time it sends,
iterated to the fixed point of those fractions). A bundle alone on its links
then drains at its cap (to rounding), as before.

Colliding bursts (model.burst_terms): a bundle whose channel shares its NIC
with sibling channels bursts at its burst rate and hides its hop latency behind
its siblings' turns, until another job's burst on one of its shared links halves
its rate and the latency shows. Where such bundles meet other jobs' (several
jobs in the run), each one's cap becomes 1 / (1 / cap + P x exposed) before
max-min, P the chance that the other jobs' traffic on one of its links leaves
too little room for its burst: (their mean rates there - (capacity - its burst))
/ its burst, the largest over its links, clamped to [0, 1] (_collision_caps).
Its bundle classes then also name the job (P depends on whose bundles meet). A
job alone, or a run without such bundles, is timed as without them.

The run is one continuous simulation (no re-runs from a common start): it
stops when every job's mean step over the last window of the slowest job is
within `tolerance` of the mean over the window before (means over a common
time span, so a fast job beside a slow one is averaged over whole periods of
the slow one; a window is `window` steps of the slowest job, fewer when they
hold WINDOW_PHASES contended phases: window_of), or when the slowest job has
run `max_steps` steps, or, past `event_budget` events, once every job has
ended a step, or after `max_events` events (then converged is False unless
the windows agree). A job that no other job can disturb before the next event
of another job skips whole steps at once at its alone step time (exact in this
model: nothing else shares its bundles' links until then), so a fast job
beside a slow one costs little.

Two implementations of one algorithm: run_component's loop here (the reference,
and the documentation) and engine.cc (native.py builds and loads it), which
performs the same floating-point operations in the same order and so gives the
same answers bit for bit (tests/test_phase_native.py), ~150x faster an event. Which
one answers: ARTIST_PHASE_ENGINE (native.py), recorded in PhaseSteady.engine.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from artist.grouping import groups_sharing
from artist.network.flow.maxmin import max_min_rates, max_min_rates_small
from artist.network.phase import native

TOLERANCE = 0.01  # relative change of the mean step between the last two windows (choice)
WINDOW = 4  # steps of the slowest job per window (choice), at most:
WINDOW_PHASES = 64  # a window needs no more of the slowest job's steps than hold this many contended phases
# (choice): a job with thousands of collectives per step (an LLM's pipeline and tensor-parallel transfers)
# averages over as many alignments within one step as a small job over four; measured on 20-job
# components of a 1 000-job trace, answers within 0.35 % of the 4-step windows' at a third of the events
MAX_STEPS = 32  # steps of the slowest job (a cap: no input runs without bound)
EVENT_BUDGET = 1_000_000  # events after which a run stops at the first step end where every job has ended a
# step (a job of one step is measured by it; the others leave their first step out), converged False unless
# its windows agree (choice). Why: components of 20-30 jobs of a 1 000-job trace, many of them LLM jobs of
# 2 000-7 000 collectives a step, need 4-300 M events to settle within 1 % or never do; measured on them,
# answers at this budget are within 1.5 % (median 0.06 %) of runs of 300 M events; a fixed cap instead leaves
# slow jobs without a whole step. Stopping at one step of the slowest job rather than two (version 13) halves
# those runs' events and moved their answers by at most 0.29 % (median 0.02 %; three 25-29-job components)
MAX_EVENTS = 20_000_000  # events per run (a cap: no input runs without bound; then converged False)
MAX_RATE_MEMO = 50_000  # active sets whose rates are kept per run (a bound on memory, not a tuning)


@dataclass(frozen=True)
class PhaseBundle:
    work: float  # bytes per edge to drain
    cap: float  # its alone rate, bytes/s per edge
    crossings: tuple[tuple[int, float], ...]  # (shared link index, load) of every shared link it crosses
    burst_rate: float = 0.0  # bytes/s per edge while its channel bursts alone (model.burst_terms; 0: exposed 0)
    exposed: float = 0.0  # seconds per byte of hop latency shown when every burst of it collides
    shown: float = 0.0  # seconds per byte of hop latency shown at every round when slowed (its feeder slowed too)
    ups: int = 0  # crossings[:ups] are links going up (towards the spine), crossings[ups:] down: two stages
    # with bytes buffered between them when both are non-empty (run_component), one stage otherwise


@dataclass(frozen=True)
class PhaseNode:
    deps: tuple[int, ...]
    seconds: float  # the fixed part: compute, a collective's first hop, or whole undisturbed collectives
    communication: bool  # a collective with bundles: its whole duration counts as communication
    bundles: tuple[PhaseBundle, ...] = ()  # drained after the fixed part
    comm_seconds: float = 0.0  # of a node without bundles: the part of `seconds` that is communication


@dataclass(frozen=True)
class PhaseJob:
    nodes: tuple[PhaseNode, ...]


@dataclass(frozen=True)
class PhaseSteady:
    step_seconds: float  # mean step over the measured span
    comm_seconds: float  # communication nodes' durations per step, mean over the same steps
    first_step_seconds: float
    steps: int  # steps simulated
    converged: bool
    engine: str = "python"  # which implementation ran the loop: "python" (this module) or "compiled" (engine.cc)


class _Job:
    """A job's progress through its repeated step."""

    __slots__ = ("spec", "dependents", "roots", "deps_left", "left", "started", "step_start", "comm", "ends",
                 "comms", "bundles_left")

    def __init__(self, spec: PhaseJob):
        self.spec = spec
        self.dependents = [[] for _ in spec.nodes]
        for i, node in enumerate(spec.nodes):
            for d in node.deps:
                self.dependents[d].append(i)
        self.roots = [i for i, node in enumerate(spec.nodes) if not node.deps]
        self.ends: list[float] = []
        self.comms: list[float] = []
        self.started = [0.0] * len(spec.nodes)
        self.bundles_left = [0] * len(spec.nodes)


def run_component(jobs: Sequence[PhaseJob], capacity: Sequence[float], steps: int | None = None,
                  window: int = WINDOW, tolerance: float = TOLERANCE, max_steps: int = MAX_STEPS,
                  max_events: int = MAX_EVENTS, alone: Sequence[PhaseSteady] | None = None,
                  event_budget: int = EVENT_BUDGET, engine: str | None = None,
                  links: Sequence[Sequence[int]] | None = None) -> list[PhaseSteady]:
    """Steady steps of the jobs together on shared links of these capacities (bytes/s).
    steps: run exactly this many steps of every job instead (1: a job's step alone).
    alone: each job's step alone (run_component([job], [], steps=1)): enables skipping undisturbed steps.
    links: per job, the component's number of each link the job's crossings name (job j's link k is
    links[j][k]: jobs numbered on their own, as model.py memoises them); None: they name the component's.
    engine: "python" (this module's loop), "compiled" (engine.cc: the same answers bit for bit, faster),
    None: $ARTIST_PHASE_ENGINE (native.py; default: compiled where it builds)."""
    alone_steps = None if alone is None else [a.step_seconds for a in alone]
    alone_comms = None if alone is None else [a.comm_seconds for a in alone]
    runner = None if engine == "python" else native.compiled_runner(required=engine == "compiled")
    if runner is not None:
        windows = [window_for(native.packed(job).phases, window) for job in jobs]
        run = runner(jobs, links, capacity, steps, windows, tolerance, max_steps, max_events, event_budget,
                     alone_steps, alone_comms)
        return [replace(_result(run.jobs, j, windows, tolerance, run.done and steps is None, run.now),
                        engine="compiled") for j in range(len(jobs))]
    if links is not None:
        jobs = [_renumbered(job, mapping) for job, mapping in zip(jobs, links)]
    windows = [window_of(job, window) for job in jobs]
    bursty = len(jobs) > 1 and any(b.exposed > 0 for job in jobs for node in job.nodes for b in node.bundles)

    def class_key(j: int, b: PhaseBundle) -> tuple:
        return (j, b.crossings, b.cap, b.burst_rate, b.exposed, b.shown, b.ups) if bursty else (
            b.crossings, b.cap, b.shown, b.ups)

    # bundle classes numbered in order of appearance, three numbers each: the whole bundle (c), its up stage
    # (c + UP), its down stage (c + DOWN); the rates memo's keys and the order max-min rates are computed in,
    # the same in both engines. class_flows: per number, the flow max-min sees (cap, crossings, number)
    class_of: dict = {}
    class_flows: list = []
    class_two: list = []  # per number: the bundle has two stages (both kinds of shared links, several jobs)
    class_bursts: list = []  # per number: (job, burst rate, exposed), read by _collision_caps
    class_shown: list = []  # per number: seconds per byte shown when slowed, read by _rates_shown
    for j, job in enumerate(jobs):
        for node in job.nodes:
            for b in node.bundles:
                key = class_key(j, b)
                if key not in class_of:
                    c = class_of[key] = len(class_flows)
                    two = len(jobs) > 1 and 0 < b.ups < len(b.crossings)
                    for number, crossings in ((c + BOTH, b.crossings), (c + UP, b.crossings[:b.ups]),
                                              (c + DOWN, b.crossings[b.ups:])):
                        class_flows.append([j, None, None, b.work, b.cap, crossings, None, number])
                        class_two.append(two)
                        class_bursts.append((j, b.burst_rate, b.exposed))
                        class_shown.append(b.shown)
    showing = any(class_shown)
    state = [_Job(j) for j in jobs]
    capacity = np.asarray(capacity, dtype=np.float64)
    heap: list = []
    seq = 0
    now = 0.0
    events = 0
    live: dict[int, _Bundle] = {}  # active bundles by id (ids in order of start)
    bundle_events: list = []  # (time of a bundle's next event, its id, its version): stale once it moves on
    next_id = 0
    rates_of: dict = {}  # the rates memo: a group's flows (their sorted class numbers) -> their rates
    dirty: set = set()  # shared links where a bundle started, ended or met an event at this instant
    done = False

    def push(when: float, job: int, node: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (when, seq, job, node))

    def start_step(j: int) -> None:
        s = state[j]
        s.deps_left = [len(n.deps) for n in s.spec.nodes]
        s.left = len(s.spec.nodes)
        s.step_start = now
        s.comm = 0.0
        for i in s.roots:
            start_node(j, i)

    def start_node(j: int, i: int) -> None:
        state[j].started[i] = now
        push(now + state[j].spec.nodes[i].seconds, j, i)

    def end_node(j: int, i: int) -> None:
        nonlocal done
        s = state[j]
        node = s.spec.nodes[i]
        if node.communication:
            s.comm += now - s.started[i]
        else:
            s.comm += node.comm_seconds
        s.left -= 1
        for d in s.dependents[i]:
            s.deps_left[d] -= 1
            if s.deps_left[d] == 0:
                start_node(j, d)
        if s.left == 0:
            s.ends.append(now)
            s.comms.append(s.comm)
            if _should_stop(state, steps, windows, tolerance, max_steps, events >= event_budget):
                done = True
            else:
                start_step(j)
                if alone_steps is not None:
                    skip_undisturbed(j)

    def skip_undisturbed(j: int) -> None:
        """Whole steps of job j at its alone time while no other job can start a bundle (before another
        job's next event, with no other job's bundle flowing): j shares no link with anyone meanwhile,
        so each of those steps is its step alone. Called when j has just started a step."""
        nonlocal now
        if live or alone_steps[j] <= 0:
            return
        horizon = min((t for t, _, job, _ in heap if job != j), default=math.inf)
        if not math.isfinite(horizon):  # another job between events at this instant: nothing known ahead
            return
        k = math.floor((horizon - now) / alone_steps[j]) - 1  # the step that meets the event is simulated
        if steps is not None:
            k = min(k, steps - len(state[j].ends))
        if k < 1:
            return
        s = state[j]
        heap[:] = [e for e in heap if e[2] != j]  # j's step just started: drop it, add k steps alone
        heapq.heapify(heap)
        base = now
        for n in range(1, k + 1):
            s.ends.append(base + n * alone_steps[j])
            s.comms.append(alone_comms[j])
        saved, now = now, base + k * alone_steps[j]
        start_step(j)
        now = saved

    def flow_rates(classes: tuple) -> list:
        """Max-min rates of flows of these class numbers (sorted), memoised by them: a group's bounds vary
        more than which of its bundles are split (on components of 20-30 jobs it still misses ~90 %)."""
        found = rates_of.get(classes)
        if found is None:
            if len(rates_of) >= MAX_RATE_MEMO:
                rates_of.clear()
            ordered = [class_flows[c] for c in classes]
            if bursty:
                ordered = _collision_caps(ordered, class_bursts, capacity)
            found = rates_of[classes] = (_rates_shown(ordered, class_shown, capacity) if showing
                                         else _rates(ordered, capacity)).tolist()
        return found

    def reschedule(b: _Bundle) -> None:
        """b's next event on `bundle_events` (its older entries go stale): its rates or bound just changed."""
        b.version += 1
        t, b.kind = b.next_event()
        if t < math.inf:
            heapq.heappush(bundle_events, (now + t, b.ident, b.version))

    for j in range(len(state)):
        start_step(j)
    while heap or live:
        if done or events >= max_events:
            break
        while bundle_events and not _current(bundle_events[0], live):
            heapq.heappop(bundle_events)
        t_timer = heap[0][0] if heap else math.inf
        t_bundle = bundle_events[0][0] if bundle_events else math.inf
        now = min(t_timer, t_bundle)
        if now == math.inf:  # bundles at rate 0 and nothing else to come (a link of no capacity)
            break
        # bundles whose event is due: brought to now, at the point the event names exactly (a stage's last
        # byte, an empty or a full buffer), their links re-shared below
        finished = []
        while bundle_events and bundle_events[0][0] <= now:
            entry = heapq.heappop(bundle_events)
            if not _current(entry, live):
                continue
            b = live[entry[1]]
            b.advance(now)
            b.reach()
            if b.drained():
                finished.append(b)
                del live[b.ident]
            dirty.update(link for link, _ in b.crossings)
        for b in finished:
            events += 1
            s = state[b.job]
            s.bundles_left[b.node] -= 1
            if s.bundles_left[b.node] == 0:
                end_node(b.job, b.node)
        while heap and heap[0][0] <= now and not done:
            _, _, j, i = heapq.heappop(heap)
            events += 1
            node = state[j].spec.nodes[i]
            if node.bundles:
                state[j].bundles_left[i] = len(node.bundles)
                for pb in node.bundles:
                    cls = class_of[class_key(j, pb)]
                    b = live[next_id] = _Bundle(next_id, j, i, pb.work, pb.crossings, cls, class_two[cls], now)
                    next_id += 1
                    if pb.crossings:
                        dirty.update(link for link, _ in pb.crossings)
                    else:  # no shared link: its cap
                        b.rate_up = b.rate_down = pb.cap
                        reschedule(b)
            else:
                end_node(j, i)
        if dirty and live:
            # max-min is independent per group of bundles linked by shared links: the groups holding a link
            # where something changed are re-shared from their bundles' (class, bound) pairs
            for group in groups_sharing({b.ident: [link for link, _ in b.crossings]
                                         for b in live.values() if b.crossings}):
                members = [live[ident] for ident in group]
                if not any(link in dirty for b in members for link, _ in b.crossings):
                    continue
                for b in members:
                    b.advance(now)
                bounds = [b.bound() for b in members]
                key = tuple(sorted(zip([b.cls for b in members], bounds)))
                found = _staged_rates(key, class_two, flow_rates)
                for b, k in zip(members, bounds):
                    up, down = found[(b.cls, k)]
                    if up != b.rate_up or down != b.rate_down or b.version == 0 or k != b.bound_seen:
                        b.rate_up, b.rate_down = up, down
                        reschedule(b)
                    b.bound_seen = k
        dirty.clear()
    return [_result(state, j, windows, tolerance, done and steps is None, now) for j in range(len(state))]


def _current(entry: tuple, live: dict) -> bool:
    """Whether a bundle event (time, id, version) is its bundle's live one."""
    b = live.get(entry[1])
    return b is not None and b.version == entry[2]


BUFFER_BYTES = float(1 << 20)  # per edge between a bundle's stages: the transport window (ns-3's and the
# flow engine's window_bytes, 1 MiB; TransportOptions says why that size); decision record 0002
EMPTY, BETWEEN, FULL, UP_DONE = 0, 1, 2, 3  # a bundle's bound: its buffer empty, neither, full; its up stage done
DRAINS, UP_DRAINS, EMPTIES, FILLS = 0, 1, 2, 3  # a bundle's next event


class _Bundle:
    """An active bundle's bytes per edge past its up stage (x_up) and its down stage (x_down), 0 <= x_up -
    x_down <= BUFFER_BYTES, as of `since`, at rates rate_up and rate_down. A two-stage bundle's up stage crosses
    its shared links going up (towards the spine), its down stage the others; a one-stage bundle (its shared
    links all one way, or a job alone) moves both as one over all of them (rate_up == rate_down)."""

    __slots__ = ("ident", "job", "node", "work", "crossings", "cls", "two", "x_up", "x_down", "rate_up",
                 "rate_down", "since", "version", "kind", "bound_seen")

    def __init__(self, ident: int, job: int, node: int, work: float, crossings: tuple, cls: int, two: bool,
                 now: float):
        self.ident, self.job, self.node, self.work, self.crossings = ident, job, node, work, crossings
        self.cls, self.two = cls, two
        self.x_up = self.x_down = 0.0
        self.rate_up = self.rate_down = 0.0
        self.since = now
        self.version = 0  # of its live entry on the event heap (0: no rates yet)
        self.kind = DRAINS  # what its live entry is
        self.bound_seen = -1  # its bound when its rates were last looked up

    def advance(self, now: float) -> None:
        dt = now - self.since
        if dt > 0:
            eps = 1e-9 * self.work  # within this of a bound is at it (events of other bundles at the same time)
            self.x_up = min(self.work, self.x_up + self.rate_up * dt)
            self.x_down = min(self.x_up, self.x_down + self.rate_down * dt)
            if self.work - self.x_up <= eps:
                self.x_up = self.work
            gap = self.x_up - self.x_down
            if gap <= eps:
                self.x_down = self.x_up
            elif gap >= BUFFER_BYTES - eps:
                self.x_down = self.x_up - BUFFER_BYTES
        self.since = now

    def reach(self) -> None:
        """At its event: exactly the point the event (kind) names (rounding in now + t must not leave it
        short)."""
        if self.kind == DRAINS:
            self.x_up = self.x_down = self.work
        elif self.kind == UP_DRAINS:
            self.x_up = self.work
        elif self.kind == EMPTIES:
            self.x_down = self.x_up
        else:
            self.x_down = self.x_up - BUFFER_BYTES

    def drained(self) -> bool:
        return self.work - self.x_down <= 1e-9 * self.work

    def bound(self) -> int:
        if not self.two:
            return BETWEEN if self.x_up < self.work else UP_DONE
        if self.x_up >= self.work:
            return UP_DONE
        gap = self.x_up - self.x_down
        return EMPTY if gap <= 0 else FULL if gap >= BUFFER_BYTES else BETWEEN

    def next_event(self) -> tuple[float, int]:
        """Seconds from now (its `since`) to its next event, and which: its down stage drains, its up stage
        drains, its buffer empties or fills (the first of them; inf where none comes at these rates)."""
        up, down = self.rate_up, self.rate_down
        t, kind = (self.work - self.x_down) / down if down > 0 else math.inf, DRAINS
        if self.two and self.x_up < self.work:
            gap = self.x_up - self.x_down
            for when, what in (((self.work - self.x_up) / up if up > 0 else math.inf, UP_DRAINS),
                               (gap / (down - up) if down > up and gap > 0 else math.inf, EMPTIES),
                               ((BUFFER_BYTES - gap) / (up - down) if up > down and gap < BUFFER_BYTES else math.inf,
                                FILLS)):
                if when < t:
                    t, kind = when, what
        return t, kind


UP, DOWN, BOTH = 1, 2, 0  # a flow of a bundle in _staged_rates: its class is the bundle's + this


def _staged_rates(key: tuple, class_two: list, flow_rates) -> dict:
    """{(class, bound): (up rate, down rate)} for a group of bundles given by its sorted (class, bound) pairs.
    Max-min over flows (flow_rates: their rates by their sorted class numbers): a two-stage bundle is two
    flows (each stage on its own links) while its buffer is between its bounds, and one flow on all its links
    (coupled, as a one-stage bundle) where a bound binds: empty while its down stage would go faster than its
    up stage, full while its up stage would go faster than its down stage; its down stage alone once its up
    stage is done. Every two-stage bundle starts split; those whose bound binds are coupled and the rates
    recomputed, until none binds (each is coupled at most once)."""
    coupled = [not class_two[c] or k == UP_DONE for c, k in key]
    for _ in range(len(key) + 1):
        flows = []  # (flow class, member, stage)
        for n, (c, k) in enumerate(key):
            if class_two[c] and k == UP_DONE:
                flows.append((c + DOWN, n, DOWN))
            elif coupled[n]:
                flows.append((c + BOTH, n, BOTH))
            else:
                flows.append((c + UP, n, UP))
                flows.append((c + DOWN, n, DOWN))
        flows.sort(key=lambda f: f[0])  # class order (flows of one class are alike: their order is moot)
        rates = flow_rates(tuple(f[0] for f in flows))
        up = [0.0] * len(key)
        down = [0.0] * len(key)
        for (_, n, stage), v in zip(flows, rates):
            if stage != DOWN:
                up[n] = v
            if stage != UP:
                down[n] = v
        more = False
        for n, (c, k) in enumerate(key):
            if not coupled[n] and ((k == EMPTY and down[n] > up[n]) or (k == FULL and up[n] > down[n])):
                coupled[n] = more = True
        if not more:
            break
    for n, (c, k) in enumerate(key):
        if class_two[c] and k == UP_DONE:
            up[n] = 0.0
    return {pair: (u, d) for pair, u, d in zip(key, up, down)}


def _collision_caps(ordered: list[list], class_bursts: list, capacity: np.ndarray) -> list[list]:
    """The group's bundles (in class order), each that shows latency when its bursts collide (exposed > 0)
    with its cap lowered to 1 / (1 / cap + P x exposed): P, the chance that another job's traffic on one
    of its shared links leaves too little room for its burst there, (the other jobs' mean rates (caps)
    on the link - (capacity - its burst)) / its burst, the largest over its links, at most 1. Its burst on
    a link is its burst rate (its channels' NIC rate: they take turns) or, where its m edges there come from
    several NICs, m x cap."""
    out = []
    for a in ordered:
        job, burst_rate, exposed = class_bursts[a[7]]
        if exposed > 0:
            p = 0.0
            for link, m in a[5]:
                others = 0.0  # the other jobs' mean rates on the link, in class order
                for o in ordered:
                    if class_bursts[o[7]][0] != job:
                        for other_link, other_m in o[5]:
                            if other_link == link:
                                others += o[4] * other_m
                # its own peak on the link: its sibling channels take turns at their NIC (burst_terms), so
                # its m edges there burst at the NIC's rate, or more where they come from several NICs
                burst = max(burst_rate, a[4] * m)
                p = max(p, (others - (float(capacity[link]) - burst)) / burst)
            p = min(1.0, p)
            if p > 0:
                a = a.copy()  # the memo's rates use the lowered cap; the active bundle keeps its own
                a[4] = 1.0 / (1.0 / a[4] + p * exposed)
        out.append(a)
    return out


SHOWN_ITERATIONS = 64  # at most, of the duty fixed point in _rates_shown (a bound; it settles in ~10)


def _rates_shown(ordered: list[list], class_shown: list, capacity: np.ndarray) -> np.ndarray:
    """Max-min rates where some bundles show their hop latency at every round when slowed (shown > 0:
    its feeding edge is slowed too, so its next chunk is not ready early). Such a bundle sends at a rate
    s (its cap then its bandwidth alone, 1 / (1 / cap - shown)) and waits `shown` seconds per byte
    between its chunks: its bytes drain at r = 1 / (1 / s + shown), and it sends a fraction d = r / s of
    the time. The link time of its waits goes to the others: max-min fair while sending, each such
    bundle loading its links d times (a mean field of when it sends), iterated to the fixed point of d."""
    if not any(class_shown[a[7]] > 0 for a in ordered):
        return _rates(ordered, capacity)
    shown = [class_shown[a[7]] for a in ordered]
    sending = []
    for a, x in zip(ordered, shown):
        if x > 0:
            a = a.copy()
            a[4] = _sending_cap(a[4], x, a[5], capacity)
        sending.append(a)
    duty = [1.0] * len(ordered)
    for _ in range(SHOWN_ITERATIONS):
        weighted = []
        for a, d in zip(sending, duty):
            if d != 1.0:
                a = a.copy()
                a[5] = tuple((link, m * d) for link, m in a[5])
            weighted.append(a)
        s = _rates(weighted, capacity).tolist()
        new = [1.0 / (1.0 + x * v) if x > 0 and v > 0 else 1.0 for x, v in zip(shown, s)]  # r / s
        settled = all(abs(n - d) <= 1e-9 for n, d in zip(new, duty))
        duty = new
        if settled:
            break
    return np.asarray([v * d for v, d in zip(s, duty)])


def _sending_cap(cap: float, shown: float, crossings, capacity: np.ndarray) -> float:
    """The most a bundle that shows `shown` seconds per byte when slowed can send at: its bandwidth alone
    (1 / (1 / cap - shown): cap is its mean rate alone), and no more than any of its links carries."""
    v = 1.0 / (1.0 / cap - shown)
    for link, m in crossings:
        v = min(v, float(capacity[link]) / m)
    return v


SMALL = 24  # active bundles: below this, plain Python beats numpy's per-call overhead (flow/engine.py's figure)


def _rates(active: list[list], capacity: np.ndarray) -> np.ndarray:
    """Max-min rates per edge of the active bundles: every shared link at its capacity, every bundle
    at most its alone rate (a private link of that capacity, numbered -1 - bundle)."""
    if len(active) < SMALL:
        flow_links = [[link for link, _ in a[5]] + [-1 - f] for f, a in enumerate(active)]
        loads = [[m for _, m in a[5]] + [1.0] for a in active]
        caps = {link: float(capacity[link]) for a in active for link, _ in a[5]}
        caps.update({-1 - f: a[4] for f, a in enumerate(active)})
        return np.asarray(max_min_rates_small(flow_links, caps, [1.0] * len(active), loads=loads))
    flow_of, link_of, load = [], [], []
    caps = list(capacity)
    for f, a in enumerate(active):
        for link, m in a[5]:
            flow_of.append(f)
            link_of.append(link)
            load.append(m)
        flow_of.append(f)
        link_of.append(len(caps))
        load.append(1.0)
        caps.append(a[4])
    return max_min_rates(np.array(flow_of), np.array(link_of), len(active), np.array(caps),
                         multiplicity=np.array(load))


def _renumbered(job: PhaseJob, mapping: Sequence[int]) -> PhaseJob:
    """The job with its link k named mapping[k]."""
    return PhaseJob(tuple(replace(node, bundles=tuple(replace(b, crossings=tuple((mapping[link], m)
                                                                                 for link, m in b.crossings))
                                                      for b in node.bundles)) if node.bundles else node
                          for node in job.nodes))


def _slowest(state: list[_Job]) -> int:
    return max(range(len(state)), key=lambda j: (state[j].ends[-1] / len(state[j].ends), -j))


def window_of(job: PhaseJob, window: int = WINDOW) -> int:
    """Steps per window when this job is the slowest: enough to hold WINDOW_PHASES of its contended
    phases, between 1 and `window`."""
    return window_for(sum(1 for node in job.nodes if node.bundles), window)


def window_for(phases: int, window: int = WINDOW) -> int:
    """window_of for a job of this many contended phases."""
    return min(window, max(1, math.ceil(WINDOW_PHASES / max(1, phases))))


def _should_stop(state: list[_Job], steps: int | None, windows: list[int], tolerance: float, max_steps: int,
                 over_budget: bool = False) -> bool:
    if steps is not None:
        return all(len(s.ends) >= steps for s in state)
    if any(not s.ends for s in state):
        return False
    slow = state[_slowest(state)]
    if len(slow.ends) >= max_steps:
        return True
    if over_budget:  # and every job has ended a step (above)
        return True
    spans = _spans(state, windows)
    if spans is None:
        return False
    return all(_converged(s, spans, tolerance) for s in state)


def _spans(state: list, windows: list[int]) -> tuple[float, float, float] | None:
    """(t_a, t_m, t_b): the last two windows of the slowest job's steps before the horizon (every job's
    latest step end), its first step left out."""
    if any(not s.ends for s in state):  # stopped (event cap) before some job ended one step
        return None
    horizon = min(s.ends[-1] for s in state)
    slowest = _slowest(state)
    slow, window = state[slowest], windows[slowest]
    ends = slow.ends[:bisect_right(slow.ends, horizon * (1 + 1e-12))]
    if len(ends) < 2 * window + 1:
        return None
    return ends[-1 - 2 * window], ends[-1 - window], ends[-1]


def _mean_over(s: _Job, a: float, b: float) -> tuple[float, float] | None:
    """(mean step, mean communication) of the job's steps ending within [a, b], or None for fewer than two."""
    lo = bisect_left(s.ends, a * (1 - 1e-12))
    hi = bisect_right(s.ends, b * (1 + 1e-12))
    if hi - lo < 2:
        return None
    return (s.ends[hi - 1] - s.ends[lo]) / (hi - 1 - lo), sum(s.comms[lo + 1:hi]) / (hi - 1 - lo)


def _converged(s: _Job, spans, tolerance: float) -> bool:
    last, before = _mean_over(s, spans[1], spans[2]), _mean_over(s, spans[0], spans[1])
    return last is not None and before is not None and abs(last[0] - before[0]) <= tolerance * last[0]


def _result(state: list, j: int, windows: list[int], tolerance: float, settled: bool, now: float) -> PhaseSteady:
    """Job j's mean step over the last window of the slowest job (the whole run when shorter). A job that
    had not ended one step when the run stopped (the event cap) gets the time it had run, a lower bound of
    its step, and converged False."""
    s = state[j]
    if not s.ends:
        return PhaseSteady(now, s.comm, now, 0, False)
    first = s.ends[0]
    spans = _spans(state, windows) if len(state) > 1 else None
    measured = _mean_over(s, spans[1], spans[2]) if spans else None
    converged = len(state) == 1 or (settled and spans is not None and _converged(s, spans, tolerance))
    if measured is None:  # too few steps in the span: the mean of its steps after the first
        if len(s.ends) >= 2:
            measured = ((s.ends[-1] - s.ends[0]) / (len(s.ends) - 1), sum(s.comms[1:]) / (len(s.ends) - 1))
        else:
            measured = (first, s.comms[0] if s.comms else 0.0)
    return PhaseSteady(measured[0], measured[1], first, len(s.ends), converged)
