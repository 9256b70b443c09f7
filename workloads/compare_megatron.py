"""Print the table of predicted vs published Megatron-LM throughput for workloads/README.md.

    python workloads/compare_megatron.py

Runs (Narayanan et al. 2021, Table 1) and micro-batch assumptions: artist/workload/published_throughput.py.
Topology topologies/dgx-a100.yaml, analytical backend, ring all-reduce, 1 channel; DP all-reduce
after the flush (not overlapped, as Megatron-LM did in 2021); activation recomputation on.
"""

from __future__ import annotations

from pathlib import Path

from artist.network.analytical import AnalyticalModel
from artist.perf.hybrid import estimate_plan
from artist.perf.memory import PlanDoesNotFit
from artist.topology import load_topology
from artist.workload.published_throughput import MEGATRON_TABLE1
from artist.workload.zoo import zoo_model

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "dgx-a100.yaml"


def main() -> None:
    topology = load_topology(TOPOLOGY)
    fabric = AnalyticalModel(topology)
    print("| model | t | p | d | GPUs | batch | micro-batch x m | published TFLOP/s | predicted | error "
          "| MFU | bubble | exposed TP / PP / DP s | memory GiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, run in enumerate(MEGATRON_TABLE1):
        for plan, mbs in run.plans():
            try:
                e = estimate_plan(fabric, topology, zoo_model(run.model), plan, range(run.gpus), mbs,
                                  overlap_dp=False, first_replicas_only=True)
                break
            except PlanDoesNotFit:
                continue
        x = e.exposed_seconds
        note = " (calibration)" if i == 0 else ""
        print(f"| {run.model} | {run.tp} | {run.pp} | {run.dp} | {run.gpus} | {run.global_batch} "
              f"| {mbs} x {plan.microbatches} | {run.tflops_per_gpu:g} | {e.tflops_per_gpu:.1f}{note} "
              f"| {e.tflops_per_gpu / run.tflops_per_gpu - 1:+.1%} | {e.mfu:.1%} | {e.bubble_fraction:.1%} "
              f"| {x['tp']:.2f} / {x['pp']:.3f} / {x['dp']:.2f} | {e.memory_gib:.1f} |")


if __name__ == "__main__":
    main()
