"""Packet-accurate FabricModel: step graphs' communication simulated packet by packet in ns-3.

    Ns3Model(topology, algorithm="ring", channels=1, **options).time({job: StepGraph})

Per call, only the part of the cluster the graphs touch is built (see
builder.py), the schedules of collectives.py are executed by the C++ engine
(engine.cc) in a persistent worker process (runner.py), and every
communication node gets the duration it took in the simulation.

All graphs of one call run in ONE ns-3 run (several jobs at once), each node
starting when its dependencies have finished: a compute node without
dependencies is a ready time for the nodes that wait for it (a DDP bucket
starts at max(its ready time in the backward pass, end of the previous
bucket), so transport state carries from one bucket to the next as in a real
iteration); a compute node with dependencies is a timer in the engine. The
nodes' durations then go through the graph's critical path
(GraphTiming.of); the simulated end of each graph is kept in
details["simulated_end_seconds"] as a cross-check.

Exact reuse (exact_reuse=True, the default; reuse.py): on the window transport a run whose
collectives never overlap (each starts after the previous one's last ack, as DDP buckets
separated by backward compute do) is composed from each distinct collective run alone, once
per (GPUs, kind, bytes) for every model and step, on all cores (runner.Ns3Pool), to the same
bits as the one run; where they overlap, the one run answers. The scheduler (PriorityQueue
by default) changes speed only.

Acceleration (accelerate=True, ring all-reduce, all-gather and reduce-scatter, off by default):
steady-state skipping. The ring's hop pattern repeats every P positions (P = GPUs per rack for a regular
multi-rack shape: NVLink hops, a NIC hop per machine boundary, a spine hop per rack
boundary), and so, once the pipeline is full, do the increments between the
completion times of successive steps (measured: constant when the NIC is the
bottleneck, period P when start-up latencies show, e.g. 17 MB on 64 GPUs). Each
collective is simulated for its first max(steady_steps, 2P + 2) steps only and the
remaining steps are extrapolated by repeating the last P increments. With one FIFO
connection per (sender, channel) the truncation cannot change the simulated steps.
benchmarks/ns3_speed.py checks it against full runs (goal < 1 %).

Switch arbitration (arbitration="fifo" by default, or "round-robin"; window transport only): how a
switch output serves frames of several flows (engine.cc's header comment). fifo is a deep drop-tail
queue, where a long flow's window stands in front of other flows' frames; round-robin gives every
flow (a connection's data, its acks) its own queue and serves them a frame at a time in turn: our
idealisation of InfiniBand's credit flow control and output arbitration, and the behaviour the flow
backend's max-min sharing stands for (flow/__init__.py's accuracy tables). In identity() only when
not fifo, so every cache key, golden table and calibration profile made before it holds. The fast
path and exact reuse hold under both: without a shared link an output carries one connection's data
and at most another's acks (the fast path's ack budget, the same under both), and a quiet network has
every queue empty (tests/test_arbitration.py: the same bits either way for a ring alone).

Fast path (fast_path=True, the default): before every run, artist/network/fastpath's rule looks at
the engine input; where no link is shared by two transfers in flight at once (and the window
cannot limit), the message-level model times the same input in place of ns-3 (within 0.1 % of the
packet run on the cases checked; README "Fast path"). Every answer says which path answered:
details["path"] is "ns3" or "ns3-message-level" (answers cached before this option existed are
packet runs: they carry no "path"). With fast_path=False the identity, and so every cache key, is
the one of the packet runs before the option existed.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import threading
import time
from dataclasses import asdict
from typing import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version as package_version

from artist.limits import MAX_DATA_PACKETS
from artist.network.analytical import StartupLatency
from artist.network.base import CommResult, GraphTiming
from artist.network.collectives import ALGORITHMS, Schedule, collective_schedule, ring_allreduce, ring_pass
from artist.network import fastpath
from artist.network.fastpath.timing import payload_per_frame
from artist.network.links import path
from artist.network.ns3.builder import EngineCollective, build_engine_input
from artist.network.ns3.reuse import ExactReuse
from artist.network.ns3.runner import Ns3Pool, Ns3SimulationError, Ns3Worker, shared_pool
from artist.network.ns3.worker import ENGINE_SOURCE, TRANSPORTS
from artist.parallel.graph import StepGraph
from artist.network.symmetry import fabric_form, fabric_key, shape_symmetric
from artist.placement import Placement, shape_to_text
from artist.topology import Topology

__all__ = ["Ns3Model", "Ns3SimulationError", "Ns3Worker", "NS3_BACKEND_VERSION", "TransportOptions"]

# Bump when the Python side changes an answer (the C++ engine has its own ENGINE_VERSION).
NS3_BACKEND_VERSION = "1"
# ns-3's event schedulers, as engine.cc numbers them. PriorityQueue is the default: the fastest measured
# (ResNet-50 step on 64 GPUs, CPU-s of the worker: Map 5.5-6.0, List 5.8-6.3, Heap 6.7-7.4, Calendar 6.6,
# PriorityQueue 5.3-5.4; benchmarks/ns3_speed.py prints the comparison).
SCHEDULERS = {"map": 0, "list": 1, "heap": 2, "calendar": 3, "priority": 4}
# Switch output arbitration of the window transport, as engine.cc numbers it (see its header comment):
# fifo, a deep drop-tail queue per output (the default, every answer before the option existed), or
# round-robin, per-flow queues served a frame at a time in turn (our idealisation of an InfiniBand
# switch's credit flow control and output arbitration, which keep one flow's backlog from delaying others).
ARBITRATIONS = {"fifo": 0, "round-robin": 1}
# Steady-state skipping of an all-to-all (accelerate): above this payload per rank its time is extrapolated
# linearly from runs at it and at half of it (every pair's flows in flight at once settle into NIC-bound
# sharing, so each further byte costs the same). Measured on 80 H100s x 8 channels (h100-dgx, 10 x 8): runs at
# 128 and 256 MiB give 512 MiB, 1 GiB and 2 GiB within 0.0014 % of their full runs (2 GiB: 0.038804107 s
# against 0.038803561 s); benchmarks/ns3_speed.py prints the check on the Dally cluster. Raised for a large
# group so that every (pair, channel) flow still carries STEADY_ALL_TO_ALL_FLOW_BYTES at the half anchor (the
# measured case had 210 KB).
STEADY_ALL_TO_ALL_BYTES = 256 * 2**20
STEADY_ALL_TO_ALL_FLOW_BYTES = 128 * 2**10


@functools.lru_cache(maxsize=1)
def expected_worker_versions() -> dict:
    """The ns-3 package version and ENGINE_VERSION the worker will report, read without starting
    it (the installed package's metadata; the engine source the worker compiles), so that a cache
    lookup does not cost an ns-3 import. run_schedules checks the worker agrees."""
    found = re.search(r'ENGINE_VERSION\s*=\s*"([^"]*)"', ENGINE_SOURCE.read_text())
    if found is None:
        raise RuntimeError(f"{ENGINE_SOURCE}: no ENGINE_VERSION string found")
    try:
        ns3_version = package_version("ns3")
    except PackageNotFoundError:
        raise Ns3SimulationError("-", "the ns3 package (PyPI ns3, ns-3.44) is not installed") from None
    return {"ns3_version": ns3_version, "engine_version": found.group(1)}


@dataclasses.dataclass(frozen=True)
class TransportOptions:
    """Transport settings; every one can change an answer (they go into identity())."""

    transport: str = "window"  # "window" (message-level, lossless fabric) or "tcp" (DCTCP + RED/ECN)
    # Jumbo frames: 9000-byte MTU, the usual data-centre jumbo size (assumption, no vendor figure).
    mtu: int = 9000
    # Window transport: 1 MiB per connection covers the bandwidth-delay product of the
    # slowest-RTT path here (400 Gb/s x ~4 us incl. ack coalescing = 200 KB) with margin (choice).
    window_bytes: int = 1 << 20
    ack_every: int = 8  # frames per cumulative ack (choice; ~72 KB, well under the window)
    # Device queue limit; with windows this large no queue can overflow on these topologies,
    # and any drop is reported as an error (the transport models a lossless fabric).
    queue_packets: int = 100000
    # TCP: DCTCP marking threshold K in packets (DCTCP paper suggests K > C*RTT/7; at
    # 400 Gb/s and ~5 us RTT that is ~4 jumbo frames; 20 as in ns-3's dctcp example).
    tcp_red_k_packets: int = 20
    tcp_buffer_bytes: int = 8 << 20
    tcp_min_rto_s: float = 0.001  # data-centre RTO floor (assumption; Linux default 200 ms is for WANs)

    def __post_init__(self):
        if self.transport not in TRANSPORTS:
            raise ValueError(f"unknown ns-3 transport {self.transport!r}; known: {', '.join(TRANSPORTS)}")
        if self.mtu < 64 or self.window_bytes < self.mtu or self.ack_every < 1 or self.queue_packets < 1:
            raise ValueError(f"invalid transport options {self}")
        # the receiver acknowledges every ack_every frames (or a whole message) and the sender sends a frame
        # while less than the window is unacknowledged (engine.cc Pump): unless ack_every - 1 full frames
        # stay under the window, it stops before the first ack of any longer message, for ever
        payload = payload_per_frame(self.mtu)
        if self.transport == "window" and self.window_bytes <= (self.ack_every - 1) * payload:
            raise ValueError(f"window_bytes ({self.window_bytes}) must exceed ack_every - 1 ({self.ack_every - 1}) "
                             f"frames of {payload} payload bytes (mtu {self.mtu}), {(self.ack_every - 1) * payload}: "
                             f"the receiver acknowledges every ack_every frames, so a smaller window stalls")


class Ns3Model:
    """FabricModel backed by packet-level ns-3 simulation of collectives.py's schedules."""

    name = "ns3"

    def __init__(self, topology: Topology, algorithm: str = "ring", channels: int = 1,
                 latency: StartupLatency = StartupLatency(), transport: str = "window",
                 accelerate: bool = False, steady_steps: int = 24, timeout_s: float = 600.0,
                 worker: Ns3Worker | None = None, debug_hang: bool = False, exact_reuse: bool = True,
                 scheduler: str = "priority", pool: Ns3Pool | None = None, fast_path: bool = True,
                 arbitration: str = "fifo", steady_all_to_all_bytes: int = STEADY_ALL_TO_ALL_BYTES,
                 **transport_options):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        # switches are true or false, never a word that Python's bool() would read as true ("no", "false")
        for name, value in (("accelerate", accelerate), ("exact_reuse", exact_reuse), ("fast_path", fast_path),
                            ("debug_hang", debug_hang)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        if isinstance(channels, bool) or not isinstance(channels, int) or channels < 1:
            raise ValueError(f"channels must be a whole number >= 1, got {channels!r}")
        if isinstance(steady_steps, bool) or not isinstance(steady_steps, int) or steady_steps < 4:
            raise ValueError(f"steady_steps must be a whole number >= 4, got {steady_steps!r}")
        if isinstance(steady_all_to_all_bytes, bool) or not isinstance(steady_all_to_all_bytes, int) \
                or steady_all_to_all_bytes < 2:
            raise ValueError(f"steady_all_to_all_bytes must be a whole number >= 2, got {steady_all_to_all_bytes!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < math.inf:
            raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels
        self.latency = latency
        self.transport = TransportOptions(transport=transport, **transport_options)
        self.accelerate = accelerate
        self.steady_steps = steady_steps
        self.steady_all_to_all_bytes = steady_all_to_all_bytes
        self.timeout_s = timeout_s
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown ns-3 scheduler {scheduler!r}; known: {', '.join(SCHEDULERS)}")
        # Every scheduler orders events by (time, insertion order): the choice changes speed, not answers
        # (tests/test_ns3_reuse.py), so it is not part of identity().
        self.scheduler = scheduler
        if arbitration not in ARBITRATIONS:
            raise ValueError(f"unknown ns-3 arbitration {arbitration!r}; known: {', '.join(ARBITRATIONS)}")
        if arbitration != "fifo" and self.transport.transport != "window":
            raise ValueError(f"arbitration {arbitration!r} is for the window transport; TCP queues in RED queue discs")
        self.arbitration = arbitration
        # A given worker serves alone (tests, benchmarks); otherwise the process-wide pool (runner.py).
        self.pool = pool or (Ns3Pool([worker]) if worker is not None else shared_pool())
        self._local = threading.local()  # collective_seconds_many: the worker of each of its threads
        # Exact reuse (reuse.py): a step composed from its collectives run alone, byte-identical to one run.
        self.reuse = ExactReuse() if exact_reuse else None
        self.debug_hang = debug_hang  # test hook: the run never ends (watchdog test)
        self.fast_path = fast_path  # message-level answers where no link is shared (artist/network/fastpath)
        self._memo: dict = {}
        self._memo_wall: dict = {}  # per collective_seconds answer: the wall seconds computing it took

    @property
    def worker(self) -> Ns3Worker:
        """The worker this thread's runs go to: the pool's first, or the one collective_seconds_many gave it."""
        return getattr(self._local, "worker", None) or self.pool.first

    # ---- identity -------------------------------------------------------------
    def identity(self) -> dict:
        info = expected_worker_versions()  # not the worker's answer: a cache hit must not start ns-3
        return {
            "backend": self.name, "version": NS3_BACKEND_VERSION, "ns3_version": info["ns3_version"],
            "engine_version": info["engine_version"], "algorithm": self.algorithm, "channels": self.channels,
            "latency": asdict(self.latency), "transport": asdict(self.transport),
            "accelerate": {"steady_steps": self.steady_steps, "rings": ["all_reduce", "all_gather", "reduce_scatter"],
                           "all_to_all_from_bytes": self.steady_all_to_all_bytes} if self.accelerate else False,
            # only when on: with it off, keys stay those of the packet runs cached before it existed
            **({"fast_path": {"model": "message-level", "version": fastpath.FASTPATH_VERSION}}
               if self.fast_path else {}),
            # only when not fifo: keys, golden tables and calibration profiles made before it stay valid
            **({"arbitration": self.arbitration} if self.arbitration != "fifo" else {}),
        }

    # ---- running --------------------------------------------------------------
    def _canonical(self, placement: Placement) -> Placement:
        return fabric_form(placement)[1]

    def run(self, collectives: Sequence[EngineCollective], label: str, ei=None, try_fast_path: bool = True) -> dict:
        """Run collectives and timers in one ns-3 run (label names the question in errors).

        Returns the worker's result plus per-collective seconds, after checking that every
        GPU received and sent exactly the bytes its schedules say (one pass over the transfers)."""
        ei = build_engine_input(self.topology, collectives, self.latency) if ei is None else ei
        res = self._timed_fast_path(ei) if try_fast_path else None
        if res is not None:
            return res
        started = time.perf_counter()
        res = self.worker.run(self._request_of(ei, label), self.timeout_s, label)
        res["wall_seconds"] = time.perf_counter() - started
        return self.check_result(res, ei, label)

    def _timed_fast_path(self, ei) -> dict | None:
        """_run_fast_path with its wall seconds, or None where the fast path is off or the rule says ns-3."""
        if not self.fast_path or self.debug_hang:
            return None
        started = time.perf_counter()
        res = self._run_fast_path(ei)
        if res is not None:
            res["wall_seconds"] = time.perf_counter() - started
        return res

    def _request_of(self, ei, label: str = "-") -> dict:
        """The worker's request for one packet-level run; a run too large to end is refused here."""
        packets = sum(math.ceil(b / self.transport.mtu) for b in ei.expected_tx)  # data packets, at least
        if packets > MAX_DATA_PACKETS:
            raise Ns3SimulationError(label, f"a packet-level run of {packets:.3g} data packets is past the bound "
                                            f"of {MAX_DATA_PACKETS:.3g} (artist/limits.py: over an hour of "
                                            f"simulation); time fewer bytes, or let the fast path answer")
        return {"arrays": ei.arrays, "nodes": len(ei.node_names), "debug_hang": self.debug_hang,
                "scheduler": SCHEDULERS[self.scheduler], "arbitration": ARBITRATIONS[self.arbitration],
                **asdict(self.transport)}

    def request(self, collectives: Sequence[EngineCollective], label: str = "-"):
        """(the worker's request, the engine input it was built from) for one ns-3 run."""
        ei = build_engine_input(self.topology, collectives, self.latency)
        return self._request_of(ei, label), ei

    def check_result(self, res: dict, ei, label: str, worker: Ns3Worker | None = None) -> dict:
        """The answering worker's versions (default: self.worker's) and byte conservation checked;
        per-collective seconds and sizes added; the answer marked as ns-3's own."""
        res["path"] = fastpath.NS3
        reported = {k: (worker or self.worker).info.get(k) for k in ("ns3_version", "engine_version")}
        if reported != expected_worker_versions():
            raise Ns3SimulationError(label, f"the ns-3 worker reports {reported}, but identity() (cache keys) "
                                            f"says {expected_worker_versions()}")
        n = len(ei.gpus)
        if res["node_rx_bytes"][:n] != ei.expected_rx or res["node_tx_bytes"][:n] != ei.expected_tx:
            raise Ns3SimulationError(label, f"byte conservation violated: received {res['node_rx_bytes'][:n]}, "
                                            f"expected {ei.expected_rx}; sent {res['node_tx_bytes'][:n]}, "
                                            f"expected {ei.expected_tx}")
        if any(res["node_rx_bytes"][n:]) or any(res["node_tx_bytes"][n:]):
            raise Ns3SimulationError(label, "a switch node was credited with payload bytes")
        res["collective_seconds"] = [e - s for s, e in zip(res["c_start_s"], res["c_end_s"])]
        res["packets"] = res["data_packets"] + res["ack_packets"]
        res["nodes"], res["links"] = len(ei.node_names), len(ei.link_names)
        res["collective_messages"] = ei.collective_messages
        return res

    def _run_fast_path(self, ei) -> dict | None:
        """The message-level answer where the rule allows it (artist/network/fastpath), else None (ns-3 runs).
        Its result has the fields run() returns; packets is 0 (none simulated), frames_modelled what ns-3 sends."""
        t = self.transport
        choice = fastpath.choose_path(ei.arrays, t.transport, t.mtu, t.window_bytes, t.ack_every)
        if choice.path != fastpath.MESSAGE_LEVEL:
            return None
        res = fastpath.time_engine_input(ei.arrays, t.mtu, t.ack_every)
        res.update(path=fastpath.MESSAGE_LEVEL, path_reason=choice.reason, t0_s=0.0, events=0,
                   sim_wall_seconds=res["model_wall_seconds"], node_rx_bytes=ei.expected_rx,
                   node_tx_bytes=ei.expected_tx, nodes=len(ei.node_names), links=len(ei.link_names),
                   collective_messages=ei.collective_messages,
                   frames_modelled=res.pop("data_packets") + res.pop("ack_packets"), packets=0,
                   collective_seconds=[e - s for s, e in zip(res["c_start_s"], res["c_end_s"])])
        return res

    def run_schedules(self, schedules: list[Schedule], ready_seconds: list[float], label: str) -> dict:
        """Collectives back to back, each at max(its ready time, the previous one's end)."""
        return self.run([EngineCollective(s, r, (i - 1,) if i else ()) for i, (s, r) in
                         enumerate(zip(schedules, ready_seconds))], label)

    def _schedule(self, group: Placement, nbytes: int, kind: str = "all_reduce",
                  src_dst: tuple[int, int] | None = None) -> Schedule:
        """The schedule to simulate: with acceleration a ring all-reduce, all-gather or reduce-scatter is
        built only for the steps that are simulated (a prefix; the rest is extrapolated), never in full."""
        ring = {"all_reduce": self.algorithm == "ring", "all_gather": True, "reduce_scatter": True}.get(kind, False)
        if self._may_accelerate() and ring and group.size > 1:
            def build(max_steps):
                if kind == "all_reduce":
                    return ring_allreduce(group, int(nbytes), self.channels, max_steps=max_steps)
                return ring_pass(kind, group, int(nbytes), self.channels, max_steps=max_steps)

            probe = build(1)
            keep = max(self.steady_steps, 2 * self._ring_period(probe) + 2)
            if keep < probe.total_steps:
                return build(keep)
        return collective_schedule(kind, self.algorithm, group, int(nbytes), self.channels, src_dst=src_dst)

    def _may_accelerate(self, jobs: int = 1) -> bool:
        """Steady-state skipping assumes one job's ring repeating its hop pattern: not with co-runners
        (their traffic is the point), nor on an ecmp spine or rails (each hop's plane is hashed, or
        its rail varies, so the pattern need not repeat); those run in full."""
        return self.accelerate and jobs == 1 and shape_symmetric(self.topology)

    def _ring_period(self, schedule: Schedule) -> int:
        """Smallest P such that the ring's hops (links crossed, latency) repeat every P positions."""
        ring = [t for t in schedule.transfers if t.step == 0 and t.channel == 0]  # sorted by src = ring order
        sig = []
        for t in ring:
            p = path(self.topology, schedule.ranks[t.src], schedule.ranks[t.dst])
            sig.append((p.kind, round(p.latency_s, 15), tuple(link[0] for link in p.links)))
        n = len(sig)
        return next(q for q in range(1, n + 1) if n % q == 0 and all(sig[i] == sig[(i + q) % n] for i in range(n)))

    def _accelerated(self, schedule: Schedule) -> bool:
        return schedule.is_prefix

    def _extrapolate(self, prefix: Schedule, res: dict, coll: int, first_msg: int) -> float:
        """Collective time from a run of its first steps: step ends continued by repeating the last P increments."""
        start = res["c_start_s"][coll]
        end = [0.0] * prefix.steps
        for i, t in enumerate(prefix.transfers):
            end[t.step] = max(end[t.step], res["m_done_s"][first_msg + i] - start)
        period = self._ring_period(prefix)
        for s in range(prefix.steps, prefix.total_steps):
            end.append(end[s - 1] + end[s - period] - end[s - period - 1])
        return end[-1]

    def _accelerated_run(self, schedules: list[Schedule], label: str) -> tuple[list[float], dict]:
        """Collectives (prefixes among them) back to back (ready 0), the prefixes extrapolated."""
        res = self.run_schedules(schedules, [0.0] * len(schedules), label)
        seconds = []
        for c, s in enumerate(schedules):
            first = res["collective_messages"][c][0]
            seconds.append(self._extrapolate(s, res, c, first) if s.is_prefix else res["collective_seconds"][c])
        return seconds, res

    # ---- FabricModel ------------------------------------------------------------
    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        """One collective of nbytes; by the topology's symmetry it depends only on the canonical shape."""
        key = (kind, fabric_key(group), int(nbytes))
        if key not in self._memo:
            started = time.perf_counter()
            self._memo[key] = self._collective_seconds(group, nbytes, kind)
            self._memo_wall[key] = time.perf_counter() - started
        return self._memo[key]

    def _collective_seconds(self, group: Placement, nbytes: int, kind: str) -> float:
        """collective_seconds' answer, computed."""
        anchor = self._all_to_all_anchor(group, nbytes, kind)
        if anchor is not None:
            return self._extrapolated_all_to_all(group, nbytes, anchor)
        schedule = self._schedule(self._canonical(group), nbytes, kind)
        if not schedule.transfers:
            return 0.0
        label = shape_to_text(group.canonical_shape)
        if self._accelerated(schedule):
            return self._accelerated_run([schedule], label)[0][0]
        return self.run_schedules([schedule], [0.0], label)["collective_seconds"][0]

    def collective_seconds_many(self, group: Placement, sizes: Sequence[int], kind: str = "all_reduce") -> list[float]:
        """collective_seconds of several sizes (collective_runs: on all of the pool's workers at once)."""
        return [seconds for seconds, _ in self.collective_runs(group, sizes, kind)]

    def collective_runs(self, group: Placement, sizes: Sequence[int], kind: str = "all_reduce"
                        ) -> list[tuple[float, float]]:
        """(collective_seconds, wall seconds its answer took) of several sizes: the runs not answered yet on
        all of the pool's workers at once, largest first (so that the last to finish are short); the same
        answers as one by one (a run's answer does not depend on the worker)."""
        todo: dict[int, None] = {}
        for nbytes in sorted({int(b) for b in sizes}, reverse=True):
            anchor = self._all_to_all_anchor(group, nbytes, kind)
            for b in (nbytes,) if anchor is None else (anchor, anchor // 2):  # extrapolated: its anchors first
                if (kind, fabric_key(group), b) not in self._memo:
                    todo[b] = None
        if len(todo) > 1:
            def on(worker: Ns3Worker, nbytes: int) -> None:
                self._local.worker = worker  # this thread's runs go to its worker (the `worker` property)
                try:
                    self.collective_seconds(group, nbytes, kind)
                finally:
                    self._local.worker = None

            self.pool.each(list(todo), on)
        out = []
        for b in sizes:
            seconds = self.collective_seconds(group, int(b), kind)
            out.append((seconds, self._memo_wall.get((kind, fabric_key(group), int(b)), 0.0)))
        return out

    def _all_to_all_anchor(self, group: Placement, nbytes: int, kind: str) -> int | None:
        """With acceleration, the payload an all-to-all of nbytes is extrapolated from (None: run in full);
        STEADY_ALL_TO_ALL_BYTES says why and how it was checked."""
        if not (self._may_accelerate() and kind == "all_to_all" and group.size > 1):
            return None
        anchor = max(self.steady_all_to_all_bytes,
                     2 * group.size * self.channels * STEADY_ALL_TO_ALL_FLOW_BYTES)
        return anchor if nbytes > anchor else None

    def _extrapolated_all_to_all(self, group: Placement, nbytes: int, anchor: int) -> float:
        """t(anchor) + (nbytes - anchor) x the time per byte between anchor / 2 and anchor."""
        half = anchor // 2
        at, before = (self.collective_seconds(group, b, "all_to_all") for b in (anchor, half))
        return at + (int(nbytes) - anchor) * (at - before) / (anchor - half)

    def _node_schedule(self, node, accelerate: bool = True) -> Schedule:
        group = Placement(self.topology, node.group)
        if node.kind == "send_recv":
            return collective_schedule("send_recv", self.algorithm, group, node.nbytes, self.channels,
                                       src_dst=tuple(node.group))
        if not accelerate:
            return collective_schedule(node.kind, self.algorithm, group, int(node.nbytes), self.channels)
        return self._schedule(group, node.nbytes, node.kind)

    @staticmethod
    def _engine_collectives(graphs: Mapping[str, StepGraph], schedules: dict) -> tuple[list, dict]:
        """The engine's collectives and timers for these graphs (one job each), and (job, node) -> collective."""
        collectives: list[EngineCollective] = []
        index: dict[tuple[int, int], int] = {}
        for j, job in enumerate(graphs):
            graph = graphs[job]
            for node in graph.nodes:
                ready, preds = 0.0, []
                for d in node.deps:
                    dep = graph.nodes[d]
                    if dep.kind == "compute" and not dep.deps:
                        ready = max(ready, dep.seconds)  # a root compute node ends at t0 + seconds
                    else:
                        preds.append(index[(j, d)])
                if node.kind == "compute" and not node.deps:
                    continue  # folded into its dependants' ready times
                index[(j, node.id)] = len(collectives)
                collectives.append(EngineCollective(schedules.get((j, node.id)), ready, tuple(preds),
                                                    0.0 if node.is_communication else node.seconds, j))
        return collectives, index

    def path_choice(self, graphs: Mapping[str, StepGraph]) -> fastpath.PathChoice:
        """Which path time() takes for these graphs run in full (artist/network/fastpath's rule), without running."""
        schedules = {(j, n.id): self._node_schedule(n, accelerate=False) for j, job in enumerate(graphs)
                     for n in graphs[job].nodes if n.is_communication}
        messages = sum(len(s.transfers) for s in schedules.values())
        if not messages:
            return fastpath.PathChoice("none", "nothing crosses a link")
        if not self.fast_path:
            return fastpath.PathChoice(fastpath.NS3, "fast path off", messages)
        ei = build_engine_input(self.topology, self._engine_collectives(graphs, schedules)[0], self.latency)
        t = self.transport
        choice = fastpath.choose_path(ei.arrays, t.transport, t.mtu, t.window_bytes, t.ack_every)
        return dataclasses.replace(choice, messages=messages)

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        """Every graph's communication in one ns-3 run (jobs at once), each node's duration
        measured from its start (after its dependencies) to its last byte."""
        started = time.perf_counter()
        jobs = list(graphs)
        label = "+".join(_graph_label(self.topology, graphs[j]) for j in jobs)
        accelerate = self._may_accelerate(len(jobs))
        # ns-3 workers load while the schedules are built, where exact reuse will ask them (with the fast path
        # on, the whole graph may need no ns-3 at all: no worker is started for it)
        if self.reuse is not None and not self.fast_path and not accelerate and self.reuse.applies(self):
            self.pool.warm(sum(n.is_communication for g in graphs.values() for n in g.nodes))
        schedules: dict[tuple[int, int], Schedule] = {}
        extrapolated: dict[tuple[int, int], float] = {}  # large all-to-alls, with acceleration
        for j, job in enumerate(jobs):
            graph = graphs[job]
            for node in graph.nodes:
                if node.is_communication:
                    group = Placement(self.topology, node.group) if accelerate and node.kind == "all_to_all" else None
                    if group is not None and self._all_to_all_anchor(group, node.nbytes, node.kind) is not None:
                        extrapolated[(j, node.id)] = self.collective_seconds(group, int(node.nbytes), node.kind)
                    else:
                        schedules[(j, node.id)] = self._node_schedule(node, accelerate)
        accelerated = accelerate and (bool(extrapolated) or any(self._accelerated(s) for s in schedules.values()))
        if not any(s.transfers for s in schedules.values()) and not extrapolated:
            res = None  # nothing crosses a link (one GPU): every communication node takes 0 s
        elif accelerated:
            order = list(schedules)  # each job's communication back to back, alone (steady-state skipping)
            seconds, res = self._accelerated_run([schedules[k] for k in order], label) if order else ([], None)
            durations = {**dict(zip(order, seconds)), **extrapolated}
        else:
            # cheapest first: the message-level answer where no link is shared (whole graph), else the
            # collectives run alone and composed (exact reuse), else one ns-3 run of everything
            collectives, index = self._engine_collectives(graphs, schedules)
            # the whole graph's engine input only where the fast path may use it (reuse builds its pieces' own)
            ei = build_engine_input(self.topology, collectives, self.latency) if self.fast_path else None
            res = self._timed_fast_path(ei) if ei is not None else None
            if res is None and self.reuse is not None and self.reuse.applies(self):
                res = self.reuse.run(self, collectives, label)
            if res is None:
                res = self.run(collectives, label, ei=ei, try_fast_path=False)
            durations = {k: res["collective_seconds"][index[k]] for k in schedules}
        wall = time.perf_counter() - started
        out = {}
        timed = res is not None or bool(extrapolated)  # else nothing crosses a link
        for j, job in enumerate(jobs):
            graph = graphs[job]
            node_seconds = [durations[(j, n.id)] if n.is_communication and timed
                            else 0.0 if n.is_communication else n.seconds for n in graph.nodes]
            path = res["path"] if res is not None else "ns3" if timed else "none"  # none: nothing crosses a link
            details = {"transport": self.transport.transport, "accelerated": bool(accelerated), "jobs": len(jobs),
                       "path": path}
            if res is not None:
                details.update(nodes=res["nodes"], links=res["links"], frames_on_wires=res["device_transmissions"],
                               events=res["events"], simulated_wall_seconds=res["sim_wall_seconds"])
                if "composed_from" in res:  # exact reuse (reuse.py): collectives run alone, timeline composed
                    details["composed_from"] = res["composed_from"]
                if not accelerated:
                    ends = [res["c_end_s"][index[(j, n.id)]] for n in graph.nodes if (j, n.id) in index]
                    details["simulated_end_seconds"] = max(ends, default=0.0) - res["t0_s"]
            result = CommResult(self.name, packets=res["packets"] if res is not None and j == 0 else 0,
                                wall_seconds=wall, details=details)
            out[job] = GraphTiming.of(graph, node_seconds, result)
        return out


def _graph_label(topology: Topology, graph: StepGraph) -> str:
    """The shape of a graph's GPUs, for error messages."""
    gpus = graph.gpus
    return shape_to_text(Placement(topology, gpus).canonical_shape) if gpus else "[]"
