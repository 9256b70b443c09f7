"""Print the placement-sensitivity table of the LLM zoo for README.md: one plan per model, laid out
four ways on a topology, timed by the analytical backend.

    python workloads/placement_sensitivity.py [--topology dgx-h100]

Layouts (rank (d, p, t) = replica, stage, TP index -> GPU):
- packed: Megatron order on the first GPUs (TP inside a machine, stages on neighbouring machines);
- TP across machines: every TP group split in two halves on two machines;
- PP across racks: stage p of every replica in rack p mod racks;
- DP across racks: replica d in rack d mod racks.
"""

from __future__ import annotations

import argparse

from artist import shipped
from artist.network.analytical import AnalyticalModel
from artist.parallel.plan import ParallelPlan
from artist.perf.hybrid import estimate_plan
from artist.topology import load_topology
from artist.workload.zoo import zoo_model

CASES = (
    ("gpt3-13b", ParallelPlan(dp=4, tp=8, pp=2, microbatches=8)),
    ("llama2-70b", ParallelPlan(dp=2, tp=8, pp=4, microbatches=16)),
    ("gpt3-175b", ParallelPlan(dp=2, tp=8, pp=8, microbatches=32)),
    ("bert-6.7b", ParallelPlan(dp=8, tp=4, pp=2, microbatches=8)),
    ("moe-10b", ParallelPlan(dp=8, tp=2, pp=2, ep=8, microbatches=8)),
)


def layouts(topology, plan: ParallelPlan) -> dict[str, list[int]]:
    g, per_rack, racks = topology.gpus_per_machine, topology.gpus_per_rack, topology.racks
    half = plan.tp // 2
    ranks = [(d, p, t) for d in range(plan.dp) for p in range(plan.pp) for t in range(plan.tp)]

    def tp_split(d, p, t):  # stage (d, p) uses half of machine 2k and half of machine 2k + 1
        k = d * plan.pp + p
        pair, side = divmod(k, 2)
        return (2 * pair + t // half) * g + side * half + t % half

    def pp_racks(d, p, t):
        return (p % racks) * per_rack + ((p // racks) * plan.dp + d) * plan.tp + t

    def dp_racks(d, p, t):
        return (d % racks) * per_rack + ((d // racks) * plan.pp + p) * plan.tp + t

    return {
        "packed": list(range(plan.gpus)),
        "TP across machines": [tp_split(*r) for r in ranks],
        "PP across racks": [pp_racks(*r) for r in ranks],
        "DP across racks": [dp_racks(*r) for r in ranks],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", default="dgx-h100")
    topology = load_topology(shipped.topology_path(parser.parse_args().topology))
    fabric = AnalyticalModel(topology)
    names = list(layouts(topology, CASES[0][1]))
    print("| model | plan (micro-batch 1) | GPUs | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for name, plan in CASES:
        cells = []
        base = None
        for layout, gpus in layouts(topology, plan).items():
            e = estimate_plan(fabric, topology, zoo_model(name), plan, gpus)
            base = base or e.step_seconds
            x = e.exposed_seconds
            ratio = "" if layout == "packed" else f" (x{e.step_seconds / base:.3f})"
            cells.append(f"{e.step_seconds:.3f}{ratio} ({x['tp']:.3f} / {x['pp']:.4f} / {x['dp']:.3f} / {x['ep']:.3f})")
        print(f"| {name} | {plan.text()} | {plan.gpus} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
