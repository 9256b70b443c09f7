"""Jobs that share links, timed by collective phases: the contention model of record for sweeps.

    PhaseContention(fabric).steady({job: StepGraph on its own GPUs, ...}) -> {job: ComponentStep}

Each communication node takes its fabric's time alone (fabric.collective_seconds:
analytical, flow or ns-3, with calibration); where a node's channels cross a
link that another job of the component also crosses, that time is split into
its first hop's start-up and bundles (demand.py) capped at their mean rate alone,
that share those links with the other jobs' bundles (engine.py; why so:
contended_phase). Links only one job crosses are in each bundle's alone rate.
Components are memoised by a canonical signature: jobs in order of their own
signature, shared links renumbered in order of first use; the engine runs on
the canonical form, so one signature always gives one answer.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from artist.grouping import groups_sharing
from artist.memo import memoised, memoised_by_identity
from artist.network.analytical import StartupLatency
from artist.network.base import fabric_setting
from artist.network.links import LinkId, link_bandwidth_bps
from artist.network.phase.demand import CollectiveDemand, collective_demand
from artist.network.phase.engine import PhaseBundle, PhaseJob, PhaseNode, PhaseSteady, run_component
from artist.parallel.graph import StepGraph
from artist.placement import Placement

PHASE_VERSION = "13"  # bump when an answer changes (5: event budget; 6: latency hidden behind slowed bytes;
# 7: one flow per edge, not a lock-step bundle per channel; 8: a bundle's bytes brought up to date only when
# its rate changes, drains taken from a heap: rounding differs, and with it the alignment of long runs;
# 9: channels that share a NIC show their hop latency when another job's burst collides with theirs:
# burst_terms, engine.py's collision caps; 10: a slowed ring edge whose feeding edge is slowed too shows its
# hop latency at every round and leaves those gaps to the others: contended_phase's shown, engine.py's
# _rates_shown; 11: a bundle across up and down shared links is two stages with a switch buffer between
# them, engine.py's _Bundle and _staged_rates; 12: a bundle's sibling channels on one link burst at their
# NIC's rate there, not at the sum of their bursts: engine.py's _collision_caps; 13: a collective's edges on no
# shared link that cannot end it last are not simulated (binding_bundles: exact), so the event budget covers
# more simulated time, and past it a run stops once every job has ended one step, not two)
MAX_MEMO = 100_000  # components and collectives kept per process (a bound, not a tuning)
MAX_GRAPHS = 256  # graphs, and the forms derived from each, kept per process (a bound: LLM graphs are large)
MAX_FORMS = 8  # phase-node forms kept per graph (one per set of shared links it crosses; a bound)
# The all-reduce algorithms the phase model is measured on (benchmarks/contention_accuracy.py against the
# per-transfer flow engine and ns-3): rings. NCCL's tree is not one: its fan-in edges feed each other in ways
# the model's independent edges miss (slowdowns up to 60 % off the flow engine's on the standard scenarios);
# the hierarchical ring is not measured (it needs equal GPUs per machine, which the scenarios do not have).
PHASE_ALGORITHMS = ("ring",)


def phase_refusal(algorithm: str) -> str | None:
    """Why the phase model cannot time shared contention of this all-reduce algorithm (None: it can)."""
    if algorithm in PHASE_ALGORITHMS:
        return None
    return (f"the phase contention model is measured on {' and '.join(PHASE_ALGORITHMS)} all-reduces, not "
            f"{algorithm}; shared contention with algorithm {algorithm} needs contention_model cosim (the flow or "
            f"ns-3 backend co-simulating every transfer)")


@dataclass(frozen=True)
class ComponentStep:
    shared: PhaseSteady  # the job's steady step with the component
    alone: PhaseSteady  # its step alone in the same model (the reference its slowdown is measured against)


@dataclass(frozen=True)
class TimedComponent:
    steps: tuple[ComponentStep, ...]  # per job, in canonical order
    # kept only by PhaseContention(keep_jobs=True) (tests re-run them): an LLM component is ~10^5 nodes
    jobs: tuple[PhaseJob, ...] = ()  # canonical: in signature order, shared links numbered 0.. in first use
    capacity: tuple[float, ...] = ()  # bytes/s of those links


class PhaseContention:
    name = "phase"

    def __init__(self, fabric, keep_jobs: bool = False):
        self.fabric = fabric
        self.keep_jobs = keep_jobs  # components() then lists each component's canonical jobs and capacities
        self.topology = fabric.topology
        self.algorithm = fabric_setting(fabric, "algorithm", "ring")
        refusal = phase_refusal(self.algorithm)
        if refusal:
            raise ValueError(refusal)
        self.channels = fabric_setting(fabric, "channels", 1)
        self.latency = fabric_setting(fabric, "latency", StartupLatency())  # the fabric's NCCL latency model
        self._demands: dict = {}
        self._alone_seconds: dict = {}
        self._components: dict = {}
        self._alone: dict = {}
        self._of_graph: dict = {}  # per graph object: its links, {shared links it crosses: its phase nodes}
        self._signatures: dict = {}  # per phase-node tuple: its digest and shared links in first use
        self.components_run = 0  # engine runs (memo misses) in this process

    def identity(self) -> dict:
        return {"contention_model": self.name, "version": PHASE_VERSION, "fabric": self.fabric.identity()}

    # ---- one collective -----------------------------------------------------
    def _demand(self, kind: str, group: tuple[int, ...], nbytes: int) -> CollectiveDemand:
        return memoised(self._demands, (kind, group, nbytes), lambda: collective_demand(
            self.topology, kind, group, nbytes, self.algorithm, self.channels, self.latency), MAX_MEMO)

    def _collective_seconds(self, kind: str, group: tuple[int, ...], nbytes: int) -> float:
        return memoised(self._alone_seconds, (kind, group, nbytes), lambda: float(self.fabric.collective_seconds(
            Placement(self.topology, group), int(nbytes), kind)), MAX_MEMO)

    # ---- a component ----------------------------------------------------------
    def steady(self, graphs: Mapping[str, StepGraph]) -> dict[str, ComponentStep]:
        """Every job's steady step with all of them on the fabric, and alone (module docstring). Jobs are
        first split into groups that really cross a common link (a loop's component is every job with a
        leaf in common, but ECMP may send their traffic over different ports): each group is timed and
        memoised apart, so an event re-times only the group it touches."""
        jobs = list(graphs)
        links_of = {j: self._derived(graphs[j])[0] for j in jobs}
        out: dict[str, ComponentStep] = {}
        for group in groups_sharing({j: links_of[j] for j in jobs}):
            out.update(self._steady_group({j: graphs[j] for j in group}, links_of))
        return {j: out[j] for j in jobs}

    def _steady_group(self, graphs: Mapping[str, StepGraph], links_of) -> dict[str, ComponentStep]:
        jobs = list(graphs)
        crossed: dict[LinkId, int] = {}
        for j in jobs:
            for link in links_of[j]:
                crossed[link] = crossed.get(link, 0) + 1
        shared = {link for link, n in crossed.items() if n > 1}
        local = {j: self._phase_nodes(graphs[j], shared) for j in jobs}
        # canonical order: by each job's own signature (its nodes, its shared links in first use, their
        # capacities); the key names each job's signature and where its links fall in the group's numbering
        # (first use in that order), which fixes the canonical component without building it
        signature = {j: self._signature(local[j]) for j in jobs}
        order = sorted(jobs, key=lambda j: (signature[j][0], jobs.index(j)))
        numbering: dict[LinkId, int] = {}
        placed = tuple((signature[j][0], tuple(numbering.setdefault(link, len(numbering)) for link in signature[j][1]))
                       for j in order)
        capacity = tuple(link_bandwidth_bps(self.topology, link) / 8.0 for link in numbering)

        def timed() -> TimedComponent:
            self.components_run += 1
            # each job numbered on its own (its signature's form), mapped onto the canonical numbering
            own = [signature[j][2] for j in order]
            maps = [mapping for _, mapping in placed]
            alone = [self._alone_step(job, sig, mapping, capacity) for job, (sig, mapping) in zip(own, placed)]
            shared_steps = run_component(own, capacity, alone=alone, links=maps) if len(own) > 1 else alone
            steps = tuple(ComponentStep(s, a) for s, a in zip(shared_steps, alone))
            if not self.keep_jobs:
                return TimedComponent(steps)
            canonical, links = _relabel([local[j] for j in order])
            assert tuple(links) == tuple(numbering), "the canonical numbering is first use in canonical order"
            return TimedComponent(steps, canonical, capacity)

        found = memoised(self._components, (placed, capacity), timed, MAX_MEMO).steps
        return {j: found[k] for k, j in enumerate(order)}

    def components(self) -> list[TimedComponent]:
        """The components timed so far in this process (answers; with keep_jobs, canonical jobs and capacities)."""
        return list(self._components.values())

    def _alone_step(self, job: PhaseJob, signature: str, mapping: tuple[int, ...],
                    capacity: tuple[float, ...]) -> PhaseSteady:
        """The job's step alone (job: numbered on its own; mapping: its links' numbers in capacity),
        memoised by its signature and its links' capacities (all it depends on)."""
        own = tuple(capacity[m] for m in mapping)
        return memoised(self._alone, (signature, own), lambda: run_component([job], own, steps=1)[0], MAX_MEMO)

    def _derived(self, graph: StepGraph) -> tuple:
        """(its links, {the shared links it crosses: its phase nodes}, its nodes as (deps, compute seconds
        or None, collective key or None)) per graph object: a running job's graph (PerfModel.step_graph
        keeps it) is in every group its links meet until it stops."""
        return memoised_by_identity(self._of_graph, (graph,), lambda: (self._links(graph), {}, _compact(graph)),
                                    MAX_GRAPHS)

    def _phase_nodes(self, graph: StepGraph, shared: set[LinkId]) -> tuple[PhaseNode, ...]:
        """_phase_job's answer, memoised per graph and the shared links it crosses (all it depends on)."""
        links, by_crossed, _ = self._derived(graph)
        crossed = frozenset(links & shared)
        return memoised(by_crossed, crossed, lambda: self._phase_job(graph, crossed), MAX_FORMS)

    def _signature(self, nodes: tuple[PhaseNode, ...]) -> tuple[str, tuple[LinkId, ...], PhaseJob]:
        """(digest of the job relabelled alone, its shared links in first use, the job so relabelled),
        per node tuple."""
        def make():
            relabelled = _relabel([nodes])
            return _digest(relabelled), relabelled[1], relabelled[0][0]

        return memoised_by_identity(self._signatures, (nodes,), make, MAX_GRAPHS)

    def _links(self, graph: StepGraph) -> set[LinkId]:
        out: set[LinkId] = set()
        for node in graph.nodes:
            if node.is_communication:
                for bundle in self._demand(node.kind, node.group, int(node.nbytes)).bundles:
                    out.update(bundle.links)
        return out

    def _phase_job(self, graph: StepGraph, shared: set[LinkId]) -> tuple[PhaseNode, ...]:
        """The job's nodes with its bundles' crossings of shared links as link ids (relabelled later)."""
        nodes = []  # (deps, seconds, communication, bundles, comm_seconds): PhaseNode's fields
        # an LLM step repeats a few collectives thousands of times: each distinct one is split once
        forms: dict[tuple, tuple] = {}
        for deps, seconds, key in self._derived(graph)[2]:
            if key is None:
                nodes.append((deps, seconds, False, (), 0.0))
                continue
            form = forms.get(key)
            if form is None:
                form = forms[key] = self._collective_form(key, shared)
            first, bundles = form
            if bundles:
                nodes.append((deps, first, True, bundles, 0.0))
            else:
                nodes.append((deps, first, False, (), first))
        return merge_timer_chains(nodes)

    def _collective_form(self, key: tuple, shared: set[LinkId]) -> tuple[float, tuple[PhaseBundle, ...]]:
        """(fixed part, bundles) of one collective (kind, group, bytes) among these shared links; no
        bundles (its whole alone time fixed) where it crosses none of them."""
        alone = self._collective_seconds(*key)
        demand = self._demand(*key)
        if not any(link in shared for b in demand.bundles for link in b.links):
            return alone, ()
        first, bundles = contended_phase(demand, alone, shared)
        return first, binding_bundles(bundles)


