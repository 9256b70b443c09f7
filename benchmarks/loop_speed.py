"""Jobs simulated per second: 10 000 Poisson jobs, 1 280 GPUs, FIFO, analytical model.

    python benchmarks/loop_speed.py [--jobs 10000] [--racks 20]

Prints the wall time of the whole run and its rates. The issue's target: the
whole run in under 30 s on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from artist.metrics import summary
from artist.network.analytical import AnalyticalModel
from artist.policies.registry import make_policy
from artist.simulator import simulate
from artist.topology import load_topology
from artist.workload import JobMix, load_models, poisson_jobs

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--racks", type=int, default=20, help="dally-3tier racks (20 x 64 = 1 280 GPUs)")
    ap.add_argument("--interarrival", type=float, default=5.0, help="mean seconds between arrivals (5 s loads the cluster to ~90 %%)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    topology = load_topology(REPO / "topologies" / "dally-3tier.yaml", args.racks)
    models = load_models()
    mix = JobMix(tuple(sorted(models)), gpu_choices=(1, 2, 4, 8, 16, 32),
                 min_iterations=500, max_iterations=20_000)
    jobs = poisson_jobs(args.jobs, mix, args.interarrival, args.seed)
    comm = AnalyticalModel(topology)
    started = time.perf_counter()
    result = simulate(topology, jobs, models, make_policy("fifo"), comm)
    wall = time.perf_counter() - started
    s = summary(result)
    print(f"cluster: {topology.gpus} GPUs ({topology.racks} racks); jobs: {len(jobs)}; policy: fifo; comm: analytical")
    print(f"wall seconds:              {wall:.2f}")
    print(f"jobs simulated per second: {len(jobs) / wall:.0f}")
    print(f"events per second:         {result.events / wall:.0f}")
    print(f"scheduling calls/second:   {result.scheduling_calls / wall:.0f}")
    print(f"distinct placement shapes: {len(comm._memo)}")
    print(f"simulated makespan:        {s['makespan_s'] / 3600:.1f} h, GPU utilisation {s['gpu_utilisation_fraction']:.2f}")


if __name__ == "__main__":
    main()
