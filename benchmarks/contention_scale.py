"""The cluster loop at trace scale: CPU seconds and peak memory of one run per (policy, jobs, contention mode).

    PYTHONPATH=. python benchmarks/contention_scale.py [--policies tiresias] [--jobs 10,100,1000]
        [--modes isolated,shared] [--timeout 600] [--backend flow] [--spec sweeps/contention-scale.yaml]
        [--workload GENERATOR] [--no-cache] [--profile OUT.prof] [--tiny]

--tiny: seconds, for the test that keeps the script working (3 and 6 rack-spanning jobs, both modes).

Each run is sweeps/contention-scale.yaml's run of that policy (topology, racks, workload, comm, simulator;
read from the spec, so the benchmark times what the sweep runs) with the workload's n= set to the size
asked and the spec's contention replaced by the mode asked, in a fresh subprocess (fresh memos, its own
peak RSS) with a fresh, empty latency cache (as a sweep from an empty cache; --no-cache: none), killed
after --timeout seconds and then reported as "did not finish within N s", so one slow run blocks no other.
Measured in the run's process: CPU seconds of simulate() (user + system, this process and its children:
getrusage, not wall time, as the machine is shared), its peak RSS (whole process: imports included), the
performance model's calls (estimate: the policies' and the loop's per-job asks; rates: the loop's; shared:
co-simulated components; fabric: the backend's time() calls, i.e. memo misses), events and scheduling calls.
Printed: one row per run, the shared / isolated CPU ratio per size, and per (policy, mode) the growth
exponent of CPU seconds in jobs (log-log least squares, numpy.polyfit, over the sizes that finished).
--profile (with a single policy, size and mode) runs cProfile in the run's process and prints its top
entries by cumulative and by own time. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.contention_speed import _cpu_seconds  # noqa: E402 - one CPU clock for the contention benchmarks

DEFAULT_SPEC = REPO / "sweeps" / "contention-scale.yaml"
MARK = "CONTENTION-SCALE "


def sized_workload(spec_text: str, jobs: int) -> str:
    """A generator text with its n= replaced (the spec's workload at another size)."""
    sized, count = re.subn(r"(^|[:,])n=\d+", lambda m: f"{m.group(1)}n={jobs}", spec_text)
    if count != 1:
        raise SystemExit(f"contention_scale: workload {spec_text!r} is not a generator with one n= parameter")
    return sized


def counted(obj, name: str, counts: dict) -> None:
    """Count calls of obj.name (an instance attribute wrapping the bound method)."""
    inner = getattr(obj, name)

    def wrapper(*args, **kwargs):
        counts[name] += 1
        return inner(*args, **kwargs)

    setattr(obj, name, wrapper)


def run_one(spec_path: str, policy: str, jobs: int, mode: str, backend: str | None, cache: str | None,
            profile: str | None, workload: str | None = None) -> dict:
    """One run in this process; the figures as a dict."""
    import dataclasses
    import resource

    from artist.perf.compute import ComputeModel
    from artist.perf.model import PerfModel
    from artist.policies.registry import make_policy
    from artist.simulator import simulate
    from artist.sweep.spec import load_sweep_spec
    from artist.sweep.worker import comm_for
    from artist.workload.spec import jobs_from_spec

    spec = load_sweep_spec(spec_path, backend_override=backend)
    run = next((r for r in spec.runs if r.axes["policy"] == policy), None)
    if run is None:
        raise SystemExit(f"contention_scale: {spec_path} has no run of policy {policy!r}")
    workload = sized_workload(workload or run.workload.spec, jobs)
    job_list = jobs_from_spec(workload, spec.models, run.axes["seed"], run.topology.gpus)
    fabric = comm_for(run, cache, use_cache=cache is not None)
    perf = PerfModel(fabric, ComputeModel(run.topology), mode)
    counts = {"estimate": 0, "rates": 0, "shared": 0, "time": 0}
    for name in ("estimate", "rates", "shared"):
        counted(perf, name, counts)
    counted(fabric, "time", counts)
    config = dataclasses.replace(run.simulator, contention=mode)
    policy_object = make_policy(run.policy.name, **run.policy.params)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    cpu, wall = _cpu_seconds(), time.perf_counter()
    if profiler:
        profiler.enable()
    result = simulate(run.topology, job_list, spec.models, policy_object, perf, config)
    if profiler:
        profiler.disable()
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    if profiler:
        import pstats

        profiler.dump_stats(profile)
        for order in ("cumulative", "tottime"):
            pstats.Stats(profile, stream=sys.stderr).sort_stats(order).print_stats(25)
    return {"policy": policy, "jobs": len(job_list), "mode": mode, "cpu_s": cpu, "wall_s": wall,
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB on Linux
            "gpus": run.topology.gpus, "backend": run.comm.backend, "workload": workload,
            "finished": sum(1 for s in result.jobs if s.finish is not None), "makespan_s": result.makespan,
            "events": result.events, "scheduling_calls": result.scheduling_calls,
            "perf_estimate": counts["estimate"], "perf_rates": counts["rates"], "perf_shared": counts["shared"],
            "fabric_time": counts["time"]}


def spawn(args, policy: str, jobs: int, mode: str) -> dict:
    """One run in a subprocess, bounded by --timeout; {"timeout": N} or {"error": ...} when it did not finish."""
    with tempfile.TemporaryDirectory(prefix="artist-contention-scale-") as tmp:
        argv = [sys.executable, __file__, "--spec", str(args.spec), "--one", f"{policy},{jobs},{mode}"]
        if args.backend:
            argv += ["--backend", args.backend]
        if not args.no_cache:
            argv += ["--cache", str(Path(tmp) / "latency.sqlite")]
        if args.profile:
            argv += ["--profile", args.profile]
        if args.workload:
            argv += ["--workload", args.workload]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, cwd=REPO,
                                  env={**__import__("os").environ, "PYTHONPATH": str(REPO), "ARTIST_CACHE_DIR": tmp})
        except subprocess.TimeoutExpired:
            return {"policy": policy, "jobs": jobs, "mode": mode, "timeout": args.timeout}
    if args.profile:
        sys.stdout.write(done.stderr)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
    return {"policy": policy, "jobs": jobs, "mode": mode, "error": f"exit {done.returncode}: {tail[0]}"}