def contended_phase(demand: CollectiveDemand, alone: float, shared) -> tuple[float, tuple[PhaseBundle, ...]]:
    """(fixed part, bundles) of a collective that meets other jobs' traffic, taking `alone` seconds alone.

    Alone, the collective spends its start-up latency L = alone - B (B: its bandwidth part) between the
    rounds of its chunks, so its links carry its bytes at the mean rate W / (alone - first hop) only.
    Slowed down on a shared link, a ring's slowest edge streams its chunks back to back: the next one is
    ready (its alpha elapsed on faster edges) before the last one drains, so the latency hides behind
    the bytes and the collective takes first hop + max(alone - first hop, W / shared rate). Bundles
    capped at that mean rate and preceded by the first hop (NCCL's base latency and one hop's start-up,
    which nothing hides) take exactly that: `alone` alone, and their full share of a contended link.
    A send/recv or an all-to-all is one round: its whole latency is the first hop, paid before its bytes.
    Measured (benchmarks/contention_accuracy.py, the package docstring's table): the whole latency paid
    first instead overstates the slowdown of a small ring beside a large one by up to 19 %.
    That hiding needs the edge's next chunk to be ready early, i.e. the edge feeding its sender (demand.py's
    feeders) to run ahead. Where that feeding edge crosses a shared link too, it is slowed alike and the
    chunk arrives just in time: the edge then shows its latency at every round, `shown` = its latency alone
    per byte (1 / cap - 1 / its bandwidth rate), and drains at 1 / (1 / share + shown) while it leaves the
    link to others between its chunks (engine.py _rates_shown). Measured: a 2-GPU ring of 0.5 MiB beside a
    4-GPU ring of 4 MiB on the same ports, against the per-transfer flow engine, -11.6 % / +8.3 % with its
    latency hidden, -5.1 % / +4.3 % so (tests/test_phase_contention.py).
    Edges whose channel shares its NIC with sibling channels also carry their burst rate and the latency
    their bursts show when they collide with another job's (burst_terms)."""
    bandwidth = demand.bandwidth_seconds
    fraction = min(1.0, alone / bandwidth) if bandwidth > 0 else 0.0
    first = min(demand.first_hop_seconds, max(0.0, alone - bandwidth))
    span = alone - first  # the bundles' time alone: their bandwidth part plus the latency they hide
    merged: dict[tuple, float] = {}  # (work, cap, burst rate, exposed, shared links crossed) -> edges alike
    n = len(demand.bundles)
    bursts = demand.burst_rates or demand.alone_rates
    hops = demand.hop_seconds or (0.0,) * n
    rounds = demand.rounds or (0,) * n
    feeders = demand.feeders or (-1,) * n
    for b, rate, burst, hop, k, feeder in zip(demand.bundles, demand.alone_rates, bursts, hops, rounds, feeders):
        work = b.edge_bytes * fraction
        cap = min(rate, work / span) if span > 0 else rate
        burst_rate, exposed = burst_terms(work, rate, burst, hop, k)
        fed_slowed = feeder >= 0 and any(link in shared for link in demand.bundles[feeder].links)
        shown = max(0.0, 1.0 / cap - 1.0 / rate) if k > 0 and fed_slowed and cap > 0 else 0.0
        crossed = [(link, m) for link, m in zip(b.links, b.load) if link in shared]
        up = tuple(c for c in crossed if not is_down(c[0]))  # the path's order: up links, then down ones
        key = (work, cap, burst_rate, exposed, shown, up + tuple(c for c in crossed if is_down(c[0])), len(up))
        merged[key] = merged.get(key, 0.0) + 1.0
    # edges alike drain alike: one bundle of them, each shared link loaded once per edge
    return first, tuple(PhaseBundle(work, cap, tuple((link, m * count) for link, m in crossings), burst_rate, exposed,
                                    shown, ups)
                        for (work, cap, burst_rate, exposed, shown, crossings, ups), count in merged.items())


