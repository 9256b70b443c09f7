"""Crius Cells and their agile estimate (Xue et al., Crius sec. 4-5.1; digest 3.2 (a), (b)).

    pool = Pool("A40", topology, accelerator("A40"), memory_bytes=48e9)
    est = estimate_cell(Cell("bert-2.6b", "A40", gpus=8, stages=2), pool, table, global_batch=256)
    est.latency_s, est.plan  # ((d, t) per stage), est.samples_per_s, est.profile_gpu_seconds

A Cell fixes the GPU type, the GPU count G and the pipeline stages N_S; stages.py cuts the model.
Per stage two profiles, DP-only (d = G_s, t = 1) and TP-only (d = 1, t = G_s); every one of the 2^N_S
combinations is assembled with its inter-stage communication and timed by the pipeline formula

    L(pi) = sum_s T_s + (B - 1) (T_s* - Tcomm_s*) + max_s Tdp_s,    B = 4 N_S micro-batches,

T_s = Tcomp_s(pi_s) + Tcomm_{s-1 -> s}(pi_{s-1}, pi_s) per micro-batch, s* the slowest stage. A plan any of
whose stages does not fit in the GPU's memory is dropped (the memory filter); the Cell's estimate is the
fastest plan left. Our choices where the paper is silent (marked [I] in the digest):

- T_s holds the forward and the backward of one micro-batch (Alpa's convention).
- Compute (the paper's single-GPU XLA profile, which a simulator cannot run): forward FLOPs of the stage
  x (micro-batch / d) / t x 4 (backward = 2 x forward plus the recomputed forward: Alpa's benchmarks use
  rematerialisation) / the GPU type's achieved FLOP/s (artist/perf/accelerators.py). A Cell's two
  profiles (all stages DP-only, all TP-only) are charged PROFILE_SECONDS of one GPU each (~1 min per Cell).
- Tensor parallelism: two all-reduces per block in the forward, two in the backward (Megatron-style, as
  artist/workload/transformer.py's LayerSpec says), of the replica's micro-batch activation, over t GPUs.
- Inter-stage: the boundary activation of the micro-batch goes forward and its gradient backward by
  send/recv over min(G_{s-1}, G_s) GPU pairs in parallel (each pair a 1/pairs share); a stage with t > 1
  then all-gathers its replica's activation over its TP group (re-sharding; Crius: send/recv joins DP
  stages, all_gather TP stages, both for hybrids); the backward does the same into stage s - 1.
- The data-parallel gradient all-reduce (params_s / t x 2 bytes over d GPUs) is not in the paper's
  formula: it runs once after the flush, every stage at once, so the slowest one (max_s Tdp_s) is added.
- Memory: artist/perf/memory.py's stage_memory (16 bytes per parameter / t, 1F1B's in-flight micro-batches
  for stage s, full recomputation) against the pool's memory per GPU.
- Communication times come from the CommTable (offline profile + interpolation), never from the real
  placement: that is the ground truth's job (truth.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from artist.perf.accelerators import Accelerator
from artist.perf.memory import stage_memory
from artist.policies.crius.commtable import CommTable
from artist.policies.crius.stages import StageCut, cut_stages, operator_chain
from artist.topology import Topology
from artist.workload.transformer import DTYPE_BYTES, TransformerConfig
from artist.workload.zoo import zoo_model

PROFILE_SECONDS = 30.0  # one parallelism profile on one GPU (Crius sec. 6.1: "~30 s"), charged as GPU time
PROFILES_PER_CELL = 2  # DP-only and TP-only (Crius sec. 5.1, 6.1)
MICROBATCHES_PER_STAGE = 4  # B = 4 x N_S (GPipe's rule, Crius sec. 5.1)
# backward = 2 x forward (Narayanan et al. 2021 sec. 5.1) + 1 x forward again: Alpa's benchmarks train with
# rematerialisation (use_remat), which Crius reuses ("same models as Alpa"); memory keeps layer inputs only.
BACKWARD_FACTOR = 3.0
RECOMPUTE = True


@dataclass(frozen=True)
class Pool:
    """One GPU type of a cluster: its machines as a Topology, its compute, its memory per GPU."""
    gpu_type: str
    topology: Topology
    gpu: Accelerator
    memory_bytes: float
    source_file: Path | None = field(default=None, compare=False)  # the file its topology came from (run ids)

    @property
    def gpus(self) -> int:
        return self.topology.gpus


@dataclass(frozen=True)
class Cell:
    model: str
    gpu_type: str
    gpus: int
    stages: int


@dataclass(frozen=True, order=True)
class StagePlan:
    d: int  # data-parallel replicas inside the stage
    t: int  # tensor-parallel degree

    @property
    def name(self) -> str:
        return "DP" if self.t == 1 and self.d > 1 else "TP" if self.d == 1 and self.t > 1 else f"d{self.d}t{self.t}"


@dataclass(frozen=True)
class StageCost:
    compute_s: float  # one micro-batch's forward + backward, TP collectives included
    dp_sync_s: float  # the gradient all-reduce after the flush
    memory_bytes: float


@dataclass(frozen=True)
class PlanTiming:
    plan: tuple[StagePlan, ...]
    latency_s: float
    stage_s: tuple[float, ...]  # T_s
    boundary_s: tuple[float, ...]  # Tcomm_{s-1 -> s} (0 for the first stage)
    fits: bool


class CellModel:
    """Everything the estimator knows of one (model, pool, G, N_S, global batch): its stages and the
    cost of any per-stage (d, t); shared by the estimate (DP-only / TP-only) and the tuner (hybrids)."""

    def __init__(self, config: TransformerConfig, pool: Pool, table: CommTable, gpus: int, stages: int,
                 global_batch: int):
        self.config, self.pool, self.table = config, pool, table
        self.gpus, self.stages, self.global_batch = gpus, stages, global_batch
        self.microbatches = MICROBATCHES_PER_STAGE * stages
        if global_batch % self.microbatches:
            raise ValueError(f"global batch {global_batch} is not a whole number of {self.microbatches} micro-batches")
        self.micro_batch = global_batch // self.microbatches
        self.layers = config.layers_list()
        self.cuts: list[StageCut] = cut_stages(operator_chain(config), gpus, stages)
        self._cost: dict = {}

    @cached_property
    def across_machines(self) -> bool:
        return self.gpus > self.pool.topology.gpus_per_machine

    def stage_layers(self, s: int):
        cut = self.cuts[s]
        return self.layers[cut.first:cut.last + 1]

    def options(self, s: int) -> list[StagePlan]:
        """Every (d, t) with d t = G_s whose replicas get whole samples (d divides the micro-batch)."""
        g = self.cuts[s].gpus
        return [StagePlan(d, g // d) for d in range(1, g + 1) if g % d == 0 and self.micro_batch % d == 0]

    def cost(self, s: int, plan: StagePlan) -> StageCost:
        key = (s, plan)
        found = self._cost.get(key)
        if found is None:
            found = self._cost[key] = self._stage_cost(s, plan)
        return found

    def _stage_cost(self, s: int, plan: StagePlan) -> StageCost:
        layers = self.stage_layers(s)
        samples = self.micro_batch / plan.d
        flops = sum(layer.forward_flops for layer in layers)
        compute = (1.0 + BACKWARD_FACTOR) * flops * samples / plan.t / self.pool.gpu.achieved_flops
        tp = 0.0
        if plan.t > 1:
            for layer in layers:
                calls = 2 * layer.tp_all_reduces  # forward and backward
                if calls:
                    tp += calls * self.table.seconds("all_reduce", plan.t, samples * layer.tp_bytes)
        params = sum(layer.params for layer in layers)
        if self.stages > 1 and s == self.stages - 1:
            params += sum(layer.tied_params for layer in layers)
        dp = self.table.seconds("all_reduce", plan.d, params * DTYPE_BYTES / plan.t) if plan.d > 1 else 0.0
        memory = stage_memory(layers, s, self.stages, plan.t, 1, self.microbatches, samples, recompute=RECOMPUTE)
        return StageCost(compute + tp, dp, memory.total_bytes)

    def boundary(self, s: int, prev: StagePlan, cur: StagePlan) -> float:
        """Tcomm_{s-1 -> s}: forward activation and backward gradient of one micro-batch (docstring)."""
        if s == 0:
            return 0.0
        act = self.micro_batch * self.layers[self.cuts[s - 1].last].output_bytes
        pairs = min(self.cuts[s - 1].gpus, self.cuts[s].gpus)
        t = 2 * self.table.seconds("send_recv", 2, act / pairs, self.across_machines)
        if cur.t > 1:
            t += self.table.seconds("all_gather", cur.t, act / cur.d)
        if prev.t > 1:
            t += self.table.seconds("all_gather", prev.t, act / prev.d)
        return t

    def fits(self, s: int, plan: StagePlan) -> bool:
        return self.cost(s, plan).memory_bytes <= self.pool.memory_bytes

    def time(self, plan: tuple[StagePlan, ...]) -> PlanTiming:
        comp = [self.cost(s, p).compute_s for s, p in enumerate(plan)]
        comm = [self.boundary(s, plan[s - 1] if s else p, p) for s, p in enumerate(plan)]
        dp = max(self.cost(s, p).dp_sync_s for s, p in enumerate(plan))
        stage = [c + m for c, m in zip(comp, comm)]
        latency = pipeline_latency(stage, comm, self.microbatches) + dp
        fits = all(self.fits(s, p) for s, p in enumerate(plan))
        return PlanTiming(tuple(plan), latency, tuple(stage), tuple(comm), fits)


def pipeline_latency(stage_s, boundary_s, microbatches: int) -> float:
    """Crius' formula: sum_s T_s + (B - 1) (T_s* - Tcomm_s*), s* the slowest stage (first on ties)."""
    slowest = max(range(len(stage_s)), key=lambda s: (stage_s[s], -s))
    return sum(stage_s) + (microbatches - 1) * (stage_s[slowest] - boundary_s[slowest])


