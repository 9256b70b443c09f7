"""`artist calibrate`: fit a calibration profile to nccl-tests logs, or check one on new logs."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from artist import shipped
from artist.calibration.profile import CalibrationProfile
from artist.commands._args import integer
from artist.commands._common import (CACHE_DIR_HELP, add_accelerate_argument, add_ns3_timeout_argument, ns3_options,
                                     writable_dir, writable_file)
from artist.commands.cache import cache_path_from_args
from artist.errors import InputError, Interrupted
from artist.limits import MAX_CHANNELS
from artist.network.collectives import ALGORITHM_CHOICES
from artist.network.stack import BACKENDS, CommSpec
from artist.topology import Topology, load_topology


def add_parser(sub) -> None:
    p = sub.add_parser(
        "calibrate", help="fit a calibration profile to nccl-tests logs (or --check one)",
        description="Simulate the sizes and rank layouts of nccl-tests logs (all_reduce, all_gather, "
                    "reduce_scatter, alltoall, sendrecv) with a backend, fit a per-tier, per-collective correction "
                    "(bandwidth factor, fixed latency; a per-hop latency only from logs of two node counts) and write "
                    "it as a profile, checked on --holdout logs; or, with --check, evaluate an existing profile on "
                    "other logs.")
    p.add_argument("--logs", nargs="+", required=True, help="nccl-tests output files")
    p.add_argument("--topology", default=None, help="topology YAML (default with --check: the profile's)")
    p.add_argument("--backend", default="analytical", choices=BACKENDS, help="network backend to calibrate")
    p.add_argument("--algorithm", default="ring", choices=ALGORITHM_CHOICES,
                   help="all-reduce algorithm: ring, hierarchical, tree (NCCL's double binary tree), or nccl "
                        "(analytical only: the algorithm, "
                        "protocol and channels NCCL's tuner picks per size)")
    p.add_argument("--channels", type=integer(1, MAX_CHANNELS), default=1,
                   help=f"parallel rings (NCCL channels), 1-{MAX_CHANNELS}")
    p.add_argument("--out", default=None, help="profile YAML to write (e.g. calibration/profiles/NAME.yaml)")
    p.add_argument("--name", default=None, help="profile name (default: the --out file's stem)")
    p.add_argument("--check", default=None, metavar="PROFILE",
                   help="evaluate this profile on --logs instead of fitting")
    p.add_argument("--pairwise", action="store_true",
                   help="instead of fitting: how much the node pairs differ, from two-node sendrecv logs (one pair "
                        "each): every pair's bus bandwidth at sizes >= 1 GiB, the spread, and the groups of nodes "
                        "that fast pairs join (e.g. behind one leaf switch); no simulation")
    p.add_argument("--holdout", nargs="+", default=[], metavar="LOG",
                   help="nccl-tests logs the fit does not use: every size is checked, and a profile worse than "
                        "uncalibrated on any of their collectives (median |error| over sizes >= 1 MiB) is refused "
                        "unless --force")
    p.add_argument("--force", action="store_true",
                   help="write the profile even when it is worse than uncalibrated on a --holdout log (the warning "
                        "is recorded in the profile)")
    p.add_argument("--json", action="store_true",
                   help="print only a JSON list with one object per (log, collective): log, collective, sizes, "
                        "held_out_sizes, median_err_uncalibrated_pct, median_err_calibrated_pct, "
                        "max_err_calibrated_pct (sizes >= 1 MiB; notes go to stderr)")
    p.add_argument("--report", default=None, metavar="DIR",
                   help="write a calibration report here: report.md and one busbw-vs-size PNG per log and "
                        "collective (measured, uncalibrated, calibrated)")
    p.add_argument("--layout", default=None,
                   help="GPUs per node for logs without a 'Using devices' block: NODESxGPUS (2x8) or 8,8; "
                        "checked against the logs that have one")
    # The backends model NCCL's Ring/Simple protocol, which NCCL uses for MiB-sized messages such as
    # gradient buckets; below ~1 MiB it switches to the LL/LL128 protocols and tree algorithms.
    p.add_argument("--min-bytes", type=integer(0), default=1 << 20,
                   help="ignore sizes below this (default 1 MiB: smaller sizes run protocols the backends do not "
                        "model)")
    p.add_argument("--max-bytes", type=integer(0), default=None,
                   help="ignore sizes above this (e.g. to bound ns-3 run time); >= --min-bytes")
    p.add_argument("--fit-from", default="all", metavar="all|BYTES",
                   help="smallest size to fit, per log: all (default): every simulated size; or a byte count. Smaller "
                        "sizes are simulated and reported as 'outside', never fitted")
    p.add_argument("--regimes", default="auto", choices=("auto", "single"),
                   help="auto (default): one correction per NCCL size regime, where the measured times show NCCL "
                        "switching algorithm/protocol/channels (artist.calibration.regimes); single: one correction "
                        "per tier over every fitted size")
    p.add_argument("--note", action="append", default=[],
                   help="free text stored in the profile's notes (e.g. what the logs' network is and the backends "
                        "are not)")
    p.add_argument("--allow-wrong", action="store_true",
                   help="use rows whose '#wrong' is > 0 (nccl-tests found wrong results), with a warning per row; "
                        "without it such a log is refused")
    p.add_argument("--allow-impossible", action="store_true",
                   help="leave rows no hardware of the topology can have measured (bus bandwidth above 2 x a GPU's "
                        "NVLink and NIC share, or a time falling 4x as the size grows) out of the fit, each recorded "
                        "in the profile; without it such a log is refused, naming the row")
    # The cache keeps the backend's raw answers (it sits inside the calibration), so it changes no
    # answer; it saves re-running ns-3 when re-fitting, and an interrupted fit continues from it.
    p.add_argument("--no-cache", action="store_true", help="do not read or write the latency cache")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help=CACHE_DIR_HELP)
    p.add_argument("--plot", default=None, metavar="PNG", help="write measured vs simulated busbw curves here")
    add_ns3_timeout_argument(p)
    add_accelerate_argument(p)
    p.add_argument("--quiet", action="store_true", help="print only the summary, not the per-size table")
    p.set_defaults(func=run)


def _check_outputs(args) -> None:
    """Every place the command writes, checked before any simulation: nothing it reads is overwritten and
    each path is what its option asks for (a file or a directory)."""
    logs = list(args.logs) + list(args.holdout or [])
    for option, value in (("--out", args.out), ("--plot", args.plot)):
        if value is not None:
            writable_file(value, option, logs, "one of the logs read")
    if args.report is not None:
        writable_dir(args.report, "--report")


def _model(spec: CommSpec, topology):
    """The backend, inside the latency cache at spec.cache (None: no cache), never calibrated:
    fits and checks correct its raw answers themselves. A cache changes no answer (same identity)."""
    try:
        return spec.build(topology)
    except ImportError as exc:
        raise SystemExit(f"artist calibrate: backend {spec.backend!r} is not available: {exc}") from None


def _simulate(model, cache_path: str | None, *args, **kwargs):
    """collect_points (every backend simulation of the command) with Ctrl-C turned into a one-line
    Interrupted saying what is kept: Cached stores each answer as soon as it is computed, so a
    re-run asks the backend only for the rest."""
    from tqdm import tqdm

    from artist.calibration.build import collect_points

    # A bar counting backend answers (ns-3 fits take minutes); stderr, only on a terminal.
    bar = tqdm(desc="calibrate: backend answers", unit="answer", disable=not sys.stderr.isatty(), leave=False)
    try:
        return collect_points(_Counted(model, bar), *args, **kwargs)
    except KeyboardInterrupt:
        if cache_path is None:
            raise Interrupted("stopped during the backend simulations; with --no-cache none of their answers was "
                              "kept: re-running the same command starts over") from None
        try:
            stored = f"{model.store.stats()['entries']} backend answers are"
        except Exception as exc:  # the summary must not hide the interrupt behind a traceback
            stored = f"the backend answers computed so far are (could not count them: {exc})"
        raise Interrupted(f"stopped during the backend simulations after {model.session.misses} new answers; "
                          f"{stored} in the cache {cache_path}: re-running the same command continues from "
                          f"them") from None
    finally:
        bar.close()


class _Counted:
    """The backend, counting each collective it is asked to time on a progress bar."""

    def __init__(self, inner, bar):
        self._inner, self._bar = inner, bar

    def collective_seconds(self, *args, **kwargs):
        seconds = self._inner.collective_seconds(*args, **kwargs)
        self._bar.update(1)
        return seconds

    def collective_seconds_many(self, group, sizes, kind: str = "all_reduce"):
        many = getattr(self._inner, "collective_seconds_many", None)
        if many is None:
            return [self.collective_seconds(group, b, kind) for b in sizes]
        seconds = many(group, sizes, kind)
        self._bar.update(len(sizes))
        return seconds

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _fit_from(text: str):
    if text == "all":
        return None
    if text == "auto":
        raise InputError("--fit-from", None, "'auto' (fit only the last NCCL regime) was replaced by --regimes auto, "
                                             "which fits every regime with its own correction; use --fit-from all")
    try:
        value = int(text)
    except ValueError:
        raise InputError("--fit-from", None, f"expected all or a byte count, got {text!r}") from None
    if value < 0:
        raise InputError("--fit-from", None, f"must be >= 0, got {value}")
    return value


def _command_line(args) -> str:
    """The options that decide a fit, with paths as given (stored in the profile so it can be re-made)."""
    parts = ["artist calibrate", "--topology", args.topology, "--logs", *args.logs, "--backend", args.backend,
             "--algorithm", args.algorithm, "--channels", str(args.channels), "--min-bytes", str(args.min_bytes),
             "--fit-from", args.fit_from, "--regimes", args.regimes]
    if args.max_bytes is not None:
        parts += ["--max-bytes", str(args.max_bytes)]
    if args.layout:
        parts += ["--layout", args.layout]
    if args.allow_wrong:
        parts += ["--allow-wrong"]
    if args.allow_impossible:
        parts += ["--allow-impossible"]
    if args.holdout:
        parts += ["--holdout", *args.holdout]
    if args.force:
        parts += ["--force"]
    return " ".join(parts)


def run(args) -> int:
    models = []  # the command's model, to close its cache (writing the hit counters) however it ends
    try:
        return _run(args, models)
    finally:
        for model in models:
            if hasattr(model, "close"):
                model.close()


@dataclass
class Calibration:
    """What `artist calibrate` computed: the profile fitted or checked, on what, and every log's points."""

    profile: CalibrationProfile
    topology: Topology
    model: object  # the backend (inside the latency cache when there is one), uncalibrated
    logs: list  # build.LogPoints of every log read: fitted and hold-out ones, or the ones checked
    points: list  # fit.Point of every size simulated, corrected by the profile
    fitted: list = field(default_factory=list)  # --check: the logs among `logs` the profile was fitted on