def binding_bundles(bundles: Sequence[PhaseBundle]) -> tuple[PhaseBundle, ...]:
    """The bundles that can decide when the collective ends, in their order. An edge on no shared link
    drains at its cap, in work / cap; one on shared links never faster than its cap (every rate the engine
    gives is at most a bundle's cap), so no sooner. The collective ends when its last bundle drains: of
    the edges on no shared link only the longest can be last, and only if it is longer than the shortest
    edge on a shared link. Exact, and it saves the engine an event per dropped edge at every collective
    (an LLM step's tensor-parallel all-reduces across machines: 3 edges, 1 of them shared, thousands a step)."""
    crossed = [b for b in bundles if b.crossings]
    free = [b for b in bundles if not b.crossings]
    if not free or not crossed:
        return tuple(bundles)
    longest = max(free, key=_drain_alone)
    if _drain_alone(longest) <= min(_drain_alone(b) for b in crossed):
        longest = None
    return tuple(b for b in bundles if b.crossings or b is longest)


def _drain_alone(b: PhaseBundle) -> float:
    """Seconds a bundle takes at its cap (inf at cap 0 with bytes to send)."""
    return b.work / b.cap if b.cap > 0 else (0.0 if b.work <= 0 else math.inf)


def is_down(link) -> bool:
    """A link that carries traffic down from a switch towards GPUs (links.py's *_down kinds)."""
    return str(link[0]).endswith("_down")


