"""`artist sweep SPEC.yaml`: every run of a sweep spec, in parallel, resumable; then the table and the plots."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Mapping

from artist import shipped
from artist.commands._args import integer
from artist.commands._common import CACHE_DIR_HELP, calibration_path, writable_dir
from artist.errors import Interrupted
from artist.limits import MAX_WORKERS
from artist.network.stack import BACKENDS
from artist.policies.plugins import without_plugin_code
from artist.sweep.run import (EXECUTORS, SweepReport, default_out_dir, default_workers, describe_runs,
                              run_sweep)
from artist.sweep.spec import SweepSpec, load_sweep_spec
from artist.sweep.store import ResultStore


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a sweep spec (racks x policies x workloads x seeds x backends)",
                       description="Expand a sweep spec into runs and execute the ones not done yet, locally "
                                   "or on a Dask / Ray cluster; write OUT/results.{csv,parquet} and OUT/plots/.")
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p) -> None:
    p.add_argument("spec", help="sweep spec (YAML), or the name of a shipped one (quick: sweeps/quick.yaml)")
    p.add_argument("-j", "--jobs", type=integer(1, MAX_WORKERS, allow=(-1,)), default=-1,
                   help="runs at once (default -1: all cores; on a cluster: every run submitted, the cluster's "
                        "workers take them as they free up)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the runs and their count, and for ns-3 runs the predicted ns-3 cost (distinct "
                        "questions, packets, CPU-s, wall on -j cores); run nothing")
    p.add_argument("--prefetch", action="store_true",
                   help="ns3: before the runs, answer their distinct collectives in parallel, longest first, into "
                        "the cache (local cores, or the --executor cluster's workers)")
    p.add_argument("--reduced", action="store_true",
                   help="run the spec's `reduced:` version (seconds; what CI runs) into results/<name>-reduced")
    p.add_argument("--out", default=None, help="output directory (default: results/<spec name>)")
    p.add_argument("--executor", default="local", choices=EXECUTORS,
                   help="where the runs execute: local processes, or an existing Dask / Ray cluster (--address)")
    p.add_argument("--address", default=None,
                   help="the cluster: Dask scheduler address (tcp://host:8786) or Ray address (ray://host:10001, auto)")
    p.add_argument("--backend", "--comm", dest="backend", default=None, type=_network_backend,
                   help=f"replace the spec's network backend axis ({' | '.join(BACKENDS)}); a calibration profile "
                        f"fitted for another backend is swapped for its sibling fitted for this one")
    p.add_argument("--calibration", default=None, metavar="PROFILE|none",
                   help="replace the spec's calibration axis with one profile (path or shipped name), or none")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the latency cache")
    p.add_argument("--cache-dir", default=None, help=CACHE_DIR_HELP)
    p.add_argument("--no-plots", action="store_true", help="write the table only")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _network_backend(text: str) -> str:
    """--backend is the network backend in every command; the executor it once named is --executor."""
    if text in EXECUTORS:
        raise argparse.ArgumentTypeError(f"{text!r} is an executor: --backend now names the network backend "
                                         f"({', '.join(BACKENDS)}); use --executor {text}")
    if text not in BACKENDS:
        raise argparse.ArgumentTypeError(f"unknown network backend {text!r}; known: {', '.join(BACKENDS)}")
    return text


def load_spec(args, data: Mapping | None = None) -> SweepSpec:
    """The sweep spec args names (--backend, --calibration and --reduced applied), every check done before any run;
    its notes said on stderr. data: the spec itself, already parsed (the Python API's dict spec); args.spec then
    only stands for it (load_sweep_spec)."""
    calibration = args.calibration
    if calibration is not None and calibration.lower() != "none":
        calibration = calibration_path(calibration)
    # A dry run only looks: it runs no plugin file's code (a downloaded spec's plugin would run as soon as the
    # spec is read).
    with without_plugin_code() if args.dry_run else nullcontext():
        spec = load_sweep_spec(shipped.sweep_path(args.spec) if data is None else args.spec,
                               backend_override=args.backend, calibration_override=calibration,
                               reduced=args.reduced, data=data)
    for note in spec.notes:
        print(f"note: {note}", file=sys.stderr)
    return spec


def execute(args, spec: SweepSpec, out: Path) -> SweepReport:
    """The runs of spec not done yet in out (made writable first), where and how args says; Ctrl-C is one line
    saying what is saved."""
    writable_dir(out)
    try:
        return run_sweep(spec, out, n_jobs=args.jobs, executor=args.executor, address=args.address,
                         use_cache=not args.no_cache, cache_dir=args.cache_dir, progress=not args.quiet,
                         plots=not args.no_plots, prefetch=args.prefetch)
    except KeyboardInterrupt:
        done = sum(ResultStore(out).is_done(run) for run in spec.runs)
        raise Interrupted(f"{done} of {len(spec.runs)} runs are saved under {out / 'runs'}; run the same command "
                          f"again to resume (finished runs are skipped)") from None


def run(args) -> int:
    spec = load_spec(args)  # every check happens here, before any run
    out = Path(args.out) if args.out else default_out_dir(spec)
    if args.dry_run:
        print("\n".join(describe_runs(spec, out)))
        from artist.sweep.cost import dry_run_lines

        lines = dry_run_lines(spec, args.jobs if args.jobs > 0 else default_workers())
        if lines:
            print("\n".join(lines))
        return 0
    report = execute(args, spec, out)
    if report.prefetch is not None:
        p = report.prefetch
        print(f"prefetch: {p.pieces} distinct ns-3 collectives, {p.found} already cached, {p.simulated} simulated "
              f"({p.predicted_cpu_seconds:.0f} CPU-s predicted), {p.skipped} not prefetched (tcp or accelerate), "
              f"{p.wall_seconds:.1f} s")
    rate = report.cache_hit_rate
    lookups = report.cache_hits + report.cache_misses
    print(f"sweep {spec.name}: {report.total} runs ({report.already_done} already done, {len(report.executed)} run "
          f"now, {len(report.failed)} failed) in {report.wall_seconds:.1f} s")
    if not args.no_cache:
        print(f"latency look-ups: {lookups}, cache hit rate "
              f"{'n/a' if rate is None else f'{100 * rate:.1f}%'}, {report.cache_misses} simulated")
    if report.executed:  # which path answered (results.csv answers_* columns, per run)
        print(report.answers.summary_line())
    if report.failed:
        for run, error in report.failed:
            last = error.strip().splitlines()[-1] if error else "?"
            print(f"FAILED {run.run_id} {run.describe()}: {last}", file=sys.stderr)
        print(f"{len(report.failed)} run(s) failed; the finished ones are stored under {out / 'runs'}. Fix the cause "
              f"and run the same command again: finished runs are skipped. No table was written.", file=sys.stderr)
        return 1
    print(f"table: {report.results_csv} (and {report.results_parquet.name})")
    if report.plots:
        names = sorted({p.stem for p in report.plots})
        print(f"plots: {report.plots[0].parent}/ ({', '.join(names)}; .png and .pdf)")
    print(f"per-run tables: {out / 'runs'}/<run id>/")
    return 0
