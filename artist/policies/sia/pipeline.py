"""Pipeline (scale-unit) jobs in Sia (digest 2.2 i): a job whose unit of scaling is one pipeline replica.

A pipeline job has, per GPU type it can run on, a fixed pipeline of P stages (the scale unit: Sia's GPT
2.8B runs 2 stages on A100, 8 on RTX). N replicas take N x P GPUs; each replica runs `microbatches`
micro-batches of `micro_batch_size` per iteration, then the N replicas all-reduce their gradients. Only
configurations whose GPU count is a multiple of P are valid, and the row minimum is worth P (matrix.py).

Time model (Sia's artifact, GPipe with backward = 2 x forward, the DP all-reduce not overlapped):

    T_iter = 3 ((P - 1) t_fwd + n_micro t_fwd) + T_sync(nodes, GPUs)
    throughput = N x micro_batch_size x n_micro / T_iter           (samples per second)

t_fwd is one stage's forward time of one micro-batch (inter-stage transfers folded in, as measured) and
T_sync the DP all-reduce time over the configuration's nodes. Both come from a table per type
(`read_pipeline_table`: the artifact's traces/gpt_pmp/scalability-<type>.csv, workloads/sia/gpt_pmp/).
A configuration the table does not cover is not valid for the job (value 0). In place of a table a type
may carry ArtISt's own 1F1B step on the configuration's placement (artist/elastic/pipeline_step.py,
OneFOneBPipeline: the measured forward + ArtISt's network for the sends and the all-reduce): anything
with `stages` and `iteration_seconds(microbatches, micro_batch_size, nodes, gpus)` serves.

Placement rule (ours, what the configuration set and the placer give, checked by `replicas_on_nodes`): a
replica never spans nodes when P divides the node size R, and spans exactly P / R whole nodes when R
divides P; a type where neither holds is refused (its configurations could split a replica).
Ranks are laid out as artist/parallel/plan.py does (PP before DP over the GPUs sorted by node), so replica
d is GPUs d P .. (d + 1) P - 1 of the allocation.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from artist.errors import InputError

MAX_TABLE_ROWS = 100_000   # far above the artifact's tables (38 rows); bounds a bad file
GPIPE_PASSES = 3           # forward + backward (= 2 x forward) per micro-batch, the artifact's model


@dataclass(frozen=True)
class PipelineType:
    """A pipeline job on one GPU type: its stages (scale unit), per-micro-batch forward seconds by
    micro-batch size, and DP all-reduce seconds by (nodes, GPUs)."""
    stages: int
    forward_seconds: Mapping[int, float]
    sync_seconds: Mapping[tuple[int, int], float]

    def __post_init__(self):
        if self.stages < 1:
            raise ValueError(f"a pipeline needs >= 1 stage, got {self.stages}")

    def iteration_seconds(self, microbatches: int, micro_batch_size: int, nodes: int, gpus: int) -> float | None:
        """GPipe's iteration on (nodes, GPUs); None where the table has no entry."""
        forward = self.forward_seconds.get(micro_batch_size)
        sync = self.sync_seconds.get((nodes, gpus))
        if forward is None or sync is None:
            return None
        return gpipe_iteration_seconds(self.stages, microbatches, forward, sync)


@dataclass(frozen=True)
class PipelineJob:
    """What Sia knows of a pipeline job: its pipeline per GPU type (types absent: the job cannot run
    there), micro-batches per replica, micro-batch size, a GPU cap, and optionally the statistical
    efficiency of a total batch (1 when absent: throughput as goodput, Sia's strong-scaling treatment)."""
    types: Mapping[str, PipelineType]   # or any object with stages and iteration_seconds (OneFOneBPipeline)
    microbatches: int = 48          # [D] section 5.3: 48 micro-batches of size 1 per replica
    micro_batch_size: int = 1
    max_gpus: int = 128
    efficiency: Callable[[float], float] | None = field(default=None, compare=False)

    def __post_init__(self):
        if not self.types:
            raise ValueError("a pipeline job needs at least one GPU type")
        if self.microbatches < 1 or self.micro_batch_size < 1:
            raise ValueError("microbatches and micro_batch_size must be >= 1")

    def batch(self, gpu_type: str, gpus: int) -> int:
        return gpus // self.types[gpu_type].stages * self.micro_batch_size * self.microbatches


def gpipe_iteration_seconds(stages: int, microbatches: int, forward: float, sync: float) -> float:
    """One iteration of a GPipe pipeline replica plus the non-overlapped DP all-reduce."""
    return GPIPE_PASSES * ((stages - 1) + microbatches) * forward + sync


