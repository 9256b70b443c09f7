"""Named layouts of a plan's ranks on a topology: which GPU each rank (replica d, stage p, TP index t) gets.

The placement-sensitivity questions of the LLM zoo (`artist latency-table --plan`): the same plan
packed in Megatron order, or with one parallel dimension forced across a slower tier.

- packed: Megatron order on the first GPUs (TP inside a machine, stages on neighbouring machines);
- tp-split: every TP group split in two halves on two machines (a pair of groups shares two machines);
- pp-racks: stage p of every replica in rack p mod racks;
- dp-racks: replica d in rack d mod racks.

Every function returns the GPUs in rank order (TP fastest, then PP, then DP), the order
`rank_grid` takes; a layout that does not fit the topology raises ValueError saying why.
"""

from __future__ import annotations

from typing import Callable

from artist.parallel.plan import ParallelPlan
from artist.topology import Topology

LAYOUT_NAMES = ("packed", "tp-split", "pp-racks", "dp-racks")
LAYOUT_TITLES = {"packed": "packed", "tp-split": "TP across machines", "pp-racks": "PP across racks",
                 "dp-racks": "DP across racks"}


def _ranks(plan: ParallelPlan):
    return [(d, p, t) for d in range(plan.dp) for p in range(plan.pp) for t in range(plan.tp)]


def _rank_gpu(topology: Topology, plan: ParallelPlan, name: str) -> Callable[[int, int, int], int]:
    g, per_rack, racks = topology.gpus_per_machine, topology.gpus_per_rack, topology.racks
    if name == "packed":
        return lambda d, p, t: (d * plan.pp + p) * plan.tp + t
    if name == "tp-split":
        if plan.tp % 2 or plan.tp > g:
            raise ValueError(f"tp-split needs an even tp of at most {g} (GPUs per machine); plan has tp={plan.tp}")
        half = plan.tp // 2

        def tp_split(d, p, t):  # TP group k: half of machine 2 (k // 2) + 0 / 1, side k % 2 of each
            pair, side = divmod(d * plan.pp + p, 2)
            return (2 * pair + t // half) * g + side * half + t % half
        return tp_split
    if name == "pp-racks":
        if racks < 2:
            raise ValueError("pp-racks needs at least two racks")
        return lambda d, p, t: (p % racks) * per_rack + ((p // racks) * plan.dp + d) * plan.tp + t
    if name == "dp-racks":
        if racks < 2:
            raise ValueError("dp-racks needs at least two racks")
        return lambda d, p, t: (d % racks) * per_rack + ((d // racks) * plan.pp + p) * plan.tp + t
    raise ValueError(f"unknown layout {name!r}; known: {', '.join(LAYOUT_NAMES)}")


def layout_gpus(topology: Topology, plan: ParallelPlan, name: str) -> tuple[int, ...]:
    """The plan's GPUs in rank order under the named layout; ValueError if it does not fit."""
    rank_gpu = _rank_gpu(topology, plan, name)
    gpus = tuple(rank_gpu(*r) for r in _ranks(plan))
    if name in ("pp-racks", "dp-racks"):  # each rack's share must stay inside its rack
        spill = [g for g, (d, p, t) in zip(gpus, _ranks(plan))
                 if g // topology.gpus_per_rack != ((p if name == "pp-racks" else d) % topology.racks)]
        if spill:
            raise ValueError(f"{name}: plan {plan.text()} does not fit in {topology.gpus_per_rack} GPUs per rack")
    if max(gpus) >= topology.gpus:
        raise ValueError(f"{name}: plan {plan.text()} needs GPU {max(gpus)}; the topology has {topology.gpus}")
    assert len(set(gpus)) == len(gpus), (name, plan)  # a layout is an injection by construction
    return gpus
