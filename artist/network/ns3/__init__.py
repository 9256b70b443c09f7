"""Packet-accurate CommModel: a job's collectives simulated packet by packet in ns-3.

    Ns3Model(topology, algorithm="ring", channels=1, **options)

Per call, only the part of the cluster the placement touches is built (see
builder.py), the schedules of collectives.py are executed by the C++ engine
(engine.cc) in a persistent worker process (runner.py), and the answer comes
back as a CommResult.

Exposed time: all gradient buckets of one iteration run in ONE ns-3 run; bucket
b's all-reduce starts at max(its ready time in the backward pass, end of bucket
b-1) inside the simulator, so transport state (TCP windows) carries from one
bucket to the next as in a real iteration. The bucket durations then go through
base.result_from_buckets, whose timeline is the same rule; the simulated end of
the last bucket is kept in details["simulated_exposed_seconds"] as a cross-check.

Acceleration (accelerate=True, ring only, off by default): steady-state skipping.
The ring's hop pattern repeats every P positions (P = GPUs per rack for a regular
multi-rack shape: NVLink hops, a NIC hop per machine boundary, a spine hop per rack
boundary), and so, once the pipeline is full, do the increments between the
completion times of successive steps (measured: constant when the NIC is the
bottleneck, period P when start-up latencies show, e.g. 17 MB on 64 GPUs). Each
collective is simulated for its first max(steady_steps, 2P + 2) steps only and the
remaining steps are extrapolated by repeating the last P increments. With one FIFO
connection per (sender, channel) the truncation cannot change the simulated steps.
benchmarks/ns3_speed.py checks it against full runs (goal < 1 %).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version as package_version

from artist.network.analytical import StartupLatency
from artist.network.base import CommResult, compute_seconds_on, result_from_buckets
from artist.network.collectives import ALGORITHMS, Schedule, allreduce_schedule
from artist.network.links import path
from artist.network.ns3.builder import build_engine_input
from artist.network.ns3.runner import Ns3SimulationError, Ns3Worker, shared_worker
from artist.network.ns3.worker import ENGINE_SOURCE, TRANSPORTS
from artist.placement import Placement, placement_from_shape, shape_to_text
from artist.topology import Topology
from artist.workload import ModelProfile

__all__ = ["Ns3Model", "Ns3SimulationError", "Ns3Worker", "NS3_BACKEND_VERSION", "TransportOptions"]

# Bump when the Python side changes an answer (the C++ engine has its own ENGINE_VERSION).
NS3_BACKEND_VERSION = "1"


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


class Ns3Model:
    """CommModel backed by packet-level ns-3 simulation of collectives.py's schedules."""

    name = "ns3"

    def __init__(self, topology: Topology, algorithm: str = "ring", channels: int = 1,
                 latency: StartupLatency = StartupLatency(), transport: str = "window",
                 accelerate: bool = False, steady_steps: int = 24, timeout_s: float = 600.0,
                 worker: Ns3Worker | None = None, debug_hang: bool = False, **transport_options):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        if channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        if steady_steps < 4:
            raise ValueError(f"steady_steps must be >= 4, got {steady_steps}")
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels
        self.latency = latency
        self.transport = TransportOptions(transport=transport, **transport_options)
        self.accelerate = accelerate
        self.steady_steps = steady_steps
        self.timeout_s = timeout_s
        self.worker = worker or shared_worker()
        self.debug_hang = debug_hang  # test hook: the run never ends (watchdog test)
        self._memo: dict = {}

    # ---- identity -------------------------------------------------------------
    def identity(self) -> dict:
        info = expected_worker_versions()  # not the worker's answer: a cache hit must not start ns-3
        return {
            "backend": self.name, "version": NS3_BACKEND_VERSION, "ns3_version": info["ns3_version"],
            "engine_version": info["engine_version"], "algorithm": self.algorithm, "channels": self.channels,
            "latency": asdict(self.latency), "transport": asdict(self.transport),
            "accelerate": {"steady_steps": self.steady_steps} if self.accelerate else False,
        }

    # ---- running --------------------------------------------------------------
    def _canonical(self, placement: Placement) -> Placement:
        return placement_from_shape(placement.topology, placement.canonical_shape)

    def run_schedules(self, schedules: list[Schedule], ready_seconds: list[float], shape: str) -> dict:
        """Run collectives back to back (each at max(ready, previous end)) in one ns-3 run.

        Returns the worker's result plus per-collective seconds, after checking that every
        rank received and sent exactly the bytes its schedules say."""
        ei = build_engine_input(self.topology, schedules, ready_seconds, self.latency)
        request = {"arrays": ei.arrays, "nodes": len(ei.node_names), "debug_hang": self.debug_hang,
                   **asdict(self.transport)}
        started = time.perf_counter()
        res = self.worker.run(request, self.timeout_s, shape)
        res["wall_seconds"] = time.perf_counter() - started
        reported = {k: self.worker.info.get(k) for k in ("ns3_version", "engine_version")}
        if reported != expected_worker_versions():
            raise Ns3SimulationError(shape, f"the ns-3 worker reports {reported}, but identity() (cache keys) "
                                            f"says {expected_worker_versions()}")
        n = len(ei.rank_gpus)
        want_rx = [sum(s.bytes_received_per_rank()[i] for s in schedules) for i in range(n)]
        want_tx = [sum(s.bytes_sent_per_rank()[i] for s in schedules) for i in range(n)]
        if res["node_rx_bytes"][:n] != want_rx or res["node_tx_bytes"][:n] != want_tx:
            raise Ns3SimulationError(shape, f"byte conservation violated: received {res['node_rx_bytes'][:n]}, "
                                            f"expected {want_rx}; sent {res['node_tx_bytes'][:n]}, expected {want_tx}")
        if any(res["node_rx_bytes"][n:]) or any(res["node_tx_bytes"][n:]):
            raise Ns3SimulationError(shape, "a switch node was credited with payload bytes")
        res["collective_seconds"] = [e - s for s, e in zip(res["c_start_s"], res["c_end_s"])]
        res["packets"] = res["data_packets"] + res["ack_packets"]
        res["nodes"], res["links"] = len(ei.node_names), len(ei.link_names)
        return res

    def _schedule(self, placement: Placement, nbytes: int) -> Schedule:
        return allreduce_schedule(self.algorithm, placement, int(nbytes), self.channels)

    def _ring_period(self, schedule: Schedule) -> int:
        """Smallest P such that the ring's hops (links crossed, latency) repeat every P positions."""
        ring = [t for t in schedule.transfers if t.step == 0 and t.channel == 0]  # sorted by src = ring order
        sig = []
        for t in ring:
            p = path(self.topology, schedule.ranks[t.src], schedule.ranks[t.dst])
            sig.append((p.kind, round(p.latency_s, 15), tuple(link[0] for link in p.links)))
        n = len(sig)
        return next(q for q in range(1, n + 1) if n % q == 0 and all(sig[i] == sig[(i + q) % n] for i in range(n)))

    def _simulated_steps(self, schedule: Schedule) -> int:
        if not (self.accelerate and self.algorithm == "ring" and schedule.transfers):
            return schedule.steps
        return min(schedule.steps, max(self.steady_steps, 2 * self._ring_period(schedule) + 2))

    def _accelerated(self, schedule: Schedule) -> bool:
        return self._simulated_steps(schedule) < schedule.steps

    def _truncate(self, schedule: Schedule) -> Schedule:
        # Transfers are sorted by step and deps point backwards, so a step prefix is closed.
        k = self._simulated_steps(schedule)
        keep = sum(1 for t in schedule.transfers if t.step < k)
        return dataclasses.replace(schedule, transfers=schedule.transfers[:keep])

    def _extrapolate(self, schedule: Schedule, truncated: Schedule, res: dict, coll: int, first_msg: int) -> float:
        """Collective time from a truncated run: step ends continued by repeating the last P increments."""
        start = res["c_start_s"][coll]
        end = [0.0] * truncated.steps
        for i, t in enumerate(truncated.transfers):
            end[t.step] = max(end[t.step], res["m_done_s"][first_msg + i] - start)
        period = self._ring_period(schedule)
        for s in range(truncated.steps, schedule.steps):
            end.append(end[s - 1] + end[s - period] - end[s - period - 1])
        return end[-1]

    def _timed_collectives(self, schedules: list[Schedule], ready: list[float], shape: str) -> tuple[list[float], dict]:
        if not any(self._accelerated(s) for s in schedules):
            res = self.run_schedules(schedules, ready, shape)
            return res["collective_seconds"], res
        # Accelerated: truncated collectives back to back (ready 0), then extrapolated.
        truncated = [self._truncate(s) if self._accelerated(s) else s for s in schedules]
        res = self.run_schedules(truncated, [0.0] * len(truncated), shape)
        seconds, first = [], 0
        for c, (s, t) in enumerate(zip(schedules, truncated)):
            seconds.append(self._extrapolate(s, t, res, c, first) if t is not s else res["collective_seconds"][c])
            first += len(t.transfers)
        return seconds, res

    # ---- CommModel ------------------------------------------------------------
    def collective_seconds(self, placement: Placement, nbytes: int) -> float:
        """One all-reduce of nbytes; by the topology's symmetry it depends only on the canonical shape."""
        key = (placement.canonical_shape, int(nbytes))
        if key not in self._memo:
            canonical = self._canonical(placement)
            schedule = self._schedule(canonical, nbytes)
            if not schedule.transfers:
                self._memo[key] = 0.0
            else:
                seconds, _ = self._timed_collectives([schedule], [0.0], shape_to_text(placement.canonical_shape))
                self._memo[key] = seconds[0]
        return self._memo[key]

    def iteration_comm_time(self, model: ModelProfile, placement: Placement) -> CommResult:
        started = time.perf_counter()
        if placement.size == 1:
            return result_from_buckets(model, placement, [0.0] * len(model.buckets), self.name,
                                       wall_seconds=time.perf_counter() - started)
        canonical = self._canonical(placement)
        compute = compute_seconds_on(model, placement)
        schedules = [self._schedule(canonical, b) for b, _ in model.buckets]
        ready = [r * compute for _, r in model.buckets]
        seconds, res = self._timed_collectives(schedules, ready, shape_to_text(placement.canonical_shape))
        details = {"transport": self.transport.transport, "nodes": res["nodes"], "links": res["links"],
                   "frames_on_wires": res["device_transmissions"], "events": res["events"],
                   "simulated_wall_seconds": res["sim_wall_seconds"], "accelerated": self.accelerate}
        if not self.accelerate:
            details["simulated_exposed_seconds"] = max(0.0, res["c_end_s"][-1] - res["t0_s"] - compute)
        return result_from_buckets(model, placement, seconds, self.name, packets=res["packets"],
                                   wall_seconds=time.perf_counter() - started, details=details)
