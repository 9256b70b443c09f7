"""Measured training throughput from papers, with the plans they ran: what the hybrid model is checked on.

MEGATRON_TABLE1: Narayanan et al. 2021 (SC'21), "Efficient Large-Scale Language Model Training
on GPU Clusters Using Megatron-LM", Table 1 (weak scaling on Selene, A100-80GB, 8 per node,
sequence 2048, vocabulary 51200, mixed precision, activation recomputation): model, tensor-
and pipeline-parallel sizes, GPUs, global batch and the achieved teraFLOP/s per GPU they report
(counting the recomputed forward pass, their eq. for F). Real published data; the four largest
rows (310B-1T, up to 3072 GPUs) are left out: their step graphs run to millions of nodes.

The paper does not print micro-batch sizes. Assumed here (as the repository's example scripts
for pipelined GPT runs use): micro-batch 1 when pp > 1; with pp = 1 (no pipeline) the largest
micro-batch from 16 down that divides the replica's batch and fits in memory, the replica's
batch split into micro-batches of that size.
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.parallel.plan import ParallelPlan


@dataclass(frozen=True)
class MeasuredRun:
    model: str  # zoo name
    tp: int
    pp: int
    gpus: int
    global_batch: int
    tflops_per_gpu: float  # as published
    source: str = "Narayanan et al. 2021, Table 1"

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    def plans(self) -> list[tuple[ParallelPlan, int]]:
        """(plan, micro-batch size) candidates in the order the docstring's assumption tries them."""
        per_replica = self.global_batch // self.dp
        sizes = [1] if self.pp > 1 else [b for b in (16, 8, 4, 2, 1) if per_replica % b == 0]
        return [(ParallelPlan(self.dp, self.tp, self.pp, microbatches=per_replica // b), b) for b in sizes]


MEGATRON_TABLE1 = (
    MeasuredRun("megatron-1.7b", 1, 1, 32, 512, 137),
    MeasuredRun("megatron-3.6b", 2, 1, 64, 512, 138),
    MeasuredRun("megatron-7.5b", 4, 1, 128, 512, 142),
    MeasuredRun("megatron-18.4b", 8, 1, 256, 1024, 135),
    MeasuredRun("megatron-39.1b", 8, 2, 512, 1536, 138),
    MeasuredRun("megatron-76.1b", 8, 4, 1024, 1792, 140),
    MeasuredRun("megatron-145.6b", 8, 8, 1536, 2304, 148),
)
