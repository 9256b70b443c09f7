"""Flow backend vs ns-3 co-simulation on contention scenarios: prints the error table, asserts nothing.

    PYTHONPATH=. python benchmarks/contention_accuracy.py [--count 24] [--seed 14]

Scenarios (artist/network/flow/scenarios.py): 2-8 jobs on a small fabric with
ecmp spines at 1:1, 2:1, 4:1 and bundle spines, with and without ECMP
collisions. Every job's step time is co-simulated by both backends (all jobs of
a scenario in one run from a common start) and alone. Per scenario: the largest
contention slowdown (shared / alone) by ns-3 and by flow, and the error of
flow's shared step times against ns-3 (flow / ns-3 - 1), median and max over
jobs. Summary: median and max |error| over every job of every scenario (goal:
median <= 5 %, max <= 15 %), and the wall time of each backend.
"""

from __future__ import annotations

import argparse
import statistics
import time

from artist.network.flow import FlowModel
from artist.network.flow.scenarios import contention_scenarios
from artist.network.ns3 import Ns3Model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--scale", type=int, default=1, help="multiply every payload and compute time")
    parser.add_argument("--window-kib", type=int, default=None,
                        help="ns-3 window transport's per-connection window (default: the backend's, 1 MiB)")
    args = parser.parse_args()
    ns3_options = {} if args.window_kib is None else {"window_bytes": args.window_kib << 10}
    errors, slow_errors = [], []
    wall = {"flow": 0.0, "ns3": 0.0}
    print(f"{'scenario':32} {'ch':>2} {'GPUs':>4} {'slowdown ns3':>12} {'slowdown flow':>13} "
          f"{'median err':>10} {'max |err|':>9}")
    for sc in contention_scenarios(args.count, args.seed, args.scale):
        shared, alone = {}, {}
        for name, model in (("flow", FlowModel(sc.topology, channels=sc.channels)),
                            ("ns3", Ns3Model(sc.topology, channels=sc.channels, **ns3_options))):
            started = time.perf_counter()
            shared[name] = {j: t.step_seconds for j, t in model.time(sc.graphs).items()}
            alone[name] = {j: model.time({j: g})[j].step_seconds for j, g in sc.graphs.items()}
            wall[name] += time.perf_counter() - started
        err = [shared["flow"][j] / shared["ns3"][j] - 1 for j in sc.graphs]
        slow = {b: max(shared[b][j] / alone[b][j] for j in sc.graphs) for b in shared}
        errors.extend(err)
        slow_errors.extend(shared["flow"][j] / alone["flow"][j] - shared["ns3"][j] / alone["ns3"][j]
                           for j in sc.graphs)
        gpus = sum(len(g.gpus) for g in sc.graphs.values())
        print(f"{sc.name:32} {sc.channels:>2} {gpus:>4} {slow['ns3']:>12.3f} {slow['flow']:>13.3f} "
              f"{statistics.median(err):>+10.2%} {max(abs(e) for e in err):>9.2%}")
    absolute = [abs(e) for e in errors]
    print(f"\n{len(errors)} jobs in {args.count} scenarios: flow vs ns-3 shared step time, "
          f"median |error| {statistics.median(absolute):.2%}, max |error| {max(absolute):.2%} "
          f"(goal: median <= 5 %, max <= 15 %)")
    print(f"slowdown (shared / alone): flow - ns-3, median |difference| "
          f"{statistics.median(abs(d) for d in slow_errors):.3f}, max {max(abs(d) for d in slow_errors):.3f}")
    print(f"wall seconds: flow {wall['flow']:.2f}, ns-3 {wall['ns3']:.2f} "
          f"(ns-3 / flow = {wall['ns3'] / max(wall['flow'], 1e-9):.1f})")


if __name__ == "__main__":
    main()
