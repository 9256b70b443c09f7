"""Gavel's policy time per round at 64, 512 and 2 048 GPUs: the LP solve (HiGHS) of each objective and a
whole round of GavelPolicy (LP + leases + placement on nodes).

    PYTHONPATH=. python benchmarks/gavel_round.py [--jobs-per-gpu 0.5] [--repeats 5] [--seed 0] [--tiny]

--tiny: seconds, for the test that keeps the script working (64 GPUs only, one repeat).

Cluster: Sia's heterogeneous 64-GPU mix (6 x 4 T4 + 3 x 8 RTX + 2 x 8 A100 nodes; digest 2.6) and the
same mix x 8 (512 GPUs) and x 32 (2 048). Jobs: jobs-per-gpu x GPUs active jobs (0.5: twice as many GPUs
wanted as held, on average), scale factors 1/2/4/8 GPUs with probabilities 0.6/0.2/0.15/0.05 (invented,
Philly-like: mostly 1-GPU jobs) and throughputs drawn at random per (job, type) (invented: the solve time
depends on the LP's size and structure, not on the values). Prints one JSON line per size: jobs, LP
variables, median wall seconds of each solve and of a whole round, and the CPU seconds of the process
(resource.getrusage, children included) spent on all of it. Sia reports Gavel at 13 ms median per round
at 64 GPUs (digest 2.6; their cvxpy + ECOS). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from types import SimpleNamespace

import numpy as np

from artist.policies.gavel.lp import max_min_fairness, max_sum_throughput
from artist.policies.gavel.policy import GavelPolicy

# Sia's heterogeneous simulated cluster (draft section 4; digest 2.6): (type, nodes, GPUs per node)
SIA_MIX = (("t4", 6, 4), ("rtx", 3, 8), ("a100", 2, 8))
SCALE_FACTORS, SCALE_PROBS = (1, 2, 4, 8), (0.6, 0.2, 0.15, 0.05)


class _Table:
    def __init__(self, table):
        self.table = table

    def throughput(self, job_id, gpu_type, gpus):
        return self.table[job_id][gpu_type]


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(multiplier: int, jobs_per_gpu: float, repeats: int, seed: int) -> dict:
    rng = np.random.default_rng([seed, multiplier])
    capacity, node_types = [], []
    for gpu_type, nodes, per_node in SIA_MIX:
        capacity += [per_node] * (nodes * multiplier)
        node_types += [gpu_type] * (nodes * multiplier)
    types = [t for t, _, _ in SIA_MIX]
    type_gpus = np.array([n * g * multiplier for _, n, g in SIA_MIX])
    n_jobs = max(1, int(round(jobs_per_gpu * sum(capacity))))
    speed = rng.uniform(1.0, 6.0, (n_jobs, len(types))) * rng.uniform(1, 1000, (n_jobs, 1))
    scale = rng.choice(SCALE_FACTORS, n_jobs, p=SCALE_PROBS)
    cpu0 = _cpu()
    lp_sum = _timed(lambda: max_sum_throughput(speed, scale, type_gpus), repeats)
    lp_min = _timed(lambda: max_min_fairness(speed, scale, type_gpus), repeats)
    table = {f"j{i}": dict(zip(types, speed[i])) for i in range(n_jobs)}
    views = [SimpleNamespace(job_id=f"j{i}", gpus_wanted=int(scale[i]), current=np.zeros(len(capacity), int),
                             submitted=float(i), age=0.0) for i in range(n_jobs)]

    def whole_round():
        GavelPolicy(capacity, node_types, _Table(table)).allocate(views)

    round_s = _timed(whole_round, repeats)
    return {"gpus": int(sum(capacity)), "jobs": n_jobs, "lp_variables": n_jobs * len(types),
            "max_sum_lp_s": round(lp_sum, 4), "max_min_lp_s": round(lp_min, 4), "round_s": round(round_s, 4),
            "cpu_s_all": round(_cpu() - cpu0, 2), "repeats": repeats}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs-per-gpu", type=float, default=0.5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    for multiplier in (1,) if args.tiny else (1, 8, 32):
        print(json.dumps(measure(multiplier, args.jobs_per_gpu, 1 if args.tiny else args.repeats, args.seed)),
              flush=True)


if __name__ == "__main__":
    main()
