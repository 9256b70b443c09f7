"""Pollux policy time per 60 s round on the 64-GPU cluster (16 nodes x 4 T4), and the agent's fit time.

    PYTHONPATH=. python benchmarks/pollux_round.py [--jobs 10 30 60] [--rounds 3] [--seed 0] [--tiny]

--tiny: seconds, for the test that keeps the script working (3 jobs, 2 rounds, a 6 x 3 genetic search).

Pollux reports ~1 s per round on 1 vCPU and 0.2 s per agent fit (paper section 5.2). Each job here is
one of the six Pollux applications, its agent fed the artifact's measured step times for the
placements {1 GPU; 4 GPUs on one node; 8 GPUs over 2 nodes} at local batch M0 (as a job would have
observed them) and the gradient statistics of epoch 0. Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import os

# One BLAS thread: the agents' L-BFGS-B fits are 7-parameter problems, and OpenBLAS's threads made them
# 20x slower on 2 busy cores (measured: 5 fits 2.95 s vs 0.14 s). Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from artist.elastic.applications import pollux_applications  # noqa: E402
from artist.policies.pollux.agent import PolluxAgent  # noqa: E402
from artist.policies.pollux.scheduler import JobView, PolluxScheduler  # noqa: E402

PLACEMENTS = {1: (1, 1), 4: (1, 4), 44: (2, 8)}  # artifact placement id -> (nodes, GPUs)


def _agent(app, spec, fit_times):
    agent = PolluxAgent(spec, "t4")
    rows = app.placement_rows
    limit = spec.limit("t4")
    sqr, var = app.replay.grad_stats(app.initial_batch, 0)
    for pid, (nodes, k) in PLACEMENTS.items():
        mine = rows["placement"] == pid
        batches = rows["local_bsz"][mine]
        if not batches.size:
            continue
        # the measured local batch nearest M0 / K within memory
        target = min(max(app.initial_batch / k, limit.min_local), limit.max_local)
        i = np.flatnonzero(mine)[int(np.argmin(np.abs(batches - target)))]
        agent.observe(nodes, k, int(rows["local_bsz"][i]), 0, float(rows["step_time"][i]), None, sqr, var)
        start = time.perf_counter()
        agent.params  # the agent refits when its model is next asked for
        fit_times.append(time.perf_counter() - start)
    return agent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10, 30, 60])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    # tiny: two rounds, so the second starts from the first's allocation as in the full run
    jobs_counts, rounds = ([3], 2) if args.tiny else (args.jobs, args.rounds)
    ga = {"pop_size": 6, "generations": 3} if args.tiny else {}
    apps = pollux_applications()
    names = sorted(apps)
    fit_times: list[float] = []
    print("jobs  round_s(median)  round_s(max)  cpu_s(median)  GPUs_allocated  (paper: ~1 s per round on 1 vCPU)")
    for n_jobs in jobs_counts:
        rng = np.random.default_rng(args.seed)
        jobs = [JobView(f"j{i}", _agent(*apps[names[int(rng.integers(len(names)))]], fit_times),
                        np.zeros(16, dtype=int), age=float(rng.uniform(60, 7200)), restarts=int(rng.integers(0, 3)),
                        attained=float(rng.uniform(0, 1e5)), submitted=float(i)) for i in range(n_jobs)]
        sched = PolluxScheduler([4] * 16, seed=args.seed, **ga)
        times, cpu = [], []
        for _ in range(rounds):
            start, start_cpu = time.perf_counter(), time.process_time()
            out = sched.allocate(jobs)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)  # this process's CPU: the machine may be shared
            for j in jobs:
                j.current = out[j.job_id]
        used = int(sum(a.sum() for a in out.values()))
        print(f"{n_jobs:4d}  {statistics.median(times):15.2f}  {max(times):12.2f}  {statistics.median(cpu):13.2f}  "
              f"{used:14d}")
    print(f"agent fit: median {statistics.median(fit_times) * 1e3:.0f} ms, max {max(fit_times) * 1e3:.0f} ms "
          f"over {len(fit_times)} fits (paper: 0.2 s)")


if __name__ == "__main__":
    main()