def calibration_options(args) -> dict:
    """How the logs are read and simulated (collect_points' options), every option checked before any simulation,
    and each output path too."""
    from artist.calibration.fit import parse_layout

    try:
        layout = parse_layout(args.layout) if args.layout else None
    except ValueError as exc:
        raise InputError("--layout", None, str(exc)) from None
    fit_from = _fit_from(args.fit_from)
    if args.max_bytes is not None and args.min_bytes > args.max_bytes:
        raise InputError("command line", "--min-bytes", f"{args.min_bytes} is above --max-bytes {args.max_bytes}: "
                                                        f"no size would be simulated")
    if args.check and args.holdout:
        raise InputError("command line", "--holdout", "--check evaluates a profile on --logs; --holdout goes with "
                                                      "fitting")
    if args.backend == "none":
        raise InputError("command line", "--backend", "none makes communication free: there is no time to correct")
    _check_outputs(args)
    return dict(layout=layout, min_bytes=args.min_bytes, max_bytes=args.max_bytes, fit_from=fit_from,
                regimes=args.regimes, allow_wrong=args.allow_wrong, allow_impossible=args.allow_impossible)


def check(args, models: list, options: dict, profile: CalibrationProfile | None = None) -> Calibration:
    """The profile --check names (or `profile`, already loaded) on --logs; the backend it corrects is appended to
    models (for the caller to close)."""
    from artist.calibration.build import check_points, fitted_logs
    from artist.calibration.profile import load_profile
    from artist.network.calibrated import Calibrated

    profile = load_profile(args.check) if profile is None else profile
    topo_path = args.topology or profile.topology_path
    if not topo_path:
        raise InputError(args.check, "field 'topology.path'", "no topology path stored; pass --topology")
    if not args.topology and not Path(topo_path).exists() and (shipped.ROOT / topo_path).is_file():
        topo_path = shipped.ROOT / topo_path  # a shipped profile records its topology from the repository root
    topology = load_topology(shipped.topology_path(topo_path))
    profile.check_topology(topology)
    b = profile.backend
    cache_path = cache_path_from_args(args)
    model = _model(CommSpec(b["backend"], b.get("algorithm", "ring"), b.get("channels", 1),
                            ns3_options(args, b["backend"]), cache=cache_path), topology)
    models.append(model)
    Calibrated(model, profile)  # refuses a backend the profile was not fitted for
    logs = _simulate(model, cache_path, topology, args.logs, **options)
    fitted = fitted_logs(profile, logs)
    return Calibration(profile, topology, model, logs, check_points(profile, logs, fitted), fitted)


