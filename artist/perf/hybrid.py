"""A hybrid-parallel training step of a zoo model, timed: step time, exposed communication, memory.

    est = estimate_plan(fabric, topology, zoo_model("gpt3-13b"), ParallelPlan(4, 8, 2, microbatches=16),
                        gpus=range(64))
    est.step_seconds, est.exposed_seconds["tp"], est.bubble_fraction, est.memory_gib

Compute: layer FLOPs / (the GPU type's peak x efficiency) (perf/accelerators.py), on the
slowest GPU type among the plan's GPUs. Memory: perf/memory.py; a plan that does not fit raises
PlanDoesNotFit with the numbers. Communication: the step graph (parallel/hybrid.py) timed by the
fabric model given, so analytical, ns-3 and any later backend answer the same question.

Where the time goes is read off the critical path of the timed graph: walking back from the
node that ends last through the dependency that ended latest, every node's duration is charged
to its tag (compute, tp, pp, dp, ep). Communication on that path is *exposed*; the compute on it
beyond the busiest stage's own compute is the pipeline bubble (with zero communication this
gives 1F1B's (p - 1) / (m + p - 1) exactly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from artist.network.base import CommResult, FabricModel, GraphTiming
from artist.parallel.hybrid import TAGS, HybridStep, hybrid_step, split_stages
from artist.parallel.plan import ParallelPlan, rank_grid
from artist.perf.accelerators import Accelerator, accelerator
from artist.perf.memory import MemoryUse, check_fits, stage_memory
from artist.topology import Topology
from artist.workload.transformer import TransformerConfig

COMM_TAGS = tuple(t for t in TAGS if t != "compute")


@dataclass(frozen=True)
class PlanEstimate:
    model: str
    plan: ParallelPlan
    micro_batch_size: int
    step_seconds: float
    compute_seconds: float  # the busiest stage's compute per step (one GPU)
    exposed_seconds: dict  # tag -> communication seconds on the critical path
    bubble_seconds: float
    memory: MemoryUse
    gpu: Accelerator
    model_flops: float  # per step: 6 x parameters-FLOPs x tokens (forward + backward, no recomputation)
    hardware_flops: float  # per step, recomputation included (Narayanan et al. 2021's count)
    nodes: int
    comm: CommResult = field(compare=False)
    comm_seconds: float = 0.0  # the communication nodes' own durations, summed (overlapped or not)

    @property
    def bubble_fraction(self) -> float:
        return self.bubble_seconds / self.step_seconds if self.step_seconds else 0.0

    @property
    def samples_per_second(self) -> float:
        return self.plan.dp * self.plan.microbatches * self.micro_batch_size / self.step_seconds

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: model FLOPs per second / (GPUs x peak)."""
        return self.model_flops / self.step_seconds / (self.plan.gpus * self.gpu.peak_flops)

    @property
    def tflops_per_gpu(self) -> float:
        """Achieved TFLOP/s per GPU as Narayanan et al. 2021 report it (recomputation counted)."""
        return self.hardware_flops / self.step_seconds / self.plan.gpus / 1e12

    @property
    def memory_gib(self) -> float:
        return self.memory.gib

    def as_json(self) -> dict:
        return {
            "model": self.model, "plan": self.plan.text(), "micro_batch_size": self.micro_batch_size,
            "step_s": self.step_seconds, "compute_s": self.compute_seconds,
            "exposed_comm_s": dict(self.exposed_seconds), "bubble_fraction": self.bubble_fraction,
            "memory_gib_per_gpu": self.memory_gib, "mfu": self.mfu, "tflops_per_gpu": self.tflops_per_gpu,
            "samples_per_s": self.samples_per_second, "gpu_type": self.gpu.name, "graph_nodes": self.nodes,
            "backend": self.comm.backend, "packets": self.comm.packets,
        }


def critical_path_seconds(step: HybridStep, timing: GraphTiming) -> dict[str, float]:
    """Seconds per tag along the critical path (see the module docstring)."""
    nodes, end, seconds = step.graph.nodes, timing.node_end, timing.node_seconds
    out = {tag: 0.0 for tag in TAGS}
    if not nodes:
        return out
    i = max(range(len(nodes)), key=lambda k: (end[k], k))
    while True:
        out[step.tags[i]] += seconds[i]
        deps = nodes[i].deps
        if not deps:
            return out
        i = max(deps, key=lambda k: (end[k], k))


