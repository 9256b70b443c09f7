"""A hybrid-parallel job as the simulator and policies see it: an LLM-zoo model trained with one fixed plan.

A job whose trace row carries a plan (artist/workload/traces/canonical.py) runs as a HybridJobModel
in place of a ModelProfile: PerfModel.estimate times the 1F1B step graph of its plan on the GPUs a
policy gives it (perf/hybrid.py), ranks in Megatron order over the placement's GPUs sorted by id (TP
fastest, then PP, then DP), so a placement whose machines hold whole TP groups keeps TP on NVLink and a
fragmented one pays for it. What the rest of the simulator reads of a model:

- name: the zoo model's name (jobs.csv's model column);
- compute_seconds: one step with no communication on the topology's default GPU type, the 1F1B
  pipeline included (busiest stage x (m + p - 1) / m): what ideal_seconds (and Dally's priority) use;
- skew: 1.0, so that Tiresias always consolidates such jobs (its skew rule asks whether one tensor
  dominates the gradients; a TP group's all-reduces are on the critical path of every micro-batch,
  which makes consolidation matter at least as much; the project's choice).

`default_plan` is the fixed rule the LLM workload generator uses to give a job of N GPUs its plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.parallel.hybrid import split_stages, stage_compute_seconds
from artist.parallel.plan import ParallelPlan, parse_plan
from artist.perf.accelerators import accelerator
from artist.perf.hybrid import forward_seconds, plan_memory
from artist.perf.memory import check_fits
from artist.topology import Topology
from artist.workload.transformer import TransformerConfig
from artist.workload.zoo import zoo_model

MAX_PLAN_NODES = 2_000_000  # step-graph nodes one plan may build (~0.5 GB; a 175B 1024-GPU step is ~1.3 x 10^5)
MICRO_BATCH_SIZE = 1  # sequences per micro-batch of a trace job (the zoo's default, as `artist comm`)


@dataclass(frozen=True)
class HybridJobModel:
    config: TransformerConfig
    # One plan: the job's fixed plan. Several (plan "auto"): every plan of the job's GPUs and global batch
    # that fits; PerfModel times each on the placement given and takes the fastest (ties: plan text).
    plans: tuple[ParallelPlan, ...]
    compute_seconds: float
    micro_batch_size: int = MICRO_BATCH_SIZE
    skew: float = 1.0

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def gpus(self) -> int:
        return self.plans[0].gpus


def ideal_step_seconds(config: TransformerConfig, plan: ParallelPlan, gpu_type: str,
                       micro_batch_size: int = MICRO_BATCH_SIZE) -> float:
    """A step with free communication: the busiest stage's compute stretched by 1F1B's bubble."""
    fwd = forward_seconds(config, plan, micro_batch_size, accelerator(gpu_type))
    busiest = max(stage_compute_seconds(split_stages(config.layers_list(), plan.pp), fwd, plan.microbatches))
    return busiest * (plan.microbatches + plan.pp - 1) / plan.microbatches


def graph_nodes_bound(config: TransformerConfig, plan: ParallelPlan) -> int:
    """About how many nodes the plan's step graph has: replicas x stages x micro-batches x 2 passes x
    (4 per block + sends); refuse a plan above MAX_PLAN_NODES before building it."""
    per_pass = 4 * (config.layers // plan.pp + 1) + plan.tp
    return plan.dp * plan.pp * plan.microbatches * 2 * per_pass


def _check_plan(config: TransformerConfig, plan: ParallelPlan, topology: Topology) -> None:
    """ValueError if the plan's graph is too large or it does not fit in the memory of the topology's
    smallest GPU type (any placement may land there)."""
    if plan.ep > 1 and not config.is_moe:
        raise ValueError(f"plan ep={plan.ep}: model {config.name} has no experts")
    nodes = graph_nodes_bound(config, plan)
    if nodes > MAX_PLAN_NODES:
        raise ValueError(f"plan {plan.text()} would build ~{nodes} step-graph nodes (at most {MAX_PLAN_NODES}); "
                         f"use fewer micro-batches (a smaller global batch)")
    memory = plan_memory(config, plan, MICRO_BATCH_SIZE, True, split_stages(config.layers_list(), plan.pp))
    for gpu_type in sorted(set(topology.rack_gpu_types)):
        gpu = accelerator(gpu_type)  # KeyError names the GPU types with compute figures
        check_fits(memory, gpu.memory_bytes, gpu.name, f"model {config.name} with plan {plan.text()}")


def hybrid_job_model(model: str, plan_text: str, topology: Topology, gpus: int = 0,
                     global_batch: int = 0) -> HybridJobModel:
    """The job's model on this topology: its fixed plan, or with plan_text "auto" every plan of `gpus`
    GPUs and `global_batch` sequences that fits (artist plans' candidates). ValueError (or KeyError for an
    unknown model or GPU type) saying why it cannot run."""
    config = zoo_model(model)  # KeyError names the zoo
    default_gpu = topology.rack_gpu_types[0]
    if plan_text != "auto":
        plan = parse_plan(plan_text)
        _check_plan(config, plan, topology)
        return HybridJobModel(config, (plan,), ideal_step_seconds(config, plan, default_gpu))
    plans, reasons = [], []
    for plan in candidate_plans(config, gpus, topology.gpus_per_machine, global_batch, MICRO_BATCH_SIZE):
        try:
            _check_plan(config, plan, topology)
            plans.append(plan)
        except ValueError as exc:
            reasons.append(str(exc))
    if not plans:
        why = f"; e.g. {reasons[0]}" if reasons else ""
        raise ValueError(f"plan auto: no plan of {config.name} on {gpus} GPUs with global batch {global_batch} "
                         f"fits{why}")
    return HybridJobModel(config, tuple(plans), min(ideal_step_seconds(config, p, default_gpu) for p in plans))


def candidate_plans(model, gpus: int, gpus_per_machine: int, global_batch: int, micro_batch_size: int):
    """Every (dp, tp, pp, ep) with dp x tp x pp = gpus, tp within a machine, and a whole number of micro-batches."""
    blocks = model.layers
    for tp in range(1, min(gpus, gpus_per_machine) + 1):
        if gpus % tp:
            continue
        for pp in range(1, min(gpus // tp, blocks) + 1):
            if (gpus // tp) % pp:
                continue
            dp = gpus // (tp * pp)
            if global_batch % (dp * micro_batch_size):
                continue
            m = global_batch // (dp * micro_batch_size)
            eps = [e for e in range(1, dp + 1) if dp % e == 0 and model.moe_experts % e == 0] if model.is_moe else [1]
            for ep in eps:
                yield ParallelPlan(dp, tp, pp, ep, m)


def default_plan(config: TransformerConfig, gpus: int, global_batch: int, memory_bytes: float,
                 gpus_per_machine: int = 8) -> ParallelPlan:
    """The LLM generator's fixed rule (Megatron-LM's practice, Narayanan et al. SC'21 sec. 3.3: TP up to a
    machine, then PP as memory needs it): tp = the largest divisor of N up to a machine that divides the
    heads, then the fewest pipeline stages with which a GPU holds its share (full recomputation,
    micro-batch 1), dp = the rest; micro-batches = global batch / dp. ValueError if none fits."""
    tp = max(t for t in range(1, min(gpus, gpus_per_machine) + 1) if gpus % t == 0 and config.heads % t == 0)
    for pp in range(1, min(gpus // tp, config.layers) + 1):
        if (gpus // tp) % pp:
            continue
        dp = gpus // (tp * pp)
        if global_batch % dp:
            continue
        plan = ParallelPlan(dp, tp, pp, 1, global_batch // dp)
        memory = plan_memory(config, plan, MICRO_BATCH_SIZE, True, split_stages(config.layers_list(), pp))
        if memory.total_bytes <= memory_bytes:
            return plan
    raise ValueError(f"no plan of {config.name} on {gpus} GPUs fits in {memory_bytes / 2**30:.0f} GiB per GPU "
                     f"with global batch {global_batch}")


__all__ = ["MAX_PLAN_NODES", "HybridJobModel", "default_plan", "graph_nodes_bound", "hybrid_job_model",
           "ideal_step_seconds"]