def fit(args, models: list, options: dict) -> Calibration:
    """A profile fitted on --logs and checked on --holdout (not saved), named --name, else after the --out file;
    the backend it corrects is appended to models (for the caller to close)."""
    from artist.calibration.build import fit_profile

    if not args.topology:
        raise SystemExit("artist calibrate: --topology is required when fitting")
    topology = load_topology(shipped.topology_path(args.topology))
    cache_path = cache_path_from_args(args)
    model = _model(CommSpec(args.backend, args.algorithm, args.channels, ns3_options(args), cache=cache_path),
                   topology)
    models.append(model)
    logs = _simulate(model, cache_path, topology, args.logs, **options)
    held = _simulate(model, cache_path, topology, args.holdout, **options) if args.holdout else []
    name = args.name or Path(args.out).stem
    profile, points = fit_profile(name, topology, model.identity(), logs,
                                  notes=args.note, fit_from=options["fit_from"], regimes=args.regimes,
                                  command=_command_line(args), holdout=held, force=args.force)
    return Calibration(profile, topology, model, list(logs) + list(held), points)


def say_log_notes(logs: list, out) -> None:
    """What reading the logs found: NCCL regime changes, rows left out or skipped, lines not read (notes, to out)
    and the parser's warnings (to stderr)."""
    for lp in logs:
        for line, kinks in lp.kinks.items():
            for k in kinks:
                print(f"note: {lp.log.source}: line {k.line}: NCCL regime change: {k.reason}", file=out)
        for rows in lp.excluded.values():  # --allow-impossible
            for r in rows:
                print(f"warning: {lp.log.source}: line {r.line}: left out of the fit: {r.reason}", file=sys.stderr)
        for issue in lp.log.issues:
            print(f"warning: {lp.log.source}: line {issue.line}: {issue.message}", file=sys.stderr)
        for reason in lp.skipped:
            print(f"note: {lp.log.source}: {reason}", file=out)
        if lp.log.ignored_lines:
            lines = ", ".join(str(n) for n, _ in lp.log.ignored_lines)
            print(f"note: {lp.log.source}: {len(lp.log.ignored_lines)} line(s) are not nccl-tests output and were "
                  f"not read: {lines}", file=out)