def growth_exponent(rows: list[dict]) -> float | None:
    """Slope of log CPU-s against log jobs (numpy.polyfit, degree 1) over the finished runs; None below 2 sizes."""
    import numpy as np

    points = [(r["jobs"], r["cpu_s"]) for r in rows if "cpu_s" in r and r["cpu_s"] > 0]
    if len({n for n, _ in points}) < 2:
        return None
    n, cpu = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(n, cpu, 1)[0])


def describe(row: dict) -> str:
    head = f"{row['policy']:<9} {row['mode']:<8} {row['jobs']:>5}"
    if "timeout" in row:
        return f"{head}  did not finish within {row['timeout']:g} s"
    if "error" in row:
        return f"{head}  failed: {row['error']}"
    return (f"{head} {row['cpu_s']:>9.2f} {row['rss_mib']:>8.0f} {row['finished']:>8} {row['events']:>7} "
            f"{row['scheduling_calls']:>6} {row['perf_estimate']:>9} {row['perf_rates']:>7} {row['perf_shared']:>7} "
            f"{row['fabric_time']:>7}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(DEFAULT_SPEC), help="the sweep spec whose runs are timed")
    ap.add_argument("--policies", default="tiresias", help="comma-separated policy labels of the spec")
    ap.add_argument("--jobs", default="10,100,1000", help="comma-separated job counts")
    ap.add_argument("--modes", default="isolated,shared", help="contention modes, comma-separated")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take before it is killed")
    ap.add_argument("--backend", default=None, help="replace the spec's network backend (e.g. analytical)")
    ap.add_argument("--workload", default=None, help="replace the spec's workload (a generator text with n=)")
    ap.add_argument("--no-cache", action="store_true", help="no latency cache (default: a fresh, empty one per run)")
    ap.add_argument("--profile", default=None, help="cProfile file of the run (one policy, size and mode)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # POLICY,JOBS,MODE: run in this process
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)  # the --one run's latency cache file
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args()
    # tiny: the spec's mix meets no contention below hundreds of jobs; 96- to 160-GPU jobs span racks and meet
    # on the spine at 6 jobs already (4 shared co-simulations), and half are LLM jobs as the spec has some
    if args.tiny:
        args.jobs, args.timeout = "3,6", 60.0
        args.workload = args.workload or ("poisson:n=6,interarrival=5,gpus=96|160,models=resnet18|resnet50,"
                                          "min_iter=200,max_iter=2000,llm_fraction=0.5,llm_gpus=64|128,global_batch=32")
    if args.one:
        policy, jobs, mode = args.one.split(",")
        row = run_one(args.spec, policy, int(jobs), mode, args.backend, args.cache, args.profile, args.workload)
        print(MARK + json.dumps(row), flush=True)
        return 0
    policies = [p for p in args.policies.split(",") if p]
    sizes = [int(n) for n in args.jobs.split(",") if n]
    modes = [m for m in args.modes.split(",") if m]
    if args.profile and len(policies) * len(sizes) * len(modes) != 1:
        ap.error("--profile: give one policy, one size (--jobs) and one mode (--modes)")
    from artist.network.phase import native

    engine = "compiled (engine.cc)" if native.compiled_runner() is not None else "Python loop"
    print(f"spec {args.spec}; backend {args.backend or 'as the spec'}; "
          f"{'no cache' if args.no_cache else 'a fresh latency cache per run'}; timeout {args.timeout:g} s per run; "
          f"phase engine: {engine} (ARTIST_PHASE_ENGINE={native.engine_choice()})")
    print(f"{'policy':<9} {'mode':<8} {'jobs':>5} {'CPU s':>9} {'RSS MiB':>8} {'finished':>8} {'events':>7} "
          f"{'sched':>6} {'estimate':>9} {'rates':>7} {'shared':>7} {'fabric':>7}")
    rows = []
    for policy in policies:
        for jobs in sizes:
            for mode in modes:
                row = spawn(args, policy, jobs, mode)
                rows.append(row)
                print(describe(row), flush=True)
    if rows and "gpus" in next((r for r in rows if "gpus" in r), {}):
        first = next(r for r in rows if "gpus" in r)
        print(f"\n{first['gpus']} GPUs, backend {first['backend']}; workload of the largest finished run: "
              f"{max((r for r in rows if 'workload' in r), key=lambda r: r['jobs'])['workload']}")
    print()
    for policy in policies:
        for jobs in sizes:
            got = {r["mode"]: r for r in rows if r["policy"] == policy and r["jobs"] == jobs and "cpu_s" in r}
            if "isolated" in got and "shared" in got and got["isolated"]["cpu_s"] > 0:
                print(f"{policy} {jobs} jobs: shared / isolated CPU = "
                      f"{got['shared']['cpu_s'] / got['isolated']['cpu_s']:.2f}")
        for mode in modes:
            exponent = growth_exponent([r for r in rows if r["policy"] == policy and r["mode"] == mode])
            if exponent is not None:
                print(f"{policy} {mode}: CPU-s grows as jobs^{exponent:.2f} (log-log least squares)")
    if args.tiny and any("cpu_s" not in r for r in rows):  # a run that failed is what the test is there to catch
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
