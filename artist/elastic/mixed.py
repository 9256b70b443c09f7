"""The GPU type a mixed-type allocation runs on: the type holding most of its GPUs, ties to the faster type.

A heterogeneity-unaware policy (Pollux, Optimus+Oracle, Tiresias, the rigid policies) may give a job GPUs
of several types; Sia's artifact runs such a job on its dominant type, ties broken towards the faster type
(a100 > quad > rtx > t4, the artifact's order); a type not in that list ranks after them, in cluster order.
The elastic loop (artist/elastic/jobs.py) and the rigid policies' view of it (rigid_in_elastic.py) both ask
here.
"""

from __future__ import annotations

from typing import Sequence

FASTER_TYPES = ("a100", "quad", "rtx", "t4")


def dominant_type(node_types: Sequence[str], per_node: Sequence) -> str:
    """The type of node_types (one per node) holding most of per_node's GPUs; ties to the faster type."""
    types = list(dict.fromkeys(node_types))
    per_type = dict.fromkeys(types, 0)
    for gpu_type, gpus in zip(node_types, per_node):
        per_type[gpu_type] += int(gpus)
    rank = {t: FASTER_TYPES.index(t) if t in FASTER_TYPES else len(FASTER_TYPES) + i for i, t in enumerate(types)}
    return max(types, key=lambda t: (per_type[t], -rank[t]))