def _pairwise(args) -> int:
    """--pairwise: the pairs' report (artist/calibration/pairwise.py), as text or (--json) one object."""
    import json

    from artist.calibration.pairwise import pairwise_report, report_lines

    for flag, given in (("--check", args.check), ("--out", args.out), ("--holdout", args.holdout),
                        ("--report", args.report), ("--accelerate", args.accelerate),
                        ("--ns3-timeout", args.ns3_timeout)):
        if given:
            raise InputError("command line", flag, "--pairwise only reads the logs; it fits and simulates nothing")
    report = pairwise_report(args.logs)
    if args.json:
        print(json.dumps({"pairs": [{"hosts": list(p.hosts), "busbw_gbs": p.busbw_gbs, "sizes": p.sizes, "log": p.log}
                                    for p in report.pairs],
                          "spread": report.spread, "threshold_gbs": report.threshold_gbs,
                          "groups": [list(g) for g in report.groups],
                          "inconsistent": [list(p.hosts) for p in report.inconsistent]}, indent=1))
    else:
        print("\n".join(report_lines(report)))
    return 0


def _run(args, models: list) -> int:
    import json

    from artist.calibration.build import error_rows
    from artist.calibration.report import plot_busbw, points_table, summary_table, write_report

    if args.pairwise:
        return _pairwise(args)
    options = calibration_options(args)
    cache_path = cache_path_from_args(args)
    out = sys.stderr if args.json else sys.stdout  # --json: stdout holds the JSON list only

    if args.check:
        done = check(args, models, options)
        profile, topology, logs, points, model = done.profile, done.topology, done.logs, done.points, done.model
        for lp in done.fitted:
            print(f"note: {lp.log.source} is a log this profile was fitted on: its errors are in-sample (role fit), "
                  f"not held out", file=out)
        b = profile.backend
        print(f"profile {profile.name} (id {profile.id}) on topology {topology.name}, backend {b['backend']}",
              file=out)
    else:
        if not args.out:
            raise SystemExit("artist calibrate: give --out PROFILE.yaml to fit, or --check PROFILE to evaluate")
        done = fit(args, models, options)
        profile, topology, logs, points, model = done.profile, done.topology, done.logs, done.points, done.model
        profile.save(args.out)
        print(f"wrote {args.out}: profile {profile.name} (id {profile.id}), topology {topology.name}, backend "
              f"{args.backend}", file=out)
        for warning in profile.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        for tier in ("machine", "rack", "network"):
            for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"):
                source = profile.source_of(tier, kind)
                regimes = profile.correction(tier, kind)
                if regimes is None:
                    print(f"  {tier:<8} {kind:<15} uncalibrated (no log spans this tier)", file=out)
                    continue
                how = "fitted" if source == (tier, kind) else f"reuses {source[0]} {source[1]}"
                for k, g in enumerate(regimes.regimes):
                    c = g.correction
                    where = "all sizes" if len(regimes.regimes) == 1 else (
                        f"from {g.from_bytes} B" if k else f"below {regimes.regimes[1].from_bytes} B")
                    print(f"  {tier:<8} {kind:<15} {where:<22} bandwidth_factor {c.bandwidth_factor:.4f}  "
                          f"latency {c.latency_s * 1e6:+.2f} us  hop_latency {c.hop_latency_s * 1e6:.2f} us  "
                          f"({how})", file=out)

    say_log_notes(logs, out)
    if not args.quiet:
        print(file=out)
        print(points_table(points), file=out)
    print(file=out)
    print(summary_table(points), file=out)
    if args.plot:
        print(f"wrote {plot_busbw(points, args.plot)}", file=out)
    if args.report:
        print(f"wrote {write_report(points, args.report, profile)}", file=out)
    if cache_path is not None:
        s = model.session
        print(f"calibrate: {s.hits} backend answers from the cache, {s.misses} simulated (cache {cache_path})",
              file=sys.stderr)
    if args.json:
        print(json.dumps(error_rows(points), indent=1))
    return 0