def burst_terms(work: float, rate: float, burst: float, hop: float, rounds: int) -> tuple[float, float]:
    """(burst rate, exposed) of an edge of `work` bytes in `rounds` chunks, `rate` its rate alone, `burst`
    its rate with only its own channel on its links, `hop` its hop's start-up latency; (0, 0) for an edge
    that shows no latency when its bursts collide.

    Where a job's S channels share one NIC (burst = S x rate: one GPU per machine, several channels),
    alone they take turns: one channel sends its chunk c at the NIC rate while its siblings wait out their
    hop latency, a round taking max(S c / burst, c / burst + hop), the latency hidden. When another job's
    burst halves its rate on a shared link, its chunk takes 2 c / burst and the round max(S c / burst,
    2 c / burst + hop): exposed is that difference over all its rounds, per byte (seconds per byte shown
    when every burst collides; engine.py scales it by the chance of a collision). A channel alone on its
    NIC (rate = burst) or an edge whose next chunk is ready early (rounds 0, demand.py) shows none."""
    if burst <= 0 or rate >= burst * (1 - 1e-9) or rounds < 1 or work <= 0:
        return 0.0, 0.0
    chunk = work / rounds
    siblings = burst / rate  # channels taking turns at the NIC
    alone = max(siblings * chunk / burst, chunk / burst + hop)  # a round: the NIC's turns, or its own chunk and hop
    collided = max(siblings * chunk / burst, 2.0 * chunk / burst + hop)  # its chunk at half the rate
    return burst, rounds * (collided - alone) / work