@dataclass(frozen=True)
class CellEstimate:
    cell: Cell
    global_batch: int
    best: PlanTiming | None  # None: no assembled plan fits
    assembled: int  # plans assembled (2^N_S, fewer where a stage has one GPU: DP-only = TP-only)
    # physical profiles: one DP-only and one TP-only run of the whole Cell on one GPU, stage after stage
    # (Crius sec. 6.1: "~30 s per parallelism profile ... ~1 min per Cell", <= 30 min per job)
    profiles: int

    @property
    def feasible(self) -> bool:
        return self.best is not None

    @property
    def latency_s(self) -> float:
        return self.best.latency_s if self.best else float("inf")

    @property
    def plan(self) -> tuple[StagePlan, ...] | None:
        return self.best.plan if self.best else None

    @property
    def samples_per_s(self) -> float:
        return self.global_batch / self.best.latency_s if self.best else 0.0

    @property
    def profile_gpu_seconds(self) -> float:
        return self.profiles * PROFILE_SECONDS


def estimate_cell(cell: Cell, pool: Pool, table: CommTable, global_batch: int) -> CellEstimate:
    """The best assembled DP-only / TP-only plan of the Cell (module docstring)."""
    model = CellModel(zoo_model(cell.model), pool, table, cell.gpus, cell.stages, global_batch)
    return estimate_cell_model(cell, model)


