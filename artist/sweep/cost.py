"""What a sweep's ns-3 (and flow) answers will cost, predicted from its distinct collectives before any run.

ns-3's time is spent per frame per link (a device enqueue, a transmission, a reception, a
switch forwarding): measured here, CPU time is proportional to frames on wires. So each piece
(questions.py) is costed from its schedule, without simulating it:
  frames of a message = ceil(bytes / (MTU - 16-byte header)), acks = ceil(frames / ack_every),
  frame-hops = (frames + acks) x links on the message's path,
  CPU-s = frame-hops x SECONDS_PER_FRAME_HOP + transfers x PYTHON_SECONDS_PER_TRANSFER,
and the wall time on N cores is the longest-first schedule of the pieces on N workers (what
prefetch.py does). benchmarks/ns3_speed.py and docs/pages/results/benchmarks.md compare it with
measured runs.

The flow backend's time is its Python loop over every transfer of a step (one rate computation per
flow start or drain), so each distinct step question is costed as its transfers (from the schedules,
as above) x FLOW_SECONDS_PER_TRANSFER. Runs with shared contention also time their components'
steady states, which depend on who overlaps whom: not predicted (flow_cost says so).
"""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass

from artist.network.collectives import collective_schedule
from artist.network.links import path

# Measured on the 2-core development machine (ns-3.44, compiled engine, PriorityQueue scheduler,
# window transport): CPU-seconds of the ns-3 worker per frame on a wire, ResNet-50 buckets on
# 16 GPUs (771 840 frame-hops, 1.0-1.2 CPU-s) and 64 GPUs (3 392 928 frame-hops, 5.3-5.5 CPU-s).
SECONDS_PER_FRAME_HOP = 1.55e-6
# Building a schedule and the engine's input in Python, per message (measured: 0.17 s for the
# 32 256 messages of a 64-GPU ResNet-50 step).
PYTHON_SECONDS_PER_TRANSFER = 5e-6
# A step the fast path answers (artist/network/fastpath): schedules, engine input and the message-level
# timing, per message (measured: 0.47 s for the 32 256 messages of a 64-GPU ResNet-50 step, `artist comm
# --backend ns3`, on the 2-core machine under load).
FAST_PATH_SECONDS_PER_TRANSFER = 1.5e-5
# The flow engine, one job's step alone (FlowModel.time), per transfer of its schedules: measured on the 2-core
# machine under load, dally-3tier at 4 racks: ResNet-50 on 64 GPUs 35 us (32 256 transfers, 1.13 CPU-s),
# BERT-large on 32 GPUs 33 us, ResNet-18 on 128 GPUs 23 us, VGG-11 on 16 GPUs 52 us.
FLOW_SECONDS_PER_TRANSFER = 3.5e-5


@dataclass(frozen=True)
class PieceCost:
    transfers: int
    packets: int  # data frames + acks (what the engine reports as packets)
    frame_hops: int  # frames on wires

    @property
    def cpu_seconds(self) -> float:
        return self.frame_hops * SECONDS_PER_FRAME_HOP + self.transfers * PYTHON_SECONDS_PER_TRANSFER


def piece_cost(topology, piece, algorithm: str, channels: int, mtu: int = 9000, ack_every: int = 8) -> PieceCost:
    """Frames and frame-hops of one collective alone, from its schedule (no simulation)."""
    placement = piece.placement(topology)
    src_dst = tuple(piece.group) if piece.kind == "send_recv" else None
    schedule = collective_schedule(piece.kind, algorithm, placement, piece.nbytes, channels, dependencies=False,
                                   src_dst=src_dst)
    payload = mtu - 16
    hops: dict[tuple[int, int], int] = {}
    packets = frame_hops = 0
    for t in schedule.transfers:
        a, b = schedule.ranks[t.src], schedule.ranks[t.dst]
        h = hops.get((a, b))
        if h is None:
            h = hops[(a, b)] = len(path(topology, a, b, t.channel).links)
        frames = max(1, math.ceil(t.nbytes / payload))
        sent = frames + math.ceil(frames / ack_every)
        packets += sent
        frame_hops += sent * h
    return PieceCost(len(schedule.transfers), packets, frame_hops)


def makespan(costs: list[float], workers: int) -> float:
    """Wall time of jobs run longest first, each on the first free of `workers`."""
    free = [0.0] * max(1, workers)
    for c in sorted(costs, reverse=True):
        heapq.heapreplace(free, free[0] + c)
    return max(free)


