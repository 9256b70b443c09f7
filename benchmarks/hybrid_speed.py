"""Hybrid-parallel step graphs: build + analytical timing of a GPT-3 175B step on 1024 GPUs
(target: <= 2 s), and what ns-3 costs for a hybrid step.

    PYTHONPATH=. python benchmarks/hybrid_speed.py [--no-ns3] [--repeats 3] [--tiny]

Prints figures only; nothing is asserted. Plans (micro-batch 1, activation recomputation,
gradient all-reduce overlapped per layer), on topologies/dgx-h100.yaml:
- gpt3-175b: dp=8, tp=8, pp=16, 16 micro-batches (global batch 128), the full graph (every replica);
- gpt3-13b: dp=4, tp=8, pp=2, 8 micro-batches (global batch 32), on 8 DGX H100 of one SU.

The 13B step moves ~2 TB over the links (every TP all-reduce of every micro-batch), ~2.5 x 10^8
packets at the ns-3 backend's 9000-byte MTU: hours of packet-level simulation. So ns-3 runs a
small hybrid step (bert-0.76b, dp=2, tp=4, pp=2, 2 micro-batches, 16 GPUs) next to the analytical
model, and the 13B step's ns-3 wall time is extrapolated from the packets that step simulated per
wall second (printed as an estimate, not a measurement).

--tiny: seconds, for the test that keeps the script working: every step above (and --ns3-13b's) is a
2-layer bert-0.76b, dp=2, tp=4, pp=2, 2 micro-batches on 16 GPUs (TP and PP inside a DGX, DP across two),
one repeat.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from artist.network.analytical import AnalyticalModel
from artist.parallel.hybrid import hybrid_step
from artist.parallel.plan import ParallelPlan, rank_grid
from artist.perf.hybrid import estimate_plan, forward_seconds, plan_gpu
from artist.topology import load_topology
from artist.workload.zoo import zoo_model

REPO = Path(__file__).resolve().parent.parent

# (model, plan) of each step: the analytical 1024-GPU step, the small ns-3 step, the step ns-3 is extrapolated to
FULL = {"big": ("gpt3-175b", ParallelPlan(dp=8, tp=8, pp=16, microbatches=16)),
        "small": ("bert-0.76b", ParallelPlan(dp=2, tp=4, pp=2, microbatches=2)),
        "13b": ("gpt3-13b", ParallelPlan(dp=4, tp=8, pp=2, microbatches=8))}
# --tiny: one step for all; 2 layers, a transformer block on each pipeline stage (ns-3: 14 % of the small
# step's packets)
TINY_STEP = ("bert-0.76b", ParallelPlan(dp=2, tp=4, pp=2, microbatches=2), 2)


def _model(name: str, layers: int | None = None):
    model = zoo_model(name)
    return model if layers is None else dataclasses.replace(model, name=f"{name}-{layers}layers", layers=layers)


def big(topology, repeats: int, model, plan: ParallelPlan) -> None:
    gpus = range(plan.gpus)
    best_build = best_total = float("inf")
    for _ in range(repeats):
        fabric = AnalyticalModel(topology)  # a fresh memo: nothing carried over between repeats
        t0 = time.perf_counter()
        layers = model.layers_list()
        step = hybrid_step(layers, rank_grid(plan, gpus),
                           forward_seconds(model, plan, 1, plan_gpu(topology, gpus)))
        t1 = time.perf_counter()
        fabric.time({"job": step.graph})
        t2 = time.perf_counter()
        best_build, best_total = min(best_build, t1 - t0), min(best_total, t2 - t0)
    est = estimate_plan(AnalyticalModel(topology), topology, model, plan, gpus)
    print(f"{model.name} {plan.text()} on {plan.gpus} GPUs: {len(step.graph.nodes)} nodes; "
          f"build {best_build:.2f} s, build + analytical timing {best_total:.2f} s (target <= 2 s), "
          f"{len(step.graph.nodes) / best_total:,.0f} nodes/s")
    print(f"  step {est.step_seconds:.3f} s, exposed TP {est.exposed_seconds['tp']:.3f} s, "
          f"bubble {est.bubble_fraction:.3f}, memory {est.memory_gib:.1f} GiB per GPU")


def wire_bytes(graph) -> float:
    """Bytes the step puts on links: ring collectives 2(n-1)/n (all-reduce) or (n-1)/n of the payload per rank."""
    total = 0.0
    for n in graph.nodes:
        k = len(n.group)
        if n.kind == "all_reduce":
            total += 2 * (k - 1) * n.nbytes
        elif n.kind in ("all_gather", "reduce_scatter", "all_to_all"):
            total += (k - 1) * n.nbytes
        elif n.kind == "send_recv":
            total += n.nbytes
    return total


def ns3(topology, small_model, small_plan: ParallelPlan, model, plan: ParallelPlan) -> None:
    from artist.network.ns3 import Ns3Model, TransportOptions

    small_gpus = range(small_plan.gpus)
    analytical = estimate_plan(AnalyticalModel(topology), topology, small_model, small_plan, small_gpus)
    fabric = Ns3Model(topology)
    t = time.perf_counter()
    est = estimate_plan(fabric, topology, small_model, small_plan, small_gpus)
    wall = time.perf_counter() - t
    rate = est.comm.packets / wall
    print(f"{small_model.name} {small_plan.text()} on {small_plan.gpus} GPUs, ns-3: step {est.step_seconds:.5f} s "
          f"(analytical {analytical.step_seconds:.5f} s, ratio {est.step_seconds / analytical.step_seconds:.4f}); "
          f"{est.nodes} nodes, {est.comm.packets:,} packets in {wall:.1f} s wall ({rate:,.0f} packets/s)")
    gpus = range(plan.gpus)
    step = hybrid_step(model.layers_list(), rank_grid(plan, gpus),
                       forward_seconds(model, plan, 1, plan_gpu(topology, gpus)))
    packets = wire_bytes(step.graph) / TransportOptions().mtu
    print(f"{model.name} {plan.text()} on {plan.gpus} GPUs: {wire_bytes(step.graph) / 1e12:.2f} TB on the wire, "
          f"~{packets:.2e} packets: ~{packets / rate / 3600:.1f} h of ns-3 at that rate (estimate; --ns3-13b runs it)")


def ns3_13b(topology, model, plan: ParallelPlan) -> None:
    """The whole 13B, 64-GPU step on ns-3 (tens of minutes; the watchdog raised to 3 h)."""
    from artist.network.ns3 import Ns3Model

    gpus = range(plan.gpus)
    analytical = estimate_plan(AnalyticalModel(topology), topology, model, plan, gpus)
    t = time.perf_counter()
    est = estimate_plan(Ns3Model(topology, timeout_s=3 * 3600.0), topology, model, plan, gpus)
    wall = time.perf_counter() - t
    print(f"{model.name} {plan.text()} on {plan.gpus} GPUs, ns-3: step {est.step_seconds:.5f} s (analytical "
          f"{analytical.step_seconds:.5f} s, ratio {est.step_seconds / analytical.step_seconds:.4f}); exposed TP "
          f"{est.exposed_seconds['tp']:.5f} s (analytical {analytical.exposed_seconds['tp']:.5f}); "
          f"{est.nodes} nodes, {est.comm.packets:,} packets in {wall:.0f} s wall")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ns3", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ns3-13b", action="store_true", help="also run the whole 13B step on ns-3 (tens of minutes)")
    parser.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = parser.parse_args(argv)
    topology = load_topology(REPO / "topologies" / "dgx-h100.yaml")
    if args.tiny:
        name, plan, layers = TINY_STEP
        steps = {key: (_model(name, layers), plan) for key in FULL}
    else:
        steps = {key: (_model(name), plan) for key, (name, plan) in FULL.items()}
    big(topology, 1 if args.tiny else args.repeats, *steps["big"])
    if not args.no_ns3:
        ns3(topology, *steps["small"], *steps["13b"])
    if args.ns3_13b:
        ns3_13b(topology, *steps["13b"])


if __name__ == "__main__":
    main()