def estimate_cell_model(cell: Cell, model: CellModel) -> CellEstimate:
    """Every assembled plan timed at once (numpy over the 2^N_S combinations: 65,536 for 16 stages);
    the same arithmetic as CellModel.time, which tests compare it with."""
    per_stage = []
    for s, cut in enumerate(model.cuts):
        g = cut.gpus
        per_stage.append(sorted(p for p in {StagePlan(g, 1), StagePlan(1, g)} if p in model.options(s)))
    if any(not options for options in per_stage):
        return CellEstimate(cell, model.global_batch, None, 0, PROFILES_PER_CELL)
    S = len(per_stage)
    grids = np.meshgrid(*[np.arange(len(o)) for o in per_stage], indexing="ij")
    choice = np.stack([g.ravel() for g in grids], axis=1)  # plans x stages, in itertools.product order
    comp = np.zeros(choice.shape)
    comm = np.zeros(choice.shape)
    dp = np.zeros(choice.shape)
    fits = np.ones(len(choice), dtype=bool)
    for s, options in enumerate(per_stage):
        costs = [model.cost(s, p) for p in options]
        comp[:, s] = np.array([c.compute_s for c in costs])[choice[:, s]]
        dp[:, s] = np.array([c.dp_sync_s for c in costs])[choice[:, s]]
        fits &= np.array([c.memory_bytes <= model.pool.memory_bytes for c in costs])[choice[:, s]]
        if s:
            table = np.array([[model.boundary(s, a, b) for b in options] for a in per_stage[s - 1]])
            comm[:, s] = table[choice[:, s - 1], choice[:, s]]
    stage = comp + comm
    rows = np.arange(len(choice))
    slowest = np.argmax(stage, axis=1)  # first on ties, as pipeline_latency
    latency = (stage.sum(axis=1) + (model.microbatches - 1) * (stage[rows, slowest] - comm[rows, slowest])
               + dp.max(axis=1))
    best = None
    if fits.any():
        k = int(np.flatnonzero(fits)[np.argmin(latency[fits])])
        best = model.time(tuple(per_stage[s][choice[k, s]] for s in range(S)))
    return CellEstimate(cell, model.global_batch, best, len(choice), PROFILES_PER_CELL)