def merge_timer_chains(nodes: list[tuple]) -> tuple[PhaseNode, ...]:
    """The nodes ((deps, seconds, communication, bundles, comm_seconds) each) as PhaseNodes, with every
    chain of timers (nodes without bundles, each the only successor of the one before and depending on
    it alone) made one timer of their summed durations. Exact: no other node waits for a chain's inner
    ends. Why: an LLM step is ~10 k nodes, most of them per-layer compute and machine-local collectives
    in such chains, each an event at every simulated step."""
    successors = [0] * len(nodes)
    for node in nodes:
        for d in node[0]:
            successors[d] += 1
    out: list[list] = []  # per new node: [deps, seconds, communication, bundles, comm_seconds]
    new_of: list[int] = []
    for deps, seconds, communication, bundles, comm_seconds in nodes:
        # a timer whose one dependency is a timer it alone waits for joins that timer's chain (that
        # dependency is then its chain's last node: no other node can have joined after it)
        if not bundles and len(deps) == 1 and successors[deps[0]] == 1 and not nodes[deps[0]][3]:
            head = out[new_of[deps[0]]]
            head[1] += seconds
            head[4] += comm_seconds
            new_of.append(new_of[deps[0]])
            continue
        new_of.append(len(out))
        renumbered = (new_of[deps[0]],) if len(deps) == 1 else tuple(sorted({new_of[d] for d in deps}))
        out.append([renumbered, seconds, communication, bundles, comm_seconds])
    # a chain's head was a timer: communication False, its bundles none (as PhaseNode's defaults)
    return tuple(PhaseNode(deps, seconds, communication, bundles, comm_seconds)
                 for deps, seconds, communication, bundles, comm_seconds in out)


