"""What one training step is: a graph of compute, collectives and sends.

A StepGraph is a DAG (ASTRA-sim / Chakra style) of nodes:
- ``compute``: a timer of ``seconds`` on ``group`` (no bytes on the fabric);
- collectives over an explicit GPU group (``all_reduce``, ``all_gather``,
  ``reduce_scatter``, ``all_to_all``), ``nbytes`` per rank as nccl-tests
  counts its "size": the all-reduce buffer, the all-gather *output*, the
  reduce-scatter *input*, the all-to-all send buffer (nbytes / n to each rank);
- ``send_recv``: ``nbytes`` from ``group[0]`` to ``group[1]`` (pipeline stages).

A node starts when every node in ``deps`` has finished (at the step's start if
it has none) and lasts its duration: ``seconds`` for compute, what the fabric
model says for communication. Nodes are listed so that deps point backwards.

Compute nodes may overlap: a DDP step uses one timer per gradient bucket,
"the backward pass up to where this bucket's gradients are ready", all measured
from the step's start, so a bucket's ready time is one number (exactly what it
was before graphs) rather than a sum of differences.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

NodeKind = Literal["compute", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
COMMUNICATION = COLLECTIVES + ("send_recv",)
KINDS = ("compute",) + COMMUNICATION

# Floats in keys are written at 9 significant digits: enough to tell any two durations
# that matter apart, and immune to last-bit noise between platforms and library versions.
KEY_DIGITS = 9


@dataclass(frozen=True)
class Node:
    id: int
    kind: str
    deps: tuple[int, ...] = ()
    seconds: float = 0.0  # compute: duration on the group's slowest GPU
    group: tuple[int, ...] = ()  # GPUs: the communicator (sorted), or (src, dst) for send_recv
    nbytes: int = 0  # per-rank payload, nccl-tests' "size" convention (module docstring)

    @property
    def is_communication(self) -> bool:
        return self.kind != "compute"


@dataclass(frozen=True)
class StepGraph:
    nodes: tuple[Node, ...]
    samples: int = 0  # global batch the step trains on (0: not stated)

    def __post_init__(self):
        checked: set[tuple[int, ...]] = set()  # collective groups found sorted and distinct
        for i, node in enumerate(self.nodes):
            if node.id != i:
                raise ValueError(f"node {i} has id {node.id}; ids must be 0..n-1 in order")
            if node.kind not in KINDS:
                raise ValueError(f"node {i}: unknown kind {node.kind!r}; known: {', '.join(KINDS)}")
            if node.deps and not (0 <= min(node.deps) and max(node.deps) < i):
                raise ValueError(f"node {i}: dependencies {node.deps} must name earlier nodes")
            if node.kind == "send_recv":
                if len(node.group) != 2 or node.group[0] == node.group[1]:
                    raise ValueError(f"node {i}: send_recv needs (src, dst) of two different GPUs, got {node.group}")
            elif node.kind in COLLECTIVES and node.group not in checked:  # a step repeats a few groups
                if not node.group or list(node.group) != sorted(set(node.group)):
                    raise ValueError(f"node {i}: a collective's group must be sorted distinct GPUs, got {node.group}")
                checked.add(node.group)
            if node.nbytes < 0 or not (node.seconds >= 0 and math.isfinite(node.seconds)):
                raise ValueError(f"node {i}: bytes and seconds must be finite and >= 0")

    @property
    def gpus(self) -> tuple[int, ...]:
        """Every GPU the graph touches, sorted."""
        return tuple(sorted({g for n in self.nodes for g in n.group}))

    def communication(self) -> list[Node]:
        return [n for n in self.nodes if n.is_communication]

    def relabel(self, gpu_map: Mapping[int, int]) -> "StepGraph":
        """The same graph on other GPUs (collective groups re-sorted, send_recv keeps direction).
        A step graph names a few groups many times (an LLM step: ~10^5 nodes, tens of groups), so each
        group is relabelled once; a node whose group does not change is kept as it is. A map that is
        one-to-one on the graph's GPUs keeps a valid graph valid, so its nodes are not checked again."""
        groups: dict = {}
        nodes = []
        for n in self.nodes:
            key = (n.kind == "send_recv", n.group)
            group = groups.get(key)
            if group is None:
                group = tuple(gpu_map[g] for g in n.group)
                if not key[0]:
                    group = tuple(sorted(group))
                groups[key] = group
            nodes.append(n if group == n.group else Node(n.id, n.kind, n.deps, n.seconds, group, n.nbytes))
        used = {g for _, group in groups for g in group}
        if len({gpu_map[g] for g in used}) == len(used):
            return _checked_graph(tuple(nodes), self.samples)
        return StepGraph(tuple(nodes), self.samples)

    def key_material(self) -> list:
        """The graph as JSON-ready lists, floats at KEY_DIGITS significant digits (each distinct
        duration and group converted once: the same lists, the same JSON)."""
        seconds: dict[float, float] = {}
        groups: dict[tuple, list] = {}
        out = []
        for n in self.nodes:
            rounded = seconds.get(n.seconds)
            if rounded is None:
                rounded = seconds[n.seconds] = float(f"{n.seconds:.{KEY_DIGITS}g}")
            group = groups.get(n.group)
            if group is None:
                group = groups[n.group] = list(n.group)
            out.append([n.kind, list(n.deps), rounded, group, n.nbytes])
        return out

    def signature(self) -> str:
        """Digest of the graph as it stands (GPU ids included): cache-key material."""
        text = json.dumps(self.key_material(), separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _checked_graph(nodes: tuple[Node, ...], samples: int) -> StepGraph:
    """A StepGraph of nodes known to pass StepGraph's checks (a valid graph relabelled one-to-one),
    built without running them again: they cost more than the relabelling on a large graph."""
    graph = object.__new__(StepGraph)
    object.__setattr__(graph, "nodes", nodes)
    object.__setattr__(graph, "samples", samples)
    return graph


@dataclass(frozen=True)
class GraphSchedule:
    """When every node of a graph ran, given every node's duration."""

    node_seconds: tuple[float, ...]
    node_end: tuple[float, ...]

    @property
    def makespan(self) -> float:
        return max(self.node_end, default=0.0)


def schedule_graph(graph: StepGraph, durations: Sequence[float]) -> GraphSchedule:
    """Critical-path timing: a node starts at the latest end of its deps (0.0 without deps).

    Written with max() and one addition per node so that a DDP step reproduces the
    bucket timeline ``end = max(end, ready) + seconds`` bit for bit."""
    if len(durations) != len(graph.nodes):
        raise ValueError(f"{len(durations)} durations for {len(graph.nodes)} nodes")
    end: list[float] = []
    for node, seconds in zip(graph.nodes, durations):
        deps = node.deps
        if len(deps) == 1:  # most nodes: the same float max() would give, without its generator
            start = end[deps[0]]
        else:
            start = max((end[d] for d in deps), default=0.0)
        end.append(start + seconds)
    return GraphSchedule(tuple(float(s) for s in durations), tuple(end))

