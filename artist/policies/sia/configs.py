"""Sia's configuration set (digest 2.2 c): for a GPU type with N nodes of R GPUs,

    C_t = {(1, 1), (1, 2), (1, 4), ..., (1, R)} U {(2, 2R), (3, 3R), ..., (N, NR)}

single-node configurations are powers of two up to R (and R itself when R is not one: ours, where Sia
splits the node into power-of-two virtual nodes), multi-node ones take whole nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True, order=True)
class Configuration:
    gpu_type: str
    nodes: int
    gpus: int

    @property
    def partial(self) -> bool:
        """A single-node allocation (never split across nodes by the placer)."""
        return self.nodes == 1


@dataclass(frozen=True)
class TypeShape:
    """One GPU type of the cluster: how many nodes of how many GPUs."""
    nodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def type_shapes(capacity: Sequence[int], node_types: Sequence[str]) -> dict[str, TypeShape]:
    """Per type (in order of first appearance) its node count and GPUs per node (uniform per type)."""
    if len(capacity) != len(node_types) or not len(capacity):
        raise ValueError("capacity and node_types must be non-empty and of equal length")
    shapes: dict[str, list[int]] = {}
    for c, t in zip(capacity, node_types):
        shapes.setdefault(str(t), []).append(int(c))
    out = {}
    for t, caps in shapes.items():
        if len(set(caps)) != 1 or caps[0] < 1:
            raise ValueError(f"GPU type {t!r}: nodes of different sizes {sorted(set(caps))}; "
                             f"Sia needs one size per type")
        out[t] = TypeShape(len(caps), caps[0])
    return out


def configurations(shapes: Mapping[str, TypeShape]) -> list[Configuration]:
    out = []
    for t, shape in shapes.items():
        r = 1
        while r < shape.gpus_per_node:
            out.append(Configuration(t, 1, r))
            r *= 2
        out.append(Configuration(t, 1, shape.gpus_per_node))
        out.extend(Configuration(t, n, n * shape.gpus_per_node) for n in range(2, shape.nodes + 1))
    return out
