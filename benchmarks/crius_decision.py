"""Crius scheduler time per decision on the 1,280-GPU cluster, by search depth (Crius Fig. 21: 0.88 s per
job at the smallest depth to 5.98 s at the largest; sec. 8.6).

    PYTHONPATH=. python benchmarks/crius_decision.py [--running 150] [--arrivals 20] [--depths 0 1 2 3 4] [--tiny]

--tiny: seconds, for the test that keeps the script working (the 64-GPU testbed, 20 + 4 jobs, depths 0-2).

Setup: `running` jobs of the Crius workload (artist/crius/workload.py, seed 1) are started on their own request
(type, N_G) while they fit, which leaves the cluster nearly full; then `arrivals` more jobs arrive in one
decision and CriusScheduler.decide() places them (ScaleResource over running and new jobs). The Cell
estimates are computed once beforehand (warm catalogue: profiling happens at arrival, not in the
decision), so the figure is the search alone. Prints wall and CPU seconds per decision and per arriving
job; nothing is asserted. Measured on a shared machine: compare ratios between depths, not absolutes.
"""

from __future__ import annotations

import argparse
import resource
import time

from artist.crius.simulation import crius_fabrics
from artist.crius.workload import crius_jobs
from artist.policies.crius.catalogue import Catalogue
from artist.policies.crius.cluster import crius_cluster
from artist.policies.crius.jobs import JobRun, allocations
from artist.policies.crius.scheduler import CriusScheduler


def cpu_seconds() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--running", type=int, default=150)
    parser.add_argument("--arrivals", type=int, default=20)
    parser.add_argument("--depths", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = parser.parse_args()
    cluster = "crius-1280"
    if args.tiny:  # 20 jobs nearly fill the testbed, so depth 0 leaves arrivals pending and depths 1-2 scale jobs
        cluster, args.running, args.arrivals, args.depths = "crius-testbed", 20, 4, [0, 1, 2]
        print("tiny: the crius-testbed cluster (64 GPUs) in place of crius-1280")
    pools = crius_cluster(cluster)
    capacity = {t: p.gpus for t, p in pools.items()}
    catalogue = Catalogue(pools, crius_fabrics(pools))
    t0, c0 = time.perf_counter(), cpu_seconds()
    specs = crius_jobs(pools, catalogue, args.running + args.arrivals, seed=1, arrivals_per_hour=150)
    for spec in specs:  # warm the Cell estimates of every allocation (InitCells happens at arrival)
        for gpu_type, gpus in allocations(spec, capacity):
            catalogue.crius_view(spec.model, spec.global_batch, spec.n_g, gpu_type, gpus)
    print(f"workload + InitCells of {len(specs)} jobs: {time.perf_counter() - t0:.1f} s wall, "
          f"{cpu_seconds() - c0:.1f} CPU-s")
    free = dict(capacity)
    running = []
    for spec in specs[:args.running]:
        if free[spec.gpu_type] >= spec.n_g:
            free[spec.gpu_type] -= spec.n_g
            running.append((spec, (spec.gpu_type, spec.n_g)))
    print(f"{len(running)} jobs running, {sum(free.values())} of {sum(capacity.values())} GPUs free; "
          f"{args.arrivals} arrive")
    print("| depth | s per decision (wall) | CPU-s per decision | s per arriving job | placed |")
    print("|---|---|---|---|---|")
    for depth in args.depths:
        jobs = [JobRun(spec, alloc=alloc) for spec, alloc in running]
        jobs += [JobRun(spec) for spec in specs[args.running:]]
        sched = CriusScheduler(catalogue, capacity, depth)
        t0, c0 = time.perf_counter(), cpu_seconds()
        state = sched.decide(jobs)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        placed = sum(1 for spec in specs[args.running:] if spec.job_id in state)
        print(f"| {depth} | {wall:.2f} | {cpu:.2f} | {wall / args.arrivals:.3f} | {placed} / {args.arrivals} |")


if __name__ == "__main__":
    main()
