"""`artist latency-table`: seconds per (model, placement shape) on a topology, with a regression check."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from artist.commands._args import integer, number
from artist.commands._common import (add_network_arguments, add_topology_arguments, calibration_path,
                                     check_calibration, load_topology_from, ns3_options, progress_enabled,
                                     writable_file)
from artist.commands.cache import cache_path_from_args
from artist.errors import InputError, Interrupted
from artist.limits import MAX_WORKERS
from artist.network.stack import CommSpec
from artist.latency_table import (STANDARD_SHAPES, TableRun, build_latency_table, compare_tables, read_table_csv,
                                  table_to_csv)
from artist.parallel.layouts import LAYOUT_NAMES
from artist.parallel.plan import DEFAULT_GLOBAL_BATCH
from artist.placement import parse_shape
from artist.workload import load_models


def add_parser(sub) -> None:
    standard = "; ".join(f"{text} {desc}" for desc, text in
                         ((d, str(list(map(list, s))).replace(" ", "")) for d, s in STANDARD_SHAPES))
    p = sub.add_parser("latency-table", help="latency table of models x placement shapes",
                       description="Communication time per iteration for every model and placement shape "
                                   "on one topology, as CSV; optionally checked against a golden table.")
    add_topology_arguments(p)
    p.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="only this model (repeatable; default: every profile in --models)")
    p.add_argument("--shape", action="append", default=[], metavar="SHAPE",
                   help="placement shape as racks of per-machine GPU counts, e.g. '[[4,4],[8]]' (repeatable)")
    p.add_argument("--standard", action="store_true", help=f"the standard shape set: {standard}")
    add_network_arguments(p)
    p.add_argument("--no-fast-path", action="store_true",
                   help="ns3: every row a full packet run (no message-level fast path where no link is shared)")
    p.add_argument("--jobs", type=integer(1, MAX_WORKERS, allow=(-1,)), default=1,
                   help="parallel workers (joblib; -1: all cores)")
    p.add_argument("--out", default=None, help="write the table here (default: standard output unless --check)")
    p.add_argument("--check", default=None, metavar="GOLDEN_CSV",
                   help="compare with a golden table; exit 1 on any difference")
    p.add_argument("--rtol", type=number(0.0), default=0.02, help="relative tolerance of --check (default 0.02)")
    p.add_argument("--atol", type=number(0.0), default=0.0, help="absolute tolerance of --check, in each column's unit")
    p.add_argument("--plan", action="append", default=[], metavar="PLAN",
                   help="LLM-zoo models: time this hybrid plan dp=D,tp=T,pp=P[,ep=E][,microbatches=M] (default "
                        "micro-batches: --global-batch / dp) per placement; one --plan for every --model, or one per "
                        "--model in order; placements are --layout and --shape (GPUs in Megatron rank order)")
    p.add_argument("--global-batch", type=integer(1, 1 << 24), default=DEFAULT_GLOBAL_BATCH,
                   help=f"with --plan: sequences per step where the plan states no microbatches (default "
                        f"{DEFAULT_GLOBAL_BATCH}, the smallest batch of Megatron-LM's Table 1)")
    p.add_argument("--layout", action="append", default=[], choices=LAYOUT_NAMES,
                   help="with --plan: a named layout (repeatable; default all four, or none when --shape is given): "
                        "packed, tp-split (each TP group over two machines), pp-racks (stage p in rack p), "
                        "dp-racks (replica d in rack d)")
    p.add_argument("--markdown", action="store_true",
                   help="with --plan: print a markdown table (step s (x packed) (exposed TP / PP / DP / EP s))")
    p.add_argument("--progress", action="store_true", help="progress bar even when stderr is not a terminal")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _shapes(args) -> list:
    shapes = [s for _, s in STANDARD_SHAPES] if args.standard else []
    for text in args.shape:
        try:
            shapes.append(parse_shape(text))
        except ValueError as exc:
            raise InputError("command line", f"--shape {text}", str(exc)) from None
    if not shapes:
        raise InputError("command line", "--shape", "give at least one --shape or --standard")
    return shapes


def _models(args) -> list:
    models = load_models(args.models)
    if not args.model:
        return list(models.values())
    unknown = [n for n in args.model if n not in models]
    if unknown:
        raise InputError(args.models or "workloads/models", "--model",
                         f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(models))}")
    return [models[n] for n in args.model]


def _zoo_plans(args) -> list:
    """(zoo model, plan) pairs of --model and --plan: one plan for all models or one per model."""
    from artist.commands.plans import _check_size, zoo_or_error
    from artist.parallel.plan import with_microbatches

    if not args.model:
        raise InputError("command line", "--plan", "give the LLM-zoo model(s) with --model")
    if len(args.plan) not in (1, len(args.model)):
        raise InputError("command line", "--plan", f"{len(args.plan)} plans for {len(args.model)} models; give one "
                                                   "plan for all or one per --model")
    plans = args.plan * len(args.model) if len(args.plan) == 1 else args.plan
    out = []
    for name, text in zip(args.model, plans):
        model = zoo_or_error(name)
        try:
            plan = with_microbatches(text, 0 if "microbatches" in text else args.global_batch)
            if plan.ep > 1 and not model.is_moe:
                raise ValueError(f"ep={plan.ep}: model {model.name} has no experts")
        except ValueError as exc:
            raise InputError("command line", f"--plan {text}", str(exc)) from None
        _check_size(model, plan)
        out.append((model, plan))
    return out


def plan_rows(args, topology) -> tuple[list[dict], Path | None]:
    """`artist latency-table --model M --plan P`'s rows, a hybrid step per placement (artist/hybrid_latency_table.py),
    and the --out file (checked writable before any work), or None."""
    from artist.commands._common import build_stack
    from artist.commands.comm import _spec
    from artist.hybrid_latency_table import hybrid_rows, placements_for

    for option in ("check", "models", "standard"):
        if getattr(args, option):
            raise InputError("command line", f"--{option}", "not with --plan (LLM-zoo rows have their own columns)")
    pairs = _zoo_plans(args)
    shapes = []
    for text in args.shape:
        try:
            shapes.append(parse_shape(text))
        except ValueError as exc:
            raise InputError("command line", f"--shape {text}", str(exc)) from None
    layouts = args.layout or ([] if shapes else list(LAYOUT_NAMES))
    placements = [placements_for(topology, plan, layouts, shapes) for _, plan in pairs]  # all checked first
    out = writable_file(args.out, "--out") if args.out is not None else None
    fabric = build_stack(_spec(args), topology)
    rows = [r for (model, plan), where in zip(pairs, placements) for r in hybrid_rows(fabric, topology, model, plan,
                                                                                      where)]
    return rows, out


def run_plans(args, topology) -> int:
    """`artist latency-table --model M --plan P`: hybrid step per placement (artist/hybrid_latency_table.py)."""
    from artist.hybrid_latency_table import rows_to_csv, rows_to_markdown

    rows, out = plan_rows(args, topology)
    text = rows_to_markdown(rows) if args.markdown else rows_to_csv(rows)
    if out is not None:
        out.write_text(text)
    else:
        sys.stdout.write(text)
    print(f"latency-table: {len(rows)} rows (LLM zoo, hybrid plans)", file=sys.stderr)
    return 0


def compute_table(args, topology) -> tuple[TableRun, pd.DataFrame | None, Path | None]:
    """The data-parallel latency table args asks for on topology, every input checked before any work; with the
    --check golden table (read first, so that a bad one fails before the work) and the --out file, or None."""
    for option in ("layout", "markdown"):
        if getattr(args, option):
            raise InputError("command line", f"--{option}", "only with --plan")
    shapes = _shapes(args)
    models = _models(args)
    topology.check_reference_gpu({m.reference_gpu for m in models})
    golden = read_table_csv(args.check) if args.check else None  # fail on a bad golden file before any work
    out = writable_file(args.out, "--out") if args.out is not None else None
    cache_path = cache_path_from_args(args)
    if args.no_fast_path and args.backend != "ns3":
        raise InputError("command line", "--no-fast-path", "only with --backend ns3")
    options = ((("fast_path", False),) if args.no_fast_path else ()) + ns3_options(args)
    spec = CommSpec(args.backend, args.algorithm, args.channels, options,
                    calibration=calibration_path(args.calibration), cache=cache_path)
    check_calibration(spec.calibration, topology, spec)
    if spec.calibration:
        from artist.calibration import load_profile

        note = load_profile(spec.calibration).coverage_note([b for m in models for b, _ in m.buckets],
                                                            "gradient buckets of the table's models")
        if note:
            print(f"note: {note}", file=sys.stderr)
    if args.backend == "ns3":
        print(f"note: {len(models) * len(shapes)} rows, each an ns-3 packet-level run unless cached (seconds to "
              f"minutes each; the first also starts ns-3)", file=sys.stderr)
    try:
        run_ = build_latency_table(topology, models, shapes, spec, n_jobs=args.jobs, progress=progress_enabled(args))
    except KeyboardInterrupt:
        where = ("cache off: nothing kept" if cache_path is None
                 else f"rows computed so far are in the cache {cache_path}")
        raise Interrupted(f"no table written; {where}; run the same command again to continue") from None
    return run_, golden, out


def run(args) -> int:
    topology = load_topology_from(args)
    if args.plan:
        return run_plans(args, topology)
    run_, golden, out = compute_table(args, topology)
    cache_path = cache_path_from_args(args)

    text = table_to_csv(run_.table)
    if args.out:
        out.write_text(text)
    elif golden is None:
        sys.stdout.write(text)
    rows = len(run_.table)
    if cache_path is None:
        print(f"latency-table: {rows} rows, cache off, {run_.simulations} simulations", file=sys.stderr)
    else:
        print(f"latency-table: {rows} rows, {run_.hits} cache hits, {run_.simulations} simulations "
              f"(cache {cache_path}; every answer of code {run_.code}: a cached answer of other code is a miss)",
              file=sys.stderr)

    if golden is None:
        return 0
    comparison = compare_tables(run_.table, golden, rtol=args.rtol, atol=args.atol)
    for line in comparison.report_lines():
        print(line)
    print(comparison.summary())
    return 0 if comparison.ok else 1
