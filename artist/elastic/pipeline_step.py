"""A pipeline job's iteration on its real placement by ArtISt's own hybrid step (1F1B), for Sia's pipeline
(scale-unit) jobs (artist/policies/sia/pipeline.py) in place of the artifact's GPipe formula.

    OneFOneBPipeline(model, stages, forward_seconds, topology, fabric).iteration_seconds(n_micro, mbs, nodes, gpus)

The job's N = gpus / P replicas of P stages run the plan dp=N, pp=P (artist/parallel/hybrid.py: 1F1B
passes, stage-to-stage activation sends, the DP all-reduce of each stage's gradients in buckets as the last
backward produces them) on the GPUs Sia's placer gives such a configuration: `gpus` GPUs of one machine
(a partial node) or every GPU of `nodes` machines (whole nodes), ranks in Megatron order (a replica's
stages on consecutive GPUs, so inside one machine when P divides its GPUs). Compute is measured data:
one stage's forward seconds of one micro-batch (the artifact's gpt_pmp step_time per micro-batch size),
spread over the stage's layers in proportion to their FLOPs; backward = 2 x forward, no recomputation,
as the artifact's model. Communication is whatever the FabricModel says (analytical, ns-3, ...).

With free communication this is 3 (n_micro + P - 1) t_fwd, GPipe's formula without the all-reduce (both
schedules have the same bubble); with a network the sends and the exposed part of the all-reduce add.
Memoised per (micro-batches, micro-batch size, nodes, GPUs).
"""

from __future__ import annotations

from typing import Mapping

from artist.network.base import FabricModel
from artist.parallel.hybrid import hybrid_step, split_stages
from artist.parallel.plan import ParallelPlan, rank_grid
from artist.perf.hybrid import replicas_laid_out_alike
from artist.topology import Topology
from artist.workload.transformer import TransformerConfig


class OneFOneBPipeline:
    """A pipeline job on one GPU type, timed by ArtISt's 1F1B step graph (module docstring); usable as a
    PipelineType of artist/policies/sia/pipeline.py (stages, iteration_seconds)."""

    def __init__(self, model: TransformerConfig, stages: int, forward_seconds: Mapping[int, float],
                 topology: Topology, fabric: FabricModel):
        if not 1 <= stages <= model.layers:
            raise ValueError(f"{model.name}: {stages} stages for {model.layers} blocks")
        self.model, self.stages, self.topology, self.fabric = model, int(stages), topology, fabric
        self.forward_seconds = dict(forward_seconds)
        self._memo: dict[tuple[int, int, int, int], float | None] = {}

    def _layer_seconds(self, stage_forward: float) -> list[float]:
        layers = self.model.layers_list()
        seconds = [0.0] * len(layers)
        for stage in split_stages(layers, self.stages):
            flops = sum(layers[i].forward_flops for i in stage)
            for i in stage:
                seconds[i] = stage_forward * layers[i].forward_flops / flops
        return seconds

    def _gpus(self, nodes: int, gpus: int) -> list[int] | None:
        per = self.topology.gpus_per_machine
        if nodes > self.topology.machines or (nodes == 1 and gpus > per) or (nodes > 1 and gpus != nodes * per):
            return None
        return list(range(gpus)) if nodes == 1 else list(range(nodes * per))

    def iteration_seconds(self, microbatches: int, micro_batch_size: int, nodes: int, gpus: int) -> float | None:
        """One iteration on (nodes, GPUs); None when not a whole number of replicas or not placeable."""
        key = (microbatches, micro_batch_size, nodes, gpus)
        if key not in self._memo:
            forward = self.forward_seconds.get(micro_batch_size)
            ids = self._gpus(nodes, gpus)
            if forward is None or ids is None or gpus % self.stages:
                self._memo[key] = None
            else:
                plan = ParallelPlan(dp=gpus // self.stages, pp=self.stages, microbatches=microbatches)
                first_only = replicas_laid_out_alike(self.topology, plan, ids)
                step = hybrid_step(self.model.layers_list(), rank_grid(plan, ids), self._layer_seconds(forward),
                                   micro_batch_size, recompute=False, first_replicas_only=first_only)
                self._memo[key] = float(self.fabric.time({"job": step.graph})["job"].step_seconds)
        return self._memo[key]


# Sia's GPT 2.8B ([D] section 5.3) stands as the zoo's GPT-3 2.7B (Brown et al. 2020: 32 blocks, d 2560).
GPT_PMP_ZOO_MODEL = "gpt3-2.7b"


def gpt_pmp_1f1b_job(cluster, fabrics: Mapping[str, FabricModel] | None = None, **kwargs):
    """Sia's GPT pipeline job on a multi-type cluster (artist/elastic/cluster.py), every type it has a
    measured forward time for (a100, rtx) timed by OneFOneBPipeline on that type's pool; kwargs: PipelineJob
    fields."""
    from artist.network.analytical import AnalyticalModel
    from artist.policies.sia.pipeline import PipelineJob, gpt_pmp_job
    from artist.workload.zoo import zoo_model

    table = gpt_pmp_job()
    model = zoo_model(GPT_PMP_ZOO_MODEL)
    types = {}
    for pool in cluster.pools:
        measured = table.types.get(pool.gpu_type)
        if measured is None:
            continue
        fabric = (fabrics or {}).get(pool.gpu_type) or AnalyticalModel(pool.topology)
        types[pool.gpu_type] = OneFOneBPipeline(model, measured.stages, measured.forward_seconds, pool.topology,
                                                fabric)
    return PipelineJob(types, **kwargs)
