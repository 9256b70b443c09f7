"""One training step of a transformer under DP x TP x PP (x EP) as a step graph, 1F1B schedule.

    step = hybrid_step(layers, grid, forward_seconds, micro_batch_size=1, recompute=True)
    step.graph  (a StepGraph any FabricModel times)   step.tags  (per node: compute/tp/pp/dp/ep)

What the graph holds (Megatron-LM as Narayanan et al. 2021 describe it):
- Stages: the transformer blocks split evenly over pp stages (earlier stages take the
  remainder), the embedding on the first, the output head on the last.
- 1F1B (PipeDream-Flush): stage p runs min(pp - p - 1, m) warm-up forward passes, then
  alternates one forward and one backward, then drains its backward passes (sec. 2.2.1). A
  stage runs one pass at a time; a pass of one layer is one compute node on the stage's GPUs.
- Tensor parallelism: each block's forward is followed by its all-reduces over the stage's TP
  group (two per block: after attention and after the MLP; Shoeybi et al. 2019, sec. 3), of
  the micro-batch's s x b x h activation; its backward by as many (twice as many with full
  recomputation, whose re-run forward all-reduces again). They sit on the critical path. With
  ``sequence_parallel`` each all-reduce becomes an all-gather and a reduce-scatter of the same
  activation (Korthikanti et al. 2022, sec. 4.2.2: the same bytes on the wire, activations
  sharded by t between them).
- Pipeline: after a stage's forward of a micro-batch each TP rank sends its 1/t share of the
  boundary activation to the same TP rank of the next stage (the scatter/gather optimisation,
  sec. 4.1; the all-gather that reassembles it over NVLink is not modelled); the backward sends
  the gradient the other way. Sends are asynchronous for the sender; the receiver's pass waits.
- Data parallelism at the flush: each stage's gradients (its parameters / t, 2 bytes each) are
  all-reduced over the stage's DP group per TP rank. ``overlap_dp``: per layer, as soon as the
  last micro-batch's backward of that layer is done, one bucket after the other on one
  communicator (Megatron-Core's --overlap-grad-reduce); otherwise one all-reduce after the
  stage's last backward pass (Megatron-LM 2021).
- Expert parallelism: MoE blocks add two all-to-alls per forward (dispatch, combine; two per
  backward) over the EP group of each TP rank, k x s x b x h x 2 bytes each. The ep replicas of
  an EP group run in lock step (one compute node covers all their stage GPUs). Expert gradients
  are all-reduced over the replicas holding the same experts (dp / ep of them).
- Tied embeddings with pp > 1: the last stage keeps a copy of the word embedding for the output
  layer, and after the flush the two copies' gradients are all-reduced between the first and the
  last stage of each replica, per TP rank (Megatron-LM's embedding group); tagged dp.

Compute node seconds come from the caller (per layer, one micro-batch's forward on one GPU of
its TP group); the backward takes twice the forward, three times with full recomputation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from artist.parallel.graph import Node, StepGraph
from artist.parallel.plan import RankGrid
from artist.workload.transformer import DTYPE_BYTES, LayerSpec

TAGS = ("compute", "tp", "pp", "dp", "ep")


def split_stages(layers: Sequence[LayerSpec], pp: int) -> list[list[int]]:
    """Layer indices per stage: blocks as even as possible, embedding first, head last."""
    blocks = [i for i, layer in enumerate(layers) if layer.kind in ("transformer", "moe")]
    if pp > len(blocks):
        raise ValueError(f"pp={pp} is more pipeline stages than the model's {len(blocks)} blocks")
    base, extra = divmod(len(blocks), pp)
    stages, start = [], 0
    for p in range(pp):
        size = base + (1 if p < extra else 0)
        stages.append(blocks[start:start + size])
        start += size
    others = [i for i in range(len(layers)) if i not in set(blocks)]
    stages[0] = [i for i in others if i < blocks[0]] + stages[0]
    stages[-1] = stages[-1] + [i for i in others if i > blocks[-1]]
    return stages


def one_f_one_b(stage: int, pp: int, microbatches: int) -> list[tuple[bool, int]]:
    """The passes of one stage in 1F1B order: (forward?, micro-batch)."""
    warmup = min(pp - stage - 1, microbatches)
    order = [(True, j) for j in range(warmup)]
    for j in range(microbatches - warmup):
        order.append((True, warmup + j))
        order.append((False, j))
    order.extend((False, j) for j in range(microbatches - warmup, microbatches))
    return order


def one_f_one_b_walk(pp: int, microbatches: int):
    """Every pass of a 1F1B step, (stage, forward?, micro-batch), in the order a step's builder lays them:
    the stages in turn, each running its one_f_one_b order as far as the passes it waits on are done
    (a forward on the previous stage's forward of that micro-batch, a backward on the next stage's
    backward of it). The builders (_Builder.pipeline, artist/crius/truth.py) add each pass's nodes, and
    the sends the next pass waits on, as the walk yields it."""
    orders = [one_f_one_b(p, pp, microbatches) for p in range(pp)]
    position = [0] * pp
    forwards_done: set[tuple[int, int]] = set()
    backwards_done: set[tuple[int, int]] = set()
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for p in range(pp):
            while position[p] < len(orders[p]):
                forward, j = orders[p][position[p]]
                if forward and p > 0 and (p - 1, j) not in forwards_done:
                    break
                if not forward and p < pp - 1 and (p + 1, j) not in backwards_done:
                    break
                yield p, forward, j
                (forwards_done if forward else backwards_done).add((p, j))
                position[p] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # cannot happen for 1F1B; a guard against an endless loop
            raise RuntimeError("pipeline schedule deadlocked")


@dataclass(frozen=True)
class HybridStep:
    graph: StepGraph
    tags: tuple[str, ...]  # per node, one of TAGS
    stages: tuple[tuple[int, ...], ...]  # layer indices per stage
    stage_compute_seconds: tuple[float, ...]  # per stage: every pass of every micro-batch, one GPU


class _Builder:
    def __init__(self, layers, grid: RankGrid, forward_seconds, micro_batch_size, recompute, overlap_dp,
                 sequence_parallel=False):
        self.layers, self.grid, self.plan = layers, grid, grid.plan
        self.fwd = forward_seconds
        self.mbs, self.recompute, self.overlap_dp = micro_batch_size, recompute, overlap_dp
        self.tp_kinds = ("all_gather", "reduce_scatter") if sequence_parallel else ("all_reduce",)
        self.nodes: list[Node] = []
        self.tags: list[str] = []
        self._groups: dict = {}

    def add(self, kind, tag, deps, group, seconds=0.0, nbytes=0) -> int:
        i = len(self.nodes)
        self.nodes.append(Node(i, kind, tuple(deps), seconds, group, int(nbytes)))
        self.tags.append(tag)
        return i

    def groups(self, replicas, p):
        """The stage's GPUs, its TP groups and EP groups (sorted, as collectives name them), built once."""
        key = (replicas, p)
        found = self._groups.get(key)
        if found is None:
            grid = self.grid
            gpus = tuple(sorted(g for d in replicas for g in grid.tp_group(d, p)))
            tp_groups = [tuple(sorted(grid.tp_group(d, p))) for d in replicas]
            ep_groups = [tuple(sorted(grid.ep_group(replicas[0], p, t))) for t in range(self.plan.tp)]
            found = self._groups[key] = (gpus, tp_groups, ep_groups)
        return found

    def stage_pass(self, replicas, p, forward, stage, deps) -> tuple[tuple[int, ...], dict[int, int]]:
        """One pass of one micro-batch through stage p for a lock-step set of replicas; returns the
        ids it ends with and each layer's compute node."""
        plan = self.plan
        gpus, tp_groups, ep_groups = self.groups(replicas, p)
        repeat = 1 if forward else (2 if self.recompute else 1)
        factor = 1.0 if forward else (3.0 if self.recompute else 2.0)
        compute_of: dict[int, int] = {}
        prev = tuple(deps)
        for i in (stage if forward else reversed(stage)):
            layer = self.layers[i]
            c = self.add("compute", "compute", prev, gpus, seconds=factor * self.fwd[i])
            compute_of[i] = c
            prev = (c,)
            if plan.tp > 1:
                for _ in range(layer.tp_all_reduces * repeat):
                    for kind in self.tp_kinds:
                        prev = tuple(self.add(kind, "tp", prev, g, nbytes=layer.tp_bytes * self.mbs)
                                     for g in tp_groups)
            if plan.ep > 1 and layer.ep_all_to_alls:
                for _ in range(layer.ep_all_to_alls * repeat):
                    prev = tuple(self.add("all_to_all", "ep", prev, g, nbytes=layer.ep_bytes * self.mbs)
                                 for g in ep_groups)
        return prev, compute_of

    def sends(self, replicas, p, q, nbytes, deps) -> tuple[int, ...]:
        share = max(1, nbytes * self.mbs // self.plan.tp)
        return tuple(self.add("send_recv", "pp", deps, (self.grid.gpu(d, p, t), self.grid.gpu(d, q, t)),
                              nbytes=share)
                     for d in replicas for t in range(self.plan.tp))

    def pipeline(self, replicas, stages) -> list[dict[int, int]]:
        """Every pass of one lock-step replica set; returns per stage the last backward's compute nodes."""
        pp, m = self.plan.pp, self.plan.microbatches
        last: list[tuple[int, ...]] = [()] * pp
        fwd_sent: dict[tuple[int, int], tuple[int, ...]] = {}  # (stage, micro-batch) -> sends to stage + 1
        bwd_sent: dict[tuple[int, int], tuple[int, ...]] = {}  # (stage, micro-batch) -> sends to stage - 1
        final: list[dict[int, int]] = [{} for _ in range(pp)]
        for p, forward, j in one_f_one_b_walk(pp, m):
            if forward:
                incoming = fwd_sent[(p - 1, j)] if p > 0 else ()
            else:
                incoming = bwd_sent[(p + 1, j)] if p < pp - 1 else ()
            end, compute_of = self.stage_pass(replicas, p, forward, stages[p], last[p] + incoming)
            last[p] = end
            if forward and p < pp - 1:
                fwd_sent[(p, j)] = self.sends(replicas, p, p + 1, self.layers[stages[p][-1]].output_bytes, end)
            if not forward and p > 0:
                bwd_sent[(p, j)] = self.sends(replicas, p, p - 1, self.layers[stages[p][0]].input_bytes, end)
            if not forward and j == m - 1:
                final[p] = {**compute_of, -1: end}
        return final

    def gradient_all_reduces(self, stages, finals) -> None:
        plan, grid = self.plan, self.grid
        if plan.dp == 1:
            return
        for p, stage in enumerate(stages):
            for t in range(plan.tp):
                dense_group = tuple(sorted(grid.dp_group(p, t)))
                expert_groups = [tuple(sorted(grid.expert_dp_group(d, p, t))) for d in range(plan.ep)]
                buckets = [[i] for i in reversed(stage)] if self.overlap_dp else [list(reversed(stage))]
                previous: tuple[int, ...] = ()
                for bucket in buckets:
                    if self.overlap_dp:
                        ready = tuple(final[bucket[-1]] for final in finals[p])
                    else:
                        ready = tuple(i for final in finals[p] for i in final[-1])
                    dense = sum(self.layers[i].params - self.layers[i].expert_params for i in bucket)
                    expert = sum(self.layers[i].expert_params for i in bucket)
                    ids = []
                    if dense:
                        ids.append(self.add("all_reduce", "dp", ready + previous, dense_group,
                                            nbytes=dense * DTYPE_BYTES // plan.tp))
                    if expert and len(expert_groups[0]) > 1:
                        ids.extend(self.add("all_reduce", "dp", ready + previous, g,
                                            nbytes=expert * DTYPE_BYTES // (plan.tp * plan.ep))
                                   for g in expert_groups)
                    previous = tuple(ids) or previous


    def embedding_all_reduces(self, stages, finals, replica_sets) -> None:
        plan, grid = self.plan, self.grid
        tied = self.layers[stages[-1][-1]].tied_params
        if plan.pp == 1 or not tied:
            return
        for k, replicas in enumerate(replica_sets):
            ready = finals[0][k][-1] + finals[-1][k][-1]
            for d in replicas:
                for t in range(plan.tp):
                    group = tuple(sorted((grid.gpu(d, 0, t), grid.gpu(d, plan.pp - 1, t))))
                    self.add("all_reduce", "dp", ready, group, nbytes=tied * DTYPE_BYTES // plan.tp)


def stage_compute_seconds(stages, forward_seconds: Sequence[float], microbatches: int,
                          recompute: bool = True) -> tuple[float, ...]:
    """Per stage, one GPU's compute per step: every micro-batch's forward and backward pass (backward
    = 2 x forward, plus a forward again with recomputation)."""
    backward = 3.0 if recompute else 2.0
    return tuple(microbatches * (1.0 + backward) * sum(forward_seconds[i] for i in stage) for stage in stages)


def hybrid_step(layers: Sequence[LayerSpec], grid: RankGrid, forward_seconds: Sequence[float],
                micro_batch_size: int = 1, recompute: bool = True, overlap_dp: bool = True,
                first_replicas_only: bool = False, sequence_parallel: bool = False) -> HybridStep:
    """The step graph of one 1F1B training step (see the module docstring).

    forward_seconds[i]: layer i's forward pass of one micro-batch on one GPU of its TP group.
    first_replicas_only: emit the pipeline of the first lock-step replica set only (the DP
    all-reduces still span every replica and wait for it). A shortcut for backends that time
    each job in isolation (analytical) when every replica's stages are laid out alike: the other
    replicas' passes would take exactly as long. Not for contention-aware backends."""
    plan = grid.plan
    if len(forward_seconds) != len(layers):
        raise ValueError(f"{len(forward_seconds)} forward times for {len(layers)} layers")
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    stages = split_stages(layers, plan.pp)
    b = _Builder(layers, grid, forward_seconds, micro_batch_size, recompute, overlap_dp, sequence_parallel)
    finals = [[] for _ in range(plan.pp)]
    replica_sets = [tuple(range(first, first + plan.ep))
                    for first in range(0, plan.ep if first_replicas_only else plan.dp, plan.ep)]
    for replicas in replica_sets:
        for p, final in enumerate(b.pipeline(replicas, stages)):
            finals[p].append(final)
    b.gradient_all_reduces(stages, finals)
    b.embedding_all_reduces(stages, finals, replica_sets)
    stage_compute = stage_compute_seconds(stages, forward_seconds, plan.microbatches, recompute)
    graph = StepGraph(tuple(b.nodes), samples=plan.dp * plan.microbatches * micro_batch_size)
    return HybridStep(graph, tuple(b.tags), tuple(tuple(s) for s in stages), stage_compute)