def replicas_laid_out_alike(topology: Topology, plan: ParallelPlan, gpus) -> bool:
    """Whether every lock-step replica set's TP groups, EP groups and stage-to-stage pairs have the
    same placement shapes as the first one's: then an isolated (per-collective) backend times their
    passes alike, and hybrid_step's first_replicas_only shortcut changes no answer."""
    from artist.placement import Placement

    grid = rank_grid(plan, gpus)

    def shapes(first: int):
        replicas = range(first, first + plan.ep)
        out = []
        for p in range(plan.pp):
            out.extend(Placement(topology, grid.tp_group(d, p)).canonical_shape for d in replicas)
            out.extend(Placement(topology, grid.ep_group(first, p, t)).canonical_shape for t in range(plan.tp))
            if p + 1 < plan.pp:
                out.extend(Placement(topology, (grid.gpu(d, p, t), grid.gpu(d, p + 1, t))).canonical_shape
                           for d in replicas for t in range(plan.tp))
        return out

    reference = shapes(0)
    return all(shapes(first) == reference for first in range(plan.ep, plan.dp, plan.ep))


def plan_gpu(topology: Topology, gpus: Iterable[int]) -> Accelerator:
    """The slowest GPU type among gpus (a synchronous step waits for it)."""
    types = {topology.gpu_type_of_machine(topology.machine_of(g)) for g in gpus}
    return min((accelerator(t) for t in sorted(types)), key=lambda a: a.achieved_flops)


def forward_seconds(model: TransformerConfig, plan: ParallelPlan, micro_batch_size: int, gpu: Accelerator):
    return [layer.forward_flops * micro_batch_size / plan.tp / gpu.achieved_flops for layer in model.layers_list()]


def plan_memory(model: TransformerConfig, plan: ParallelPlan, micro_batch_size: int, recompute: bool,
                stages, sequence_parallel: bool = False) -> MemoryUse:
    layers = model.layers_list()
    uses = [stage_memory([layers[i] for i in stage], p, plan.pp, plan.tp, plan.ep, plan.microbatches,
                         micro_batch_size, recompute, sequence_parallel) for p, stage in enumerate(stages)]
    return max(uses, key=lambda u: (u.total_bytes, -u.stage))


def estimate_plan(fabric: FabricModel, topology: Topology, model: TransformerConfig, plan: ParallelPlan,
                  gpus: Iterable[int], micro_batch_size: int = 1, recompute: bool = True, overlap_dp: bool = True,
                  check_memory: bool = True, first_replicas_only: bool = False,
                  sequence_parallel: bool = False) -> PlanEstimate:
    gpus = tuple(gpus)
    grid = rank_grid(plan, gpus)
    if plan.ep > 1 and not model.is_moe:
        raise ValueError(f"plan ep={plan.ep}: model {model.name} has no experts")
    gpu = plan_gpu(topology, gpus)
    layers = model.layers_list()
    memory = plan_memory(model, plan, micro_batch_size, recompute, split_stages(layers, plan.pp), sequence_parallel)
    if check_memory:  # before building a graph that would not run
        check_fits(memory, gpu.memory_bytes, gpu.name, f"model {model.name} with plan {plan.text()} "
                                                        f"(micro-batch {micro_batch_size})")
    step = hybrid_step(layers, grid, forward_seconds(model, plan, micro_batch_size, gpu), micro_batch_size,
                       recompute, overlap_dp, first_replicas_only, sequence_parallel)
    timing = fabric.time({"job": step.graph})["job"]
    path = critical_path_seconds(step, timing)
    compute = max(step.stage_compute_seconds)
    samples = plan.dp * plan.microbatches * micro_batch_size
    blocks = sum(layer.forward_flops for layer in layers if layer.kind != "head")
    head = sum(layer.forward_flops for layer in layers if layer.kind == "head")
    model_flops = 3.0 * (blocks + head) * samples
    hardware_flops = ((4.0 if recompute else 3.0) * blocks + 3.0 * head) * samples
    return PlanEstimate(model.name, plan, micro_batch_size, timing.step_seconds, compute,
                        {tag: path[tag] for tag in COMM_TAGS}, max(0.0, path["compute"] - compute), memory, gpu,
                        model_flops, hardware_flops, len(step.graph.nodes), timing.result, timing.comm_seconds)
