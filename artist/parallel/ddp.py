"""Data parallelism with PyTorch DDP gradient buckets, as a step graph.

Every rank runs forward + backward (one compute node on the whole group); each
gradient bucket is all-reduced over all ranks as soon as the backward pass has
produced it (a timer node from the step's start: ModelProfile.buckets' ready
fraction x compute), one bucket after another on one communicator (each bucket
depends on the previous one). The step ends when compute and the last bucket
have both finished, so its exposed communication is makespan - compute.
Layer-wise synchronisation and PyTorch's 1 MiB first bucket are options of the
profile (ModelProfile.synchronisation, .first_bucket_bytes): they only change
ModelProfile.buckets, so this graph and every backend follow.
"""

from __future__ import annotations

from artist.parallel.graph import Node, StepGraph
from artist.placement import Placement
from artist.workload import ModelProfile


def ddp_step(model: ModelProfile, placement: Placement, compute_seconds: float) -> StepGraph:
    """One DDP step of `model` on `placement` whose forward + backward takes compute_seconds."""
    group = placement.gpus
    nodes = [Node(0, "compute", seconds=compute_seconds, group=group)]
    previous: tuple[int, ...] = ()
    for nbytes, ready in model.buckets:
        timer = len(nodes)
        nodes.append(Node(timer, "compute", seconds=ready * compute_seconds, group=group))
        bucket = len(nodes)
        nodes.append(Node(bucket, "all_reduce", deps=(timer,) + previous, group=group, nbytes=int(nbytes)))
        previous = (bucket,)
    return StepGraph(tuple(nodes), samples=model.batch_size * placement.size)
