"""Speed of one uncached packet-level ResNet-50 step, step by step and as a whole process; prints, asserts nothing.

    PYTHONPATH=. python benchmarks/ns3_step_speed.py [--skip-1024] [--racks-1024 16] [--before DIR] [--tiny]

--tiny: seconds, for the test that keeps the script working (the big figure on 3 racks, 192 GPUs).

1. Side by side in one run, the ResNet-50 DDP step (4 buckets) on 64 GPUs, 2 racks of
   topologies/dally-3tier.yaml, each configuration in fresh ns-3 workers, as packet runs (fast_path=False:
   the message-level fast path, on by default, would answer this step without the engine):
     baseline         one ns-3 run of the whole step, Map scheduler (ns-3's default), one worker
     +reuse           exact reuse: each bucket alone, timeline composed (artist/network/ns3/reuse.py)
     +steady skipping the old accelerate=True path (ring prefixes extrapolated; NOT exact, shown for
                      its error; it does not combine with the steps below)
     +scheduler       exact reuse with the PriorityQueue scheduler (the default now)
     +pool            ... and one ns-3 worker per core (the default now)
   wall and CPU seconds (this process and its ns-3 workers), packets, and the answer's difference
   from the baseline (exact paths must print 0).
2. Whole process, uncached, the defaults: `artist comm --model resnet50` on 64 GPUs / 2 racks
   (goal <= 3 s) and on 1 024 GPUs / 16 racks (goal <= 60 s), each a fresh Python process,
   wall and CPU seconds and peak memory (max RSS) of the process; the 1 024-GPU step also with --accelerate.
   --before DIR: first the same exact steps with the code of another checkout (e.g. the commit before
   issue 15's columnar schedules and message-level waves), for before/after figures from one run.
On a shared machine wall time is noisy: read the CPU seconds next to it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from artist.network.ns3 import Ns3Model, Ns3Pool
from artist.perf.model import as_perf_model
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import load_models

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY = REPO / "topologies" / "dally-3tier.yaml"


def cpu_seconds() -> float:
    """CPU of this process plus its reaped children (closed ns-3 workers, finished subprocesses)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


STEP_SHAPE = [[8] * 4] * 2  # section 1's step: 64 GPUs, 4 machines in each of 2 racks


def one_step(label: str, reference, workers: int, shape=STEP_SHAPE, **options):
    topo = load_topology(TOPOLOGY, 2)
    placement = placement_from_shape(topo, shape)
    pool = Ns3Pool(size=workers)
    cpu, started = cpu_seconds(), time.perf_counter()
    # packet runs: with the message-level fast path on (the default) it, not the engine, answers a step whose
    # buckets share no link, and the steps of this section would all measure the fast path
    comm = Ns3Model(topo, pool=pool, **{"fast_path": False, **options})
    step = as_perf_model(comm, topo).estimate(load_models()["resnet50"], placement)
    pool.close()  # reaped: its CPU is counted
    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    answer = (step.comm_seconds, step.exposed_comm_seconds)
    diff = "" if reference is None else (
        "identical" if answer == reference else
        f"raw {100 * (answer[0] - reference[0]) / reference[0]:+.5f}%, "
        f"exposed {100 * (answer[1] - reference[1]) / reference[1]:+.5f}%")
    print(f"{label:18} wall {wall:6.2f} s  CPU {cpu:6.2f} s  packets {step.comm.packets:>9}  raw {answer[0]:.9f} s  "
          f"exposed {answer[1]:.9f} s  {diff}", flush=True)
    return answer


def whole_process(racks: int, *extra: str, code: Path = REPO, label: str = "") -> bool:
    """`artist comm` in a fresh process with the code of checkout `code` (run from there: `-m` puts it first);
    False when it failed."""
    shape = str([[8] * 8] * racks) if racks > 2 else str([[8] * 4] * 2)
    args = [sys.executable, "-m", "artist.cli", "comm", "--model", "resnet50", "--shape", shape.replace(" ", ""),
            "--topology", str(TOPOLOGY), "--racks", str(racks), "--backend", "ns3", "--no-cache", *extra]
    with tempfile.TemporaryDirectory(prefix="artist-bench-cache-") as cache, \
            tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        env = {**os.environ, "ARTIST_CACHE_DIR": cache, "PYTHONPATH": str(code)}
        started = time.perf_counter()
        proc = subprocess.Popen(args, cwd=code, env=env, stdout=out_file, stderr=err_file, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU and peak memory (its workers' CPU too)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    cpu, rss_gb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2 ** 20  # ru_maxrss: KiB on Linux
    label = f" [{label}]" if label else ""
    if proc.returncode != 0:  # e.g. the 600 s watchdog on a loaded machine: say so, keep the other figures
        last = (err.strip().splitlines() or ["?"])[-1]
        print(f"whole process{label}, {racks} racks {' '.join(extra)}: FAILED after {wall:.1f} s wall, "
              f"{cpu:.1f} CPU-s: {last}", flush=True)
        return False
    values = {line.split("  ")[0].strip(): line.split()[-1] for line in out.splitlines() if "seconds" in line}
    gpus = 64 * racks if racks > 2 else 64
    goal = 3 if gpus == 64 else 60
    print(f"whole process{label}, resnet50 on {gpus} GPUs / {racks} racks {' '.join(extra)}: wall {wall:.2f} s "
          f"(goal <= {goal} s), CPU {cpu:.2f} s incl. children, max RSS {rss_gb:.2f} GB; raw "
          f"{values.get('raw seconds')} s, exposed {values.get('exposed seconds')} s, answered by "
          f"{out.split('answered by')[-1].split()[0] if 'answered by' in out else '?'}", flush=True)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-1024", action="store_true", help="leave out the 1 024-GPU whole-process figures")
    parser.add_argument("--racks-1024", type=int, default=16, help="racks of the big figure (16 = 1 024 GPUs)")
    parser.add_argument("--before", type=Path, help="a checkout whose code to time first (whole process, exact)")
    parser.add_argument("--whole-only", action="store_true", help="only section 2 (the whole-process figures)")
    parser.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = parser.parse_args()
    shape = STEP_SHAPE
    if args.tiny:  # section 1 on 16 GPUs (a machine in each rack); 3 racks: the fewest for the big figure's shape
        args.racks_1024, shape = 3, [[8], [8]]
    cores = len(os.sched_getaffinity(0))
    print(f"ResNet-50 step on {sum(map(sum, shape))} GPUs / 2 racks of dally-3tier, uncached; {cores} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    if not args.whole_only:
        base = one_step("baseline", None, 1, shape, exact_reuse=False, scheduler="map")
        one_step("+reuse", base, 1, shape, scheduler="map")
        one_step("+steady skipping", base, 1, shape, exact_reuse=False, scheduler="map", accelerate=True)
        one_step("+scheduler", base, 1, shape, scheduler="priority")
        one_step("+pool", base, cores, shape, scheduler="priority")
        print()
    done = []
    if args.before is not None:
        done.append(whole_process(2, code=args.before.resolve(), label="before"))
        if not args.skip_1024:
            done.append(whole_process(args.racks_1024, code=args.before.resolve(), label="before"))
    done.append(whole_process(2))
    if not args.skip_1024:
        done.append(whole_process(args.racks_1024, "--accelerate"))
        done.append(whole_process(args.racks_1024))
    if args.tiny and not all(done):  # a full run reports a failed process and goes on; the test must fail
        sys.exit(1)


if __name__ == "__main__":
    main()
