"""`artist trace stats|convert FILE`: inspect a published trace or workload file, or freeze it as ArtISt's
canonical CSV (the jobs a `--workload FORMAT:path=FILE,...` run would get, with the same options)."""

from __future__ import annotations

import json
import sys

from artist.commands._args import integer
from artist.commands._common import writable_file
from artist.errors import InputError

FORMAT_HELP = "trace format (default: detected from the file): "


def add_parser(sub) -> None:
    from artist.workload.traces.formats import FORMATS

    p = sub.add_parser("trace", help="statistics of a trace file, or convert it to ArtISt's canonical CSV",
                       description="Read Philly, Alibaba PAI 2020, Helios, Acme, Pollux/Sia, Gavel, Tiresias and "
                                   "Crius traces (docs: reference/formats, supported trace formats).")
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    formats = ", ".join(FORMATS)

    s = actions.add_parser("stats", help="jobs, GPU demand histogram, arrivals per hour, GPU-hours")
    s.add_argument("file", metavar="FILE", help="the trace file (PAI: the directory of its tables)")
    s.add_argument("--format", default=None, choices=tuple(FORMATS), metavar="NAME", help=FORMAT_HELP + formats)
    s.add_argument("--json", action="store_true", help="one JSON object (keys include jobs and gpu_hours)")
    s.add_argument("--skip-bad-rows", action="store_true", help="skip malformed rows (counted) instead of stopping")
    s.set_defaults(func=run_stats)

    c = actions.add_parser("convert", help="the trace's jobs as ArtISt's canonical CSV",
                           description="Models are mapped from the trace's names (docs: reference/formats) or assigned "
                                       "by GPU-time category; iterations come from the trace or its run times.")
    c.add_argument("file", metavar="FILE", help="the trace file (PAI: the directory of its tables)")
    c.add_argument("--to", required=True, metavar="OUT.csv", help="where to write the canonical CSV")
    c.add_argument("--format", default=None, choices=tuple(FORMATS), metavar="NAME", help=FORMAT_HELP + formats)
    c.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    c.add_argument("--seed", type=integer(0, 2**63 - 1), default=0, help="seed of sampling and model assignment")
    c.add_argument("--busiest-hours", default=None, metavar="N", help="keep the N busiest consecutive hours")
    c.add_argument("--rate", default=None, metavar="J/h", help="then sample J jobs per hour (e.g. 20/h)")
    c.add_argument("--assign", default=None, help="model assignment for traces without models: category | size")
    c.add_argument("--gpu-type", default=None, help="GPU type the run times were logged on (default: the trace's, "
                                                    "else A100)")
    c.add_argument("--gpu-speed", default=None, metavar="TYPE:SPEED|...",
                   help="speeds relative to the profiles' A100 for GPU types without a shipped figure")
    c.add_argument("--states", default=None, help="failed / cancelled jobs: keep (default) | drop | flag")
    c.add_argument("--cpu-jobs", default=None, help="jobs asking for 0 GPUs: drop (default) | keep | flag")
    c.add_argument("--skip-bad-rows", action="store_true", help="skip malformed rows (counted) instead of stopping")
    c.set_defaults(func=run_convert)


def run_stats(args) -> int:
    from artist import shipped
    from artist.workload.traces.stats import stats_lines, trace_stats

    trace = shipped.find(args.file, shipped.TRACES_DIR, ".csv")  # `small`: the shipped one
    stats = trace_stats(str(trace), args.format, args.skip_bad_rows)
    if args.json:
        json.dump(stats, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print("\n".join(stats_lines(stats)))
    return 0


def run_convert(args) -> int:
    from artist.workload import load_models, write_jobs_csv
    from artist.workload.traces.load import load_trace
    from artist.workload.traces.options import options_from_params

    values = {key: getattr(args, attr) for key, attr in (
        ("busiest_hours", "busiest_hours"), ("rate", "rate"), ("assign", "assign"), ("gpu_type", "gpu_type"),
        ("gpu_speed", "gpu_speed"), ("states", "states"), ("cpu_jobs", "cpu_jobs")) if getattr(args, attr) is not None}
    if args.skip_bad_rows:
        values["bad_rows"] = "skip"
    options = options_from_params(values, "command line")
    writable_file(args.to, "--to", [args.file], "the trace being converted", make_dir=False)
    jobs, report = load_trace(args.file, load_models(args.models), args.seed, args.format, options)
    if not jobs:
        dropped = "; ".join(f"{n} {reason}" for reason, n in sorted(report.dropped.items())) or "none dropped"
        raise InputError(args.file, None, f"no jobs kept of {report.rows} read ({dropped}; {report.bad_rows} "
                                          f"malformed); nothing written")
    try:
        write_jobs_csv(jobs, args.to)
    except OSError as exc:
        raise InputError("command line", "--to", f"cannot write {args.to} ({exc.strerror or exc})") from None
    for line in report.lines():
        print(line, file=sys.stderr)
    print(f"wrote {len(jobs)} jobs to {args.to}")
    return 0