@dataclass
class SweepCost:
    steps: int  # distinct step questions
    lookups: int  # step questions asked in all
    pieces: int  # ns-3 runs: distinct collectives alone, plus steps simulated whole
    packets: int
    frame_hops: int
    cpu_seconds: float
    costs: list  # per piece, CPU-s
    fast_steps: int = 0  # steps the fast path answers (no ns-3 run; their CPU-s are in costs)

    def wall_seconds(self, workers: int) -> float:
        return makespan(self.costs, workers)

    def lines(self, workers: int, found_seconds: float) -> list[str]:
        return [
            f"ns-3 questions (found with the analytical backend standing in, {found_seconds:.1f} s): "
            f"{self.lookups} look-ups, {self.steps} distinct steps: {self.fast_steps} answered by the fast path "
            f"(no link shared), the others in {self.pieces - self.fast_steps} ns-3 runs (distinct collectives alone, "
            f"and steps whose collectives overlap, whole)",
            f"ns-3 cost predicted: {self.packets:,} packets, {self.frame_hops:,} frames on wires, "
            f"{self.cpu_seconds:,.0f} CPU-s, wall {self.wall_seconds(workers):,.0f} s on {workers} cores "
            f"(idle cores; answers already in the cache are not subtracted)",
        ]


def sweep_cost(questions) -> SweepCost:
    """The predicted cost of every distinct piece of a sweep's questions, plus the steps simulated whole
    (their collectives overlap: one run each, costed as the sum of its collectives)."""
    costs, packets, frame_hops = [], 0, 0
    memo: dict = {}

    def cost(setting, topology, piece) -> PieceCost:
        key = (setting, piece)
        if key not in memo:
            algorithm, channels, options = setting
            opts = json.loads(options)
            memo[key] = piece_cost(topology, piece, algorithm, channels, opts.get("mtu", 9000),
                                   opts.get("ack_every", 8))
        return memo[key]

    for setting, pieces in questions.pieces.items():
        for piece, (topology, _) in pieces.items():
            c = cost(setting, topology, piece)
            costs.append(c.cpu_seconds)
            packets += c.packets
            frame_hops += c.frame_hops
    for setting, topology, pieces in questions.whole:
        parts = [cost(setting, topology, p) for p in pieces]
        costs.append(sum(c.cpu_seconds for c in parts))
        packets += sum(c.packets for c in parts)
        frame_hops += sum(c.frame_hops for c in parts)
    for _, transfers in questions.fast:
        costs.append(transfers * FAST_PATH_SECONDS_PER_TRANSFER)
    return SweepCost(len(questions.steps), questions.lookups, len(costs), packets, frame_hops, sum(costs), costs,
                     len(questions.fast))


@dataclass
class FlowCost:
    steps: int  # distinct step questions
    lookups: int  # step questions asked in all
    transfers: int  # of the distinct steps
    costs: list  # per distinct step, CPU-s
    shared_runs: int  # runs with shared contention (their steady states not predicted)

    @property
    def cpu_seconds(self) -> float:
        return sum(self.costs)

    def lines(self, workers: int, found_seconds: float) -> list[str]:
        out = [f"flow questions (found with the analytical backend standing in, {found_seconds:.1f} s): "
               f"{self.lookups} look-ups, {self.steps} distinct steps, {self.transfers:,} transfers",
               f"flow cost predicted: {self.cpu_seconds:,.0f} CPU-s, wall {makespan(self.costs, workers):,.0f} s on "
               f"{workers} cores (answers already in the cache are not subtracted)"]
        if self.shared_runs:
            out.append(f"flow cost of {self.shared_runs} run(s) with shared contention: more than that, not "
                       f"predicted (their components' steady states depend on which jobs overlap)")
        return out


def flow_cost(questions, shared_runs: int = 0) -> FlowCost:
    """The predicted cost of a sweep's flow step questions (module docstring)."""
    memo: dict = {}
    costs, transfers = [], 0
    for (algorithm, channels, _), topology, pieces in questions.flow:
        n = 0
        for piece in pieces:
            key = (topology.name, topology.racks, algorithm, channels, piece)
            if key not in memo:
                memo[key] = piece_cost(topology, piece, algorithm, channels).transfers
            n += memo[key]
        transfers += n
        costs.append(n * FLOW_SECONDS_PER_TRANSFER)
    return FlowCost(len(questions.flow), questions.lookups, transfers, costs, shared_runs)


def dry_run_lines(spec, workers: int) -> list[str]:
    """What `artist sweep --dry-run` predicts of the network's cost: per backend that simulates (ns-3, flow),
    its questions and their CPU and wall time; the loops that ask their own questions said so."""
    from artist.sweep.questions import collect_questions

    lines = []
    for backend, name in (("ns3", "ns-3"), ("flow", "flow")):
        if any(run.comm.backend == backend and run.elastic is not None for run in spec.runs):
            lines.append(f"{name} cost: not predicted for the elastic loop's runs (the loop asks its own questions)")
        rigid = [run for run in spec.runs if run.comm.backend == backend and run.elastic is None]
        if not rigid:
            continue
        questions = collect_questions(rigid, spec.models, backend=backend)
        if backend == "ns3":
            lines += sweep_cost(questions).lines(workers, questions.seconds)
        else:
            shared = sum(run.simulator.contention == "shared" for run in rigid)
            lines += flow_cost(questions, shared).lines(workers, questions.seconds)
    return lines
