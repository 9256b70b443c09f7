"""What schedulers and the simulation know of a job on an allocation (GPU type, GPU count), memoised.

    cat = Catalogue(pools, fabrics)                           # one CommTable per pool, from its fabric
    cat.crius_view(model, batch, n_g, "A40", 8)               # best Cell over its stage counts (estimate)
    cat.dp_view(model, batch, "A40", 8)                        # the baselines' data-parallel profile
    cat.run_plan(model, batch, n_g, "A40", 8, tuned=True)      # the plan the job actually runs + tuning cost

The fabrics (GPU type -> network model) come from the loop that runs the policies (artist/crius/), which
also times the plan actually run on the real placement (artist/crius/truth.py GroundTruth): a policy
sees Crius' offline communication profiles (the CommTables), never the network model itself.

Stage counts of a job's Cells (InitCells, Crius Alg. 1): powers of two from 1 to the user's N_G (log N_G + 1
of them), pruned to at most the Cell's GPUs and the model's blocks.

The baselines' view (Crius sec. 8.1: baselines "schedule using DP-profiled data" and run with the best
plan): throughput from the DP-only plan (one stage, d = G) with the memory filter off, since a DP
profile says nothing of what TP or PP would make fit; whether the allocation can run at all comes from
their runtime's plan search (an Alpa compile reports OOM), i.e. full_search.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Mapping

from artist.policies.crius.cells import Cell, CellEstimate, CellModel, StagePlan, estimate_cell_model
from artist.policies.crius.commtable import CommTable
from artist.policies.crius.tuning import full_search, tune_cell
from artist.workload.zoo import zoo_model


def stage_counts(n_g: int, gpus: int, blocks: int) -> list[int]:
    out, s = [], 1
    while s <= max(1, n_g) and s <= gpus and s <= blocks:
        out.append(s)
        s *= 2
    return out


@dataclass(frozen=True)
class RunPlan:
    model: CellModel
    plan: tuple[StagePlan, ...]
    estimate_s: float  # the estimator's latency of this plan
    tuning_s: float  # the search that found it (Crius' half-space tuning, or the baselines' full search)
    cell_estimate_s: float  # Crius: its Cell estimate before tuning (inf for the baselines)


class Catalogue:
    def __init__(self, pools, fabrics: Mapping):
        missing = [t for t in pools if t not in fabrics]
        if missing:
            raise ValueError(f"no network model for pool(s) {', '.join(missing)}")
        self.pools = pools
        self.fabrics = dict(fabrics)  # GPU type -> the network model its CommTable is profiled on
        self.tables = {t: CommTable(p.topology, self.fabrics[t]) for t, p in pools.items()}
        self._models: dict = {}
        self._crius: dict = {}
        self._dp: dict = {}
        self._run: dict = {}

    def cell_model(self, model: str, batch: int, gpu_type: str, gpus: int, stages: int) -> CellModel:
        key = (model, batch, gpu_type, gpus, stages)
        found = self._models.get(key)
        if found is None:
            found = self._models[key] = CellModel(zoo_model(model), self.pools[gpu_type], self.tables[gpu_type],
                                                  gpus, stages, batch)
        return found

    def cells(self, model: str, batch: int, n_g: int, gpu_type: str, gpus: int) -> list[CellEstimate]:
        blocks = zoo_model(model).layers
        return [estimate_cell_model(Cell(model, gpu_type, gpus, s), self.cell_model(model, batch, gpu_type, gpus, s))
                for s in stage_counts(n_g, gpus, blocks)]

    def crius_view(self, model: str, batch: int, n_g: int, gpu_type: str, gpus: int) -> CellEstimate | None:
        """The best Cell of this allocation (None: no Cell of it fits)."""
        key = (model, batch, n_g, gpu_type, gpus)
        if key not in self._crius:
            feasible = [c for c in self.cells(model, batch, n_g, gpu_type, gpus) if c.feasible]
            self._crius[key] = min(feasible, key=lambda c: (c.latency_s, c.cell.stages)) if feasible else None
        return self._crius[key]

    def cell_count(self, model: str, n_g: int, gpus: int) -> int:
        return len(stage_counts(n_g, gpus, zoo_model(model).layers))

    def dp_view(self, model: str, batch: int, gpu_type: str, gpus: int) -> float:
        """Samples/s of the DP-only plan, memory ignored (0: the batch does not split over gpus)."""
        key = (model, batch, gpu_type, gpus)
        if key not in self._dp:
            cm = self.cell_model(model, batch, gpu_type, gpus, 1)
            plan = (StagePlan(gpus, 1),)
            self._dp[key] = batch / cm.time(plan).latency_s if plan[0] in cm.options(0) else 0.0
        return self._dp[key]

    def run_plan(self, model: str, batch: int, n_g: int, gpu_type: str, gpus: int, tuned: bool) -> RunPlan | None:
        """Crius (tuned=True): its best Cell's plan after Cell-guided tuning. Baselines: the full search."""
        key = (model, batch, n_g, gpu_type, gpus, tuned)
        if key not in self._run:
            run = None
            if tuned:
                cell = self.crius_view(model, batch, n_g, gpu_type, gpus)
                if cell is not None:
                    cm = self.cell_model(model, batch, gpu_type, gpus, cell.cell.stages)
                    t = tune_cell(cm, cell.plan)
                    run = RunPlan(cm, t.plan, t.latency_s, t.tuning_seconds, cell.latency_s)
            else:
                blocks = zoo_model(model).layers
                models = [self.cell_model(model, batch, gpu_type, gpus, s) for s in stage_counts(gpus, gpus, blocks)]
                starts = [estimate_cell_model(Cell(model, gpu_type, gpus, m.stages), m).plan for m in models]
                t = full_search(models, starts)
                if t is not None:
                    run = RunPlan(t.model, t.plan, t.latency_s, t.tuning_seconds, float("inf"))
            self._run[key] = run
        return self._run[key]