def _compact(graph: StepGraph) -> list[tuple]:
    """Per node: (deps, compute seconds, None) or (deps, None, (kind, group, bytes)) of a collective."""
    return [(node.deps, None, (node.kind, node.group, int(node.nbytes))) if node.is_communication
            else (node.deps, float(node.seconds), None) for node in graph.nodes]


def _relabel(jobs: list[tuple[PhaseNode, ...]]) -> tuple[tuple[PhaseJob, ...], tuple[LinkId, ...]]:
    """The jobs with their shared link ids renumbered 0.. in order of first use, and those links."""
    index: dict[LinkId, int] = {}
    # per bundles tuple (by identity: the nodes hold them alive): once relabelled, the same links have
    # their numbers, so a repeated tuple (one collective, thousands of times a step) relabels alike
    done: dict[int, tuple[PhaseBundle, ...]] = {}
    out = []
    for nodes in jobs:
        renumbered = []
        for node in nodes:
            if node.bundles:
                bundles = done.get(id(node.bundles))
                if bundles is None:
                    bundles = done[id(node.bundles)] = tuple(
                        PhaseBundle(b.work, b.cap, tuple((index.setdefault(link, len(index)), m)
                                                         for link, m in b.crossings), b.burst_rate, b.exposed,
                                    b.shown, b.ups)
                        for b in node.bundles)
                node = PhaseNode(node.deps, node.seconds, node.communication, bundles, node.comm_seconds)
            renumbered.append(node)
        out.append(PhaseJob(tuple(renumbered)))
    return tuple(out), tuple(index)


def _digest(relabelled) -> str:
    """A stable text digest of a relabelled job: every node's fields and its bundles' (floats in full,
    link ids renumbered), each distinct bundles tuple written once and named by its first-use number."""
    jobs, _ = relabelled
    of_object: dict[int, int] = {}  # by identity first (cheap), then by value: equal tuples, one number
    of_value: dict[tuple, int] = {}
    rows = []
    for job in jobs:
        for node in job.nodes:
            k = of_object.get(id(node.bundles))
            if k is None:
                value = tuple((b.work, b.cap, b.crossings) + ((b.burst_rate, b.exposed) if b.exposed > 0 else ())
                              + ((b.shown,) if b.shown > 0 else ()) + (b.ups,)
                              for b in node.bundles)
                k = of_object[id(node.bundles)] = of_value.setdefault(value, len(of_value))
            rows.append((node.deps, node.seconds, node.communication, node.comm_seconds, k))
        rows.append(None)  # end of a job
    return hashlib.sha1(repr((rows, list(of_value))).encode()).hexdigest()