def check_type(gpu_type: str, stages: int, gpus_per_node: int) -> None:
    """ValueError when a replica of `stages` GPUs could be split across nodes of `gpus_per_node`."""
    if stages % gpus_per_node and gpus_per_node % stages:
        raise ValueError(f"pipeline of {stages} stages on {gpu_type} nodes of {gpus_per_node} GPUs: neither divides "
                         f"the other, so a replica could span part of a node")


def throughput(job: PipelineJob, gpu_type: str, nodes: int, gpus: int) -> float:
    """Samples per second of the job on (nodes, GPUs) of the type; 0 when not a valid configuration."""
    pt = job.types.get(gpu_type)
    if pt is None or gpus < pt.stages or gpus % pt.stages:
        return 0.0
    seconds = pt.iteration_seconds(job.microbatches, job.micro_batch_size, nodes, gpus)
    if seconds is None:
        return 0.0
    replicas = gpus // pt.stages
    return replicas * job.micro_batch_size * job.microbatches / seconds


def goodput(job: PipelineJob, gpu_type: str, nodes: int, gpus: int) -> float:
    x = throughput(job, gpu_type, nodes, gpus)
    if x <= 0 or job.efficiency is None:
        return x
    return x * float(job.efficiency(job.batch(gpu_type, gpus)))


def replicas_on_nodes(row: Sequence[int], stages: int) -> list[tuple[int, ...]]:
    """The nodes of every replica of an allocation (GPUs per node), ranks over the GPUs sorted by node.
    ValueError if the allocation is not a whole number of replicas."""
    row = np.asarray(row, dtype=int)
    gpus = np.repeat(np.arange(len(row)), row)
    if len(gpus) == 0 or len(gpus) % stages:
        raise ValueError(f"{row.tolist()}: {len(gpus)} GPUs are not a whole number of {stages}-stage replicas")
    return [tuple(sorted(set(gpus[d * stages:(d + 1) * stages].tolist()))) for d in range(len(gpus) // stages)]


def read_pipeline_table(path: str | Path, stages: int) -> PipelineType:
    """The artifact's scalability table of a pipeline job on one type: columns local_bsz (micro-batch
    size), step_time (one stage's forward of one micro-batch, s), sync_time (s), num_nodes, num_replicas
    (GPUs, despite the name: the artifact counts every stage)."""
    path = Path(path)
    try:
        fh = open(path, newline="")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read: {exc.strerror}") from None
    forward: dict[int, float] = {}
    sync: dict[tuple[int, int], float] = {}
    with fh:
        reader = csv.DictReader(fh)
        need = {"local_bsz", "step_time", "sync_time", "num_nodes", "num_replicas"}
        if not need <= set(reader.fieldnames or ()):
            raise InputError(str(path), "header", f"expected columns {', '.join(sorted(need))}")
        for lineno, row in enumerate(reader, start=2):
            if lineno > MAX_TABLE_ROWS:
                raise InputError(str(path), f"line {lineno}", f"more than {MAX_TABLE_ROWS} rows")
            try:
                m, step, s = int(row["local_bsz"]), float(row["step_time"]), float(row["sync_time"])
                nodes, gpus = int(row["num_nodes"]), int(row["num_replicas"])
            except (TypeError, ValueError):
                raise InputError(str(path), f"line {lineno}", "expected numbers in every column") from None
            if m < 1 or nodes < 1 or gpus < 1 or not step > 0 or not s >= 0:
                raise InputError(str(path), f"line {lineno}", "need local_bsz, num_nodes, num_replicas >= 1, "
                                                               "step_time > 0, sync_time >= 0")
            if gpus % stages:
                raise InputError(str(path), f"line {lineno}", f"{gpus} GPUs is not a multiple of {stages} stages")
            if forward.setdefault(m, step) != step:
                raise InputError(str(path), f"line {lineno}", f"two step times for local_bsz {m}")
            sync[(nodes, gpus)] = s
    if not forward:
        raise InputError(str(path), None, "no rows")
    return PipelineType(stages, forward, sync)


# Sia's GPT 2.8B pipeline job ([D] section 5.3; the artifact's applications.py: 2 stages on dgx-ext
# (A100), 8 on rtx; 48 micro-batches of 1 per replica), tables in workloads/sia/gpt_pmp/ (SOURCE.md).
GPT_PMP_TABLES = {"a100": ("scalability-dgx-ext.csv", 2), "rtx": ("scalability-rtx.csv", 8)}


def gpt_pmp_job(directory: str | Path | None = None, **kwargs) -> PipelineJob:
    """The artifact's GPT pipeline job on the types it was measured on (kwargs: PipelineJob fields)."""
    if directory is None:
        from artist.shipped import ROOT
        directory = ROOT / "workloads" / "sia" / "gpt_pmp"
    types = {t: read_pipeline_table(Path(directory) / name, stages) for t, (name, stages) in GPT_PMP_TABLES.items()}
    return PipelineJob(types, **kwargs)
