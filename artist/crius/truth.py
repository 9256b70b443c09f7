"""Ground truth for Crius: the step time of the plan actually run, on the GPUs actually given.

    seconds = true_step_seconds(cell_model, plan, gpus, fabric)   # gpus: the placement, in machine order
    truth = GroundTruth(fabrics); truth.seconds(run_plan, gpus)   # the same, memoised, fabric per pool

The plan (one (d, t) per stage, stage s on the next G_s GPUs of the placement) becomes a step graph
(artist/parallel/graph.py) that the fabric model times, like every other ArtISt job:

- 1F1B (PipeDream-Flush, what Alpa runs) with B = 4 N_S micro-batches: stage s does
  artist/parallel/hybrid.py's 1F1B order of passes (one_f_one_b_walk), one pass at a time;
- a pass = one compute node on the stage's GPUs (forward, or backward at 2 x forward; the same FLOPs
  model as the estimate), then its TP all-reduces one after the other, each over every TP group at once;
- after a forward, send/recv of the boundary activation to stage s + 1 over min(G_s, G_s+1) GPU pairs,
  then an all-gather over each TP group of s + 1 when t > 1; after a backward the same towards s - 1;
- after a stage's last backward, its gradient all-reduce over each DP group (the GPUs of the same TP
  index), params_s / t x 2 bytes.

What differs from the estimate (cells.py) is therefore exactly what Crius' estimator approximates: the
real schedule instead of the closed formula, each collective timed on its real GPUs (which may straddle
machines) instead of interpolated from a packed profile, and send/recv between the real machines.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from artist.network.provenance import AnswerCounts
from artist.network.stack import CommSpec, fabric_for
from artist.parallel.graph import Node, StepGraph
from artist.parallel.hybrid import one_f_one_b_walk
from artist.policies.crius.cells import BACKWARD_FACTOR, CellModel, StagePlan
from artist.workload.transformer import DTYPE_BYTES


class _Graph:
    def __init__(self):
        self.nodes: list[Node] = []

    def add(self, kind, deps, group, seconds=0.0, nbytes=0) -> int:
        i = len(self.nodes)
        if kind != "send_recv":
            group = tuple(sorted(group))
        self.nodes.append(Node(i, kind, tuple(deps), float(seconds), tuple(group), int(max(0, round(nbytes)))))
        return i


def plan_step_graph(model: CellModel, plan: Sequence[StagePlan], gpus: Sequence[int]) -> StepGraph:
    if len(plan) != model.stages:
        raise ValueError(f"{len(plan)} stage plans for {model.stages} stages")
    if len(gpus) != model.gpus:
        raise ValueError(f"the Cell has {model.gpus} GPUs, the placement {len(gpus)}")
    stage_gpus, start = [], 0
    for s, cut in enumerate(model.cuts):
        if plan[s].d * plan[s].t != cut.gpus:
            raise ValueError(f"stage {s} plan d={plan[s].d} t={plan[s].t} does not use its {cut.gpus} GPUs")
        stage_gpus.append(tuple(gpus[start:start + cut.gpus]))
        start += cut.gpus
    tp_groups = [[g[k * p.t:(k + 1) * p.t] for k in range(p.d)] for g, p in zip(stage_gpus, plan)]
    b = _Graph()
    S, M = model.stages, model.microbatches
    achieved = model.pool.gpu.achieved_flops

    def pass_nodes(s, forward, deps):
        p, layers = plan[s], model.stage_layers(s)
        samples = model.micro_batch / p.d
        flops = sum(layer.forward_flops for layer in layers) * samples / p.t
        prev = (b.add("compute", deps, stage_gpus[s], (1.0 if forward else BACKWARD_FACTOR) * flops / achieved),)
        if p.t > 1:
            for layer in layers:
                for _ in range(layer.tp_all_reduces):
                    prev = tuple(b.add("all_reduce", prev, g, nbytes=samples * layer.tp_bytes) for g in tp_groups[s])
        return prev

    def transfer(src, dst, act, deps):
        pairs = min(len(stage_gpus[src]), len(stage_gpus[dst]))
        a, c = stage_gpus[src], stage_gpus[dst]
        ends = tuple(b.add("send_recv", deps, (a[k * len(a) // pairs], c[k * len(c) // pairs]), nbytes=act / pairs)
                     for k in range(pairs))
        if plan[dst].t > 1:
            ends = tuple(b.add("all_gather", ends, g, nbytes=act / plan[dst].d) for g in tp_groups[dst])
        return ends

    last = [()] * S
    fwd_sent: dict = {}
    bwd_sent: dict = {}
    for s, forward, j in one_f_one_b_walk(S, M):
        incoming = (fwd_sent[(s - 1, j)] if s > 0 else ()) if forward else (bwd_sent[(s + 1, j)] if s < S - 1 else ())
        end = pass_nodes(s, forward, last[s] + incoming)
        last[s] = end
        if forward and s < S - 1:
            act = model.micro_batch * model.layers[model.cuts[s].last].output_bytes
            fwd_sent[(s, j)] = transfer(s, s + 1, act, end)
        if not forward and s > 0:
            act = model.micro_batch * model.layers[model.cuts[s - 1].last].output_bytes
            bwd_sent[(s, j)] = transfer(s, s - 1, act, end)
    for s, p in enumerate(plan):
        if p.d == 1:
            continue
        layers = model.stage_layers(s)
        params = sum(layer.params for layer in layers)
        if S > 1 and s == S - 1:
            params += sum(layer.tied_params for layer in layers)
        for k in range(p.t):
            group = [stage_gpus[s][i * p.t + k] for i in range(p.d)]
            b.add("all_reduce", last[s], group, nbytes=params * DTYPE_BYTES / p.t)
    return StepGraph(tuple(b.nodes), samples=model.global_batch)


def step_timing(model: CellModel, plan: Sequence[StagePlan], gpus: Sequence[int], fabric):
    """The fabric's timing of the plan's step graph on these GPUs (its step and which path answered)."""
    return fabric.time({"job": plan_step_graph(model, plan, gpus)})["job"]


def true_step_seconds(model: CellModel, plan: Sequence[StagePlan], gpus: Sequence[int], fabric) -> float:
    return step_timing(model, plan, gpus, fabric).step_seconds


class GroundTruth:
    """true_step_seconds of the plan a job runs, with the network model of its pool (GPU type -> fabric),
    memoised by the placement's machine shape (GPUs per machine in order, and which machines share the
    first one's rack), which is all the analytical fabric's answer depends on inside one pool. `answers`
    counts which path answered each distinct question (network/provenance.py: a run's results row says it)."""

    def __init__(self, fabrics: Mapping):
        self.fabrics = dict(fabrics)
        self._memo: dict = {}
        self._compute_memo: dict = {}
        self._free: dict = {}  # GPU type -> the `none` fabric of its pool (communication free)
        self.answers = AnswerCounts()

    def seconds(self, run, gpus) -> float:
        """run: a catalogue RunPlan (its CellModel, kept alive by the catalogue, and its plan)."""
        key = self._key(run, gpus)
        found = self._memo.get(key)
        if found is None:
            timing = step_timing(run.model, run.plan, gpus, self.fabrics[run.model.pool.gpu_type])
            self.answers.record(timing.result)
            found = self._memo[key] = timing.step_seconds
        return found

    def compute_seconds(self, run, gpus) -> float:
        """The same step with communication free: its compute on the critical path. The step less this is
        the communication the job waits for (exposed), as the rigid loop's comm_seconds_per_iteration."""
        key = self._key(run, gpus)
        found = self._compute_memo.get(key)
        if found is None:
            gpu_type = run.model.pool.gpu_type
            free = self._free.get(gpu_type)
            if free is None:
                free = self._free[gpu_type] = fabric_for(CommSpec("none"), run.model.pool.topology)
            found = self._compute_memo[key] = true_step_seconds(run.model, run.plan, gpus, free)
        return found

    @staticmethod
    def _key(run, gpus) -> tuple:
        topo = run.model.pool.topology
        shape = []
        for g in gpus:
            m = topo.machine_of(g)
            if shape and shape[-1][0] == m:
                shape[-1][1] += 1
            else:
                shape.append([m, 1])
        racks = tuple(topo.rack_of_machine(m) for m, _ in shape)
        return id(run.model), run.plan, tuple(n for _, n in shape), tuple(r == racks[0] for r in racks)

