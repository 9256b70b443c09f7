"""Shared-mode loop time against isolated-mode loop time on the same runs: prints figures, asserts nothing.

    PYTHONPATH=. python benchmarks/contention_speed.py [--jobs 60] [--racks 2] [--policies fifo,gandiva]
                                                      [--topology dally-3tier-ecmp-4to1] [--backend flow] [--tiny]

--tiny: seconds, for the test that keeps the script working (FIFO, 6 jobs, 1 channel).

Workload: Poisson jobs (seed 0, mean inter-arrival 60 s, 1-32 GPUs with the dally-policies sweep's
weights, every shipped model; ring all-reduces on --channels rings) on the Dally cluster with a 4:1
ecmp spine. Each policy runs twice with the flow backend and no latency cache, contention isolated
then shared, each with a fresh stack (nothing memoised carries over); the loop (simulate()) is timed.
Printed per policy:
loop seconds both ways, their ratio (goal: shared / isolated <= 3), makespan and mean JCT both
ways, the mean and max per-job contention slowdown, and CPU seconds both ways (getrusage, this process
and its children: wall time is noisy on a shared machine).
"""

from __future__ import annotations

import argparse
import resource
import time

from artist import shipped
from artist.metrics import summary
from artist.network.stack import CommSpec
from artist.policies.registry import make_policy
from artist.simulator import SimulatorConfig, simulate
from artist.topology import load_topology
from artist.workload import load_models
from artist.workload.spec import jobs_from_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--racks", type=int, default=2)
    parser.add_argument("--policies", default="fifo,gandiva")
    parser.add_argument("--topology", default="dally-3tier-ecmp-4to1")
    parser.add_argument("--backend", default="flow")
    parser.add_argument("--channels", type=int, default=8, help="NCCL channels (8: one ring per NIC of a machine)")
    parser.add_argument("--workload", default=None,
                        help="a workload spec (as a sweep's workloads[].spec) instead of the Poisson jobs, e.g. "
                             "sweeps/dally-congested-small.yaml's batch:n=40,...")
    parser.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = parser.parse_args()
    if args.tiny:  # a batch of 24- and 40-GPU jobs: two span both racks at once, so shared mode co-simulates them
        args.policies, args.channels = "fifo", 1
        args.workload = "batch:n=6,gpus=24|40,models=resnet18,min_iter=100,max_iter=300"
    topology = load_topology(shipped.topology_path(args.topology), racks=args.racks)
    models = load_models()
    spec = args.workload or f"poisson:n={args.jobs},interarrival=60,gpu_weights=0.30|0.20|0.20|0.15|0.10|0.05"
    jobs = jobs_from_spec(spec, models, 0, topology.gpus)
    print(f"{len(jobs)} jobs ({spec}) on {topology.name} x{args.racks} racks, backend {args.backend}, "
          f"{args.channels} channels")
    print(f"{'policy':10} {'isolated s':>10} {'shared s':>9} {'ratio':>6} {'makespan iso/sh':>20} "
          f"{'mean JCT iso/sh':>20} {'slowdown mean/max':>18}")
    for name in args.policies.split(","):
        loop, cpu, rows = {}, {}, {}
        for mode in ("isolated", "shared"):
            fabric = CommSpec(args.backend, channels=args.channels).build(topology)
            config = SimulatorConfig(contention=mode)
            started, cpu_started = time.perf_counter(), _cpu_seconds()
            result = simulate(topology, jobs, models, make_policy(name), fabric, config)
            loop[mode] = time.perf_counter() - started
            cpu[mode] = _cpu_seconds() - cpu_started
            rows[mode] = summary(result)
        iso, sh = rows["isolated"], rows["shared"]
        print(f"{name:10} {loop['isolated']:>10.2f} {loop['shared']:>9.2f} {loop['shared'] / loop['isolated']:>6.2f} "
              f"{iso['makespan_s']:>9.0f}/{sh['makespan_s']:<10.0f} "
              f"{iso['jct_mean_s']:>9.0f}/{sh['jct_mean_s']:<10.0f} "
              f"{sh['contention_slowdown_mean']:>8.4f}/{sh['contention_slowdown_max']:<8.4f} "
              f"cpu s {cpu['isolated']:.2f}/{cpu['shared']:.2f} (ratio {cpu['shared'] / cpu['isolated']:.2f})")


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children (the loop runs in-process)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
