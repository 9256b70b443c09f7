"""Trace loading speed: a synthetic Philly `cluster_job_log` of 117,000 jobs (the real log has 117,325,
msr-fiddle/philly-traces README), loaded as a workload; target <= 10 s on 2 cores.

    PYTHONPATH=. python benchmarks/trace_speed.py [--jobs 117000] [--seed 0] [--keep FILE] [--tiny]

--tiny: seconds, for the test that keeps the script working (2,000 jobs, ~2 MiB).

Prints figures only; nothing is asserted. The file is written to a temporary directory (or FILE) in the
published schema: jobs submitted over ~83 days, 1-3 attempts each, 1-16 GPUs over one or two machines,
a few jobs without attempts or still running, all sizes and times invented. Three loads are timed: the
full workload (`load_trace`: read, filter, assign models and iterations), the Pollux/Sia window (busiest
8 h at 20 jobs/h) and `trace_stats`. Memory: the peak resident set of the process before and after the
full load (Python's ru_maxrss), per job kept.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from artist.workload import load_models
from artist.workload.traces.load import load_trace
from artist.workload.traces.options import TraceOptions
from artist.workload.traces.stats import trace_stats

FMT = "%Y-%m-%d %H:%M:%S"
START = datetime(2017, 10, 1)


def write_synthetic_philly(path: Path, jobs: int, seed: int) -> None:
    """jobs job objects in Philly's schema, one JSON array, written object by object."""
    rng = np.random.default_rng(seed)
    submits = np.sort(rng.uniform(0, 83 * 86400, size=jobs))
    gpu_choices = np.array([1, 1, 1, 1, 2, 4, 8, 16])
    with open(path, "w") as fh:
        fh.write("[\n")
        for i in range(jobs):
            submit = START + timedelta(seconds=float(submits[i]))
            gpus = int(rng.choice(gpu_choices))
            t = submit + timedelta(seconds=float(rng.exponential(600)))
            attempts = []
            kind = rng.random()
            for a in range(0 if kind < 0.01 else int(rng.integers(1, 4))):
                run = timedelta(seconds=float(rng.lognormal(7, 2)))
                machines = [gpus] if gpus <= 8 else [8] * (gpus // 8)
                detail = [{"ip": f"m{int(rng.integers(1, 552))}", "gpus": [f"gpu{g}" for g in range(n)]}
                          for n in machines]
                end = None if kind > 0.995 else (t + run).strftime(FMT)
                attempts.append({"start_time": t.strftime(FMT), "end_time": end, "detail": detail})
                t = t + run + timedelta(seconds=30)
            job = {"status": ("Pass", "Killed", "Failed")[int(rng.choice(3, p=[0.6, 0.1, 0.3]))],
                   "vc": f"vc{int(rng.integers(15)):02x}", "jobid": f"application_0000000000000_{i:06d}",
                   "attempts": attempts, "submitted_time": submit.strftime(FMT), "user": f"u{int(rng.integers(300))}"}
            fh.write(json.dumps(job, indent=4))
            fh.write(",\n" if i < jobs - 1 else "\n]\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=117_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, help="write the synthetic log here and keep it")
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    if args.tiny:  # over the reader's 1 MiB chunk, so objects still straddle a refill of its buffer
        args.jobs = 2000
    models = load_models()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "cluster_job_log"
        t = time.perf_counter()
        write_synthetic_philly(path, args.jobs, args.seed)
        print(f"wrote {args.jobs} jobs, {path.stat().st_size / 2**20:.1f} MiB, in {time.perf_counter() - t:.1f} s")
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        jobs, report = load_trace(path, models, seed=1)
        full = time.perf_counter() - t
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
        print(f"load_trace, whole trace:     {full:6.2f} s for {report.rows} jobs read, {len(jobs)} kept "
              f"({report.rows / full:,.0f} jobs/s; target <= 10 s)")
        grown = max(0, rss_after - rss_before) * scale
        print(f"peak RSS {rss_before * scale / 2**20:.0f} -> {rss_after * scale / 2**20:.0f} MiB: "
              f"{grown / max(1, len(jobs)):.0f} bytes per kept job (file {path.stat().st_size / max(1, args.jobs):.0f} "
              f"bytes per job)")
        t = time.perf_counter()
        window, _ = load_trace(path, models, seed=1, options=TraceOptions(busiest_hours=8, rate_per_hour=20))
        print(f"load_trace, busiest 8 h @ 20/h: {time.perf_counter() - t:6.2f} s -> {len(window)} jobs")
        t = time.perf_counter()
        stats = trace_stats(path)
        print(f"trace_stats:                 {time.perf_counter() - t:6.2f} s ({stats['jobs']} jobs, "
              f"{stats['gpu_hours']:,.0f} GPU-hours)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
