"""Sweep execution figures: speed-up of 2 workers over 1 (analytical backend), and the latency-cache
hit rate of a second identical ns-3 sweep.

    python benchmarks/sweep_speed.py [--runs-spec SPEC] [--ns3-spec sweeps/quick.yaml] [--skip-ns3] [--tiny]

--tiny: seconds, for the test that keeps the script working (both parts on built-in one-rack specs).

Every sweep is a fresh `run_sweep.py` command, as a user runs it (start-up of
the workers, and of ns-3 in each, included).

Part 1 runs one analytical sweep (default: 16 runs of FIFO, Tiresias, Dally and
Gandiva on the Dally cluster at 2 and 4 racks, the 500-job batch, two seeds)
with -j 1 and with -j 2, each into a fresh output directory with a fresh cache,
so both do the same work; prints the wall times, the speed-up, and whether the
two tables are byte-identical.

Part 2 runs the ns-3 spec twice into two fresh output directories sharing one
fresh cache: the first sweep simulates every distinct (model, placement shape);
the second should answer every look-up from the cache (target: hit rate >= 95 %,
zero new simulations). Prints both sweeps' look-ups, hits, simulations and wall
times. Expect the first ns-3 sweep to take several minutes.

With --tiny, part 1 runs 2 runs (FIFO and Dally, 1 rack, 20 jobs) and part 2 one run of quick.yaml's
cluster, backend and calibration (FIFO, 1 rack, 4 jobs), in place of --runs-spec and --ns3-spec.

Figures are printed, never asserted (the issue's targets are stated next to them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from artist.sweep.spec import load_sweep_spec  # noqa: E402

DEFAULT_RUNS_SPEC = {
    "name": "speed",
    "topology": str(REPO / "topologies" / "dally-3tier.yaml"),
    "racks": [2, 4],
    "policies": ["fifo", "tiresias", "dally", "gandiva"],
    "workloads": ["batch:n=500"],
    "seeds": [0, 1],
    "comm": "analytical",
}
# --tiny: two runs, so that -j 2 still has one for each worker
TINY_RUNS_SPEC = {**DEFAULT_RUNS_SPEC, "name": "speed-tiny", "racks": [1], "policies": ["fifo", "dally"],
                  "workloads": ["batch:n=20"], "seeds": [0]}
# --tiny: sweeps/quick.yaml's cluster, backend and calibration on one run of 4 jobs (jobs across machines, so
# ns-3 answers some questions and the second sweep has something to find in the cache)
TINY_NS3_SPEC = {
    "name": "quick-tiny",
    "topology": str(REPO / "topologies" / "dgx-h100.yaml"),
    "racks": [1],
    "policies": ["fifo"],
    "workloads": ["batch:n=4,gpus=8|16,min_iter=1000,max_iter=2000,models=resnet18|resnet50"],
    "seeds": [0],
    "comm": {"backend": "ns3", "algorithm": "ring", "channels": 8},
    "calibration": str(REPO / "calibration" / "profiles" / "h100-ns3.yaml"),
}


def timed_sweep(spec_path: Path, out: Path, cache: Path, n_jobs: int) -> dict:
    """One sweep as a user runs it: a fresh `run_sweep.py` process (its own workers, ns-3 started anew)."""
    cmd = [sys.executable, str(REPO / "run_sweep.py"), str(spec_path), "--out", str(out), "--cache-dir", str(cache),
           "-j", str(n_jobs), "--quiet", "--no-plots"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"sweep into {out} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    log = json.loads((out / "sweep-log.jsonl").read_text().splitlines()[-1])
    return {**log, "command_wall_seconds": wall}


def speedup(spec_path: Path, work: Path) -> None:
    n = len(load_sweep_spec(spec_path).runs)
    print(f"== analytical sweep: {spec_path.name}, {n} runs, {os.cpu_count()} cores")
    one = timed_sweep(spec_path, work / "j1", work / "cache-j1", 1)
    two = timed_sweep(spec_path, work / "j2", work / "cache-j2", 2)
    same = all((work / "j1" / f).read_bytes() == (work / "j2" / f).read_bytes()
               for f in ("results.csv", "results.parquet"))
    t1, t2 = one["command_wall_seconds"], two["command_wall_seconds"]
    print(f"-j 1: {t1:7.1f} s wall for the command ({one['wall_seconds']:.1f} s in the sweep)")
    print(f"-j 2: {t2:7.1f} s wall for the command ({two['wall_seconds']:.1f} s in the sweep)")
    print(f"speed-up with 2 workers: {t1 / t2:.2f}x (ideal 2.00x on 2 idle cores)")
    print(f"tables byte-identical: {same}")


def cache_rate(spec_path: Path, work: Path, n_jobs: int) -> None:
    n = len(load_sweep_spec(spec_path).runs)
    cache = work / "cache-ns3"
    print(f"== ns-3 sweep twice, two fresh commands, one fresh cache: {spec_path}, {n} runs, -j {n_jobs}")
    for i in (1, 2):
        r = timed_sweep(spec_path, work / f"ns3-{i}", cache, n_jobs)
        lookups = r["cache_hits"] + r["cache_misses"]
        rate = f"{100 * r['cache_hits'] / lookups:.1f}%" if lookups else "n/a"
        print(f"sweep {i}: {r['command_wall_seconds']:7.1f} s wall; {lookups} look-ups, {r['cache_hits']} hits, "
              f"{r['cache_misses']} simulated; hit rate {rate}")
    print("target for sweep 2: hit rate >= 95 %, 0 simulated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs-spec", default=None, help="analytical sweep spec for the speed-up (default: built in)")
    ap.add_argument("--ns3-spec", default=str(REPO / "sweeps" / "quick.yaml"))
    ap.add_argument("--ns3-jobs", type=int, default=-1, help="workers for the ns-3 sweeps (default: all cores)")
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--skip-speedup", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working "
                                                        "(built-in one-rack specs for both parts)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="artist-sweep-bench-") as tmp:
        work = Path(tmp)
        if not args.skip_speedup:
            if args.tiny or not args.runs_spec:
                spec_path = work / "speed.yaml"
                spec_path.write_text(yaml.safe_dump(TINY_RUNS_SPEC if args.tiny else DEFAULT_RUNS_SPEC,
                                                    sort_keys=False))
            else:
                spec_path = Path(args.runs_spec)
            speedup(spec_path, work)
        if not args.skip_ns3:
            if args.tiny:
                ns3_spec = work / "quick-tiny.yaml"
                ns3_spec.write_text(yaml.safe_dump(TINY_NS3_SPEC, sort_keys=False))
            else:
                ns3_spec = Path(args.ns3_spec)
            cache_rate(ns3_spec, work, args.ns3_jobs)


if __name__ == "__main__":
    main()
