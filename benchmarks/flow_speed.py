"""Flow backend speed: transfers per CPU-second on one large step graph; prints figures, asserts nothing.

    PYTHONPATH=. python benchmarks/flow_speed.py [--model bert_large] [--gpus 16] [--channels 8] [--profile] [--tiny]

--tiny: seconds, for the test that keeps the script working (4 GPUs, 2 rings).

One DDP step of --model on --gpus GPUs (8 per machine, machines 0 and 8 of the Dally cluster's 4:1 ECMP
spine with 100 Gb/s ports, so that half the ring crosses racks), ring all-reduces on --channels rings, timed
by the flow backend alone (FlowModel.time, a fresh model: nothing memoised). Printed: transfers, rate
updates, CPU seconds (getrusage of this process), transfers per CPU-second, the step time (to compare
answers between versions: run it on two checkouts). --profile prints cProfile's top 15 by total time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import time

from artist import shipped
from artist.network.flow import FlowModel
from artist.parallel.ddp import ddp_step
from artist.perf.compute import ComputeModel
from artist.placement import Placement
from artist.topology import load_topology
from artist.workload import load_models


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bert_large")
    parser.add_argument("--gpus", type=int, default=16)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--topology", default="dally-3tier-ecmp-4to1-100g")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = parser.parse_args()
    if args.tiny:  # still two racks and two GPUs a side: NVLink, NIC and spine hops, rings sharing links
        args.gpus, args.channels = 4, 2
    topology = load_topology(shipped.topology_path(args.topology)).with_racks(2)
    per_rack = topology.machines_per_rack * topology.gpus_per_machine
    half = args.gpus // 2
    gpus = tuple(range(half)) + tuple(range(per_rack, per_rack + args.gpus - half))
    placement = Placement(topology, gpus)
    model = load_models()[args.model]
    graph = ddp_step(model, placement, ComputeModel(topology).step_seconds(model, placement))
    fabric = FlowModel(topology, channels=args.channels)
    profiler = cProfile.Profile() if args.profile else None
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    if profiler:
        profiler.enable()
    timing = fabric.time({"job": graph})["job"]
    if profiler:
        profiler.disable()
    cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    details = timing.result.details
    print(f"{args.model} on {args.gpus} GPUs ({len(placement.racks)} racks), {args.channels} rings, {args.topology}")
    print(f"transfers {details['transfers']}, rate updates {details['rate_updates']}")
    print(f"CPU s {cpu:.2f}, wall s {wall:.2f}; transfers per CPU-second {details['transfers'] / cpu:,.0f}")
    print(f"step seconds {timing.step_seconds!r}")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
